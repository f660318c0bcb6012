/*
 * store.c - checkpoint URIs, opening a store, and the calls every backend
 * answers (dispatch through struct objstore_ops).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "common/url.h"
#include "os_int.h"
#include "ckpt/backend.h"

/* ---- URIs ------------------------------------------------------------------
 * Split by lib/common/url.h (libcurl's URL API): a string without
 * "scheme://" is a local path; file:///dir is one too (whether a URI is
 * remote, and a file URI's path: ckpt__uri_*, lib/ckpt/backend.h). */
static int uri_kind(const char *scheme)
{
	static const char *const names[] = { "file", "s3", "gs", "az" };

	for (int k = OBJSTORE_FILE; k <= OBJSTORE_AZURE; k++)
		if (!strcmp(scheme, names[k]))
			return k;
	return -1;
}

void objstore_uri_free(struct objstore_uri *u)
{
	if (!u)
		return;
	free(u->account);
	free(u->bucket);
	free(u->prefix);
	memset(u, 0, sizeof *u);
}

/* S3 / GCS bucket names: 3-63 of [a-z0-9.-], starting and ending with a
 * letter or digit (GCS also allows '_'; rejected here to keep one rule). */
static int bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63 || !isalnum((unsigned char)b[0]) ||
	    !isalnum((unsigned char)b[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		if (!(islower(c) || isdigit(c) || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

/* Azure: account 3-24 of [a-z0-9]; container 3-63 of [a-z0-9-]. */
static int account_ok(const char *a, size_t n)
{
	if (n < 3 || n > 24)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!islower((unsigned char)a[i]) && !isdigit((unsigned char)a[i]))
			return 0;
	}
	return 1;
}

static int prefix_ok(const char *p)
{
	if (strstr(p, "//") || !strcmp(p, "..") || !strncmp(p, "../", 3) ||
	    strstr(p, "/../") || (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")))
		return 0;
	for (; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\')
			return 0;
	}
	return 1;
}

/* What a checkpoint URI may not hold besides a bucket and a prefix. */
static int uri_extras(const char *s, const struct sr_url *url, struct sr_err *e)
{
	if (url->user) /* never echo it: the password would be in the message */
		return sr_err_set(e, -EINVAL, "checkpoint URI: user:password@ has no "
				  "place in it (credentials come from the "
				  "environment)");
	if (url->port >= 0)
		return sr_err_set(e, -EINVAL, "%s: a port has no place in a "
				  "checkpoint URI (set the endpoint: "
				  "AWS_ENDPOINT_URL_S3, SPOTRUN_GCS_ENDPOINT, "
				  "AZURE_STORAGE_BLOB_ENDPOINT)", s);
	if (url->query || url->fragment)
		return sr_err_set(e, -EINVAL, "%s: '?' and '#' have no place in a "
				  "checkpoint URI", s);
	return 0;
}

int objstore_uri_parse(const char *s, struct objstore_uri *u, struct sr_err *e)
{
	struct sr_url url = { 0 };
	const char *rest, *slash, *host;
	char scheme[16];
	size_t bl;
	int rc = -ENOMEM, kind;

	memset(u, 0, sizeof *u);
	if (!s || !*s)
		return sr_err_set(e, -EINVAL, "checkpoint URI: empty");
	rc = sr_url_scheme(s, scheme, sizeof scheme);
	if (rc < 0)
		return rc;
	if (rc == 0) { /* a plain path */
		u->kind = OBJSTORE_FILE;
		u->prefix = strdup(s);
		return u->prefix ? 0 : -ENOMEM;
	}
	kind = uri_kind(scheme);
	if (kind < 0)
		return sr_err_set(e, -EINVAL, "%s: unknown scheme (expected "
				  "file://, s3://, gs:// or az://)", s);
	rc = sr_url_parse(s, &url, e);
	if (rc == 0)
		rc = uri_extras(s, &url, e);
	if (rc) {
		sr_err_prefix(e, "checkpoint URI");
		goto fail;
	}
	u->kind = kind;
	rc = -ENOMEM;
	if (kind == OBJSTORE_FILE) { /* curl: "file:///dir" or file://localhost/dir */
		if (url.path[0] != '/') { /* curl reads "file:x" as "x" */
			rc = sr_err_set(e, -EINVAL, "%s: a file URI needs an "
					"absolute path (file:///dir)", s);
			goto fail;
		}
		u->prefix = strdup(url.path);
		if (!u->prefix)
			goto fail;
		sr_url_free(&url);
		return 0;
	}
	host = url.host;
	rest = url.path + 1;
	if (u->kind == OBJSTORE_AZURE) {
		if (!account_ok(host, strlen(host)) || !*rest) {
			rc = sr_err_set(e, -EINVAL, "%s: expected az://ACCOUNT/"
					"CONTAINER[/PREFIX] with an account of "
					"3-24 lower-case letters and digits", s);
			goto fail;
		}
		u->account = strdup(host);
		if (!u->account)
			goto fail;
		host = rest; /* the container is the first segment */
		slash = strchr(rest, '/');
		rest = slash ? slash + 1 : "";
		bl = slash ? (size_t)(slash - host) : strlen(host);
	} else {
		bl = strlen(host);
	}
	if (!bucket_ok(host, bl) ||
	    (u->kind == OBJSTORE_AZURE && memchr(host, '.', bl))) {
		rc = sr_err_set(e, -EINVAL, "%s: bad %s name '%.*s' (3-63 "
				"lower-case letters, digits, '-'%s)", s,
				u->kind == OBJSTORE_AZURE ? "container" : "bucket",
				(int)(bl > 80 ? 80 : bl), host,
				u->kind == OBJSTORE_AZURE ? "" : ", '.'");
		goto fail;
	}
	u->bucket = strndup(host, bl);
	u->prefix = strdup(rest);
	if (!u->bucket || !u->prefix)
		goto fail;
	{
		size_t pl = strlen(u->prefix);

		while (pl && u->prefix[pl - 1] == '/')
			u->prefix[--pl] = 0;
	}
	if (!prefix_ok(u->prefix)) {
		rc = sr_err_set(e, -EINVAL, "%s: bad prefix (no '..' segment, "
				"'//', backslash or control character)", s);
		goto fail;
	}
	sr_url_free(&url);
	return 0;
fail:
	sr_url_free(&url);
	objstore_uri_free(u);
	return rc;
}

/* ---- configuration ----------------------------------------------------------- */
static long env_long(const char *name, long def, long lo, long hi)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return def;
	x = strtol(v, &end, 10);
	if (*end || x < lo || x > hi)
		return def;
	return x;
}

void objstore_cfg_default(struct objstore_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->part_bytes = (uint64_t)env_long("SPOTRUN_OBJSTORE_PART_MB", 16, 5,
					   4096) << 20;
	c->parallel = (int)env_long("SPOTRUN_OBJSTORE_PARALLEL", 8, 1, 64);
	c->retries = (int)env_long("SPOTRUN_OBJSTORE_RETRIES", 6, 0, 100);
	c->backoff_base_ms = 100;
	c->backoff_max_ms = 5000;
	c->connect_timeout_ms = 5000;
	c->low_speed_s = env_long("SPOTRUN_OBJSTORE_STALL_S", 30, 1, 3600);
}

/* ---- the store ---------------------------------------------------------------- */
int objstore_open(const char *uri, const struct objstore_cfg *cfg,
		  struct objstore **out, struct sr_err *e)
{
	struct objstore *s = calloc(1, sizeof *s);
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	if (cfg)
		s->cfg = *cfg;
	else
		objstore_cfg_default(&s->cfg);
	s->uri_str = strdup(uri ? uri : "");
	if (!s->uri_str) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = objstore_uri_parse(uri, &s->u, e);
	if (rc)
		goto fail;
	switch (s->u.kind) {
	case OBJSTORE_FILE:
		rc = objstore__file_open(s, e);
		break;
	case OBJSTORE_AZURE:
		rc = objstore__az_open(s, e);
		break;
	default:
		rc = objstore__s3_open(s, e);
		break;
	}
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	objstore_close(s);
	return rc;
}

void objstore_close(struct objstore *s)
{
	if (!s)
		return;
	if (s->ops && s->impl)
		s->ops->free_impl(s->impl);
	objstore_uri_free(&s->u);
	free(s->uri_str);
	free(s);
}

const char *objstore_uri(const struct objstore *s)
{
	return s ? s->uri_str : "";
}

int objstore_kind(const struct objstore *s)
{
	return s->u.kind;
}

void objstore_set_cancel(struct objstore *s, atomic_int *flag)
{
	s->cancel = flag;
}

void objstore_set_gate(struct objstore *s, objstore_gate_fn fn, void *ud)
{
	s->gate = fn;
	s->gate_ud = ud;
}

void objstore_set_pace(struct objstore *s, objstore_gate_fn fn, void *ud)
{
	s->pace = fn;
	s->pace_ud = ud;
}

void objstore_set_deadline(struct objstore *s, int64_t deadline_mono_ns)
{
	atomic_store(&s->deadline_ns, deadline_mono_ns);
}

int objstore_refused(int rc)
{
	return rc == -EACCES || rc == -SR_ENOTFOUND || rc == -EINVAL ||
	       rc == -ENOMEM;
}

int objstore_check(const char *uri, int64_t timeout_ns, struct sr_err *e)
{
	struct objstore *s = NULL;
	struct objstore_list l = { 0 };
	int rc = objstore_open(uri, NULL, &s, e); /* its errors name uri */

	if (rc == 0) {
		objstore_set_deadline(s, sr_time_mono_ns() + timeout_ns);
		rc = objstore_list(s, "step-", &l, e);
		if (rc < 0)
			sr_err_prefix(e, "%s", uri);
	}
	objstore_list_free(&l);
	objstore_close(s);
	return rc < 0 ? rc : 0;
}

/* ---- keys -------------------------------------------------------------------- */
int objstore_key_check(const char *key, struct sr_err *e)
{
	size_t n, seg = 0;

	if (!key || !key[0])
		return sr_err_set(e, -EINVAL, "empty object key");
	n = strlen(key);
	if (n > OBJSTORE_KEY_MAX)
		return sr_err_set(e, -EINVAL, "object key of %zu bytes (at most "
				  "%d)", n, OBJSTORE_KEY_MAX);
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c && (c < 0x20 || c == 0x7f))
			return sr_err_set(e, -EINVAL, "object key has a control "
					  "character at byte %zu", i);
		if (c && c != '/')
			continue;
		/* a segment ends at key[i]: none empty, none "." or ".." */
		if (i == seg || (i - seg == 1 && key[seg] == '.') ||
		    (i - seg == 2 && key[seg] == '.' && key[seg + 1] == '.'))
			return sr_err_set(e, -EINVAL, "object key \"%.*s\": no "
					  "leading '/', \"//\", \".\" or \"..\" "
					  "segment", (int)(n > 200 ? 200 : n), key);
		seg = i + 1;
	}
	return 0;
}

/* Every call that names keys checks them here, so that no request can
 * reach outside the store's prefix. */
static int keys_ok(const struct objstore *s, const char *const *keys,
		   size_t n, struct sr_err *e)
{
	for (size_t i = 0; i < n; i++) {
		int rc = objstore_key_check(keys[i], e);

		if (rc) {
			sr_err_prefix(e, "%s", s->uri_str);
			return rc;
		}
	}
	return 0;
}

int objstore_put(struct objstore *s, const char *key, const void *buf,
		 size_t len, struct sr_err *e)
{
	int rc = keys_ok(s, &key, 1, e);

	return rc ? rc : s->ops->put(s, key, buf, len, e);
}

int objstore_put_fd(struct objstore *s, const char *key, int fd,
		    uint64_t size, uint64_t *sent, struct sr_err *e)
{
	int rc = keys_ok(s, &key, 1, e);
	const struct os_src src = { .fd = fd };

	return rc ? rc : s->ops->put_src(s, key, &src, size, sent, e);
}

int objstore_put_mem(struct objstore *s, const char *key, const void *buf,
		     uint64_t size, uint64_t *sent, struct sr_err *e)
{
	int rc = keys_ok(s, &key, 1, e);
	const struct os_src src = { .fd = -1, .mem = buf };

	return rc ? rc : s->ops->put_src(s, key, &src, size, sent, e);
}

int objstore_get_range(struct objstore *s, const char *key, uint64_t off,
		       uint64_t len, void *dst, struct sr_err *e)
{
	int rc = keys_ok(s, &key, 1, e);

	if (rc || len == 0)
		return rc;
	return s->ops->get_range(s, key, off, len, dst, NULL, NULL, e);
}

int objstore_get_range_to(struct objstore *s, const char *key, uint64_t off,
			  uint64_t len, objstore_sink_fn sink, void *ud,
			  struct sr_err *e)
{
	int rc = keys_ok(s, &key, 1, e);

	if (rc || len == 0)
		return rc;
	return s->ops->get_range(s, key, off, len, NULL, sink, ud, e);
}

int objstore_get(struct objstore *s, const char *key, size_t max, char **out,
		 size_t *len, struct sr_err *e)
{
	*out = NULL;
	*len = 0;
	return keys_ok(s, &key, 1, e) ? -EINVAL
				       : s->ops->get(s, key, max, out, len, e);
}

int objstore_list(struct objstore *s, const char *sub, struct objstore_list *out,
		  struct sr_err *e)
{
	return s->ops->list(s, sub ? sub : "", out, e);
}

int objstore_del(struct objstore *s, const char *const *keys, size_t n,
		 struct sr_err *e)
{
	int rc = keys_ok(s, keys, n, e);

	return rc ? rc : n ? s->ops->del(s, keys, n, e) : 0;
}

int objstore_abort_stale(struct objstore *s, const char *sub,
			 int64_t older_than_ns, size_t *n, struct sr_err *e)
{
	if (n)
		*n = 0;
	return s->ops->abort_stale ? s->ops->abort_stale(s, sub, older_than_ns,
							 n, e)
				   : 0;
}

/* ---- helpers -------------------------------------------------------------------- */
int objstore__list_add(struct objstore_list *l, const char *key, size_t klen,
		       uint64_t size)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		struct objstore_obj *nv = realloc(l->v, nc * sizeof *nv);

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n].key = strndup(key, klen);
	if (!l->v[l->n].key)
		return -ENOMEM;
	l->v[l->n].size = size;
	l->n++;
	return 0;
}

void objstore_list_free(struct objstore_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].key);
	free(l->v);
	memset(l, 0, sizeof *l);
}

const char *objstore__relative_key(const struct objstore *s, const char *fk)
{
	const char *p = s->u.prefix ? s->u.prefix : "";
	size_t pl = strlen(p);

	if (pl == 0)
		return fk;
	if (strncmp(fk, p, pl) || fk[pl] != '/')
		return NULL;
	return fk + pl + 1;
}

char *objstore__full_key(const struct objstore *s, const char *key)
{
	const char *p = s->u.prefix ? s->u.prefix : "";
	size_t n = strlen(p) + strlen(key) + 2;
	char *k = malloc(n);

	if (k)
		snprintf(k, n, "%s%s%s", p, *p ? "/" : "", key);
	return k;
}
