/*
 * recon_preempt.c - what a preemption of a job is, counted in one place.
 *
 * A preemption is the cloud reclaiming one of the job's spot nodes.  The
 * control plane learns it from the provider (its list() shows a notice),
 * from the node's agent (IMDS, a scheduler's signal: the notice_ack
 * event), or - when neither reached it - from the workload's exit on a
 * notice.  Each reclaimed node is one preemption, counted the first time
 * the control plane learns of it, in the transaction that records the
 * notice on the node (nodes.notice_ns set from NULL: once per node, on
 * SQLite and on PostgreSQL alike), whatever the node was doing:
 *
 *   training  it ran the job's current attempt: the attempt stops (the
 *             final checkpoint), and the work past the checkpoint the
 *             next attempt restores is lost work (recon_lost.c)
 *   booting   it had not started the attempt - still booting, a gang
 *             rank waiting for its peers, a replacement placed at an
 *             earlier notice: no work is lost, but the job pays for a
 *             relaunch (the node's billed time, the wait for another)
 *
 * Not preemptions: a node lost without a notice (heartbeats or the boot
 * timed out: node_lost, a loss recovered the same way), a move (the
 * policy leaving a pool: migrated), a crash.  A notice that reaches a
 * job already SUCCEEDED/FAILED/CANCELLED is recorded on the node but not
 * counted; so is one that reaches a node whose rank had already
 * reported completing the current attempt there (exit 0: its work is
 * done, and the cloud taking the node takes nothing from the job - a
 * one-node job is done, a gang's other ranks train on).  A notice the
 * control plane learns of before that report counts, as "training":
 * then nobody could know the workload was finishing (and no work is
 * lost if every rank then completes: recon_lost.c).  The simulator
 * counts the same way: a spot hold lost, booting or not, is a
 * preemption (lib/sim/sim.c), one lost after the work is done is not.
 *
 * The count is jobs.preemptions + 1, a ledger event of kind preemption
 * (at the node's place and price) and one "preempted" event (data.phase,
 * data.node, data.rank, data.attempt), all in one transaction: the job
 * view, `spotrun status`, `spotrun cost`, `spotrun events`, /metrics,
 * FOCUS, the dashboard's timeline, the alerts and the demo report read
 * these, never a count of their own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/jobsm.h"
#include "ctl/recon_int.h"
#include "finops/ledger.h"
#include "store/store_ctl.h"

bool recon__node_done(struct store *db, const struct rjob *j,
		      const struct rnode *x)
{
	struct sr_err e = { 0 };

	return j->attempt > 0 && x->id > 0 &&
	       store_exit_done(db, j->id, j->attempt, x->rank, x->id, &e) == 1;
}

bool recon__rank_done(struct store *db, const struct rjob *j, int64_t rank)
{
	struct sr_err e = { 0 };

	return j->attempt > 0 &&
	       store_exit_done(db, j->id, j->attempt, rank, 0, &e) == 1;
}

/* Whether node x was running job j's current attempt. */
static bool node_trains(const struct rjob *j, const struct rnode *x)
{
	if (strcmp(x->state, "READY") != 0 || j->attempt <= 0)
		return false;
	if (j->state == JOB_RUNNING)
		return true;
	if (j->state != JOB_NOTICE && j->state != JOB_CHECKPOINTING)
		return false;
	/* stopping: a replacement placed at the notice has run nothing */
	return !recon__placed_at_notice(j, x);
}

int recon__preemption_count(struct ctl *c, struct store *db, const struct rjob *j,
			    const struct rnode *x, int64_t now, struct sr_err *e)
{
	struct ledger_event le = {
		.kind = LEDGER_EV_PREEMPTION, .job_id = j->id,
		.node_id = x->id, .provider = x->cloud, .region = x->region,
		.zone = x->zone, .instance_type = x->itype, .at_ns = now,
		.unit_price = x->price,
	};
	bool trains = node_trains(j, x);
	char msg[320], a[32], b[32];
	json_t *d;
	int rc;

	recon__step_str(j->step, a, sizeof a);
	recon__step_str(j->ckpt_step, b, sizeof b);
	if (trains)
		snprintf(msg, sizeof msg, "node %" PRId64 " (rank %" PRId64 ") "
			 "reclaimed by the cloud while training attempt %" PRId64
			 " at step %s (last checkpoint seen: step %s)", x->id,
			 x->rank, j->attempt, a, b);
	else
		snprintf(msg, sizeof msg, "node %" PRId64 " (rank %" PRId64 ") "
			 "reclaimed by the cloud before it ran the job (%s): no "
			 "work lost, a relaunch", x->id, x->rank,
			 strcmp(x->state, "READY") ? "booting" :
			 "ready, the attempt not started");
	d = json_pack("{s:s,s:I,s:I,s:o,s:o,s:o}", "phase",
		      trains ? "training" : "booting", "node", (json_int_t)x->id,
		      "rank", (json_int_t)x->rank, "attempt", trains ?
		      json_integer(j->attempt) : json_null(), "step",
		      trains && j->step >= 0 ? json_integer(j->step) : json_null(),
		      "ckpt_step", j->ckpt_step >= 0 ? json_integer(j->ckpt_step) :
		      json_null());
	if (!d)
		return sr_err_set(e, -ENOMEM, "preemption: out of memory");
	rc = recon__job_set(db, j->id, "preemptions=preemptions+?1", 1, e);
	if (!rc)
		rc = ledger_event_add(db, &le, e);
	if (!rc)
		rc = ctl_event_append(db, j->id, "preempted", NULL, NULL, x->id, now,
				      ctl__sim_at(c, now), d, msg, e);
	json_decref(d);
	return rc;
}

int recon__node_reclaimed(struct ctl *c, struct store *db, int64_t node,
			  int64_t now, int64_t kill_ns, struct sr_err *e)
{
	struct rnode *x = NULL;
	size_t n = 0;
	struct rjob j;
	int rc = store_node_notice_seen(db, node, now, kill_ns, e);

	if (rc <= 0)
		return rc; /* an error, or noticed (and counted) before */
	rc = recon__nodes_query(c, db, "id=?1", node, &x, &n);
	if (!rc && n == 1)
		rc = recon__job_load(c, db, x->job, &j);
	if (rc) {
		rc = sr_err_set(e, rc < 0 ? rc : -EIO, "node %" PRId64 ": reading "
				"it and its job", node);
	} else if (n == 1 && x->spare) {
		/* a warm spare's notice: it only goes (recon_spare.c), and
		 * costs its job nothing but its bill - no preemption */
		rc = 0;
	} else if (n == 1 && !jobsm_terminal(j.state) &&
		   !recon__node_done(db, &j, x)) {
		/* the node as it is now: noticed */
		x->notice_ns = now;
		rc = recon__preemption_count(c, db, &j, x, now, e);
		rc = rc ? rc : 1;
	}
	free(x);
	return rc;
}

bool recon__node_owes_exit(struct ctl *c, struct store *db,
			   const struct rnode *x)
{
	struct sr_err e = { 0 };
	struct rjob j;

	if (recon__job_load(c, db, x->job, &j) || !node_trains(&j, x))
		return false;
	return store_exit_seen(db, j.id, j.attempt, x->rank, &e) == 0;
}
