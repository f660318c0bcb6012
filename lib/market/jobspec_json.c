/*
 * jobspec_json.c - struct jobspec <-> JSON, the form the daemon stores.
 *
 *   {"name": "demo", "num_nodes": 1, "setup": null, "run": "python t.py",
 *    "envs": {"K": "V"},
 *    "secrets": {"K": "V" | null}, "workdir": "/abs" | null,
 *    "file_mounts": {"/data": "/abs/src",
 *                    "/ckpt": {"uri": "s3://b/p", "store": "s3",
 *                              "mode": "MOUNT_CACHED", "name": null,
 *                              "source": "s3://b/p"}},
 *    "resources": {"accelerators": "H100:8" | ["A100:8", "H100:8"],
 *                  "use_spot": true, "ordered": false,
 *                  "any_of": [{"infra": "aws/us-east-1",
 *                              "accelerators": "H100:8" (optional)}],
 *                  "cpus": "8+" | null, "memory": "32" | null,
 *                  "disk_size": 0, "image_id": null, "ports": ["8080"],
 *                  "job_recovery": {"strategy": null,
 *                                   "max_restarts_on_errors": 0}},
 *    "spotrun": {"deadline_ns": 129600000000000 | "deadline_at": RFC3339,
 *                "work_h": 20.0, "criticality": "standard",
 *                "checkpoint": {"size_bytes": 40000000000, "interval_ns": 0,
 *                               "stall_ns": -1, "restore_bps": 1e9},
 *                "max_hourly_cost_micros": -1, "max_cost_micros": -1,
 *                "max_restarts": -1, "network": "any", "autostop_ns": 0,
 *                "p_target": 0.99, "provisioning_ns": ..., "image_pull_ns": ...,
 *                "spares": -1, "delay_cost_per_hour_micros": -1,
 *                "train_through_notice": false,
 *                "preempt_signal": "USR1", "sync_quiet_ms": 5000}}
 *   (the last two only when not the defaults, TERM and 2000)
 *
 * -1 keeps its meaning from jobspec.h ("no limit" / "derived").  Reading
 * rejects unknown keys like the YAML parser does.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/signame.h"
#include "common/timeutil.h"
#include "jobspec.h"
#include "joblimits.h"

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* image_id: one image, or {REGION: IMAGE} (SkyPilot's two forms). */
static json_t *image_json(const struct jobspec *js)
{
	json_t *o;

	if (!js->n_images)
		return str_or_null(js->image_id);
	o = json_object();
	for (size_t i = 0; o && i < js->n_images; i++) {
		if (json_object_set_new(o, js->images[i].region,
					json_string(js->images[i].image))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *accel_str(const char *name, int count)
{
	char buf[48];

	snprintf(buf, sizeof buf, "%s:%d", name, count);
	return json_string(buf);
}

/* One choice as "H100:8", several as a list, none as null. */
static json_t *accels_json(const struct jobspec *js)
{
	json_t *a;

	if (js->n_accels <= 1)
		return js->accel[0] ? accel_str(js->accel, js->accel_count) : json_null();
	a = json_array();
	for (size_t i = 0; a && i < js->n_accels; i++) {
		if (json_array_append_new(a, accel_str(js->accels[i].name,
							js->accels[i].count))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *amount_json(double v, int plus)
{
	char buf[48];

	if (!(v > 0))
		return json_null();
	snprintf(buf, sizeof buf, "%g%s", v, plus ? "+" : "");
	return json_string(buf);
}

static json_t *envs_json(const struct jobspec_env *v, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++) {
		if (json_object_set_new(o, v[i].key, str_or_null(v[i].value))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* The SkyPilot keys beyond spotrun's original set; 0 or 1 on failure. */
static int sky_to_json(const struct jobspec *js, json_t *o, json_t *res)
{
	json_t *ports = json_array(), *mounts = json_object(), *rec = json_object();
	int bad = !ports || !mounts || !rec;

	for (size_t i = 0; !bad && i < js->n_ports; i++)
		bad |= json_array_append_new(ports, json_string(js->ports[i]));
	for (size_t i = 0; !bad && i < js->n_mounts; i++)
		bad |= json_object_set_new(mounts, js->mounts[i].dst,
					   json_string(js->mounts[i].src));
	for (size_t i = 0; !bad && i < js->n_buckets; i++) {
		const struct jobspec_bucket *b = &js->buckets[i];

		bad |= json_object_set_new(mounts, b->dst, json_pack(
			"{s:s?,s:s,s:s,s:o,s:o}", "uri", b->uri, "store", b->store,
			"mode", jobspec_mode_name(b->mode), "name",
			str_or_null(b->name), "source", str_or_null(b->source)));
	}
	if (!bad) {
		bad |= json_object_set_new(rec, "strategy", str_or_null(js->recovery));
		bad |= json_object_set_new(rec, "max_restarts_on_errors",
					   json_integer(js->max_restarts_on_errors));
		bad |= json_object_set_new(res, "ordered", json_boolean(js->infra_ordered));
		bad |= json_object_set_new(res, "cpus", amount_json(js->cpus, js->cpus_plus));
		bad |= json_object_set_new(res, "memory",
					   amount_json(js->memory_gib, js->memory_plus));
		bad |= json_object_set_new(res, "disk_size", json_integer(js->disk_gb));
		bad |= json_object_set_new(res, "image_id", image_json(js));
		bad |= json_object_set(res, "ports", ports);
		bad |= json_object_set(res, "job_recovery", rec);
		bad |= json_object_set_new(o, "secrets", envs_json(js->secrets, js->n_secrets));
		bad |= json_object_set_new(o, "workdir", str_or_null(js->workdir));
		bad |= json_object_set(o, "file_mounts", mounts);
	}
	json_decref(ports);
	json_decref(mounts);
	json_decref(rec);
	return bad;
}

json_t *jobspec_to_json(const struct jobspec *js)
{
	json_t *o = json_object(), *res = json_object(), *sp = json_object();
	json_t *ck = json_object(), *envs = json_object(), *any = json_array();
	char buf[160];
	int bad = !o || !res || !sp || !ck || !envs || !any;

	if (bad)
		goto fail;
	bad |= json_object_set_new(o, "name", str_or_null(js->name));
	bad |= json_object_set_new(o, "num_nodes", json_integer(js->num_nodes));
	bad |= json_object_set_new(o, "setup", str_or_null(js->setup));
	bad |= json_object_set_new(o, "run", str_or_null(js->run));
	for (size_t i = 0; i < js->n_envs; i++)
		bad |= json_object_set_new(envs, js->envs[i].key,
					   json_string(js->envs[i].value));
	bad |= json_object_set(o, "envs", envs);
	bad |= json_object_set_new(res, "accelerators", accels_json(js));
	bad |= json_object_set_new(res, "use_spot", js->use_spot < 0 ? json_null()
							: json_boolean(js->use_spot));
	for (size_t i = 0; i < js->n_infra; i++) {
		json_t *it = json_object();

		jobspec_infra_format(&js->infra[i], buf, sizeof buf);
		bad |= !it || json_object_set_new(it, "infra", json_string(buf));
		if (it && js->infra[i].accel[0]) {
			snprintf(buf, sizeof buf, "%s:%d", js->infra[i].accel,
				 js->infra[i].accel_count);
			bad |= json_object_set_new(it, "accelerators", json_string(buf));
		}
		bad |= json_array_append_new(any, it);
	}
	bad |= json_object_set(res, "any_of", any);
	bad |= sky_to_json(js, o, res);
	bad |= json_object_set(o, "resources", res);
	if (js->deadline_kind == JOBSPEC_DEADLINE_RELATIVE) {
		bad |= json_object_set_new(sp, "deadline_ns", json_integer(js->deadline_ns));
	} else if (js->deadline_kind == JOBSPEC_DEADLINE_ABSOLUTE) {
		if (sr_time_format_rfc3339(js->deadline_ns, 9, buf, sizeof buf) < 0)
			bad = 1;
		bad |= json_object_set_new(sp, "deadline_at", json_string(buf));
	}
	bad |= json_object_set_new(sp, "work_h", json_real(js->work_h));
	bad |= json_object_set_new(sp, "criticality",
				   json_string(jobspec_crit_name(js->criticality)));
	bad |= json_object_set_new(ck, "size_bytes", json_integer((json_int_t)js->ckpt_bytes));
	bad |= json_object_set_new(ck, "interval_ns", json_integer(js->ckpt_interval_ns));
	bad |= json_object_set_new(ck, "stall_ns", json_integer(js->ckpt_stall_ns));
	bad |= json_object_set_new(ck, "restore_bps", json_real(js->restore_bps));
	if (js->ckpt_uri)
		bad |= json_object_set_new(ck, "uri", json_string(js->ckpt_uri));
	bad |= json_object_set_new(ck, "alert_intervals",
				   json_integer(js->ckpt_alert_intervals));
	bad |= json_object_set(sp, "checkpoint", ck);
	bad |= json_object_set_new(sp, "max_hourly_cost_micros", json_integer(js->max_hourly_cost));
	bad |= json_object_set_new(sp, "max_cost_micros", json_integer(js->max_cost));
	bad |= json_object_set_new(sp, "max_restarts", json_integer(js->max_restarts));
	bad |= json_object_set_new(sp, "spares", json_integer(js->spares));
	bad |= json_object_set_new(sp, "delay_cost_per_hour_micros",
				   json_integer(js->delay_cost_per_h));
	bad |= json_object_set_new(sp, "train_through_notice",
				   json_boolean(js->train_through_notice));
	if (js->peer_replicas > 0)
		bad |= json_object_set_new(sp, "peer_replicas",
					   json_integer(js->peer_replicas));
	bad |= json_object_set_new(sp, "network",
				   json_string(js->network == CATALOG_NET_UNKNOWN ? "any"
							: catalog_net_name(js->network)));
	bad |= json_object_set_new(sp, "autostop_ns", json_integer(js->autostop_ns));
	bad |= json_object_set_new(sp, "p_target", json_real(js->p_target));
	bad |= json_object_set_new(sp, "provisioning_ns", json_integer(js->provision_ns));
	bad |= json_object_set_new(sp, "image_pull_ns", json_integer(js->image_pull_ns));
	/* written only when set, so a job's stored spec stays as it was */
	if (js->preempt_signal != SIGTERM && sr_stop_signal_name(js->preempt_signal))
		bad |= json_object_set_new(sp, "preempt_signal", json_string(
				sr_stop_signal_name(js->preempt_signal)));
	if (js->sync_quiet_ns != (int64_t)JOBSPEC_DEFAULT_SYNC_QUIET_MS * 1000000)
		bad |= json_object_set_new(sp, "sync_quiet_ms", json_integer(
				js->sync_quiet_ns / 1000000));
	if (js->team[0])
		bad |= json_object_set_new(sp, "team", json_string(js->team));
	if (js->project[0])
		bad |= json_object_set_new(sp, "project", json_string(js->project));
	if (js->cost_center[0])
		bad |= json_object_set_new(sp, "cost_center", json_string(js->cost_center));
	bad |= json_object_set(o, "spotrun", sp);
	if (bad)
		goto fail;
	json_decref(res);
	json_decref(sp);
	json_decref(ck);
	json_decref(envs);
	json_decref(any);
	return o;
fail:
	json_decref(o);
	json_decref(res);
	json_decref(sp);
	json_decref(ck);
	json_decref(envs);
	json_decref(any);
	return NULL;
}

/* ---- reading -------------------------------------------------------------- */

/* Optional string, copied (the jobspec owns its strings). */
static int get_str(json_t *o, const char *k, char **out, const char *ctx,
		   struct sr_err *e)
{
	const char *v = NULL;
	int rc = sr_json_get_str_opt(o, k, &v, ctx, e);

	if (rc || !v)
		return rc;
	*out = strdup(v);
	return *out ? 0 : -ENOMEM;
}

/* An optional int in [min, max] (limits.h). */
static int get_int(json_t *o, const char *k, int *out, int min, int max,
		   const char *ctx, struct sr_err *e)
{
	int64_t v = *out;
	int rc = sr_json_get_int_opt(o, k, &v, ctx, e);

	if (!rc && (v < min || v > max))
		rc = sr_err_set(e, -SR_EPARSE, "%s.%s: out of range", ctx, k);
	if (!rc)
		*out = (int)v;
	return rc;
}

static int parse_accel_str(json_t *v, struct jobspec_accel *out)
{
	double cnt;

	if (!json_is_string(v) ||
	    catalog_parse_accel(json_string_value(v), out->name, sizeof out->name,
				&cnt) ||
	    cnt < 1 || cnt > SR_LIMIT_ACCEL_COUNT_MAX || cnt != (int)cnt)
		return -SR_EPARSE;
	out->count = (int)cnt;
	return 0;
}

static int read_accels(json_t *v, struct jobspec *js, struct sr_err *e)
{
	size_t n = json_is_array(v) ? json_array_size(v) : 1;

	if (json_is_null(v))
		return 0;
	if (n == 0 || n > 64)
		return sr_err_set(e, -SR_EPARSE, "resources.accelerators: expected \"NAME:COUNT\" or a list of them");
	js->accels = calloc(n, sizeof *js->accels);
	if (!js->accels)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (parse_accel_str(json_is_array(v) ? json_array_get(v, i) : v,
				    &js->accels[i]))
			return sr_err_set(e, -SR_EPARSE, "resources.accelerators: expected \"NAME:COUNT\" or a list of them");
		js->n_accels++;
	}
	snprintf(js->accel, sizeof js->accel, "%s", js->accels[0].name);
	js->accel_count = js->accels[0].count;
	return 0;
}

static int read_amount(json_t *r, const char *k, double *v, int *plus,
		       struct sr_err *e)
{
	json_t *x = json_object_get(r, k);
	const char *s;
	char *end;

	if (!x || json_is_null(x))
		return 0;
	s = json_string_value(x);
	if (s) {
		*v = strtod(s, &end);
		*plus = *end == '+';
	}
	if (!s || end == s || (*end && strcmp(end, "+")) || !(*v > 0))
		return sr_err_set(e, -SR_EPARSE, "resources.%s: expected \"8\" or \"8+\"", k);
	return 0;
}

/* resources.image_id: {REGION: IMAGE} when given per region. */
static int read_images(json_t *r, struct jobspec *js, struct sr_err *e)
{
	json_t *v = json_object_get(r, "image_id"), *x;
	const char *k;

	if (!json_is_object(v))
		return get_str(r, "image_id", &js->image_id, "resources", e);
	js->images = calloc(json_object_size(v) + 1, sizeof *js->images);
	if (!js->images)
		return sr_err_set(e, -ENOMEM, "out of memory");
	json_object_foreach(v, k, x) {
		struct jobspec_image *im = &js->images[js->n_images];

		if (!json_is_string(x) || !k[0] || strlen(k) >= sizeof im->region)
			return sr_err_set(e, -SR_EPARSE, "resources.image_id.%s: "
					  "expected REGION: IMAGE", k);
		snprintf(im->region, sizeof im->region, "%s", k);
		im->image = strdup(json_string_value(x));
		if (!im->image)
			return sr_err_set(e, -ENOMEM, "out of memory");
		js->n_images++;
	}
	return 0;
}

static int read_sky_res(json_t *r, struct jobspec *js, struct sr_err *e)
{
	json_t *v = json_object_get(r, "ordered"), *rec;
	int64_t disk = 0;
	int rc = 0;

	js->infra_ordered = json_is_true(v);
	rc = read_amount(r, "cpus", &js->cpus, &js->cpus_plus, e);
	if (!rc)
		rc = read_amount(r, "memory", &js->memory_gib, &js->memory_plus, e);
	if (!rc)
		rc = sr_json_get_int_opt(r, "disk_size", &disk, "resources", e);
	if (!rc && (disk < 0 || disk > 65536))
		rc = sr_err_set(e, -SR_EPARSE, "resources.disk_size: out of range");
	js->disk_gb = (int)disk;
	if (!rc)
		rc = read_images(r, js, e);
	v = json_object_get(r, "ports");
	if (!rc && v && !json_is_array(v))
		rc = sr_err_set(e, -SR_EPARSE, "resources.ports: expected an array");
	if (!rc && v && json_array_size(v)) {
		js->ports = calloc(json_array_size(v), sizeof *js->ports);
		rc = js->ports ? 0 : -ENOMEM;
	}
	for (size_t i = 0; !rc && v && i < json_array_size(v); i++) {
		const char *p = json_string_value(json_array_get(v, i));

		if (!p) {
			rc = sr_err_set(e, -SR_EPARSE, "resources.ports[%zu]: expected a string", i);
			break;
		}
		js->ports[js->n_ports] = strdup(p);
		rc = js->ports[js->n_ports++] ? 0 : -ENOMEM;
	}
	rec = json_object_get(r, "job_recovery");
	if (!rc && rec) {
		rc = get_str(rec, "strategy", &js->recovery, "resources.job_recovery", e);
		if (!rc)
			rc = get_int(rec, "max_restarts_on_errors",
				     &js->max_restarts_on_errors, -1,
				     SR_LIMIT_MAX_RESTARTS_MAX,
				     "resources.job_recovery", e);
	}
	return rc;
}

static int read_resources(json_t *r, struct jobspec *js, struct sr_err *e)
{
	static const char *const keys[] = {
		"accelerators", "use_spot", "any_of", "ordered", "cpus", "memory",
		"disk_size", "image_id", "ports", "job_recovery", NULL
	};
	json_t *v;
	size_t i;
	int rc = sr_json_check_keys(r, keys, "resources", e);

	if (rc)
		return rc;
	v = json_object_get(r, "accelerators");
	if (v) {
		rc = read_accels(v, js, e);
		if (rc)
			return rc;
	}
	v = json_object_get(r, "use_spot");
	if (v && !json_is_null(v)) {
		if (!json_is_boolean(v))
			return sr_err_set(e, -SR_EPARSE, "resources.use_spot: expected a boolean");
		js->use_spot = json_is_true(v);
	}
	v = json_object_get(r, "any_of");
	if (v && !json_is_array(v))
		return sr_err_set(e, -SR_EPARSE, "resources.any_of: expected an array");
	if (v && json_array_size(v)) {
		js->infra = calloc(json_array_size(v), sizeof *js->infra);
		if (!js->infra)
			return -ENOMEM;
	}
	for (i = 0; v && i < json_array_size(v); i++) {
		json_t *it = json_array_get(v, i), *s = json_object_get(it, "infra");
		json_t *ac = json_object_get(it, "accelerators");
		struct jobspec_infra *in = &js->infra[i];
		struct jobspec_accel a;

		if (!json_is_string(s) || json_object_size(it) != 1u + !!ac ||
		    jobspec_infra_parse(json_string_value(s), in) ||
		    (ac && parse_accel_str(ac, &a)))
			return sr_err_set(e, -SR_EPARSE, "resources.any_of[%zu]: expected {\"infra\": \"CLOUD[/REGION[/ZONE]]\"}", i);
		if (ac) {
			snprintf(in->accel, sizeof in->accel, "%s", a.name);
			in->accel_count = a.count;
		}
		js->n_infra++;
	}
	return read_sky_res(r, js, e);
}

static int read_envs(json_t *v, const char *what, int nulls,
		     struct jobspec_env **out, size_t *n, struct sr_err *e)
{
	const char *k;
	json_t *ev;

	if (!v)
		return 0;
	if (!json_is_object(v))
		return sr_err_set(e, -SR_EPARSE, "%s: expected an object", what);
	if (json_object_size(v)) {
		*out = calloc(json_object_size(v), sizeof **out);
		if (!*out)
			return -ENOMEM;
	}
	json_object_foreach(v, k, ev) {
		struct jobspec_env *x = &(*out)[*n];

		if (!json_is_string(ev) && !(nulls && json_is_null(ev)))
			return sr_err_set(e, -SR_EPARSE, "%s.%s: expected a string", what, k);
		x->key = strdup(k);
		x->value = json_is_string(ev) ? strdup(json_string_value(ev)) : NULL;
		(*n)++;
		if (!x->key || (json_is_string(ev) && !x->value))
			return -ENOMEM;
	}
	return 0;
}

/* file_mounts.DST: {uri, store, mode, name, source} */
static int read_bucket(const char *dst, json_t *o, struct jobspec *js,
		       struct sr_err *e)
{
	static const char *const keys[] = { "uri", "store", "mode", "name",
					    "source", NULL };
	struct jobspec_bucket *b = &js->buckets[js->n_buckets];
	char ctx[300];
	const char *store = NULL, *mode = NULL;
	int rc;

	snprintf(ctx, sizeof ctx, "file_mounts.%s", dst);
	memset(b, 0, sizeof *b);
	js->n_buckets++;
	rc = sr_json_check_keys(o, keys, ctx, e);
	if (!rc)
		rc = get_str(o, "uri", &b->uri, ctx, e);
	if (!rc)
		rc = get_str(o, "name", &b->name, ctx, e);
	if (!rc)
		rc = get_str(o, "source", &b->source, ctx, e);
	if (!rc)
		rc = sr_json_get_str(o, "store", &store, ctx, e);
	if (!rc)
		rc = sr_json_get_str(o, "mode", &mode, ctx, e);
	if (rc)
		return rc;
	b->dst = strdup(dst);
	if (!b->dst)
		return -ENOMEM;
	if (jobspec_mode_parse(mode, &b->mode))
		return sr_err_set(e, -SR_EPARSE, "%s.mode: '%s' is not MOUNT, "
				  "MOUNT_CACHED or COPY", ctx, mode);
	if (strlen(store) >= sizeof b->store)
		return sr_err_set(e, -SR_EPARSE, "%s.store: '%.20s' unknown", ctx,
				  store);
	memcpy(b->store, store, strlen(store) + 1);
	return jobspec_bucket_check(b, e);
}

static int read_mounts(json_t *v, struct jobspec *js, struct sr_err *e)
{
	const char *k;
	json_t *src;
	int rc;

	if (!v)
		return 0;
	if (!json_is_object(v))
		return sr_err_set(e, -SR_EPARSE, "file_mounts: expected an object");
	if (json_object_size(v)) {
		js->mounts = calloc(json_object_size(v), sizeof *js->mounts);
		js->buckets = calloc(json_object_size(v), sizeof *js->buckets);
		if (!js->mounts || !js->buckets)
			return -ENOMEM;
	}
	json_object_foreach(v, k, src) {
		struct jobspec_mount *m = &js->mounts[js->n_mounts];

		if (json_is_object(src)) {
			rc = read_bucket(k, src, js, e);
			if (rc)
				return rc;
			continue;
		}
		if (!json_is_string(src))
			return sr_err_set(e, -SR_EPARSE, "file_mounts.%s: expected a "
					  "string or an object", k);
		m->dst = strdup(k);
		m->src = strdup(json_string_value(src));
		js->n_mounts++;
		if (!m->dst || !m->src)
			return -ENOMEM;
	}
	return 0;
}

/* spotrun.<key>, a label, into out[JOBSPEC_LABEL_MAX]; absent: "". */
static int get_label(json_t *s, const char *key, char *out, struct sr_err *e)
{
	json_t *v = json_object_get(s, key);
	const char *why;

	if (!v)
		return 0;
	if (!json_is_string(v))
		return sr_err_set(e, -SR_EPARSE, "spotrun.%s: expected a string", key);
	why = jobspec_label_bad(json_string_value(v));
	if (why)
		return sr_err_set(e, -SR_EPARSE, "spotrun.%s: not a label: %s", key, why);
	snprintf(out, JOBSPEC_LABEL_MAX, "%s", json_string_value(v));
	return 0;
}

static int read_spotrun(json_t *s, struct jobspec *js, struct sr_err *e)
{
	static const char *const keys[] = {
		"deadline_ns", "deadline_at", "work_h", "criticality", "checkpoint",
		"max_hourly_cost_micros", "max_cost_micros", "max_restarts",
		"network", "autostop_ns", "p_target", "provisioning_ns",
		"image_pull_ns", "team", "project", "cost_center", "spares",
		"delay_cost_per_hour_micros", "preempt_signal", "sync_quiet_ms",
		"peer_replicas",
		"train_through_notice", NULL
	};
	static const char *const ckeys[] = { "size_bytes", "interval_ns", "stall_ns",
					     "restore_bps", "uri", "alert_intervals",
					     NULL };
	json_t *v, *ck;
	int64_t size = 0;
	int rc = sr_json_check_keys(s, keys, "spotrun", e);

	if (!rc && json_object_get(s, "deadline_ns")) {
		rc = sr_json_get_int_opt(s, "deadline_ns", &js->deadline_ns, "spotrun", e);
		js->deadline_kind = JOBSPEC_DEADLINE_RELATIVE;
	}
	v = json_object_get(s, "deadline_at");
	if (!rc && v) {
		if (!json_is_string(v) ||
		    sr_time_parse_rfc3339(json_string_value(v), &js->deadline_ns, NULL))
			return sr_err_set(e, -SR_EPARSE, "spotrun.deadline_at: expected an RFC 3339 time");
		js->deadline_kind = JOBSPEC_DEADLINE_ABSOLUTE;
	}
	if (!rc)
		rc = sr_json_get_num_opt(s, "work_h", &js->work_h, "spotrun", e);
	v = json_object_get(s, "criticality");
	if (!rc && v && (!json_is_string(v) ||
			 jobspec_crit_parse(json_string_value(v), &js->criticality)))
		rc = sr_err_set(e, -SR_EPARSE, "spotrun.criticality: expected critical, standard or best-effort");
	ck = json_object_get(s, "checkpoint");
	if (!rc && ck) {
		rc = sr_json_check_keys(ck, ckeys, "spotrun.checkpoint", e);
		if (!rc)
			rc = sr_json_get_int_opt(ck, "size_bytes", &size, "spotrun.checkpoint", e);
		if (!rc && size < 0)
			rc = sr_err_set(e, -SR_EPARSE, "spotrun.checkpoint.size_bytes: negative");
		js->ckpt_bytes = (uint64_t)size;
		if (!rc)
			rc = sr_json_get_int_opt(ck, "interval_ns", &js->ckpt_interval_ns, "spotrun.checkpoint", e);
		if (!rc)
			rc = sr_json_get_int_opt(ck, "stall_ns", &js->ckpt_stall_ns, "spotrun.checkpoint", e);
		if (!rc)
			rc = sr_json_get_num_opt(ck, "restore_bps", &js->restore_bps, "spotrun.checkpoint", e);
		if (!rc) {
			int64_t ai = js->ckpt_alert_intervals;

			rc = sr_json_get_int_opt(ck, "alert_intervals", &ai,
						 "spotrun.checkpoint", e);
			if (!rc && (ai < 1 || ai > 1000000))
				rc = sr_err_set(e, -SR_EPARSE, "spotrun.checkpoint."
						"alert_intervals: out of 1..1000000");
			js->ckpt_alert_intervals = (int)ai;
		}
		v = json_object_get(ck, "uri");
		if (!rc && v && !json_is_string(v))
			rc = sr_err_set(e, -SR_EPARSE, "spotrun.checkpoint.uri: expected a string");
		if (!rc && v) {
			js->ckpt_uri = strdup(json_string_value(v));
			if (!js->ckpt_uri)
				rc = -ENOMEM;
		}
	}
	if (!rc)
		rc = sr_json_get_int_opt(s, "max_hourly_cost_micros", &js->max_hourly_cost, "spotrun", e);
	if (!rc)
		rc = sr_json_get_int_opt(s, "max_cost_micros", &js->max_cost, "spotrun", e);
	if (!rc)
		rc = get_int(s, "max_restarts", &js->max_restarts, -1,
			     SR_LIMIT_MAX_RESTARTS_MAX, "spotrun", e);
	if (!rc)
		rc = get_int(s, "spares", &js->spares, -1, SR_LIMIT_SPARES_MAX,
			     "spotrun", e);
	if (!rc)
		rc = sr_json_get_int_opt(s, "delay_cost_per_hour_micros",
					 &js->delay_cost_per_h, "spotrun", e);
	if (!rc && js->delay_cost_per_h < -1)
		rc = sr_err_set(e, -SR_EPARSE, "spotrun.delay_cost_per_hour_micros: "
				"negative");
	v = json_object_get(s, "train_through_notice");
	if (!rc && v && !json_is_boolean(v))
		rc = sr_err_set(e, -SR_EPARSE, "spotrun.train_through_notice: "
				"expected a boolean");
	if (!rc)
		js->train_through_notice = json_is_true(v); /* absent: off */
	if (!rc)
		rc = get_int(s, "peer_replicas", &js->peer_replicas, 0,
			     SR_LIMIT_PEER_REPLICAS_MAX, "spotrun", e);
	v = json_object_get(s, "network");
	if (!rc && v && (!json_is_string(v) ||
			 catalog_net_parse(json_string_value(v), &js->network)))
		rc = sr_err_set(e, -SR_EPARSE, "spotrun.network: expected any, ethernet, rdma or infiniband");
	if (!rc)
		rc = sr_json_get_int_opt(s, "autostop_ns", &js->autostop_ns, "spotrun", e);
	if (!rc)
		rc = sr_json_get_num_opt(s, "p_target", &js->p_target, "spotrun", e);
	if (!rc)
		rc = sr_json_get_int_opt(s, "provisioning_ns", &js->provision_ns, "spotrun", e);
	if (!rc)
		rc = sr_json_get_int_opt(s, "image_pull_ns", &js->image_pull_ns, "spotrun", e);
	if (!rc)
		rc = get_label(s, "team", js->team, e);
	if (!rc)
		rc = get_label(s, "project", js->project, e);
	if (!rc)
		rc = get_label(s, "cost_center", js->cost_center, e);
	v = json_object_get(s, "preempt_signal");
	if (!rc && v && (!json_is_string(v) ||
			 (js->preempt_signal = sr_stop_signal_parse(
				 json_string_value(v))) < 0))
		rc = sr_err_set(e, -SR_EPARSE, "spotrun.preempt_signal: expected "
				"one of " SR_STOP_SIGNALS);
	v = json_object_get(s, "sync_quiet_ms");
	if (!rc && v) {
		int64_t ms = 0;

		rc = sr_json_get_int_opt(s, "sync_quiet_ms", &ms, "spotrun", e);
		if (!rc && (ms < JOBSPEC_SYNC_QUIET_MIN_MS ||
			    ms > JOBSPEC_SYNC_QUIET_MAX_MS))
			rc = sr_err_set(e, -SR_EPARSE, "spotrun.sync_quiet_ms: out "
					"of %d..%d", JOBSPEC_SYNC_QUIET_MIN_MS,
					JOBSPEC_SYNC_QUIET_MAX_MS);
		js->sync_quiet_ns = ms * 1000000;
	}
	return rc;
}

int jobspec_from_json(json_t *obj, struct jobspec *js, struct sr_err *e)
{
	static const char *const keys[] = { "name", "num_nodes", "setup", "run",
					    "envs", "resources", "spotrun", "secrets",
					    "workdir", "file_mounts", NULL };
	json_t *v;
	int rc;

	jobspec_init(js);
	rc = sr_json_check_keys(obj, keys, "job", e);
	if (!rc)
		rc = get_str(obj, "name", &js->name, "job", e);
	if (!rc)
		rc = get_str(obj, "setup", &js->setup, "job", e);
	if (!rc)
		rc = get_str(obj, "run", &js->run, "job", e);
	if (!rc)
		rc = get_int(obj, "num_nodes", &js->num_nodes,
			     SR_LIMIT_NUM_NODES_MIN, SR_LIMIT_NUM_NODES_MAX, "job", e);
	if (!rc)
		rc = read_envs(json_object_get(obj, "envs"), "envs", 0, &js->envs,
			       &js->n_envs, e);
	if (!rc)
		rc = read_envs(json_object_get(obj, "secrets"), "secrets", 1,
			       &js->secrets, &js->n_secrets, e);
	if (!rc)
		rc = get_str(obj, "workdir", &js->workdir, "job", e);
	if (!rc)
		rc = read_mounts(json_object_get(obj, "file_mounts"), js, e);
	v = json_object_get(obj, "resources");
	if (!rc && v)
		rc = read_resources(v, js, e);
	v = json_object_get(obj, "spotrun");
	if (!rc && v)
		rc = read_spotrun(v, js, e);
	if (!rc)
		rc = jobspec_validate(js, "job", e);
	if (rc == -ENOMEM && e && !e->code)
		sr_err_set(e, rc, "job: out of memory");
	if (rc)
		jobspec_free(js);
	return rc;
}
