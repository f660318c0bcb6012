/*
 * store_int.h - what the two backends of lib/store share (not public).
 *
 * store.c owns the connection object, the statement cache and the
 * migrations; a backend (store_sqlite.c, store_pg.c) fills a struct
 * store_ops and keeps its own state in s->impl and st->impl.
 */
#ifndef SR_STORE_INT_H
#define SR_STORE_INT_H

#include "store/store.h"

struct store_ops {
	const char *name;
	void (*close)(struct store *s);
	int (*exec)(struct store *s, const char *sql, struct sr_err *e);
	int (*begin)(struct store *s, struct sr_err *e);
	int (*commit)(struct store *s, struct sr_err *e);
	void (*rollback)(struct store *s);
	bool (*in_tx)(struct store *s);
	/* the server dropped the connection (NULL: it cannot happen); then
	 * reconnect opens a new one, and every statement prepared on the old
	 * one is prepared again on its next step */
	bool (*broken)(struct store *s);
	int (*reconnect)(struct store *s, struct sr_err *e);

	/* statement: prepare fills st->impl; reset drops the current result
	 * and bindings; finalize releases st->impl */
	int (*prepare)(struct store *s, struct store_stmt *st, struct sr_err *e);
	void (*reset)(struct store_stmt *st);
	void (*finalize)(struct store_stmt *st);
	int (*bind_i64)(struct store_stmt *st, int idx, int64_t v);
	int (*bind_f64)(struct store_stmt *st, int idx, double v);
	int (*bind_text)(struct store_stmt *st, int idx, const char *v, size_t n);
	int (*bind_blob)(struct store_stmt *st, int idx, const void *v, size_t n);
	int (*bind_null)(struct store_stmt *st, int idx);
	int (*step)(struct store_stmt *st, struct sr_err *e);
	int (*changes)(struct store_stmt *st);

	/* columns of the current row by index; col_index: -1 if absent */
	int (*col_index)(struct store_stmt *st, const char *name);
	bool (*col_null)(struct store_stmt *st, int i);
	int64_t (*col_i64)(struct store_stmt *st, int i);
	double (*col_f64)(struct store_stmt *st, int i);
	const char *(*col_text)(struct store_stmt *st, int i);
	const void *(*col_blob)(struct store_stmt *st, int i, size_t *n);
};

struct store_stmt {
	struct store *s;
	char *sql;          /* owned copy of the text it was prepared from */
	uint64_t hash;
	bool busy;          /* handed out by store_prepare, not yet done */
	bool priv;          /* a private copy: finalized by store_done */
	bool write;         /* INSERT/UPDATE/DELETE (or WITH ... one of them) */
	bool own_tx;        /* a fenced autocommit write: the transaction
			     * store_step opened for it is still open */
	void *impl;
};

struct store {
	const struct store_ops *ops;
	enum store_backend backend;
	void *impl;
	struct store_stmt **cache; /* owned; every cached statement */
	size_t ncache, capcache;
	store_fence_fn fence;      /* run inside every store_begin, or NULL */
	void *fence_ud;
	int idle_tx_ms;             /* store_set_idle_tx_limit, 0: none */
};

extern const struct store_ops store__sqlite_ops;
extern const struct store_ops store__pg_ops;

/* Backend openers: fill s->impl (s->ops is set by the caller). */
int store__sqlite_open(struct store *s, const char *path, unsigned flags,
		       struct sr_err *e);
int store__sqlite_wrap(struct store *s, struct sqlite3 *db);
struct sqlite3 *store__sqlite_handle(struct store *s);
/* The registry of open SQLite stores, for store_bridge (store.c). */
void store__register(struct store *s);
void store__unregister(struct store *s);
int store__pg_open(struct store *s, const char *conninfo, unsigned flags,
		   struct sr_err *e);
/* A dropped connection (s->ops->broken) re-established, waiting with
 * bounded backoff and jitter on the monotonic clock while the server is
 * unreachable, for at most STORE_RETRY_MAX_MS; logs "store unreachable,
 * retrying" and "store reachable again" (store.c).  0 when the
 * connection is (again) usable. */
int store__reconnect(struct store *s, struct sr_err *e);
#define STORE_RETRY_BASE_MS 50
#define STORE_RETRY_CAP_MS 2000
#define STORE_RETRY_MAX_MS 60000

/* The migrations of every component, in both dialects (schema.c). */
struct store_migration {
	const char *sql;        /* both dialects (PostgreSQL: store__pg_ddl) */
	const char *sqlite_only; /* SQLite-only statements after it, or NULL */
	const char *pg;         /* PostgreSQL text replacing sql, or NULL */
	const char *pg_only;    /* PostgreSQL-only statements after it, or NULL */
};
struct store_component {
	const char *name;
	const struct store_migration *steps;
	size_t nsteps;
};
extern const struct store_component store__components[];
extern const size_t store__ncomponents;
/* SQLite DDL in PostgreSQL's type names (INTEGER PRIMARY KEY -> identity,
 * INTEGER -> BIGINT, REAL -> DOUBLE PRECISION, BLOB -> BYTEA, no STRICT);
 * malloc'd, NULL when out of memory. */
char *store__pg_ddl(const char *sql);

#endif
