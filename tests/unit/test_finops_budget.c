/*
 * test_finops_budget.c - team/project budgets: the month-end forecast
 * from spend, running jobs' plans and the run rate (figures computed by
 * hand), one record per crossing, and the launch check's refusal naming
 * the numbers.
 */
#include <sqlite3.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/timeutil.h"
#include "finops/budget.h"
#include "finops/ledger.h"
#include "store/store.h"

#define HOUR_NS (INT64_C(3600) * SR_NS_PER_SEC)
/* 2027-01-01T00:00:00Z; "now" is 2027-01-31T00:00:00Z: 24 h left */
#define J0 (INT64_C(1798761600) * SR_NS_PER_SEC)
#define NOW (J0 + 30 * 24 * HOUR_NS)

struct fx {
	sqlite3 *db;
	struct store *s, *tmp;
	struct finops_conf c;
};

static void exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err);
}

static void job(sqlite3 *db, int64_t id, const char *team, const char *state,
		const char *work_s)
{
	char sql[600];

	snprintf(sql, sizeof sql, "INSERT INTO jobs(id, name, state, spec_name, "
		 "spec_yaml, spec_json, num_nodes, max_restarts, created_ns, "
		 "updated_ns, state_since_ns, sim_start_s, team, project, work_s, "
		 "run_s) VALUES(%lld, 'j', '%s', 'j.yaml', 'run: x', '{}', 1, 3, 1, "
		 "1, 1, 0, '%s', 'p', %s, 7200)", (long long)id, state, team, work_s);
	exec(db, sql);
}

static void spend(sqlite3 *db, int64_t j, int64_t node, sr_micros price,
		  int64_t start, int64_t len)
{
	struct sr_err e;
	struct ledger_row r = {
		.provider = "local", .region = "local-1", .zone = "local-1a",
		.instance_type = "gpu.x", .accelerator = "A100", .gpus = 1,
		.pricing = LEDGER_DYNAMIC, .unit_price = price, .list_price = price,
		.reserved_price = LEDGER_PRICE_UNKNOWN, .job_id = j, .node_id = node,
		.busy = true, .util_permille = 900, .start_ns = start,
		.end_ns = start + len, .billed_ns = len,
	};

	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
}

/* Team ml: job 1 RUNNING with 10 h of work (2 h run) on a live $2/h
 * node; job 2 RUNNING without declared work at $1/h for the last hour;
 * job 3 SUCCEEDED, $100 earlier this month.  Team infra: job 4. */
static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct sr_err e;
	json_t *root = json_loads("{\"budgets\": ["
		"{\"team\": \"ml\", \"monthly\": \"150\", \"hard\": true},"
		"{\"team\": \"infra\", \"monthly\": \"10\"},"
		"{\"project\": \"p\", \"monthly\": \"1000\"}]}", 0, NULL);

	assert_int_equal(sqlite3_open(":memory:", &f->db), SQLITE_OK);
	assert_int_equal(ledger_migrate(f->db, &e), 0);
	job(f->db, 1, "ml", "RUNNING", "36000");
	job(f->db, 2, "ml", "RUNNING", "NULL");
	job(f->db, 3, "ml", "SUCCEEDED", "3600");
	job(f->db, 4, "infra", "RUNNING", "NULL");
	exec(f->db, "INSERT INTO nodes(id, job_id, rank, state, token_hash, provider,"
	     " cloud, region, zone, instance_type, accelerator, accel_count, spot,"
	     " pool, price_micros, list_micros, reserved_micros, created_ns,"
	     " boot_at_ns) VALUES(1, 1, 0, 'READY', x'00', 'local', 'local',"
	     " 'local-1', 'local-1a', 'gpu.x', 'A100', 1, 1, 0, 2000000, 2000000,"
	     " -1, 1, 1)");
	spend(f->db, 3, 3, 100000000, J0 + HOUR_NS, HOUR_NS);       /* $100 */
	spend(f->db, 1, 1, 2000000, NOW - 2 * HOUR_NS, 2 * HOUR_NS); /* $4 */
	spend(f->db, 2, 2, 1000000, NOW - HOUR_NS, HOUR_NS);         /* $1 */
	spend(f->db, 4, 4, 500000, NOW - HOUR_NS, HOUR_NS);          /* $0.50 */
	/* last month's spend counts for nothing */
	spend(f->db, 1, 9, 9000000, J0 - 2 * HOUR_NS, HOUR_NS);
	assert_int_equal(finops_conf_from_json(root, "finops.json", &f->c, &e), 0);
	json_decref(root);
	assert_int_equal(store_bridge(f->db, &f->s, &f->tmp, &e), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	store_close(f->tmp);
	sqlite3_close(f->db);
	finops_conf_free(&f->c);
	free(f);
	return 0;
}

static void test_forecast(void **state)
{
	struct fx *f = *state;
	struct finops_forecast fc;
	struct sr_err e;

	assert_int_equal(finops_budget_forecast(f->s, &f->c, &f->c.budgets[0], NOW,
						1.0, &fc, &e), 0);
	assert_string_equal(fc.month, "2027-01");
	assert_true(fc.spent == 105000000);        /* $100 + $4 + $1 */
	/* job 1: 8 h of work left, 24 h of month left, at $2/h */
	assert_true(fc.planned == 16000000);
	/* job 2: $1 in the last hour, 24 h left */
	assert_true(fc.run_rate_rest == 24000000);
	assert_true(fc.forecast == 145000000);
	assert_int_equal(fc.level, 80);              /* 145 of 150 */
	/* the local cloud's time scale: 8 cloud h fit in 24 wall s x 3600 */
	assert_int_equal(finops_budget_forecast(f->s, &f->c, &f->c.budgets[0], NOW,
						3600.0, &fc, &e), 0);
	assert_true(fc.planned == 16000000);
	/* infra: $0.50 + 24 x $0.50 = $12.50 of $10 */
	assert_int_equal(finops_budget_forecast(f->s, &f->c, &f->c.budgets[1], NOW,
						1.0, &fc, &e), 0);
	assert_true(fc.forecast == 12500000);
	assert_int_equal(fc.level, 100);
}

static void test_crossed_once(void **state)
{
	struct fx *f = *state;
	struct finops_forecast fc;
	struct sr_err e;

	assert_int_equal(finops_budget_forecast(f->s, &f->c, &f->c.budgets[0], NOW,
						1.0, &fc, &e), 0);
	assert_int_equal(finops_budget_crossed(f->s, &f->c.budgets[0], &fc, 80, NOW,
					       &e), 1);
	/* the next ticks: already alerted */
	for (int i = 0; i < 5; i++)
		assert_int_equal(finops_budget_crossed(f->s, &f->c.budgets[0], &fc, 80,
						       NOW + i, &e), 0);
	assert_int_equal(finops_budget_crossed(f->s, &f->c.budgets[0], &fc, 100, NOW,
					       &e), 1);
	/* the project of the same name is another budget */
	assert_int_equal(finops_budget_crossed(f->s, &f->c.budgets[2], &fc, 80, NOW,
					       &e), 1);
}

static void test_admit(void **state)
{
	struct fx *f = *state;
	struct sr_err e = { 0 };

	/* $145 forecast + $4 fits in $150 */
	assert_int_equal(finops_budget_admit(f->s, &f->c, "ml", "p", 4000000, "x",
					     NOW, 1.0, &e), 0);
	assert_int_equal(finops_budget_admit(f->s, &f->c, "ml", "p", 20000000,
					     "10.0 h x 1 node(s) at $2.00/h on-demand",
					     NOW, 1.0, &e), -EDQUOT);
	assert_non_null(strstr(e.msg, "team ml: hard budget $150.00 for 2027-01: "
			       "month-end forecast $145.00 + this job $20.00 (10.0 h "
			       "x 1 node(s) at $2.00/h on-demand) = $165.00, over by "
			       "$15.00"));
	/* infra's budget is soft: never refused */
	assert_int_equal(finops_budget_admit(f->s, &f->c, "infra", NULL, 50000000,
					     "x", NOW, 1.0, &e), 0);
	/* no label: no budget */
	assert_int_equal(finops_budget_admit(f->s, &f->c, "", "", 50000000, "x",
					     NOW, 1.0, &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_forecast, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crossed_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admit, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
