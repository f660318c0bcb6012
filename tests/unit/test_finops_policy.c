/*
 * test_finops_policy.c - busy/idle, autostop and budget decisions.
 */
#include <sqlite3.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/timeutil.h"
#include "finops/ledger.h"
#include "finops/policy.h"
#include "market/jobspec.h"

#define MIN_NS (60 * SR_NS_PER_SEC)

static json_t *js(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	assert_non_null(j);
	return j;
}

static void test_parse(void **state)
{
	struct finops_policy p;
	struct sr_err e;
	json_t *j;

	(void)state;
	assert_int_equal(finops_policy_parse(NULL, &p, &e), 0);
	assert_int_equal(p.autostop_idle_ns, 0);
	assert_int_equal(p.idle_util_permille, 100);
	assert_int_equal(p.alert_at_permille, 800);
	j = js("{\"autostop\":{\"idle_minutes\":30},\"idle_util_threshold\":0.05,"
	       "\"budget\":{\"max_cost\":\"$50\",\"max_hourly_cost\":4.5,"
	       "\"alert_at\":0.9,\"on_exceed\":\"stop\"}}");
	assert_int_equal(finops_policy_parse(j, &p, &e), 0);
	assert_int_equal(p.autostop_idle_ns, 30 * MIN_NS);
	assert_int_equal(p.idle_util_permille, 50);
	assert_int_equal(p.max_cost, 50000000);
	assert_int_equal(p.max_hourly_cost, 4500000);
	assert_int_equal(p.alert_at_permille, 900);
	assert_true(p.stop_on_exceed);
	json_decref(j);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *json, *needle;
	} bad[] = {
		{ "{\"autostop\":{\"idle_minutes\":0}}", "idle_minutes" },
		{ "{\"autostop\":{\"idle_mins\":5}}", "idle_mins" },
		{ "{\"autostop\":5}", "autostop" },
		{ "{\"budget\":{\"max_cost\":\"fifty\"}}", "max_cost" },
		{ "{\"budget\":{\"max_cost\":\"-$5\"}}", "max_cost" },
		{ "{\"budget\":{\"max_cost\":[1]}}", "max_cost" },
		{ "{\"budget\":{\"on_exceed\":\"panic\"}}", "on_exceed" },
		{ "{\"budget\":{\"alert_at\":1.5}}", "alert_at" },
		{ "{\"budget\":{\"max_spend\":1}}", "max_spend" },
		{ "{\"idle_util_threshold\":-0.1}", "idle_util_threshold" },
		{ "[1]", "spotrun" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct finops_policy p;
		struct sr_err e;
		json_t *j = js(bad[i].json);

		sr_err_clear(&e);
		assert_int_equal(finops_policy_parse(j, &p, &e), -SR_EPARSE);
		if (!strstr(e.msg, bad[i].needle))
			fail_msg("%s: message '%s' lacks '%s'", bad[i].json, e.msg,
				 bad[i].needle);
		/* a failed parse leaves the defaults */
		assert_int_equal(p.max_cost, 0);
		json_decref(j);
	}
}

static void test_from_jobspec(void **state)
{
	static const char yaml[] =
		"name: t\n"
		"resources: {accelerators: V100:1, use_spot: true}\n"
		"run: echo hi\n"
		"spotrun:\n"
		"  max_cost: 50\n"
		"  max_hourly_cost: 4.5\n"
		"  autostop: 30m\n";
	struct jobspec js;
	struct finops_policy p;
	struct sr_err e;

	(void)state;
	if (jobspec_parse_buf(yaml, strlen(yaml), "t.yaml", &js, &e))
		fail_msg("%s", e.msg);
	finops_policy_from_jobspec(&js, &p);
	assert_int_equal(p.max_cost, 50000000);
	assert_int_equal(p.max_hourly_cost, 4500000);
	assert_int_equal(p.autostop_idle_ns, 30 * MIN_NS);
	assert_true(p.stop_on_exceed);
	assert_int_equal(p.alert_at_permille, 800);
	jobspec_free(&js);
}

static void test_busy(void **state)
{
	(void)state;
	assert_false(finops_node_is_busy(false, 990, 100));
	assert_true(finops_node_is_busy(true, 100, 100));
	assert_false(finops_node_is_busy(true, 99, 100));
	assert_true(finops_node_is_busy(true, -1, 100)); /* unknown util */
	/* where the idle comes from, in words that name the threshold */
	assert_string_equal(finops_idle_src_name(FINOPS_IDLE_GPU), "gpu");
	assert_string_equal(finops_idle_src_name(FINOPS_IDLE_PROGRESS), "progress");
	assert_string_equal(finops_idle_src_name(FINOPS_IDLE_NONE), "none");
	assert_non_null(strstr(finops_idle_rule(FINOPS_IDLE_GPU), "10% GPU"));
	assert_non_null(strstr(finops_idle_rule(FINOPS_IDLE_PROGRESS),
			       "60 s without a training step"));
	assert_non_null(strstr(finops_idle_rule(FINOPS_IDLE_NONE), "busy while"));
}

static void test_autostop(void **state)
{
	struct finops_policy p;

	(void)state;
	finops_policy_default(&p);
	assert_false(finops_autostop_due(&p, 0, 1000 * MIN_NS)); /* off */
	p.autostop_idle_ns = 10 * MIN_NS;
	assert_false(finops_autostop_due(&p, -1, 1000 * MIN_NS)); /* not idle */
	assert_false(finops_autostop_due(&p, 100 * MIN_NS, 109 * MIN_NS));
	assert_true(finops_autostop_due(&p, 100 * MIN_NS, 110 * MIN_NS));
	assert_false(finops_autostop_due(NULL, 0, 1000 * MIN_NS));
}

static void bill(sqlite3 *db, int64_t node, int64_t start_min, bool busy)
{
	struct ledger_row r = {
		.provider = "local", .region = "r1", .instance_type = "t",
		.gpus = 1, .pricing = LEDGER_DYNAMIC, .unit_price = 1000000,
		.list_price = 3000000, .reserved_price = LEDGER_PRICE_UNKNOWN,
		.job_id = 1, .node_id = node, .busy = busy, .util_permille = -1,
		.start_ns = start_min * MIN_NS, .end_ns = (start_min + 1) * MIN_NS,
		.billed_ns = MIN_NS,
	};
	struct sr_err e;

	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
}

static void test_idle_since_from_ledger(void **state)
{
	struct store *s = NULL;
	sqlite3 *db;
	struct sr_err e;
	struct finops_policy p;
	int64_t since;

	(void)state;
	assert_int_equal(store_open(":memory:", 0, &s, &e), 0);
	assert_int_equal(store_migrate(s, &e), 0);
	db = store_sqlite_handle(s);
	assert_int_equal(finops_idle_since(s, 5, &since, &e), 0);
	assert_int_equal(since, -1); /* no rows */
	bill(db, 5, 0, false);
	bill(db, 5, 1, false);
	assert_int_equal(finops_idle_since(s, 5, &since, &e), 0);
	assert_int_equal(since, 0); /* never busy: idle since it started */
	bill(db, 5, 2, true);
	assert_int_equal(finops_idle_since(s, 5, &since, &e), 0);
	assert_int_equal(since, -1); /* busy now */
	for (int m = 3; m < 20; m++)
		bill(db, 5, m, false);
	assert_int_equal(finops_idle_since(s, 5, &since, &e), 0);
	assert_int_equal(since, 3 * MIN_NS);
	finops_policy_default(&p);
	p.autostop_idle_ns = 15 * MIN_NS;
	assert_false(finops_autostop_due(&p, since, 17 * MIN_NS));
	assert_true(finops_autostop_due(&p, since, 18 * MIN_NS));
	store_close(s);
}

static void test_budget(void **state)
{
	struct finops_policy p;
	char why[160];

	(void)state;
	finops_policy_default(&p);
	assert_int_equal(finops_budget_decide(&p, INT64_C(1) << 50, 999999999,
					      why, sizeof why), FINOPS_BUDGET_OK);
	p.max_cost = 50000000;
	assert_int_equal(finops_budget_decide(&p, 39999999, 0, why, sizeof why),
			 FINOPS_BUDGET_OK);
	assert_string_equal(why, "");
	assert_int_equal(finops_budget_decide(&p, 40000000, 0, why, sizeof why),
			 FINOPS_BUDGET_ALERT);
	assert_string_equal(why, "cost $40.000000 reached 80% of max_cost $50.000000");
	assert_int_equal(finops_budget_decide(&p, 50000000, 0, why, sizeof why),
			 FINOPS_BUDGET_EXCEEDED);
	p.stop_on_exceed = true;
	assert_int_equal(finops_budget_decide(&p, 50000001, 0, why, sizeof why),
			 FINOPS_BUDGET_STOP);
	/* the hourly limit: the worst verdict wins and explains itself */
	p.max_hourly_cost = 4000000;
	assert_int_equal(finops_budget_decide(&p, 41000000, 4000000, why, sizeof why),
			 FINOPS_BUDGET_STOP);
	assert_non_null(strstr(why, "max_hourly_cost"));
	assert_int_equal(finops_budget_decide(&p, 0, 3300000, why, sizeof why),
			 FINOPS_BUDGET_ALERT);
	assert_string_equal(finops_budget_verdict_name(FINOPS_BUDGET_STOP), "stop");
}

static void test_job_spend(void **state)
{
	struct store *s = NULL;
	sqlite3 *db;
	struct sr_err e;
	sr_micros spent, hourly;

	(void)state;
	assert_int_equal(store_open(":memory:", 0, &s, &e), 0);
	assert_int_equal(store_migrate(s, &e), 0);
	db = store_sqlite_handle(s);
	for (int m = 0; m < 10; m++)
		bill(db, 5, m, true);
	bill(db, 6, 8, true);  /* second node, live */
	bill(db, 7, 1, true);  /* third node, gone long ago */
	assert_int_equal(finops_job_spend(s, 1, 10 * MIN_NS, 2 * MIN_NS, &spent,
					  &hourly, &e), 0);
	assert_int_equal(spent, 12 * 16667); /* $1/h for 1 min, rounded per row */
	assert_int_equal(hourly, 2000000); /* nodes 5 and 6 */
	assert_int_equal(finops_job_spend(s, 2, 10 * MIN_NS, 2 * MIN_NS, &spent,
					  &hourly, &e), 0);
	assert_int_equal(spent, 0);
	assert_int_equal(hourly, 0);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_from_jobspec),
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_autostop),
		cmocka_unit_test(test_idle_since_from_ledger),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_job_spend),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
