/*
 * fuzz_objstore_parsers - libFuzzer target for what the object-store
 * backends read from a server: XML answers (ListObjectsV2, List Blobs,
 * InitiateMultipartUpload, errors) and checkpoint URIs (user input).
 * Invariants: no crash or leak; every listed key is a NUL-terminated
 * string; a URI that parses has a known kind, a prefix without "//", and
 * a bucket for every remote kind.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/os_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *ud, const char *a, const char *b)
{
	size_t *n = ud;

	if (a && strlen(a) > (1u << 24))
		abort();
	(void)b;
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objstore_uri u;
	char *s = malloc(size + 1), *t;
	size_t n = 0;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	os_xml_each(s, size, "Contents", "Key", "Size", count, &n);
	os_xml_each(s, size, "Blob", "Name", "Content-Length", count, &n);
	t = os_xml_text(s, size, "UploadId");
	free(t);
	if (objstore_uri_parse(s, &u, NULL) == 0) {
		if (u.kind < OBJSTORE_FILE || u.kind > OBJSTORE_AZURE || !u.prefix)
			abort();
		if (u.kind != OBJSTORE_FILE && (!u.bucket || strstr(u.prefix, "//")))
			abort();
		if (u.kind == OBJSTORE_AZURE && !u.account)
			abort();
		objstore_uri_free(&u);
	}
	free(s);
	return 0;
}
