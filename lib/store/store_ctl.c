/*
 * store_ctl.c - the control plane's statements (store_ctl.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_ctl.h"

/* Run st (bound) to its end, store_done it; errors prefixed by what. */
static int run_done(struct store_stmt *st, const char *what, struct sr_err *e)
{
	int rc = store_run(st, e);

	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "%s", what) : 0;
}

/* ---- work lost (lib/ctl/recon_lost.c) -------------------------------------- */

int store_lost_open(struct store *s, int64_t job, const struct store_lost *p,
		    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "INSERT INTO lost_pending(job_id, attempt, cause,"
			       " node_id, price_micros, started_ns, ended_ns, step)"
			       " VALUES(?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, p->attempt);
	store_bind_text(st, 3, p->cause);
	if (p->node > 0)
		store_bind_i64(st, 4, p->node);
	else
		store_bind_null(st, 4);
	store_bind_i64(st, 5, p->price_micros > 0 ? p->price_micros : 0);
	store_bind_i64(st, 6, p->started_ns);
	store_bind_i64(st, 7, p->ended_ns);
	if (p->step >= 0)
		store_bind_i64(st, 8, p->step);
	else
		store_bind_null(st, 8);
	return run_done(st, "lost work pending", e);
}

static void text_to(struct store_stmt *st, const char *col, char *out,
		    size_t cap)
{
	snprintf(out, cap, "%s", store_col_text(st, col));
}

int store_lost_pending(struct store *s, int64_t job, int64_t before,
		       struct store_lost *v, int cap, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int n = 0, rc;

	rc = store_prepare(s, "SELECT p.attempt AS attempt, p.cause AS cause,"
			   " coalesce(p.node_id, 0) AS node, p.price_micros AS price,"
			   " p.started_ns AS started, p.ended_ns AS ended,"
			   " coalesce(p.step, -1) AS step,"
			   " coalesce(n.cloud, '') AS cloud, coalesce(n.region, '')"
			   " AS region, coalesce(n.zone, '') AS zone,"
			   " coalesce(n.instance_type, '') AS itype"
			   " FROM lost_pending p LEFT JOIN nodes n ON n.id = p.node_id"
			   " WHERE p.job_id=?1 AND (?2 = 0 OR p.attempt < ?2)"
			   " ORDER BY p.attempt", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, before > 0 ? before : 0);
	while (n < cap && (rc = store_step(st, e)) == 1) {
		struct store_lost *p = &v[n++];

		memset(p, 0, sizeof *p);
		p->attempt = store_col_i64(st, "attempt");
		p->node = store_col_i64(st, "node");
		p->price_micros = store_col_i64(st, "price");
		p->started_ns = store_col_i64(st, "started");
		p->ended_ns = store_col_i64(st, "ended");
		p->step = store_col_i64(st, "step");
		text_to(st, "cause", p->cause, sizeof p->cause);
		text_to(st, "cloud", p->cloud, sizeof p->cloud);
		text_to(st, "region", p->region, sizeof p->region);
		text_to(st, "zone", p->zone, sizeof p->zone);
		text_to(st, "itype", p->itype, sizeof p->itype);
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "job %" PRId64 ": lost work", job) : n;
}

int store_lost_clear(struct store *s, int64_t job, int64_t attempt,
		     struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "DELETE FROM lost_pending WHERE job_id=?1 AND"
			       " attempt=?2", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, attempt);
	return run_done(st, "lost work settled", e);
}

int store_ckpt_seen_add(struct store *s, int64_t job, int64_t attempt,
			int64_t step, int64_t at_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "INSERT INTO ckpt_seen(job_id, step, attempt,"
			       " seen_ns) VALUES(?,?,?,?) ON CONFLICT DO NOTHING",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, step);
	store_bind_i64(st, 3, attempt);
	store_bind_i64(st, 4, at_ns);
	return run_done(st, "checkpoint seen", e);
}

int store_ckpt_seen_get(struct store *s, int64_t job, int64_t step,
			int64_t *at_ns, int64_t *attempt, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT seen_ns, attempt FROM ckpt_seen"
			       " WHERE job_id=?1 AND step=?2", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, step);
	rc = store_step(st, e);
	if (rc == 1) {
		*at_ns = store_col_i64(st, "seen_ns");
		*attempt = store_col_i64(st, "attempt");
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "checkpoint seen") : rc;
}

int store_ckpt_newest_in(struct store *s, int64_t job, int64_t attempt,
			 int64_t *step, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT max(step) AS s FROM ckpt_seen"
			       " WHERE job_id=?1 AND attempt=?2", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, attempt);
	rc = store_step(st, e);
	if (rc == 1 && store_col_null(st, "s"))
		rc = 0;
	else if (rc == 1)
		*step = store_col_i64(st, "s");
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "checkpoint seen") : rc;
}

int store_job_set_ckpt_step(struct store *s, int64_t job, int64_t step,
			    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET ckpt_step=?1 WHERE id=?2",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, step);
	store_bind_i64(st, 2, job);
	return run_done(st, "restored checkpoint", e);
}

/* ---- the work estimator's state ---------------------------------------------- */

int store_est_load(struct store *s, int64_t job, struct store_est *w,
		   struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	memset(w, 0, sizeof *w);
	rc = store_prepare(s, "SELECT work_s, coalesce(total_steps, -1) AS total,"
			   " est_work_s, est_pace_ns, est_steps, est_attempt,"
			   " est_step0, est_t0_ns, est_last_step, est_last_ns,"
			   " est_upd_ns FROM jobs WHERE id=?", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	rc = store_step(st, e);
	if (rc == 1) {
		w->declared_s = store_col_f64(st, "work_s");
		w->total_steps = store_col_i64(st, "total");
		w->work_s = store_col_f64(st, "est_work_s");
		w->pace_ns = store_col_f64(st, "est_pace_ns");
		w->steps = store_col_i64(st, "est_steps");
		w->attempt = store_col_i64(st, "est_attempt");
		w->step0 = store_col_i64(st, "est_step0");
		w->t0_ns = store_col_i64(st, "est_t0_ns");
		w->last_step = store_col_i64(st, "est_last_step");
		w->last_ns = store_col_i64(st, "est_last_ns");
		w->upd_ns = store_col_i64(st, "est_upd_ns");
	}
	store_done(st);
	if (rc == 0)
		return sr_err_set(e, -SR_ENOTFOUND, "job %" PRId64, job);
	return rc < 0 ? rc : 0;
}

int store_est_save(struct store *s, int64_t job, const struct store_est *w,
		   struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET est_work_s=?1, est_pace_ns=?2,"
			       " est_steps=?3, est_attempt=?4, est_step0=?5,"
			       " est_t0_ns=?6, est_last_step=?7, est_last_ns=?8,"
			       " est_upd_ns=?9 WHERE id=?10", &st, e);

	if (rc)
		return rc;
	store_bind_f64(st, 1, w->work_s);
	store_bind_f64(st, 2, w->pace_ns);
	store_bind_i64(st, 3, w->steps);
	store_bind_i64(st, 4, w->attempt);
	store_bind_i64(st, 5, w->step0);
	store_bind_i64(st, 6, w->t0_ns);
	store_bind_i64(st, 7, w->last_step);
	store_bind_i64(st, 8, w->last_ns);
	store_bind_i64(st, 9, w->upd_ns);
	store_bind_i64(st, 10, job);
	return run_done(st, "work estimate", e);
}

int store_restart_node(struct store *s, int64_t job, int64_t *created_ns,
		       double *est_restart_s, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT n.created_ns, j.est_restart_s FROM"
			       " nodes n JOIN jobs j ON j.id=n.job_id WHERE"
			       " n.job_id=?1 AND n.rank=0 AND n.state='READY' AND"
			       " NOT EXISTS (SELECT 1 FROM exits x WHERE"
			       " x.node_id=n.id) ORDER BY n.id DESC LIMIT 1", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	rc = store_step(st, e);
	if (rc == 1) {
		*created_ns = store_col_i64(st, "created_ns");
		*est_restart_s = store_col_f64(st, "est_restart_s");
	}
	store_done(st);
	return rc;
}

int store_job_set_restart_est(struct store *s, int64_t job, double est_s,
			      struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET est_restart_s=?1 WHERE id=?2",
			       &st, e);

	if (rc)
		return rc;
	store_bind_f64(st, 1, est_s);
	store_bind_i64(st, 2, job);
	return run_done(st, "restart estimate", e);
}

/* ---- placement ------------------------------------------------------------- */

int store_pool_unavailable(struct store *s, int pool, int64_t since_ns,
			   void (*fn)(void *ud, int64_t at_ns), void *ud,
			   struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT CASE WHEN notice_ns >= ?2 THEN"
			       " notice_ns ELSE terminated_ns END AS at FROM nodes"
			       " WHERE pool=?1 AND (notice_ns >= ?2 OR (end_reason"
			       " IN ('capacity','quota') AND terminated_ns >= ?2))",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, pool);
	store_bind_i64(st, 2, since_ns);
	while ((rc = store_step(st, e)) == 1)
		fn(ud, store_col_i64(st, "at"));
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "pool %d: our notices", pool) : 0;
}

int store_job_policy_load(struct store *s, int64_t job, void **state,
			  size_t *len, char **decision, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	const void *b;
	const char *d;
	size_t n = 0;
	int rc;

	*state = NULL;
	*len = 0;
	*decision = NULL;
	rc = store_prepare(s, "SELECT policy_state, decision FROM jobs WHERE id=?",
			   &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	rc = store_step(st, e);
	if (rc == 1) {
		b = store_col_blob(st, "policy_state", &n);
		d = store_col_text(st, "decision");
		rc = 0;
		if (b && n > 0) {
			*state = malloc(n);
			if (*state) {
				memcpy(*state, b, n);
				*len = n;
			}
		}
		if (d[0])
			*decision = strdup(d);
		if ((b && n > 0 && !*state) || (d[0] && !*decision))
			rc = sr_err_set(e, -ENOMEM, "out of memory");
	} else if (rc == 0) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "job %" PRId64 ": not found", job);
	}
	store_done(st);
	if (rc) {
		free(*state);
		free(*decision);
		*state = NULL;
		*decision = NULL;
		*len = 0;
	}
	return rc;
}

int store_job_policy_save(struct store *s, int64_t job, const void *state,
			  size_t len, const char *decision, int64_t tick,
			  struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET policy_state=?1, decision=?2,"
			       " policy_tick=?3 WHERE id=?4", &st, e);

	if (rc)
		return rc;
	store_bind_blob(st, 1, state, len);
	store_bind_text(st, 2, decision);
	store_bind_i64(st, 3, tick);
	store_bind_i64(st, 4, job);
	return run_done(st, "policy state", e);
}

int store_node_insert(struct store *s, const struct store_node_new *n,
		      int64_t *id, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "INSERT INTO nodes(job_id, rank, state,"
			       " token_hash, provider, cloud, region, zone,"
			       " instance_type, accelerator, accel_count, spot,"
			       " pool, price_micros, list_micros, reserved_micros,"
			       " created_ns, boot_at_ns, spare) VALUES(?1,?2,"
			       "'REQUESTED',?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,"
			       "?14,?15,?16,?17,?18) RETURNING id", &st, e);

	*id = 0;
	if (rc)
		return rc;
	store_bind_i64(st, 1, n->job);
	store_bind_i64(st, 2, n->rank);
	store_bind_blob(st, 3, n->token_hash, n->token_hash_len);
	store_bind_text(st, 4, n->provider);
	store_bind_text(st, 5, n->cloud);
	store_bind_text(st, 6, n->region);
	store_bind_text(st, 7, n->zone);
	store_bind_text(st, 8, n->instance_type);
	store_bind_text(st, 9, n->accelerator);
	store_bind_f64(st, 10, n->accel_count);
	store_bind_i64(st, 11, n->spot);
	store_bind_i64(st, 12, n->pool);
	store_bind_i64(st, 13, n->price_micros);
	store_bind_i64(st, 14, n->list_micros);
	store_bind_i64(st, 15, n->reserved_micros);
	store_bind_i64(st, 16, n->created_ns);
	store_bind_i64(st, 17, n->boot_at_ns);
	store_bind_i64(st, 18, n->spare);
	rc = store_step(st, e);
	if (rc == 1) {
		*id = store_col_i64(st, "id");
		rc = store_run(st, e); /* to its end */
	} else if (rc == 0) {
		rc = sr_err_set(e, -EIO, "no row returned");
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "insert node") : 0;
}

int store_job_set_message(struct store *s, int64_t job, const char *msg,
			  struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET message=?1 WHERE id=?2 AND"
			       " message<>?1", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, msg);
	store_bind_i64(st, 2, job);
	return run_done(st, "job message", e);
}

int store_job_set_placement(struct store *s, int64_t job, const char *json,
			    bool moved, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET placement=?1, moves=moves+?2"
			       " WHERE id=?3", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, json);
	store_bind_i64(st, 2, moved);
	store_bind_i64(st, 3, job);
	return run_done(st, "placement", e);
}

/* ---- the node pass ----------------------------------------------------------- */

/* Run st to its end, store_done it: the rows it changed, or the error
 * prefixed by what. */
static int run_count(struct store_stmt *st, const char *what, struct sr_err *e)
{
	int rc = store_run(st, e);

	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "%s", what) : rc;
}

int store_node_set_kill_pending(struct store *s, int64_t node, bool pending,
				struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET kill_pending=?1 WHERE"
			       " id=?2 AND kill_pending<>?1", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, pending);
	store_bind_i64(st, 2, node);
	return run_count(st, "pending terminate", e);
}

int store_node_set_phase(struct store *s, int64_t node, const char *state,
			 const char *phase, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET phase=?1 WHERE id=?2 AND"
			       " state=?3", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, phase); /* NULL: SQL NULL */
	store_bind_i64(st, 2, node);
	store_bind_text(st, 3, state);
	return run_count(st, "node phase", e);
}

int store_node_bill(struct store *s, const struct store_bill *b,
		    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	/* the samples billed go out, any a heartbeat added since stay (a
	 * stale node billed twice cannot go below 0) */
	rc = store_prepare(s, "UPDATE nodes SET billed_until_ns=?1,"
			   " cost_micros=cost_micros+?2,"
			   " util_sum=CASE WHEN util_n<=?5 THEN 0 ELSE util_sum-?4 END,"
			   " util_n=greatest(util_n-?5, 0) WHERE id=?3", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, b->until_ns);
	store_bind_i64(st, 2, b->cost);
	store_bind_i64(st, 3, b->node);
	store_bind_f64(st, 4, b->util_sum);
	store_bind_i64(st, 5, b->util_n);
	rc = run_done(st, "bill node", e);
	if (rc)
		return rc;
	rc = store_prepare(s, "UPDATE jobs SET cost_micros=cost_micros+?1,"
			   " list_cost_micros=list_cost_micros+?3,"
			   " reserved_cost_micros=reserved_cost_micros+?4,"
			   " reserved_unknown=greatest(reserved_unknown, ?5)"
			   " WHERE id=?2", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, b->cost);
	store_bind_i64(st, 2, b->job);
	store_bind_i64(st, 3, b->list_cost);
	store_bind_i64(st, 4, b->reserved_cost);
	store_bind_i64(st, 5, b->reserved_unknown);
	return run_done(st, "bill job", e);
}

int store_node_end(struct store *s, int64_t node, const char *state,
		   const char *reason, int64_t now_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET state=?1, end_reason=?2,"
			       " terminated_ns=?3 WHERE id=?4 AND state IN"
			       " ('REQUESTED','BOOTING','READY')", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, state);
	store_bind_text(st, 2, reason);
	store_bind_i64(st, 3, now_ns);
	store_bind_i64(st, 4, node);
	return run_count(st, "end node", e);
}

int store_node_booted(struct store *s, int64_t node, const char *instance_id,
		      const char *blob, bool pending, int64_t now_ns,
		      struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET state=CASE WHEN state="
			       "'REQUESTED' THEN 'BOOTING' ELSE state END,"
			       " phase=CASE WHEN state='REQUESTED' AND ?5=1 THEN"
			       " 'pending' ELSE NULL END,"
			       " instance_id=?1, driver_blob=?2, billed_until_ns=?3"
			       " WHERE id=?4 AND (state='REQUESTED' OR"
			       " (state='READY' AND instance_id IS NULL))", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, instance_id);
	store_bind_text(st, 2, blob); /* NULL: SQL NULL */
	store_bind_i64(st, 3, now_ns);
	store_bind_i64(st, 4, node);
	store_bind_i64(st, 5, pending);
	return run_count(st, "boot node", e);
}

int store_node_instance_found(struct store *s, int64_t node,
			      const char *instance_id, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET instance_id=?1 WHERE id=?2"
			       " AND instance_id IS NULL AND state IN"
			       " ('BOOTING','READY')", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, instance_id);
	store_bind_i64(st, 2, node);
	return run_count(st, "record a node's instance", e);
}

int store_job_refusal(struct store *s, int64_t job, char *msg, size_t cap,
		      struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int found = store_prepare(s, "SELECT message FROM events WHERE job_id=?"
				  " AND type='launch_refused' ORDER BY seq DESC"
				  " LIMIT 1", &st, e);

	if (found)
		return found;
	store_bind_i64(st, 1, job);
	found = store_step(st, e);
	if (found == 1)
		snprintf(msg, cap, "%s", store_col_text(st, "message"));
	store_done(st);
	return found;
}
