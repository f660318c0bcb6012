/*
 * ckpt_store.c - the public object calls of libspotckpt
 * (include/spotrun/ckpt.h: spotckpt_store_*): put, get, list and delete
 * single objects under a URI, for records kept next to the checkpoints
 * (python/spotrun/dist.py: the multi-rank prepared markers and global
 * commit records).  A thin, checked layer over objstore.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore.h"
#include "ckpt/internal.h"

struct spotckpt_store {
	struct objstore *s;
};

/* 0 if key is a relative key objstore accepts (objstore_key_check). */
static int key_check(const char *key, const char *what)
{
	struct sr_err e = { 0 };
	int rc = objstore_key_check(key, &e);

	return rc ? ckpt__fail(rc, "%s: %s", what, e.msg) : 0;
}

SPOTCKPT_API int spotckpt_store_open(const char *uri,
				     struct spotckpt_store **out)
{
	struct spotckpt_store *st = NULL;
	struct sr_err err = { 0 };
	int rc;

	ckpt__errmsg_clear();
	if (!out)
		return ckpt__fail(-EINVAL, "store_open: NULL argument");
	*out = NULL;
	if (!uri)
		return ckpt__fail(-EINVAL, "store_open: NULL URI");
	st = calloc(1, sizeof *st);
	if (!st)
		return ckpt__fail(-ENOMEM, "store_open: out of memory");
	rc = objstore_open(uri, NULL, &st->s, &err);
	if (rc) {
		free(st);
		return ckpt__fail_err(&err, rc);
	}
	*out = st;
	return 0;
}

SPOTCKPT_API void spotckpt_store_close(struct spotckpt_store *s)
{
	if (!s)
		return;
	objstore_close(s->s);
	free(s);
}

SPOTCKPT_API int spotckpt_store_put(struct spotckpt_store *s, const char *key,
				    const void *buf, size_t len)
{
	struct sr_err err = { 0 };
	int rc;

	ckpt__errmsg_clear();
	if (!s || (!buf && len))
		return ckpt__fail(-EINVAL, "store_put: NULL argument");
	rc = key_check(key, "store_put");
	if (rc)
		return rc;
	rc = objstore_put(s->s, key, buf ? buf : "", len, &err);
	return rc ? ckpt__fail_err(&err, rc) : 0;
}

/* *out: caller frees with spotckpt_free (free). */
SPOTCKPT_API int spotckpt_store_get(struct spotckpt_store *s, const char *key,
				    size_t max, char **out, size_t *len)
{
	struct sr_err err = { 0 };
	size_t n = 0;
	int rc;

	ckpt__errmsg_clear();
	if (!out)
		return ckpt__fail(-EINVAL, "store_get: NULL argument");
	*out = NULL;
	if (len)
		*len = 0;
	if (!s)
		return ckpt__fail(-EINVAL, "store_get: NULL store");
	rc = key_check(key, "store_get");
	if (rc)
		return rc;
	rc = objstore_get(s->s, key, max, out, &n, &err);
	if (rc) {
		*out = NULL;
		return ckpt__fail_err(&err, rc);
	}
	if (len)
		*len = n;
	return 0;
}

/* *out: caller frees with spotckpt_free (free). */
SPOTCKPT_API int spotckpt_store_list(struct spotckpt_store *s, const char *sub,
				     char **out, size_t *len)
{
	struct objstore_list l = { 0 };
	struct sr_err err = { 0 };
	size_t total = 1, pos = 0;
	char *buf = NULL;
	int rc;

	ckpt__errmsg_clear();
	if (!out)
		return ckpt__fail(-EINVAL, "store_list: NULL argument");
	*out = NULL;
	if (len)
		*len = 0;
	if (!s)
		return ckpt__fail(-EINVAL, "store_list: NULL store");
	rc = objstore_list(s->s, sub ? sub : "", &l, &err);
	if (rc) {
		rc = ckpt__fail_err(&err, rc);
		goto out;
	}
	for (size_t i = 0; i < l.n; i++)
		total += strlen(l.v[i].key) + 1;
	buf = malloc(total);
	if (!buf) {
		rc = ckpt__fail(-ENOMEM, "store_list: out of memory");
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		const char *k = l.v[i].key;
		size_t n = strlen(k);
		int bad = 0;

		for (size_t j = 0; j < n; j++)
			bad |= (unsigned char)k[j] < 0x20;
		if (bad)
			continue;
		memcpy(buf + pos, k, n);
		pos += n;
		buf[pos++] = '\n';
	}
	buf[pos] = '\0';
	*out = buf;
	buf = NULL;
	if (len)
		*len = pos;
out:
	free(buf);
	objstore_list_free(&l);
	return rc;
}

SPOTCKPT_API int spotckpt_store_del(struct spotckpt_store *s,
				    const char *const *keys, size_t n)
{
	struct sr_err err = { 0 };
	int rc;

	ckpt__errmsg_clear();
	if (!s || (!keys && n))
		return ckpt__fail(-EINVAL, "store_del: NULL argument");
	for (size_t i = 0; i < n; i++) {
		rc = key_check(keys[i], "store_del");
		if (rc)
			return rc;
	}
	if (n == 0)
		return 0;
	rc = objstore_del(s->s, keys, n, &err);
	return rc ? ckpt__fail_err(&err, rc) : 0;
}

SPOTCKPT_API void spotckpt_free(void *p)
{
	free(p);
}
