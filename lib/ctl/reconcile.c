/*
 * reconcile.c - the reconciler: drives every job toward its desired state.
 *
 * DESIGN.  Like a Kubernetes controller, each pass reads the desired state
 * (jobs.desired, the job file) and the actual state (node rows, what the
 * provider reports, what agents reported) from the database, and makes
 * one step toward agreement per job - each step one transaction.  The
 * loop holds nothing between passes, so a daemon killed at any point
 * resumes from the database alone.  Transition table and diagram: jobsm.c.
 * Node lifecycle: recon_nodes.c.
 *
 * What each state waits for (a step leaves it when the condition holds):
 *
 *   PENDING        policy decision for this tick is SPOT or OD
 *                  -> create num_nodes nodes there; PROVISIONING
 *   PROVISIONING   every rank has a registered (READY) node without a
 *                  notice -> attempt += 1; RUNNING.  Ranks without a live
 *                  node get a new one (placed by the policy); healthy
 *                  nodes are kept.  A noticed node is terminated at once
 *                  (nothing runs on it yet).
 *   RUNNING        all ranks exited 0 -> SUCCEEDED; a rank crashed ->
 *                  RECOVERING (or FAILED past max_restarts); a node got a
 *                  notice -> NOTICE (not one whose rank completed there:
 *                  its work is done); a node was lost -> RECOVERING; the
 *                  policy's decision of this tick differs from what the
 *                  job holds (spot vs on-demand) -> NOTICE, reason
 *                  "migrate", the nodes to leave get `stop`
 *   NOTICE         -> CHECKPOINTING (the agents stop their workloads: the
 *                  noticed one on its own IMDS poll, the others on their
 *                  next heartbeat's `stop` directive).  A noticed node is
 *                  doomed: its rank's replacement is placed now (its pool
 *                  marked first), so it boots while the gang checkpoints
 *                  and stops (retried in CHECKPOINTING if the policy waits)
 *   CHECKPOINTING  every rank of the attempt exited 0 -> SUCCEEDED (no
 *                  work lost, nothing placed first); every rank has
 *                  exited or is gone -> PREEMPTED (the noticed nodes are
 *                  terminated; lost work is recorded)
 *   PREEMPTED      -> RECOVERING
 *   RECOVERING     ranks without a node get one where the policy says
 *                  (same pool, another zone/cloud, or on-demand) ->
 *                  PROVISIONING; WAIT keeps it here
 *   cancel         terminate every node -> CANCELLED (a job with a bucket
 *                  mount synced back first waits for rank 0's exit report:
 *                  its final upload round, recon_cancel.c)
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/money.h"
#include "common/timeutil.h"
#include "ctl/recon_int.h"
#include "finops/ledger.h"
#include "store/store_ctl.h"

int recon__job_load(struct ctl *c, struct store *db, int64_t id, struct rjob *j)
{
	struct store_job r;
	struct sr_err e = { 0 };
	json_t *pl;
	int rc;

	memset(j, 0, sizeof *j);
	rc = store_job_load(db, id, 0, &r, &e);
	if (rc)
		goto out;
	j->id = r.id;
	jobsm_parse(r.state, &j->state);
	j->cancel = strcmp(r.desired, "cancel") == 0;
	j->num_nodes = (int)r.num_nodes;
	j->attempt = r.attempt;
	j->restarts = r.restarts;
	j->max_restarts = r.max_restarts;
	j->step = r.step == STORE_NULL_I64 ? -1 : r.step;
	j->total_steps = r.total_steps == STORE_NULL_I64 ? -1 : r.total_steps;
	j->ckpt_step = r.ckpt_step == STORE_NULL_I64 ? -1 : r.ckpt_step;
	j->ckpt_store_ns = r.ckpt_store_ns == STORE_NULL_I64 ? 0 :
			   r.ckpt_store_ns;
	j->sim_start_s = r.sim_start_s;
	j->deadline_s = isnan(r.deadline_s) ? INFINITY : r.deadline_s;
	j->work_s = r.work_s;
	j->run_s = r.run_s;
	j->run_started_ns = r.run_started_ns == STORE_NULL_I64 ? 0 : r.run_started_ns;
	j->down_since_ns = r.down_since_ns == STORE_NULL_I64 ? 0 : r.down_since_ns;
	j->notice_ns = r.notice_ns == STORE_NULL_I64 ? 0 : r.notice_ns;
	snprintf(j->recover_reason, sizeof j->recover_reason, "%s",
		 r.recover_reason ? r.recover_reason : "");
	j->plan_ok = place_plan_parse(r.candidates ? r.candidates : "",
				      j->deadline_s, j->work_s, &j->plan) == 0;
	snprintf(j->placement, sizeof j->placement, "%s",
		 r.placement ? r.placement : "");
	j->policy_tick = r.policy_tick;
	j->deadline_state = r.deadline_state;
	j->step_ns = isnan(r.step_ns) ? 0 : r.step_ns;
	j->est_work_s = r.est_work_s;
	j->est_pace_ns = r.est_pace_ns;
	j->pace_attempt = r.pace_attempt;
	j->pace_step0 = r.pace_step0 == STORE_NULL_I64 ? -1 : r.pace_step0;
	j->est_restart_s = r.est_restart_s;
	j->last_pool = -1;
	pl = json_loads(j->placement, 0, NULL);
	if (pl) {
		j->last_pool = (int)json_integer_value(json_object_get(pl, "pool"));
		json_decref(pl);
	}
	/* count the RUNNING time of the current attempt too */
	if (j->state == JOB_RUNNING && j->run_started_ns)
		j->run_s += (double)(ctl__now(c) - j->run_started_ns) /
			    1e9 * c->cfg.time_scale;
out:
	store_job_free(&r);
	return rc;
}

int recon__run(struct store_stmt *st, struct sr_err *e, const char *what)
{
	int rc = store_run(st, e);

	return rc < 0 ? sr_err_prefix(e, "%s", what) : 0;
}

/* ---- small SQL helpers ------------------------------------------------------- */

/* The exits of the job's current attempt: ok (completed, 0), crashed
 * (a crash or a non-zero end), preempted (the node left on a preemption
 * notice; preempted_node: one such node), other (stopped by a directive). */
struct exits_sum {
	int n, ok, crashed, preempted, other;
	int64_t crash_code, preempted_node;
};

static void exit_add(void *ud, const char *cause, int64_t code, int64_t sig,
		     int64_t node)
{
	struct exits_sum *s = ud;

	s->n++;
	if (strcmp(cause, "completed") == 0 && code == 0) {
		s->ok++;
	} else if (strcmp(cause, "crashed") == 0 ||
		   strcmp(cause, "completed") == 0) {
		s->crashed++;
		s->crash_code = code >= 0 ? code : 128 + sig;
	} else if (strcmp(cause, "preempted") == 0) {
		s->preempted++;
		s->preempted_node = node;
	} else {
		s->other++;
	}
}

static void exits_of(struct store *db, const struct rjob *j, struct exits_sum *s)
{
	struct sr_err e = { 0 };

	memset(s, 0, sizeof *s);
	store_exits_each(db, j->id, j->attempt, exit_add, s, &e);
}

/* Accumulate the cloud time of the attempt that is stopping. */
static int stop_clock(struct ctl *c, struct store *db, const struct rjob *j,
		      int64_t now, struct sr_err *e)
{
	if (!j->run_started_ns)
		return 0;
	return store_job_run_clock(db, j->id, (double)(now - j->run_started_ns) /
				   1e9 * c->cfg.time_scale, e);
}

/* Finish: in one transaction move to `to`, end every live node (its warm
 * spares too), record the exit code; kill the processes after the
 * commit. */
static int finish(struct ctl *c, struct store *db, const struct rjob *j,
		  enum job_state to, int64_t code, const char *reason,
		  const char *msg)
{
	struct rnode *v = NULL;
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c);
	size_t n = 0;
	int rc;

	rc = recon__nodes_query(c, db, "state IN ('REQUESTED','BOOTING','READY')"
				" AND job_id=?1", j->id, &v, &n);
	if (rc)
		return rc;
	rc = store_begin(db, &e);
	for (size_t i = 0; !rc && i < n; i++)
		rc = recon__node_end(c, db, &v[i], "TERMINATED", reason, now, &e);
	if (!rc)
		rc = stop_clock(c, db, j, now, &e);
	if (!rc && code != INT64_MIN)
		rc = recon__job_set(db, j->id, "exit_code=?1", code, &e);
	/* Every rank exited 0: the work is done, whatever step the last
	 * heartbeat before the exit happened to carry. */
	if (!rc && to == JOB_SUCCEEDED && j->total_steps > 0)
		rc = recon__job_set(db, j->id, "step=?1", j->total_steps, &e);
	/* Every rank completed the current attempt: whatever stopped it
	 * late (a notice in the same second as the last step) lost none of
	 * its work.  A loss of an earlier attempt not yet counted: against
	 * the last checkpoint reported. */
	if (!rc && to == JOB_SUCCEEDED)
		rc = recon__lost_none(db, j->id, j->attempt, &e);
	if (!rc)
		rc = recon__lost_settle(c, db, j->id, -1, j->ckpt_step, false, now,
					&e);
	if (!rc)
		rc = recon__deadline_check(c, db, j, to, now, &e);
	if (!rc)
		rc = jobsm_move(db, j->id, j->state, to, now,
				      ctl__sim_at(c, now), msg, &e);
	rc = store_end(db, rc, &e);
	if (!rc) {
		sr_info("recon", "job finished", "job=%" PRId64 " state=%s msg=\"%s\"",
			j->id, jobsm_name(to), msg);
		for (size_t i = 0; i < n; i++)
			recon__kill(c, db, &v[i]);
	} else {
		sr_error("recon", "finish failed", "job=%" PRId64 " err=\"%s\"",
			 j->id, sr_err_str(&e, rc));
	}
	free(v);
	return rc;
}

static int simple(struct ctl *c, struct store *db, const struct rjob *j,
		  enum job_state to, const char *msg, const char *extra,
		  int64_t arg)
{
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c);
	int rc = store_begin(db, &e);

	if (!rc && extra)
		rc = recon__job_set(db, j->id, extra, arg, &e);
	if (!rc)
		rc = jobsm_move(db, j->id, j->state, to, now,
				      ctl__sim_at(c, now), msg, &e);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_error("recon", "transition failed", "job=%" PRId64 " to=%s "
			 "err=\"%s\"", j->id, jobsm_name(to), sr_err_str(&e, rc));
	return rc;
}

/* ---- per-state steps ------------------------------------------------------------ */

static int setup_failure(const struct rnode *live, size_t n, int64_t *code)
{
	for (size_t i = 0; i < n; i++) {
		if (live[i].setup_rc != INT64_MIN && live[i].setup_rc != 0) {
			*code = live[i].setup_rc;
			return 1;
		}
	}
	return 0;
}

/* A node's setup (or, RECON_SETUP_FILES, its file_mounts) failed: the
 * job fails with that code (126 for the file mounts). */
static int setup_failed(struct ctl *c, struct store *db, struct rjob *j,
			int64_t code)
{
	char msg[160];

	if (code == RECON_SETUP_FILES)
		return finish(c, db, j, JOB_FAILED, 126, "job_failed", "file_mounts "
			      "could not be put in place on a node, so setup never "
			      "ran (the job's file_mounts event says why)");
	snprintf(msg, sizeof msg, "setup failed with exit code %" PRId64, code);
	return finish(c, db, j, JOB_FAILED, code, "job_failed", msg);
}

/* A node placed at the job's notice to replace a noticed one
 * (replace_noticed), or a warm spare that took the rank then: it has
 * run nothing of the attempt being stopped. */
bool recon__placed_at_notice(const struct rjob *j, const struct rnode *x)
{
	return j->notice_ns && (x->created_ns >= j->notice_ns ||
				x->adopted_ns >= j->notice_ns);
}

/* PROVISIONING: replace noticed/missing ranks; RUNNING when all READY. */
static int step_provisioning(struct ctl *c, struct store *db, struct rjob *j,
			     struct rnode *live, size_t n)
{
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c), code;
	double sim = ctl__sim_at(c, now);
	int ready = 0, rc;
	char msg[160];

	if (setup_failure(live, n, &code))
		return setup_failed(c, db, j, code);
	for (size_t i = 0; i < n; i++) {
		if (!live[i].notice_ns)
			continue;
		/* Nothing runs there yet: let it go now (the preemption was
		 * counted with its notice: recon_preempt.c). */
		rc = store_begin(db, &e);
		if (!rc)
			rc = recon__node_end(c, db, &live[i], "TERMINATED", "preempted",
					     now, &e);
		rc = store_end(db, rc, &e);
		if (!rc) {
			if (live[i].spot)
				ctl__pool_mark(c, live[i].pool);
			recon__kill(c, db, &live[i]);
		}
		return rc ? rc : 1;
	}
	rc = recon__place_missing(c, db, j, live, n);
	if (rc <= 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		ready += strcmp(live[i].state, "READY") == 0;
	if (ready < j->num_nodes || (int)n != j->num_nodes)
		return 0;
	rc = store_begin(db, &e);
	if (!rc)
		rc = recon__job_set(db, j->id, "attempt=attempt+?1", 1, &e);
	if (!rc)
		rc = recon__job_set(db, j->id, "run_started_ns=?1", now, &e);
	if (!rc && j->down_since_ns) {
		int64_t down = (int64_t)((double)(now - j->down_since_ns) *
					 c->cfg.time_scale);
		struct ledger_event le = {
			.kind = LEDGER_EV_RECOVERY, .job_id = j->id,
			.provider = live[0].cloud, .region = live[0].region,
			.zone = live[0].zone, .instance_type = live[0].itype,
			.at_ns = now, .value_ns = down,
		};
		json_t *d = json_pack("{s:f,s:f,s:s}", "downtime_s", (double)down / 1e9,
				      "downtime_real_s",
				      (double)(now - j->down_since_ns) / 1e9,
				      "reason", j->recover_reason);

		snprintf(msg, sizeof msg, "recovered after %s: %.1f s down (%.2f h "
			 "of cloud time)", j->recover_reason,
			 (double)(now - j->down_since_ns) / 1e9, (double)down / 3.6e12);
		rc = ledger_event_add(db, &le, &e);
		if (!rc)
			rc = ctl_event_append(db, j->id, "recovered", NULL, NULL, 0, now,
					   sim, d, msg, &e);
		if (!rc)
			rc = recon__job_set(db, j->id, "recoveries=recoveries+?1, "
				     "down_since_ns=NULL", 1, &e);
		json_decref(d);
	}
	snprintf(msg, sizeof msg, "all %d node(s) ready: attempt %" PRId64
		 " starts", j->num_nodes, j->attempt + 1);
	if (!rc)
		rc = jobsm_move(db, j->id, j->state, JOB_RUNNING, now, sim,
				      msg, &e);
	rc = store_end(db, rc, &e);
	return rc ? rc : 1;
}

/* A rank of j without a live node.  With db (a RUNNING attempt): a rank
 * that completed the attempt is not missing, its node gone or not. */
static bool rank_missing(struct store *db, const struct rjob *j,
			 const struct rnode *live, size_t n)
{
	for (int r = 0; r < j->num_nodes; r++) {
		bool have = false;

		for (size_t i = 0; i < n; i++)
			have |= live[i].rank == r;
		if (!have && (!db || !recon__rank_done(db, j, r)))
			return true;
	}
	return false;
}

/* The cause of lost work a reason to leave RUNNING is (lost_pending). */
static const char *lost_cause(const char *reason)
{
	if (!strcmp(reason, "preempted"))
		return "preemption";
	if (!strcmp(reason, "migrate"))
		return "move";
	return reason; /* "lost", "crash" */
}

/* Whether the exits, read again, decide otherwise than the ones the
 * step read: every rank completed the attempt, or a noticed node of
 * `live` completed its rank there (its notice stops nothing). */
static bool exits_moved_on(struct store *db, const struct rjob *j,
			   const struct rnode *live, size_t n)
{
	struct exits_sum x;

	exits_of(db, j, &x);
	if (x.ok == j->num_nodes)
		return true;
	for (size_t i = 0; i < n; i++) {
		if (live[i].notice_ns && recon__node_done(db, j, &live[i]))
			return true;
	}
	return false;
}

/* Leave RUNNING for RECOVERING (crash or lost node) or NOTICE (a
 * preemption notice, or the policy moving the job: then the nodes of
 * `live` with .retire set are marked in the same transaction).  The
 * attempt's work since what the next attempt restores is lost: it is
 * recorded as pending (recon_lost.c).  A preemption was counted with
 * its notice (recon_preempt.c). */
static int leave_running(struct ctl *c, struct store *db, struct rjob *j,
			 enum job_state to, const char *reason, const char *msg,
			 bool restart, const struct rnode *live, size_t n)
{
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c);
	const struct rnode *hit = n ? &live[0] : NULL;
	int rc = store_begin(db, &e);

	/* The exits were read before this transaction: one that landed
	 * since (a notice in the same second as the last step) decides
	 * instead - read again here, where no report can come in between
	 * (writers serialise: store.h). */
	if (!rc && exits_moved_on(db, j, live, n)) {
		store_end(db, -EAGAIN, &e);
		return 1; /* the next step finishes it, or decides again */
	}
	for (size_t i = 0; !rc && i < n; i++) {
		if (live[i].retire)
			rc = store_node_retire(db, live[i].id, &e);
		if (live[i].notice_ns && (hit == &live[0] || !hit->notice_ns))
			hit = &live[i];
	}
	if (!rc)
		rc = recon__lost_open(c, db, j, lost_cause(reason), hit ? hit->id : 0,
				      recon__gang_price(j, live, n), now, &e);
	if (!rc)
		rc = stop_clock(c, db, j, now, &e);
	if (!rc)
		rc = store_job_went_down(db, j->id, now, reason, restart,
					 to == JOB_NOTICE, &e);
	if (!rc)
		rc = jobsm_move(db, j->id, j->state, to, now,
				      ctl__sim_at(c, now), msg, &e);
	rc = store_end(db, rc, &e);
	return rc ? rc : 1;
}

static int maybe_migrate(struct ctl *c, struct store *db, struct rjob *j,
			 struct rnode *live, size_t n);

/* A node's agent saw the preemption notice and its exit ("preempted")
 * was reported before a pass saw the notice (a pass late under load, or
 * spotrund restarted in between): a preemption - the node is noticed
 * now and counted, if no word of its notice came before - not a crash
 * that uses up a restart. */
static int left_on_notice(struct ctl *c, struct store *db, struct rjob *j,
			  int64_t node)
{
	struct rnode *gone = NULL;
	struct sr_err e = { 0 };
	size_t n = 0;
	char msg[160];
	int rc = store_begin(db, &e);

	if (!rc)
		rc = recon__node_reclaimed(c, db, node, ctl__now(c), 0, &e);
	rc = store_end(db, rc < 0 ? rc : 0, &e);
	if (rc)
		return rc;
	if (recon__nodes_query(c, db, "id=?1", node, &gone, &n))
		n = 0;
	snprintf(msg, sizeof msg, "node %" PRId64 " left on a preemption "
		 "notice", node);
	rc = leave_running(c, db, j, JOB_NOTICE, "preempted", msg, false, gone, n);
	free(gone);
	return rc;
}

static int step_running(struct ctl *c, struct store *db, struct rjob *j,
			struct rnode *live, size_t n)
{
	struct exits_sum x;
	int64_t code;
	char msg[160];

	exits_of(db, j, &x);
	if (x.ok == j->num_nodes)
		return finish(c, db, j, JOB_SUCCEEDED, 0, "job_done",
			      "every rank exited 0");
	/* A noticed node whose rank completed there has done its part: the
	 * gang trains on (the node is ended when the cloud takes it, or
	 * with the job; recon_preempt.c does not count it). */
	for (size_t i = 0; i < n; i++) {
		if (live[i].notice_ns && recon__node_done(db, j, &live[i]))
			live[i].notice_ns = 0;
	}
	if (setup_failure(live, n, &code))
		return setup_failed(c, db, j, code);
	if (x.crashed || x.other) {
		code = x.crashed ? x.crash_code : 1;
		if (j->restarts >= j->max_restarts) {
			snprintf(msg, sizeof msg, "workload exited with code %" PRId64
				 "; %" PRId64 " restart(s) used of %" PRId64, code,
				 j->restarts, j->max_restarts);
			return finish(c, db, j, JOB_FAILED, code, "job_failed", msg);
		}
		snprintf(msg, sizeof msg, "workload exited with code %" PRId64
			 ": restart %" PRId64 " of %" PRId64, code, j->restarts + 1,
			 j->max_restarts);
		return leave_running(c, db, j, JOB_RECOVERING, "crash", msg, true,
				     live, n);
	}
	/* a job that trains through the notice's lead runs on until its
	 * replacement is ready or the last safe moment (recon_through.c),
	 * unless a noticed rank stopped already */
	if (!x.preempted) {
		int tt = recon__train_through(c, db, j, live, n);

		if (tt == 1)
			return 0;
		if (tt == 2) {
			int rc = leave_running(c, db, j, JOB_NOTICE, "preempted",
					       "a noticed node was taken while the "
					       "gang trained through its notice",
					       false, live, n);

			recon__through_notice_at(c, db, j);
			return rc;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (live[i].notice_ns) {
			int rc;

			snprintf(msg, sizeof msg, "node %" PRId64 " (rank %" PRId64
				 ") got a preemption notice", live[i].id, live[i].rank);
			rc = leave_running(c, db, j, JOB_NOTICE, "preempted", msg,
					   false, live, n);
			recon__through_notice_at(c, db, j);
			return rc;
		}
	}
	if (x.preempted)
		return left_on_notice(c, db, j, x.preempted_node);
	if (rank_missing(db, j, live, n))
		return leave_running(c, db, j, JOB_RECOVERING, "lost",
				     "a node was lost: recovering from the last "
				     "checkpoint", false, live, n);
	return maybe_migrate(c, db, j, live, n);
}

/* Whether the workload of the current attempt has run: rank 0 reported
 * a step past the first one it reported in this attempt, or - for a
 * workload that reports no steps - the attempt has run for its restart
 * overhead plus one policy tick. */
static bool attempt_has_run(struct ctl *c, const struct rjob *j)
{
	double ran;

	if (j->total_steps > 0)
		return j->pace_attempt == j->attempt && j->pace_step0 >= 0 &&
		       j->step > j->pace_step0;
	if (!j->run_started_ns)
		return false;
	ran = (double)(ctl__now(c) - j->run_started_ns) / 1e9 *
	      c->cfg.time_scale;
	return ran >= j->plan.restart_s + (double)j->plan.gap_s;
}

/* Every live node of the gang holds spot in one pool, not `pool`; none
 * is noticed (a notice's own path moves it) or a warm spare (a move
 * would leave it behind). */
static bool gang_in_other_pool(const struct rnode *live, size_t n, int pool)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!live[i].spot || live[i].notice_ns || live[i].spare ||
		    live[i].pool != live[0].pool)
			return false;
	}
	return live[0].pool != pool;
}

/* The policy's decision for this tick says the job should hold something
 * else than it does: spot -> on-demand when the deadline is at risk on
 * spot (the deadline guard), on-demand -> spot when the slack allows,
 * spot -> spot in another pool when the price gap pays for the move (the
 * whole gang; spotrun's move_region(), the simulator's rule).  The
 * nodes to leave are told to checkpoint and stop (a `stop` directive), and
 * are replaced through the usual CHECKPOINTING -> RECOVERING path; this is
 * not a preemption.
 *
 * The move rule (docs/control-plane.md): a node is never stopped before
 * its workload has run (only a notice stops it earlier); a move back to
 * spot must pay for itself, with hysteresis (place_spot_pays); a move
 * between spot pools pays by the policy's own rule. */
static int maybe_migrate(struct ctl *c, struct store *db, struct rjob *j,
			 struct rnode *live, size_t n)
{
	struct place_choice ch;
	struct sr_err e = { 0 };
	size_t k = 0;
	char msg[240];

	if (recon__policy_tick(c, db, j, live, n, false, &ch, &e) ||
	    (ch.hold != SIM_OD && ch.hold != SIM_SPOT) || ch.pool < 0)
		return 0;
	if (ch.hold == SIM_SPOT && gang_in_other_pool(live, n, ch.pool)) {
		/* the policy moves the running gang to a cheaper spot pool
		 * (spotrun's move_region(): the price gap pays for the move).
		 * A move replaces every node: the nodes' own copies (tier 2,
		 * a kept copy, a peer's) go with them, so only a job whose
		 * checkpoints reach a store resumes where it stopped.  The
		 * simulator prices a move as a restart, not as the work
		 * since the start: without a store it is not made. */
		if (!attempt_has_run(c, j) || j->ckpt_store_ns <= 0 ||
		    !ctl__spot_open(c, ch.pool))
			return 0;
		struct ctl_pol *pol = ctl__pol_get(c, j->id);

		if (pol) /* its placement goes there (recon_place.c) */
			pol->move_pool = ch.pool;
		for (size_t i = 0; i < n; i++)
			live[i].retire = true;
		snprintf(msg, sizeof msg, "moving %zu node(s) to spot in pool %d: "
			 "%s", n, ch.pool, ch.why);
		return leave_running(c, db, j, JOB_NOTICE, "migrate", msg, false,
				     live, n);
	}
	for (size_t i = 0; i < n; i++) {
		live[i].retire = ch.hold == SIM_OD ? live[i].spot : !live[i].spot;
		k += live[i].retire;
	}
	if (k == 0 || (ch.hold == SIM_SPOT && k != n))
		return 0;
	if (!attempt_has_run(c, j))
		return 0;
	if (ch.hold == SIM_SPOT) {
		struct place_now now;
		struct cloud_offering o;
		double sim = ctl__sim_now(c);
		double step_s = j->est_pace_ns / 1e9 * c->cfg.time_scale;

		recon__place_now(c, j, live, n, sim, &now);
		if (ctl__describe(c, ch.pool, &o) ||
		    !place_spot_pays(&j->plan, &now, ch.pool,
				     sr_money_to_usd(o.spot_per_h), step_s))
			return 0;
	}
	snprintf(msg, sizeof msg, "moving %zu node(s) to %s: %s", k,
		 ch.hold == SIM_OD ? "on-demand" : "spot", ch.why);
	return leave_running(c, db, j, JOB_NOTICE, "migrate", msg, false, live, n);
}

/* Every rank of j's current attempt completed (exit 0). */
static bool all_completed(struct store *db, const struct rjob *j)
{
	struct exits_sum x;

	exits_of(db, j, &x);
	return x.ok == j->num_nodes;
}

static bool exit_seen(struct store *db, const struct rjob *j, int64_t rank)
{
	struct sr_err e = { 0 };

	return store_exit_seen(db, j->id, j->attempt, rank, &e) == 1;
}


/* The node a preemption hit and the gang's price: from the live noticed
 * nodes, or - when the node pass already ended them (the instance was
 * gone) - from the job's most recent noticed node. */
static int64_t noticed_node(struct ctl *c, struct store *db, const struct rjob *j,
			    const struct rnode *live, size_t n, sr_micros *price)
{
	struct rnode *v = NULL;
	int64_t id = 0;
	size_t k = 0;

	*price = 0;
	for (size_t i = 0; i < n; i++) {
		if (live[i].notice_ns && !recon__placed_at_notice(j, &live[i])) {
			*price += live[i].price;
			if (!id)
				id = live[i].id;
		}
	}
	if (id || recon__nodes_query(c, db, "job_id=?1 AND notice_ns IS NOT NULL"
				     " AND " RECON_GANG_SQL, j->id, &v, &k) ||
	    k == 0) {
		free(v);
		return id;
	}
	/* the latest notice's gang: every noticed node of that attempt */
	for (size_t i = 0; i < k; i++) {
		if (v[i].notice_ns >= j->notice_ns) {
			*price += v[i].price;
			if (!id)
				id = v[i].id;
		}
	}
	if (!id) {
		id = v[k - 1].id;
		*price = v[k - 1].price;
	}
	free(v);
	return id;
}

/* The cloud's deadline of this episode's noticed nodes that are ended
 * already (the instance gone before its deadline): the latest kill_ns
 * after the job's notice, 0 if none. */
static int64_t ended_notice_deadline(struct ctl *c, struct store *db,
				     const struct rjob *j)
{
	struct rnode *v = NULL;
	int64_t deadline = 0;
	size_t k = 0;

	if (recon__nodes_query(c, db, "job_id=?1 AND notice_ns IS NOT NULL"
			       " AND " RECON_GANG_SQL, j->id, &v, &k) == 0) {
		for (size_t i = 0; i < k; i++)
			if (v[i].kill_ns > j->notice_ns && v[i].kill_ns > deadline)
				deadline = v[i].kill_ns;
	}
	free(v);
	return deadline;
}

/* CHECKPOINTING: wait until each rank of the attempt exited or is gone. */
static int step_checkpointing(struct ctl *c, struct store *db, struct rjob *j,
			      struct rnode *live, size_t n)
{
	struct exits_sum x;
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c), deadline = 0, node = 0;
	int64_t grace = c->cfg.stop_grace_ms * 1000000;
	double sim = ctl__sim_at(c, now);
	sr_micros price = 0;
	int waiting = 0, rc;
	bool migrate;
	json_t *d;
	char msg[240];

	exits_of(db, j, &x);
	if (x.ok == j->num_nodes)
		return finish(c, db, j, JOB_SUCCEEDED, 0, "job_done",
			      "every rank exited 0");
	for (size_t i = 0; i < n; i++) {
		if (live[i].notice_ns && live[i].kill_ns > deadline)
			deadline = live[i].kill_ns;
		/* a replacement placed at the notice runs nothing yet */
		if (recon__placed_at_notice(j, &live[i]) && !live[i].notice_ns)
			continue;
		if (!exit_seen(db, j, live[i].rank))
			waiting++;
	}
	/* Every rank gets until the notice deadline - the cloud's own time,
	 * the latest of the noticed nodes' - plus the stop grace, to
	 * checkpoint and stop (the noticed node may already be gone while a
	 * healthy gang member is still writing).  A stop no cloud timed (a
	 * policy move, a notice without a time) gets the stop grace from
	 * the notice.  A noticed node already ended (its instance gone)
	 * keeps its cloud's deadline: the kept ranks still get until then
	 * plus the grace, not the notice plus two graces. */
	if (deadline == 0 && waiting)
		deadline = ended_notice_deadline(c, db, j);
	if (deadline <= j->notice_ns)
		deadline = j->notice_ns + grace;
	if (waiting && now < deadline + grace)
		return 0;
	migrate = strcmp(j->recover_reason, "migrate") == 0;
	if (!migrate)
		node = noticed_node(c, db, j, live, n, &price);
	rc = store_begin(db, &e);
	for (size_t i = 0; !rc && i < n; i++) {
		if (live[i].notice_ns || live[i].retire)
			rc = recon__node_end(c, db, &live[i], "TERMINATED",
					     live[i].notice_ns ? "preempted" :
					     "migrated", now, &e);
	}
	/* The work lost was recorded as pending when the job left RUNNING;
	 * it is counted when a later attempt restores (recon_lost.c). */
	d = json_pack("{s:o,s:o,s:f}", "step", j->step >= 0 ?
		      json_integer(j->step) : json_null(), "ckpt_step",
		      j->ckpt_step >= 0 ? json_integer(j->ckpt_step) : json_null(),
		      "notice_to_stop_real_s", j->notice_ns ?
		      (double)(now - j->notice_ns) / 1e9 : 0.0);
	{
		char a[32], b[32];

		snprintf(msg, sizeof msg, "%s at step %s, last checkpoint seen at "
			 "step %s (the work lost is counted from the checkpoint "
			 "the next attempt restores)",
			 migrate ? "left the old nodes" : "stopped on the preemption",
			 recon__step_str(j->step, a, sizeof a),
			 recon__step_str(j->ckpt_step, b, sizeof b));
	}
	if (!rc)
		rc = ctl_event_append(db, j->id, migrate ? "migrated" : "stopped",
				   NULL, NULL, node, now, sim, d, msg, &e);
	json_decref(d);
	if (!rc)
		rc = jobsm_move(db, j->id, j->state, JOB_PREEMPTED, now, sim,
				      msg, &e);
	rc = store_end(db, rc, &e);
	if (!rc) {
		for (size_t i = 0; i < n; i++) {
			/* a notice is the cloud reclaiming that pool now:
			 * what we observed, for the placement that follows */
			if (live[i].notice_ns && live[i].spot)
				ctl__pool_mark(c, live[i].pool);
			if (live[i].notice_ns || live[i].retire)
				recon__kill(c, db, &live[i]);
		}
	}
	return rc ? rc : 1;
}

/* NOTICE, CHECKPOINTING: a noticed node will be reclaimed whatever
 * happens, so its rank's replacement is asked for at once rather than
 * after the node is gone - it boots while the gang takes its final
 * checkpoint (recon__place_missing counts a noticed rank as missing and
 * leaves the job's state alone here).  The noticed pool is marked first
 * (the cloud is reclaiming it now), as it is after the loss.  A move
 * (reason "migrate") places nothing here.  A placement that fails here
 * (logged by recon__place_missing) must not hold up the checkpoint:
 * RECOVERING places what is still missing. */
static void replace_noticed(struct ctl *c, struct store *db, struct rjob *j,
			    const struct rnode *live, size_t n)
{
	bool doomed = false;

	if (strcmp(j->recover_reason, "preempted") != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!live[i].notice_ns)
			continue;
		doomed = true;
		if (live[i].spot)
			ctl__pool_mark(c, live[i].pool);
	}
	if (doomed)
		(void)recon__place_missing(c, db, j, live, n);
}

/* The deadline's verdict for a live job, in a transaction of its own
 * (it writes only when there is something new to say). */
static void deadline_tick(struct ctl *c, struct store *db, const struct rjob *j)
{
	struct sr_err e = { 0 };
	int rc = store_begin(db, &e);

	if (!rc)
		rc = recon__deadline_check(c, db, j, j->state, ctl__now(c), &e);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_error("recon", "deadline check failed", "job=%" PRId64
			 " err=\"%s\"", j->id, sr_err_str(&e, rc));
}

/* One step for job `id`.  Returns 1 if its state changed (call again),
 * 0 if it waits, < 0 on error. */
static int step_job(struct ctl *c, struct store *db, int64_t id)
{
	struct rnode *live = NULL;
	struct rjob j;
	size_t n = 0;
	int rc;

	rc = recon__job_load(c, db, id, &j);
	if (rc || jobsm_terminal(j.state))
		return rc;
	rc = recon__nodes_live(c, db, id, &live, &n);
	if (rc)
		return rc;
	if (j.cancel && recon__cancel_waits(db, &j, live, n)) {
		rc = 0; /* the final upload round first (recon_cancel.c) */
		goto out;
	}
	if (j.cancel) {
		rc = finish(c, db, &j, JOB_CANCELLED, INT64_MIN, "cancelled",
			    "cancelled by the user");
		rc = rc ? rc : 0;
		goto out;
	}
	if (!j.plan_ok) {
		rc = finish(c, db, &j, JOB_FAILED, INT64_MIN, "job_failed",
			    "stored placement plan is unreadable");
		goto out;
	}
	if (j.state == JOB_PENDING || j.state == JOB_PROVISIONING ||
	    j.state == JOB_RECOVERING) {
		char why[SR_ERR_MSG_MAX + 64];

		if (recon__launch_refused(db, id, why, sizeof why) == 1) {
			rc = finish(c, db, &j, JOB_FAILED, INT64_MIN, "job_failed", why);
			goto out;
		}
	}
	switch (j.state) {
	case JOB_PENDING:
	case JOB_RECOVERING:
		if (j.state == JOB_RECOVERING && !rank_missing(NULL, &j, live, n)) {
			rc = simple(c, db, &j, JOB_PROVISIONING, "every rank "
				    "has a node (kept, or replaced at the notice): "
				    "the next attempt starts when all are ready",
				    NULL, 0);
			rc = rc ? rc : 1;
			break;
		}
		rc = recon__place_missing(c, db, &j, live, n);
		break;
	case JOB_PROVISIONING:
		rc = step_provisioning(c, db, &j, live, n);
		break;
	case JOB_RUNNING:
		rc = step_running(c, db, &j, live, n);
		break;
	case JOB_NOTICE:
		/* a job whose every rank completed gets no replacement:
		 * CHECKPOINTING finishes it (SUCCEEDED) in this pass */
		if (!all_completed(db, &j))
			replace_noticed(c, db, &j, live, n);
		rc = simple(c, db, &j, JOB_CHECKPOINTING, "workload signalled: "
			    "taking the final checkpoint", NULL, 0);
		rc = rc ? rc : 1;
		break;
	case JOB_CHECKPOINTING:
		if (!all_completed(db, &j))
			replace_noticed(c, db, &j, live, n);
		rc = step_checkpointing(c, db, &j, live, n);
		break;
	case JOB_PREEMPTED:
		rc = simple(c, db, &j, JOB_RECOVERING, "choosing where to resume",
			    NULL, 0);
		rc = rc ? rc : 1;
		break;
	default:
		rc = 0;
		break;
	}
	/* Keep the policy's view of the market current while the job runs
	 * (it learns availability from every tick, not only at decisions). */
	if (rc == 0 && !jobsm_terminal(j.state)) {
		struct place_choice ch;
		struct sr_err e = { 0 };

		free(live);
		live = NULL;
		if (recon__nodes_live(c, db, id, &live, &n) == 0 &&
		    recon__job_load(c, db, id, &j) == 0 && j.plan_ok) {
			recon__policy_tick(c, db, &j, live, n, false, &ch, &e);
			deadline_tick(c, db, &j);
			recon__spares_keep(c, db, &j, live, n);
		}
	}
out:
	free(live);
	return rc;
}

/* ---- event hooks ---------------------------------------------------------------- */

struct hook_run {
	struct ctl *c;
	int64_t seq;                 /* the last event handed on */
};

/* One event to the hooks (fn of store_events_each). */
static int hook_event(void *ud, int64_t seq, const struct store_event *ev,
		      struct sr_err *e)
{
	struct hook_run *h = ud;
	char ts[40];
	json_t *j, *data = ev->data ? json_loads(ev->data, 0, NULL) : NULL;

	(void)e;
	sr_time_format_rfc3339(ev->ts_ns, 3, ts, sizeof ts);
	j = json_pack("{s:I,s:I,s:s,s:f,s:s,s:o,s:o,s:o,s:s,s:o}",
		"seq", (json_int_t)seq, "job_id", (json_int_t)ev->job_id,
		"ts", ts, "sim_s", ev->sim_s, "type", ev->type,
		"from", ev->from ? json_string(ev->from) : json_null(),
		"to", ev->to ? json_string(ev->to) : json_null(),
		"node_id", ev->node_id ? json_integer(ev->node_id) : json_null(),
		"message", ev->message,
		"data", data ? data : json_object());
	if (j)
		ctl__hooks_call(h->c, j);
	json_decref(j);
	h->seq = seq;
	return 0;
}

void ctl__hooks_run(struct ctl *c, struct store *db)
{
	struct hook_run h = { c, 0 };
	char buf[32];
	int64_t last = 0;
	struct sr_err e = { 0 };

	if (ctl__hooks_count() == 0)
		return;
	if (store_setting_get(db, "hook_seq", buf, sizeof buf, &e) == 0)
		last = strtoll(buf, NULL, 10);
	h.seq = last;
	store_events_each(db, 0, last, 500, hook_event, &h, &e);
	if (h.seq > last) {
		snprintf(buf, sizeof buf, "%lld", (long long)h.seq);
		store_setting_set(db, "hook_seq", buf, &e);
	}
}

/* ---- the loop -------------------------------------------------------------------- */

int recon__active_jobs(struct store *db, int64_t **out, size_t *n)
{
	struct sr_err e = { 0 };

	return store_jobs_unfinished(db, RECON_JOB_PAGE, out, n, &e);
}

int ctl__reconcile_once(struct ctl *c)
{
	struct store *db = ctl__store(c);
	int64_t t0 = sr_time_mono_ns();
	int64_t *ids = NULL;
	size_t n = 0;
	int rc;

	if (!db)
		return -EIO;
	/* Only the leader reconciles, and each of its transactions is
	 * fenced with its lease epoch (lease.c). */
	store_set_fence(db, NULL, NULL);
	ctl__lease_tick(c, db);
	if (!ctl__is_leader(c))
		return 0;
	store_set_fence(db, ctl__lease_fence, c);
	{
		struct sr_err e = { 0 };

		if (ctl__clock_save(c, db, &e))
			sr_warn("recon", "cannot save the clock's anchor",
				"err=\"%s\"", sr_err_str(&e, -EIO));
	}
	rc = recon__nodes_pass(c, db);
	if (rc)
		sr_warn("recon", "node pass failed", "err=\"%s\"", sr_strerror(rc));
	rc = recon__active_jobs(db, &ids, &n);
	if (rc) {
		sr_warn("recon", "cannot list active jobs", "err=\"%s\"",
			sr_strerror(rc));
		return -EIO; /* the pass did nothing; the next one retries */
	}
	/* Release the policy memory of jobs that have ended. */
	ctl__pol_prune(c, ids, n);
	for (size_t i = 0; i < n; i++) {
		/* a pass through thousands of jobs may outlast a third of the
		 * lease: renew it on the way, or stop when it is gone */
		if (!ctl__lease_keep(c, db))
			break;
		/* Several steps per pass, so NOTICE -> CHECKPOINTING or
		 * PREEMPTED -> RECOVERING -> PROVISIONING don't wait a tick. */
		for (int k = 0; k < 6; k++) {
			rc = step_job(c, db, ids[i]);
			if (rc <= 0)
				break;
		}
		if (rc < 0)
			sr_warn("recon", "job step failed", "job=%" PRId64 " err=\"%s\"",
				ids[i], sr_strerror(rc));
	}
	free(ids);
	ctl__ticks_call(c, db);
	ctl__hooks_run(c, db);
	ctl__lease_passed(c, sr_time_mono_ns() - t0);
	return 0;
}

void *ctl__reconcile_main(void *arg)
{
	struct ctl *c = arg;
	struct store *db = ctl__store(c);

	if (db) {
		/* its writes (kill_pending) are a leader's (lease.c) */
		store_set_fence(db, ctl__lease_fence, c);
		recon__sweep_orphans(c, db);
	}
	while (!atomic_load(&c->stopping)) {
		struct timespec ts;
		int64_t until;

		ctl__reconcile_once(c);
		until = sr_time_mono_ns() + c->cfg.tick_ms * 1000000;
		ts.tv_sec = until / SR_NS_PER_SEC;
		ts.tv_nsec = until % SR_NS_PER_SEC;
		pthread_mutex_lock(&c->wake_mu);
		while (!c->wake && !atomic_load(&c->stopping)) {
			if (pthread_cond_timedwait(&c->wake_cv, &c->wake_mu, &ts))
				break;
		}
		c->wake = false;
		pthread_mutex_unlock(&c->wake_mu);
	}
	return NULL;
}
