/*
 * store.c - connections, the statement cache, transactions and
 * migrations, the same for both backends (store.h).
 */
#include "store/store_int.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/backoff.h"
#include "common/log.h"
#include "common/text.h"
#include "common/timeutil.h"
#include "common/url.h"

static uint64_t fnv1a(const char *s)
{
	return sr_text_fnv1a(s, SR_FNV1A_BASIS_SHORT);
}

/* A libpq URI (libpq splits it: "postgresql://u@h1,h2/db" has hosts
 * curl would refuse, so only its scheme is asked, url.h). */
static bool is_pg_url(const char *w)
{
	char scheme[16];

	return sr_url_scheme(w, scheme, sizeof scheme) == 1 &&
	       (!strcmp(scheme, "postgresql") || !strcmp(scheme, "postgres"));
}

enum store_backend store_backend_of(const char *where)
{
	return where && is_pg_url(where) ? STORE_POSTGRES : STORE_SQLITE;
}

int store_open(const char *where, unsigned flags, struct store **out,
	       struct sr_err *e)
{
	struct store *s;
	int rc;

	*out = NULL;
	if (!where || !*where)
		return sr_err_set(e, -EINVAL, "store: no location given");
	s = calloc(1, sizeof *s);
	if (!s)
		return sr_err_set(e, -ENOMEM, "store: out of memory");
	if (is_pg_url(where)) {
		s->ops = &store__pg_ops;
		s->backend = STORE_POSTGRES;
		rc = store__pg_open(s, where, flags, e);
		if (rc == -EIO && s->impl && (flags & STORE_WAIT))
			rc = store__reconnect(s, e);
		if (rc && s->impl)
			s->ops->close(s);
	} else {
		s->ops = &store__sqlite_ops;
		s->backend = STORE_SQLITE;
		if (!strncmp(where, "sqlite:", 7))
			where += 7;
		rc = store__sqlite_open(s, where, flags, e);
	}
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* Open SQLite stores by connection, for store_bridge.  Small: one per
 * thread of one daemon (plus tests). */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct store **reg;
static size_t nreg, capreg;

void store__register(struct store *s)
{
	pthread_mutex_lock(&reg_mu);
	if (nreg == capreg) {
		size_t nc = capreg ? 2 * capreg : 16;
		struct store **v = realloc(reg, nc * sizeof *v);

		if (v) {
			reg = v;
			capreg = nc;
		}
	}
	if (nreg < capreg)
		reg[nreg++] = s; /* unregistered: store_bridge wraps instead */
	pthread_mutex_unlock(&reg_mu);
}

void store__unregister(struct store *s)
{
	pthread_mutex_lock(&reg_mu);
	for (size_t i = 0; i < nreg; i++) {
		if (reg[i] == s) {
			reg[i] = reg[--nreg];
			break;
		}
	}
	if (!nreg) {
		free(reg);
		reg = NULL;
		capreg = 0;
	}
	pthread_mutex_unlock(&reg_mu);
}

int store_bridge(struct sqlite3 *db, struct store **out, struct store **tmp,
		 struct sr_err *e)
{
	struct store *s = NULL;

	*out = *tmp = NULL;
	pthread_mutex_lock(&reg_mu);
	for (size_t i = 0; i < nreg && !s; i++) {
		if (store__sqlite_handle(reg[i]) == db)
			s = reg[i];
	}
	pthread_mutex_unlock(&reg_mu);
	if (s) {
		*out = s;
		return 0;
	}
	s = calloc(1, sizeof *s);
	if (!s)
		return sr_err_set(e, -ENOMEM, "store: out of memory");
	s->ops = &store__sqlite_ops;
	s->backend = STORE_SQLITE;
	if (store__sqlite_wrap(s, db)) {
		free(s);
		return sr_err_set(e, -ENOMEM, "store: out of memory");
	}
	*out = *tmp = s;
	return 0;
}

static void stmt_free(struct store_stmt *st)
{
	if (!st)
		return;
	st->s->ops->finalize(st);
	free(st->sql);
	free(st);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ncache; i++)
		stmt_free(s->cache[i]);
	free(s->cache);
	s->ops->close(s);
	free(s);
}

enum store_backend store_backend(const struct store *s) { return s->backend; }
const char *store_backend_name(const struct store *s) { return s->ops->name; }
bool store_in_tx(const struct store *s)
{
	return s->ops->in_tx((struct store *)s);
}

struct sqlite3 *store_sqlite_handle(struct store *s)
{
	return s->backend == STORE_SQLITE ? store__sqlite_handle(s) : NULL;
}

/* ---- a connection the server dropped ---- */

static bool lost(struct store *s)
{
	return s->ops->broken && s->ops->broken(s);
}

/* One warning per interval for the whole process, however many threads'
 * connections wait at once. */
static pthread_mutex_t down_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sr_ratelimit down_rl = { 5000000000LL, 0, 0 };

int store__reconnect(struct store *s, struct sr_err *e)
{
	struct sr_backoff bo;
	int64_t t0 = sr_time_mono_ns(), now, d;
	long held = 0;
	bool say;
	int tries = 0, rc;

	sr_backoff_init(&bo, STORE_RETRY_BASE_MS * 1000000LL,
			STORE_RETRY_CAP_MS * 1000000LL);
	for (;;) {
		rc = s->ops->reconnect(s, e);
		tries++;
		now = sr_time_mono_ns();
		if (!rc) {
			sr_info("store", "store reachable again", "backend=%s "
				"waited_ms=%lld attempts=%d", s->ops->name,
				(long long)((now - t0) / 1000000), tries);
			return 0;
		}
		if (now - t0 >= STORE_RETRY_MAX_MS * 1000000LL)
			return sr_err_prefix(e, "store unreachable for %d s, "
					     "giving up this operation",
					     STORE_RETRY_MAX_MS / 1000);
		d = sr_backoff_fail(&bo, now);
		pthread_mutex_lock(&down_mu);
		say = sr_ratelimit_allow(&down_rl, now, &held);
		pthread_mutex_unlock(&down_mu);
		if (say)
			sr_warn("store", "store unreachable, retrying", "backend=%s "
				"waited_ms=%lld next_try_ms=%lld held_back=%ld "
				"err=\"%s\"", s->ops->name,
				(long long)((now - t0) / 1000000),
				(long long)(d / 1000000), held,
				sr_err_str(e, rc));
		nanosleep(&(struct timespec){ d / 1000000000,
					      d % 1000000000 }, NULL);
	}
}

/* Before a transaction or an autocommit statement: a connection known
 * to be dropped is re-established first. */
static int usable(struct store *s, struct sr_err *e)
{
	if (!lost(s) || store_in_tx(s))
		return 0;
	return store__reconnect(s, e);
}

int store_exec_sql(struct store *s, const char *sql, struct sr_err *e)
{
	int rc = usable(s, e);

	return rc ? rc : s->ops->exec(s, sql, e);
}

int store_begin(struct store *s, struct sr_err *e)
{
	int rc;

	if (store_in_tx(s))
		return sr_err_set(e, -EINVAL, "store: transaction already open");
	rc = usable(s, e);
	if (!rc)
		rc = s->ops->begin(s, e);
	/* the drop shows on first use: BEGIN changed nothing, run it again */
	if (rc && lost(s)) {
		rc = store__reconnect(s, e);
		if (!rc)
			rc = s->ops->begin(s, e);
	}
	if (!rc && s->fence) {
		rc = s->fence(s, s->fence_ud, e);
		if (rc)
			s->ops->rollback(s);
	}
	return rc;
}

void store_set_fence(struct store *s, store_fence_fn fn, void *ud)
{
	s->fence = fn;
	s->fence_ud = ud;
}

void store_set_idle_tx_limit(struct store *s, int ms)
{
	s->idle_tx_ms = ms > 0 ? ms : 0;
}

int store_commit(struct store *s, struct sr_err *e)
{
	int rc = s->ops->commit(s, e);

	if (rc)
		s->ops->rollback(s);
	return rc;
}

void store_rollback(struct store *s)
{
	if (store_in_tx(s))
		s->ops->rollback(s);
}

int store_end(struct store *s, int rc, struct sr_err *e)
{
	if (rc) {
		store_rollback(s);
		return rc;
	}
	return store_commit(s, e);
}

/* A write outside a transaction on a fenced connection: its own fenced
 * transaction (store.h, store_set_fence). */
static int own_tx_begin(struct store_stmt *st, struct sr_err *e)
{
	int rc;

	if (!st->s->fence || !st->write || st->own_tx || store_in_tx(st->s))
		return 0;
	rc = store_begin(st->s, e);
	if (!rc)
		st->own_tx = true;
	return rc;
}

/* End the statement's own transaction: rc < 0 rolls it back and is
 * returned; else it commits, and a failed commit is the result. */
static int own_tx_end(struct store_stmt *st, int rc, struct sr_err *e)
{
	int c;

	if (!st->own_tx)
		return rc;
	st->own_tx = false;
	if (rc < 0) {
		store_rollback(st->s);
		return rc;
	}
	c = store_commit(st->s, e);
	return c ? c : rc;
}

/* Does sql change rows?  Its first word (past spaces and parentheses) is
 * INSERT, UPDATE, DELETE or REPLACE, or it is a WITH whose text has one
 * of them as a word.  Reads and DDL are not fenced per statement. */
static bool sql_writes(const char *sql)
{
	static const char *const w[] = { "INSERT", "UPDATE", "DELETE", "REPLACE" };
	const char *p = sql;

	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '(')
		p++;
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
		if (!strncasecmp(p, w[i], strlen(w[i])))
			return true;
	}
	if (strncasecmp(p, "WITH", 4))
		return false;
	for (const char *q = p; *q; q++) {
		bool edge = q == sql || !(isalnum((unsigned char)q[-1]) || q[-1] == '_');

		for (size_t i = 0; edge && i < 3; i++) {
			size_t n = strlen(w[i]);

			if (!strncasecmp(q, w[i], n) &&
			    !(isalnum((unsigned char)q[n]) || q[n] == '_'))
				return true;
		}
	}
	return false;
}

static struct store_stmt *stmt_new(struct store *s, const char *sql,
				   uint64_t h, struct sr_err *e, int *rc)
{
	struct store_stmt *st = calloc(1, sizeof *st);

	if (st)
		st->sql = strdup(sql);
	if (!st || !st->sql) {
		free(st);
		*rc = sr_err_set(e, -ENOMEM, "store: out of memory");
		return NULL;
	}
	st->s = s;
	st->hash = h;
	st->write = sql_writes(sql);
	/* store_prepare checked the connection (usable) just before */
	*rc = s->ops->prepare(s, st, e);
	if (*rc && lost(s) && !store_in_tx(s)) { /* a PREPARE changes nothing */
		*rc = store__reconnect(s, e);
		if (!*rc)
			*rc = s->ops->prepare(s, st, e);
	}
	if (*rc) {
		free(st->sql);
		free(st);
		return NULL;
	}
	return st;
}

int store_prepare(struct store *s, const char *sql, struct store_stmt **out,
		  struct sr_err *e)
{
	uint64_t h = fnv1a(sql);
	struct store_stmt *st = NULL;
	int rc = 0;

	*out = NULL;
	rc = usable(s, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < s->ncache; i++) {
		if (s->cache[i]->hash == h && !strcmp(s->cache[i]->sql, sql)) {
			st = s->cache[i];
			break;
		}
	}
	if (st && st->busy) { /* nested use of the same text */
		st = stmt_new(s, sql, h, e, &rc);
		if (!st)
			return rc;
		st->priv = true;
	} else if (!st) {
		if (s->ncache == s->capcache) {
			size_t nc = s->capcache ? 2 * s->capcache : 64;
			struct store_stmt **v = realloc(s->cache, nc * sizeof *v);

			if (!v)
				return sr_err_set(e, -ENOMEM, "store: out of memory");
			s->cache = v;
			s->capcache = nc;
		}
		st = stmt_new(s, sql, h, e, &rc);
		if (!st)
			return rc;
		s->cache[s->ncache++] = st;
	}
	st->busy = true;
	*out = st;
	return 0;
}

void store_done(struct store_stmt *st)
{
	struct sr_err e = { 0 };

	if (!st)
		return;
	if (st->own_tx) {
		/* a fenced write the caller stopped reading: what it did
		 * stands (as an autocommit statement's would) */
		st->s->ops->reset(st);
		if (own_tx_end(st, 0, &e))
			sr_error("store", "commit of a write failed", "err=\"%s\""
				 " sql=\"%.80s\"", sr_err_str(&e, -EIO), st->sql);
	}
	if (st->priv) {
		stmt_free(st);
		return;
	}
	st->s->ops->reset(st);
	st->busy = false;
}

int store_bind_i64(struct store_stmt *st, int idx, int64_t v)
{
	return st->s->ops->bind_i64(st, idx, v);
}

int store_bind_f64(struct store_stmt *st, int idx, double v)
{
	return st->s->ops->bind_f64(st, idx, v);
}

int store_bind_text(struct store_stmt *st, int idx, const char *v)
{
	if (!v)
		return st->s->ops->bind_null(st, idx);
	return st->s->ops->bind_text(st, idx, v, strlen(v));
}

int store_bind_textn(struct store_stmt *st, int idx, const char *v, size_t n)
{
	if (!v)
		return st->s->ops->bind_null(st, idx);
	return st->s->ops->bind_text(st, idx, v, n);
}

int store_bind_blob(struct store_stmt *st, int idx, const void *v, size_t n)
{
	if (!v)
		return st->s->ops->bind_null(st, idx);
	return st->s->ops->bind_blob(st, idx, v, n);
}

int store_bind_null(struct store_stmt *st, int idx)
{
	return st->s->ops->bind_null(st, idx);
}

int store_step(struct store_stmt *st, struct sr_err *e)
{
	int rc = own_tx_begin(st, e);

	if (rc)
		return rc;
	rc = st->s->ops->step(st, e);
	return rc == 1 ? 1 : own_tx_end(st, rc, e);
}

int store_run(struct store_stmt *st, struct sr_err *e)
{
	int rc = own_tx_begin(st, e);

	if (rc)
		return rc;
	while ((rc = st->s->ops->step(st, e)) == 1)
		;
	if (rc == 0)
		rc = st->s->ops->changes(st);
	return own_tx_end(st, rc, e);
}

static int col(struct store_stmt *st, const char *name)
{
	int i = st->s->ops->col_index(st, name);

	if (i < 0)
		sr_error("store", "column not in the result", "column=%s sql=\"%.80s\"",
			 name, st->sql);
	return i;
}

bool store_col_null(struct store_stmt *st, const char *name)
{
	int i = col(st, name);

	return i < 0 || st->s->ops->col_null(st, i);
}

int64_t store_col_i64(struct store_stmt *st, const char *name)
{
	int i = col(st, name);

	return i < 0 ? 0 : st->s->ops->col_i64(st, i);
}

double store_col_f64(struct store_stmt *st, const char *name)
{
	int i = col(st, name);

	return i < 0 ? 0.0 : st->s->ops->col_f64(st, i);
}

const char *store_col_text(struct store_stmt *st, const char *name)
{
	int i = col(st, name);
	const char *t = i < 0 ? NULL : st->s->ops->col_text(st, i);

	return t ? t : "";
}

const void *store_col_blob(struct store_stmt *st, const char *name, size_t *n)
{
	int i = col(st, name);

	*n = 0;
	return i < 0 ? NULL : st->s->ops->col_blob(st, i, n);
}

int store_query_i64(struct store *s, const char *sql, int64_t arg,
		    int64_t *out, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, sql, &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, arg);
	rc = store_step(st, e);
	if (rc == 1)
		*out = s->ops->col_null(st, 0) ? 0 : s->ops->col_i64(st, 0);
	store_done(st);
	return rc;
}

int store_setting_get(struct store *s, const char *key, char *buf, size_t n,
		      struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, "SELECT value FROM settings WHERE key=?", &st, e);
	if (rc)
		return rc;
	store_bind_text(st, 1, key);
	rc = store_step(st, e);
	if (rc == 1) {
		snprintf(buf, n, "%s", store_col_text(st, "value"));
		rc = 0;
	} else if (rc == 0) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "setting %s: not set", key);
	}
	store_done(st);
	return rc;
}

/* INSERT settings(key, value); on a key there: replace or keep */
static int setting_put(struct store *s, const char *key, const char *val,
		       int replace, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, replace ?
			   "INSERT INTO settings(key, value) VALUES(?, ?)"
			   " ON CONFLICT(key) DO UPDATE SET value=excluded.value" :
			   "INSERT INTO settings(key, value) VALUES(?, ?)"
			   " ON CONFLICT(key) DO NOTHING", &st, e);
	if (rc)
		return rc;
	store_bind_text(st, 1, key);
	store_bind_text(st, 2, val);
	rc = store_run(st, e);
	store_done(st);
	return rc < 0 ? rc : 0;
}

int store_setting_set(struct store *s, const char *key, const char *val,
		      struct sr_err *e)
{
	return setting_put(s, key, val, 1, e);
}

int store_setting_add(struct store *s, const char *key, const char *val,
		      struct sr_err *e)
{
	return setting_put(s, key, val, 0, e);
}

/* ---- migrations ---- */

static int component_version(struct store *s, const char *name, int *v,
			     struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	*v = 0;
	rc = store_prepare(s, "SELECT version FROM schema_version WHERE "
			   "component=?", &st, e);
	if (rc)
		return rc;
	store_bind_text(st, 1, name);
	rc = store_step(st, e);
	if (rc == 1)
		*v = (int)store_col_i64(st, "version");
	store_done(st);
	return rc < 0 ? rc : 0;
}

/* A SQLite database from before lib/store kept the ledger's version in
 * its own table; adopt it once. */
static int legacy_ledger_version(struct store *s, int *v, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc, n;

	*v = 0;
	if (s->backend != STORE_SQLITE)
		return 0;
	rc = store_prepare(s, "SELECT count(*) AS n FROM sqlite_master WHERE "
			   "name='ledger_schema'", &st, e);
	if (rc)
		return rc;
	rc = store_step(st, e);
	n = rc == 1 ? (int)store_col_i64(st, "n") : 0;
	store_done(st);
	if (rc < 0 || !n)
		return rc < 0 ? rc : 0;
	rc = store_prepare(s, "SELECT max(version) AS version FROM ledger_schema",
			   &st, e);
	if (rc)
		return rc;
	rc = store_step(st, e);
	if (rc == 1)
		*v = (int)store_col_i64(st, "version");
	store_done(st);
	return rc < 0 ? rc : 0;
}

static int set_version(struct store *s, const char *name, int v,
		       struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, "INSERT INTO schema_version(component, version) "
			   "VALUES(?, ?) ON CONFLICT(component) DO UPDATE "
			   "SET version=excluded.version", &st, e);
	if (rc)
		return rc;
	store_bind_text(st, 1, name);
	store_bind_i64(st, 2, v);
	rc = store_run(st, e);
	store_done(st);
	return rc < 0 ? rc : 0;
}

static int run_step(struct store *s, const struct store_migration *m,
		    struct sr_err *e)
{
	char *pg = NULL;
	int rc;

	if (s->backend == STORE_SQLITE) {
		rc = store_exec_sql(s, m->sql, e);
		if (!rc && m->sqlite_only)
			rc = store_exec_sql(s, m->sqlite_only, e);
		return rc;
	}
	if (!m->pg) {
		pg = store__pg_ddl(m->sql);
		if (!pg)
			return sr_err_set(e, -ENOMEM, "store: out of memory");
	}
	rc = store_exec_sql(s, m->pg ? m->pg : pg, e);
	if (!rc && m->pg_only)
		rc = store_exec_sql(s, m->pg_only, e);
	free(pg);
	return rc;
}

static int migrate_component(struct store *s, const struct store_component *c,
			     struct sr_err *e)
{
	bool recorded;
	int v, rc;

	rc = component_version(s, c->name, &v, e);
	recorded = v > 0;
	if (!rc && !v && !strcmp(c->name, "ledger"))
		rc = legacy_ledger_version(s, &v, e);
	if (rc)
		return rc;
	if (v > (int)c->nsteps)
		return sr_err_set(e, -SR_EUNSUPPORTED,
				  "database schema '%s' is at version %d, newer "
				  "than this binary (%zu): run the spotrund that "
				  "wrote it, or a newer one", c->name, v, c->nsteps);
	for (int i = v; i < (int)c->nsteps; i++) {
		rc = run_step(s, &c->steps[i], e);
		if (rc)
			return sr_err_prefix(e, "schema '%s' migration %d", c->name,
					     i + 1);
	}
	if (v == (int)c->nsteps && recorded)
		return 0;
	return set_version(s, c->name, (int)c->nsteps, e);
}

int store_migrate(struct store *s, struct sr_err *e)
{
	int rc;

	rc = store_begin(s, e);
	if (rc)
		return rc;
	rc = store_exec_sql(s, s->backend == STORE_POSTGRES ?
			    "CREATE TABLE IF NOT EXISTS schema_version("
			    " component TEXT PRIMARY KEY,"
			    " version BIGINT NOT NULL)" :
			    "CREATE TABLE IF NOT EXISTS schema_version("
			    " component TEXT PRIMARY KEY,"
			    " version INTEGER NOT NULL) STRICT", e);
	for (size_t i = 0; !rc && i < store__ncomponents; i++)
		rc = migrate_component(s, &store__components[i], e);
	return store_end(s, rc, e);
}

/* store_analyze refreshes the statistics of every table in the store's
 * schema, listed from the catalog rather than by name, so a table that
 * schema.c adds is never left for the planner to guess at.  Tables of
 * other schemas in the same database are not touched. */
static const char analyze_sql[] =
	"DO $$ DECLARE t text; BEGIN"
	" FOR t IN SELECT tablename FROM pg_tables"
	" WHERE schemaname = current_schema() ORDER BY tablename LOOP"
	" EXECUTE 'ANALYZE ' || quote_ident(t); END LOOP; END $$";

int store_analyze(struct store *s, struct sr_err *e)
{
	if (s->backend != STORE_POSTGRES)
		return 0;
	return store_exec_sql(s, analyze_sql, e);
}

int store_schema_version(struct store *s, struct sr_err *e)
{
	int v = 0, rc = component_version(s, "ctl", &v, e);

	return rc ? rc : v;
}

int store_schema_latest(void)
{
	return (int)store__components[0].nsteps;
}
