/*
 * jobspec.c - parse YAML job files (format in jobspec.h) with libyaml.
 *
 * The file is loaded as a libyaml document tree, then walked with one
 * table of allowed keys per mapping; each node keeps its start line, so
 * every message names "file:line: key.path".  Duplicate keys, unknown
 * keys and wrongly typed values are errors; nothing is ignored silently.
 * The walk records every problem and goes on (jobspec_int.h), so one run
 * reports them all.  resources: and SkyPilot's keys are in jobspec_res.c.
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
#include "common/fsutil.h"
#include "common/signame.h"
#include "common/text.h"
#include "common/timeutil.h"
#include "joblimits.h"
#include "jobspec_int.h"
#include "objstore/objstore.h"

#define ctx jobspec__ctx
#define LINE JOBSPEC__LINE
#define fail jobspec__fail
#define scalar(n) jobspec__scalar(n)
#define is_null jobspec__is_null
#define want_scalar jobspec__want_scalar
#define want_str jobspec__want_str
#define want_bool jobspec__want_bool
#define want_int jobspec__want_int
#define walk_map jobspec__walk_map
typedef jobspec__pair_fn pair_fn;

static int push_raw(struct ctx *c, char ***v, size_t *n, const char *msg)
{
	char **nv = realloc(*v, (*n + 1) * sizeof *nv);

	if (!nv) {
		c->oom = 1;
		return -ENOMEM;
	}
	*v = nv;
	nv[*n] = strdup(msg);
	if (!nv[*n]) {
		c->oom = 1;
		return -ENOMEM;
	}
	(*n)++;
	return 0;
}

/* Format "file:line: path: reason" and add it to *v. */
__attribute__((format(printf, 6, 0)))
static int vpush(struct ctx *c, char ***v, size_t *n, yaml_node_t *nd,
		 const char *path, const char *fmt, va_list ap)
{
	char reason[400], msg[600];

	vsnprintf(reason, sizeof reason, fmt, ap);
	if (path[0])
		snprintf(msg, sizeof msg, "%s:%d: %s: %s", c->name, LINE(nd), path,
			 reason);
	else
		snprintf(msg, sizeof msg, "%s:%d: %s", c->name, LINE(nd), reason);
	return push_raw(c, v, n, msg);
}

int jobspec__fail(struct ctx *c, yaml_node_t *n, const char *path,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vpush(c, &c->d.errors, &c->d.n_errors, n, path, fmt, ap);
	va_end(ap);
	return -SR_EPARSE;
}

int jobspec__note(struct ctx *c, yaml_node_t *n, const char *path,
		  const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vpush(c, &c->d.notes, &c->d.n_notes, n, path, fmt, ap);
	va_end(ap);
	return rc;
}

const char *jobspec__scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
						: NULL;
}

int jobspec__is_null(yaml_node_t *n)
{
	const char *s = scalar(n);

	return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*s || !strcmp(s, "~") || !strcmp(s, "null"));
}

int jobspec__want_scalar(struct ctx *c, yaml_node_t *n, const char *path,
			 const char **out)
{
	*out = scalar(n);
	if (!*out || is_null(n))
		return fail(c, n, path, "expected a value");
	/* "a\0b" in double quotes: a string cut at the NUL is not what the
	 * file says */
	if (strlen(*out) != n->data.scalar.length)
		return fail(c, n, path, "contains a NUL character");
	return 0;
}

int jobspec__want_str(struct ctx *c, yaml_node_t *n, const char *path, char **out)
{
	const char *s;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	free(*out);
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

int jobspec__want_bool(struct ctx *c, yaml_node_t *n, const char *path, int *out)
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

int jobspec__want_int(struct ctx *c, yaml_node_t *n, const char *path, long lo,
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

/* The keys of one mapping seen so far: an open-addressing set of key
 * strings (borrowed from the document), so the duplicate check is linear
 * in the number of keys (a quadratic scan took 2.7 s on 24k keys). */
struct keyset {
	const char **slot;
	size_t mask;
};

/* 1 if k was there already, 0 after adding it. */
static int keyset_add(struct keyset *ks, const char *k)
{
	size_t i = (size_t)sr_text_fnv1a(k, SR_FNV1A_BASIS) & ks->mask;

	while (ks->slot[i]) {
		if (!strcmp(ks->slot[i], k))
			return 1;
		i = (i + 1) & ks->mask;
	}
	ks->slot[i] = k;
	return 0;
}

int jobspec__walk_map(struct ctx *c, yaml_node_t *n, const char *path,
		      pair_fn fn)
{
	struct keyset ks = { NULL, 0 };
	yaml_node_pair_t *p;
	size_t npairs, cap = 8;
	int rc = 0;

	if (!n || n->type != YAML_MAPPING_NODE)
		return fail(c, n, path, "expected a mapping");
	npairs = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	while (cap < 2 * npairs)
		cap *= 2;
	ks.slot = calloc(cap, sizeof *ks.slot);
	if (!ks.slot) {
		c->oom = 1;
		return -ENOMEM;
	}
	ks.mask = cap - 1;
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(c->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(c->doc, p->value);
		const char *k = scalar(kn);
		char sub[256];

		if (!k) {
			fail(c, kn, path, "keys must be plain strings");
			continue;
		}
		if (strlen(k) != kn->data.scalar.length) {
			fail(c, kn, path, "a key contains a NUL character");
			continue;
		}
		if (keyset_add(&ks, k)) {
			fail(c, kn, path, "duplicate key '%s'", k);
			continue;
		}
		if (path[0])
			snprintf(sub, sizeof sub, "%s.%s", path, k);
		else
			snprintf(sub, sizeof sub, "%s", k);
		rc = fn(c, k, kn, vn, sub);
		if (rc == -ENOMEM || c->oom) {
			rc = -ENOMEM;
			break;
		}
		rc = 0;
	}
	free(ks.slot);
	return rc;
}

int jobspec__unknown(struct ctx *c, yaml_node_t *kn, const char *path,
		     const char *key, const char *const *keys,
		     const char *const *hints)
{
	char near[160];
	size_t nk = 0;

	for (size_t i = 0; hints && hints[i]; i += 2) {
		if (!strcmp(hints[i], key))
			return fail(c, kn, path, "not supported; %s", hints[i + 1]);
	}
	while (keys && keys[nk])
		nk++;
	catalog_nearest(key, keys, nk, near, sizeof near);
	if (near[0])
		return fail(c, kn, path, "unknown key; expected one of: %s", near);
	return fail(c, kn, path, "unknown key");
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

static const char *const ckpt_keys[] = {
	"size", "interval", "stall", "restore_bandwidth", "uri",
	"alert_intervals", NULL
};

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
	if (!strcmp(k, "alert_intervals"))
		return want_int(c, vn, path, 1, 1000000, &js->ckpt_alert_intervals);
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
	return jobspec__unknown(c, kn, path, k, ckpt_keys, NULL);
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

static const char *const spot_keys[] = {
	"deadline", "work", "criticality", "checkpoint", "max_hourly_cost",
	"max_cost", "max_restarts", "network", "autostop", "provisioning",
	"image_pull", "p_target", "team", "project", "cost_center", "spares",
	"delay_cost_per_hour", "preempt_signal", "sync_quiet",
	"train_through_notice", "peer_replicas", NULL
};

/* team/project/cost_center: a label value into out[JOBSPEC_LABEL_MAX]. */
static int want_label(struct ctx *c, yaml_node_t *n, const char *path,
		      char *out)
{
	const char *s, *why;
	int rc = want_scalar(c, n, path, &s);

	if (rc)
		return rc;
	why = jobspec_label_bad(s);
	if (why)
		return fail(c, n, path, "'%.80s' is not a label: %s", s, why);
	snprintf(out, JOBSPEC_LABEL_MAX, "%s", s);
	return 0;
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
	if (!strcmp(k, "spares"))
		return want_int(c, vn, path, 0, SR_LIMIT_SPARES_MAX, &js->spares);
	if (!strcmp(k, "delay_cost_per_hour"))
		return want_money(c, vn, path, &js->delay_cost_per_h);
	if (!strcmp(k, "train_through_notice"))
		return want_bool(c, vn, path, &js->train_through_notice);
	if (!strcmp(k, "peer_replicas")) {
		c->peer_line = LINE(vn);
		return want_int(c, vn, path, 0, SR_LIMIT_PEER_REPLICAS_MAX,
				&js->peer_replicas);
	}
	if (!strcmp(k, "max_restarts"))
		return want_int(c, vn, path, 0, SR_LIMIT_MAX_RESTARTS_MAX,
				&js->max_restarts);
	if (!strcmp(k, "network")) {
		rc = want_scalar(c, vn, path, &s);
		if (!rc && catalog_net_parse(s, &js->network))
			rc = fail(c, vn, path, "'%s' is not any, ethernet, rdma or infiniband", s);
		return rc;
	}
	if (!strcmp(k, "autostop"))
		return want_dur(c, vn, path, &js->autostop_ns);
	if (!strcmp(k, "preempt_signal")) {
		rc = want_scalar(c, vn, path, &s);
		if (!rc && (js->preempt_signal = sr_stop_signal_parse(s)) < 0)
			rc = fail(c, vn, path, "'%.40s' is not a signal a workload "
				  "can stop on (" SR_STOP_SIGNALS ")", s);
		return rc;
	}
	if (!strcmp(k, "sync_quiet")) {
		rc = want_dur(c, vn, path, &js->sync_quiet_ns);
		if (!rc && (js->sync_quiet_ns < JOBSPEC_SYNC_QUIET_MIN_MS * 1000000ll ||
			    js->sync_quiet_ns > JOBSPEC_SYNC_QUIET_MAX_MS * 1000000ll))
			rc = fail(c, vn, path, "%lld ms: must be 100ms to 10m",
				  (long long)(js->sync_quiet_ns / 1000000));
		return rc;
	}
	if (!strcmp(k, "provisioning"))
		return want_dur(c, vn, path, &js->provision_ns);
	if (!strcmp(k, "image_pull"))
		return want_dur(c, vn, path, &js->image_pull_ns);
	if (!strcmp(k, "team"))
		return want_label(c, vn, path, js->team);
	if (!strcmp(k, "project"))
		return want_label(c, vn, path, js->project);
	if (!strcmp(k, "cost_center"))
		return want_label(c, vn, path, js->cost_center);
	if (!strcmp(k, "p_target")) {
		double v;

		rc = want_scalar(c, vn, path, &s);
		if (!rc && (catalog__parse_num(s, &v) || !(v > 0 && v <= 1)))
			rc = fail(c, vn, path, "'%s' is not a probability in (0, 1]", s);
		if (!rc)
			js->p_target = v;
		return rc;
	}
	return jobspec__unknown(c, kn, path, k, spot_keys, NULL);
}

/* ---- top level -------------------------------------------------------- */

static int push_env(struct jobspec_env **v, size_t *n, const char *k,
		    const char *val)
{
	struct jobspec_env *nv = *v;

	/* the capacity doubles at each power of two: linear in all */
	if ((*n & (*n - 1)) == 0) {
		nv = realloc(*v, (*n ? 2 * *n : 1) * sizeof *nv);
		if (!nv)
			return -ENOMEM;
	}
	*v = nv;
	nv[*n].key = strdup(k);
	nv[*n].value = val ? strdup(val) : NULL;
	(*n)++;
	if (!nv[*n - 1].key || (val && !nv[*n - 1].value))
		return -ENOMEM;
	return 0;
}

/* Variable names a shell accepts: [A-Za-z_][A-Za-z0-9_]*. */
static int env_name_ok(const char *k)
{
	if (!*k || isdigit((unsigned char)*k))
		return 0;
	for (; *k; k++) {
		if (!isalnum((unsigned char)*k) && *k != '_')
			return 0;
	}
	return 1;
}

/* envs: and secrets: (where a null value means "take it from the
 * launching environment", which SkyPilot passes with --secret). */
static int var_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		    yaml_node_t *vn, const char *path, int secret)
{
	struct jobspec *js = c->js;
	const char *s = NULL;
	int rc;

	if (!env_name_ok(k))
		return fail(c, kn, path, "'%s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", k);
	if (!secret || !is_null(vn)) {
		rc = want_scalar(c, vn, path, &s);
		if (rc)
			return rc;
	}
	if (secret)
		return push_env(&js->secrets, &js->n_secrets, k, s);
	return push_env(&js->envs, &js->n_envs, k, s);
}

static int env_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		    yaml_node_t *vn, const char *path)
{
	return var_pair(c, k, kn, vn, path, 0);
}

static int secret_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		       yaml_node_t *vn, const char *path)
{
	return var_pair(c, k, kn, vn, path, 1);
}

static const char *const top_keys[] = {
	"name", "num_nodes", "resources", "envs", "secrets", "workdir",
	"file_mounts", "setup", "run", "spotrun", NULL
};

/* SkyPilot task keys spotrun does not take, and what to do instead. */
static const char *const top_hints[] = {
	"service", "SkyServe services are not supported; spotrun runs training jobs",
	"config", "per-task SkyPilot config is not supported; remove it",
	"volumes", "use file_mounts (a local path or a bucket)",
	"event_callback", "use spotrun's alerts (docs/finops.md)",
	NULL
};

static int top_pair(struct ctx *c, const char *k, yaml_node_t *kn,
		    yaml_node_t *vn, const char *path)
{
	if (!strcmp(k, "name"))
		return want_str(c, vn, path, &c->js->name);
	if (!strcmp(k, "num_nodes"))
		return want_int(c, vn, path, SR_LIMIT_NUM_NODES_MIN,
				SR_LIMIT_NUM_NODES_MAX, &c->js->num_nodes);
	if (!strcmp(k, "resources"))
		return walk_map(c, vn, path, jobspec__res_pair);
	if (!strcmp(k, "envs"))
		return is_null(vn) ? 0 : walk_map(c, vn, path, env_pair);
	if (!strcmp(k, "secrets"))
		return is_null(vn) ? 0 : walk_map(c, vn, path, secret_pair);
	if (!strcmp(k, "workdir")) {
		if (vn->type == YAML_MAPPING_NODE)
			return fail(c, vn, path, "a git workdir is not supported; give a local "
				    "directory (workdir: .)");
		return want_str(c, vn, path, &c->js->workdir);
	}
	if (!strcmp(k, "file_mounts")) {
		c->mounts_n = is_null(vn) ? NULL : vn; /* after envs: */
		return 0;                               /* jobspec__mounts */
	}
	if (!strcmp(k, "setup"))
		return want_str(c, vn, path, &c->js->setup);
	if (!strcmp(k, "run"))
		return want_str(c, vn, path, &c->js->run);
	if (!strcmp(k, "spotrun"))
		return walk_map(c, vn, path, spot_pair);
	return jobspec__unknown(c, kn, path, k, top_keys, top_hints);
}

/* Reject a document nested deeper than SR_LIMIT_YAML_DEPTH while reading
 * it as events, before libyaml builds the tree: deep flow nesting costs
 * the composer time quadratic in the depth (issue 10: 179 s for 120k
 * levels), and no job file needs more than a handful.  A syntax error is
 * left to the loader, which reports it. */
static int check_depth(const char *buf, size_t len, const char *name,
		       struct sr_err *e)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, rc = 0;

	if (!yaml_parser_initialize(&p))
		return sr_err_set(e, -ENOMEM, "%s: out of memory", name);
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	for (;;) {
		yaml_event_type_t t;
		int line;

		if (!yaml_parser_parse(&p, &ev))
			break;
		t = ev.type;
		line = (int)ev.start_mark.line + 1;
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT)
			break;
		if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT)
			depth++;
		else if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT)
			depth--;
		if (depth > SR_LIMIT_YAML_DEPTH) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: nested deeper than "
					"%d levels", name, line,
					SR_LIMIT_YAML_DEPTH);
			break;
		}
	}
	yaml_parser_delete(&p);
	return rc;
}

void jobspec_diag_free(struct jobspec_diag *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_errors; i++)
		free(d->errors[i]);
	for (size_t i = 0; i < d->n_notes; i++)
		free(d->notes[i]);
	free(d->errors);
	free(d->notes);
	memset(d, 0, sizeof *d);
}

/* Cross-key rules, once every key is read. */
static void check_crit(struct ctx *c)
{
	struct jobspec *js = c->js;
	char msg[300];

	msg[0] = '\0';
	if (js->criticality == JOBSPEC_CRIT_CRITICAL && js->use_spot == 1)
		snprintf(msg, sizeof msg, "%s:%d: resources.use_spot: spot is not allowed for criticality critical (line %d)",
			 c->name, c->use_spot_line, c->crit_line);
	if (js->criticality == JOBSPEC_CRIT_BEST_EFFORT && js->use_spot == 0)
		snprintf(msg, sizeof msg, "%s:%d: resources.use_spot: best-effort jobs run on spot only (line %d)",
			 c->name, c->use_spot_line, c->crit_line);
	if (msg[0])
		push_raw(c, &c->d.errors, &c->d.n_errors, msg);
	msg[0] = '\0';
	if (js->peer_replicas > 0 && js->peer_replicas >= js->num_nodes)
		snprintf(msg, sizeof msg, "%s:%d: spotrun.peer_replicas: %d copies need at least %d nodes (num_nodes is %d); a copy lives on another rank's node",
			 c->name, c->peer_line, js->peer_replicas,
			 js->peer_replicas + 1, js->num_nodes);
	else if (js->peer_replicas > 0 && !js->ckpt_uri)
		snprintf(msg, sizeof msg, "%s:%d: spotrun.peer_replicas: needs spotrun.checkpoint.uri (without an object store the nodes share one directory, which holds every part)",
			 c->name, c->peer_line);
	if (msg[0])
		push_raw(c, &c->d.errors, &c->d.n_errors, msg);
}

int jobspec_parse_buf_diag(const char *buf, size_t len, const char *name,
			   struct jobspec *js, struct jobspec_diag *d,
			   struct sr_err *e)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct ctx c;
	yaml_node_t *root;
	int rc = 0, have_doc = 0;

	jobspec_init(js);
	memset(&c, 0, sizeof c);
	c.doc = &doc;
	c.name = name;
	c.js = js;
	if (d)
		memset(d, 0, sizeof *d);
	if (len > SR_LIMIT_JOB_BYTES)
		return sr_err_set(e, -EFBIG, "%s: %zu bytes; a job file may have "
				  "at most %d KiB", name, len,
				  SR_LIMIT_JOB_BYTES / 1024);
	if (memchr(buf, '\0', len))
		return sr_err_set(e, -SR_EPARSE, "%s: contains a NUL byte (not a "
				  "YAML text file)", name);
	rc = check_depth(buf, len, name, e);
	if (rc)
		return rc;
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
	if (rc == 0 && !c.oom)
		rc = jobspec__mounts(&c);
	if (rc == -ENOMEM || c.oom) {
		rc = -ENOMEM;
		goto out;
	}
	rc = jobspec__res_finish(&c);
	if (rc == 0)
		rc = jobspec__mount_finish(&c);
	if (rc == -ENOMEM || c.oom) {
		rc = -ENOMEM;
		goto out;
	}
	check_crit(&c);
	if (c.d.n_errors) {
		if (c.d.n_errors > 1)
			rc = sr_err_set(e, -SR_EPARSE, "%s (and %zu more problem%s)",
					c.d.errors[0], c.d.n_errors - 1,
					c.d.n_errors > 2 ? "s" : "");
		else
			rc = sr_err_set(e, -SR_EPARSE, "%s", c.d.errors[0]);
		goto out;
	}
	rc = jobspec_validate(js, name, e);
out:
	if (rc == -ENOMEM && e && !e->code)
		sr_err_set(e, rc, "%s: out of memory", name);
	free(c.bucket_nodes);
	free(c.spot_strategy);
	for (size_t i = 0; i < c.n_filled; i++)
		free(c.filled[i]);
	free(c.filled);
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (d)
		*d = c.d;
	else
		jobspec_diag_free(&c.d);
	if (rc)
		jobspec_free(js);
	return rc;
}

int jobspec_parse_buf(const char *buf, size_t len, const char *name,
		      struct jobspec *js, struct sr_err *e)
{
	return jobspec_parse_buf_diag(buf, len, name, js, NULL, e);
}

int jobspec_parse_file_diag(const char *path, struct jobspec *js,
			    struct jobspec_diag *d, struct sr_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	jobspec_init(js);
	if (d)
		memset(d, 0, sizeof *d);
	/* one byte past the limit is enough to refuse it, with its size */
	rc = sr_fs_read_file(path, SR_LIMIT_JOB_BYTES + 1, &buf, &len, e);
	if (rc == -EFBIG)
		rc = sr_err_set(e, -EFBIG, "%s: larger than %d KiB, the most a "
				"job file may have", path, SR_LIMIT_JOB_BYTES / 1024);
	if (!rc)
		rc = jobspec_parse_buf_diag(buf, len, path, js, d, e);
	free(buf);
	return rc;
}

int jobspec_parse_file(const char *path, struct jobspec *js, struct sr_err *e)
{
	return jobspec_parse_file_diag(path, js, NULL, e);
}
