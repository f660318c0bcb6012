/*
 * test_faultinj.c - SQLite-style fault injection (issue 10): the N-th
 * malloc, write, fsync, sqlite3_step or HTTP transfer fails, for every N
 * over
 *   1. one checkpoint save + commit (engine open, register, save, wait,
 *      close): each run either commits a checkpoint that verifies or
 *      fails with a message, and the last good checkpoint still verifies;
 *   2. one reconciler pass of spotrund over live jobs: no crash, the
 *      database passes integrity and foreign-key checks, no rank ever has
 *      two live nodes, and a clean pass afterwards works;
 *   3. one HTTP request: a clear error naming the method and URL.
 * Linked with --wrap for those functions (Makefile; lib/common/faultinj.h),
 * and run in the plain and the ASan passes of make check, so a leak on
 * any failure path is caught there.  Each sweep stops at the first N past
 * the last call (the fault no longer fires), capped at SWEEP_MAX.
 */
#include "ctl_fixture.h"

#include <errno.h>
#include <sqlite3.h>

#include "common/faultinj.h"
#include "ctl/ctl_int.h"
#include "ctl/recon.h"
#include "ctl/router.h"
#include "spotrun/ckpt.h"

#define SWEEP_MAX 400

static char *mkdir_tmp(const char *tag)
{
	char *p = NULL;

	assert_true(asprintf(&p, "/tmp/sr-fault-%s-XXXXXX", tag) > 0);
	assert_non_null(mkdtemp(p));
	return p;
}

static void rm_rf(const char *p)
{
	char *cmd = NULL;

	assert_true(asprintf(&cmd, "rm -rf '%s'", p) > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static char g_msg[1024]; /* the message of save_once's first error */

/* One save+commit of step `step` into dir; 0 or the first error, whose
 * message (spotckpt_errmsg() of the failing call) is left in g_msg. */
static int save_once(const char *cdir, int64_t step, float *w, size_t n)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	int64_t shape[1] = { (int64_t)n };
	int rc, rc2;

	spotckpt_opts_init(&o);
	o.dir = cdir;
	o.keep = 2;
	o.copy_threads = 1;
	g_msg[0] = '\0';
	rc = spotckpt_open(&o, &e);
	if (rc) {
		snprintf(g_msg, sizeof g_msg, "%s", spotckpt_errmsg());
		return rc;
	}
	rc = spotckpt_register(e, "w", w, SPOTCKPT_F32, 1, shape, 0);
	if (!rc)
		rc = spotckpt_save(e, step, "{\"k\":1}", 0, NULL);
	if (!rc)
		rc = spotckpt_wait(e);
	if (rc)
		snprintf(g_msg, sizeof g_msg, "%s", spotckpt_errmsg());
	rc2 = spotckpt_close(e);
	if (!rc && rc2)
		snprintf(g_msg, sizeof g_msg, "%s", spotckpt_errmsg());
	return rc ? rc : rc2;
}

static void test_sweep_checkpoint_save(void **state)
{
	char *cdir = mkdir_tmp("ckpt");
	static float w[64 * 1024];
	int64_t good = 0, step = 1;
	int failures = 0, n;

	(void)state;
	sr_log_set_level(SR_LOG_OFF);
	setenv("SPOTCKPT_NO_URING", "1", 1); /* the pwrite path: count writes */
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
		w[i] = (float)i;
	assert_int_equal(save_once(cdir, step, w, 1024), 0);
	if (!sr_fault_linked()) {
		print_message("SKIP: not linked with the fault wrappers\n");
		rm_rf(cdir);
		free(cdir);
		skip();
	}
	good = step;
	for (n = 1; n <= SWEEP_MAX; n++) {
		int rc;

		step++;
		sr_fault_arm(SR_FAULT_MALLOC | SR_FAULT_WRITE | SR_FAULT_FSYNC,
			     (uint64_t)n, false, n % 2 ? EIO : ENOSPC);
		rc = save_once(cdir, step, w, sizeof w / sizeof w[0]);
		sr_fault_disarm();
		if (sr_fault_fired() == 0) {
			assert_int_equal(rc, 0);
			break; /* N is past the last call: swept them all */
		}
		if (rc == 0) {
			/* the failure was absorbed (a retry, a best-effort
			 * step): then the checkpoint must be whole */
			assert_int_equal(spotckpt_verify(cdir, step, NULL), 0);
			good = step;
		} else {
			failures++;
			size_t l = strlen(g_msg);

			if (l < 3 || !strcmp(g_msg + l - 2, ": "))
				fail_msg("fault %d: save failed (%s) with no "
					 "message: '%s'", n, spotckpt_strerror(rc),
					 g_msg);
		}
		/* never torn, never lost: the last good one still verifies */
		assert_int_equal(spotckpt_verify(cdir, good, NULL), 0);
	}
	print_message("checkpoint save: swept %d faults, %d reported\n", n - 1,
		      failures);
	assert_true(n > 10 && n <= SWEEP_MAX);
	assert_true(failures > 0);
	unsetenv("SPOTCKPT_NO_URING");
	rm_rf(cdir);
	free(cdir);
}

/* No rank of a live job has two live nodes; the database is whole. */
static void check_db(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;

	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1,
					    &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA foreign_key_check", -1,
					    &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT job_id, rank, count(*) "
		"FROM nodes WHERE state NOT IN ('TERMINATED','LOST') GROUP BY "
		"job_id, rank HAVING count(*) > 1", -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW) {
		sqlite3_stmt *q = NULL;

		sqlite3_prepare_v2(db, "SELECT n.id, n.job_id, n.rank, n.state, "
				   "n.retire, j.state, j.attempt FROM nodes n JOIN "
				   "jobs j ON j.id=n.job_id ORDER BY n.id", -1, &q,
				   NULL);
		while (sqlite3_step(q) == SQLITE_ROW)
			print_message("node %lld job %lld rank %lld %s retire %lld "
				      "(job %s attempt %lld)\n",
				      sqlite3_column_int64(q, 0),
				      sqlite3_column_int64(q, 1),
				      sqlite3_column_int64(q, 2),
				      sqlite3_column_text(q, 3),
				      sqlite3_column_int64(q, 4),
				      sqlite3_column_text(q, 5),
				      sqlite3_column_int64(q, 6));
		sqlite3_finalize(q);
		fail_msg("job %lld rank %lld has %lld live nodes",
			 sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			 sqlite3_column_int64(st, 2));
	}
	sqlite3_finalize(st);
}

static void test_sweep_reconciler_pass(void **state)
{
	struct ctl_config cfg;
	struct sr_err e = { 0 };
	sqlite3 *db = NULL;
	int n, fired_runs = 0;

	(void)state;
	sr_log_set_level(getenv("SR_FAULT_VERBOSE") ? SR_LOG_INFO : SR_LOG_OFF);
	snprintf(dir, sizeof dir, "/tmp/sr-fault-ctl-XXXXXX");
	assert_non_null(mkdtemp(dir));
	ctl_config_defaults(&cfg);
	cfg.state_dir = dir;
	cfg.listen_port = 0;
	cfg.data_dir = "data";
	cfg.agent_path = "/bin/true";
	cfg.provision_ms = 0;
	cfg.boot_timeout_ms = 50;  /* /bin/true never registers: replaced */
	assert_int_equal(ctl_start(&cfg, &ctl, &e), 0);
	snprintf(base, sizeof base, "http://127.0.0.1:%d", ctl_port(ctl));
	create_job(job_od);
	create_job(job_od);
	/* the test runs every pass itself: stop the reconciler thread (two
	 * concurrent passes are not what spotrund does) */
	atomic_store(&ctl->stopping, true);
	ctl__wake(ctl);
	pthread_join(ctl->reconciler, NULL);
	ctl->reconciler_started = false;
	atomic_store(&ctl->stopping, false);
	assert_int_equal(sqlite3_open_v2(ctl_db_path(ctl), &db,
					 SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	for (n = 1; n <= SWEEP_MAX; n++) {
		int rc;

		sr_fault_arm(SR_FAULT_SQLITE | SR_FAULT_MALLOC, (uint64_t)n, false,
			     EIO);
		rc = ctl__reconcile_once(ctl);
		sr_fault_disarm();
		if (getenv("SR_FAULT_VERBOSE"))
			print_message("n=%d fired=%llu\n", n,
				      (unsigned long long)sr_fault_fired());
		assert_true(rc <= 0); /* a failed pass says why, never crashes */
		if (sr_fault_fired() == 0 && n > 1)
			break;
		fired_runs++;
		check_db(db);
		/* the next pass, without faults, goes through */
		assert_int_equal(ctl__reconcile_once(ctl), 0);
		check_db(db);
		usleep(2000); /* nodes time out and are replaced meanwhile */
	}
	print_message("reconciler pass: swept %d faults\n", fired_runs);
	assert_true(fired_runs > 10);
	sqlite3_close(db);
	teardown(NULL);
	sr_log_set_level(SR_LOG_WARN);
}

static void test_sweep_http(void **state)
{
	struct sr_http_opts o;
	struct sr_http_resp r;
	struct sr_err e = { 0 };

	(void)state;
	sr_http_opts_default(&o);
	o.max_retries = 2;
	o.backoff_base_ms = 1;
	for (int n = 1; n <= 4; n++) {
		sr_fault_arm(SR_FAULT_HTTP, (uint64_t)n, true, 0);
		sr_err_clear(&e);
		assert_int_equal(sr_http_request("GET", "http://127.0.0.1:9/x?k=s",
						 NULL, NULL, 0, &o, &r, &e),
				 -SR_EHTTP);
		sr_fault_disarm();
		assert_non_null(strstr(e.msg, "GET http://127.0.0.1:9/x"));
		assert_null(strstr(e.msg, "k=s"));
		sr_http_resp_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sweep_checkpoint_save),
		cmocka_unit_test(test_sweep_reconciler_pass),
		cmocka_unit_test(test_sweep_http),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
