/*
 * store_sqlite.c - the SQLite backend of lib/store: one file, WAL mode,
 * foreign keys on, a 10 s busy timeout; greatest()/least() registered so
 * the same SQL runs on PostgreSQL.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/faultinj.h"
#include "store/store_int.h"

struct sq {
	sqlite3 *db;
	bool owned;        /* store_close closes db */
};

/* The fault injection wrapper of sqlite3_step (common/faultinj.h): only
 * called in a program linked with --wrap=sqlite3_step, where the weak
 * __real_ symbol exists. */
int __real_sqlite3_step(sqlite3_stmt *st) __attribute__((weak));
int __wrap_sqlite3_step(sqlite3_stmt *st);
int __wrap_sqlite3_step(sqlite3_stmt *st)
{
	if (sr_fault_hit(SR_FAULT_SQLITE))
		return SQLITE_IOERR;
	return __real_sqlite3_step(st);
}

static sqlite3 *DB(struct store *s) { return ((struct sq *)s->impl)->db; }
static sqlite3_stmt *ST(struct store_stmt *st) { return st->impl; }

int store_sqlite_err(struct sqlite3 *db, int src, struct sr_err *e,
		     const char *what)
{
	int ext = db ? sqlite3_extended_errcode(db) : src, rc;

	switch (src & 0xff) {
	case SQLITE_CONSTRAINT:
		rc = (ext == SQLITE_CONSTRAINT_UNIQUE ||
		      ext == SQLITE_CONSTRAINT_PRIMARYKEY) ? -SR_ECONFLICT : -EINVAL;
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		rc = -EBUSY;
		break;
	case SQLITE_NOMEM:
		rc = -ENOMEM;
		break;
	case SQLITE_READONLY:
		rc = -EROFS;
		break;
	default:
		rc = -EIO;
		break;
	}
	return sr_err_set(e, rc, "%s: %s", what,
			  db ? sqlite3_errmsg(db) : sqlite3_errstr(src));
}

/* greatest(a, b, ...) / least(...): PostgreSQL's meaning (NULLs are
 * ignored; all NULL gives NULL), so portable SQL reads the same. */
static void extreme(sqlite3_context *cx, int n, sqlite3_value **v, int sign)
{
	int best = -1;

	for (int i = 0; i < n; i++) {
		if (sqlite3_value_type(v[i]) == SQLITE_NULL)
			continue;
		if (best < 0) {
			best = i;
			continue;
		}
		double a = sqlite3_value_double(v[i]), b = sqlite3_value_double(v[best]);

		if (sign * (a - b) > 0)
			best = i;
	}
	if (best < 0)
		sqlite3_result_null(cx);
	else
		sqlite3_result_value(cx, v[best]);
}

static void fn_greatest(sqlite3_context *cx, int n, sqlite3_value **v)
{
	extreme(cx, n, v, 1);
}

static void fn_least(sqlite3_context *cx, int n, sqlite3_value **v)
{
	extreme(cx, n, v, -1);
}

static int sq_setup(sqlite3 *db)
{
	int f = SQLITE_UTF8 | SQLITE_DETERMINISTIC;

	if (sqlite3_create_function(db, "greatest", -1, f, NULL, fn_greatest,
				    NULL, NULL) != SQLITE_OK ||
	    sqlite3_create_function(db, "least", -1, f, NULL, fn_least,
				    NULL, NULL) != SQLITE_OK)
		return -1;
	return 0;
}

int store__sqlite_open(struct store *s, const char *path, unsigned flags,
		       struct sr_err *e)
{
	struct sq *q = calloc(1, sizeof *q);
	int src, rc = 0, of = SQLITE_OPEN_NOMUTEX;

	if (!q)
		return sr_err_set(e, -ENOMEM, "store: out of memory");
	of |= (flags & STORE_READONLY) ? SQLITE_OPEN_READONLY :
		SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	src = sqlite3_open_v2(path, &q->db, of, NULL);
	if (src != SQLITE_OK) {
		rc = sr_err_set(e, -EIO, "%s: open: %s", path, q->db ?
				sqlite3_errmsg(q->db) : sqlite3_errstr(src));
		goto fail;
	}
	q->owned = true;
	s->impl = q;
	store__register(s);
	sqlite3_busy_timeout(q->db, 10000);
	if (sq_setup(q->db)) {
		rc = store_sqlite_err(q->db, SQLITE_NOMEM, e, path);
		goto fail;
	}
	rc = s->ops->exec(s, (flags & STORE_READONLY) ? "PRAGMA foreign_keys=ON;" :
			  "PRAGMA journal_mode=WAL;"
			  "PRAGMA synchronous=NORMAL;"
			  "PRAGMA foreign_keys=ON;", e);
	if (rc) {
		sr_err_prefix(e, "%s", path);
		goto fail;
	}
	return 0;
fail:
	if (s->impl)
		store__unregister(s);
	sqlite3_close_v2(q->db);
	free(q);
	s->impl = NULL;
	return rc;
}

int store__sqlite_wrap(struct store *s, struct sqlite3 *db)
{
	struct sq *q = calloc(1, sizeof *q);

	if (!q)
		return -ENOMEM;
	q->db = db;
	s->impl = q;
	sq_setup(q->db);
	return 0;
}

struct sqlite3 *store__sqlite_handle(struct store *s) { return DB(s); }

static void sq_close(struct store *s)
{
	struct sq *q = s->impl;

	if (q->owned) {
		store__unregister(s);
		sqlite3_close_v2(q->db);
	}
	free(q);
}

static int sq_exec(struct store *s, const char *sql, struct sr_err *e)
{
	char *msg = NULL;
	int src = sqlite3_exec(DB(s), sql, NULL, NULL, &msg), rc = 0;

	if (src != SQLITE_OK) {
		rc = store_sqlite_err(DB(s), src, e, "exec");
		if (msg)
			sr_err_set(e, rc, "sql: %s", msg);
	}
	sqlite3_free(msg);
	return rc;
}

static int sq_begin(struct store *s, struct sr_err *e)
{
	return sq_exec(s, "BEGIN IMMEDIATE", e);
}

static int sq_commit(struct store *s, struct sr_err *e)
{
	return sq_exec(s, "COMMIT", e);
}

static void sq_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(DB(s)))
		sqlite3_exec(DB(s), "ROLLBACK", NULL, NULL, NULL);
}

static bool sq_in_tx(struct store *s)
{
	return !sqlite3_get_autocommit(DB(s));
}

static int sq_prepare(struct store *s, struct store_stmt *st, struct sr_err *e)
{
	sqlite3_stmt *p = NULL;
	int src = sqlite3_prepare_v3(DB(s), st->sql, -1, SQLITE_PREPARE_PERSISTENT,
				     &p, NULL);

	if (src != SQLITE_OK)
		return store_sqlite_err(DB(s), src, e, "prepare");
	st->impl = p;
	return 0;
}

static void sq_reset(struct store_stmt *st)
{
	sqlite3_reset(ST(st));
	sqlite3_clear_bindings(ST(st));
}

static void sq_finalize(struct store_stmt *st)
{
	sqlite3_finalize(ST(st));
	st->impl = NULL;
}

static int bind_rc(int src) { return src == SQLITE_OK ? 0 : -EINVAL; }

static int sq_bind_i64(struct store_stmt *st, int i, int64_t v)
{
	return bind_rc(sqlite3_bind_int64(ST(st), i, v));
}

static int sq_bind_f64(struct store_stmt *st, int i, double v)
{
	return bind_rc(sqlite3_bind_double(ST(st), i, v));
}

static int sq_bind_text(struct store_stmt *st, int i, const char *v, size_t n)
{
	return bind_rc(sqlite3_bind_text64(ST(st), i, v, n, SQLITE_TRANSIENT,
					   SQLITE_UTF8));
}

static int sq_bind_blob(struct store_stmt *st, int i, const void *v, size_t n)
{
	return bind_rc(sqlite3_bind_blob64(ST(st), i, v, n, SQLITE_TRANSIENT));
}

static int sq_bind_null(struct store_stmt *st, int i)
{
	return bind_rc(sqlite3_bind_null(ST(st), i));
}

static int sq_step(struct store_stmt *st, struct sr_err *e)
{
	int src = sqlite3_step(ST(st));

	if (src == SQLITE_ROW)
		return 1;
	if (src == SQLITE_DONE)
		return 0;
	return store_sqlite_err(DB(st->s), src, e, "step");
}

static int sq_changes(struct store_stmt *st)
{
	return sqlite3_changes(DB(st->s));
}

static int sq_col_index(struct store_stmt *st, const char *name)
{
	int n = sqlite3_column_count(ST(st));

	for (int i = 0; i < n; i++) {
		const char *c = sqlite3_column_name(ST(st), i);

		if (c && !strcasecmp(c, name))
			return i;
	}
	return -1;
}

static bool sq_col_null(struct store_stmt *st, int i)
{
	return sqlite3_column_type(ST(st), i) == SQLITE_NULL;
}

static int64_t sq_col_i64(struct store_stmt *st, int i)
{
	return sqlite3_column_int64(ST(st), i);
}

static double sq_col_f64(struct store_stmt *st, int i)
{
	return sqlite3_column_double(ST(st), i);
}

static const char *sq_col_text(struct store_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(ST(st), i);
}

static const void *sq_col_blob(struct store_stmt *st, int i, size_t *n)
{
	const void *p = sqlite3_column_blob(ST(st), i);

	*n = (size_t)sqlite3_column_bytes(ST(st), i);
	return p;
}

const struct store_ops store__sqlite_ops = {
	.name = "sqlite",
	.close = sq_close,
	.exec = sq_exec,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
	.in_tx = sq_in_tx,
	.prepare = sq_prepare,
	.reset = sq_reset,
	.finalize = sq_finalize,
	.bind_i64 = sq_bind_i64,
	.bind_f64 = sq_bind_f64,
	.bind_text = sq_bind_text,
	.bind_blob = sq_bind_blob,
	.bind_null = sq_bind_null,
	.step = sq_step,
	.changes = sq_changes,
	.col_index = sq_col_index,
	.col_null = sq_col_null,
	.col_i64 = sq_col_i64,
	.col_f64 = sq_col_f64,
	.col_text = sq_col_text,
	.col_blob = sq_col_blob,
};
