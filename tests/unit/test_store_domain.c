/* Unit tests: the control plane's and the ledger's functions over
 * lib/store, each case on SQLite and on a real PostgreSQL 15
 * (store_backends.h): the job state machine, cancel and event
 * serialisation (jobsm.c), the work estimator's glue (workest.c), the
 * ledger (rows split at month ends, events, plans), the cost report (by
 * job and by day), the FOCUS export, the Prometheus metrics and the budget
 * and idle queries (lib/finops). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "ctl/jobsm.h"
#include "ctl/workest.h"
#include "finops/focus.h"
#include "finops/ledger.h"
#include "finops/metrics.h"
#include "finops/policy.h"
#include "finops/report.h"
#include "store_backends.h"

#define HOUR_NS (INT64_C(3600) * SR_NS_PER_SEC)
/* 2026-11-30T23:00:00Z: an hour before a month ends */
#define T0 (INT64_C(1796079600) * SR_NS_PER_SEC)

static int64_t count(struct store *s, const char *sql, int64_t arg)
{
	struct sr_err e = { 0 };
	int64_t n = -1;

	if (store_query_i64(s, sql, arg, &n, &e) != 1)
		fail_msg("%s: %s", sql, e.msg);
	return n;
}

static void test_job_state_cancel_events(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	int64_t id = new_job(s, "j");
	json_t *data = json_pack("{s:i, s:s}", "b", 1, "a", "x");
	char text[64] = "";
	struct store_stmt *st = NULL;

	assert_int_equal(store_begin(s, &e), 0);
	assert_int_equal(jobsm_move(s, id, JOB_PENDING, JOB_PROVISIONING, 10, 1.0,
				    "placing", &e), 0);
	store_end(s, 0, &e);
	/* compare-and-set: not PENDING any more; and a move off the table */
	assert_int_equal(jobsm_move(s, id, JOB_PENDING, JOB_PROVISIONING, 11, 1.0,
				    "again", &e), -SR_ECONFLICT);
	assert_int_equal(jobsm_move(s, id, JOB_PROVISIONING, JOB_NOTICE, 11, 1.0,
				    "no", &e), -SR_ECONFLICT);
	assert_int_equal(jobsm_cancel(s, id, 12, 1.0, "stop it", &e), 1);
	assert_int_equal(jobsm_cancel(s, id, 13, 1.0, "stop it", &e), 0);
	assert_int_equal(jobsm_cancel(s, id + 99, 13, 1.0, "x", &e), -SR_ENOTFOUND);
	assert_int_equal(count(s, "SELECT count(*) FROM events WHERE job_id=? AND"
			       " type IN ('transition', 'cancel_requested')", id), 2);
	assert_int_equal(count(s, "SELECT count(*) FROM jobs WHERE id=? AND"
			       " desired='cancel' AND state='PROVISIONING'", id), 1);
	/* one serialisation: compact JSON with sorted keys */
	assert_int_equal(ctl_event_append(s, id, "note", NULL, NULL, 0, 14, 1.0,
					  data, "m", &e), 0);
	assert_int_equal(store_prepare(s, "SELECT data FROM events WHERE type="
				       "'note'", &st, &e), 0);
	assert_int_equal(store_step(st, &e), 1);
	snprintf(text, sizeof text, "%s", store_col_text(st, "data"));
	store_done(st);
	assert_string_equal(text, "{\"a\":\"x\",\"b\":1}");
	json_decref(data);
	store_close(s);
}

static void test_work_estimate(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	int64_t id = new_job(s, "w");

	assert_int_equal(store_exec_sql(s, "UPDATE jobs SET total_steps=100", &e), 0);
	/* the first report of an attempt says so; later ones do not */
	assert_int_equal(workest_report(s, id, 1, 0, 100, 1.0, SR_NS_PER_SEC, &e), 1);
	assert_int_equal(workest_report(s, id, 1, 10, 10 * SR_NS_PER_SEC, 1.0,
					SR_NS_PER_SEC, &e), 0);
	assert_int_equal(count(s, "SELECT est_attempt FROM jobs WHERE id=?", id), 1);
	assert_int_equal(count(s, "SELECT est_last_step FROM jobs WHERE id=?", id), 10);
	assert_int_equal(workest_report(s, id + 50, 1, 0, 100, 1.0, SR_NS_PER_SEC, &e),
			 -SR_ENOTFOUND);
	/* a job that reports no total_steps (examples/train.py): no pace,
	 * but still one first report per attempt (each one being "first"
	 * set the job's checkpoint back to the restored step at every
	 * heartbeat: test_slurm_provider) */
	id = new_job(s, "w2");
	assert_int_equal(workest_report(s, id, 1, 0, 100, 1.0, SR_NS_PER_SEC, &e), 1);
	assert_int_equal(workest_report(s, id, 1, 40, 10 * SR_NS_PER_SEC, 1.0,
					SR_NS_PER_SEC, &e), 0);
	assert_int_equal(workest_report(s, id, 1, 40, 11 * SR_NS_PER_SEC, 1.0,
					SR_NS_PER_SEC, &e), 0);
	assert_int_equal(workest_report(s, id, 2, 40, 20 * SR_NS_PER_SEC, 1.0,
					SR_NS_PER_SEC, &e), 1);
	store_close(s);
}

static void bill(struct store *s, int64_t job, int64_t node, int64_t start,
		 int64_t len, bool busy, sr_micros price)
{
	struct ledger_row r = {
		.provider = "aws", .region = "us-east-1", .zone = "us-east-1a",
		.instance_type = "p3.2xlarge", .accelerator = "V100", .gpus = 1,
		.pricing = LEDGER_DYNAMIC, .unit_price = price,
		.list_price = 3060000, .reserved_price = LEDGER_PRICE_UNKNOWN,
		.job_id = job, .node_id = node, .busy = busy, .util_permille = -1,
		.start_ns = start, .end_ns = start + len, .billed_ns = len,
	};
	struct sr_err e = { 0 };

	if (ledger_row_add(s, &r, NULL, &e))
		fail_msg("ledger_row_add: %s", e.msg);
}

static void test_ledger_report_focus_metrics(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	struct ledger_event ev = { .kind = LEDGER_EV_PREEMPTION, .job_id = 1,
				   .node_id = 7, .at_ns = T0 + HOUR_NS,
				   .value_ns = HOUR_NS / 2, .unit_price = 1000000 };
	struct ledger_plan plan = { .job_id = 1, .at_ns = T0, .work_ns = 4 * HOUR_NS,
				    .nodes = 1, .od_price = 3060000 };
	struct finops_report rep;
	struct finops_filter f = { 0 };
	sr_micros planned = 0, spent, hourly;
	char *csv = NULL, *text = NULL;
	size_t len = 0, rows = 0;
	int64_t since;
	FILE *mem;

	/* both done: their plans count (a running job's would not yet) */
	for (int id = 1; id <= 2; id++) {
		char sql[400];

		snprintf(sql, sizeof sql, "INSERT INTO jobs(id, name, state,"
			 " spec_name, spec_yaml, spec_json, num_nodes, max_restarts,"
			 " created_ns, updated_ns, state_since_ns, sim_start_s)"
			 " VALUES(%d, 'j', 'SUCCEEDED', 'j', '', '{}', 1, 3, 0, 0, 0,"
			 " 0)", id);
		assert_int_equal(store_exec_sql(s, sql, &e), 0);
	}
	/* job 1: two busy hours across the month end (two rows), then an
	 * idle one; job 2: one hour */
	bill(s, 1, 7, T0, 2 * HOUR_NS, true, 1000000);
	bill(s, 1, 7, T0 + 2 * HOUR_NS, HOUR_NS, false, 1000000);
	bill(s, 2, 8, T0, HOUR_NS, true, 3060000);
	assert_int_equal(count(s, "SELECT count(*) FROM ledger WHERE node_id=?", 7), 3);
	assert_int_equal(ledger_event_add(s, &ev, &e), 0);
	assert_int_equal(ledger_plan_add(s, &plan, &planned, &e), 0);
	assert_int_equal(planned, 12240000);
	plan.od_price = 1; /* a second plan for the job is ignored */
	assert_int_equal(ledger_plan_add(s, &plan, NULL, &e), 0);

	assert_int_equal(finops_report_build(s, &f, FINOPS_BY_JOB, &rep, &e), 0);
	assert_int_equal(rep.ngroups, 2);
	assert_string_equal(rep.groups[0].key, "1");
	assert_int_equal(rep.groups[0].t.cost, 3000000);
	assert_int_equal(rep.groups[0].t.idle_cost, 1000000);
	assert_int_equal(rep.groups[0].t.preemptions, 1);
	assert_int_equal(rep.groups[0].t.lost_work_cost, 500000);
	assert_int_equal(rep.groups[0].t.savings_vs_plan, 12240000 - 3000000);
	assert_int_equal(rep.total.cost, 6060000);
	finops_report_free(&rep);
	assert_int_equal(finops_report_build(s, &f, FINOPS_BY_DAY, &rep, &e), 0);
	assert_int_equal(rep.ngroups, 2);
	assert_string_equal(rep.groups[0].key, "2026-11-30");
	assert_string_equal(rep.groups[1].key, "2026-12-01");
	finops_report_free(&rep);

	mem = open_memstream(&csv, &len);
	assert_non_null(mem);
	assert_int_equal(finops_focus_write(s, &f, NULL, mem, &rows, &e), 0);
	fclose(mem);
	assert_int_equal(rows, 4);
	assert_non_null(strstr(csv, "BilledCost"));
	free(csv);

	/* the daemon says both SUCCEEDED: job 1's plan ($12.24) against its
	 * $3.00; job 2 has no plan; against on-demand for the hours used,
	 * job 1 saved 3 h x $3.06 - $3.00, job 2 (at list) nothing */
	{
		static const int64_t done[] = { 1, 2 };
		struct finops_live live = { .succeeded = done, .nsucceeded = 2 };

		assert_int_equal(finops_metrics_render(s, &live, &text, &len, &e), 0);
	}
	assert_non_null(strstr(text, "\nspotrun_job_savings_vs_plan_dollars{job_id=\"1\"} 9.240000\n"));
	assert_null(strstr(text, "spotrun_job_savings_vs_plan_dollars{job_id=\"2\"}"));
	assert_non_null(strstr(text, "\nspotrun_job_savings_dollars{job_id=\"1\"} 6.180000\n"));
	assert_non_null(strstr(text, "\nspotrun_job_savings_dollars{job_id=\"2\"} 0.000000\n"));
	free(text);

	assert_int_equal(finops_job_spend(s, 1, T0 + 3 * HOUR_NS, HOUR_NS, &spent,
					  &hourly, &e), 0);
	assert_int_equal(spent, 3000000);
	assert_int_equal(hourly, 1000000);
	assert_int_equal(finops_idle_since(s, 7, &since, &e), 0);
	assert_true(since == T0 + 2 * HOUR_NS);
	store_close(s);
}

/* A node of job `job` at `rank` in state `state`; its id. */
static int64_t new_node(struct store *s, int64_t job, int64_t rank,
			const char *state, const char *addr)
{
	struct sr_err e = { 0 };
	struct store_stmt *st = NULL;
	int64_t id;

	assert_int_equal(store_prepare(s, "INSERT INTO nodes(job_id, rank, state,"
				       " token_hash, provider, cloud, region, zone,"
				       " instance_type, accelerator, accel_count, spot,"
				       " pool, price_micros, list_micros, reserved_micros,"
				       " created_ns, boot_at_ns, addr, phase) VALUES(?1, ?2,"
				       " ?3, ?4, 'local', 'aws', 'us-east-1', 'use1-az1',"
				       " 'p3.2xlarge', 'V100', 1.5, 1, 7, 3060000, 3100000,"
				       " -1, 500, 600, ?5, NULL) RETURNING id", &st, &e), 0);
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, rank);
	store_bind_text(st, 3, state);
	store_bind_blob(st, 4, "tok", 3);
	store_bind_text(st, 5, addr);
	if (store_step(st, &e) != 1)
		fail_msg("insert node: %s", e.msg);
	id = store_col_i64(st, "id");
	store_done(st);
	return id;
}

/* The row structs (store_rows.c): every kind of column, NULLs, text that
 * outlives its statement, and each list filter. */
static void test_rows(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	int64_t j1 = new_job(s, "first"), j2 = new_job(s, "second");
	int64_t a = new_node(s, j1, 0, "READY", "10.0.0.1");
	int64_t b = new_node(s, j1, 1, "TERMINATED", NULL);
	int64_t c = new_node(s, j2, 0, "BOOTING", NULL);
	char longmsg[3000];
	struct store_node n, *v = NULL;
	struct store_job j, j2row;
	size_t k = 0;

	memset(longmsg, 'm', sizeof longmsg - 1);
	longmsg[sizeof longmsg - 1] = '\0';
	assert_int_equal(store_begin(s, &e), 0);
	assert_int_equal(jobsm_move(s, j1, JOB_PENDING, JOB_PROVISIONING, 10, 1.0,
				    longmsg, &e), 0);
	store_end(s, 0, &e);
	/* a node, its NULL columns as the header says */
	assert_int_equal(store_node_load(s, a, &n, &e), 0);
	assert_true(n.id == a && n.job_id == j1 && n.rank == 0);
	assert_string_equal(n.state, "READY");
	assert_string_equal(n.phase, "");
	assert_string_equal(n.instance_type, "p3.2xlarge");
	assert_string_equal(n.workload, "idle");
	assert_true(n.spot && !n.retire && n.pool == 7);
	assert_true(n.accel_count == 1.5);
	assert_true(n.price_micros == 3060000 && n.list_micros == 3100000 &&
		    n.reserved_micros == -1);
	assert_true(n.created_ns == 500 && n.boot_at_ns == 600);
	assert_true(n.pid == STORE_NULL_I64 && n.last_hb_ns == STORE_NULL_I64 &&
		    n.terminated_ns == STORE_NULL_I64 && n.setup_rc == STORE_NULL_I64);
	assert_true(isnan(n.cpu_util) && isnan(n.gpu_util));
	assert_null(n.end_reason);
	assert_null(n.instance_id);
	assert_null(n.driver_blob);
	assert_string_equal(n.addr, "10.0.0.1");
	store_node_free(&n);
	assert_int_equal(store_node_load(s, c + 99, &n, &e), -SR_ENOTFOUND);
	store_node_free(&n);
	/* a job: its long message whole, after the statement is reused */
	assert_int_equal(store_job_load(s, j1, STORE_JOB_SPEC, &j, &e), 0);
	assert_int_equal(store_job_load(s, j2, 0, &j2row, &e), 0);
	assert_string_equal(j2row.name, "second");
	assert_string_equal(j2row.spec_json, "");
	store_job_free(&j2row);
	assert_string_equal(j.name, "first");
	assert_string_equal(j.state, "PROVISIONING");
	assert_string_equal(j.desired, "run");
	assert_string_equal(j.message, longmsg);
	assert_string_equal(j.spec_json, "{}");
	assert_true(j.policy_tick == -1 && j.run_s == 0.0);
	assert_true(j.run_started_ns == STORE_NULL_I64 &&
		    j.pace_step0 == STORE_NULL_I64);
	assert_null(j.recover_reason);
	assert_true(j.num_nodes == 1 && j.max_restarts == 2);
	assert_true(j.created_ns == 1000 && j.finished_ns == STORE_NULL_I64);
	assert_true(j.exit_code == STORE_NULL_I64 && j.step == STORE_NULL_I64);
	assert_true(j.sim_start_s == 1.5 && j.work_s == 0.0);
	assert_true(isnan(j.deadline_s) && isnan(j.step_ns));
	assert_null(j.placement);
	assert_null(j.workdir);
	assert_false(j.reserved_unknown);
	store_job_free(&j);
	assert_int_equal(store_job_load(s, j2 + 99, 0, &j, &e), -SR_ENOTFOUND);
	store_job_free(&j);
	/* lists: of a job, live only, every job, a limit */
	assert_int_equal(store_node_list(s, j1, false, 0, &v, &k, &e), 0);
	assert_int_equal(k, 2);
	assert_true(v[0].id == a && v[1].id == b);
	assert_null(v[1].addr);
	store_nodes_free(v, k);
	assert_int_equal(store_node_list(s, j1, true, 0, &v, &k, &e), 0);
	assert_int_equal(k, 1);
	assert_true(v[0].id == a);
	store_nodes_free(v, k);
	assert_int_equal(store_node_list(s, 0, true, 0, &v, &k, &e), 0);
	assert_int_equal(k, 2);
	assert_true(v[0].id == a && v[1].id == c);
	assert_string_equal(v[1].state, "BOOTING");
	store_nodes_free(v, k);
	assert_int_equal(store_node_list(s, 0, false, 2, &v, &k, &e), 0);
	assert_int_equal(k, 2);
	assert_true(v[0].id == a && v[1].id == b);
	store_nodes_free(v, k);
	/* the reconciler's own filters */
	assert_int_equal(store_node_select(s, "state='TERMINATED' OR job_id=?1",
					   j2, &v, &k, &e), 0);
	assert_int_equal(k, 2);
	assert_true(v[0].id == b && v[1].id == c);
	store_nodes_free(v, k);
	assert_int_equal(store_node_list(s, j2 + 99, false, 0, &v, &k, &e), 0);
	assert_int_equal(k, 0);
	store_nodes_free(v, k);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_job_state_cancel_events),
		BOTH(test_work_estimate),
		BOTH(test_ledger_report_focus_metrics),
		BOTH(test_rows),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
