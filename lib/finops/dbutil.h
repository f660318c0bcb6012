/*
 * dbutil.h - internal SQLite helpers shared by lib/finops (not public).
 */
#ifndef SR_FINOPS_DBUTIL_H
#define SR_FINOPS_DBUTIL_H

#include <sqlite3.h>
#include <stdint.h>

#include "common/err.h"

/* Map a SQLite result code to our convention and fill *e with
 * "<what>: <sqlite message>".  Unique/primary-key violations become
 * -SR_ECONFLICT, other constraint failures -EINVAL, BUSY/LOCKED -EBUSY,
 * NOMEM -ENOMEM, anything else -EIO. */
int finops__db_err(sqlite3 *db, int src, struct sr_err *e, const char *what);

/* Prepare `sql` or fail through finops__db_err. */
int finops__prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st,
		    struct sr_err *e);

struct finops_filter;

/* Prepare `sql`, whose ?1 ?2 ?3 are since_ns, until_ns and job_id, and
 * bind them from f (NULL = no filter).  Lives in report.c. */
int finops__prepare_filtered(sqlite3 *db, const char *sql,
			     const struct finops_filter *f, sqlite3_stmt **st,
			     struct sr_err *e);

/* Bind a string, or NULL when s is NULL or "". */
int finops__bind_text_or_null(sqlite3_stmt *st, int idx, const char *s);

/* Column text or "" (never NULL). */
const char *finops__col_text(sqlite3_stmt *st, int col);

#endif
