/*
 * manifest.c - a round's manifest (the commit point, dirsync.h):
 *
 *   {"format": "spotrun-dirsync/1", "round": N, "time_ns": T,
 *    "bytes": B, "files": [{"path": "a/b.pt", "size": S,
 *    "sha256": "<hex>", "mode": 420}, ...]}
 *   sha256 <hex of the bytes above, including their newline>
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "dirsync.h"
#include "common/json.h"

#define FORMAT "spotrun-dirsync/1"
#define ROUNDS_DIR DIRSYNC_META "/rounds/"

void dirsync_round_free(struct dirsync_round *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->files[i].path);
	free(r->files);
	memset(r, 0, sizeof *r);
}

int dirsync_path_check(const char *path, struct sr_err *e)
{
	size_t len = strlen(path);
	const char *seg = path;

	if (len == 0 || len > DIRSYNC_PATH_MAX)
		return sr_err_set(e, -EINVAL, "path '%.80s': length %zu not in "
				  "1..%d", path, len, DIRSYNC_PATH_MAX);
	for (const char *p = path; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\')
			return sr_err_set(e, -EINVAL, "path '%.80s': control "
					  "character or backslash", path);
	}
	while (seg) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);

		if (n == 0 || (n == 1 && seg[0] == '.') ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return sr_err_set(e, -EINVAL, "path '%.80s': empty, '.' "
					  "or '..' segment", path);
		if (!strncmp(seg, DIRSYNC_LOCAL_PREFIX, strlen(DIRSYNC_LOCAL_PREFIX)))
			return sr_err_set(e, -EINVAL, "path '%.80s': names "
					  "starting with '%s' are spotrun's own",
					  path, DIRSYNC_LOCAL_PREFIX);
		seg = end ? end + 1 : NULL;
	}
	return 0;
}

void dirsync_round_key(int64_t round, char *out, size_t n)
{
	snprintf(out, n, ROUNDS_DIR "r-%016" PRId64 ".json", round);
}

void dirsync_object_key(const char *sha256, char *out, size_t n)
{
	snprintf(out, n, DIRSYNC_META "/objects/%s", sha256);
}

static int is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (; *s; s++) {
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	}
	return 1;
}

static void sha_hex(const void *p, size_t n, char hex[65])
{
	unsigned char d[32];
	unsigned int dl = 0;

	EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

int dirsync_manifest_encode(const struct dirsync_round *r, char **out,
			    size_t *len, struct sr_err *e)
{
	json_t *files = json_array(), *root = NULL;
	char *body = NULL, *buf = NULL, hex[65];
	size_t bl, cap;
	int rc = -ENOMEM;

	*out = NULL;
	for (size_t i = 0; files && i < r->n; i++) {
		const struct dirsync_file *f = &r->files[i];

		if (json_array_append_new(files, json_pack(
			    "{s:s, s:I, s:s, s:i}", "path", f->path,
			    "size", (json_int_t)f->size, "sha256", f->sha256,
			    "mode", (int)f->mode)) < 0)
			goto out;
	}
	root = json_pack("{s:s, s:I, s:I, s:I, s:O}", "format", FORMAT,
			 "round", (json_int_t)r->round, "time_ns",
			 (json_int_t)r->time_ns, "bytes", (json_int_t)r->bytes,
			 "files", files);
	if (!root || !(body = json_dumps(root, JSON_COMPACT)))
		goto out;
	bl = strlen(body);
	cap = bl + 1 + 7 + 64 + 2;
	if (!(buf = malloc(cap)))
		goto out;
	memcpy(buf, body, bl);
	buf[bl++] = '\n';
	sha_hex(buf, bl, hex);
	*len = bl + (size_t)snprintf(buf + bl, cap - bl, "sha256 %s\n", hex);
	*out = buf;
	buf = NULL;
	rc = 0;
out:
	if (rc < 0)
		sr_err_set(e, rc, "round %" PRId64 ": manifest: out of memory",
			   r->round);
	free(buf);
	free(body);
	json_decref(root);
	json_decref(files);
	return rc;
}

static int bad(struct sr_err *e, const char *name, const char *what)
{
	return sr_err_set(e, -SR_ECORRUPT, "%s: %s", name, what);
}

int dirsync_manifest_decode(const char *buf, size_t len, const char *name,
			    struct dirsync_round *r, struct sr_err *e)
{
	const char *nl;
	char hex[65], want[65];
	json_t *root = NULL, *files, *f;
	json_error_t je;
	const char *fmt;
	json_int_t round, tns, bytes;
	size_t i, blen;
	uint64_t sum = 0;
	int rc;

	memset(r, 0, sizeof *r);
	/* "<json>\nsha256 <64 hex>\n": the digest covers up to its line */
	if (len < 73 || buf[len - 1] != '\n')
		return bad(e, name, "torn manifest (no digest line)");
	nl = buf + len - 73;
	if (nl[0] != '\n' || memcmp(nl + 1, "sha256 ", 7))
		return bad(e, name, "torn manifest (no digest line)");
	blen = (size_t)(nl - buf) + 1;
	memcpy(want, nl + 8, 64);
	want[64] = '\0';
	sha_hex(buf, blen, hex);
	if (strcmp(hex, want))
		return bad(e, name, "torn manifest (digest does not match)");
	root = json_loadb(buf, blen, 0, &je);
	if (!root)
		return sr_err_set(e, -SR_ECORRUPT, "%s: line %d: %s", name,
				  je.line, je.text);
	if (json_unpack(root, "{s:s, s:I, s:I, s:I, s:o}", "format", &fmt,
			"round", &round, "time_ns", &tns, "bytes", &bytes,
			"files", &files) < 0 || !json_is_array(files)) {
		rc = bad(e, name, "missing format/round/time_ns/bytes/files");
		goto fail;
	}
	if (strcmp(fmt, FORMAT)) {
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: format '%s', expected '%s'",
				name, fmt, FORMAT);
		goto fail;
	}
	if (round < 1) {
		rc = bad(e, name, "round < 1");
		goto fail;
	}
	r->round = round;
	r->time_ns = tns;
	r->cap = json_array_size(files);
	if (r->cap > DIRSYNC_MAX_FILES) {
		rc = bad(e, name, "too many files");
		goto fail;
	}
	r->files = calloc(r->cap ? r->cap : 1, sizeof *r->files);
	if (!r->files) {
		rc = sr_err_set(e, -ENOMEM, "%s: out of memory", name);
		goto fail;
	}
	json_array_foreach(files, i, f) {
		const char *path, *sha;
		json_int_t size, mode;

		if (json_unpack(f, "{s:s, s:I, s:s, s:I}", "path", &path, "size",
				&size, "sha256", &sha, "mode", &mode) < 0 ||
		    size < 0 || !is_hex64(sha) || mode < 0 || mode > 07777) {
			rc = sr_err_set(e, -SR_ECORRUPT, "%s: files[%zu]: needs "
					"path, size >= 0, sha256 (64 hex), mode",
					name, i);
			goto fail;
		}
		if ((rc = dirsync_path_check(path, e)) < 0) {
			sr_err_prefix(e, "%s: files[%zu]", name, i);
			rc = -SR_ECORRUPT;
			e->code = rc;
			goto fail;
		}
		if (!(r->files[i].path = strdup(path))) {
			rc = sr_err_set(e, -ENOMEM, "%s: out of memory", name);
			goto fail;
		}
		r->n = i + 1;
		r->files[i].size = (uint64_t)size;
		memcpy(r->files[i].sha256, sha, 65);
		r->files[i].mode = (uint32_t)mode;
		sum += (uint64_t)size;
	}
	if (sum != (uint64_t)bytes) {
		rc = bad(e, name, "bytes is not the sum of the sizes");
		goto fail;
	}
	r->bytes = sum;
	json_decref(root);
	return 0;
fail:
	json_decref(root);
	dirsync_round_free(r);
	return rc;
}

int dirsync_rounds_of(const struct objstore_list *l, int64_t **rounds,
		      size_t *n)
{
	size_t k = 0;
	int64_t *v = malloc((l->n ? l->n : 1) * sizeof *v);

	*rounds = NULL;
	*n = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		const char *key = l->v[i].key, *p;
		char *end;
		long long x;

		if (strncmp(key, ROUNDS_DIR "r-", strlen(ROUNDS_DIR) + 2))
			continue;
		p = key + strlen(ROUNDS_DIR) + 2;
		errno = 0;
		x = strtoll(p, &end, 10);
		if (errno || x < 1 || end - p != 16 || strcmp(end, ".json"))
			continue;
		v[k++] = x;
	}
	/* listings come sorted by key; the fixed width sorts by number */
	*rounds = v;
	*n = k;
	return 0;
}
