/*
 * store_backends.h - run a cmocka test on both store backends: BOTH(fn)
 * makes two cases, "sqlite/fn" and "postgresql/fn", each given a fresh,
 * empty database in *state (a struct backend: its location in `where`).
 * The PostgreSQL server (pg_fixture.h) is started once per binary by
 * group_setup and stopped by group_teardown; when it cannot start, the
 * group fails and says why.  Include after cmocka.h.
 */
#ifndef SR_TEST_STORE_BACKENDS_H
#define SR_TEST_STORE_BACKENDS_H

#include <stdio.h>
#include <stdlib.h>

#include "store/store.h"
#include "pg_fixture.h"

static struct pgfix pg;
static bool pg_up;
static char tmpdir[64];
static int ndb;

struct backend {
	enum store_backend kind;
	char where[256];
};

static struct backend on_sqlite = { STORE_SQLITE, "" };
static struct backend on_pg = { STORE_POSTGRES, "" };

/* A new, empty database for one test. */
static int fresh(void **state)
{
	struct backend *b = *state;
	struct sr_err e = { 0 };

	ndb++;
	if (b->kind == STORE_SQLITE) {
		snprintf(b->where, sizeof b->where, "%s/t%d.db", tmpdir, ndb);
		return 0;
	}
	struct store *adm = NULL;
	char url[200], sql[64];

	pgfix_url(&pg, "postgres", url, sizeof url);
	if (store_open(url, 0, &adm, &e)) {
		fprintf(stderr, "connect: %s\n", e.msg);
		return -1;
	}
	snprintf(sql, sizeof sql, "CREATE DATABASE t%d", ndb);
	if (store_exec_sql(adm, sql, &e)) {
		fprintf(stderr, "%s\n", e.msg);
		store_close(adm);
		return -1;
	}
	store_close(adm);
	snprintf(sql, sizeof sql, "t%d", ndb);
	pgfix_url(&pg, sql, b->where, sizeof b->where);
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/sr-store-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	if (pgfix_start(&pg) != 0) {
		fprintf(stderr, "test_store: FAILED: the PostgreSQL test server "
			"could not start (see above); the PostgreSQL cases cannot "
			"run\n");
		return -1;
	}
	pg_up = true;
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[96];

	(void)state;
	if (pg_up)
		pgfix_stop(&pg);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A connection to the case's database, migrated. */
static struct store *open_migrated(void **state)
{
	struct backend *b = *state;
	struct sr_err e = { 0 };
	struct store *s = NULL;

	assert_int_equal(store_open(b->where, 0, &s, &e), 0);
	assert_int_equal(store_backend(s), b->kind);
	if (store_migrate(s, &e))
		fail_msg("migrate: %s", e.msg);
	return s;
}

/* A PENDING job named `name`; its id. */
static int64_t new_job(struct store *s, const char *name)
{
	struct sr_err e = { 0 };
	struct store_stmt *st = NULL;
	int64_t id;

	assert_int_equal(store_prepare(s, "INSERT INTO jobs(name, state, spec_name,"
				       " spec_yaml, spec_json, num_nodes, max_restarts,"
				       " created_ns, updated_ns, state_since_ns, sim_start_s,"
				       " work_s) VALUES(?1, 'PENDING', ?2, '', '{}', 1, 2, ?3,"
				       " ?3, ?3, 1.5, NULL) RETURNING id", &st, &e), 0);
	store_bind_text(st, 1, name);
	store_bind_text(st, 2, "spec");
	store_bind_i64(st, 3, 1000);
	if (store_step(st, &e) != 1)
		fail_msg("insert: %s", e.msg);
	id = store_col_i64(st, "id");
	store_done(st);
	return id;
}

#define BOTH(fn)                                           \
	{ "sqlite/" #fn, fn, fresh, NULL, &on_sqlite },    \
	{ "postgresql/" #fn, fn, fresh, NULL, &on_pg }

#endif
