/*
 * recon_lost.c - the work a preemption lost, counted from the checkpoint
 * the next attempt actually restores.
 *
 * When a job leaves its nodes (a preemption, or a move), the step the
 * daemon last saw and its last known checkpoint may both be stale: the
 * daemon or the agent may have been down while the workload stepped and
 * checkpointed.  So nothing is counted then.  The job records what it
 * knows (jobs.lost_*: the step it last saw, the attempt, the node and
 * price of a preemption), and the count is made at the first progress
 * report of a later attempt - whose checkpoint step is the one restored -
 * or, if the job ends first, from the last checkpoint it reported:
 *
 *   lost = max(0, step seen before - restored step) / total steps x work
 *
 * A preemption's lost work goes to the ledger (ledger_event, kind
 * preemption, at the preempted node's place and price); a move's is only
 * an event.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctl/jobsm.h"
#include "ctl/recon_int.h"
#include "finops/ledger.h"
#include "store/store_ctl.h"

int recon__lost_open(struct store *db, const struct rjob *j, int64_t node,
		     sr_micros price, struct sr_err *e)
{
	return store_lost_open(db, j->id, j->step >= 0 ? j->step : 0, j->attempt,
			       node, price, e);
}

int recon__lost_settle(struct ctl *c, struct store *db, int64_t job,
		       int64_t attempt, int64_t restored, bool first,
		       int64_t now, struct sr_err *e)
{
	struct store_lost p;
	double lost_s = 0;
	json_t *d;
	char msg[200];
	int rc;

	/* A restore names the durable checkpoint: a step reported as
	 * checkpointed before (a snapshot not yet durable when the node
	 * went) is not work done. */
	if (first && restored >= 0) {
		rc = store_job_set_ckpt_step(db, job, restored, e);
		if (rc)
			return rc;
	}
	rc = store_lost_load(db, job, &p, e);
	if (rc <= 0)
		return rc;
	if (attempt >= 0 && attempt <= p.attempt)
		return 0; /* still the attempt that was left */
	if (restored < 0)
		restored = 0;
	if (p.total_steps > 0 && p.from_step > restored)
		lost_s = (double)(p.from_step - restored) / (double)p.total_steps *
			 p.work_s;
	if (p.price_micros > 0) {
		struct ledger_event le = {
			.kind = LEDGER_EV_PREEMPTION, .job_id = job,
			.node_id = p.node,
			.provider = p.cloud[0] ? p.cloud : "unknown",
			.region = p.region[0] ? p.region : NULL,
			.zone = p.zone[0] ? p.zone : NULL,
			.instance_type = p.itype[0] ? p.itype : NULL,
			.at_ns = now, .value_ns = (int64_t)(lost_s * 1e9),
			.unit_price = p.price_micros,
		};

		rc = ledger_event_add(db, &le, e);
		if (rc)
			return rc;
	}
	d = json_pack("{s:I,s:I,s:f}", "step_seen", (json_int_t)p.from_step,
		      "restored_step", (json_int_t)restored, "lost_work_s", lost_s);
	snprintf(msg, sizeof msg, "resumed from the checkpoint at step %" PRId64
		 ": %" PRId64 " step(s), %.0f s of cloud work lost", restored,
		 p.from_step > restored ? p.from_step - restored : 0, lost_s);
	rc = ctl_event_append(db, job, "lost_work", NULL, NULL, p.node, now,
			   ctl__sim_at(c, now), d, msg, e);
	json_decref(d);
	return rc ? rc : store_lost_clear(db, job, e);
}
