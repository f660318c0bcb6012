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

	assert_int_equal(finops_metrics_render(s, NULL, &text, &len, &e), 0);
	assert_non_null(strstr(text, "\nspotrun_job_savings_dollars{job_id=\"1\"} 9.240000\n"));
	assert_null(strstr(text, "spotrun_job_savings_dollars{job_id=\"2\"}"));
	free(text);

	assert_int_equal(finops_job_spend(s, 1, T0 + 3 * HOUR_NS, HOUR_NS, &spent,
					  &hourly, &e), 0);
	assert_int_equal(spent, 3000000);
	assert_int_equal(hourly, 1000000);
	assert_int_equal(finops_idle_since(s, 7, &since, &e), 0);
	assert_true(since == T0 + 2 * HOUR_NS);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_job_state_cancel_events),
		BOTH(test_work_estimate),
		BOTH(test_ledger_report_focus_metrics),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
