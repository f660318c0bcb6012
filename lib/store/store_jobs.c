/*
 * store_jobs.c - the store's domain functions over jobs and events
 * (store.h): one place that writes an event row, one that moves a job's
 * state, one that asks for a cancellation.
 */
#include <errno.h>
#include <inttypes.h>

#include "store/store.h"

int store_event_add(struct store *s, const struct store_event *ev,
		    int64_t *seq, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, "INSERT INTO events(job_id, ts_ns, sim_s, type,"
			   " from_state, to_state, node_id, message, data)"
			   " VALUES(?,?,?,?,?,?,?,?,?) RETURNING seq", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, ev->job_id);
	store_bind_i64(st, 2, ev->ts_ns);
	store_bind_f64(st, 3, ev->sim_s);
	store_bind_text(st, 4, ev->type);
	store_bind_text(st, 5, ev->from);
	store_bind_text(st, 6, ev->to);
	if (ev->node_id > 0)
		store_bind_i64(st, 7, ev->node_id);
	else
		store_bind_null(st, 7);
	store_bind_text(st, 8, ev->message ? ev->message : "");
	store_bind_text(st, 9, ev->data);
	rc = store_step(st, e);
	if (rc == 1 && seq)
		*seq = store_col_i64(st, "seq");
	if (rc == 0)
		rc = sr_err_set(e, -EIO, "insert event: no row returned");
	store_done(st);
	if (rc < 0)
		return sr_err_prefix(e, "job %" PRId64 " event %s", ev->job_id,
				     ev->type);
	return 0;
}

int store_job_set_state(struct store *s, int64_t id, const char *from,
			const char *to, bool terminal, int64_t now_ns,
			const char *msg, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, "UPDATE jobs SET state=?1, state_since_ns=?2,"
			   " updated_ns=?2, message=?3,"
			   " finished_ns=CASE WHEN ?5=1 THEN ?2 ELSE finished_ns END"
			   " WHERE id=?4 AND state=?6", &st, e);
	if (rc)
		return rc;
	store_bind_text(st, 1, to);
	store_bind_i64(st, 2, now_ns);
	store_bind_text(st, 3, msg ? msg : "");
	store_bind_i64(st, 4, id);
	store_bind_i64(st, 5, terminal ? 1 : 0);
	store_bind_text(st, 6, from);
	rc = store_run(st, e);
	store_done(st);
	if (rc < 0)
		return sr_err_prefix(e, "job %" PRId64 " state", id);
	return rc == 1;
}

int store_job_request_cancel(struct store *s, int64_t id, int64_t now_ns,
			     struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int64_t n = 0;
	int rc;

	rc = store_prepare(s, "UPDATE jobs SET desired='cancel', updated_ns=?"
			   " WHERE id=? AND desired='run'", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, now_ns);
	store_bind_i64(st, 2, id);
	rc = store_run(st, e);
	store_done(st);
	if (rc < 0)
		return sr_err_prefix(e, "job %" PRId64 " cancel", id);
	if (rc == 1)
		return 1;
	rc = store_query_i64(s, "SELECT count(*) FROM jobs WHERE id=?", id, &n, e);
	if (rc < 0)
		return rc;
	if (!n)
		return sr_err_set(e, -SR_ENOTFOUND, "job %" PRId64 ": no such job", id);
	return 0;
}

int store_jobs_ended(struct store *s,
		     int (*fn)(void *ud, int64_t id, const char *state),
		     void *ud, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, "SELECT id, state FROM jobs WHERE state IN"
			   " ('SUCCEEDED', 'FAILED', 'CANCELLED')", &st, e);
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		int stop = fn(ud, store_col_i64(st, "id"),
			      store_col_text(st, "state"));

		if (stop) {
			store_done(st);
			return stop;
		}
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "ended jobs") : 0;
}
