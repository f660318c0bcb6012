/*
 * test_finops_teams.c - who pays: the report grouped by a job's team,
 * project and cost centre labels (issue 34), the same labels on /metrics
 * (spotrun_job_info, spotrun_team_cost_dollars_total) and in the FOCUS
 * Tags; figures checked against hand-computed sums.
 */
#include <sqlite3.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/timeutil.h"
#include "finops/focus.h"
#include "finops/ledger.h"
#include "finops/metrics.h"
#include "finops/report.h"
#include "store/store.h"

#define HOUR_NS (INT64_C(3600) * SR_NS_PER_SEC)

struct fx {
	sqlite3 *db;
	struct store *s, *tmp;
};

static void job(sqlite3 *db, int64_t id, const char *team, const char *project,
		const char *cc)
{
	char sql[640];

	snprintf(sql, sizeof sql, "INSERT INTO jobs(id, name, state, spec_name, "
		 "spec_yaml, spec_json, num_nodes, max_restarts, created_ns, "
		 "updated_ns, state_since_ns, sim_start_s, team, project, "
		 "cost_center) VALUES(%lld, 'j', 'RUNNING', 'j.yaml', 'run: x', "
		 "'{}', 1, 3, 1, 1, 1, 0, %s%s%s, %s%s%s, %s%s%s)", (long long)id,
		 team ? "'" : "", team ? team : "NULL", team ? "'" : "",
		 project ? "'" : "", project ? project : "NULL", project ? "'" : "",
		 cc ? "'" : "", cc ? cc : "NULL", cc ? "'" : "");
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
}

/* One hour of node `node` (gpus GPUs at $price/h) for job j (0: none). */
static void hour(sqlite3 *db, int64_t j, int64_t node, int gpus,
		 sr_micros price, int64_t at_h)
{
	struct sr_err e;
	struct ledger_row r = {
		.provider = "local", .region = "local-1", .zone = "local-1a",
		.instance_type = "gpu.x", .accelerator = "A100", .gpus = gpus,
		.pricing = LEDGER_DYNAMIC, .unit_price = price,
		.list_price = 3 * price, .reserved_price = LEDGER_PRICE_UNKNOWN,
		.job_id = j, .node_id = node, .busy = true, .util_permille = 900,
		.start_ns = 1798761600 * SR_NS_PER_SEC + at_h * HOUR_NS,
		.billed_ns = HOUR_NS,
	};

	r.end_ns = r.start_ns + HOUR_NS;
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
}

/* jobs 1, 2: team ml (projects a, b); job 3: team infra; job 4: no
 * labels; node 9 served no job. */
static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct sr_err e;

	assert_int_equal(sqlite3_open(":memory:", &f->db), SQLITE_OK);
	assert_int_equal(ledger_migrate(f->db, &e), 0);
	job(f->db, 1, "ml", "a", "CC-1");
	job(f->db, 2, "ml", "b", "CC-1");
	job(f->db, 3, "infra", "a", "CC-2");
	job(f->db, 4, NULL, NULL, NULL);
	hour(f->db, 1, 1, 8, 10000000, 0);  /* $10 */
	hour(f->db, 1, 1, 8, 10000000, 1);  /* $10 */
	hour(f->db, 2, 2, 1, 1500000, 0);   /* $1.50 */
	hour(f->db, 3, 3, 4, 4000000, 0);   /* $4 */
	hour(f->db, 4, 4, 1, 700000, 0);    /* $0.70 */
	hour(f->db, 0, 9, 1, 300000, 0);    /* $0.30, no job */
	assert_int_equal(store_bridge(f->db, &f->s, &f->tmp, &e), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	store_close(f->tmp);
	sqlite3_close(f->db);
	free(f);
	return 0;
}

static sr_micros cost_of(const struct finops_report *r, const char *key)
{
	const struct finops_group *g = finops_report_group(r, key);

	if (!g)
		fail_msg("no group '%s'", key);
	return g->t.cost;
}

static void test_report_by_label(void **state)
{
	struct fx *f = *state;
	struct finops_report r;
	struct sr_err e;

	assert_int_equal(finops_report_build(f->s, NULL, FINOPS_BY_TEAM, &r, &e), 0);
	assert_int_equal(r.ngroups, 3);
	assert_true(cost_of(&r, "ml") == 21500000);
	assert_true(cost_of(&r, "infra") == 4000000);
	/* job 4 (no labels) and node 9 (no job) */
	assert_true(cost_of(&r, FINOPS_UNASSIGNED) == 1000000);
	assert_true(r.total.cost == 26500000);
	assert_true(finops_report_group(&r, "ml")->t.gpu_ns == 17 * HOUR_NS);
	finops_report_free(&r);

	assert_int_equal(finops_report_build(f->s, NULL, FINOPS_BY_PROJECT, &r, &e), 0);
	assert_true(cost_of(&r, "a") == 24000000);
	assert_true(cost_of(&r, "b") == 1500000);
	finops_report_free(&r);

	assert_int_equal(finops_report_build(f->s, NULL, FINOPS_BY_COST_CENTER, &r,
					     &e), 0);
	assert_true(cost_of(&r, "CC-1") == 21500000);
	assert_true(cost_of(&r, "CC-2") == 4000000);
	finops_report_free(&r);

	enum finops_by by;

	assert_int_equal(finops_by_parse("cost_center", &by), 0);
	assert_int_equal(by, FINOPS_BY_COST_CENTER);
	assert_string_equal(finops_by_name(FINOPS_BY_TEAM), "team");
}

static void test_metrics_labels(void **state)
{
	struct fx *f = *state;
	struct sr_err e;
	char *m = NULL;
	size_t len;

	assert_int_equal(finops_metrics_render(f->s, NULL, &m, &len, &e), 0);
	assert_non_null(strstr(m, "\nspotrun_job_info{job_id=\"1\",team=\"ml\","
			       "project=\"a\",cost_center=\"CC-1\"} 1\n"));
	assert_non_null(strstr(m, "\nspotrun_job_info{job_id=\"4\",team=\"\","
			       "project=\"\",cost_center=\"\"} 1\n"));
	assert_non_null(strstr(m, "\nspotrun_team_cost_dollars_total{team=\"ml\"}"
			       " 21.500000\n"));
	assert_non_null(strstr(m, "\nspotrun_team_cost_dollars_total{team="
			       "\"unassigned\"} 0.700000\n"));
	assert_non_null(strstr(m, "\nspotrun_project_cost_dollars_total{project="
			       "\"a\"} 24.000000\n"));
	assert_non_null(strstr(m, "\nspotrun_cost_center_cost_dollars_total{"
			       "cost_center=\"CC-2\"} 4.000000\n"));
	free(m);
}

static void test_focus_tags(void **state)
{
	struct fx *f = *state;
	struct finops_filter flt = { .job_id = 3 };
	struct sr_err e;
	char *buf = NULL;
	size_t len = 0, n = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_int_equal(finops_focus_write(f->s, &flt, NULL, out, &n, &e), 0);
	fclose(out);
	assert_int_equal(n, 1);
	assert_non_null(strstr(buf, "\"{\"\"spotrun/job-id\"\":3,\"\"spotrun/node-id"
			       "\"\":3,\"\"spotrun/team\"\":\"\"infra\"\",\"\"spotrun/"
			       "project\"\":\"\"a\"\",\"\"spotrun/cost-center\"\":"
			       "\"\"CC-2\"\"}\""));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_report_by_label, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_focus_tags, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
