/*
 * store_nodes_api.c - the node API's statements (store_ctl.h): what
 * lib/ctl/routes_nodes.c reads and writes when an agent registers,
 * heartbeats and reports.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_ctl.h"

static void text_to(struct store_stmt *st, const char *col, char *out,
		    size_t cap)
{
	snprintf(out, cap, "%s", store_col_text(st, col));
}

/* v, or NULL when !set. */
static void bind_i64_if(struct store_stmt *st, int idx, int64_t v, bool set)
{
	if (set)
		store_bind_i64(st, idx, v);
	else
		store_bind_null(st, idx);
}

static void bind_f64_if(struct store_stmt *st, int idx, double v, bool set)
{
	if (set)
		store_bind_f64(st, idx, v);
	else
		store_bind_null(st, idx);
}

/* Run st (bound) to its end, store_done it: 0, or < 0 prefixed by what. */
static int run_done(struct store_stmt *st, const char *what, struct sr_err *e)
{
	int rc = store_run(st, e);

	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "%s", what) : 0;
}

int store_node_ctx_load(struct store *s, int64_t id, struct store_node_ctx *n,
			struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	memset(n, 0, sizeof *n);
	rc = store_prepare(s, "SELECT n.id, n.job_id, n.rank, n.state,"
			   " j.state AS job_state, j.desired, j.attempt,"
			   " j.num_nodes, CASE WHEN n.notice_ns IS NULL THEN 0"
			   " ELSE 1 END AS notice, n.cloud, n.region, n.zone,"
			   " n.instance_type, n.spot, n.price_micros, n.retire,"
			   " n.pool, coalesce(n.kill_ns, 0) AS kill_ns,"
			   " CASE WHEN n.spare = 1 AND n.adopted_ns IS NULL"
			   " THEN 1 ELSE 0 END AS spare_now,"
			   " CASE WHEN j.candidates LIKE"
			   " '%\"train_through\":true%' THEN 1 ELSE 0 END"
			   " AS train_through,"
			   " CASE WHEN EXISTS (SELECT 1 FROM nodes o WHERE"
			   " o.job_id = n.job_id AND o.rank = n.rank AND"
			   " o.id <> n.id AND o.notice_ns IS NOT NULL AND"
			   " o.state IN ('REQUESTED','BOOTING','READY'))"
			   " THEN 1 ELSE 0 END AS stand_in"
			   " FROM nodes n JOIN jobs j ON j.id=n.job_id"
			   " WHERE n.id=?1", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, id);
	rc = store_step(st, e);
	if (rc == 1) {
		n->id = store_col_i64(st, "id");
		n->job = store_col_i64(st, "job_id");
		n->rank = store_col_i64(st, "rank");
		text_to(st, "state", n->state, sizeof n->state);
		text_to(st, "job_state", n->job_state, sizeof n->job_state);
		text_to(st, "desired", n->desired, sizeof n->desired);
		n->attempt = store_col_i64(st, "attempt");
		n->num_nodes = store_col_i64(st, "num_nodes");
		n->notice = store_col_i64(st, "notice") != 0;
		text_to(st, "cloud", n->cloud, sizeof n->cloud);
		text_to(st, "region", n->region, sizeof n->region);
		text_to(st, "zone", n->zone, sizeof n->zone);
		text_to(st, "instance_type", n->itype, sizeof n->itype);
		n->spot = store_col_i64(st, "spot") != 0;
		n->price = store_col_i64(st, "price_micros");
		n->retire = store_col_i64(st, "retire") != 0;
		n->pool = (int)store_col_i64(st, "pool");
		n->kill_ns = store_col_i64(st, "kill_ns");
		n->spare = store_col_i64(st, "spare_now") != 0;
		n->train_through = store_col_i64(st, "train_through") != 0;
		n->stand_in = store_col_i64(st, "stand_in") != 0 && !n->notice;
		rc = 0;
	} else if (rc == 0) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "node %" PRId64 ": not found", id);
	}
	store_done(st);
	return rc;
}

int store_gang_addrs(struct store *s, int64_t job,
		     void (*fn)(void *ud, int64_t rank, const char *addr),
		     void *ud, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT rank, coalesce(addr, '') AS addr FROM"
			       " nodes WHERE job_id=?1 AND state IN"
			       " ('REQUESTED','BOOTING','READY')", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	while ((rc = store_step(st, e)) == 1)
		fn(ud, store_col_i64(st, "rank"), store_col_text(st, "addr"));
	store_done(st);
	return rc;
}

int store_job_env_load(struct store *s, int64_t job, struct store_job_env *out,
		       struct sr_err *e)
{
	struct store_stmt *st = NULL;
	const void *sealed;
	size_t sn = 0;
	int rc = store_prepare(s, "SELECT spec_json, envs, workdir, secrets_enc,"
			       " files, name, created_ns FROM jobs WHERE id=?1",
			       &st, e);

	memset(out, 0, sizeof *out);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	rc = store_step(st, e);
	if (rc == 1) {
		out->spec_json = strdup(store_col_text(st, "spec_json"));
		out->envs = store_col_null(st, "envs") ? NULL :
			    strdup(store_col_text(st, "envs"));
		out->workdir = strdup(store_col_text(st, "workdir"));
		out->name = strdup(store_col_text(st, "name"));
		out->created_ns = store_col_i64(st, "created_ns");
		out->files = !store_col_null(st, "files");
		sealed = store_col_null(st, "secrets_enc") ? NULL :
			 store_col_blob(st, "secrets_enc", &sn);
		if (sealed && (out->sealed = malloc(sn ? sn : 1)) != NULL) {
			memcpy(out->sealed, sealed, sn);
			out->sealed_len = sn;
		}
		if (!out->spec_json || !out->workdir || !out->name ||
		    (!store_col_null(st, "envs") && !out->envs) ||
		    (sealed && !out->sealed))
			rc = sr_err_set(e, -ENOMEM, "job %" PRId64 ": out of "
					"memory", job);
	} else if (rc == 0) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "job %" PRId64 ": not found",
				job);
	}
	store_done(st);
	if (rc == 1)
		return 0;
	store_job_env_free(out);
	return rc;
}

void store_job_env_free(struct store_job_env *j)
{
	free(j->spec_json);
	free(j->envs);
	free(j->workdir);
	free(j->name);
	if (j->sealed)
		explicit_bzero(j->sealed, j->sealed_len);
	free(j->sealed);
	memset(j, 0, sizeof *j);
}

int store_node_register(struct store *s, int64_t node, const char *addr,
			int64_t now_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET state='READY',"
			       " registered_ns=coalesce(registered_ns, ?1),"
			       " last_hb_ns=?1, addr=nullif(?3, '') WHERE id=?2"
			       " AND state IN ('REQUESTED','BOOTING','READY')",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, now_ns);
	store_bind_i64(st, 2, node);
	store_bind_text(st, 3, addr);
	return run_done(st, "register", e);
}

int store_node_heartbeat(struct store *s, const struct store_hb *h,
			 struct sr_err *e)
{
	struct store_stmt *st = NULL;
	double u = h->gpu_util >= 0 ? h->gpu_util :
		   h->steps_per_s >= 0 ? (h->steps_per_s > 0 ? 1 : 0) : -1;
	int rc = store_prepare(s, "UPDATE nodes SET last_hb_ns=?1, workload=?2,"
			       " wl_attempt=?3, wl_pgid=coalesce(?4, wl_pgid),"
			       " cpu_util=?5, gpu_util=?6,"
			       " util_sum=util_sum+coalesce(CAST(?7 AS DOUBLE"
			       " PRECISION), 0),"
			       " util_n=util_n+(CASE WHEN ?7 IS NULL THEN 0 ELSE 1"
			       " END) WHERE id=?8", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, h->now_ns);
	store_bind_text(st, 2, h->workload);
	store_bind_i64(st, 3, h->attempt);
	bind_i64_if(st, 4, h->pgid, h->pgid > 0);
	bind_f64_if(st, 5, h->cpu_util, h->cpu_util >= 0);
	bind_f64_if(st, 6, h->gpu_util, h->gpu_util >= 0);
	bind_f64_if(st, 7, u, u >= 0);
	store_bind_i64(st, 8, h->node);
	return run_done(st, "heartbeat", e);
}

int store_job_progress(struct store *s, const struct store_progress *p,
		       struct sr_err *e)
{
	struct store_stmt *st = NULL;
	/* Pace: from the first step this attempt reported, once it has
	 * moved by 2 % of the steps and by 10 (a quarter of a job of fewer
	 * than 40).  A reported step is only known to one step, at each end
	 * of the window, so a 2-step window could read anything from 0 to
	 * twice the true pace, and the policy would migrate on the noise; 10
	 * steps bound the error to 20 %. */
	int rc = store_prepare(s, "UPDATE jobs SET step=coalesce(?1, step),"
			       " total_steps=coalesce(?2, total_steps),"
			       " ckpt_step=greatest(?3, ckpt_step),"
			       " ckpt_local_step=coalesce(?7, ckpt_local_step),"
			       " ckpt_store_ns=coalesce(?8, ckpt_store_ns),"
			       " step_ns=CASE WHEN ?1 IS NOT NULL AND pace_attempt=?5"
			       "  AND ?1 - pace_step0 >= greatest(1, coalesce(?2,"
			       "  total_steps, 0) / 50, least(10, coalesce(?2,"
			       "  total_steps, 0) / 4))"
			       "  THEN (?6 - pace_t0_ns) * 1.0 / (?1 - pace_step0)"
			       "  ELSE step_ns END,"
			       " pace_step0=CASE WHEN pace_attempt=?5 OR ?1 IS NULL"
			       "  THEN pace_step0 ELSE ?1 END,"
			       " pace_t0_ns=CASE WHEN pace_attempt=?5 OR ?1 IS NULL"
			       "  THEN pace_t0_ns ELSE ?6 END,"
			       " pace_attempt=CASE WHEN ?1 IS NULL THEN pace_attempt"
			       "  ELSE ?5 END WHERE id=?4", &st, e);

	if (rc)
		return rc;
	bind_i64_if(st, 1, p->step, p->step >= 0);
	bind_i64_if(st, 2, p->total_steps, p->total_steps >= 0);
	bind_i64_if(st, 3, p->ckpt_step, p->ckpt_step >= 0);
	store_bind_i64(st, 4, p->job);
	store_bind_i64(st, 5, p->attempt);
	store_bind_i64(st, 6, p->now_ns);
	bind_i64_if(st, 7, p->ckpt_local_step, p->ckpt_local_step >= 0);
	bind_i64_if(st, 8, p->ckpt_store_ns, p->ckpt_store_ns >= 0);
	return run_done(st, "progress", e);
}

int store_log_add(struct store *s, const struct store_log_line *l,
		  struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "INSERT INTO logs(job_id, node_id, rank,"
			       " attempt, ts_ns, stream, line, truncated)"
			       " VALUES(?,?,?,?,?,?,?,?)", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, l->job);
	store_bind_i64(st, 2, l->node);
	store_bind_i64(st, 3, l->rank);
	store_bind_i64(st, 4, l->attempt);
	store_bind_i64(st, 5, l->ts_ns);
	store_bind_text(st, 6, l->stream);
	store_bind_textn(st, 7, l->line, l->line_len);
	store_bind_i64(st, 8, l->truncated);
	return run_done(st, "insert log", e);
}

int store_exit_add(struct store *s, const struct store_exit *x,
		   struct sr_err *e)
{
	struct store_stmt *st = NULL;
	/* a duplicated report is harmless: the key is (job, attempt, rank) */
	int rc = store_prepare(s, "INSERT INTO exits(job_id, attempt, rank,"
			       " node_id, exit_code, signal, cause, ts_ns)"
			       " VALUES(?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, x->job);
	store_bind_i64(st, 2, x->attempt);
	store_bind_i64(st, 3, x->rank);
	store_bind_i64(st, 4, x->node);
	bind_i64_if(st, 5, x->code, x->code != STORE_NULL_I64);
	bind_i64_if(st, 6, x->signal, x->signal != 0);
	store_bind_text(st, 7, x->cause);
	store_bind_i64(st, 8, x->ts_ns);
	return run_done(st, "insert exit", e);
}

int store_node_util(struct store *s, int64_t node, double cpu, double util,
		    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET cpu_util=?1,"
			       " util_sum=util_sum+?2, util_n=util_n+1"
			       " WHERE id=?3", &st, e);

	if (rc)
		return rc;
	bind_f64_if(st, 1, cpu, cpu >= 0);
	store_bind_f64(st, 2, util);
	store_bind_i64(st, 3, node);
	return run_done(st, "util", e);
}

int store_node_notice_seen(struct store *s, int64_t node, int64_t now_ns,
			   int64_t kill_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET notice_ns=?1, kill_ns=coalesce("
			       "kill_ns, ?2) WHERE id=?3 AND notice_ns IS NULL",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, now_ns);
	bind_i64_if(st, 2, kill_ns, kill_ns != 0);
	store_bind_i64(st, 3, node);
	rc = store_run(st, e);
	store_done(st);
	if (rc != 0 || !kill_ns)
		return rc < 0 ? sr_err_prefix(e, "notice") : rc > 0;
	/* noticed before without the cloud's time: keep the one given now */
	rc = store_prepare(s, "UPDATE nodes SET kill_ns=?1 WHERE id=?2 AND"
			   " kill_ns IS NULL", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, kill_ns);
	store_bind_i64(st, 2, node);
	return run_done(st, "notice", e);
}

int store_node_rebalance(struct store *s, int64_t node, int64_t at_ns,
			 struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET rebalance_ns=coalesce("
			       "rebalance_ns, ?1) WHERE id=?2", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, at_ns);
	store_bind_i64(st, 2, node);
	return run_done(st, "rebalance", e);
}

int store_job_ckpt_step_raise(struct store *s, int64_t job, int64_t step,
			      struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE jobs SET ckpt_step=greatest(ckpt_step,"
			       " ?1) WHERE id=?2", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, step);
	store_bind_i64(st, 2, job);
	return run_done(st, "checkpoint step", e);
}

int store_node_set_setup_rc(struct store *s, int64_t node, int64_t rc_,
			    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE nodes SET setup_rc=?1 WHERE id=?2",
			       &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, rc_);
	store_bind_i64(st, 2, node);
	return run_done(st, "setup", e);
}
