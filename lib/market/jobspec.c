/*
 * jobspec.c - parse YAML job files (format in jobspec.h) with libyaml.
 *
 * The file is loaded as a libyaml document tree, then walked with one
 * table of allowed keys per mapping; each node keeps its start line, so
 * every message names "file:line: key.path".  Duplicate keys, unknown
 * keys and wrongly typed values are errors; nothing is ignored silently.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "catalog_csv.h"
#include "common/timeutil.h"
#include "jobspec.h"
#include "objstore/objstore.h"

struct ctx {
	yaml_document_t *doc;
	const char *name;
	struct jobspec *js;
	struct sr_err *e;
	int use_spot_line, crit_line;
};

#define LINE(n) ((int)(n)->start_mark.line + 1)

__attribute__((format(printf, 4, 5)))
static int fail(struct ctx *c, yaml_node_t *n, const char *path,
		const char *fmt, ...)
{
	char reason[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	if (!path[0])
		return sr_err_set(c->e, -SR_EPARSE, "%s:%d: %s", c->name, LINE(n),
				  reason);
	return sr_err_set(c->e, -SR_EPARSE, "%s:%d: %s: %s", c->name, LINE(n),
			  path, reason);
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
						: NULL;
}

static int is_null(yaml_node_t *n)
{
	const char *s = scalar(n);

	return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*s || !strcmp(s, "~") || !strcmp(s, "null"));
}

static int want_scalar(struct ctx *c, yaml_node_t *n, const char *path,
		       const char **out)
{
	*out = scalar(n);
	if (!*out || is_null(n))
		return fail(c, n, path, "expected a value");
	return 0;
}

static int want_str(struct ctx *c, yaml_node_t *n, const char *path, char **out)
{
	const char *s;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	free(*out);
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

static int want_bool(struct ctx *c, yaml_node_t *n, const char *path, int *out)
{
	const char *s = scalar(n);

	if (s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
		  !strcasecmp(s, "on")))
		*out = 1;
	else if (s && (!strcasecmp(s, "false") || !strcasecmp(s, "no") ||
		       !strcasecmp(s, "off")))
		*out = 0;
	else
		return fail(c, n, path, "expected true or false");
	return 0;
}

static int want_int(struct ctx *c, yaml_node_t *n, const char *path, long lo,
		    long hi, int *out)
{
	const char *s = scalar(n);
	char *end;
	long v;

	if (!s || !*s)
		return fail(c, n, path, "expected an integer");
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return fail(c, n, path, "'%s' is not an integer in %ld..%ld", s, lo, hi);
	*out = (int)v;
	return 0;
}

static int want_dur(struct ctx *c, yaml_node_t *n, const char *path,
		    int64_t *out)
{
	const char *s;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	if (sr_dur_parse(s, out, NULL) || *out < 0)
		return fail(c, n, path, "'%s' is not a duration like 90s, 30m, 36h", s);
	return 0;
}

static int want_money(struct ctx *c, yaml_node_t *n, const char *path,
		      sr_micros *out)
{
	const char *s;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	if (sr_money_parse(s, out, NULL) || *out < 0)
		return fail(c, n, path, "'%s' is not an amount in dollars", s);
	return 0;
}

/* Iterate a mapping: check it is one, reject duplicates, and call fn for
 * each pair with the key text. */
typedef int (*pair_fn)(struct ctx *c, const char *key, yaml_node_t *kn,
		       yaml_node_t *vn, const char *path);

static int walk_map(struct ctx *c, yaml_node_t *n, const char *path, pair_fn fn)
{
	yaml_node_pair_t *p, *q;

	if (!n || n->type != YAML_MAPPING_NODE)
		return fail(c, n, path, "expected a mapping");
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(c->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(c->doc, p->value);
		const char *k = scalar(kn);
		char sub[256];
		int rc;

		if (!k)
			return fail(c, kn, path, "keys must be plain strings");
		for (q = n->data.mapping.pairs.start; q < p; q++) {
			const char *k2 = scalar(yaml_document_get_node(c->doc, q->key));

			if (k2 && !strcmp(k, k2))
				return fail(c, kn, path, "duplicate key '%s'", k);
		}
		if (path[0])
			snprintf(sub, sizeof sub, "%s.%s", path, k);
		else
			snprintf(sub, sizeof sub, "%s", k);
		rc = fn(c, k, kn, vn, sub);
		if (rc)
			return rc;
	}
	return 0;
}

static int unknown(struct ctx *c, yaml_node_t *kn, const char *path)
{
	return fail(c, kn, path, "unknown key");
}

/* ---- resources ------------------------------------------------------- */

static int parse_infra(struct ctx *c, yaml_node_t *n, const char *path,
		       struct jobspec_infra *out)
{
	const char *s;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	if (jobspec_infra_parse(s, out))
		return fail(c, n, path, "'%s' is not CLOUD[/REGION[/ZONE]]", s);
	return 0;
}

static int push_infra(struct ctx *c, const struct jobspec_infra *in)
{
	struct jobspec_infra *v = realloc(c->js->infra,
					  (c->js->n_infra + 1) * sizeof *v);

	if (!v)
		return -ENOMEM;
	c->js->infra = v;
	v[c->js->n_infra++] = *in;
	return 0;
}

static int anyof_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		      yaml_node_t *vn, const char *path)
{
	struct jobspec_infra in;
	int rc;

	if (strcmp(k, "infra"))
		return unknown(c, kn, path);
	rc = parse_infra(c, vn, path, &in);
	return rc ? rc : push_infra(c, &in);
}

static int parse_accel(struct ctx *c, yaml_node_t *n, const char *path)
{
	struct jobspec *js = c->js;
	const char *s = scalar(n);
	double cnt;

	if (n->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *p = n->data.mapping.pairs.start;
		const char *k, *v;
		int rc;

		if (n->data.mapping.pairs.top - p != 1)
			return fail(c, n, path, "expected one NAME: COUNT pair");
		k = scalar(yaml_document_get_node(c->doc, p->key));
		v = scalar(yaml_document_get_node(c->doc, p->value));
		if (!k || !v || strlen(k) >= sizeof js->accel ||
		    catalog_parse_accel(k, js->accel, sizeof js->accel, &cnt))
			return fail(c, n, path, "expected NAME: COUNT");
		rc = want_int(c, yaml_document_get_node(c->doc, p->value), path, 1,
			      1024, &js->accel_count);
		return rc;
	}
	if (!s || catalog_parse_accel(s, js->accel, sizeof js->accel, &cnt) ||
	    cnt != floor(cnt) || cnt > 1024) {
		js->accel[0] = '\0';
		return fail(c, n, path, "'%s' is not NAME:COUNT like H100:8", s ? s : "");
	}
	js->accel_count = (int)cnt;
	return 0;
}

static int res_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		    yaml_node_t *vn, const char *path)
{
	if (!strcmp(k, "accelerators"))
		return parse_accel(c, vn, path);
	if (!strcmp(k, "use_spot")) {
		c->use_spot_line = LINE(vn);
		return want_bool(c, vn, path, &c->js->use_spot);
	}
	if (!strcmp(k, "infra")) {
		struct jobspec_infra in;
		int rc;

		if (c->js->n_infra)
			return fail(c, kn, path, "give infra or any_of, not both");
		rc = parse_infra(c, vn, path, &in);
		return rc ? rc : push_infra(c, &in);
	}
	if (!strcmp(k, "any_of")) {
		char sub[300];
		size_t i = 0;

		if (c->js->n_infra)
			return fail(c, kn, path, "give infra or any_of, not both");
		if (vn->type != YAML_SEQUENCE_NODE ||
		    vn->data.sequence.items.top == vn->data.sequence.items.start)
			return fail(c, vn, path, "expected a non-empty list of {infra: ...}");
		for (yaml_node_item_t *it = vn->data.sequence.items.start;
		     it < vn->data.sequence.items.top; it++, i++) {
			int rc;

			snprintf(sub, sizeof sub, "%s[%zu]", path, i);
			rc = walk_map(c, yaml_document_get_node(c->doc, *it), sub,
				      anyof_pair);
			if (rc)
				return rc;
		}
		return 0;
	}
	return unknown(c, kn, path);
}

/* ---- spotrun: ---------------------------------------------------------- */

static int parse_bps(struct ctx *c, yaml_node_t *n, const char *path, double *out)
{
	const char *s;
	char buf[64];
	size_t len;
	uint64_t v;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	len = strlen(s);
	if (len < 3 || len >= sizeof buf || strcmp(s + len - 2, "/s"))
		return fail(c, n, path, "'%s' is not a bandwidth like 1GB/s", s);
	memcpy(buf, s, len - 2);
	buf[len - 2] = '\0';
	if (jobspec_parse_size(buf, &v) || v == 0)
		return fail(c, n, path, "'%s' is not a bandwidth like 1GB/s", s);
	*out = (double)v;
	return 0;
}

static int ckpt_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		     yaml_node_t *vn, const char *path)
{
	struct jobspec *js = c->js;

	if (!strcmp(k, "size")) {
		const char *s;
		int rc = want_scalar(c, vn, path, &s);

		if (!rc && jobspec_parse_size(s, &js->ckpt_bytes))
			rc = fail(c, vn, path, "'%s' is not a size like 40GB", s);
		return rc;
	}
	if (!strcmp(k, "interval"))
		return want_dur(c, vn, path, &js->ckpt_interval_ns);
	if (!strcmp(k, "stall"))
		return want_dur(c, vn, path, &js->ckpt_stall_ns);
	if (!strcmp(k, "restore_bandwidth"))
		return parse_bps(c, vn, path, &js->restore_bps);
	if (!strcmp(k, "uri")) {
		struct objstore_uri u;
		struct sr_err ue = { 0 };
		const char *s;
		int rc = want_scalar(c, vn, path, &s);

		if (rc)
			return rc;
		rc = objstore_uri_parse(s, &u, &ue);
		objstore_uri_free(&u);
		if (rc)
			return fail(c, vn, path, "%s", ue.msg);
		free(js->ckpt_uri);
		js->ckpt_uri = strdup(s);
		return js->ckpt_uri ? 0 : -ENOMEM;
	}
	return unknown(c, kn, path);
}

static int parse_deadline(struct ctx *c, yaml_node_t *n, const char *path)
{
	const char *s;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	if (!sr_dur_parse(s, &c->js->deadline_ns, NULL) && c->js->deadline_ns > 0) {
		c->js->deadline_kind = JOBSPEC_DEADLINE_RELATIVE;
		return 0;
	}
	if (!sr_time_parse_rfc3339(s, &c->js->deadline_ns, NULL)) {
		c->js->deadline_kind = JOBSPEC_DEADLINE_ABSOLUTE;
		return 0;
	}
	return fail(c, n, path, "'%s' is not a duration like 36h or an RFC 3339 time", s);
}

static int parse_work(struct ctx *c, yaml_node_t *n, const char *path)
{
	const char *s;
	int64_t ns;
	double h;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	if (!catalog__parse_num(s, &h) && h > 0 && h < 1e6) {
		c->js->work_h = h;
		return 0;
	}
	if (!sr_dur_parse(s, &ns, NULL) && ns > 0) {
		c->js->work_h = (double)ns / 3600e9;
		return 0;
	}
	return fail(c, n, path, "'%s' is not compute hours (20 or 20h)", s);
}

static int spot_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		     yaml_node_t *vn, const char *path)
{
	struct jobspec *js = c->js;
	const char *s;
	int rc;

	if (!strcmp(k, "deadline"))
		return parse_deadline(c, vn, path);
	if (!strcmp(k, "work"))
		return parse_work(c, vn, path);
	if (!strcmp(k, "criticality")) {
		c->crit_line = LINE(vn);
		rc = want_scalar(c, vn, path, &s);
		if (!rc && jobspec_crit_parse(s, &js->criticality))
			rc = fail(c, vn, path, "'%s' is not critical, standard or best-effort", s);
		return rc;
	}
	if (!strcmp(k, "checkpoint"))
		return walk_map(c, vn, path, ckpt_pair);
	if (!strcmp(k, "max_hourly_cost"))
		return want_money(c, vn, path, &js->max_hourly_cost);
	if (!strcmp(k, "max_cost"))
		return want_money(c, vn, path, &js->max_cost);
	if (!strcmp(k, "max_restarts"))
		return want_int(c, vn, path, 0, 1000000, &js->max_restarts);
	if (!strcmp(k, "network")) {
		rc = want_scalar(c, vn, path, &s);
		if (!rc && catalog_net_parse(s, &js->network))
			rc = fail(c, vn, path, "'%s' is not any, ethernet, rdma or infiniband", s);
		return rc;
	}
	if (!strcmp(k, "autostop"))
		return want_dur(c, vn, path, &js->autostop_ns);
	if (!strcmp(k, "provisioning"))
		return want_dur(c, vn, path, &js->provision_ns);
	if (!strcmp(k, "image_pull"))
		return want_dur(c, vn, path, &js->image_pull_ns);
	if (!strcmp(k, "p_target")) {
		double v;

		rc = want_scalar(c, vn, path, &s);
		if (!rc && (catalog__parse_num(s, &v) || !(v > 0 && v <= 1)))
			rc = fail(c, vn, path, "'%s' is not a probability in (0, 1]", s);
		if (!rc)
			js->p_target = v;
		return rc;
	}
	return unknown(c, kn, path);
}

/* ---- top level -------------------------------------------------------- */

static int env_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		    yaml_node_t *vn, const char *path)
{
	struct jobspec *js = c->js;
	struct jobspec_env *v;
	const char *s;
	int rc = want_scalar(c, vn, path, &s);

	(void)kn;
	if (rc)
		return rc;
	v = realloc(js->envs, (js->n_envs + 1) * sizeof *v);
	if (!v)
		return -ENOMEM;
	js->envs = v;
	v[js->n_envs].key = strdup(k);
	v[js->n_envs].value = strdup(s);
	js->n_envs++;
	if (!v[js->n_envs - 1].key || !v[js->n_envs - 1].value)
		return -ENOMEM;
	return 0;
}

static int top_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		    yaml_node_t *vn, const char *path)
{
	if (!strcmp(k, "name"))
		return want_str(c, vn, path, &c->js->name);
	if (!strcmp(k, "num_nodes"))
		return want_int(c, vn, path, 1, 4096, &c->js->num_nodes);
	if (!strcmp(k, "resources"))
		return walk_map(c, vn, path, res_pair);
	if (!strcmp(k, "envs"))
		return is_null(vn) ? 0 : walk_map(c, vn, path, env_pair);
	if (!strcmp(k, "setup"))
		return want_str(c, vn, path, &c->js->setup);
	if (!strcmp(k, "run"))
		return want_str(c, vn, path, &c->js->run);
	if (!strcmp(k, "spotrun"))
		return walk_map(c, vn, path, spot_pair);
	return unknown(c, kn, path);
}

int jobspec_parse_buf(const char *buf, size_t len, const char *name,
		      struct jobspec *js, struct sr_err *e)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct ctx c = { &doc, name, js, e, 0, 0 };
	yaml_node_t *root;
	int rc = 0, have_doc = 0;

	jobspec_init(js);
	if (!yaml_parser_initialize(&parser))
		return sr_err_set(e, -ENOMEM, "%s: out of memory", name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s:%d: %s", name,
				(int)parser.problem_mark.line + 1,
				parser.problem ? parser.problem : "invalid YAML");
		goto out;
	}
	have_doc = 1;
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		rc = sr_err_set(e, -SR_EPARSE, "%s:1: empty job file", name);
		goto out;
	}
	rc = walk_map(&c, root, "", top_pair);
	if (rc)
		goto out;
	if (js->criticality == JOBSPEC_CRIT_CRITICAL && js->use_spot == 1) {
		rc = sr_err_set(e, -SR_EPARSE,
				"%s:%d: resources.use_spot: spot is not allowed for criticality critical (line %d)",
				name, c.use_spot_line, c.crit_line);
		goto out;
	}
	if (js->criticality == JOBSPEC_CRIT_BEST_EFFORT && js->use_spot == 0) {
		rc = sr_err_set(e, -SR_EPARSE,
				"%s:%d: resources.use_spot: best-effort jobs run on spot only (line %d)",
				name, c.use_spot_line, c.crit_line);
		goto out;
	}
	rc = jobspec_validate(js, name, e);
out:
	if (rc == -ENOMEM && e && !e->code)
		sr_err_set(e, rc, "%s: out of memory", name);
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc)
		jobspec_free(js);
	return rc;
}

int jobspec_parse_file(const char *path, struct jobspec *js, struct sr_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	jobspec_init(js);
	rc = catalog__read_file(path, &buf, &len, e);
	if (!rc)
		rc = jobspec_parse_buf(buf, len, path, js, e);
	free(buf);
	return rc;
}
