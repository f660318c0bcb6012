/*
 * views.c - the JSON objects of jobs and nodes served by the API
 * (shapes in docs/api.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "store/store.h"

static json_t *ts_or_null(struct store_stmt *st, const char *col)
{
	char buf[40];

	if (store_col_null(st, col))
		return json_null();
	if (sr_time_format_rfc3339(store_col_i64(st, col), 3, buf, sizeof buf) < 0)
		return json_null();
	return json_string(buf);
}

static json_t *int_or_null(struct store_stmt *st, const char *col)
{
	if (store_col_null(st, col))
		return json_null();
	return json_integer(store_col_i64(st, col));
}

static json_t *real_or_null(struct store_stmt *st, const char *col)
{
	if (store_col_null(st, col))
		return json_null();
	return json_real(store_col_f64(st, col));
}

static json_t *text_or_null(struct store_stmt *st, const char *col)
{
	if (store_col_null(st, col))
		return json_null();
	return json_string(store_col_text(st, col));
}

/* Set key to a new reference; NULL (out of memory) is reported by the
 * caller's final check of the object. */
static void put(json_t *j, const char *key, json_t *v)
{
	if (!v || json_object_set_new(j, key, v))
		json_object_set_new(j, "_incomplete", json_true());
}

const char ctl__node_cols[] =
	"id, job_id, rank, CASE WHEN state='REQUESTED' AND phase='queued' THEN"
	" 'QUEUED' WHEN state='BOOTING' AND phase='pending' THEN 'PENDING' ELSE"
	" state END AS state, provider, cloud, region, zone, instance_type,"
	" spot, price_micros, pid, created_ns, last_hb_ns, notice_ns, kill_ns,"
	" terminated_ns, end_reason, cpu_util, gpu_util, workload, wl_attempt,"
	" accelerator, accel_count, cost_micros, pool, instance_id, driver_blob,"
	" addr";

/* The API's name of each node column it serves, and how. */
enum kind { K_INT, K_INT_NULL, K_TEXT, K_TEXT_NULL, K_TS, K_REAL, K_REAL_NULL,
	    K_BOOL, K_JSON_NULL };
struct field {
	const char *key, *col;
	enum kind kind;
};

static json_t *field_json(struct store_stmt *st, const struct field *f)
{
	switch (f->kind) {
	case K_INT:
		return json_integer(store_col_i64(st, f->col));
	case K_INT_NULL:
		return int_or_null(st, f->col);
	case K_TEXT:
		return json_string(store_col_text(st, f->col));
	case K_TEXT_NULL:
		return text_or_null(st, f->col);
	case K_TS:
		return ts_or_null(st, f->col);
	case K_REAL:
		return json_real(store_col_f64(st, f->col));
	case K_REAL_NULL:
		return real_or_null(st, f->col);
	case K_BOOL:
		return json_boolean(store_col_i64(st, f->col) != 0);
	case K_JSON_NULL: {
		/* a driver's blob: JSON it wrote; anything else is null */
		json_t *v = store_col_null(st, f->col) ? NULL :
			    json_loads(store_col_text(st, f->col), 0, NULL);

		return v ? v : json_null();
	}
	}
	return NULL;
}

static json_t *fields_json(struct store_stmt *st, const struct field *fs, size_t n)
{
	json_t *j = json_object();

	for (size_t i = 0; j && i < n; i++)
		put(j, fs[i].key, field_json(st, &fs[i]));
	if (j && json_object_get(j, "_incomplete")) {
		json_decref(j);
		return NULL;
	}
	return j;
}

json_t *ctl__node_json_row(struct store_stmt *st)
{
	static const struct field fs[] = {
		{ "id", "id", K_INT },
		{ "job_id", "job_id", K_INT },
		{ "rank", "rank", K_INT },
		{ "state", "state", K_TEXT },
		{ "provider", "provider", K_TEXT },
		{ "cloud", "cloud", K_TEXT },
		{ "region", "region", K_TEXT },
		{ "zone", "zone", K_TEXT },
		{ "instance_type", "instance_type", K_TEXT },
		{ "spot", "spot", K_BOOL },
		{ "price_micros_per_hour", "price_micros", K_INT },
		{ "pid", "pid", K_INT_NULL },
		{ "created_at", "created_ns", K_TS },
		{ "last_heartbeat_at", "last_hb_ns", K_TS },
		{ "notice_at", "notice_ns", K_TS },
		{ "terminate_at", "kill_ns", K_TS },
		{ "terminated_at", "terminated_ns", K_TS },
		{ "end_reason", "end_reason", K_TEXT_NULL },
		{ "cpu_util", "cpu_util", K_REAL_NULL },
		{ "gpu_util", "gpu_util", K_REAL_NULL },
		{ "workload_state", "workload", K_TEXT },
		{ "workload_attempt", "wl_attempt", K_INT },
		{ "accelerator", "accelerator", K_TEXT },
		{ "accelerator_count", "accel_count", K_REAL },
		{ "cost_micros", "cost_micros", K_INT },
		{ "pool", "pool", K_INT },
		{ "instance_id", "instance_id", K_TEXT_NULL },
		{ "instance", "driver_blob", K_JSON_NULL },
		{ "addr", "addr", K_TEXT_NULL },
	};

	return fields_json(st, fs, sizeof fs / sizeof fs[0]);
}

int ctl__nodes_append(struct store *s, const char *sql, const int64_t *args,
		      int nargs, json_t *arr, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	json_t *n;
	int rc;

	rc = store_prepare(s, sql, &st, e);
	if (rc)
		return rc;
	for (int i = 0; i < nargs; i++)
		store_bind_i64(st, i + 1, args[i]);
	while ((rc = store_step(st, e)) == 1) {
		n = ctl__node_json_row(st);
		if (!n || json_array_append_new(arr, n)) {
			rc = sr_err_set(e, -ENOMEM, "node view: out of memory");
			break;
		}
	}
	store_done(st);
	return rc < 0 ? rc : 0;
}

static json_t *nodes_of(struct store *s, int64_t job, struct sr_err *e)
{
	char sql[512];
	json_t *arr = json_array();

	snprintf(sql, sizeof sql, "SELECT %s FROM nodes WHERE job_id=? "
		 "ORDER BY id", ctl__node_cols);
	if (!arr || ctl__nodes_append(s, sql, &job, 1, arr, e)) {
		json_decref(arr);
		return NULL;
	}
	return arr;
}

/* A job's secrets are never served back (only agents get them, in their
 * register reply): their values become "<redacted>". */
static void redact_secrets(json_t *spec)
{
	json_t *sec = json_object_get(spec, "secrets"), *v;
	const char *k;

	json_object_foreach(sec, k, v) {
		if (json_is_string(v))
			json_object_set_new(sec, k, json_string("<redacted>"));
	}
}

json_t *ctl__job_json(struct ctl *c, struct store *s, int64_t id,
		     bool with_nodes, struct sr_err *e)
{
	static const char sql[] =
		"SELECT id, name, state, desired, created_ns, updated_ns,"
		" finished_ns, num_nodes, attempt, restarts, max_restarts,"
		" preemptions, moves, recoveries, exit_code, step, total_steps,"
		" ckpt_step, placement, message, sim_start_s, deadline_s,"
		" spec_json, cost_micros, spec_name, workdir, list_cost_micros,"
		" reserved_cost_micros, reserved_unknown, step_ns, work_s,"
		" est_work_s FROM jobs WHERE id=?";
	static const struct field fs[] = {
		{ "id", "id", K_INT },
		{ "name", "name", K_TEXT },
		{ "state", "state", K_TEXT },
		{ "desired", "desired", K_TEXT },
		{ "created_at", "created_ns", K_TS },
		{ "updated_at", "updated_ns", K_TS },
		{ "finished_at", "finished_ns", K_TS },
		{ "num_nodes", "num_nodes", K_INT },
		{ "attempt", "attempt", K_INT },
		{ "restarts", "restarts", K_INT },
		{ "max_restarts", "max_restarts", K_INT },
		{ "preemptions", "preemptions", K_INT },
		{ "moves", "moves", K_INT },
		{ "recoveries", "recoveries", K_INT },
		{ "exit_code", "exit_code", K_INT_NULL },
		{ "step", "step", K_INT_NULL },
		{ "total_steps", "total_steps", K_INT_NULL },
		{ "ckpt_step", "ckpt_step", K_INT_NULL },
		{ "message", "message", K_TEXT },
		{ "sim_deadline_s", "deadline_s", K_REAL_NULL },
		{ "cost_micros", "cost_micros", K_INT },
		{ "spec_name", "spec_name", K_TEXT },
		{ "workdir", "workdir", K_TEXT_NULL },
		{ "list_cost_micros", "list_cost_micros", K_INT },
	};
	struct store_stmt *st = NULL;
	json_t *j = NULL, *spec, *pl;
	double start, elapsed, w, est;
	int rc;

	if (store_prepare(s, sql, &st, e))
		return NULL;
	store_bind_i64(st, 1, id);
	rc = store_step(st, e);
	if (rc <= 0) {
		if (rc == 0)
			sr_err_set(e, -SR_ENOTFOUND, "job %" PRId64 ": no such job", id);
		goto out;
	}
	j = fields_json(st, fs, sizeof fs / sizeof fs[0]);
	if (!j) {
		sr_err_set(e, -ENOMEM, "job view: out of memory");
		goto out;
	}
	spec = json_loads(store_col_text(st, "spec_json"), 0, NULL);
	redact_secrets(spec);
	pl = json_loads(store_col_text(st, "placement"), 0, NULL);
	start = store_col_f64(st, "sim_start_s");
	elapsed = ctl__sim_now(c) - start;
	if (!store_col_null(st, "finished_ns"))
		elapsed = ctl__sim_at(c, store_col_i64(st, "finished_ns")) - start;
	put(j, "placement", pl ? pl : json_null());
	put(j, "sim_elapsed_s", json_real(elapsed));
	put(j, "spec", spec ? spec : json_null());
	put(j, "deadline_at", json_null());
	if (!store_col_null(st, "deadline_s") && c->cfg.time_scale > 0) {
		/* wall-clock moment the cloud clock reaches the deadline */
		double at_sim = start + store_col_f64(st, "deadline_s");
		int64_t at_ns = c->real0_ns + (int64_t)((at_sim - c->sim0_s) /
					c->cfg.time_scale * 1e9);
		char buf[40];

		if (sr_time_format_rfc3339(at_ns, 3, buf, sizeof buf) > 0)
			put(j, "deadline_at", json_string(buf));
	}
	if (spec) {
		json_t *rs = json_object_get(spec, "resources");
		json_t *us = rs ? json_object_get(rs, "use_spot") : NULL;
		json_t *crit = json_object_get(json_object_get(spec, "spotrun"),
					       "criticality");

		put(j, "use_spot", json_incref(us ? us : json_null()));
		put(j, "criticality", json_incref(crit ? crit : json_null()));
	}
	/* null when some node's offering has no reserved price */
	put(j, "reserved_cost_micros", store_col_i64(st, "reserved_unknown") ?
	    json_null() : json_integer(store_col_i64(st, "reserved_cost_micros")));
	/* measured pace, cloud seconds per step */
	put(j, "sim_step_s", store_col_null(st, "step_ns") ? json_null() :
	    json_real(store_col_f64(st, "step_ns") / 1e9 * c->cfg.time_scale));
	/* declared work and the bounded estimate (workest.h) */
	w = store_col_f64(st, "work_s");
	est = store_col_f64(st, "est_work_s");
	put(j, "sim_work_s", json_real(w));
	put(j, "sim_work_estimate_s", json_real(est > 0 ? est : w));
	if (with_nodes) {
		json_t *n = nodes_of(s, id, e);

		if (!n) {
			json_decref(j);
			j = NULL;
			goto out;
		}
		put(j, "nodes", n);
	}
	if (json_object_get(j, "_incomplete")) {
		sr_err_set(e, -ENOMEM, "job view: out of memory");
		json_decref(j);
		j = NULL;
	}
out:
	store_done(st);
	return j;
}
