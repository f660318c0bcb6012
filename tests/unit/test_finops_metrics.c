/*
 * test_finops_metrics.c - the Prometheus exposition: values derived from
 * the ledger, naming conventions, histogram shape, and `promtool check
 * metrics` (Debian package prometheus) accepting the output.
 */
#include <sqlite3.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/timeutil.h"
#include "finops/ledger.h"
#include "finops/metrics.h"
#include "store/store.h"

#define HOUR_NS (INT64_C(3600) * SR_NS_PER_SEC)

static sqlite3 *fixture(void)
{
	sqlite3 *db;
	struct sr_err e;
	struct ledger_row r = {
		.provider = "aws", .region = "us-west-2", .zone = "us-west-2a",
		.instance_type = "p3.2xlarge", .accelerator = "V100", .gpus = 1,
		.pricing = LEDGER_DYNAMIC, .unit_price = 920000,
		.list_price = 3060000, .reserved_price = 1950000, .job_id = 3,
		.node_id = 9, .busy = true, .util_permille = 950,
		.start_ns = SR_NS_PER_SEC, .end_ns = 2 * SR_NS_PER_SEC,
		.billed_ns = HOUR_NS,
	};
	struct ledger_event ev = { .kind = LEDGER_EV_PREEMPTION, .job_id = 3,
				   .node_id = 9, .at_ns = 5, .value_ns = HOUR_NS / 2,
				   .unit_price = 920000 };
	static const int64_t stalls_ms[] = { 3, 12, 12, 80, 700, 40000 };
	/* job 3's plan: 3 h of declared work on one node at $3.06/h on-demand;
	 * job 4 has none */
	struct ledger_plan plan = { .job_id = 3, .at_ns = 1, .work_ns = 3 * HOUR_NS,
				    .nodes = 1, .od_price = 3060000 };

	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(ledger_migrate(db, &e), 0);
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	assert_int_equal(ledger_plan_record(db, &plan, NULL, &e), 0);
	r.start_ns += SR_NS_PER_SEC;
	r.end_ns += SR_NS_PER_SEC;
	r.busy = false; /* an idle hour */
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	r.job_id = 4;
	r.node_id = 10;
	r.gpus = 4;
	r.busy = true;
	r.pricing = LEDGER_STANDARD;
	r.unit_price = r.list_price;
	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	assert_int_equal(ledger_event_append(db, &ev, &e), 0);
	ev.kind = LEDGER_EV_RECOVERY;
	ev.value_ns = 95 * SR_NS_PER_SEC;
	assert_int_equal(ledger_event_append(db, &ev, &e), 0);
	ev.kind = LEDGER_EV_CKPT_STALL;
	for (size_t i = 0; i < sizeof stalls_ms / sizeof stalls_ms[0]; i++) {
		ev.value_ns = stalls_ms[i] * 1000000;
		assert_int_equal(ledger_event_append(db, &ev, &e), 0);
	}
	return db;
}

/* The metrics of db with the fixture's live nodes and jobs, or (ok or
 * failed not 0) with job `ok` ended SUCCEEDED and job `failed` FAILED. */
static char *render_as(sqlite3 *db, int64_t ok, int64_t failed)
{
	struct finops_live_node nodes[] = {
		{ 9, 3, "aws", "us-west-2", "us-west-2a", "p3.2xlarge", true, false,
		  920000 },
		{ 10, 4, "gcp", "us-c\"1", "z\\1", "a2", false, true, 12000000 },
	};
	struct finops_live_job jobs[] = {
		{ 3, "demo", "RUNNING", true, -42.5, 120, 100, 75.5 },
		{ 4, "other", "RUNNING", false, 0, -1, -1, NAN },
	};
	static const int64_t missed[] = { 3 };
	struct finops_live live = { nodes, 2, jobs, 2, missed, 1, &ok, ok != 0,
				    &failed, failed != 0 };
	struct store *s = NULL, *tmp = NULL;
	struct sr_err e;
	char *out = NULL;
	size_t len = 0;


	if (ok || failed)
		live.njobs = 0;
	assert_int_equal(store_bridge(db, &s, &tmp, &e), 0);
	assert_int_equal(finops_metrics_render(s, &live, &out, &len, &e), 0);
	store_close(tmp);
	assert_int_equal(strlen(out), len);
	return out;
}

static char *render(sqlite3 *db)
{
	return render_as(db, 0, 0);
}

static void expect_line(const char *text, const char *line)
{
	char buf[512];

	snprintf(buf, sizeof buf, "\n%s\n", line);
	if (!strstr(text, buf))
		fail_msg("missing line: %s\n---\n%s", line, text);
}

static void test_values(void **state)
{
	sqlite3 *db = fixture();
	char *m = render(db);

	(void)state;
	expect_line(m, "spotrun_job_cost_dollars_total{job_id=\"3\"} 1.840000");
	expect_line(m, "spotrun_job_cost_dollars_total{job_id=\"4\"} 3.060000");
	expect_line(m, "spotrun_job_on_demand_cost_dollars_total{job_id=\"3\"} 6.120000");
	/* savings (as spotrun cost's SAVED) against on-demand for the
	 * hours used: $6.12 - $1.84; job 4 ran on-demand: nothing saved.
	 * The plan (3 h x $3.06 = $9.18) is a saving only once the job
	 * SUCCEEDED (below) */
	expect_line(m, "spotrun_job_savings_dollars{job_id=\"3\"} 4.280000");
	expect_line(m, "spotrun_job_savings_dollars{job_id=\"4\"} 0.000000");
	expect_line(m, "spotrun_job_planned_on_demand_dollars{job_id=\"3\"} 9.180000");
	assert_null(strstr(m, "spotrun_job_savings_vs_plan_dollars{"));
	assert_null(strstr(m, "spotrun_job_savings_dollars_total"));
	expect_line(m, "spotrun_job_savings_vs_reserved_dollars{job_id=\"3\"} 2.060000");
	expect_line(m, "spotrun_job_savings_vs_reserved_dollars{job_id=\"4\"} -1.110000");
	expect_line(m, "spotrun_job_lost_work_dollars_total{job_id=\"3\"} 0.460000");
	expect_line(m, "spotrun_job_lost_work_seconds_total{job_id=\"3\"} 1800.000000000");
	expect_line(m, "spotrun_job_idle_gpu_seconds_total{job_id=\"3\"} 3600.000000000");
	expect_line(m, "spotrun_job_idle_gpu_seconds_total{job_id=\"4\"} 0.000000000");
	expect_line(m, "spotrun_job_idle_cost_dollars_total{job_id=\"3\"} 0.920000");
	expect_line(m, "spotrun_preemptions_total{job_id=\"3\"} 1");
	expect_line(m, "spotrun_preemptions_total{job_id=\"4\"} 0");
	expect_line(m, "spotrun_recoveries_total{job_id=\"3\"} 1");
	expect_line(m, "spotrun_recovery_downtime_seconds_total{job_id=\"3\"} 95.000000000");
	expect_line(m, "spotrun_cost_dollars_total 4.900000");
	expect_line(m, "spotrun_job_deadline_missed{job_id=\"3\"} 1");
	expect_line(m, "spotrun_deadlines_missed_total 1");
	expect_line(m, "spotrun_idle_gpu_seconds_total 3600.000000000");
	expect_line(m, "spotrun_node_hourly_price_dollars{node=\"9\",job_id=\"3\",cloud=\"aws\","
		       "region=\"us-west-2\",zone=\"us-west-2a\",instance_type=\"p3.2xlarge\","
		       "pricing=\"spot\"} 0.920000");
	/* label values are escaped; a committed pool's node says so */
	assert_non_null(strstr(m, "region=\"us-c\\\"1\",zone=\"z\\\\1\""));
	assert_non_null(strstr(m, "instance_type=\"a2\",pricing=\"committed\"} "
			       "12.000000"));
	expect_line(m, "spotrun_job_deadline_slack_seconds{job_id=\"3\"} -42.500");
	assert_null(strstr(m, "spotrun_job_deadline_slack_seconds{job_id=\"4\"}"));
	/* tier 3's recovery point: job 3 has one, job 4 none */
	expect_line(m, "spotrun_job_checkpoint_local_step{job_id=\"3\"} 120.000");
	expect_line(m, "spotrun_job_checkpoint_store_step{job_id=\"3\"} 100.000");
	expect_line(m, "spotrun_job_checkpoint_store_age_seconds{job_id=\"3\"} "
		    "75.500");
	assert_null(strstr(m, "spotrun_job_checkpoint_local_step{job_id=\"4\"}"));
	assert_null(strstr(m, "spotrun_job_checkpoint_store_age_seconds{job_id="
			   "\"4\"}"));
	/* histogram: cumulative buckets, +Inf = count, sum in seconds */
	expect_line(m, "spotrun_checkpoint_stall_seconds_bucket{le=\"0.001\"} 0");
	expect_line(m, "spotrun_checkpoint_stall_seconds_bucket{le=\"0.005\"} 1");
	expect_line(m, "spotrun_checkpoint_stall_seconds_bucket{le=\"0.025\"} 3");
	expect_line(m, "spotrun_checkpoint_stall_seconds_bucket{le=\"0.1\"} 4");
	expect_line(m, "spotrun_checkpoint_stall_seconds_bucket{le=\"1\"} 5");
	expect_line(m, "spotrun_checkpoint_stall_seconds_bucket{le=\"30\"} 5");
	expect_line(m, "spotrun_checkpoint_stall_seconds_bucket{le=\"+Inf\"} 6");
	expect_line(m, "spotrun_checkpoint_stall_seconds_count 6");
	expect_line(m, "spotrun_checkpoint_stall_seconds_sum 40.807000000");
	free(m);
	sqlite3_close(db);
}

/* Conventions: spotrun_ prefix, counters end in _total, every sample's
 * family has HELP and TYPE first, no non-base units. */
/* No failed job adds to savings; a plan is a saving once the job
 * SUCCEEDED. */
static void test_savings_of_ended_jobs(void **state)
{
	sqlite3 *db = fixture();
	char *m;

	(void)state;
	m = render_as(db, 4, 3);
	expect_line(m, "spotrun_job_savings_dollars{job_id=\"3\"} 0.000000");
	assert_null(strstr(m, "spotrun_job_savings_vs_plan_dollars{"));
	free(m);
	m = render_as(db, 3, 4);
	expect_line(m, "spotrun_job_savings_dollars{job_id=\"3\"} 4.280000");
	expect_line(m, "spotrun_job_savings_vs_plan_dollars{job_id=\"3\"} 7.340000");
	assert_null(strstr(m, "spotrun_job_savings_vs_plan_dollars{job_id=\"4\"}"));
	free(m);
	sqlite3_close(db);
}

static void test_conventions(void **state)
{
	sqlite3 *db = fixture();
	char *m = render(db), *save = NULL, *line;
	char type_of[64][96];
	char types[64][16];
	int nfam = 0;

	(void)state;
	for (line = strtok_r(m, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[96];
		int fam = -1;

		if (!strncmp(line, "# TYPE ", 7)) {
			assert_true(nfam < 64);
			assert_int_equal(sscanf(line + 7, "%95s %15s", type_of[nfam],
						types[nfam]), 2);
			assert_int_equal(strncmp(type_of[nfam], "spotrun_", 8), 0);
			if (!strcmp(types[nfam], "counter"))
				assert_non_null(strstr(type_of[nfam], "_total"));
			for (const char *bad = "_ms_|_milliseconds|_hours|_minutes|_cents"; bad;) {
				char tok[32];
				const char *bar = strchr(bad, '|');
				size_t l = bar ? (size_t)(bar - bad) : strlen(bad);

				memcpy(tok, bad, l);
				tok[l] = '\0';
				assert_null(strstr(type_of[nfam], tok));
				bad = bar ? bar + 1 : NULL;
			}
			nfam++;
			continue;
		}
		if (line[0] == '#')
			continue;
		assert_int_equal(sscanf(line, "%95[a-z_]", name), 1);
		for (int i = 0; i < nfam; i++) {
			size_t l = strlen(type_of[i]);

			if (!strncmp(name, type_of[i], l) &&
			    (name[l] == '\0' || !strcmp(name + l, "_bucket") ||
			     !strcmp(name + l, "_sum") || !strcmp(name + l, "_count")))
				fam = i;
		}
		if (fam < 0)
			fail_msg("sample before its TYPE: %s", line);
	}
	assert_true(nfam >= 14);
	free(m);
	sqlite3_close(db);
}

static void test_promtool(void **state)
{
	sqlite3 *db = fixture();
	char *m = render(db), path[] = "/tmp/metrics-XXXXXX", cmd[256], out[4096];
	int fd = mkstemp(path), st;
	size_t n;
	FILE *p;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, m, strlen(m)), (ssize_t)strlen(m));
	close(fd);
	if (system("command -v promtool >/dev/null 2>&1") != 0)
		fail_msg("promtool not installed (scripts/install-deps adds prometheus)");
	snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	st = pclose(p);
	unlink(path);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || n > 0)
		fail_msg("promtool check metrics: %s", out);
	free(m);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_savings_of_ended_jobs),
		cmocka_unit_test(test_conventions),
		cmocka_unit_test(test_promtool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
