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

int recon__lost_open(struct store *db, const struct rjob *j, int64_t node,
		     sr_micros price, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(db, "UPDATE jobs SET lost_from_step=?1,"
				" lost_attempt=?2, lost_node=?3, lost_price=?4"
				" WHERE id=?5", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, j->step >= 0 ? j->step : 0);
	store_bind_i64(st, 2, j->attempt);
	if (node > 0)
		store_bind_i64(st, 3, node);
	store_bind_i64(st, 4, price);
	store_bind_i64(st, 5, j->id);
	rc = recon__run(st, e, "lost work pending");
	store_done(st);
	return rc;
}

struct pending {
	int64_t from, attempt, node, total;
	sr_micros price;
	double work_s;
	char cloud[16], region[40], zone[40], itype[48];
};

static int pending_load(struct store *db, int64_t job, struct pending *p)
{
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	int found;

	memset(p, 0, sizeof *p);
	if (store_prepare(db, "SELECT j.lost_from_step AS lost_from_step,"
			  " j.lost_attempt AS lost_attempt,"
			  " coalesce(j.lost_node, 0) AS lost_node,"
			  " j.lost_price AS lost_price,"
			  " coalesce(j.total_steps, -1) AS total_steps,"
			  " CASE WHEN j.est_work_s > 0 THEN j.est_work_s ELSE"
			  " j.work_s END AS work_s, coalesce(n.cloud, '') AS cloud,"
			  " coalesce(n.region, '') AS region,"
			  " coalesce(n.zone, '') AS zone,"
			  " coalesce(n.instance_type, '') AS itype FROM jobs j"
			  " LEFT JOIN nodes n ON n.id=j.lost_node WHERE j.id=? AND"
			  " j.lost_from_step IS NOT NULL", &st, &e))
		return -1;
	store_bind_i64(st, 1, job);
	found = store_step(st, &e);
	if (found == 1) {
		p->from = store_col_i64(st, "lost_from_step");
		p->attempt = store_col_i64(st, "lost_attempt");
		p->node = store_col_i64(st, "lost_node");
		p->price = store_col_i64(st, "lost_price");
		p->total = store_col_i64(st, "total_steps");
		p->work_s = store_col_f64(st, "work_s");
		snprintf(p->cloud, sizeof p->cloud, "%s", store_col_text(st, "cloud"));
		snprintf(p->region, sizeof p->region, "%s", store_col_text(st, "region"));
		snprintf(p->zone, sizeof p->zone, "%s", store_col_text(st, "zone"));
		snprintf(p->itype, sizeof p->itype, "%s", store_col_text(st, "itype"));
	}
	store_done(st);
	return found;
}

/* A restore names the durable checkpoint: a step reported as checkpointed
 * before (a snapshot not yet durable when the node went) is not work
 * done. */
static int set_restored(struct store *db, int64_t job, int64_t restored,
			struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(db, "UPDATE jobs SET ckpt_step=?1 WHERE id=?2",
				&st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, restored);
	store_bind_i64(st, 2, job);
	rc = recon__run(st, e, "restored checkpoint");
	store_done(st);
	return rc;
}

int recon__lost_settle(struct ctl *c, struct store *db, int64_t job,
		       int64_t attempt, int64_t restored, bool first,
		       int64_t now, struct sr_err *e)
{
	struct pending p;
	double lost_s = 0;
	json_t *d;
	char msg[200];
	int rc;

	if (first && restored >= 0) {
		rc = set_restored(db, job, restored, e);
		if (rc)
			return rc;
	}
	rc = pending_load(db, job, &p);
	if (rc <= 0)
		return rc < 0 ? sr_err_set(e, -EIO, "lost work: cannot read job") : 0;
	if (attempt >= 0 && attempt <= p.attempt)
		return 0; /* still the attempt that was left */
	if (restored < 0)
		restored = 0;
	if (p.total > 0 && p.from > restored)
		lost_s = (double)(p.from - restored) / (double)p.total * p.work_s;
	if (p.price > 0) {
		struct ledger_event le = {
			.kind = LEDGER_EV_PREEMPTION, .job_id = job,
			.node_id = p.node,
			.provider = p.cloud[0] ? p.cloud : "unknown",
			.region = p.region[0] ? p.region : NULL,
			.zone = p.zone[0] ? p.zone : NULL,
			.instance_type = p.itype[0] ? p.itype : NULL,
			.at_ns = now, .value_ns = (int64_t)(lost_s * 1e9),
			.unit_price = p.price,
		};

		rc = ledger_event_add(db, &le, e);
		if (rc)
			return rc;
	}
	d = json_pack("{s:I,s:I,s:f}", "step_seen", (json_int_t)p.from,
		      "restored_step", (json_int_t)restored, "lost_work_s", lost_s);
	snprintf(msg, sizeof msg, "resumed from the checkpoint at step %" PRId64
		 ": %" PRId64 " step(s), %.0f s of cloud work lost", restored,
		 p.from > restored ? p.from - restored : 0, lost_s);
	rc = ctl_event_append(db, job, "lost_work", NULL, NULL, p.node, now,
			   ctl__sim_at(c, now), d, msg, e);
	json_decref(d);
	if (!rc) {
		struct store_stmt *st = NULL;

		rc = store_prepare(db, "UPDATE jobs SET lost_from_step=NULL,"
				    " lost_node=NULL, lost_price=0 WHERE id=?", &st, e);
		if (!rc) {
			store_bind_i64(st, 1, job);
			rc = recon__run(st, e, "lost work settled");
			store_done(st);
		}
	}
	return rc;
}
