/*
 * jobspec_json.c - struct jobspec <-> JSON, the form the daemon stores.
 *
 *   {"name": "demo", "num_nodes": 1, "setup": null, "run": "python t.py",
 *    "envs": {"K": "V"},
 *    "resources": {"accelerators": "H100:8", "use_spot": true,
 *                  "any_of": [{"infra": "aws/us-east-1"}]},
 *    "spotrun": {"deadline_ns": 129600000000000 | "deadline_at": RFC3339,
 *                "work_h": 20.0, "criticality": "standard",
 *                "checkpoint": {"size_bytes": 40000000000, "interval_ns": 0,
 *                               "stall_ns": -1, "restore_bps": 1e9},
 *                "max_hourly_cost_micros": -1, "max_cost_micros": -1,
 *                "max_restarts": -1, "network": "any", "autostop_ns": 0,
 *                "p_target": 0.99, "provisioning_ns": ..., "image_pull_ns": ...}}
 *
 * -1 keeps its meaning from jobspec.h ("no limit" / "derived").  Reading
 * rejects unknown keys like the YAML parser does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "jobspec.h"

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
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
	if (js->accel[0]) {
		snprintf(buf, sizeof buf, "%s:%d", js->accel, js->accel_count);
		bad |= json_object_set_new(res, "accelerators", json_string(buf));
	} else {
		bad |= json_object_set_new(res, "accelerators", json_null());
	}
	bad |= json_object_set_new(res, "use_spot", js->use_spot < 0 ? json_null()
							: json_boolean(js->use_spot));
	for (size_t i = 0; i < js->n_infra; i++) {
		json_t *it = json_object();

		jobspec_infra_format(&js->infra[i], buf, sizeof buf);
		bad |= !it || json_object_set_new(it, "infra", json_string(buf));
		bad |= json_array_append_new(any, it);
	}
	bad |= json_object_set(res, "any_of", any);
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
	bad |= json_object_set(sp, "checkpoint", ck);
	bad |= json_object_set_new(sp, "max_hourly_cost_micros", json_integer(js->max_hourly_cost));
	bad |= json_object_set_new(sp, "max_cost_micros", json_integer(js->max_cost));
	bad |= json_object_set_new(sp, "max_restarts", json_integer(js->max_restarts));
	bad |= json_object_set_new(sp, "network",
				   json_string(js->network == CATALOG_NET_UNKNOWN ? "any"
							: catalog_net_name(js->network)));
	bad |= json_object_set_new(sp, "autostop_ns", json_integer(js->autostop_ns));
	bad |= json_object_set_new(sp, "p_target", json_real(js->p_target));
	bad |= json_object_set_new(sp, "provisioning_ns", json_integer(js->provision_ns));
	bad |= json_object_set_new(sp, "image_pull_ns", json_integer(js->image_pull_ns));
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

static int get_int(json_t *o, const char *k, int *out, const char *ctx,
		   struct sr_err *e)
{
	int64_t v = *out;
	int rc = sr_json_get_int_opt(o, k, &v, ctx, e);

	if (!rc && (v < -1 || v > 1000000))
		rc = sr_err_set(e, -SR_EPARSE, "%s.%s: out of range", ctx, k);
	if (!rc)
		*out = (int)v;
	return rc;
}

static int read_resources(json_t *r, struct jobspec *js, struct sr_err *e)
{
	static const char *const keys[] = { "accelerators", "use_spot", "any_of", NULL };
	json_t *v;
	size_t i;
	int rc = sr_json_check_keys(r, keys, "resources", e);

	if (rc)
		return rc;
	v = json_object_get(r, "accelerators");
	if (v && !json_is_null(v)) {
		double cnt;

		if (!json_is_string(v) ||
		    catalog_parse_accel(json_string_value(v), js->accel,
					sizeof js->accel, &cnt) ||
		    cnt < 1 || cnt > 1024 || cnt != (int)cnt)
			return sr_err_set(e, -SR_EPARSE, "resources.accelerators: expected \"NAME:COUNT\"");
		js->accel_count = (int)cnt;
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

		if (!json_is_string(s) || json_object_size(it) != 1 ||
		    jobspec_infra_parse(json_string_value(s), &js->infra[i]))
			return sr_err_set(e, -SR_EPARSE, "resources.any_of[%zu]: expected {\"infra\": \"CLOUD[/REGION[/ZONE]]\"}", i);
		js->n_infra++;
	}
	return 0;
}

static int read_spotrun(json_t *s, struct jobspec *js, struct sr_err *e)
{
	static const char *const keys[] = {
		"deadline_ns", "deadline_at", "work_h", "criticality", "checkpoint",
		"max_hourly_cost_micros", "max_cost_micros", "max_restarts",
		"network", "autostop_ns", "p_target", "provisioning_ns",
		"image_pull_ns", NULL
	};
	static const char *const ckeys[] = { "size_bytes", "interval_ns", "stall_ns",
					     "restore_bps", "uri", NULL };
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
		rc = get_int(s, "max_restarts", &js->max_restarts, "spotrun", e);
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
	return rc;
}

int jobspec_from_json(json_t *obj, struct jobspec *js, struct sr_err *e)
{
	static const char *const keys[] = { "name", "num_nodes", "setup", "run",
					    "envs", "resources", "spotrun", NULL };
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
		rc = get_int(obj, "num_nodes", &js->num_nodes, "job", e);
	v = json_object_get(obj, "envs");
	if (!rc && v) {
		const char *k;
		json_t *ev;

		if (!json_is_object(v))
			rc = sr_err_set(e, -SR_EPARSE, "envs: expected an object");
		if (!rc && json_object_size(v)) {
			js->envs = calloc(json_object_size(v), sizeof *js->envs);
			if (!js->envs)
				rc = -ENOMEM;
		}
		json_object_foreach(v, k, ev) {
			if (rc)
				break;
			if (!json_is_string(ev)) {
				rc = sr_err_set(e, -SR_EPARSE, "envs.%s: expected a string", k);
				break;
			}
			js->envs[js->n_envs].key = strdup(k);
			js->envs[js->n_envs].value = strdup(json_string_value(ev));
			js->n_envs++;
			if (!js->envs[js->n_envs - 1].key || !js->envs[js->n_envs - 1].value)
				rc = -ENOMEM;
		}
	}
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
