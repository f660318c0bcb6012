/*
 * dbutil.c - internal SQLite helpers shared by lib/finops.
 */
#include "dbutil.h"

int finops__db_err(sqlite3 *db, int src, struct sr_err *e, const char *what)
{
	int code;

	switch (src & 0xff) {
	case SQLITE_CONSTRAINT:
		if (src == SQLITE_CONSTRAINT_UNIQUE ||
		    src == SQLITE_CONSTRAINT_PRIMARYKEY)
			code = -SR_ECONFLICT;
		else
			code = -EINVAL;
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		code = -EBUSY;
		break;
	case SQLITE_NOMEM:
		code = -ENOMEM;
		break;
	case SQLITE_READONLY:
		code = -EROFS;
		break;
	default:
		code = -EIO;
		break;
	}
	return sr_err_set(e, code, "%s: %s", what,
			  db ? sqlite3_errmsg(db) : sqlite3_errstr(src));
}

int finops__prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st,
		    struct sr_err *e)
{
	int src = sqlite3_prepare_v2(db, sql, -1, st, NULL);

	if (src != SQLITE_OK) {
		*st = NULL;
		return finops__db_err(db, src, e, "prepare");
	}
	return 0;
}

int finops__bind_text_or_null(sqlite3_stmt *st, int idx, const char *s)
{
	if (!s || !*s)
		return sqlite3_bind_null(st, idx);
	return sqlite3_bind_text(st, idx, s, -1, SQLITE_TRANSIENT);
}

const char *finops__col_text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	return t ? (const char *)t : "";
}
