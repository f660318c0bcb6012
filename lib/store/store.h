/*
 * store.h - the one interface to spotrun's state (docs/store.md).
 *
 * Two backends sit behind it: SQLite (the default; one file, WAL mode,
 * STRICT tables) and PostgreSQL (libpq).  Nothing outside lib/store
 * includes sqlite3.h or libpq-fe.h.
 *
 * Connections.  A struct store is one connection, used by one thread at a
 * time; spotrund opens one per thread.  store_open() takes a location:
 *   "postgresql://..." or "postgres://..."  PostgreSQL (a libpq URI);
 *   "sqlite:PATH" or a plain PATH            SQLite.
 *
 * Statements.  SQL is written once, portably: '?' or '?N' placeholders
 * (rewritten to $N for PostgreSQL), RETURNING instead of
 * last_insert_rowid(), greatest()/least() instead of scalar max()/min()
 * functions (SQLite gets them registered at open), no strftime.  store_prepare() returns the connection's
 * cached statement for that SQL text (prepared on first use, never
 * again), reset with its bindings cleared; store_done() gives it back.
 * Columns are read by name, never by position.
 *
 * Errors.  Every call that can fail returns 0 (or a count / 1 for "a row")
 * on success and a negative code on failure, described in *e:
 *   -SR_ECONFLICT  a unique or primary-key constraint;
 *   -EINVAL        any other constraint (CHECK, NOT NULL, foreign key);
 *   -EBUSY         the database is locked / a serialisation failure;
 *   -ENOMEM        out of memory;
 *   -EROFS         a write on a read-only connection;
 *   -EIO           anything else, the connection included.
 * A step error is an error, never the end of the rows.
 *
 * Transactions.  store_begin() opens a write transaction that serialises
 * with every other writer (SQLite: BEGIN IMMEDIATE; PostgreSQL: BEGIN
 * plus a transaction-scoped advisory lock), so a read-modify-write inside
 * it sees no concurrent change.  store_end(s, rc, e) commits when rc is 0
 * and rolls back otherwise.
 *
 * A dropped connection (PostgreSQL restarted, failed over, network).  The
 * next store_begin, store_prepare or autocommit statement on it opens it
 * again; while the server is unreachable it waits, with backoff and
 * jitter on the monotonic clock (50 ms doubling to 2 s), for at most
 * 60 s, logging "store unreachable, retrying" (at most one line per 5 s
 * for the process) and "store reachable again".  A read that fails on
 * its first step outside a transaction because the connection dropped
 * is run again on the new one.  A transaction the drop cut is rolled
 * back by the server and its call fails (-EIO): the caller's retry (the
 * reconciler's next pass, the client's retry of an idempotent request)
 * runs it again.
 *
 * Schema.  store_migrate() brings the schema to this binary's version in
 * one transaction (lib/store/schema.c); a database written by a newer
 * binary is refused with a message naming both versions.
 */
#ifndef SR_STORE_H
#define SR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct store;
struct store_stmt;

enum store_backend { STORE_SQLITE = 1, STORE_POSTGRES = 2 };

/* store_open flags */
#define STORE_READONLY 0x1 /* SQLite: open read-only; PostgreSQL: a
			    * read-only default transaction mode */
#define STORE_WAIT 0x2     /* PostgreSQL: a server that cannot be reached
			    * is waited for, with backoff, up to a bound
			    * (a daemon's later connections; see below) */

/* Open a connection to `where` (see above).  Does not migrate.  On
 * success *out is a new connection for store_close(). */
int store_open(const char *where, unsigned flags, struct store **out,
	       struct sr_err *e);
void store_close(struct store *s);

enum store_backend store_backend(const struct store *s);
/* The backend a location names (without opening it). */
enum store_backend store_backend_of(const char *where);
/* "sqlite" or "postgresql" */
const char *store_backend_name(const struct store *s);

/* Bring the schema to this binary's version, in one transaction. */
int store_migrate(struct store *s, struct sr_err *e);
/* Refresh the query planner's statistics of every table.  PostgreSQL:
 * ANALYZE.  A database that was never analyzed (just created, or filled
 * faster than autovacuum looks at it) leaves the planner guessing: with
 * 10,000 live nodes and no statistics, its generic plan for "job_id=?
 * AND state IN (...)" intersected the state index's every entry (2 ms a
 * query instead of 0.01).  spotrund runs it once at start-up; autovacuum
 * keeps the statistics current after.  SQLite: nothing (its planner
 * needs no statistics for these queries). */
int store_analyze(struct store *s, struct sr_err *e);
/* The schema version recorded in the database (0 when none) and the one
 * this binary writes. */
int store_schema_version(struct store *s, struct sr_err *e);
int store_schema_latest(void);

/* Transactions (see above).  store_rollback is a no-op outside one. */
int store_begin(struct store *s, struct sr_err *e);
int store_commit(struct store *s, struct sr_err *e);
void store_rollback(struct store *s);
int store_end(struct store *s, int rc, struct sr_err *e);
bool store_in_tx(const struct store *s);

/* A fence: a check run inside every transaction store_begin() opens on
 * this connection, before the caller's statements, under the writers'
 * lock (so no other writer commits between the check and the caller's
 * commit).  Non-zero fails the store_begin (rolled back) with that
 * error.  The control plane's leader fences its reconciler's
 * transactions with its lease epoch (lib/ctl/lease.c).  NULL removes it.
 * On a fenced connection a write run outside a transaction (an
 * autocommit INSERT, UPDATE or DELETE) gets a transaction of its own,
 * fenced the same way: store_step / store_run open it before the
 * statement's first step and commit it after its last (or roll it back
 * on an error, the fence's included); store_done commits one a caller
 * left open (a RETURNING row read, the rest not), logging a failure it
 * cannot return - run a write to its end to see its commit's error. */
typedef int (*store_fence_fn)(struct store *s, void *ud, struct sr_err *e);
void store_set_fence(struct store *s, store_fence_fn fn, void *ud);

/* How long a transaction on this connection may sit idle (between its
 * statements, the client not sending) before the server ends it and
 * the connection: ms, 0 for no limit (the default).  PostgreSQL: a
 * writer frozen inside a transaction (SIGSTOP, a paused VM) holds the
 * writers' lock, and every other writer - a standby taking over an
 * expired lease included - would wait for it until it runs again; past
 * the limit the server rolls its transaction back (its next statement
 * fails, the connection is opened again).  spotrund sets its lease
 * (lib/ctl/lease.c).  SQLite: nothing (one process holds the state). */
void store_set_idle_tx_limit(struct store *s, int ms);

/* Run SQL that returns no rows and takes no parameters (DDL). */
int store_exec_sql(struct store *s, const char *sql, struct sr_err *e);

/* The cached prepared statement for `sql`.  The caller binds, steps and
 * then calls store_done(*st) (even after an error).  A statement already
 * in use (a nested query with the same text) gets a private copy. */
int store_prepare(struct store *s, const char *sql, struct store_stmt **st,
		  struct sr_err *e);
void store_done(struct store_stmt *st);

/* Bind parameter idx (1-based).  NULL text binds SQL NULL. */
int store_bind_i64(struct store_stmt *st, int idx, int64_t v);
int store_bind_f64(struct store_stmt *st, int idx, double v);
int store_bind_text(struct store_stmt *st, int idx, const char *v);
int store_bind_textn(struct store_stmt *st, int idx, const char *v, size_t n);
int store_bind_blob(struct store_stmt *st, int idx, const void *v, size_t n);
int store_bind_null(struct store_stmt *st, int idx);

/* Next row: 1 = a row, 0 = no more rows, negative = error (in *e). */
int store_step(struct store_stmt *st, struct sr_err *e);
/* Run a statement to its end; returns the number of rows it changed. */
int store_run(struct store_stmt *st, struct sr_err *e);

/* Columns of the current row, by name.  A name the result lacks is a
 * programming error: it reads as NULL and logs once.  text never returns
 * NULL ("" for SQL NULL); pointers stay valid until the next step/done. */
bool store_col_null(struct store_stmt *st, const char *name);
int64_t store_col_i64(struct store_stmt *st, const char *name);
double store_col_f64(struct store_stmt *st, const char *name);
const char *store_col_text(struct store_stmt *st, const char *name);
const void *store_col_blob(struct store_stmt *st, const char *name,
			   size_t *n);

/* One-shot helpers over a cached statement: the first column of the
 * first row of `sql` bound with one int64 (ok: 1 found, 0 none, <0). */
int store_query_i64(struct store *s, const char *sql, int64_t arg,
		    int64_t *out, struct sr_err *e);

/* settings(key, value): small persistent facts (clock epoch, scale). */
int store_setting_get(struct store *s, const char *key, char *buf, size_t n,
		      struct sr_err *e); /* -SR_ENOTFOUND when absent */
int store_setting_set(struct store *s, const char *key, const char *val,
		      struct sr_err *e);
/* Set key only if it is absent (the first writer wins: two daemons
 * starting at once on one database agree on what it holds). */
int store_setting_add(struct store *s, const char *key, const char *val,
		      struct sr_err *e);

/* ---- domain rows and functions (store_jobs.c) ----
 * Every one runs inside the caller's transaction when there is one. */

/* One row of the append-only event log (table events). */
struct store_event {
	int64_t job_id;
	const char *type;        /* "created", "transition", ... */
	const char *from, *to;   /* job states, or NULL */
	int64_t node_id;         /* 0 = none */
	int64_t ts_ns;           /* wall clock */
	double sim_s;            /* cloud clock */
	const char *message;     /* NULL = "" */
	const char *data;        /* compact JSON text, or NULL */
};

/* Append ev; *seq (if not NULL) gets its sequence number. */
int store_event_add(struct store *s, const struct store_event *ev,
		    int64_t *seq, struct sr_err *e);

/* Compare-and-set a job's state: from -> to, stamping state_since_ns,
 * updated_ns, message and (when `terminal`) finished_ns.  Returns 1 when
 * it moved, 0 when the job was not in `from` (or does not exist). */
int store_job_set_state(struct store *s, int64_t id, const char *from,
			const char *to, bool terminal, int64_t now_ns,
			const char *msg, struct sr_err *e);

/* Ask for a job's cancellation (desired: run -> cancel).  Returns 1 when
 * it changed, 0 when the job was already cancelling; -SR_ENOTFOUND when
 * there is no such job. */
int store_job_request_cancel(struct store *s, int64_t id, int64_t now_ns,
			     struct sr_err *e);

/* Each ended job (SUCCEEDED, FAILED, CANCELLED): fn(ud, id, state) in
 * no given order; a non-zero return from fn stops the walk and is
 * returned.  0, fn's value, or an error. */
int store_jobs_ended(struct store *s,
		     int (*fn)(void *ud, int64_t id, const char *state),
		     void *ud, struct sr_err *e);

/* ---- row structs (store_rows.c) ----
 * A job's or a node's row as one struct: the one place that knows which
 * column fills which field.  A nullable integer column that is NULL reads
 * STORE_NULL_I64, a nullable real NAN, a nullable text NULL (a NOT NULL
 * or defaulted text never reads NULL).  Text points into a buffer the row
 * owns (text_): store_node_free / store_job_free release it, and the row
 * stays valid after its statement. */
#define STORE_NULL_I64 INT64_MIN

/* One row of table nodes (docs/store.md; schema.c). */
struct store_node {
	int64_t id, job_id, rank;
	const char *state;          /* REQUESTED BOOTING READY TERMINATED LOST */
	const char *phase;          /* "queued", "pending" or "" */
	const char *provider, *cloud, *region, *zone, *instance_type;
	const char *accelerator;
	double accel_count;
	bool spot, retire;
	bool spare;                 /* launched as a warm spare (schema 16) */
	int64_t adopted_ns;         /* nullable: a spare took a rank then */
	int pool;                   /* index into the provider's offerings */
	int64_t price_micros, list_micros, reserved_micros; /* per hour */
	int64_t cost_micros;        /* billed so far */
	int64_t pid;                /* nullable */
	int64_t created_ns, boot_at_ns;
	int64_t registered_ns, last_hb_ns, notice_ns, kill_ns; /* nullable */
	int64_t terminated_ns, billed_until_ns;                /* nullable */
	int64_t rebalance_ns;       /* nullable: a rebalance recommendation */
	const char *end_reason;     /* nullable */
	const char *workload;       /* the agent's last report: idle, running ... */
	int64_t wl_attempt;
	double cpu_util, gpu_util;  /* nullable */
	double util_sum;            /* utilisation samples since the last bill */
	int64_t util_n;
	int64_t setup_rc;           /* nullable */
	const char *instance_id, *driver_blob, *addr; /* nullable */
	char *text_;                /* owns every text above */
};

/* Node id into *n (store_node_free it): 0, -SR_ENOTFOUND, or an error. */
int store_node_load(struct store *s, int64_t id, struct store_node *n,
		    struct sr_err *e);
/* The nodes of job (0: of every job), only the live ones (REQUESTED,
 * BOOTING, READY) when live_only, in id order, at most limit (0: all):
 * a new array of *count rows for store_nodes_free. */
int store_node_list(struct store *s, int64_t job, bool live_only,
		    size_t limit, struct store_node **out, size_t *count,
		    struct sr_err *e);
/* The nodes matching `where`, SQL over table nodes written in the
 * caller (never built from data) with one parameter, ?1 = arg, in id
 * order: for the reconciler's own filters (kill pending, noticed, ...). */
int store_node_select(struct store *s, const char *where, int64_t arg,
		      struct store_node **out, size_t *count, struct sr_err *e);
void store_node_free(struct store_node *n);
void store_nodes_free(struct store_node *v, size_t n);

/* One row of table jobs: the columns the API (views.c) and the
 * reconciler (reconcile.c) read; not the policy's memory, the workload
 * estimator's state or the idempotency key. */
struct store_job {
	int64_t id;
	const char *name, *state, *desired;
	const char *spec_name;
	const char *spec_json;      /* "" unless loaded with STORE_JOB_SPEC */
	const char *workdir;        /* nullable */
	int64_t num_nodes, attempt, restarts, max_restarts;
	int64_t preemptions, moves, recoveries;
	int64_t exit_code;          /* nullable */
	int64_t created_ns, updated_ns, state_since_ns;
	int64_t finished_ns;        /* nullable */
	double sim_start_s;         /* cloud clock at creation */
	double deadline_s;          /* nullable: cloud s after sim_start_s */
	double work_s, est_work_s;  /* declared work, its estimate (0: none) */
	int64_t step, total_steps, ckpt_step; /* nullable */
	int64_t ckpt_local_step, ckpt_store_ns; /* nullable: tier 3's
						 * recovery point */
	double step_ns;             /* nullable: measured wall ns per step */
	const char *placement;      /* nullable: JSON */
	const char *message;
	int64_t cost_micros, list_cost_micros, reserved_cost_micros;
	bool reserved_unknown;      /* some offering had no reserved price */
	double run_s;               /* cloud seconds RUNNING, past attempts */
	int64_t run_started_ns, down_since_ns, notice_ns; /* nullable */
	const char *recover_reason; /* nullable: preempted, lost, crash */
	const char *candidates;     /* nullable: JSON placement plan */
	int64_t policy_tick;        /* last tick the policy decided, -1 */
	double est_pace_ns, est_restart_s; /* workest.h; 0 unknown */
	int64_t pace_attempt;
	int64_t pace_step0;         /* nullable */
	int64_t deadline_state;     /* recon_deadline.c: 0 none, 1 risk, 2 missed */
	char *text_;                /* owns every text above */
};

/* store_job_load what: also the job's spec (spec_json, which can be
 * large: the reconciler does not read it). */
#define STORE_JOB_SPEC 0x1
/* Job id into *j (store_job_free it): 0, -SR_ENOTFOUND, or an error. */
int store_job_load(struct store *s, int64_t id, unsigned what,
		   struct store_job *j, struct sr_err *e);
void store_job_free(struct store_job *j);

/* A launch's sealed parameters (table node_launch; lib/ctl/clouds.c):
 *   _put: keep them for node (1), or leave the row already kept (0);
 *   _get: 1 with key (its idempotency key) and *sealed (malloc'd, caller
 *         frees; *n bytes), or 0 when none is kept;
 *   _del: drop them (the instance is recorded).
 * Negative codes with *e. */
int store_launch_put(struct store *s, int64_t node, const char *key,
		     const void *sealed, size_t n, int64_t now_ns,
		     struct sr_err *e);
int store_launch_get(struct store *s, int64_t node, char *key, size_t keylen,
		     void **sealed, size_t *n, struct sr_err *e);
int store_launch_del(struct store *s, int64_t node, struct sr_err *e);

/* For code not yet moved behind this interface (docs/store.md lists it:
 * the reconciler files) and the entry points they call:
 * store_sqlite_handle: the SQLite connection, or NULL on PostgreSQL;
 * store_sqlite_err: SQLite errors mapped as the store maps them;
 * store_bridge: the open store whose SQLite connection is db, or, for a
 * connection no store opened, a new store over it that *tmp owns (the
 * caller store_close()s *tmp, which leaves db open). */
struct sqlite3;
struct sqlite3 *store_sqlite_handle(struct store *s);
/* store_sqlite_err: SQLite's result src (and db's extended code) as this
 * interface's error convention, with "what: message" in e. */
int store_sqlite_err(struct sqlite3 *db, int src, struct sr_err *e,
		     const char *what);
int store_bridge(struct sqlite3 *db, struct store **out, struct store **tmp,
		 struct sr_err *e);

#endif
