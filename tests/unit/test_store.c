/* Unit tests: lib/store on both backends - the same cases run on SQLite
 * and on a real PostgreSQL 15 (pg_fixture.h): migrations (fresh, again,
 * refused when newer), columns by name, blobs, the error convention,
 * transactions, the statement cache, the append-only ledger. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_backends.h"
#include "store/store_ctl.h"

static void test_migrate(void **state)
{
	struct backend *b = *state;
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);

	assert_int_equal(store_schema_version(s, &e), store_schema_latest());
	assert_int_equal(store_migrate(s, &e), 0); /* again: nothing to do */
	assert_int_equal(store_exec_sql(s, "UPDATE schema_version SET version=99"
					" WHERE component='ctl'", &e), 0);
	store_close(s);
	assert_int_equal(store_open(b->where, 0, &s, &e), 0);
	assert_int_equal(store_migrate(s, &e), -SR_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "newer"));
	assert_non_null(strstr(e.msg, "99"));
	store_close(s);
}

static void test_columns_by_name(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	struct store_stmt *st = NULL;
	static const unsigned char blob[] = { 0, 1, 2, 0xff, 0, '\\', 'x' };
	const void *p;
	size_t n;
	int64_t id = new_job(s, "a 'quoted' name?");

	assert_true(id > 0);
	assert_int_equal(store_prepare(s, "UPDATE jobs SET policy_state=?, "
				       "deadline_s=? WHERE id=?", &st, &e), 0);
	store_bind_blob(st, 1, blob, sizeof blob);
	store_bind_f64(st, 2, 0.25);
	store_bind_i64(st, 3, id);
	assert_int_equal(store_run(st, &e), 1);
	store_done(st);

	assert_int_equal(store_prepare(s, "SELECT id, name, sim_start_s, "
				       "deadline_s, work_s, policy_state, restarts "
				       "FROM jobs WHERE id=?", &st, &e), 0);
	store_bind_i64(st, 1, id);
	assert_int_equal(store_step(st, &e), 1);
	assert_int_equal(store_col_i64(st, "id"), id);
	assert_string_equal(store_col_text(st, "name"), "a 'quoted' name?");
	assert_true(store_col_f64(st, "sim_start_s") == 1.5);
	assert_true(store_col_f64(st, "deadline_s") == 0.25);
	assert_true(store_col_null(st, "work_s"));
	assert_string_equal(store_col_text(st, "work_s"), "");
	assert_false(store_col_null(st, "restarts"));
	p = store_col_blob(st, "policy_state", &n);
	assert_int_equal(n, sizeof blob);
	assert_memory_equal(p, blob, sizeof blob);
	assert_int_equal(store_step(st, &e), 0);
	store_done(st);
	store_close(s);
}

/* Schema 16 (warm spares): a node row bound to no rank yet - spare=1, its
 * rank the job's num_nodes - takes a rank once, and no other value of
 * `spare` is stored. */
static void test_spare_adopt(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	static const unsigned char tok[32] = { 1 };
	struct store_node_new nn = {
		.rank = 2, .token_hash = tok, .token_hash_len = sizeof tok,
		.provider = "local", .cloud = "aws", .region = "us-east-1",
		.zone = "us-east-1a", .instance_type = "p3.2xlarge",
		.accelerator = "V100", .accel_count = 1, .spot = true,
		.price_micros = 900000, .list_micros = 3060000,
		.reserved_micros = -1, .created_ns = 10, .boot_at_ns = 20,
		.spare = true,
	};
	struct store_node *v = NULL;
	struct store_node n;
	size_t k = 0;
	int64_t id = 0;

	nn.job = new_job(s, "spare");
	assert_int_equal(store_node_insert(s, &nn, &id, &e), 0);
	assert_int_equal(store_node_select(s, "job_id=?1 AND spare=1 AND"
					   " adopted_ns IS NULL", nn.job, &v, &k,
					   &e), 0);
	assert_int_equal(k, 1);
	assert_int_equal(v[0].rank, 2);
	assert_true(v[0].spare);
	assert_true(v[0].adopted_ns == STORE_NULL_I64);
	store_nodes_free(v, k);
	assert_int_equal(store_node_adopt(s, id, 1, 30, &e), 0);
	assert_int_equal(store_node_adopt(s, id, 0, 40, &e), -SR_ECONFLICT);
	assert_non_null(strstr(e.msg, "not a spare"));
	assert_int_equal(store_node_load(s, id, &n, &e), 0);
	assert_int_equal(n.rank, 1);
	assert_true(n.spare);
	assert_int_equal(n.adopted_ns, 30);
	store_node_free(&n);
	assert_true(store_exec_sql(s, "UPDATE nodes SET spare=2", &e) < 0);
	store_close(s);
}

static void test_errors(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	struct store_stmt *st = NULL;
	int64_t id = new_job(s, "j");

	/* a CHECK constraint: -EINVAL, reported by the step, not "no rows" */
	assert_int_equal(store_prepare(s, "UPDATE jobs SET state='NOPE' WHERE id=?",
				       &st, &e), 0);
	store_bind_i64(st, 1, id);
	assert_int_equal(store_step(st, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "step"));
	store_done(st);
	/* a unique constraint: -SR_ECONFLICT */
	assert_int_equal(store_setting_set(s, "k", "v1", &e), 0);
	assert_int_equal(store_prepare(s, "INSERT INTO settings(key, value) "
				       "VALUES(?, ?)", &st, &e), 0);
	store_bind_text(st, 1, "k");
	store_bind_text(st, 2, "v2");
	assert_int_equal(store_run(st, &e), -SR_ECONFLICT);
	store_done(st);
	/* a foreign key */
	assert_int_equal(store_prepare(s, "INSERT INTO events(job_id, ts_ns, sim_s,"
				       " type, message) VALUES(?, 1, 0, 'x', '')",
				       &st, &e), 0);
	store_bind_i64(st, 1, id + 1000);
	assert_int_equal(store_run(st, &e), -EINVAL);
	store_done(st);
	/* SQL the backend cannot prepare */
	assert_int_equal(store_prepare(s, "SELECT nope FROM nowhere", &st, &e), -EIO);
	assert_null(st);
	store_close(s);
}

static void test_transactions(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	char v[32];

	assert_int_equal(store_begin(s, &e), 0);
	assert_true(store_in_tx(s));
	assert_int_equal(store_begin(s, &e), -EINVAL); /* no nesting */
	assert_int_equal(store_setting_set(s, "a", "1", &e), 0);
	store_rollback(s);
	assert_false(store_in_tx(s));
	assert_int_equal(store_setting_get(s, "a", v, sizeof v, &e), -SR_ENOTFOUND);
	assert_int_equal(store_begin(s, &e), 0);
	assert_int_equal(store_setting_set(s, "a", "2", &e), 0);
	assert_int_equal(store_end(s, 0, &e), 0);
	assert_int_equal(store_setting_get(s, "a", v, sizeof v, &e), 0);
	assert_string_equal(v, "2");
	/* store_end with an error rolls back */
	assert_int_equal(store_begin(s, &e), 0);
	assert_int_equal(store_setting_set(s, "a", "3", &e), 0);
	assert_int_equal(store_end(s, -EINVAL, &e), -EINVAL);
	assert_int_equal(store_setting_get(s, "a", v, sizeof v, &e), 0);
	assert_string_equal(v, "2");
	/* set-if-absent: the first writer wins (spotrund's cluster id) */
	assert_int_equal(store_setting_add(s, "once", "first", &e), 0);
	assert_int_equal(store_setting_add(s, "once", "second", &e), 0);
	assert_int_equal(store_setting_get(s, "once", v, sizeof v, &e), 0);
	assert_string_equal(v, "first");
	store_close(s);
}

/* The fence of a store_begin (the leader's lease, lib/ctl/lease.c): a
 * connection fenced with epoch 1 writes while the lease row says 1; once
 * another connection has committed epoch 2, its transactions fail before
 * any statement and nothing it meant to write is written. */
static int epoch_fence(struct store *s, void *ud, struct sr_err *e)
{
	int64_t held = *(const int64_t *)ud, now = 0;
	int rc = store_query_i64(s, "SELECT epoch FROM lease WHERE id=?", 1,
				 &now, e);

	if (rc < 0)
		return rc;
	return rc == 1 && now == held ? 0 :
	       sr_err_set(e, -ESTALE, "fenced: epoch %lld is gone",
			  (long long)held);
}

static void test_fence(void **state)
{
	struct backend *b = *state;
	struct sr_err e = { 0 };
	struct store *old = open_migrated(state), *new = NULL;
	struct store_stmt *st = NULL;
	int64_t one = 1;
	char v[32];

	assert_int_equal(store_open(b->where, 0, &new, &e), 0);
	assert_int_equal(store_exec_sql(new, "UPDATE lease SET epoch=1", &e), 0);
	store_set_fence(old, epoch_fence, &one);
	assert_int_equal(store_begin(old, &e), 0);
	assert_int_equal(store_setting_set(old, "step", "1", &e), 0);
	assert_int_equal(store_end(old, 0, &e), 0);
	/* the takeover: epoch 2, committed under the writers' lock */
	assert_int_equal(store_begin(new, &e), 0);
	assert_int_equal(store_prepare(new, "UPDATE lease SET epoch=epoch+1"
				       " WHERE id=1 AND epoch=?", &st, &e), 0);
	store_bind_i64(st, 1, 1);
	assert_int_equal(store_run(st, &e), 1);
	store_done(st);
	assert_int_equal(store_end(new, 0, &e), 0);
	/* the old holder's next transaction is refused, and rolled back */
	assert_int_equal(store_begin(old, &e), -ESTALE);
	assert_non_null(strstr(e.msg, "fenced"));
	assert_false(store_in_tx(old));
	/* without its fence the same connection works again */
	store_set_fence(old, NULL, NULL);
	assert_int_equal(store_begin(old, &e), 0);
	assert_int_equal(store_end(old, 0, &e), 0);
	assert_int_equal(store_setting_get(new, "step", v, sizeof v, &e), 0);
	assert_string_equal(v, "1");
	store_close(new);
	store_close(old);
}

static void test_cache_and_nesting(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	struct store_stmt *a = NULL, *b = NULL, *c = NULL;
	static const char q[] = "SELECT id FROM jobs WHERE id >= ? ORDER BY id";
	int n = 0;

	new_job(s, "x");
	new_job(s, "y");
	assert_int_equal(store_prepare(s, q, &a, &e), 0);
	store_done(a);
	assert_int_equal(store_prepare(s, q, &b, &e), 0);
	assert_ptr_equal(a, b); /* prepared once, handed out again */
	store_bind_i64(b, 1, 0);
	while (store_step(b, &e) == 1) {
		/* the same text while b is in use: a private copy */
		assert_int_equal(store_prepare(s, q, &c, &e), 0);
		assert_ptr_not_equal(c, b);
		store_bind_i64(c, 1, store_col_i64(b, "id"));
		while (store_step(c, &e) == 1)
			n++;
		store_done(c);
	}
	store_done(b);
	assert_int_equal(n, 3); /* 2 rows from the first id, 1 from the second */
	store_close(s);
}

static void test_portable_sql(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	struct store_stmt *st = NULL;

	assert_int_equal(store_prepare(s, "SELECT greatest(?1, 7, NULL) AS hi, "
				       "least(?1, 7) AS lo", &st, &e), 0);
	store_bind_i64(st, 1, 3);
	assert_int_equal(store_step(st, &e), 1);
	assert_int_equal(store_col_i64(st, "hi"), 7);
	assert_int_equal(store_col_i64(st, "lo"), 3);
	store_done(st);
	store_close(s);
}

static void test_ledger_append_only(void **state)
{
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	struct store_stmt *st = NULL;

	assert_int_equal(store_prepare(s, "INSERT INTO ledger_plan(job_id, at_ns,"
				       " work_ns, nodes, od_price, planned_cost) "
				       "VALUES(1, 0, 10, 1, 5, 50)", &st, &e), 0);
	assert_int_equal(store_run(st, &e), 1);
	store_done(st);
	assert_int_equal(store_prepare(s, "UPDATE ledger_plan SET planned_cost=0",
				       &st, &e), 0);
	assert_int_equal(store_run(st, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "append-only"));
	store_done(st);
	assert_int_equal(store_prepare(s, "DELETE FROM ledger_plan", &st, &e), 0);
	assert_int_equal(store_run(st, &e), -EINVAL);
	store_done(st);
	store_close(s);
}

/* SQLite only: a database from before lib/store kept the ledger's version
 * in ledger_schema; it is adopted, not re-created. */
static void test_sqlite_legacy_ledger(void **state)
{
	struct backend *b = *state;
	struct sr_err e = { 0 };
	struct store *s = NULL;
	int64_t v = 0;

	assert_int_equal(store_open(b->where, 0, &s, &e), 0);
	assert_int_equal(store_exec_sql(s, "CREATE TABLE ledger_schema(version "
					"INTEGER NOT NULL) STRICT; INSERT INTO "
					"ledger_schema VALUES(7)", &e), 0);
	assert_int_equal(store_migrate(s, &e), -SR_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "ledger"));
	assert_int_equal(store_exec_sql(s, "UPDATE ledger_schema SET version=2", &e), 0);
	assert_int_equal(store_migrate(s, &e), 0);
	assert_int_equal(store_query_i64(s, "SELECT version FROM schema_version "
					 "WHERE component='ledger' AND ?=1", 1, &v,
					 &e), 1);
	assert_int_equal(v, 4); /* version 2 adopted, then brought to the latest */
	store_close(s);
}

/* Cut s's server connection from another one (its backend terminated:
 * SQLSTATE 57P01 on s's next use), as a server restart would. */
static void cut(struct store *s, struct store *adm)
{
	struct sr_err e = { 0 };
	int64_t pid = 0;

	assert_int_equal(store_query_i64(s, "SELECT pg_backend_pid() AS p"
					 " WHERE ?=1", 1, &pid, &e), 1);
	assert_int_equal(store_query_i64(adm, "SELECT count(*) AS n FROM"
					 " (SELECT pg_terminate_backend(pid)"
					 " FROM pg_stat_activity WHERE pid=?) t",
					 pid, &pid, &e), 1);
}

/* A dropped connection is opened again: a cached read and a transaction
 * after the drop work (prepared again on the new connection); a
 * transaction the drop cut fails, is rolled back, and changes nothing. */
static void test_pg_reconnect(void **state)
{
	struct backend *b = *state;
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state), *adm = NULL;
	char v[32];

	assert_int_equal(store_open(b->where, 0, &adm, &e), 0);
	assert_int_equal(store_begin(s, &e), 0);
	assert_int_equal(store_setting_set(s, "k", "1", &e), 0);
	assert_int_equal(store_end(s, 0, &e), 0);
	assert_int_equal(store_setting_get(s, "k", v, sizeof v, &e), 0);
	cut(s, adm);
	/* a cached read outside a transaction: run again on a new connection */
	assert_int_equal(store_setting_get(s, "k", v, sizeof v, &e), 0);
	assert_string_equal(v, "1");
	cut(s, adm);
	/* BEGIN on the dropped connection: reconnect, begin again */
	assert_int_equal(store_begin(s, &e), 0);
	assert_int_equal(store_setting_set(s, "k", "2", &e), 0);
	assert_int_equal(store_end(s, 0, &e), 0);
	/* cut inside a transaction: that call fails, nothing is applied */
	assert_int_equal(store_begin(s, &e), 0);
	cut(s, adm);
	assert_int_equal(store_setting_set(s, "k", "3", &e), -EIO);
	assert_int_equal(store_end(s, -EIO, &e), -EIO);
	assert_false(store_in_tx(s));
	assert_int_equal(store_setting_get(s, "k", v, sizeof v, &e), 0);
	assert_string_equal(v, "2");
	assert_int_equal(store_setting_get(adm, "k", v, sizeof v, &e), 0);
	assert_string_equal(v, "2");
	store_close(adm);
	store_close(s);
}

/* PostgreSQL: a writer that stops sending inside a transaction (a
 * frozen leader) holds the writers' lock; with an idle limit the server
 * ends that transaction, rolled back, and the next writer gets the lock
 * (it waits on the lock, not on a clock: lock_timeout is only its guard
 * against waiting forever).  The idle one's next call fails and the one
 * after runs on a new connection. */
static void test_pg_idle_tx_limit(void **state)
{
	struct backend *b = *state;
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state), *other = NULL;
	char v[32];

	assert_int_equal(store_open(b->where, 0, &other, &e), 0);
	assert_int_equal(store_exec_sql(other, "SET lock_timeout = '120s'", &e), 0);
	store_set_idle_tx_limit(s, 200);
	assert_int_equal(store_begin(s, &e), 0);
	assert_int_equal(store_setting_set(s, "k", "frozen", &e), 0);
	/* s sends nothing more: the lock is other's once the server ends
	 * s's transaction */
	assert_int_equal(store_begin(other, &e), 0);
	assert_int_equal(store_setting_get(other, "k", v, sizeof v, &e), -SR_ENOTFOUND);
	assert_int_equal(store_setting_set(other, "k", "other", &e), 0);
	assert_int_equal(store_end(other, 0, &e), 0);
	/* the idle transaction is gone: its commit fails, nothing of it
	 * was applied; then s works again on a new connection */
	assert_int_not_equal(store_commit(s, &e), 0);
	assert_false(store_in_tx(s));
	assert_int_equal(store_setting_get(s, "k", v, sizeof v, &e), 0);
	assert_string_equal(v, "other");
	assert_int_equal(store_begin(s, &e), 0);
	assert_int_equal(store_setting_set(s, "k", "again", &e), 0);
	assert_int_equal(store_end(s, 0, &e), 0);
	assert_int_equal(store_setting_get(other, "k", v, sizeof v, &e), 0);
	assert_string_equal(v, "again");
	store_close(other);
	store_close(s);
}

/* PostgreSQL: store_analyze gives every table of the schema statistics
 * (reltuples -1 = never analyzed, PostgreSQL 14 on), whatever its name. */
static void test_pg_analyze_covers_every_table(void **state)
{
	static const char unanalyzed[] =
		"SELECT count(*) FROM pg_class c JOIN pg_namespace n"
		" ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
		" AND c.relkind = 'r' AND c.reltuples < 0 AND ? = 1";
	struct sr_err e = { 0 };
	struct store *s = open_migrated(state);
	int64_t n = -1;

	assert_int_equal(store_exec_sql(s, "CREATE TABLE zz_added(x INTEGER)", &e), 0);
	assert_int_equal(store_query_i64(s, unanalyzed, 1, &n, &e), 1);
	assert_true(n > 1); /* the schema's tables and the new one */
	assert_int_equal(store_analyze(s, &e), 0);
	assert_int_equal(store_query_i64(s, unanalyzed, 1, &n, &e), 1);
	assert_int_equal(n, 0);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_migrate),
		BOTH(test_columns_by_name),
		BOTH(test_errors),
		BOTH(test_spare_adopt),
		BOTH(test_transactions),
		BOTH(test_fence),
		BOTH(test_cache_and_nesting),
		BOTH(test_portable_sql),
		BOTH(test_ledger_append_only),
		{ "sqlite/test_legacy_ledger", test_sqlite_legacy_ledger, fresh,
		  NULL, &on_sqlite },
		{ "postgresql/test_reconnect", test_pg_reconnect, fresh, NULL,
		  &on_pg },
		{ "postgresql/test_idle_tx_limit", test_pg_idle_tx_limit, fresh,
		  NULL, &on_pg },
		{ "postgresql/test_analyze", test_pg_analyze_covers_every_table,
		  fresh, NULL, &on_pg },
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
