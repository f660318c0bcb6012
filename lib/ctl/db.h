/*
 * db.h - raw SQLite helpers for the files not yet moved behind lib/store
 * (the reconciler's; docs/store.md).  New code uses store/store.h.
 *
 * One file, <state-dir>/spotrun.db, in WAL mode with foreign keys on and
 * STRICT tables.  The schema lives in lib/store/schema.c.
 *
 * A state transition is one transaction: ctl_db_begin() takes the write
 * lock up front (BEGIN IMMEDIATE) so two writers never deadlock on a lock
 * upgrade, and ctl_db_commit()/ctl_db_rollback() end it.
 */
#ifndef SR_CTL_DB_H
#define SR_CTL_DB_H

#include <sqlite3.h>
#include <stdint.h>

#include "common/err.h"

#define CTL_DB_FILE "spotrun.db"

/* Open (creating if needed) path with WAL, foreign_keys, busy_timeout.
 * Does not migrate.  On success *out is a new connection the caller closes
 * with sqlite3_close_v2(); on failure *out is NULL. */
int ctl_db_open(const char *path, sqlite3 **out, struct sr_err *e);

/* store_migrate() over this connection (lib/store/schema.c). */
int ctl_db_migrate(sqlite3 *db, struct sr_err *e);

/* The schema version now recorded for component 'ctl' (0 if none). */
int ctl_db_version(sqlite3 *db);

int ctl_db_begin(sqlite3 *db, struct sr_err *e); /* BEGIN IMMEDIATE */
int ctl_db_commit(sqlite3 *db, struct sr_err *e);
void ctl_db_rollback(sqlite3 *db);                /* no-op outside a tx */
/* End the transaction: commit if rc is 0, else roll back.  Returns rc,
 * or the commit's error. */
int ctl_db_end(sqlite3 *db, int rc, struct sr_err *e);

/* Run SQL without results (may be several statements). */
int ctl_db_exec(sqlite3 *db, const char *sql, struct sr_err *e);

/* Prepare, or fail with store_sqlite_err's mapping. */
int ctl_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st,
		   struct sr_err *e);

/* Step a prepared statement that returns no row (expects SQLITE_DONE). */
int ctl_db_step_done(sqlite3 *db, sqlite3_stmt *st, struct sr_err *e,
		     const char *what);

/* Column text or "" (never NULL). */
const char *ctl_db_text(sqlite3_stmt *st, int col);

/* settings(key, value): small persistent facts (epoch, time scale). */
int ctl_db_setting_get(sqlite3 *db, const char *key, char *buf, size_t n);
int ctl_db_setting_set(sqlite3 *db, const char *key, const char *val,
		       struct sr_err *e);

#endif
