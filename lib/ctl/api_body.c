/*
 * api_body.c - request body parsers (see api_body.h).  Fuzzed by
 * fuzz/fuzz_api_body.c.
 */
#include "ctl/api_body.h"

#include <arpa/inet.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/text.h"
#include "common/timeutil.h"
#include "market/joblimits.h"

#define CTX "request body"

/* Load and require an object ("" or whitespace-only counts as {}). */
static int load_obj(const char *buf, size_t len, json_t **root, struct sr_err *e)
{
	size_t i = 0;

	*root = NULL;
	while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' ||
			   buf[i] == '\t'))
		i++;
	if (i == len) {
		*root = json_object();
		return *root ? 0 : -ENOMEM;
	}
	*root = sr_json_load_buf(buf, len, CTX, e);
	if (!*root)
		return e && e->code ? e->code : -SR_EPARSE;
	if (!json_is_object(*root)) {
		json_decref(*root);
		*root = NULL;
		return sr_err_set(e, -SR_EPARSE, CTX ": expected a JSON object");
	}
	return 0;
}

static int get_nonneg(json_t *o, const char *key, int64_t *out, const char *ctx,
		      struct sr_err *e)
{
	int rc = sr_json_get_int_opt(o, key, out, ctx, e);

	if (!rc && *out < -1)
		rc = sr_err_set(e, -SR_EPARSE, "%s: %s: must be >= 0", ctx, key);
	return rc;
}

static int get_util(json_t *o, const char *key, double *out, const char *ctx,
		    struct sr_err *e)
{
	int rc = sr_json_get_num_opt(o, key, out, ctx, e);

	if (!rc && *out != -1 && !(*out >= 0 && *out <= 1))
		rc = sr_err_set(e, -SR_EPARSE, "%s: %s: must be between 0 and 1",
				ctx, key);
	return rc;
}

static bool env_name_ok(const char *k)
{
	if (!*k || (*k >= '0' && *k <= '9'))
		return false;
	for (; *k; k++) {
		if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
		      (*k >= '0' && *k <= '9') || *k == '_'))
			return false;
	}
	return true;
}

int api_upload_id_ok(const char *s)
{
	size_t i = 0;

	if (strncmp(s, "sha256:", 7))
		return 0;
	for (s += 7; s[i]; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return i == 64;
}

#define upload_id_ok api_upload_id_ok

int api_parse_job_create(const char *buf, size_t len, json_t **root,
			 struct api_job_create *out, struct sr_err *e)
{
	static const char *const keys[] = { "spec_yaml", "spec_name", "workdir",
					    "max_restarts", "envs", "files", NULL };
	const char *k;
	json_t *v;
	size_t off;
	unsigned cp;
	int rc;

	memset(out, 0, sizeof *out);
	out->max_restarts = -1;
	out->spec_name = "job.yaml";
	rc = load_obj(buf, len, root, e);
	if (rc)
		return rc;
	rc = sr_json_check_keys(*root, keys, CTX, e);
	if (!rc)
		rc = sr_json_get_str(*root, "spec_yaml", &out->spec_yaml, CTX, e);
	if (!rc)
		rc = sr_json_get_str_opt(*root, "spec_name", &out->spec_name, CTX, e);
	if (!rc)
		rc = sr_json_get_str_opt(*root, "workdir", &out->workdir, CTX, e);
	if (!rc)
		rc = sr_json_get_str_opt(*root, "files", &out->files, CTX, e);
	if (!rc && out->files && !upload_id_ok(out->files))
		rc = sr_err_set(e, -SR_EPARSE, CTX ": files: expected the \"upload\""
				" of POST /v1/uploads (sha256:<64 hex>)");
	if (!rc)
		rc = sr_json_get_int_opt(*root, "max_restarts", &out->max_restarts,
					 CTX, e);
	if (rc)
		goto fail;
	out->spec_len = json_string_length(json_object_get(*root, "spec_yaml"));
	if (out->spec_len == 0 || out->spec_len > CTL_YAML_MAX) {
		rc = sr_err_set(e, -SR_EPARSE, CTX ": spec_yaml: must be 1 to %d "
				"bytes", CTL_YAML_MAX);
		goto fail;
	}
	if (strlen(out->spec_yaml) != out->spec_len) {
		rc = sr_err_set(e, -SR_EPARSE, CTX ": spec_yaml: contains NUL");
		goto fail;
	}
	if (!*out->spec_name || strlen(out->spec_name) > 255) {
		rc = sr_err_set(e, -SR_EPARSE, CTX ": spec_name: must be 1 to "
				"255 bytes");
		goto fail;
	}
	if (sr_text_unsafe(out->spec_name, &off, &cp)) {
		rc = sr_err_set(e, -SR_EPARSE, CTX ": spec_name: control, "
				"bidirectional-text or invisible character U+%04X at byte %zu",
				cp, off);
		goto fail;
	}
	if (out->workdir && (out->workdir[0] != '/' ||
			     strlen(out->workdir) > 1024)) {
		rc = sr_err_set(e, -SR_EPARSE, CTX ": workdir: must be an "
				"absolute path of at most 1024 bytes");
		goto fail;
	}
	if (json_object_get(*root, "max_restarts") &&
	    (out->max_restarts < 0 ||
	     out->max_restarts > SR_LIMIT_MAX_RESTARTS_MAX)) {
		rc = sr_err_set(e, -SR_EPARSE, CTX ": max_restarts: must be "
				"0 to %d", SR_LIMIT_MAX_RESTARTS_MAX);
		goto fail;
	}
	v = json_object_get(*root, "envs");
	if (v && !json_is_null(v)) {
		json_t *s;

		if (!json_is_object(v)) {
			rc = sr_err_set(e, -SR_EPARSE, CTX ": envs: expected "
					"object");
			goto fail;
		}
		json_object_foreach(v, k, s) {
			if (!env_name_ok(k) || strlen(k) > 128) {
				rc = sr_err_set(e, -SR_EPARSE, CTX ": envs: '%.64s'"
						" is not a valid variable name", k);
				goto fail;
			}
			if (!json_is_string(s)) {
				rc = sr_err_set(e, -SR_EPARSE, CTX ": envs.%s: "
						"expected string", k);
				goto fail;
			}
		}
		out->envs = v;
	}
	return 0;
fail:
	json_decref(*root);
	*root = NULL;
	return rc;
}

int api_parse_register(const char *buf, size_t len, json_t **root,
		       struct api_register *out, struct sr_err *e)
{
	static const char *const keys[] = { "pid", "hostname", "agent_version",
					    "addr", NULL };
	unsigned char ip[sizeof(struct in6_addr)];
	int rc;

	memset(out, 0, sizeof *out);
	out->hostname = "";
	out->agent_version = "";
	out->addr = "";
	rc = load_obj(buf, len, root, e);
	if (rc)
		return rc;
	rc = sr_json_check_keys(*root, keys, CTX, e);
	if (!rc)
		rc = sr_json_get_int_opt(*root, "pid", &out->pid, CTX, e);
	if (!rc)
		rc = sr_json_get_str_opt(*root, "hostname", &out->hostname, CTX, e);
	if (!rc)
		rc = sr_json_get_str_opt(*root, "agent_version",
					 &out->agent_version, CTX, e);
	if (!rc)
		rc = sr_json_get_str_opt(*root, "addr", &out->addr, CTX, e);
	/* an address literal only: it becomes the gang's MASTER_ADDR */
	if (!rc && out->addr[0] && inet_pton(AF_INET, out->addr, ip) != 1 &&
	    inet_pton(AF_INET6, out->addr, ip) != 1)
		rc = sr_err_set(e, -SR_EPARSE, CTX ": addr: expected an IPv4 or "
				"IPv6 address, got \"%.64s\"", out->addr);
	if (!rc && (out->pid < 0 || out->pid > INT_MAX))
		rc = sr_err_set(e, -SR_EPARSE, CTX ": pid: out of range");
	if (!rc && (strlen(out->hostname) > 255 || strlen(out->agent_version) > 64))
		rc = sr_err_set(e, -SR_EPARSE, CTX ": hostname/agent_version: "
				"too long");
	if (rc) {
		json_decref(*root);
		*root = NULL;
	}
	return rc;
}

static const char *const wl_names[] = { "idle", "setup", "running",
					"stopping", "exited" };
static const char *const cause_names[] = { "completed", "preempted",
					   "stopped", "crashed" };

const char *api_workload_name(enum api_workload w)
{
	return (unsigned)w < 5 ? wl_names[w] : "?";
}

const char *api_cause_name(enum api_exit_cause c)
{
	return (unsigned)c < 4 ? cause_names[c] : "?";
}

static int pick(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++) {
		if (strcmp(s, names[i]) == 0)
			return i;
	}
	return -1;
}

int api_parse_heartbeat(const char *buf, size_t len, json_t **root,
			struct api_heartbeat *out, struct sr_err *e)
{
	static const char *const keys[] = { "workload", "attempt", "step",
		"total_steps", "ckpt_step", "restored_step", "cpu_util",
		"gpu_util", "workload_pgid", "ckpt_local_step", "ckpt_store_ns",
		"ckpt_at_ns", "steps_per_s", NULL };
	const char *wl = "idle";
	int rc, w;

	memset(out, 0, sizeof *out);
	out->step = out->total_steps = out->ckpt_step = out->restored_step = -1;
	out->ckpt_at_ns = -1;
	out->ckpt_local_step = out->ckpt_store_ns = -1;
	out->cpu_util = out->gpu_util = out->steps_per_s = -1;
	rc = load_obj(buf, len, root, e);
	if (rc)
		return rc;
	rc = sr_json_check_keys(*root, keys, CTX, e);
	if (!rc)
		rc = sr_json_get_str_opt(*root, "workload", &wl, CTX, e);
	if (!rc && (w = pick(wl, wl_names, 5)) < 0)
		rc = sr_err_set(e, -SR_EPARSE, CTX ": workload: '%.32s' is not "
				"one of idle, setup, running, stopping, exited", wl);
	if (!rc)
		out->workload = (enum api_workload)w;
	if (!rc)
		rc = get_nonneg(*root, "attempt", &out->attempt, CTX, e);
	if (!rc && out->attempt < 0)
		rc = sr_err_set(e, -SR_EPARSE, CTX ": attempt: must be >= 0");
	if (!rc)
		rc = get_nonneg(*root, "step", &out->step, CTX, e);
	if (!rc)
		rc = get_nonneg(*root, "total_steps", &out->total_steps, CTX, e);
	if (!rc)
		rc = get_nonneg(*root, "ckpt_step", &out->ckpt_step, CTX, e);
	if (!rc)
		rc = get_nonneg(*root, "restored_step", &out->restored_step, CTX, e);
	if (!rc)
		rc = get_nonneg(*root, "ckpt_at_ns", &out->ckpt_at_ns, CTX, e);
	if (!rc)
		rc = get_nonneg(*root, "ckpt_local_step", &out->ckpt_local_step,
				CTX, e);
	if (!rc)
		rc = get_nonneg(*root, "ckpt_store_ns", &out->ckpt_store_ns, CTX, e);
	if (!rc)
		rc = get_util(*root, "cpu_util", &out->cpu_util, CTX, e);
	if (!rc)
		rc = get_util(*root, "gpu_util", &out->gpu_util, CTX, e);
	if (!rc)
		rc = sr_json_get_num_opt(*root, "steps_per_s", &out->steps_per_s,
					 CTX, e);
	if (!rc && out->steps_per_s != -1 &&
	    !(out->steps_per_s >= 0 && out->steps_per_s < 1e12))
		rc = sr_err_set(e, -SR_EPARSE, CTX ": steps_per_s: expected a "
				"rate >= 0");
	if (!rc)
		rc = sr_json_get_int_opt(*root, "workload_pgid", &out->workload_pgid,
					 CTX, e);
	if (!rc && (out->workload_pgid < 0 || out->workload_pgid > INT_MAX))
		rc = sr_err_set(e, -SR_EPARSE, CTX ": workload_pgid: out of range");
	if (rc) {
		json_decref(*root);
		*root = NULL;
	}
	return rc;
}

static int parse_event(json_t *o, struct api_event *ev, const char *ctx,
		       struct sr_err *e)
{
	static const char *const types[] = { "notice", "checkpoint", "exit",
					     "util", "setup_done", "log",
					     "ckpt_error", "isolation",
					     "rebalance", "sync", "file_mounts",
					     "restored" };
	static const char *const keys[12][9] = {
		{ "type", "action", "time", "source", NULL },
		{ "type", "attempt", "step", "stall_ms", "final", "durable", NULL },
		{ "type", "attempt", "exit_code", "signal", "cause", NULL },
		{ "type", "cpu_util", "gpu_util", NULL },
		{ "type", "exit_code", NULL },
		{ "type", "attempt", "stream", "ts", "line", NULL },
		{ "type", "attempt", "message", NULL },
		{ "type", "mode", "message", "hidden", NULL },
		{ "type", "time", NULL },
		{ "type", "attempt", "what", "round", "message", NULL },
		{ "type", "message", NULL },
		{ "type", "attempt", "step", "message", NULL },
	};
	const char *type = NULL, *s = NULL;
	json_t *x;
	int rc, t;

	memset(ev, 0, sizeof *ev);
	ev->attempt = -1;
	ev->step = -1;
	ev->stall_ms = -1;
	ev->cpu_util = ev->gpu_util = -1;
	ev->exit_code = INT64_MIN;
	if (!json_is_object(o))
		return sr_err_set(e, -SR_EPARSE, "%s: expected object", ctx);
	rc = sr_json_get_str(o, "type", &type, ctx, e);
	if (rc)
		return rc;
	t = pick(type, types, 12);
	if (t < 0)
		return sr_err_set(e, -SR_EPARSE, "%s: type: unknown event type "
				  "'%.32s'", ctx, type);
	ev->type = (enum api_ev_type)t;
	rc = sr_json_check_keys(o, keys[t], ctx, e);
	if (rc)
		return rc;
	rc = get_nonneg(o, "attempt", &ev->attempt, ctx, e);
	if (rc)
		return rc;
	switch (ev->type) {
	case EV_NOTICE:
		s = "terminate";
		rc = sr_json_get_str_opt(o, "action", &s, ctx, e);
		if (!rc && strcmp(s, "terminate") && strcmp(s, "stop") &&
		    strcmp(s, "hibernate"))
			rc = sr_err_set(e, -SR_EPARSE, "%s: action: expected "
					"terminate, stop or hibernate", ctx);
		if (!rc)
			rc = sr_json_get_str_opt(o, "source", &ev->source, ctx, e);
		if (!rc && ev->source && !ev->source[0])
			rc = sr_err_set(e, -SR_EPARSE, "%s: source: empty", ctx);
		/* the cloud's time, as a rebalance's */
		/* fall through */
	case EV_REBALANCE:
		if (!rc)
			rc = sr_json_get_str_opt(o, "time", &ev->time, ctx, e);
		if (!rc && ev->time)
			rc = sr_time_parse_rfc3339(ev->time, &ev->time_ns, e);
		if (rc && ev->time)
			sr_err_prefix(e, "%s: time", ctx);
		return rc;
	case EV_CHECKPOINT:
		rc = get_nonneg(o, "step", &ev->step, ctx, e);
		if (!rc)
			rc = sr_json_get_num_opt(o, "stall_ms", &ev->stall_ms, ctx, e);
		if (!rc && ev->stall_ms != -1 && !(ev->stall_ms >= 0 &&
						   ev->stall_ms < 1e9))
			rc = sr_err_set(e, -SR_EPARSE, "%s: stall_ms: out of "
					"range", ctx);
		if (!rc)
			rc = sr_json_get_bool_opt(o, "final", &ev->final, ctx, e);
		if (!rc)
			rc = sr_json_get_bool_opt(o, "durable", &ev->durable, ctx, e);
		return rc;
	case EV_EXIT:
	case EV_SETUP_DONE:
		x = json_object_get(o, "exit_code");
		if (x && !json_is_null(x)) {
			if (!json_is_integer(x) || json_integer_value(x) < -255 ||
			    json_integer_value(x) > 255)
				return sr_err_set(e, -SR_EPARSE, "%s: exit_code: "
						  "expected an integer -255..255",
						  ctx);
			ev->exit_code = json_integer_value(x);
		}
		if (ev->type == EV_SETUP_DONE)
			return 0;
		x = json_object_get(o, "signal");
		if (x && !json_is_null(x)) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) > 128)
				return sr_err_set(e, -SR_EPARSE, "%s: signal: "
						  "expected 0..128", ctx);
			ev->signal = json_integer_value(x);
		}
		rc = sr_json_get_str(o, "cause", &s, ctx, e);
		if (rc)
			return rc;
		t = pick(s, cause_names, 4);
		if (t < 0)
			return sr_err_set(e, -SR_EPARSE, "%s: cause: '%.32s' is not"
					  " one of completed, preempted, stopped, "
					  "crashed", ctx, s);
		ev->cause = (enum api_exit_cause)t;
		return 0;
	case EV_UTIL:
		rc = get_util(o, "cpu_util", &ev->cpu_util, ctx, e);
		if (!rc)
			rc = get_util(o, "gpu_util", &ev->gpu_util, ctx, e);
		return rc;
	case EV_RESTORED:
		/* where a multi-rank restore read each part (peer copies) */
		rc = get_nonneg(o, "step", &ev->step, ctx, e);
		if (rc)
			return rc;
		goto message;
	case EV_SYNC:
		rc = sr_json_get_str(o, "what", &ev->what, ctx, e);
		if (!rc && strcmp(ev->what, "restored") && strcmp(ev->what, "copied")
		    && strcmp(ev->what, "final") && strcmp(ev->what, "error"))
			rc = sr_err_set(e, -SR_EPARSE, "%s: what: expected restored, "
					"copied, final or error", ctx);
		ev->round = -1;
		if (!rc)
			rc = sr_json_get_int_opt(o, "round", &ev->round, ctx, e);
		if (!rc && ev->round < -1)
			rc = sr_err_set(e, -SR_EPARSE, "%s: round: expected >= -1",
					ctx);
		if (rc)
			return rc;
		/* and a message, as ckpt_error's */
		goto message;
	case EV_ISOLATION:
		rc = sr_json_get_str(o, "mode", &ev->mode, ctx, e);
		if (!rc && strcmp(ev->mode, "userns") && strcmp(ev->mode, "root-partial")
		    && strcmp(ev->mode, "none") && strcmp(ev->mode, "unavailable") &&
		    strcmp(ev->mode, "refused"))
			rc = sr_err_set(e, -SR_EPARSE, "%s: mode: expected userns, "
					"root-partial, none, unavailable or refused", ctx);
		if (rc)
			return rc;
		/* the paths the agent checked were hidden (issue 24) */
		x = json_object_get(o, "hidden");
		if (x && !json_is_null(x)) {
			size_t i;
			json_t *p;

			if (!json_is_array(x) || json_array_size(x) > 32)
				return sr_err_set(e, -SR_EPARSE, "%s: hidden: expected "
						  "an array of at most 32 paths", ctx);
			json_array_foreach(x, i, p) {
				if (!json_is_string(p) || json_string_length(p) > 4096)
					return sr_err_set(e, -SR_EPARSE, "%s: hidden[%zu]: "
							  "expected a path", ctx, i);
			}
			ev->hidden = x;
		}
		/* a message like ckpt_error's */
		/* fall through */
	case EV_CKPT_ERROR:
	case EV_FILE_MOUNTS:
message:
		rc = sr_json_get_str(o, "message", &ev->message, ctx, e);
		if (!rc && json_string_length(json_object_get(o, "message")) > 1024)
			rc = sr_err_set(e, -SR_EPARSE, "%s: message: longer than "
					"1024 bytes", ctx);
		return rc;
	case EV_LOG:
		ev->stream = "stdout";
		rc = sr_json_get_str_opt(o, "stream", &ev->stream, ctx, e);
		if (!rc && strcmp(ev->stream, "stdout") && strcmp(ev->stream, "stderr")
		    && strcmp(ev->stream, "agent"))
			rc = sr_err_set(e, -SR_EPARSE, "%s: stream: expected stdout,"
					" stderr or agent", ctx);
		if (!rc)
			rc = sr_json_get_str(o, "line", &ev->line, ctx, e);
		if (!rc) {
			ev->line_len = json_string_length(json_object_get(o, "line"));
			if (ev->line_len > CTL_LOG_LINE_MAX) {
				ev->line_len = CTL_LOG_LINE_MAX;
				ev->truncated = true;
			}
		}
		if (!rc && (s = NULL, sr_json_get_str_opt(o, "ts", &s, ctx, e) == 0) && s)
			rc = sr_time_parse_rfc3339(s, &ev->ts_ns, e);
		return rc;
	}
	return 0;
}

int api_parse_report(const char *buf, size_t len, json_t **root,
		     struct api_report *out, struct sr_err *e)
{
	static const char *const keys[] = { "events", NULL };
	char ctx[64];
	json_t *arr = NULL;
	size_t i, nlog = 0;
	int rc;

	memset(out, 0, sizeof *out);
	rc = load_obj(buf, len, root, e);
	if (rc)
		return rc;
	rc = sr_json_check_keys(*root, keys, CTX, e);
	if (!rc)
		rc = sr_json_get_arr(*root, "events", &arr, CTX, e);
	if (rc)
		goto fail;
	if (json_array_size(arr) > CTL_EVENTS_MAX) {
		rc = sr_err_set(e, -SR_EPARSE, CTX ": events: more than %d",
				CTL_EVENTS_MAX);
		goto fail;
	}
	out->ev = calloc(json_array_size(arr) ? json_array_size(arr) : 1,
			 sizeof *out->ev);
	if (!out->ev) {
		rc = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < json_array_size(arr); i++) {
		snprintf(ctx, sizeof ctx, CTX ": events[%zu]", i);
		rc = parse_event(json_array_get(arr, i), &out->ev[i], ctx, e);
		if (rc)
			goto fail;
		if (out->ev[i].type == EV_LOG && ++nlog > CTL_LOG_LINES_MAX) {
			rc = sr_err_set(e, -SR_EPARSE, CTX ": more than %d log "
					"lines in one report", CTL_LOG_LINES_MAX);
			goto fail;
		}
		out->n++;
	}
	return 0;
fail:
	api_report_free(out);
	json_decref(*root);
	*root = NULL;
	return rc;
}

void api_report_free(struct api_report *r)
{
	if (!r)
		return;
	free(r->ev);
	r->ev = NULL;
	r->n = 0;
}
