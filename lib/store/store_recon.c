/*
 * store_recon.c - the job pass's statements (store_ctl.h): what
 * lib/ctl/reconcile.c reads and writes of jobs, their exits and events.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "store/store.h"
#include "store/store_ctl.h"

/* Run st (bound) to its end, store_done it: 0, or < 0 prefixed by what. */
static int run_done(struct store_stmt *st, const char *what, struct sr_err *e)
{
	int rc = store_run(st, e);

	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "%s", what) : 0;
}

int store_exits_each(struct store *s, int64_t job, int64_t attempt,
		     void (*fn)(void *ud, const char *cause, int64_t code,
				int64_t sig, int64_t node),
		     void *ud, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT cause, coalesce(exit_code, -1) AS code,"
			       " coalesce(signal, 0) AS sig, node_id FROM exits"
			       " WHERE job_id=?1 AND attempt=?2", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, attempt);
	while ((rc = store_step(st, e)) == 1)
		fn(ud, store_col_text(st, "cause"), store_col_i64(st, "code"),
		   store_col_i64(st, "sig"), store_col_i64(st, "node_id"));
	store_done(st);
	return rc;
}

/* 1 when the query (job ?1, attempt ?2, rank ?3, node ?4 when > 0)
 * finds a row, 0 when not. */
static int exit_row(struct store *s, const char *sql, int64_t job,
		    int64_t attempt, int64_t rank, int64_t node,
		    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, sql, &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, attempt);
	store_bind_i64(st, 3, rank);
	if (node > 0)
		store_bind_i64(st, 4, node);
	rc = store_step(st, e);
	store_done(st);
	return rc;
}

int store_exit_seen(struct store *s, int64_t job, int64_t attempt,
		    int64_t rank, struct sr_err *e)
{
	return exit_row(s, "SELECT 1 AS one FROM exits WHERE job_id=?1"
			" AND attempt=?2 AND rank=?3", job, attempt, rank, 0, e);
}

int store_exit_done(struct store *s, int64_t job, int64_t attempt,
		    int64_t rank, int64_t node, struct sr_err *e)
{
	static const char done[] = "SELECT 1 AS one FROM exits WHERE job_id=?1"
		" AND attempt=?2 AND rank=?3 AND cause='completed'"
		" AND exit_code=0";
	static const char done_on[] = "SELECT 1 AS one FROM exits WHERE"
		" job_id=?1 AND attempt=?2 AND rank=?3 AND cause='completed'"
		" AND exit_code=0 AND node_id=?4";

	return exit_row(s, node > 0 ? done_on : done, job, attempt, rank, node,
			e);
}

int store_job_run_clock(struct store *s, int64_t job, double add_s,
			struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET run_s=run_s+?1,"
			       " run_started_ns=NULL WHERE id=?2", &st, e);

	if (rc)
		return rc;
	store_bind_f64(st, 1, add_s);
	store_bind_i64(st, 2, job);
	return run_done(st, "run clock", e);
}

int store_node_adopt(struct store *s, int64_t node, int64_t rank,
		     int64_t now_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET rank=?1, adopted_ns=?2"
			       " WHERE id=?3 AND spare=1 AND adopted_ns IS NULL"
			       " RETURNING id", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, rank);
	store_bind_i64(st, 2, now_ns);
	store_bind_i64(st, 3, node);
	rc = store_step(st, e);
	if (rc == 1)
		rc = store_run(st, e);
	else if (rc == 0)
		rc = sr_err_set(e, -SR_ECONFLICT, "node %" PRId64 ": not a spare "
				"free to adopt", node);
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "adopt spare") : 0;
}

int store_node_retire(struct store *s, int64_t node, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET retire=1 WHERE id=?1", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, node);
	return run_done(st, "retire node", e);
}

int store_job_went_down(struct store *s, int64_t job, int64_t now_ns,
			const char *reason, bool restart, bool notice,
			struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET down_since_ns=?1,"
			       " recover_reason=?2, restarts=restarts+?3,"
			       " notice_ns=CASE WHEN ?4 THEN ?1 ELSE notice_ns END,"
			       " notice_step=CASE WHEN ?4 THEN step ELSE notice_step"
			       " END WHERE id=?5", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, now_ns);
	store_bind_text(st, 2, reason);
	store_bind_i64(st, 3, restart);
	store_bind_i64(st, 4, notice);
	store_bind_i64(st, 5, job);
	return run_done(st, "leave running", e);
}

int store_jobs_unfinished(struct store *s, int64_t page, int64_t **out,
			  size_t *n, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int64_t *v = NULL, last = 0, got;
	size_t k = 0, cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	do {
		rc = store_prepare(s, "SELECT id FROM jobs WHERE state NOT IN"
				   " ('SUCCEEDED','FAILED','CANCELLED') AND id>?1"
				   " ORDER BY id LIMIT ?2", &st, e);
		if (rc)
			break;
		store_bind_i64(st, 1, last);
		store_bind_i64(st, 2, page);
		got = 0;
		while ((rc = store_step(st, e)) == 1) {
			if (k == cap) {
				size_t nc = cap ? 2 * cap : (size_t)page;
				int64_t *nv = realloc(v, nc * sizeof *nv);

				if (!nv) {
					rc = sr_err_set(e, -ENOMEM, "out of memory");
					break;
				}
				v = nv;
				cap = nc;
			}
			last = v[k++] = store_col_i64(st, "id");
			got++;
		}
		store_done(st);
	} while (rc == 0 && got == page);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = k;
	return 0;
}
