/*
 * conf.c - the `providers:` section of the daemon's configuration (see
 * conf.h): parsed from a libyaml document, looked up zone -> region ->
 * provider, checked against each provider's keys.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "cloud/conf.h"

#define CONF_NAME_MAX 64

static int line_of(const yaml_node_t *n)
{
	return n ? (int)n->start_mark.line + 1 : 0;
}

static const char *fname(const char *file)
{
	return file ? file : "config";
}

static int kv_add(struct cloud_conf_kvs *kv, const char *key, const char *val,
		  int line)
{
	struct cloud_conf_kv *v;

	for (size_t i = 0; i < kv->n; i++) {
		if (strcmp(kv->v[i].key, key) == 0) {
			char *nv = strdup(val);

			if (!nv)
				return -ENOMEM;
			free(kv->v[i].val);
			kv->v[i].val = nv;
			kv->v[i].line = line;
			return 0;
		}
	}
	v = realloc(kv->v, (kv->n + 1) * sizeof *v);
	if (!v)
		return -ENOMEM;
	kv->v = v;
	v[kv->n].key = strdup(key);
	v[kv->n].val = strdup(val);
	v[kv->n].line = line;
	if (!v[kv->n].key || !v[kv->n].val) {
		free(v[kv->n].key);
		free(v[kv->n].val);
		return -ENOMEM;
	}
	kv->n++;
	return 0;
}

static const char *kv_get(const struct cloud_conf_kvs *kv, const char *key)
{
	for (size_t i = 0; i < kv->n; i++) {
		if (strcmp(kv->v[i].key, key) == 0)
			return kv->v[i].val;
	}
	return NULL;
}

static void kv_free(struct cloud_conf_kvs *kv)
{
	for (size_t i = 0; i < kv->n; i++) {
		free(kv->v[i].key);
		free(kv->v[i].val);
	}
	free(kv->v);
	kv->v = NULL;
	kv->n = 0;
}

/* ---- parsing ---------------------------------------------------------------- */

struct pctx {
	yaml_document_t *doc;
	const char *file;
	struct sr_err *e;
};

static int fail(struct pctx *p, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct pctx *p, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[SR_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sr_err_set(p->e, -EINVAL, "%s:%d: %s", fname(p->file),
			  line_of(n), msg);
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
						: NULL;
}

static bool is_null(const yaml_node_t *n)
{
	const char *s = scalar(n);

	return !n || (s && (!s[0] || !strcmp(s, "~") || !strcmp(s, "null")) &&
		      n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE);
}

/* A name key (provider, region, zone): a non-empty scalar that fits. */
static int name_of(struct pctx *p, const yaml_node_t *k, const char *what,
		   const char **out)
{
	const char *s = scalar(k);

	if (!s || !s[0] || strlen(s) >= CONF_NAME_MAX || strchr(s, '/'))
		return fail(p, k, "%s: expected a name (at most %d characters, "
			    "no '/')", what, CONF_NAME_MAX - 1);
	*out = s;
	return 0;
}

/* key: scalar settings of a mapping into kv; `sub` (may be NULL) is the
 * one key holding a nested mapping, handed to fn. */
static int settings(struct pctx *p, const yaml_node_t *m, const char *path,
		    struct cloud_conf_kvs *kv, const char *sub,
		    int (*fn)(struct pctx *p, const yaml_node_t *v,
			      const char *path, void *ud),
		    void *ud)
{
	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return fail(p, m, "%s: expected a mapping of settings", path);
	for (yaml_node_pair_t *q = m->data.mapping.pairs.start;
	     q < m->data.mapping.pairs.top; q++) {
		yaml_node_t *k = yaml_document_get_node(p->doc, q->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, q->value);
		const char *ks = scalar(k), *vs = scalar(v);
		char sp[256];
		int rc;

		if (!ks)
			return fail(p, k, "%s: expected a key", path);
		snprintf(sp, sizeof sp, "%s.%s", path, ks);
		if (sub && !strcmp(ks, sub)) {
			rc = fn(p, v, sp, ud);
			if (rc)
				return rc;
			continue;
		}
		if (!vs)
			return fail(p, v, "%s: expected a value (a string or a "
				    "number)", sp);
		if (kv_get(kv, ks))
			return fail(p, k, "%s: given twice", sp);
		if (kv_add(kv, ks, vs, line_of(k)))
			return sr_err_set(p->e, -ENOMEM, "out of memory");
	}
	return 0;
}

static int zones_fn(struct pctx *p, const yaml_node_t *m, const char *path,
		    void *ud)
{
	struct cloud_conf_region *r = ud;

	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return fail(p, m, "%s: expected a mapping ZONE: {settings}", path);
	for (yaml_node_pair_t *q = m->data.mapping.pairs.start;
	     q < m->data.mapping.pairs.top; q++) {
		yaml_node_t *k = yaml_document_get_node(p->doc, q->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, q->value);
		struct cloud_conf_zone *z;
		const char *name;
		char sp[256];
		int rc = name_of(p, k, path, &name);

		if (rc)
			return rc;
		for (size_t i = 0; i < r->nzones; i++) {
			if (!strcmp(r->zones[i].name, name))
				return fail(p, k, "%s.%s: given twice", path, name);
		}
		z = realloc(r->zones, (r->nzones + 1) * sizeof *z);
		if (!z)
			return sr_err_set(p->e, -ENOMEM, "out of memory");
		r->zones = z;
		z = &r->zones[r->nzones];
		memset(z, 0, sizeof *z);
		z->name = strdup(name);
		if (!z->name)
			return sr_err_set(p->e, -ENOMEM, "out of memory");
		z->line = line_of(k);
		r->nzones++;
		snprintf(sp, sizeof sp, "%s.%s", path, name);
		rc = settings(p, v, sp, &z->kv, NULL, NULL, NULL);
		if (rc)
			return rc;
	}
	return 0;
}

static int regions_fn(struct pctx *p, const yaml_node_t *m, const char *path,
		      void *ud)
{
	struct cloud_conf *c = ud;

	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return fail(p, m, "%s: expected a mapping REGION: {settings}",
			    path);
	for (yaml_node_pair_t *q = m->data.mapping.pairs.start;
	     q < m->data.mapping.pairs.top; q++) {
		yaml_node_t *k = yaml_document_get_node(p->doc, q->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, q->value);
		struct cloud_conf_region *r;
		const char *name;
		char sp[256];
		int rc = name_of(p, k, path, &name);

		if (rc)
			return rc;
		for (size_t i = 0; i < c->nregions; i++) {
			if (!strcmp(c->regions[i].name, name))
				return fail(p, k, "%s.%s: given twice", path, name);
		}
		r = realloc(c->regions, (c->nregions + 1) * sizeof *r);
		if (!r)
			return sr_err_set(p->e, -ENOMEM, "out of memory");
		c->regions = r;
		r = &c->regions[c->nregions];
		memset(r, 0, sizeof *r);
		r->name = strdup(name);
		if (!r->name)
			return sr_err_set(p->e, -ENOMEM, "out of memory");
		r->line = line_of(k);
		c->nregions++;
		snprintf(sp, sizeof sp, "%s.%s", path, name);
		rc = settings(p, v, sp, &r->kv, "zones", zones_fn, r);
		if (rc)
			return rc;
	}
	return 0;
}

int cloud_confs_parse_yaml(void *doc, void *node, const char *file,
			   struct cloud_confs *out, struct sr_err *e)
{
	struct pctx p = { doc, file, e };
	yaml_node_t *m = node;

	if (file && !out->file) {
		out->file = strdup(file);
		if (!out->file)
			return sr_err_set(e, -ENOMEM, "out of memory");
		for (size_t i = 0; i < out->n; i++)
			out->v[i].file = out->file;
	}
	p.file = out->file;
	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return fail(&p, m, "providers: expected a mapping PROVIDER: "
			    "{settings, regions}");
	for (yaml_node_pair_t *q = m->data.mapping.pairs.start;
	     q < m->data.mapping.pairs.top; q++) {
		yaml_node_t *k = yaml_document_get_node(p.doc, q->key);
		yaml_node_t *v = yaml_document_get_node(p.doc, q->value);
		struct cloud_conf *c;
		const char *name;
		char sp[256];
		int rc = name_of(&p, k, "providers", &name);

		if (rc)
			return rc;
		if (cloud_confs_find(out, name, 0))
			return fail(&p, k, "providers.%s: given twice", name);
		c = cloud_confs_find(out, name, 1);
		if (!c)
			return sr_err_set(e, -ENOMEM, "out of memory");
		c->line = line_of(k);
		snprintf(sp, sizeof sp, "providers.%s", name);
		rc = settings(&p, v, sp, &c->kv, "regions", regions_fn, c);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- lookup ----------------------------------------------------------------- */

struct cloud_conf *cloud_confs_find(struct cloud_confs *cs, const char *name,
				    int add)
{
	struct cloud_conf *v;

	for (size_t i = 0; i < cs->n; i++) {
		if (strcmp(cs->v[i].name, name) == 0)
			return &cs->v[i];
	}
	if (!add)
		return NULL;
	v = realloc(cs->v, (cs->n + 1) * sizeof *v);
	if (!v)
		return NULL;
	cs->v = v;
	memset(&v[cs->n], 0, sizeof v[0]);
	v[cs->n].name = strdup(name);
	if (!v[cs->n].name)
		return NULL;
	/* the array moved: every provider's file pointer again */
	for (size_t i = 0; i <= cs->n; i++)
		v[i].file = cs->file;
	return &v[cs->n++];
}

int cloud_conf_override(struct cloud_conf *c, const char *key, const char *val)
{
	return kv_add(&c->over, key, val, 0);
}

const char *cloud_conf_get(const struct cloud_conf *c,
			   const struct cloud_conf_region *r,
			   const char *zone, const char *key)
{
	const char *v = kv_get(&c->over, key);

	if (v)
		return v;
	if (r && zone) {
		for (size_t i = 0; i < r->nzones; i++) {
			if (strcmp(r->zones[i].name, zone) == 0 &&
			    (v = kv_get(&r->zones[i].kv, key)))
				return v;
		}
	}
	if (r && (v = kv_get(&r->kv, key)))
		return v;
	return kv_get(&c->kv, key);
}

static int kvs_check(const struct cloud_conf *c, const struct cloud_conf_kvs *kv,
		     const char *where, const char *const *keys,
		     struct sr_err *e)
{
	char list[512];

	for (size_t i = 0; i < kv->n; i++) {
		bool ok = false;

		for (size_t k = 0; keys && keys[k] && !ok; k++)
			ok = strcmp(keys[k], kv->v[i].key) == 0;
		if (ok)
			continue;
		list[0] = '\0';
		for (size_t k = 0; keys && keys[k]; k++) {
			size_t l = strlen(list);

			snprintf(list + l, sizeof list - l, "%s%s", k ? ", " : "",
				 keys[k]);
		}
		if (!kv->v[i].line)
			return sr_err_set(e, -EINVAL, "%s: '%s' is not a setting of "
					  "provider %s (its settings: %s)", where,
					  kv->v[i].key, c->name, list[0] ? list : "none");
		return sr_err_set(e, -EINVAL, "%s:%d: %s.%s: not a setting of "
				  "provider %s (its settings: %s)", fname(c->file),
				  kv->v[i].line, where, kv->v[i].key, c->name,
				  list[0] ? list : "none");
	}
	return 0;
}

int cloud_conf_check(const struct cloud_conf *c, const char *const *keys,
		     struct sr_err *e)
{
	char where[256];
	int rc;

	snprintf(where, sizeof where, "providers.%s", c->name);
	rc = kvs_check(c, &c->kv, where, keys, e);
	if (!rc)
		rc = kvs_check(c, &c->over, "flags", keys, e);
	for (size_t i = 0; !rc && i < c->nregions; i++) {
		const struct cloud_conf_region *r = &c->regions[i];

		snprintf(where, sizeof where, "providers.%s.regions.%s", c->name,
			 r->name);
		rc = kvs_check(c, &r->kv, where, keys, e);
		for (size_t z = 0; !rc && z < r->nzones; z++) {
			snprintf(where, sizeof where, "providers.%s.regions.%s."
				 "zones.%s", c->name, r->name, r->zones[z].name);
			rc = kvs_check(c, &r->zones[z].kv, where, keys, e);
		}
	}
	return rc;
}

void cloud_confs_free(struct cloud_confs *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->n; i++) {
		struct cloud_conf *c = &cs->v[i];

		for (size_t r = 0; r < c->nregions; r++) {
			for (size_t z = 0; z < c->regions[r].nzones; z++) {
				free(c->regions[r].zones[z].name);
				kv_free(&c->regions[r].zones[z].kv);
			}
			free(c->regions[r].zones);
			free(c->regions[r].name);
			kv_free(&c->regions[r].kv);
		}
		free(c->regions);
		kv_free(&c->kv);
		kv_free(&c->over);
		free(c->name);
	}
	free(cs->v);
	free(cs->file);
	memset(cs, 0, sizeof *cs);
}
