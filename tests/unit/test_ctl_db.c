/* Unit tests: lib/ctl/db.c, lib/store/schema.c, jobsm.c - migrations, STRICT
 * tables, foreign keys, and the job transition table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db_raw.h"
#include "store/store.h"
#include "ctl/jobsm.h"
#include "store_bridge.h"

/* jobsm_move over a raw SQLite connection (this file builds its
 * databases by hand). */
static int jobsm_transition(sqlite3 *db, int64_t id, enum job_state from,
			    enum job_state to, int64_t now_ns, double sim_s,
			    const char *msg, struct sr_err *e)
{
	return ON_STORE(db, s, jobsm_move(s, id, from, to, now_ns, sim_s,
					  msg, e));
}

static char dir[64], path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/sr-ctldb-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof path, "%s/spotrun.db", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

static sqlite3 *open_migrated(void)
{
	struct sr_err e = { 0 };
	sqlite3 *db = NULL;

	assert_int_equal(ctl_db_open(path, &db, &e), 0);
	assert_int_equal(ctl_db_migrate(db, &e), 0);
	return db;
}

static int64_t insert_job(sqlite3 *db, const char *state)
{
	char sql[512];
	struct sr_err e = { 0 };

	snprintf(sql, sizeof sql, "INSERT INTO jobs(name, state, spec_name, "
		 "spec_yaml, spec_json, num_nodes, max_restarts, created_ns, "
		 "updated_ns, state_since_ns, sim_start_s) VALUES('j', '%s', "
		 "'j.yaml', 'run: x', '{}', 1, 3, 1, 1, 1, 0)", state);
	assert_int_equal(ctl_db_exec(db, sql, &e), 0);
	return sqlite3_last_insert_rowid(db);
}

static void test_migrate_idempotent(void **state)
{
	struct sr_err e = { 0 };
	sqlite3 *db = open_migrated();
	char mode[16] = "";
	sqlite3_stmt *st = NULL;

	(void)state;
	assert_true(ctl_db_version(db) >= 1);
	/* running again changes nothing and fails nothing */
	assert_int_equal(ctl_db_migrate(db, &e), 0);
	assert_int_equal(ctl_db_version(db), store_schema_latest());
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st,
					    NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	snprintf(mode, sizeof mode, "%s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	assert_string_equal(mode, "wal");
	sqlite3_close_v2(db);
}

static void test_newer_schema_refused(void **state)
{
	struct sr_err e = { 0 };
	sqlite3 *db = open_migrated();

	(void)state;
	assert_int_equal(ctl_db_exec(db, "UPDATE schema_version SET version=99 "
				     "WHERE component='ctl'", &e), 0);
	assert_int_equal(ctl_db_migrate(db, &e), -SR_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "newer"));
	assert_int_equal(ctl_db_exec(db, "UPDATE schema_version SET version=5 "
				     "WHERE component='ctl'", &e), 0);
	sqlite3_close_v2(db);
}

/* A database at version 1 (as the first release left it) is brought up to
 * date, keeping its rows. */
static void test_upgrade_from_v1(void **state)
{
	struct sr_err e = { 0 };
	sqlite3 *db = open_migrated();
	sqlite3_stmt *st = NULL;
	int64_t id;

	(void)state;
	id = insert_job(db, "PENDING");
	assert_int_equal(ctl_db_exec(db, "ALTER TABLE jobs DROP COLUMN "
		"list_cost_micros; ALTER TABLE jobs DROP COLUMN reserved_cost_micros;"
		" ALTER TABLE jobs DROP COLUMN reserved_unknown;"
		" ALTER TABLE jobs DROP COLUMN pace_attempt;"
		" ALTER TABLE jobs DROP COLUMN pace_step0;"
		" ALTER TABLE jobs DROP COLUMN pace_t0_ns;"
		" ALTER TABLE jobs DROP COLUMN step_ns;"
		" ALTER TABLE jobs DROP COLUMN est_work_s;"
		" ALTER TABLE jobs DROP COLUMN est_pace_ns;"
		" ALTER TABLE jobs DROP COLUMN est_steps;"
		" ALTER TABLE jobs DROP COLUMN est_attempt;"
		" ALTER TABLE jobs DROP COLUMN est_step0;"
		" ALTER TABLE jobs DROP COLUMN est_t0_ns;"
		" ALTER TABLE jobs DROP COLUMN est_last_step;"
		" ALTER TABLE jobs DROP COLUMN est_last_ns;"
		" ALTER TABLE jobs DROP COLUMN est_upd_ns;"
		" ALTER TABLE jobs DROP COLUMN est_restart_s;"
		" ALTER TABLE nodes DROP COLUMN kill_pending;"
		" ALTER TABLE jobs DROP COLUMN lost_from_step;"
		" ALTER TABLE jobs DROP COLUMN lost_attempt;"
		" ALTER TABLE jobs DROP COLUMN lost_node;"
		" ALTER TABLE jobs DROP COLUMN lost_price;"
		" ALTER TABLE nodes DROP COLUMN retire;"
		" DROP INDEX jobs_idem; ALTER TABLE jobs DROP COLUMN idem_key;"
		" ALTER TABLE jobs DROP COLUMN idem_hash;"
		" ALTER TABLE jobs DROP COLUMN secrets_enc;"
		" ALTER TABLE nodes DROP COLUMN addr;"
		" ALTER TABLE nodes DROP COLUMN instance_id;"
		" ALTER TABLE nodes DROP COLUMN driver_blob;"
		" ALTER TABLE nodes DROP COLUMN phase;"
		" ALTER TABLE jobs DROP COLUMN ckpt_local_step;"
		" ALTER TABLE jobs DROP COLUMN ckpt_store_ns;"
		" ALTER TABLE nodes DROP COLUMN rebalance_ns; DROP TABLE node_boot;"
		" ALTER TABLE jobs DROP COLUMN deadline_state;"
		" DROP TABLE ckpt_seen; DROP TABLE lost_pending;"
		" DROP TABLE uploads; ALTER TABLE jobs DROP COLUMN files;"
		" ALTER TABLE jobs DROP COLUMN team;"
		" ALTER TABLE jobs DROP COLUMN project;"
		" ALTER TABLE jobs DROP COLUMN cost_center;"
		" DROP TABLE budget_alerts;"
		" ALTER TABLE nodes DROP COLUMN spare;"
		" ALTER TABLE nodes DROP COLUMN adopted_ns;"
		" UPDATE schema_version"
		" SET version=1 WHERE component='ctl'", &e), 0);
	assert_int_equal(ctl_db_migrate(db, &e), 0);
	assert_int_equal(ctl_db_version(db), store_schema_latest());
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT name, list_cost_micros "
					    "FROM jobs WHERE id=?", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "j");
	assert_int_equal(sqlite3_column_int64(st, 1), 0);
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
}

static void test_strict_and_checks(void **state)
{
	struct sr_err e = { 0 };
	sqlite3 *db = open_migrated();
	int rc;

	(void)state;
	/* STRICT: a string in an INTEGER column is refused */
	rc = ctl_db_exec(db, "INSERT INTO jobs(name, state, spec_name, spec_yaml,"
			 " spec_json, num_nodes, max_restarts, created_ns, updated_ns,"
			 " state_since_ns, sim_start_s) VALUES('j','PENDING','a','b',"
			 "'{}','two',3,1,1,1,0)", &e);
	assert_int_not_equal(rc, 0);
	/* CHECK: unknown state */
	rc = ctl_db_exec(db, "INSERT INTO jobs(name, state, spec_name, spec_yaml,"
			 " spec_json, num_nodes, max_restarts, created_ns, updated_ns,"
			 " state_since_ns, sim_start_s) VALUES('j','BOGUS','a','b','{}',"
			 "1,3,1,1,1,0)", &e);
	assert_int_equal(rc, -EINVAL);
	/* foreign key: a node of a job that does not exist */
	rc = ctl_db_exec(db, "INSERT INTO nodes(job_id, rank, state, token_hash,"
			 " provider, cloud, region, zone, instance_type, accelerator,"
			 " accel_count, spot, pool, price_micros, list_micros,"
			 " reserved_micros, created_ns, boot_at_ns) VALUES(999, 0,"
			 " 'REQUESTED', x'00', 'local','aws','r','z','t','V100',1,1,0,"
			 " 1,1,1,1,1)", &e);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(e.msg, "FOREIGN KEY"));
	sqlite3_close_v2(db);
}

/* The table in jobsm.c's header comment, spelled out independently. */
static const char *const legal[][2] = {
	{ "PENDING", "PROVISIONING" }, { "PENDING", "FAILED" },
	{ "PENDING", "CANCELLED" },
	{ "PROVISIONING", "RUNNING" }, { "PROVISIONING", "RECOVERING" },
	{ "PROVISIONING", "FAILED" }, { "PROVISIONING", "CANCELLED" },
	{ "RUNNING", "NOTICE" }, { "RUNNING", "RECOVERING" },
	{ "RUNNING", "SUCCEEDED" }, { "RUNNING", "FAILED" },
	{ "RUNNING", "CANCELLED" },
	{ "NOTICE", "CHECKPOINTING" }, { "NOTICE", "PREEMPTED" },
	{ "NOTICE", "CANCELLED" },
	{ "CHECKPOINTING", "PREEMPTED" }, { "CHECKPOINTING", "SUCCEEDED" },
	{ "CHECKPOINTING", "FAILED" }, { "CHECKPOINTING", "CANCELLED" },
	{ "PREEMPTED", "RECOVERING" }, { "PREEMPTED", "CANCELLED" },
	{ "RECOVERING", "PROVISIONING" }, { "RECOVERING", "FAILED" },
	{ "RECOVERING", "CANCELLED" },
};

static bool listed(enum job_state a, enum job_state b)
{
	for (size_t i = 0; i < sizeof legal / sizeof legal[0]; i++) {
		if (strcmp(legal[i][0], jobsm_name(a)) == 0 &&
		    strcmp(legal[i][1], jobsm_name(b)) == 0)
			return true;
	}
	return false;
}

static void test_transition_table(void **state)
{
	enum job_state s;
	int n = 0;

	(void)state;
	for (int a = 0; a < JOB_NSTATES; a++) {
		assert_int_equal(jobsm_parse(jobsm_name((enum job_state)a), &s), 0);
		assert_int_equal(s, a);
		for (int b = 0; b < JOB_NSTATES; b++) {
			bool ok = jobsm_allowed((enum job_state)a, (enum job_state)b);

			assert_int_equal(ok, listed((enum job_state)a, (enum job_state)b));
			n += ok;
		}
		if (jobsm_terminal((enum job_state)a))
			for (int b = 0; b < JOB_NSTATES; b++)
				assert_false(jobsm_allowed((enum job_state)a,
							   (enum job_state)b));
	}
	assert_int_equal(n, (int)(sizeof legal / sizeof legal[0]));
	assert_int_equal(jobsm_parse("running", &s), -EINVAL);
	assert_false(jobsm_allowed(JOB_NSTATES, JOB_PENDING));
}

static void test_transition_cas_and_event(void **state)
{
	struct sr_err e = { 0 };
	sqlite3 *db = open_migrated();
	sqlite3_stmt *st = NULL;
	int64_t id = insert_job(db, "PENDING");

	(void)state;
	assert_int_equal(ctl_db_begin(db, &e), 0);
	assert_int_equal(jobsm_transition(db, id, JOB_PENDING, JOB_PROVISIONING,
					  10, 1.5, "placed", &e), 0);
	assert_int_equal(ctl_db_commit(db, &e), 0);
	/* stale `from` is refused (compare-and-set) */
	assert_int_equal(jobsm_transition(db, id, JOB_PENDING, JOB_PROVISIONING,
					  11, 1.5, "again", &e), -SR_ECONFLICT);
	/* illegal edge is refused before touching the row */
	assert_int_equal(jobsm_transition(db, id, JOB_PROVISIONING, JOB_SUCCEEDED,
					  12, 1.5, "skip", &e), -SR_ECONFLICT);
	assert_non_null(strstr(e.msg, "not a legal transition"));
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT from_state, to_state, "
		"message FROM events WHERE job_id=? AND type='transition'", -1, &st,
		NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "PENDING");
	assert_string_equal((const char *)sqlite3_column_text(st, 1), "PROVISIONING");
	assert_string_equal((const char *)sqlite3_column_text(st, 2), "placed");
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	/* a terminal transition stamps finished_ns */
	assert_int_equal(jobsm_transition(db, id, JOB_PROVISIONING, JOB_CANCELLED,
					  13, 2, "bye", &e), 0);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT finished_ns, state FROM "
					    "jobs WHERE id=?", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), 13);
	assert_string_equal((const char *)sqlite3_column_text(st, 1), "CANCELLED");
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
}

static void test_rollback_leaves_no_trace(void **state)
{
	struct sr_err e = { 0 };
	sqlite3 *db = open_migrated();
	sqlite3_stmt *st = NULL;
	int64_t id = insert_job(db, "RUNNING");

	(void)state;
	assert_int_equal(ctl_db_begin(db, &e), 0);
	assert_int_equal(jobsm_transition(db, id, JOB_RUNNING, JOB_NOTICE, 5, 1,
					  "notice", &e), 0);
	ctl_db_rollback(db);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT state, (SELECT count(*) "
		"FROM events WHERE job_id=?1) FROM jobs WHERE id=?1", -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "RUNNING");
	assert_int_equal(sqlite3_column_int(st, 1), 0);
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_migrate_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upgrade_from_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strict_and_checks, setup, teardown),
		cmocka_unit_test(test_transition_table),
		cmocka_unit_test_setup_teardown(test_transition_cas_and_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rollback_leaves_no_trace, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
