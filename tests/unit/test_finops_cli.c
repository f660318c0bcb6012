/*
 * test_finops_cli.c - `spotrun cost` end to end on a ledger database,
 * through a spotrund started on it (the CLI asks the API): the --json
 * totals equal the column sums of the --focus export, grouped output adds
 * up to the total, usage errors exit 2, and a stopped daemon is an error
 * that says how to start it.
 *
 * Runs the spotrun binary of the build under test ($SPOTRUN_BUILD/bin).
 */
#include <sqlite3.h>
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
#include <jansson.h>

#include "common/fsutil.h"
#include "finops_fixture.h"

static char g_dir[64];
static char g_bin[1024];

/* `spotrun daemon start|stop` on g_dir, on an ephemeral 127.0.0.1 port. */
static int daemon_ctl(const char *verb)
{
	char cmd[3000], data[1024] = "";

	if (!strcmp(verb, "start") && realpath("data", data))
		snprintf(cmd, sizeof cmd, "SPOTRUN_STATE_DIR='%s' '%s' daemon start "
			 "--listen 127.0.0.1:0 -- --data-dir '%s' >/dev/null 2>&1",
			 g_dir, g_bin, data);
	else
		snprintf(cmd, sizeof cmd, "SPOTRUN_STATE_DIR='%s' '%s' daemon %s "
			 ">/dev/null 2>&1", g_dir, g_bin, verb);
	return system(cmd);
}

static int setup(void **state)
{
	const char *b = getenv("SPOTRUN_BUILD");
	char path[128];
	sqlite3 *db;

	(void)state;
	snprintf(g_bin, sizeof g_bin, "%s/bin/spotrun", b ? b : "build");
	snprintf(g_dir, sizeof g_dir, "/tmp/finops-cli-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(path, sizeof path, "%s/spotrun.db", g_dir);
	db = fixture_at(path);
	sqlite3_close(db);
	return daemon_ctl("start") == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	daemon_ctl("stop");
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Run spotrun with args; return exit code, stdout in *out (malloc'd). */
static int run(char **out, const char *args)
{
	char cmd[2048], buf[4096];
	size_t len = 0, cap = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", g_bin, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	*out = NULL;
	for (;;) {
		size_t n = fread(buf, 1, sizeof buf, p);

		if (n == 0)
			break;
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			*out = realloc(*out, cap);
			assert_non_null(*out);
		}
		memcpy(*out + len, buf, n);
		len += n;
	}
	if (!*out)
		*out = calloc(1, 1);
	(*out)[len] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static json_t *run_json(const char *args)
{
	char *out;
	json_t *j;

	assert_int_equal(run(&out, args), 0);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	free(out);
	return j;
}

static int64_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static void check_json_equals_focus(const char *filter)
{
	char args[512], path[128], *out, *csvtext;
	struct csv c;
	json_t *j, *tot;
	int64_t billed = 0, list = 0, idle = 0, rcost = 0;

	snprintf(path, sizeof path, "%s/focus.csv", g_dir);
	snprintf(args, sizeof args, "cost --state-dir %s %s --json", g_dir, filter);
	j = run_json(args);
	snprintf(args, sizeof args, "cost --state-dir %s %s --focus %s", g_dir,
		 filter, path);
	assert_int_equal(run(&out, args), 0);
	free(out);
	assert_int_equal(sr_fs_read_file(path, 1 << 24, &csvtext, NULL, NULL), 0);
	csv_parse(csvtext, &c);
	for (int r = 1; r < c.nrows; r++) {
		billed += micros(val(&c, r, "BilledCost"));
		list += micros(val(&c, r, "ListCost"));
		idle += micros(val(&c, r, "x_IdleCost"));
		if (*val(&c, r, "x_ReservedCost"))
			rcost += micros(val(&c, r, "x_ReservedCost"));
	}
	tot = json_object_get(j, "total");
	assert_true(c.nrows > 1);
	assert_int_equal(jint(tot, "rows"), c.nrows - 1);
	assert_int_equal(jint(tot, "cost_micros"), billed);
	assert_int_equal(jint(tot, "list_cost_micros"), list);
	assert_int_equal(jint(tot, "savings_vs_list_micros"), list - billed);
	assert_int_equal(jint(tot, "idle_cost_micros"), idle);
	assert_int_equal(jint(tot, "reserved_cost_micros"), rcost);
	csv_free(&c);
	free(csvtext);
	json_decref(j);
}

static void test_json_totals_equal_focus_sums(void **state)
{
	char filter[96], when[40];

	(void)state;
	check_json_equals_focus("");
	check_json_equals_focus("--job 5");
	sr_time_format_rfc3339(T0 + 20 * SR_NS_PER_SEC, 0, when, sizeof when);
	snprintf(filter, sizeof filter, "--since %s", when);
	check_json_equals_focus(filter);
	check_json_equals_focus("--since 2026-12-01");
}

static void test_groups_add_up(void **state)
{
	static const char *const bys[] = { "job", "cloud", "region", "pool", "day" };

	(void)state;
	for (size_t i = 0; i < sizeof bys / sizeof bys[0]; i++) {
		char args[256];
		json_t *j, *g;
		size_t k;
		int64_t sum = 0, idle = 0;

		snprintf(args, sizeof args, "cost --state-dir %s --by %s --json",
			 g_dir, bys[i]);
		j = run_json(args);
		assert_string_equal(json_string_value(json_object_get(j, "by")), bys[i]);
		json_array_foreach(json_object_get(j, "groups"), k, g) {
			sum += jint(g, "cost_micros");
			idle += jint(g, "idle_cost_micros");
		}
		assert_int_equal(sum, jint(json_object_get(j, "total"), "cost_micros"));
		assert_int_equal(idle, jint(json_object_get(j, "total"),
					    "idle_cost_micros"));
		json_decref(j);
	}
}

static void test_table_and_errors(void **state)
{
	char args[256], *out;

	(void)state;
	snprintf(args, sizeof args, "cost --state-dir %s --by day", g_dir);
	assert_int_equal(run(&out, args), 0);
	assert_non_null(strstr(out, "2026-11-30"));
	assert_non_null(strstr(out, "2026-12-01"));
	assert_non_null(strstr(out, "TOTAL"));
	free(out);
	assert_int_equal(run(&out, "cost --help"), 0);
	assert_non_null(strstr(out, "--focus"));
	free(out);
	assert_int_equal(run(&out, "cost --by week"), 2);
	free(out);
	assert_int_equal(run(&out, "cost --job 0"), 2);
	free(out);
	/* a name is looked up in the jobs table */
	snprintf(args, sizeof args, "cost --state-dir %s --job no-such-job", g_dir);
	assert_int_equal(run(&out, args), 1);
	free(out);
	assert_int_equal(run(&out, "cost --since yesterdayish"), 2);
	free(out);
	assert_int_equal(run(&out, "cost --focus x.csv --json"), 2);
	free(out);
	assert_int_equal(run(&out, "cost --state-dir /nonexistent/dir"), 1);
	free(out);
}

/* With the daemon stopped the command fails and says what to start. */
static void test_daemon_down(void **state)
{
	char cmd[1200], line[512], all[4096] = "";
	FILE *p;
	int st;

	(void)state;
	assert_int_equal(daemon_ctl("stop"), 0);
	snprintf(cmd, sizeof cmd, "'%s' cost --state-dir %s 2>&1", g_bin, g_dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof line, p))
		strncat(all, line, sizeof all - strlen(all) - 1);
	st = pclose(p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	assert_non_null(strstr(all, "cannot reach spotrund"));
	assert_non_null(strstr(all, "spotrun daemon start"));
	assert_int_equal(daemon_ctl("start"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_totals_equal_focus_sums),
		cmocka_unit_test(test_groups_add_up),
		cmocka_unit_test(test_table_and_errors),
		cmocka_unit_test(test_daemon_down),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
