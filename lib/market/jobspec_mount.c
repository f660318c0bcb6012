/*
 * jobspec_mount.c - file_mounts: (issue 30; docs/jobs.md "Running a
 * SkyPilot spot task unchanged").
 *
 *   DST: ./local/path             a local file or directory, uploaded with
 *                                 the job (struct jobspec_mount)
 *   DST: s3://bucket/prefix       SkyPilot's short form: the bucket's
 *                                 contents COPIED into DST
 *   DST: {source: s3://b/p | gs://b/p | az://account/container/p |
 *         https://ACCOUNT.blob.core.windows.net/CONTAINER/p,
 *         store: s3 | gcs | azure, mode: MOUNT | MOUNT_CACHED | COPY,
 *         persistent: true}
 *   DST: {name: BUCKET, store: s3 | gcs}   the bucket BUCKET of that store
 *                                 (store: else from spotrun.checkpoint.uri's
 *                                 scheme, else from the job's one cloud);
 *                                 spotrun creates no bucket
 *   DST: {source: ./dir, mode: COPY}       a local path, as DST: ./dir
 *
 * The rules are SkyPilot's (its YAML reference, "file_mounts" and
 * "Cloud storage"): mode defaults to MOUNT; name and a bucket source
 * together are an error; a store that differs from the source's is an
 * error here (SkyPilot would copy the bucket over; spotrun reads it where
 * it is).  What spotrun cannot honour (r2://, cos://, oci:// buckets, a
 * local source uploaded to a new bucket, persistent: false, config:) is an
 * error naming the key, reported with every other problem of the file.
 * A bucket DST is absolute or under "~/", and no mount lies inside
 * another's bucket DST.
 *
 * ENVIRONMENT VARIABLES, as SkyPilot fills them (sky/task.py
 * _fill_in_env_vars): in every DST and in a bucket's source: and name:,
 * "${NAME}" and "$NAME" become the value of NAME in the task's envs:
 * (NAME: a letter or '_', then letters, digits, '_'); a name envs does
 * not give, or gives no value, is left as written.  So
 *     envs: {SIZE: 7}
 *     file_mounts: {/models/llama-${SIZE}b: s3://weights/llama-${SIZE}b}
 * mounts s3://weights/llama-7b at /models/llama-7b.  The file's own envs
 * only: `--env` given at launch does not reach file_mounts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog_csv.h"
#include "common/url.h"
#include "jobspec_int.h"
#include "objstore/objstore.h"

#define ctx jobspec__ctx
#define fail jobspec__fail
#define scalar(n) jobspec__scalar(n)

static const char *const mode_names[] = { "MOUNT", "MOUNT_CACHED", "COPY" };
static const char *const store_names[] = { "s3", "gcs", "azure" };
static const char *const store_schemes[] = { "s3", "gs", "az" };
/* SkyPilot's other stores and their schemes: known, not supported */
static const char *const other_stores[] = {
	"r2", "ibm", "oci", "nebius", "cos", "volcengine", "coreweave", NULL
};

const char *jobspec_mode_name(enum jobspec_mode m)
{
	return (unsigned)m < 3 ? mode_names[m] : "?";
}

int jobspec_mode_parse(const char *s, enum jobspec_mode *out)
{
	for (int i = 0; i < 3; i++) {
		if (!strcasecmp(s, mode_names[i])) {
			*out = (enum jobspec_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int store_index(const char *s)
{
	for (int i = 0; i < 3; i++) {
		if (!strcasecmp(s, store_names[i]))
			return i;
	}
	return -1;
}

static int scheme_index(const char *scheme)
{
	for (int i = 0; i < 3; i++) {
		if (!strcasecmp(scheme, store_schemes[i]))
			return i;
	}
	return -1;
}

static int other_store(const char *s)
{
	for (int i = 0; other_stores[i]; i++) {
		if (!strcasecmp(s, other_stores[i]))
			return 1;
	}
	return 0;
}

/* A destination: absolute or under "~/", no empty (but a trailing
 * "/"), "." or ".." component, no control character. */
static int dst_ok(const char *d)
{
	const char *p;

	if (d[0] == '/')
		p = d + 1;
	else if (!strncmp(d, "~/", 2))
		p = d + 2;
	else
		return 0;
	if (!*p)
		return 0;
	for (const char *q = d; *q; q++) {
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return 0;
	}
	while (*p) {
		size_t n = strcspn(p, "/");

		if ((n == 0 && p[n]) || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		p += n;
		if (*p)
			p++;
	}
	return 1;
}

/* One bucket mount being read; fields borrowed from the YAML tree. */
struct bm {
	const char *source, *name, *store;
	yaml_node_t *source_n, *name_n, *store_n, *mode_n, *node;
	enum jobspec_mode mode;
	int bad;
};

static int add_local(struct ctx *c, const char *dst, const char *src)
{
	struct jobspec *js = c->js;
	struct jobspec_mount *v = realloc(js->mounts, (js->n_mounts + 1) * sizeof *v);

	if (!v)
		return -ENOMEM;
	js->mounts = v;
	v[js->n_mounts].dst = strdup(dst);
	v[js->n_mounts].src = strdup(src);
	js->n_mounts++;
	if (!v[js->n_mounts - 1].dst || !v[js->n_mounts - 1].src)
		return -ENOMEM;
	return 0;
}

static int add_bucket(struct ctx *c, const char *dst, const char *uri,
		      const struct bm *b, int store)
{
	struct jobspec *js = c->js;
	struct jobspec_bucket *v = realloc(js->buckets, (js->n_buckets + 1) * sizeof *v);
	yaml_node_t **nv;

	if (!v)
		return -ENOMEM;
	js->buckets = v;
	v += js->n_buckets;
	memset(v, 0, sizeof *v);
	js->n_buckets++;
	nv = realloc(c->bucket_nodes, js->n_buckets * sizeof *nv);
	if (!nv)
		return -ENOMEM;
	c->bucket_nodes = nv;
	nv[js->n_buckets - 1] = b->node;
	v->mode = b->mode;
	if (store >= 0)
		snprintf(v->store, sizeof v->store, "%s", store_names[store]);
	v->dst = strdup(dst);
	v->uri = uri ? strdup(uri) : NULL;
	v->name = b->name ? strdup(b->name) : NULL;
	v->source = b->source ? strdup(b->source) : NULL;
	if (!v->dst || (uri && !v->uri) || (b->name && !v->name) ||
	    (b->source && !v->source))
		return -ENOMEM;
	return 0;
}

/* The URI spotrun's object store reads for a bucket source, into out;
 * *store its index.  -SR_EPARSE (recorded) when it is not one. */
static int bucket_uri(struct ctx *c, yaml_node_t *n, const char *path,
		      const char *src, char *out, size_t cap, int *store)
{
	struct objstore_uri u;
	struct sr_err e = { 0 };
	char scheme[32];
	const char *az = ".blob.core.windows.net/";
	const char *host = NULL;

	*store = -1;
	if (sr_url_scheme(src, scheme, sizeof scheme) != 1)
		return fail(c, n, path, "'%s' is not a bucket URL", src);
	if (!strcasecmp(scheme, "https") && (host = strstr(src, az)) &&
	    !memchr(src + 8, '/', (size_t)(host - src - 8))) {
		/* Azure's https://ACCOUNT.blob.core.windows.net/CONTAINER/P */
		snprintf(out, cap, "az://%.*s/%s", (int)(host - src - 8), src + 8,
			 host + strlen(az));
		*store = 2;
	} else if ((*store = scheme_index(scheme)) >= 0) {
		snprintf(out, cap, "%s", src);
	} else if (other_store(scheme)) {
		return fail(c, n, path, "'%s': %s:// buckets are not supported; "
			    "spotrun mounts s3://, gs:// and az:// buckets", src,
			    scheme);
	} else {
		return fail(c, n, path, "'%s': %s:// is not a bucket URL (s3://, "
			    "gs://, az://ACCOUNT/CONTAINER or https://ACCOUNT.blob."
			    "core.windows.net/CONTAINER)", src, scheme);
	}
	if (strlen(out) >= cap - 1)
		return fail(c, n, path, "'%.60s...': too long", src);
	if (objstore_uri_parse(out, &u, &e)) {
		if (e.code == -ENOMEM) {
			c->oom = 1;
			return -ENOMEM;
		}
		return fail(c, n, path, "'%s': %s", src, e.msg);
	}
	objstore_uri_free(&u);
	/* one form: no trailing '/' */
	for (size_t l = strlen(out); l > 5 && out[l - 1] == '/'; l--)
		out[l - 1] = '\0';
	return 0;
}

static const char *env_value(const struct jobspec *js, const char *name,
			     size_t n)
{
	for (size_t i = 0; i < js->n_envs; i++) {
		if (strlen(js->envs[i].key) == n &&
		    !memcmp(js->envs[i].key, name, n))
			return js->envs[i].value;
	}
	return NULL;
}

static int name_char(char ch, int first)
{
	return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (!first && ch >= '0' && ch <= '9');
}

/* s with the task's envs filled in (the rule at the top): s itself when
 * it names none, else a string the ctx owns; NULL when out of memory
 * (c->oom set). */
static const char *env_fill(struct ctx *c, const char *s)
{
	char *out = NULL, **grown;
	size_t cap = 0;
	FILE *f;

	if (!s || !strchr(s, '$') || !c->js->n_envs)
		return s;
	f = open_memstream(&out, &cap);
	if (!f)
		goto oom;
	while (*s) {
		const char *p = s + 1, *name, *v;
		size_t n = 0;

		if (*s != '$') {
			fputc(*s++, f);
			continue;
		}
		if (*p == '{')
			p++;
		name = p;
		while (name_char(name[n], n == 0))
			n++;
		v = n ? env_value(c->js, name, n) : NULL;
		p = name + n;
		if (n && *p == '}')
			p++;
		if (v)
			fputs(v, f);
		else
			fwrite(s, 1, n ? (size_t)(p - s) : 1, f);
		s = n ? p : s + 1;
	}
	if (fclose(f) != 0) {
		free(out);
		goto oom;
	}
	grown = realloc(c->filled, (c->n_filled + 1) * sizeof *grown);
	if (!grown) {
		free(out);
		goto oom;
	}
	c->filled = grown;
	c->filled[c->n_filled++] = out;
	return out;
oom:
	c->oom = 1;
	return NULL;
}

static int bm_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		   yaml_node_t *vn, const char *path)
{
	static const char *const keys[] = {
		"name", "source", "store", "mode", "persistent", NULL
	};
	static const char *const hints[] = {
		"config", "spotrun's sync settings are its own (docs/jobs.md); remove it",
		"_force_delete", "spotrun never deletes a bucket; remove it",
		NULL
	};
	struct bm *b = c->entry;
	const char *s;
	int rc, v;

	if (!strcmp(k, "name") || !strcmp(k, "source") || !strcmp(k, "store")) {
		rc = jobspec__want_scalar(c, vn, path, &s);
		if (rc) {
			b->bad = 1;
			return rc;
		}
		if (k[1] != 't' && !(s = env_fill(c, s)))
			return -ENOMEM;
		if (k[1] == 'a') {
			b->name = s;
			b->name_n = vn;
		} else if (k[1] == 'o') {
			b->source = s;
			b->source_n = vn;
		} else {
			b->store = s;
			b->store_n = vn;
		}
		return 0;
	}
	if (!strcmp(k, "mode")) {
		char near[80];

		b->mode_n = vn;
		rc = jobspec__want_scalar(c, vn, path, &s);
		if (!rc && jobspec_mode_parse(s, &b->mode)) {
			catalog_nearest(s, mode_names, 3, near, sizeof near);
			rc = fail(c, vn, path, "unknown mode '%s'; expected one of: %s",
				  s, near);
		}
		b->bad |= rc != 0;
		return rc;
	}
	if (!strcmp(k, "persistent")) {
		rc = jobspec__want_bool(c, vn, path, &v);
		if (!rc && !v)
			rc = fail(c, vn, path, "false is not supported: spotrun never "
				  "deletes a bucket (remove it; true is the default)");
		b->bad |= rc != 0;
		return rc;
	}
	b->bad = 1;
	return jobspec__unknown(c, kn, path, k, keys, hints);
}

/* store: as an index into store_names, or -1 (an error recorded). */
static int want_store(struct ctx *c, const struct bm *b, const char *path)
{
	char sub[300], near[60];
	int store = store_index(b->store);

	snprintf(sub, sizeof sub, "%s.store", path);
	if (store < 0 && other_store(b->store))
		fail(c, b->store_n, sub, "'%s' is not supported; spotrun mounts "
		     "buckets of s3, gcs and azure", b->store);
	else if (store < 0) {
		catalog_nearest(b->store, store_names, 3, near, sizeof near);
		fail(c, b->store_n, sub, "unknown store '%s'; expected one of: %s",
		     b->store, near);
	}
	return store;
}

/* DST: {name, source, store, mode, persistent}.  Every problem of the
 * entry is recorded before it is dropped. */
static int bucket_map(struct ctx *c, const char *dst, yaml_node_t *kn,
		      yaml_node_t *vn, const char *path)
{
	struct bm b;
	char uri[1100], sub[300], nm[300];
	void *outer = c->entry;
	int rc, store = -1, from = -1, bad;

	memset(&b, 0, sizeof b);
	b.node = kn;
	c->entry = &b;
	rc = jobspec__walk_map(c, vn, path, bm_pair);
	c->entry = outer;
	if (rc == -ENOMEM)
		return rc;
	bad = b.bad;
	if (b.store && (store = want_store(c, &b, path)) < 0)
		bad = 1;
	if (!b.source && !b.name)
		return bad ? -SR_EPARSE : fail(c, vn, path, "give source: (a bucket "
					       "URL) or name: (a bucket's name)");
	if (b.source && sr_url_scheme(b.source, uri, sizeof uri) != 1) {
		/* a local path: only copied, like DST: PATH */
		snprintf(sub, sizeof sub, "%s.source", path);
		if (b.mode != JOBSPEC_MODE_COPY || b.name || b.store)
			return fail(c, b.source_n, sub, "'%s' is a local path: spotrun "
				    "uploads it with the job only as mode: COPY without "
				    "name/store (a local directory uploaded to a new "
				    "bucket is not supported)", b.source);
		return bad ? -SR_EPARSE : add_local(c, dst, b.source);
	}
	if (b.source) {
		snprintf(sub, sizeof sub, "%s.source", path);
		if (b.name)
			bad = fail(c, b.name_n, path, "name: with a bucket source: "
				   "give one of them (the bucket is the source's)");
		if (bucket_uri(c, b.source_n, sub, b.source, uri, sizeof uri, &from))
			return -SR_EPARSE;
		if (store >= 0 && store != from)
			bad = fail(c, b.store_n, path, "store %s differs from the "
				   "source's (%s): spotrun reads the bucket where it "
				   "is; remove store", store_names[store],
				   store_names[from]);
		return bad ? -SR_EPARSE : add_bucket(c, dst, uri, &b, from);
	}
	/* name: alone; the URI once the store is known (mount_finish) */
	snprintf(sub, sizeof sub, "%s.name", path);
	if (strchr(b.name, '/') || strchr(b.name, ':'))
		return fail(c, b.name_n, sub, "'%s' is not a bucket name (a prefix "
			    "goes in source: s3://BUCKET/PREFIX)", b.name);
	if (store == 2)
		return fail(c, b.name_n, sub, "an Azure container needs its storage "
			    "account: give source: az://ACCOUNT/%s", b.name);
	if (store >= 0) {
		snprintf(nm, sizeof nm, "%s://%s", store_schemes[store], b.name);
		if (bucket_uri(c, b.name_n, sub, nm, uri, sizeof uri, &from))
			return -SR_EPARSE;
	}
	if (bad)
		return -SR_EPARSE;
	return add_bucket(c, dst, store >= 0 ? uri : NULL, &b, store);
}

int jobspec__mounts(struct ctx *c)
{
	return c->mounts_n ? jobspec__walk_map(c, c->mounts_n, "file_mounts",
					       jobspec__mount_pair) : 0;
}

int jobspec__mount_pair(struct ctx *c, const char *k, yaml_node_t *kn,
			yaml_node_t *vn, const char *path)
{
	const char *s = env_fill(c, scalar(vn));
	char scheme[32], uri[1100];
	struct bm b;
	int store, rc;

	k = env_fill(c, k);
	if (c->oom)
		return -ENOMEM;
	if (vn->type == YAML_MAPPING_NODE || (s && sr_url_scheme(s, scheme,
								   sizeof scheme) == 1)) {
		if (!dst_ok(k))
			return fail(c, kn, path, "'%s' is not a destination: a bucket "
				    "mounts at an absolute path or one under ~/ "
				    "(no '.', '..' or empty part)", k);
		if (vn->type == YAML_MAPPING_NODE)
			return bucket_map(c, k, kn, vn, path);
		/* SkyPilot's short form copies the bucket's contents */
		memset(&b, 0, sizeof b);
		b.source = s;
		b.mode = JOBSPEC_MODE_COPY;
		b.node = kn;
		rc = bucket_uri(c, vn, path, s, uri, sizeof uri, &store);
		return rc ? rc : add_bucket(c, k, uri, &b, store);
	}
	if (!s || jobspec__is_null(vn))
		return fail(c, vn, path, "expected a local path or a bucket");
	if (!*k || strstr(k, ".."))
		return fail(c, kn, path, "'%s' is not a destination path", k);
	return add_local(c, k, s);
}

/* 1 when path a is b or lies under it ("/ckpt/x" under "/ckpt/") */
static int inside(const char *a, const char *b)
{
	size_t n = strlen(b);

	while (n > 1 && b[n - 1] == '/')
		n--;
	return !strncmp(a, b, n) && (a[n] == '/' || a[n] == '\0');
}

/* The store a name:-only bucket takes: spotrun.checkpoint.uri's, else the
 * job's one cloud's; -1 if neither says. */
static int default_store(const struct jobspec *js)
{
	char scheme[16];
	int found = -1;

	if (js->ckpt_uri && sr_url_scheme(js->ckpt_uri, scheme, sizeof scheme) == 1)
		return scheme_index(scheme);
	for (size_t i = 0; i < js->n_infra; i++) {
		const char *own = catalog_cloud_store(js->infra[i].cloud);
		int k = own ? scheme_index(own) : -1;

		if (k < 0 || (found >= 0 && found != k))
			return -1;
		found = k;
	}
	return found;
}

int jobspec__mount_finish(struct ctx *c)
{
	struct jobspec *js = c->js;
	char uri[1100], nm[300], sub[300];

	for (size_t i = 0; i < js->n_buckets; i++) {
		struct jobspec_bucket *b = &js->buckets[i];
		yaml_node_t *n = c->bucket_nodes[i];
		int store, from;

		snprintf(sub, sizeof sub, "file_mounts.%s", b->dst);
		for (size_t j = 0; j < js->n_buckets; j++) {
			if (j != i && inside(js->buckets[j].dst, b->dst))
				fail(c, c->bucket_nodes[j], "file_mounts",
				     "%s lies inside the bucket mount %s (line %d)",
				     js->buckets[j].dst, b->dst, JOBSPEC__LINE(n));
		}
		for (size_t j = 0; j < js->n_mounts; j++) {
			if (inside(js->mounts[j].dst, b->dst))
				fail(c, n, sub, "%s (a local mount) lies inside this "
				     "bucket mount", js->mounts[j].dst);
		}
		if (b->uri)
			continue;
		store = default_store(js);
		if (store < 0)
			fail(c, n, sub, "name: %s without source: or store: say which "
			     "store holds the bucket (store: s3 | gcs)", b->name);
		else if (store == 2)
			fail(c, n, sub, "an Azure container needs its storage "
			     "account: give source: az://ACCOUNT/%s", b->name);
		if (store < 0 || store == 2)
			continue;
		snprintf(nm, sizeof nm, "%s://%s", store_schemes[store], b->name);
		if (bucket_uri(c, n, sub, nm, uri, sizeof uri, &from))
			continue;
		snprintf(b->store, sizeof b->store, "%s", store_names[store]);
		b->uri = strdup(uri);
		if (!b->uri)
			return -ENOMEM;
	}
	return c->oom ? -ENOMEM : 0;
}

int jobspec_bucket_check(const struct jobspec_bucket *b, struct sr_err *e)
{
	struct objstore_uri u;
	char scheme[16];
	int store = store_index(b->store), rc;

	if (!dst_ok(b->dst))
		return sr_err_set(e, -SR_EPARSE, "file_mounts.%.200s: not a "
				  "destination (absolute or under ~/)", b->dst);
	if (store < 0)
		return sr_err_set(e, -SR_EPARSE, "file_mounts.%s.store: '%s' is "
				  "not s3, gcs or azure", b->dst, b->store);
	if (!b->uri)
		return sr_err_set(e, -SR_EPARSE, "file_mounts.%s: no uri", b->dst);
	if (sr_url_scheme(b->uri, scheme, sizeof scheme) != 1 ||
	    scheme_index(scheme) != store)
		return sr_err_set(e, -SR_EPARSE, "file_mounts.%s.uri: '%.200s' is "
				  "not a %s:// URI", b->dst, b->uri,
				  store_schemes[store]);
	rc = objstore_uri_parse(b->uri, &u, e);
	objstore_uri_free(&u);
	return rc;
}
