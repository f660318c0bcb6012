/*
 * store_api.c - the jobs API's statements (store_ctl.h): what
 * lib/ctl/routes_jobs.c writes and reads of jobs, their events and logs.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "store/store_ctl.h"

int store_job_by_idem(struct store *s, const char *key, int64_t *id,
		      unsigned char *hash, size_t *hn, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	const void *h;
	size_t n = 0;
	int rc = store_prepare(s, "SELECT id, idem_hash FROM jobs WHERE"
			       " idem_key=?1", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, key);
	rc = store_step(st, e);
	if (rc == 1) {
		*id = store_col_i64(st, "id");
		h = store_col_null(st, "idem_hash") ? NULL :
		    store_col_blob(st, "idem_hash", &n);
		*hn = h && n <= STORE_DIGEST_LEN ? n : 0;
		if (*hn)
			memcpy(hash, h, *hn);
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "idempotency key") : rc;
}

int store_job_insert(struct store *s, const struct store_job_new *j,
		     int64_t *id, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "INSERT INTO jobs(name, state, spec_name, "
			       "spec_yaml, spec_json, workdir, envs, num_nodes, "
			       "max_restarts, created_ns, updated_ns, state_since_ns,"
			       " sim_start_s, deadline_s, work_s, candidates, message,"
			       " idem_key, idem_hash, secrets_enc, files, team,"
			       " project, cost_center)"
			       " VALUES(?1,'PENDING',?2,?3,?4,?5,?6,?7,?8,?9,?9,?9,"
			       "?10,?11,?12,?13,'accepted',?14,?15,?16,?17,?18,?19,"
			       "?20)"
			       " RETURNING id", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, j->name);
	store_bind_text(st, 2, j->spec_name);
	store_bind_textn(st, 3, j->spec_yaml, j->spec_yaml_len);
	store_bind_text(st, 4, j->spec_json);
	store_bind_text(st, 5, j->workdir);
	store_bind_text(st, 6, j->envs);
	store_bind_i64(st, 7, j->num_nodes);
	store_bind_i64(st, 8, j->max_restarts);
	store_bind_i64(st, 9, j->now_ns);
	store_bind_f64(st, 10, j->sim_start_s);
	if (isfinite(j->deadline_s))
		store_bind_f64(st, 11, j->deadline_s);
	else
		store_bind_null(st, 11);
	store_bind_f64(st, 12, j->work_s);
	store_bind_text(st, 13, j->candidates);
	store_bind_text(st, 14, j->idem_key);
	if (j->idem_hash)
		store_bind_blob(st, 15, j->idem_hash, j->idem_hash_len);
	else
		store_bind_null(st, 15);
	store_bind_blob(st, 16, j->secrets, j->secrets_len);
	store_bind_text(st, 17, j->files);
	store_bind_text(st, 18, j->team && *j->team ? j->team : NULL);
	store_bind_text(st, 19, j->project && *j->project ? j->project : NULL);
	store_bind_text(st, 20, j->cost_center && *j->cost_center ?
			j->cost_center : NULL);
	rc = store_step(st, e);
	if (rc == 1) {
		*id = store_col_i64(st, "id");
		rc = 0;
	} else if (rc == 0) {
		rc = sr_err_set(e, -EIO, "insert job: no id returned");
	}
	store_done(st);
	return rc;
}

int store_jobs_each(struct store *s, const char *name, store_job_fn fn,
		    void *ud, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, name ? "SELECT id, state FROM jobs WHERE"
			       " name=?1 ORDER BY id DESC" :
			       "SELECT id, state FROM jobs ORDER BY id DESC",
			       &st, e);

	if (rc)
		return rc;
	if (name)
		store_bind_text(st, 1, name);
	while ((rc = store_step(st, e)) == 1) {
		rc = fn(ud, store_col_i64(st, "id"), store_col_text(st, "state"),
			e);
		if (rc)
			break;
	}
	store_done(st);
	return rc;
}

int store_job_state(struct store *s, int64_t id, char *state, size_t cap,
		    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT state FROM jobs WHERE id=?1", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, id);
	rc = store_step(st, e);
	if (rc == 1)
		snprintf(state, cap, "%s", store_col_text(st, "state"));
	store_done(st);
	return rc;
}

static const char *text_or_null(struct store_stmt *st, const char *col)
{
	return store_col_null(st, col) ? NULL : store_col_text(st, col);
}

int store_events_each(struct store *s, int64_t job, int64_t after,
		      int64_t limit, store_event_fn fn, void *ud,
		      struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, job ? "SELECT seq, job_id, ts_ns, sim_s, type,"
			       " from_state, to_state, node_id, message, data FROM"
			       " events WHERE job_id=?1 AND seq>?2 ORDER BY seq"
			       " LIMIT ?3" :
			       "SELECT seq, job_id, ts_ns, sim_s, type, from_state,"
			       " to_state, node_id, message, data FROM events"
			       " WHERE seq>?2 AND ?1=0 ORDER BY seq LIMIT ?3",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, after);
	store_bind_i64(st, 3, limit);
	while ((rc = store_step(st, e)) == 1) {
		struct store_event ev = {
			.job_id = store_col_i64(st, "job_id"),
			.type = store_col_text(st, "type"),
			.from = text_or_null(st, "from_state"),
			.to = text_or_null(st, "to_state"),
			.node_id = store_col_null(st, "node_id") ? 0 :
				   store_col_i64(st, "node_id"),
			.ts_ns = store_col_i64(st, "ts_ns"),
			.sim_s = store_col_f64(st, "sim_s"),
			.message = store_col_text(st, "message"),
			.data = text_or_null(st, "data"),
		};

		rc = fn(ud, store_col_i64(st, "seq"), &ev, e);
		if (rc)
			break;
	}
	store_done(st);
	return rc < 0 ? rc : 0;
}

int store_logs_each(struct store *s, int64_t job, int64_t after,
		    int64_t rank, int64_t limit, store_log_fn fn, void *ud,
		    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT seq, ts_ns, node_id, rank, attempt,"
			       " stream, line, truncated FROM logs WHERE job_id=?1"
			       " AND seq>?2 AND (?3<0 OR rank=?3) ORDER BY seq"
			       " LIMIT ?4", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, after);
	store_bind_i64(st, 3, rank);
	store_bind_i64(st, 4, limit);
	while ((rc = store_step(st, e)) == 1) {
		struct store_log_line l = {
			.seq = store_col_i64(st, "seq"),
			.job = job,
			.ts_ns = store_col_i64(st, "ts_ns"),
			.node = store_col_i64(st, "node_id"),
			.rank = store_col_i64(st, "rank"),
			.attempt = store_col_i64(st, "attempt"),
			.stream = store_col_text(st, "stream"),
			.line = store_col_text(st, "line"),
			.truncated = store_col_i64(st, "truncated") != 0,
		};

		l.line_len = strlen(l.line);

		rc = fn(ud, &l, e);
		if (rc)
			break;
	}
	store_done(st);
	return rc < 0 ? rc : 0;
}
