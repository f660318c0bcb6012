/*
 * store_pg.c - the PostgreSQL backend of lib/store (libpq).
 *
 * Statements are prepared once per connection (PQprepare, named s<N>)
 * with '?'/'?N' rewritten to $N; parameters travel as text (blobs as
 * binary); results come back as text and are converted on read (bytea
 * is unescaped into a buffer the statement owns).  A statement runs as a
 * whole on its first store_step; the rows are then walked in memory, so
 * another statement may run while one is being read.
 *
 * Writers serialise like SQLite's BEGIN IMMEDIATE: store_begin takes a
 * transaction-scoped advisory lock (STORE_PG_TX_LOCK), released at
 * COMMIT/ROLLBACK - or when the server ends a transaction left idle past
 * the connection's limit (store_set_idle_tx_limit: SET LOCAL
 * idle_in_transaction_session_timeout in the same round trip).
 *
 * A connection the server dropped (restart, failover) is opened again by
 * pg_reconnect (store.c decides when, with backoff); each reconnection
 * bumps the connection's generation, and a statement prepared under an
 * older one is prepared again on its next step.  A read that fails on
 * its first step outside a transaction because the connection dropped
 * is run again on the new connection; anything else is reported (the
 * caller's transaction was rolled back by the server).
 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/store_int.h"

#define STORE_PG_TX_LOCK 0x73706f7472756e /* "spotrun" */

struct pg {
	PGconn *conn;
	unsigned nextname;
	unsigned gen;     /* bumped by each reconnection */
	bool lost;        /* a failure said the connection is gone */
	unsigned flags;   /* store_open's, for the session settings */
};

struct pgst {
	char name[24];
	char *sql;        /* owned: the text in PostgreSQL's $N form */
	unsigned gen;     /* the connection generation it is prepared in */
	bool read;        /* a SELECT: safe to run again on a new connection */
	int nparams;
	char **vals;      /* owned, nparams entries (NULL = SQL NULL) */
	int *lens, *fmts;
	PGresult *res;    /* current result, or NULL before the first step */
	int row;          /* current row, -1 before the first */
	unsigned char *blob; /* last unescaped bytea (owned) */
};

static PGconn *CONN(struct store *s) { return ((struct pg *)s->impl)->conn; }
static struct pgst *PS(struct store_stmt *st) { return st->impl; }

/* Map a failed result (or a NULL one) to our codes; SQLSTATE classes:
 * 23505 unique, 23xxx other constraints, 40001/40P01/55P03 busy, 25006
 * read-only transaction. */
/* libpq's message without its trailing newline ("no message" if none),
 * into clean[SR_ERR_MSG_MAX]. */
static const char *msg_clean(const char *msg, char *clean)
{
	size_t n;

	snprintf(clean, SR_ERR_MSG_MAX, "%s", msg && *msg ? msg : "no message");
	n = strlen(clean);
	while (n && (clean[n - 1] == '\n' || clean[n - 1] == ' '))
		clean[--n] = 0;
	return clean;
}

static int pg_err(struct store *s, PGresult *r, struct sr_err *e,
		  const char *what)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = r ? PQresultErrorMessage(r) : PQerrorMessage(CONN(s));
	char clean[SR_ERR_MSG_MAX];
	int rc = -EIO;

	/* no SQLSTATE (libpq's own "server closed the connection"), class
	 * 08 (connection exception), 57P01..57P03 (shutdown, crash, not yet
	 * accepting), 25P03 (idle in a transaction past the limit,
	 * store_set_idle_tx_limit): the connection is gone, whatever
	 * PQstatus says yet */
	if (!state || !strncmp(state, "08", 2) || !strncmp(state, "57P0", 4) ||
	    !strcmp(state, "25P03"))
		((struct pg *)s->impl)->lost = true;
	if (state && !strcmp(state, "23505"))
		rc = -SR_ECONFLICT;
	else if (state && !strncmp(state, "23", 2))
		rc = -EINVAL;
	else if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01") ||
			   !strcmp(state, "55P03")))
		rc = -EBUSY;
	else if (state && !strcmp(state, "25006"))
		rc = -EROFS;
	return sr_err_set(e, rc, "%s: %s", what, msg_clean(msg, clean));
}

static void notice_quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg; /* "relation already exists, skipping" and the like */
}

static int pg_exec(struct store *s, const char *sql, struct sr_err *e);

/* The settings every connection of ours carries. */
static int session(struct store *s, struct sr_err *e)
{
	struct pg *p = s->impl;

	PQsetNoticeProcessor(p->conn, notice_quiet, NULL);
	return pg_exec(s, (p->flags & STORE_READONLY) ?
		       "SET default_transaction_read_only = on;"
		       "SET client_min_messages = warning" :
		       "SET client_min_messages = warning", e);
}

static bool pg_broken(struct store *s)
{
	return ((struct pg *)s->impl)->lost || PQstatus(CONN(s)) != CONNECTION_OK;
}

static int pg_reconnect(struct store *s, struct sr_err *e)
{
	struct pg *p = s->impl;

	PQreset(p->conn);
	if (PQstatus(p->conn) != CONNECTION_OK) {
		char clean[SR_ERR_MSG_MAX];

		return sr_err_set(e, -EIO, "postgresql: reconnect: %s",
				  msg_clean(PQerrorMessage(p->conn), clean));
	}
	p->gen++;
	p->lost = false;
	return session(s, e);
}

int store__pg_open(struct store *s, const char *conninfo, unsigned flags,
		   struct sr_err *e)
{
	struct pg *p = calloc(1, sizeof *p);

	if (!p)
		return sr_err_set(e, -ENOMEM, "store: out of memory");
	p->conn = PQconnectdb(conninfo);
	p->flags = flags;
	if (!p->conn) {
		free(p);
		return sr_err_set(e, -ENOMEM, "postgresql: connect: out of memory");
	}
	/* from here the caller owns p through s->impl: a connection that
	 * failed may be waited for (STORE_WAIT) or is closed by the caller */
	s->impl = p;
	if (PQstatus(p->conn) != CONNECTION_OK) {
		char clean[SR_ERR_MSG_MAX];

		return sr_err_set(e, -EIO, "postgresql: connect: %s",
				  msg_clean(PQerrorMessage(p->conn), clean));
	}
	return session(s, e);
}

static void pg_close(struct store *s)
{
	struct pg *p = s->impl;

	PQfinish(p->conn);
	free(p);
}

static int pg_exec(struct store *s, const char *sql, struct sr_err *e)
{
	PGresult *r = PQexec(CONN(s), sql);
	ExecStatusType t = PQresultStatus(r);
	int rc = 0;

	if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK)
		rc = pg_err(s, r, e, "exec");
	PQclear(r);
	return rc;
}

static int pg_begin(struct store *s, struct sr_err *e)
{
	char sql[160];
	int rc;

	/* the idle limit first: waiting for the lock is not idle */
	snprintf(sql, sizeof sql, "BEGIN; SET LOCAL "
		 "idle_in_transaction_session_timeout = %d; "
		 "SELECT pg_advisory_xact_lock(%lld)", s->idle_tx_ms,
		 (long long)STORE_PG_TX_LOCK);
	rc = pg_exec(s, sql, e);
	if (rc)
		pg_exec(s, "ROLLBACK", NULL);
	return rc;
}

static int pg_commit(struct store *s, struct sr_err *e)
{
	return pg_exec(s, "COMMIT", e);
}

static bool pg_in_tx(struct store *s)
{
	PGTransactionStatusType t = PQtransactionStatus(CONN(s));

	return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

static void pg_rollback(struct store *s)
{
	if (pg_in_tx(s))
		PQclear(PQexec(CONN(s), "ROLLBACK"));
}

/* Rewrite '?' and '?N' outside quotes to $N; *nparams = the highest N. */
static char *rewrite(const char *sql, int *nparams)
{
	size_t n = strlen(sql);
	char *out = malloc(n * 4 + 1), *o = out;
	int next = 0, hi = 0;
	char quote = 0;

	if (!out)
		return NULL;
	for (const char *p = sql; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			*o++ = *p;
			continue;
		}
		if (*p == '\'' || *p == '"') {
			quote = *p;
			*o++ = *p;
			continue;
		}
		if (*p != '?') {
			*o++ = *p;
			continue;
		}
		if (p[1] >= '0' && p[1] <= '9') {
			int k = (int)strtol(p + 1, (char **)&p, 10);

			p--;
			next = k > next ? k : next;
			o += sprintf(o, "$%d", k);
			hi = k > hi ? k : hi;
		} else {
			o += sprintf(o, "$%d", ++next);
			hi = next > hi ? next : hi;
		}
	}
	*o = 0;
	*nparams = hi;
	return out;
}

static void pgst_free(struct pgst *q)
{
	if (!q)
		return;
	for (int i = 0; i < q->nparams; i++)
		free(q->vals[i]);
	free(q->vals);
	free(q->lens);
	free(q->fmts);
	PQclear(q->res);
	PQfreemem(q->blob);
	free(q->sql);
	free(q);
}

/* PREPARE q on the current connection. */
static int send_prepare(struct store *s, struct pgst *q, struct sr_err *e)
{
	struct pg *p = s->impl;
	PGresult *r = PQprepare(p->conn, q->name, q->sql, q->nparams, NULL);
	int rc = 0;

	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		rc = pg_err(s, r, e, "prepare");
	else
		q->gen = p->gen;
	PQclear(r);
	return rc;
}

static int pg_prepare(struct store *s, struct store_stmt *st, struct sr_err *e)
{
	struct pg *p = s->impl;
	struct pgst *q = calloc(1, sizeof *q);
	char *sql = NULL;
	int rc = 0;

	if (q)
		sql = rewrite(st->sql, &q->nparams);
	if (!q || !sql)
		goto nomem;
	if (q->nparams) {
		q->vals = calloc((size_t)q->nparams, sizeof *q->vals);
		q->lens = calloc((size_t)q->nparams, sizeof *q->lens);
		q->fmts = calloc((size_t)q->nparams, sizeof *q->fmts);
		if (!q->vals || !q->lens || !q->fmts)
			goto nomem;
	}
	snprintf(q->name, sizeof q->name, "s%u", ++p->nextname);
	q->row = -1;
	q->sql = sql;
	sql = NULL;
	q->read = !strncasecmp(q->sql + strspn(q->sql, " \t\n("), "SELECT", 6);
	rc = send_prepare(s, q, e);
	if (rc)
		goto fail;
	st->impl = q;
	return 0;
nomem:
	rc = sr_err_set(e, -ENOMEM, "store: out of memory");
fail:
	free(sql);
	pgst_free(q);
	return rc;
}

static void pg_reset(struct store_stmt *st)
{
	struct pgst *q = PS(st);

	for (int i = 0; i < q->nparams; i++) {
		free(q->vals[i]);
		q->vals[i] = NULL;
		q->lens[i] = 0;
		q->fmts[i] = 0;
	}
	PQclear(q->res);
	q->res = NULL;
	q->row = -1;
	PQfreemem(q->blob);
	q->blob = NULL;
}

static void pg_finalize(struct store_stmt *st)
{
	struct pgst *q = PS(st);
	char sql[48];

	if (!q)
		return;
	snprintf(sql, sizeof sql, "DEALLOCATE %s", q->name);
	if (PQstatus(CONN(st->s)) == CONNECTION_OK &&
	    q->gen == ((struct pg *)st->s->impl)->gen &&
	    PQtransactionStatus(CONN(st->s)) == PQTRANS_IDLE)
		PQclear(PQexec(CONN(st->s), sql));
	pgst_free(q);
	st->impl = NULL;
}

static int set_param(struct store_stmt *st, int i, const void *v, size_t n,
		     int fmt)
{
	struct pgst *q = PS(st);
	char *copy;

	if (i < 1 || i > q->nparams)
		return -EINVAL;
	copy = NULL;
	if (v) {
		copy = malloc(n + 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, v, n);
		copy[n] = 0;
	}
	free(q->vals[i - 1]);
	q->vals[i - 1] = copy;
	q->lens[i - 1] = (int)n;
	q->fmts[i - 1] = fmt;
	return 0;
}

static int pg_bind_i64(struct store_stmt *st, int i, int64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof b, "%lld", (long long)v);

	return set_param(st, i, b, (size_t)n, 0);
}

static int pg_bind_f64(struct store_stmt *st, int i, double v)
{
	char b[40];
	int n = snprintf(b, sizeof b, "%.17g", v);

	return set_param(st, i, b, (size_t)n, 0);
}

static int pg_bind_text(struct store_stmt *st, int i, const char *v, size_t n)
{
	return set_param(st, i, v, n, 0);
}

static int pg_bind_blob(struct store_stmt *st, int i, const void *v, size_t n)
{
	return set_param(st, i, v, n, 1);
}

static int pg_bind_null(struct store_stmt *st, int i)
{
	return set_param(st, i, NULL, 0, 0);
}

/* Run q (prepared again first on a new connection); 0 or an error. */
static int run_prepared(struct store *s, struct pgst *q, struct sr_err *e)
{
	ExecStatusType t;
	int rc;

	if (q->gen != ((struct pg *)s->impl)->gen) {
		rc = send_prepare(s, q, e);
		if (rc)
			return rc;
	}
	q->res = PQexecPrepared(CONN(s), q->name, q->nparams,
				(const char *const *)q->vals, q->lens, q->fmts, 0);
	t = PQresultStatus(q->res);
	if (t == PGRES_TUPLES_OK || t == PGRES_COMMAND_OK)
		return 0;
	rc = pg_err(s, q->res, e, "step");
	PQclear(q->res);
	q->res = NULL;
	return rc;
}

static int pg_step(struct store_stmt *st, struct sr_err *e)
{
	struct pgst *q = PS(st);

	if (!q->res) {
		bool outside = !pg_in_tx(st->s);
		int rc = run_prepared(st->s, q, e);

		if (rc && outside && q->read && pg_broken(st->s)) {
			rc = store__reconnect(st->s, e);
			if (!rc)
				rc = run_prepared(st->s, q, e);
		}
		if (rc)
			return rc;
		q->row = -1;
	}
	if (q->row + 1 < PQntuples(q->res)) {
		q->row++;
		return 1;
	}
	q->row = PQntuples(q->res);
	return 0;
}

static int pg_changes(struct store_stmt *st)
{
	const char *n = PS(st)->res ? PQcmdTuples(PS(st)->res) : "";

	return *n ? atoi(n) : 0;
}

static int pg_col_index(struct store_stmt *st, const char *name)
{
	return PS(st)->res ? PQfnumber(PS(st)->res, name) : -1;
}

static bool cur_ok(struct store_stmt *st)
{
	struct pgst *q = PS(st);

	return q->res && q->row >= 0 && q->row < PQntuples(q->res);
}

static bool pg_col_null(struct store_stmt *st, int i)
{
	return !cur_ok(st) || PQgetisnull(PS(st)->res, PS(st)->row, i);
}

static int64_t pg_col_i64(struct store_stmt *st, int i)
{
	const char *v;

	if (pg_col_null(st, i))
		return 0;
	v = PQgetvalue(PS(st)->res, PS(st)->row, i);
	if (*v == 't')
		return 1;
	if (*v == 'f')
		return 0;
	if (strpbrk(v, ".eE")) /* a numeric/double read as an integer */
		return (int64_t)strtod(v, NULL);
	return strtoll(v, NULL, 10);
}

static double pg_col_f64(struct store_stmt *st, int i)
{
	if (pg_col_null(st, i))
		return 0.0;
	return strtod(PQgetvalue(PS(st)->res, PS(st)->row, i), NULL);
}

static const char *pg_col_text(struct store_stmt *st, int i)
{
	if (pg_col_null(st, i))
		return NULL;
	return PQgetvalue(PS(st)->res, PS(st)->row, i);
}

#define PG_BYTEA_OID 17

static const void *pg_col_blob(struct store_stmt *st, int i, size_t *n)
{
	struct pgst *q = PS(st);
	const char *v;

	*n = 0;
	if (pg_col_null(st, i))
		return NULL;
	v = PQgetvalue(q->res, q->row, i);
	if (PQftype(q->res, i) != PG_BYTEA_OID) {
		*n = (size_t)PQgetlength(q->res, q->row, i);
		return v;
	}
	PQfreemem(q->blob);
	q->blob = PQunescapeBytea((const unsigned char *)v, n);
	return q->blob;
}

const struct store_ops store__pg_ops = {
	.name = "postgresql",
	.close = pg_close,
	.exec = pg_exec,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.in_tx = pg_in_tx,
	.broken = pg_broken,
	.reconnect = pg_reconnect,
	.prepare = pg_prepare,
	.reset = pg_reset,
	.finalize = pg_finalize,
	.bind_i64 = pg_bind_i64,
	.bind_f64 = pg_bind_f64,
	.bind_text = pg_bind_text,
	.bind_blob = pg_bind_blob,
	.bind_null = pg_bind_null,
	.step = pg_step,
	.changes = pg_changes,
	.col_index = pg_col_index,
	.col_null = pg_col_null,
	.col_i64 = pg_col_i64,
	.col_f64 = pg_col_f64,
	.col_text = pg_col_text,
	.col_blob = pg_col_blob,
};
