/*
 * ctl_db_raw.h - raw SQLite helpers for the tests that build a control
 * plane database by hand (the daemon itself reaches the database only
 * through lib/store).  Include after cmocka.h.
 */
#ifndef SR_TEST_CTL_DB_RAW_H
#define SR_TEST_CTL_DB_RAW_H

#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "store/store.h"

static inline int ctl_db_exec(sqlite3 *db, const char *sql, struct sr_err *e);

static inline int ctl_db_open(const char *path, sqlite3 **out, struct sr_err *e)
{
	sqlite3 *db = NULL;
	int rc, src;

	*out = NULL;
	src = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
			      SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (src != SQLITE_OK) {
		rc = sr_err_set(e, -EIO, "%s: open: %s", path,
				db ? sqlite3_errmsg(db) : sqlite3_errstr(src));
		goto fail;
	}
	sqlite3_busy_timeout(db, 10000);
	rc = ctl_db_exec(db, "PRAGMA journal_mode=WAL;"
			     "PRAGMA synchronous=NORMAL;"
			     "PRAGMA foreign_keys=ON;", e);
	if (rc)
		goto fail;
	*out = db;
	return 0;
fail:
	sqlite3_close_v2(db);
	return rc;
}

static inline int ctl_db_exec(sqlite3 *db, const char *sql, struct sr_err *e)
{
	char *msg = NULL;
	int src = sqlite3_exec(db, sql, NULL, NULL, &msg);
	int rc = 0;

	if (src != SQLITE_OK) {
		rc = store_sqlite_err(db, src, e, "exec");
		if (msg)
			sr_err_set(e, rc, "sql: %s", msg);
	}
	sqlite3_free(msg);
	return rc;
}

static inline int ctl_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st,
		   struct sr_err *e)
{
	int src = sqlite3_prepare_v2(db, sql, -1, st, NULL);

	if (src != SQLITE_OK) {
		*st = NULL;
		return store_sqlite_err(db, src, e, "prepare");
	}
	return 0;
}

static inline int ctl_db_step_done(sqlite3 *db, sqlite3_stmt *st, struct sr_err *e,
		     const char *what)
{
	int src = sqlite3_step(st);

	if (src != SQLITE_DONE && src != SQLITE_ROW)
		return store_sqlite_err(db, src, e, what);
	return 0;
}

const char *ctl_db_text(sqlite3_stmt *st, int col)
{
	const unsigned char *s = sqlite3_column_text(st, col);

	return s ? (const char *)s : "";
}

static inline int ctl_db_begin(sqlite3 *db, struct sr_err *e)
{
	return ctl_db_exec(db, "BEGIN IMMEDIATE", e);
}

static inline void ctl_db_rollback(sqlite3 *db)
{
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

static inline int ctl_db_commit(sqlite3 *db, struct sr_err *e)
{
	int rc = ctl_db_exec(db, "COMMIT", e);

	if (rc)
		ctl_db_rollback(db);
	return rc;
}

static inline int ctl_db_end(sqlite3 *db, int rc, struct sr_err *e)
{
	if (rc) {
		ctl_db_rollback(db);
		return rc;
	}
	return ctl_db_commit(db, e);
}

static inline int ctl_db_version(sqlite3 *db)
{
	struct store *s = NULL, *tmp = NULL;
	struct sr_err e = { 0 };
	int v;

	if (store_bridge(db, &s, &tmp, &e))
		return 0;
	v = store_schema_version(s, &e);
	store_close(tmp);
	return v < 0 ? 0 : v;
}

static inline int ctl_db_migrate(sqlite3 *db, struct sr_err *e)
{
	struct store *s = NULL, *tmp = NULL;
	int rc = store_bridge(db, &s, &tmp, e);

	if (!rc)
		rc = store_migrate(s, e);
	store_close(tmp);
	return rc;
}

static inline int ctl_db_setting_get(sqlite3 *db, const char *key, char *buf, size_t n)
{
	sqlite3_stmt *st = NULL;
	int rc = -SR_ENOTFOUND;

	if (sqlite3_prepare_v2(db, "SELECT value FROM settings WHERE key=?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(buf, n, "%s", ctl_db_text(st, 0));
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

static inline int ctl_db_setting_set(sqlite3 *db, const char *key, const char *val,
		       struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = ctl_db_prepare(db, "INSERT INTO settings(key, value) VALUES(?, ?)"
			    " ON CONFLICT(key) DO UPDATE SET value=excluded.value",
			    &st, e);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, val, -1, SQLITE_STATIC);
	rc = ctl_db_step_done(db, st, e, "settings");
	sqlite3_finalize(st);
	return rc;
}

#endif
