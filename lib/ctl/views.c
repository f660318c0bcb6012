/*
 * views.c - the JSON objects of jobs and nodes served by the API
 * (shapes in docs/api.md).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/db.h"

static json_t *ts_or_null(sqlite3_stmt *st, int col)
{
	char buf[40];

	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return json_null();
	if (sr_time_format_rfc3339(sqlite3_column_int64(st, col), 3, buf,
				   sizeof buf) < 0)
		return json_null();
	return json_string(buf);
}

static json_t *int_or_null(sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return json_null();
	return json_integer(sqlite3_column_int64(st, col));
}

static json_t *real_or_null(sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return json_null();
	return json_real(sqlite3_column_double(st, col));
}

static json_t *text_or_null(sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		return json_null();
	return json_string(ctl_db_text(st, col));
}

const char ctl__node_cols[] =
	"id, job_id, rank, state, provider, cloud, region, zone, instance_type,"
	" spot, price_micros, pid, created_ns, last_hb_ns, notice_ns, kill_ns,"
	" terminated_ns, end_reason, cpu_util, gpu_util, workload, wl_attempt,"
	" accelerator, accel_count, cost_micros, pool";

json_t *ctl__node_json_row(sqlite3_stmt *st)
{
	return json_pack("{s:I,s:I,s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:I,s:o,"
			 "s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:I,s:s,s:f,s:I,s:i}",
		"id", (json_int_t)sqlite3_column_int64(st, 0),
		"job_id", (json_int_t)sqlite3_column_int64(st, 1),
		"rank", sqlite3_column_int(st, 2),
		"state", ctl_db_text(st, 3),
		"provider", ctl_db_text(st, 4),
		"cloud", ctl_db_text(st, 5),
		"region", ctl_db_text(st, 6),
		"zone", ctl_db_text(st, 7),
		"instance_type", ctl_db_text(st, 8),
		"spot", sqlite3_column_int(st, 9),
		"price_micros_per_hour", (json_int_t)sqlite3_column_int64(st, 10),
		"pid", int_or_null(st, 11),
		"created_at", ts_or_null(st, 12),
		"last_heartbeat_at", ts_or_null(st, 13),
		"notice_at", ts_or_null(st, 14),
		"terminate_at", ts_or_null(st, 15),
		"terminated_at", ts_or_null(st, 16),
		"end_reason", text_or_null(st, 17),
		"cpu_util", real_or_null(st, 18),
		"gpu_util", real_or_null(st, 19),
		"workload_state", ctl_db_text(st, 20),
		"workload_attempt", (json_int_t)sqlite3_column_int64(st, 21),
		"accelerator", ctl_db_text(st, 22),
		"accelerator_count", sqlite3_column_double(st, 23),
		"cost_micros", (json_int_t)sqlite3_column_int64(st, 24),
		"pool", sqlite3_column_int(st, 25));
}

static json_t *nodes_of(sqlite3 *db, int64_t job)
{
	char sql[512];
	sqlite3_stmt *st = NULL;
	json_t *arr = json_array();

	snprintf(sql, sizeof sql, "SELECT %s FROM nodes WHERE job_id=? "
		 "ORDER BY id", ctl__node_cols);
	if (!arr || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		json_decref(arr);
		return NULL;
	}
	sqlite3_bind_int64(st, 1, job);
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(arr, ctl__node_json_row(st));
	sqlite3_finalize(st);
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

json_t *ctl__job_json(struct ctl *c, sqlite3 *db, int64_t id, bool with_nodes)
{
	static const char sql[] =
		"SELECT id, name, state, desired, created_ns, updated_ns,"
		" finished_ns, num_nodes, attempt, restarts, max_restarts,"
		" preemptions, moves, recoveries, exit_code, step, total_steps,"
		" ckpt_step, placement, message, sim_start_s, deadline_s,"
		" spec_json, cost_micros, spec_name, workdir, list_cost_micros,"
		" reserved_cost_micros, reserved_unknown, step_ns, work_s,"
		" est_work_s FROM jobs WHERE id=?";
	sqlite3_stmt *st = NULL;
	json_t *j = NULL, *spec, *pl;
	double sim_now = ctl__sim_now(c), elapsed;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto out;
	spec = json_loads(ctl_db_text(st, 22), 0, NULL);
	redact_secrets(spec);
	pl = json_loads(ctl_db_text(st, 18), 0, NULL);
	elapsed = sim_now - sqlite3_column_double(st, 20);
	if (sqlite3_column_type(st, 6) != SQLITE_NULL)
		elapsed = ctl__sim_at(c, sqlite3_column_int64(st, 6)) -
			  sqlite3_column_double(st, 20);
	j = json_pack("{s:I,s:s,s:s,s:s,s:o,s:o,s:o,s:i,s:I,s:I,s:I,s:I,s:I,"
		      "s:I,s:o,s:o,s:o,s:o,s:o,s:s,s:o,s:f,s:I,s:s,s:o,s:o}",
		"id", (json_int_t)sqlite3_column_int64(st, 0),
		"name", ctl_db_text(st, 1),
		"state", ctl_db_text(st, 2),
		"desired", ctl_db_text(st, 3),
		"created_at", ts_or_null(st, 4),
		"updated_at", ts_or_null(st, 5),
		"finished_at", ts_or_null(st, 6),
		"num_nodes", sqlite3_column_int(st, 7),
		"attempt", (json_int_t)sqlite3_column_int64(st, 8),
		"restarts", (json_int_t)sqlite3_column_int64(st, 9),
		"max_restarts", (json_int_t)sqlite3_column_int64(st, 10),
		"preemptions", (json_int_t)sqlite3_column_int64(st, 11),
		"moves", (json_int_t)sqlite3_column_int64(st, 12),
		"recoveries", (json_int_t)sqlite3_column_int64(st, 13),
		"exit_code", int_or_null(st, 14),
		"step", int_or_null(st, 15),
		"total_steps", int_or_null(st, 16),
		"ckpt_step", int_or_null(st, 17),
		"placement", pl ? pl : json_null(),
		"message", ctl_db_text(st, 19),
		"sim_deadline_s", real_or_null(st, 21),
		"sim_elapsed_s", elapsed,
		"cost_micros", (json_int_t)sqlite3_column_int64(st, 23),
		"spec_name", ctl_db_text(st, 24),
		"workdir", text_or_null(st, 25),
		"spec", spec ? spec : json_null());
	if (j && sqlite3_column_type(st, 21) != SQLITE_NULL && c->cfg.time_scale > 0) {
		/* wall-clock moment the cloud clock reaches the deadline */
		double at_sim = sqlite3_column_double(st, 20) +
				sqlite3_column_double(st, 21);
		int64_t at_ns = c->real0_ns + (int64_t)((at_sim - c->sim0_s) /
					c->cfg.time_scale * 1e9);
		char buf[40];

		if (sr_time_format_rfc3339(at_ns, 3, buf, sizeof buf) > 0)
			json_object_set_new(j, "deadline_at", json_string(buf));
	}
	if (j && !json_object_get(j, "deadline_at"))
		json_object_set_new(j, "deadline_at", json_null());
	if (j && spec) {
		json_t *rs = json_object_get(spec, "resources");
		json_t *us = rs ? json_object_get(rs, "use_spot") : NULL;

		json_object_set(j, "use_spot", us ? us : json_null());
		json_object_set(j, "criticality",
				json_object_get(json_object_get(spec, "spotrun"),
						"criticality") ?: json_null());
	}
	if (j) {
		json_object_set_new(j, "list_cost_micros",
				    json_integer(sqlite3_column_int64(st, 26)));
		/* null when some node's offering has no reserved price */
		json_object_set_new(j, "reserved_cost_micros",
				    sqlite3_column_int(st, 28) ? json_null() :
				    json_integer(sqlite3_column_int64(st, 27)));
	}
	if (j) /* measured pace, cloud seconds per step */
		json_object_set_new(j, "sim_step_s", sqlite3_column_type(st, 29) ==
				    SQLITE_NULL ? json_null() : json_real(
				    sqlite3_column_double(st, 29) / 1e9 * c->cfg.time_scale));
	if (j) { /* declared work and the bounded estimate (workest.h) */
		double w = sqlite3_column_double(st, 30), est = sqlite3_column_double(st, 31);

		json_object_set_new(j, "sim_work_s", json_real(w));
		json_object_set_new(j, "sim_work_estimate_s", json_real(est > 0 ? est : w));
	}
	if (j && with_nodes) {
		json_t *n = nodes_of(db, id);

		json_object_set_new(j, "nodes", n ? n : json_array());
	}
out:
	sqlite3_finalize(st);
	return j;
}
