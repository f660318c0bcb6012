/*
 * fuzz_objstore_parsers - libFuzzer target for what the object-store
 * backends read from a server: XML answers (ListObjectsV2, List Blobs,
 * InitiateMultipartUpload, errors) and checkpoint URIs (user input).
 * Invariants: no crash or leak; every listed key is a NUL-terminated
 * string; a URI that parses has a known kind, a prefix without "//", and
 * a bucket for every remote kind.  Keys (issue 23): a key the checker
 * accepts has no empty, "." or ".." segment; any key, XML-escaped into a
 * <Key> element, reads back as itself (no key can close its element).
 */
#include <stdint.h>
#include <stdio.h>
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
	if (strlen(s) == size && objstore_key_check(s, NULL) == 0) {
		if (!strncmp(s, "../", 3) || !strcmp(s, "..") || s[0] == '/' ||
		    strstr(s, "//") || strstr(s, "/../") || strstr(s, "/./"))
			abort();
	}
	if (strlen(s) == size) {
		char *x = os_xml_escape(s), *doc = NULL, *back = NULL;

		if (x && asprintf(&doc, "<a><Key>%s</Key></a>", x) >= 0) {
			back = os_xml_text(doc, strlen(doc), "Key");
			/* libxml2 refuses some bytes (invalid UTF-8, control
			 * characters): then nothing reads back, which is fine;
			 * what reads back is the key itself */
			if (back && strcmp(back, s) && !strchr(s, '\r'))
				abort();
			free(back);
			free(doc);
		}
		free(x);
	}
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
