/*
 * test_finops_ledger.c - the billing ledger and the reports derived from it.
 */
#include <sqlite3.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "store_bridge.h"

#include "common/timeutil.h"
#include "finops/ledger.h"
#include "finops/report.h"

#define HOUR_NS (INT64_C(3600) * INT64_C(1000000000))
#define T0 INT64_C(1795000000000000000) /* 2026-11-18T... UTC */

static sqlite3 *open_db(void)
{
	sqlite3 *db = NULL;
	struct sr_err e;

	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(ledger_migrate(db, &e), 0);
	return db;
}

static struct ledger_row row(int64_t node, int64_t job, int64_t start_ns,
			     int64_t billed_ns, sr_micros price, bool busy)
{
	struct ledger_row r = {
		.provider = "aws", .region = "us-east-1", .zone = "us-east-1a",
		.instance_type = "p3.2xlarge", .accelerator = "V100", .gpus = 1,
		.pricing = LEDGER_DYNAMIC, .unit_price = price,
		.list_price = 3060000, .reserved_price = 1950000,
		.job_id = job, .node_id = node, .busy = busy, .util_permille = 900,
		.start_ns = start_ns, .end_ns = start_ns + SR_NS_PER_SEC,
		.billed_ns = billed_ns,
	};
	return r;
}

static void test_migrate_idempotent(void **state)
{
	sqlite3 *db = open_db();
	sqlite3_stmt *st;
	struct sr_err e;

	(void)state;
	assert_int_equal(ledger_migrate(db, &e), 0);
	assert_int_equal(ledger_migrate(db, &e), 0);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM schema_version"
					    " WHERE component = 'ledger'", -1, &st,
					    NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 1);
	sqlite3_finalize(st);
	/* a newer schema than this build knows is refused */
	assert_int_equal(sqlite3_exec(db, "UPDATE schema_version SET version = 99"
				      " WHERE component = 'ledger'",
				      NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(ledger_migrate(db, &e), -SR_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "99"));
	sqlite3_close(db);
}

static void test_append_computes_cost(void **state)
{
	sqlite3 *db = open_db();
	struct ledger_row r = row(7, 3, T0, HOUR_NS / 2, 920000, true);
	sr_micros cost = -1;
	sqlite3_stmt *st;
	struct sr_err e;

	(void)state;
	assert_int_equal(ledger_append(db, &r, &cost, &e), 0);
	assert_int_equal(cost, 460000); /* $0.92/h for 30 min */
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT cost, list_cost, reserved_cost, job_id, node_id, zone"
		" FROM ledger", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), 460000);
	assert_int_equal(sqlite3_column_int64(st, 1), 1530000);
	assert_int_equal(sqlite3_column_int64(st, 2), 975000);
	assert_int_equal(sqlite3_column_int64(st, 3), 3);
	assert_int_equal(sqlite3_column_int64(st, 4), 7);
	assert_string_equal((const char *)sqlite3_column_text(st, 5), "us-east-1a");
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_append_only(void **state)
{
	sqlite3 *db = open_db();
	struct ledger_row r = row(7, 3, T0, HOUR_NS, 920000, true);
	struct ledger_event ev = { .kind = LEDGER_EV_PREEMPTION, .job_id = 3,
				   .at_ns = T0, .value_ns = HOUR_NS };
	struct sr_err e;

	(void)state;
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	assert_int_equal(ledger_event_append(db, &ev, &e), 0);
	assert_int_not_equal(sqlite3_exec(db, "UPDATE ledger SET cost = 0",
					  NULL, NULL, NULL), SQLITE_OK);
	assert_int_not_equal(sqlite3_exec(db, "DELETE FROM ledger",
					  NULL, NULL, NULL), SQLITE_OK);
	assert_int_not_equal(sqlite3_exec(db, "DELETE FROM ledger_event",
					  NULL, NULL, NULL), SQLITE_OK);
	/* re-billing the same node interval is a conflict, not a double charge */
	assert_int_equal(ledger_append(db, &r, NULL, &e), -SR_ECONFLICT);
	assert_non_null(strstr(e.msg, "node 7"));
	sqlite3_close(db);
}

static void test_append_splits_at_month_end(void **state)
{
	sqlite3 *db = open_db();
	/* 2026-11-30T23:00:00Z .. 2026-12-01T01:00:00Z, billed 2 h */
	int64_t start = INT64_C(1796079600) * SR_NS_PER_SEC;
	struct ledger_row r = row(7, 3, start, 2 * HOUR_NS, 920000, true);
	struct ledger_row blocker = row(8, 3, start + HOUR_NS, HOUR_NS, 1, true);
	sqlite3_stmt *st;
	sr_micros cost = 0;
	struct sr_err e;

	(void)state;
	r.end_ns = start + 2 * HOUR_NS;
	assert_int_equal(ledger_append(db, &r, &cost, &e), 0);
	assert_int_equal(cost, 1840000);
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT start_ns, end_ns, billed_ns, cost FROM ledger ORDER BY start_ns",
		-1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), start);
	assert_int_equal(sqlite3_column_int64(st, 1), start + HOUR_NS);
	assert_int_equal(sqlite3_column_int64(st, 2), HOUR_NS);
	assert_int_equal(sqlite3_column_int64(st, 3), 920000);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), start + HOUR_NS);
	assert_int_equal(sqlite3_column_int64(st, 1), start + 2 * HOUR_NS);
	assert_int_equal(sqlite3_column_int64(st, 2), HOUR_NS);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	/* a conflict on the December part rolls back the November part:
	 * node 8 already has a row starting at midnight */
	assert_int_equal(ledger_append(db, &blocker, NULL, &e), 0);
	r.node_id = 8;
	r.start_ns = start - HOUR_NS;
	assert_int_equal(ledger_append(db, &r, NULL, &e), -SR_ECONFLICT);
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT count(*) FROM ledger WHERE node_id = 8", -1, &st, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_append_validates(void **state)
{
	sqlite3 *db = open_db();
	struct ledger_row r;
	struct sr_err e;

	(void)state;
#define BAD(field_expr, name)                                             \
	do {                                                              \
		r = row(7, 3, T0, HOUR_NS, 920000, true);                 \
		field_expr;                                               \
		assert_int_equal(ledger_append(db, &r, NULL, &e), -EINVAL); \
		assert_non_null(strstr(e.msg, name));                     \
	} while (0)
	BAD(r.provider = NULL, "provider");
	BAD(r.region = "", "region");
	BAD(r.instance_type = NULL, "instance_type");
	BAD(r.node_id = 0, "node_id");
	BAD(r.job_id = -1, "job_id");
	BAD(r.pricing = (enum ledger_pricing)7, "pricing");
	BAD(r.gpus = -1, "gpus");
	BAD(r.unit_price = -5, "unit_price");
	BAD(r.list_price = -5, "list_price");
	BAD(r.reserved_price = -7, "reserved_price");
	BAD(r.util_permille = 1001, "util_permille");
	BAD(r.end_ns = r.start_ns, "end_ns");
	BAD(r.billed_ns = -1, "billed_ns");
#undef BAD
	sqlite3_close(db);
}

static void test_pricing_names(void **state)
{
	enum ledger_pricing p;

	(void)state;
	assert_string_equal(ledger_pricing_name(LEDGER_STANDARD), "Standard");
	assert_string_equal(ledger_pricing_name(LEDGER_DYNAMIC), "Dynamic");
	assert_string_equal(ledger_pricing_name(LEDGER_COMMITTED), "Committed");
	assert_null(ledger_pricing_name((enum ledger_pricing)9));
	assert_int_equal(ledger_pricing_parse("spot", &p), 0);
	assert_int_equal(p, LEDGER_DYNAMIC);
	assert_int_equal(ledger_pricing_parse("On-Demand", &p), 0);
	assert_int_equal(p, LEDGER_STANDARD);
	assert_int_equal(ledger_pricing_parse("reserved", &p), 0);
	assert_int_equal(p, LEDGER_COMMITTED);
	assert_int_equal(ledger_pricing_parse("cheap", &p), -EINVAL);
}

/* Two jobs, spot and on-demand, busy and idle, two regions, two days. */
static sqlite3 *fixture(void)
{
	sqlite3 *db = open_db();
	struct ledger_row r;
	struct ledger_event ev;
	struct sr_err e;

	/* job 1: spot V100 in us-east-1a, 2 h busy + 1 h idle */
	r = row(11, 1, T0, 2 * HOUR_NS, 920000, true);
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	r = row(11, 1, T0 + SR_NS_PER_SEC, HOUR_NS, 920000, false);
	r.util_permille = 20;
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	/* job 1 moved to on-demand in gcp, 4 GPUs, 1 h busy, next day */
	r = row(12, 1, T0 + 86400 * SR_NS_PER_SEC, HOUR_NS, 12000000, true);
	r.provider = "gcp";
	r.region = "us-central1";
	r.zone = NULL;
	r.instance_type = "a2-highgpu-4g";
	r.accelerator = "A100";
	r.gpus = 4;
	r.pricing = LEDGER_STANDARD;
	r.list_price = 12000000;
	r.reserved_price = LEDGER_PRICE_UNKNOWN;
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	/* job 2: spot, idle node (no workload yet) for 30 min */
	r = row(21, 2, T0 + 2 * SR_NS_PER_SEC, HOUR_NS / 2, 1000000, false);
	r.util_permille = -1;
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	/* job 1 was preempted once, losing 15 min of one V100 at $0.92/h */
	ev = (struct ledger_event){ .kind = LEDGER_EV_PREEMPTION, .job_id = 1,
		.node_id = 11, .provider = "aws", .region = "us-east-1",
		.zone = "us-east-1a", .instance_type = "p3.2xlarge",
		.at_ns = T0 + 3 * SR_NS_PER_SEC, .value_ns = HOUR_NS / 4,
		.unit_price = 920000 };
	assert_int_equal(ledger_event_append(db, &ev, &e), 0);
	ev.kind = LEDGER_EV_RECOVERY;
	ev.value_ns = 90 * SR_NS_PER_SEC;
	ev.provider = "gcp";
	ev.region = "us-central1";
	ev.zone = NULL;
	ev.instance_type = "a2-highgpu-4g";
	assert_int_equal(ledger_event_append(db, &ev, &e), 0);
	ev.kind = LEDGER_EV_CKPT_STALL;
	ev.value_ns = 12 * 1000000;
	assert_int_equal(ledger_event_append(db, &ev, &e), 0);
	return db;
}

static void test_report_total(void **state)
{
	sqlite3 *db = fixture();
	struct finops_report rep;
	struct sr_err e;

	(void)state;
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, NULL, FINOPS_BY_TOTAL, &rep, &e)), 0);
	assert_int_equal(rep.ngroups, 1);
	assert_int_equal(rep.total.rows, 4);
	/* 3h x 0.92 + 1h x 12 + 0.5h x 1.00 */
	assert_int_equal(rep.total.cost, 2760000 + 12000000 + 500000);
	/* list: 3h x 3.06 + 1h x 12 + 0.5h x 3.06 */
	assert_int_equal(rep.total.list_cost, 9180000 + 12000000 + 1530000);
	assert_int_equal(rep.total.savings_vs_list,
			 rep.total.list_cost - rep.total.cost);
	/* reserved baseline only where known: the aws rows (3.5 h x 1.95) */
	assert_int_equal(rep.total.reserved_rows, 3);
	assert_int_equal(rep.total.reserved_cost, 6825000);
	assert_int_equal(rep.total.savings_vs_reserved, 6825000 - 3260000);
	assert_int_equal(rep.total.gpu_ns, 3 * HOUR_NS + 4 * HOUR_NS + HOUR_NS / 2);
	assert_int_equal(rep.total.idle_ns, HOUR_NS + HOUR_NS / 2);
	assert_int_equal(rep.total.idle_gpu_ns, HOUR_NS + HOUR_NS / 2);
	assert_int_equal(rep.total.idle_cost, 920000 + 500000);
	assert_int_equal(rep.total.preemptions, 1);
	assert_int_equal(rep.total.recoveries, 1);
	assert_int_equal(rep.total.lost_work_cost, 230000);
	assert_int_equal(rep.total.lost_work_ns, HOUR_NS / 4);
	assert_int_equal(rep.total.downtime_ns, 90 * SR_NS_PER_SEC);
	assert_int_equal(rep.total.ckpt_stalls, 1);
	finops_report_free(&rep);
	sqlite3_close(db);
}

/* Job `id` in the jobs table, in `state` (what decides whether its cost
 * bought work: SUCCEEDED, FAILED, CANCELLED, or still running). */
static void job_state(sqlite3 *db, int64_t id, const char *state)
{
	char sql[512];

	snprintf(sql, sizeof sql, "INSERT INTO jobs(id, name, state, spec_name,"
		 " spec_yaml, spec_json, num_nodes, max_restarts, created_ns,"
		 " updated_ns, state_since_ns, sim_start_s) VALUES(%lld, 'j', '%s',"
		 " 'j', '', '{}', 1, 3, 0, 0, 0, 0) ON CONFLICT(id) DO UPDATE SET"
		 " state=excluded.state", (long long)id, state);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
}

/* Honest savings: against each job's planned on-demand cost.  Job 1 was
 * planned at 3 h of a $3.06/h node but, after a move to a 4-GPU
 * on-demand node, cost $14.76: a negative saving, shown as such (its
 * saving on the hours used is positive).  Job 2 was planned at 0.25 h of
 * $3.06 and cost $0.50.  Waste = lost work + idle. */
static void test_report_savings_vs_plan(void **state)
{
	sqlite3 *db = fixture();
	struct finops_report rep;
	struct finops_filter f = { 0 };
	struct ledger_plan p = { .job_id = 1, .at_ns = T0, .provider = "aws",
				 .region = "us-east-1", .instance_type = "p3.2xlarge",
				 .work_ns = 3 * HOUR_NS, .nodes = 1,
				 .od_price = 3060000 };
	sr_micros planned = 0;
	struct sr_err e;
	json_t *j;

	(void)state;
	job_state(db, 1, "SUCCEEDED");
	job_state(db, 2, "SUCCEEDED");
	assert_int_equal(ledger_plan_record(db, &p, &planned, &e), 0);
	assert_int_equal(planned, 9180000);
	/* once per job: a second record is ignored */
	p.work_ns = 100 * HOUR_NS;
	assert_int_equal(ledger_plan_record(db, &p, NULL, &e), 0);
	p = (struct ledger_plan){ .job_id = 2, .at_ns = T0, .provider = "aws",
				  .region = "us-east-1", .work_ns = HOUR_NS / 4,
				  .nodes = 1, .od_price = 3060000 };
	assert_int_equal(ledger_plan_record(db, &p, NULL, &e), 0);
	p.nodes = 0;
	assert_int_equal(ledger_plan_record(db, &p, NULL, &e), -EINVAL);
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_JOB, &rep, &e)), 0);
	assert_int_equal(rep.ngroups, 2);
	assert_string_equal(rep.groups[0].key, "1");
	assert_int_equal(rep.groups[0].t.planned_od_cost, 9180000);
	assert_int_equal(rep.groups[0].t.savings_vs_plan, 9180000 - 14760000);
	assert_true(rep.groups[0].t.savings_vs_plan < 0);
	assert_true(rep.groups[0].t.savings_vs_list > 0);
	assert_string_equal(rep.groups[1].key, "2");
	assert_int_equal(rep.groups[1].t.planned_od_cost, 765000);
	assert_int_equal(rep.groups[1].t.savings_vs_plan, 765000 - 500000);
	assert_int_equal(rep.total.planned_od_cost, 9180000 + 765000);
	assert_int_equal(rep.total.savings_vs_plan,
			 9180000 + 765000 - rep.total.cost);
	assert_int_equal(rep.total.waste_cost, 230000 + 920000 + 500000);
	j = finops_totals_json(&rep.groups[0].t);
	assert_int_equal(json_integer_value(json_object_get(j,
			 "savings_vs_plan_micros")), 9180000 - 14760000);
	assert_true(json_real_value(json_object_get(j, "savings_vs_plan_usd")) < 0);
	json_decref(j);
	finops_report_free(&rep);

	/* the headline: on-demand for the node-hours used; a job that failed
	 * or was cancelled is no saving: all of its cost is waste */
	job_state(db, 2, "CANCELLED");
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_JOB,
							       &rep, &e)), 0);
	assert_int_equal(rep.groups[1].t.failed_cost, 500000);
	assert_int_equal(rep.groups[1].t.savings_vs_list, 0);
	assert_int_equal(rep.groups[1].t.plans, 0);
	assert_int_equal(rep.groups[1].t.waste_cost, 500000);
	assert_int_equal(rep.total.failed_jobs, 1);
	assert_int_equal(rep.total.plans, 1);
	assert_int_equal(rep.total.savings_vs_list, rep.groups[0].t.list_cost -
			 rep.groups[0].t.cost);
	assert_int_equal(rep.total.savings_vs_plan, 9180000 - 14760000);
	assert_int_equal(rep.total.waste_cost, 230000 + 920000 + 500000);
	finops_report_free(&rep);
	/* a running job's plan is no saving yet */
	job_state(db, 1, "RUNNING");
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_TOTAL,
							       &rep, &e)), 0);
	assert_int_equal(rep.total.plans, 0);
	assert_int_equal(rep.total.planned_od_cost, 0);
	finops_report_free(&rep);

	/* pools are booked only for the node-hours they served: job 1 ran
	 * 3 h in the aws pool and 1 h in the gcp one */
	job_state(db, 1, "SUCCEEDED");
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_POOL,
							       &rep, &e)), 0);
	assert_int_equal(rep.ngroups, 2);
	assert_string_equal(rep.groups[0].key, "aws/us-east-1/us-east-1a/p3.2xlarge");
	assert_int_equal(rep.groups[0].t.planned_od_cost, 9180000 / 4 * 3);
	assert_string_equal(rep.groups[1].key, "gcp/us-central1/-/a2-highgpu-4g");
	assert_int_equal(rep.groups[1].t.planned_od_cost, 9180000 / 4);
	assert_int_equal(rep.total.planned_od_cost, 9180000);
	finops_report_free(&rep);
	sqlite3_close(db);
}

static void test_report_groups(void **state)
{
	sqlite3 *db = fixture();
	struct finops_report rep;
	struct finops_filter f = { 0 };
	struct sr_err e;

	(void)state;
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_JOB, &rep, &e)), 0);
	assert_int_equal(rep.ngroups, 2);
	assert_string_equal(rep.groups[0].key, "1");
	assert_int_equal(rep.groups[0].t.cost, 2760000 + 12000000);
	assert_int_equal(rep.groups[0].t.preemptions, 1);
	assert_int_equal(rep.groups[0].t.idle_gpu_ns, HOUR_NS);
	assert_string_equal(rep.groups[1].key, "2");
	assert_int_equal(rep.groups[1].t.idle_cost, 500000);
	finops_report_free(&rep);

	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_CLOUD, &rep, &e)), 0);
	assert_int_equal(rep.ngroups, 2);
	assert_string_equal(rep.groups[0].key, "aws");
	assert_string_equal(rep.groups[1].key, "gcp");
	assert_int_equal(rep.groups[1].t.cost, 12000000);
	assert_int_equal(rep.groups[1].t.recoveries, 1);
	assert_int_equal(rep.groups[0].t.preemptions, 1);
	finops_report_free(&rep);

	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_POOL, &rep, &e)), 0);
	assert_int_equal(rep.ngroups, 2);
	assert_string_equal(rep.groups[0].key, "aws/us-east-1/us-east-1a/p3.2xlarge");
	assert_string_equal(rep.groups[1].key, "gcp/us-central1/-/a2-highgpu-4g");
	finops_report_free(&rep);

	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_DAY, &rep, &e)), 0);
	assert_int_equal(rep.ngroups, 2);
	assert_string_equal(rep.groups[0].key, "2026-11-18");
	assert_string_equal(rep.groups[1].key, "2026-11-19");
	assert_int_equal(rep.groups[1].t.cost, 12000000);
	finops_report_free(&rep);

	/* --since drops the first day's rows and events */
	f.since_ns = T0 + 3600 * SR_NS_PER_SEC;
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_TOTAL, &rep, &e)), 0);
	assert_int_equal(rep.total.rows, 1);
	assert_int_equal(rep.total.cost, 12000000);
	assert_int_equal(rep.total.preemptions, 0);
	finops_report_free(&rep);

	/* one job only */
	f.since_ns = 0;
	f.job_id = 2;
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &f, FINOPS_BY_TOTAL, &rep, &e)), 0);
	assert_int_equal(rep.total.rows, 1);
	assert_int_equal(rep.total.cost, 500000);
	finops_report_free(&rep);
	sqlite3_close(db);
}

static void test_report_json(void **state)
{
	sqlite3 *db = fixture();
	struct finops_report rep;
	struct sr_err e;
	json_t *j, *tot;

	(void)state;
	assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, NULL, FINOPS_BY_REGION, &rep, &e)), 0);
	j = finops_report_json(&rep, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "by")), "region");
	tot = json_object_get(j, "total");
	assert_int_equal(json_integer_value(json_object_get(tot, "cost_micros")),
			 rep.total.cost);
	assert_true(json_real_value(json_object_get(tot, "cost_usd")) > 15.25 &&
		    json_real_value(json_object_get(tot, "cost_usd")) < 15.27);
	assert_int_equal(json_array_size(json_object_get(j, "groups")), 2);
	json_decref(j);
	finops_report_free(&rep);
	assert_int_equal(finops_by_parse("day", &rep.by), 0);
	assert_int_equal(rep.by, FINOPS_BY_DAY);
	assert_int_equal(finops_by_parse("week", &rep.by), -EINVAL);
	sqlite3_close(db);
}

static void test_series_and_timeline(void **state)
{
	sqlite3 *db = fixture();
	struct sr_err e;
	json_t *j, *pts, *evs;

	(void)state;
	/* one bucket per day: two days of rows */
	assert_int_equal(ON_STORE(db, st_, finops_series_json(st_, NULL, 86400 * SR_NS_PER_SEC, 100,
					    &j, &e)), 0);
	pts = json_object_get(j, "points");
	assert_int_equal(json_array_size(pts), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(pts, 0),
							      "t")),
			    "2026-11-18T00:00:00Z");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(pts, 0),
							    "cost_micros")),
			 2760000 + 500000);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(pts, 1),
							    "cost_micros")),
			 12000000);
	json_decref(j);
	/* at most one bucket: the newest is kept */
	assert_int_equal(ON_STORE(db, st_, finops_series_json(st_, NULL, 86400 * SR_NS_PER_SEC, 1,
					    &j, &e)), 0);
	pts = json_object_get(j, "points");
	assert_int_equal(json_array_size(pts), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(pts, 0),
							    "cost_micros")),
			 12000000);
	json_decref(j);
	assert_int_equal(ON_STORE(db, st_, finops_series_json(st_, NULL, 0, 1, &j, &e)), -EINVAL);
	/* timeline: recovery (newer id) first, then the preemption */
	assert_int_equal(ON_STORE(db, st_, finops_timeline_json(st_, NULL, 10, &j, &e)), 0);
	evs = json_object_get(j, "events");
	assert_int_equal(json_array_size(evs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0),
							      "kind")), "recovery");
	assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 1),
							      "kind")), "preemption");
	assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 1),
							      "pool")),
			    "aws/us-east-1/us-east-1a/p3.2xlarge");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 1),
							    "lost_work_micros")),
			 230000);
	json_decref(j);
	sqlite3_close(db);
}

/* An empty ledger (a daemon before its first bill) gives empty reports,
 * not errors - and no NULL reaches qsort/bsearch (UBSan). */
static void test_empty_ledger(void **state)
{
	sqlite3 *db = open_db();
	struct finops_report rep;
	struct sr_err e;
	json_t *j;

	(void)state;
	for (int by = FINOPS_BY_TOTAL; by <= FINOPS_BY_DAY; by++) {
		assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, NULL, (enum finops_by)by, &rep,
						     &e)), 0);
		assert_int_equal(rep.ngroups, 0);
		assert_int_equal(rep.total.cost, 0);
		finops_report_free(&rep);
	}
	assert_int_equal(ON_STORE(db, st_, finops_series_json(st_, NULL, SR_NS_PER_SEC, 10, &j, &e)), 0);
	assert_int_equal(json_array_size(json_object_get(j, "points")), 0);
	json_decref(j);
	assert_int_equal(ON_STORE(db, st_, finops_timeline_json(st_, NULL, 10, &j, &e)), 0);
	json_decref(j);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrate_idempotent),
		cmocka_unit_test(test_append_computes_cost),
		cmocka_unit_test(test_append_only),
		cmocka_unit_test(test_append_validates),
		cmocka_unit_test(test_append_splits_at_month_end),
		cmocka_unit_test(test_pricing_names),
		cmocka_unit_test(test_report_total),
		cmocka_unit_test(test_report_groups),
		cmocka_unit_test(test_report_savings_vs_plan),
		cmocka_unit_test(test_report_json),
		cmocka_unit_test(test_series_and_timeline),
		cmocka_unit_test(test_empty_ledger),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
