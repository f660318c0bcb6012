/* Unit tests: a real-cloud timing profile on the local cloud (ctl_config
 * .timing, cloud/timing.h): each node's boot is a draw of the profile in
 * cloud seconds over the time scale, the rest of the daemon unchanged. */
#include "ctl_fixture.h"
#include "ctl_db_raw.h"

#include "cloud/timing.h"

/* boots of 1-2 real s at this scale: long enough that no node starts
 * while the test reads the rows, short enough to be a draw */
static const struct cloud_timing prof = {
	.name = "t", .notice_s = 3600, .boot_min_s = 36000,
	.boot_mode_s = 45000, .boot_max_s = 72000,
};
static const char job2[] =
	"name: t\nnum_nodes: 2\nresources:\n  accelerators: V100:1\n"
	"  use_spot: true\nrun: echo hi\nspotrun:\n  deadline: 100h\n"
	"  work: 2h\n";

static int setup_timing(void **state)
{
	struct ctl_config cfg;
	struct sr_err e = { 0 };

	(void)state;
	sr_log_set_level(SR_LOG_WARN);
	snprintf(dir, sizeof dir, "/tmp/sr-ctltiming-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	ctl_config_defaults(&cfg);
	cfg.state_dir = dir;
	cfg.listen_port = 0;
	cfg.data_dir = "data";
	cfg.agent_path = "/bin/true";
	cfg.tick_ms = 20;
	cfg.heartbeat_timeout_ms = 60000;
	cfg.boot_timeout_ms = 60000;
	cfg.lease_ms = 60000;
	cfg.time_scale = 36000;
	cfg.timing = &prof;
	cfg.timing_seed = 7;
	if (ctl_start(&cfg, &ctl, &e)) {
		fprintf(stderr, "ctl_start: %s\n", e.msg);
		return -1;
	}
	snprintf(base, sizeof base, "http://127.0.0.1:%d", ctl_port(ctl));
	return 0;
}

/* Every node of a new gang boots after a draw of the profile: between
 * its min and max over the scale, and not all the same. */
static void test_boots_are_drawn(void **state)
{
	char path[128];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct sr_err e = { 0 };
	int64_t id = create_job(job2), d[2] = { 0, 0 };
	int n = 0;

	(void)state;
	json_decref(wait_state(id, "PROVISIONING"));
	snprintf(path, sizeof path, "%s/spotrun.db", dir);
	assert_int_equal(ctl_db_open(path, &db, &e), 0);
	assert_int_equal(ctl_db_prepare(db, "SELECT boot_at_ns - created_ns "
					"FROM nodes ORDER BY rank", &st, &e), 0);
	while (sqlite3_step(st) == SQLITE_ROW && n < 2)
		d[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
	assert_int_equal(n, 2);
	for (int i = 0; i < 2; i++) {
		if (d[i] < INT64_C(1000000000) || d[i] > INT64_C(2000000000))
			fail_msg("rank %d boots %lld ns after its creation, not a "
				 "draw of 1-2 s", i, (long long)d[i]);
	}
	assert_true(d[0] != d[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_boots_are_drawn,
						setup_timing, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
