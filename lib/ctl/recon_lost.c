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

#include "ctl/db.h"
#include "ctl/jobsm.h"
#include "ctl/recon_int.h"
#include "finops/ledger.h"

int recon__lost_open(sqlite3 *db, const struct rjob *j, int64_t node,
		     sr_micros price, struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc = ctl_db_prepare(db, "UPDATE jobs SET lost_from_step=?1,"
				" lost_attempt=?2, lost_node=?3, lost_price=?4"
				" WHERE id=?5", &st, e);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, j->step >= 0 ? j->step : 0);
	sqlite3_bind_int64(st, 2, j->attempt);
	if (node > 0)
		sqlite3_bind_int64(st, 3, node);
	sqlite3_bind_int64(st, 4, price);
	sqlite3_bind_int64(st, 5, j->id);
	rc = ctl_db_step_done(db, st, e, "lost work pending");
	sqlite3_finalize(st);
	return rc;
}

struct pending {
	int64_t from, attempt, node, total;
	sr_micros price;
	double work_s;
	char cloud[16], region[40], zone[40], itype[48];
};

static int pending_load(sqlite3 *db, int64_t job, struct pending *p)
{
	sqlite3_stmt *st = NULL;
	int found = 0;

	memset(p, 0, sizeof *p);
	if (sqlite3_prepare_v2(db, "SELECT j.lost_from_step, j.lost_attempt,"
			       " coalesce(j.lost_node, 0), j.lost_price,"
			       " coalesce(j.total_steps, -1),"
			       " CASE WHEN j.est_work_s > 0 THEN j.est_work_s ELSE"
			       " j.work_s END, coalesce(n.cloud, ''),"
			       " coalesce(n.region, ''), coalesce(n.zone, ''),"
			       " coalesce(n.instance_type, '') FROM jobs j LEFT JOIN"
			       " nodes n ON n.id=j.lost_node WHERE j.id=? AND"
			       " j.lost_from_step IS NOT NULL", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, job);
	if (sqlite3_step(st) == SQLITE_ROW) {
		p->from = sqlite3_column_int64(st, 0);
		p->attempt = sqlite3_column_int64(st, 1);
		p->node = sqlite3_column_int64(st, 2);
		p->price = sqlite3_column_int64(st, 3);
		p->total = sqlite3_column_int64(st, 4);
		p->work_s = sqlite3_column_double(st, 5);
		snprintf(p->cloud, sizeof p->cloud, "%s", ctl_db_text(st, 6));
		snprintf(p->region, sizeof p->region, "%s", ctl_db_text(st, 7));
		snprintf(p->zone, sizeof p->zone, "%s", ctl_db_text(st, 8));
		snprintf(p->itype, sizeof p->itype, "%s", ctl_db_text(st, 9));
		found = 1;
	}
	sqlite3_finalize(st);
	return found;
}

/* A restore names the durable checkpoint: a step reported as checkpointed
 * before (a snapshot not yet durable when the node went) is not work
 * done. */
static int set_restored(sqlite3 *db, int64_t job, int64_t restored,
			struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc = ctl_db_prepare(db, "UPDATE jobs SET ckpt_step=?1 WHERE id=?2",
				&st, e);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, restored);
	sqlite3_bind_int64(st, 2, job);
	rc = ctl_db_step_done(db, st, e, "restored checkpoint");
	sqlite3_finalize(st);
	return rc;
}

int recon__lost_settle(struct ctl *c, sqlite3 *db, int64_t job,
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

		rc = ledger_event_append(db, &le, e);
		if (rc)
			return rc;
	}
	d = json_pack("{s:I,s:I,s:f}", "step_seen", (json_int_t)p.from,
		      "restored_step", (json_int_t)restored, "lost_work_s", lost_s);
	snprintf(msg, sizeof msg, "resumed from the checkpoint at step %" PRId64
		 ": %" PRId64 " step(s), %.0f s of cloud work lost", restored,
		 p.from > restored ? p.from - restored : 0, lost_s);
	rc = ctl_event_add(db, job, "lost_work", NULL, NULL, p.node, now,
			   ctl__sim_at(c, now), d, msg, e);
	json_decref(d);
	if (!rc) {
		sqlite3_stmt *st = NULL;

		rc = ctl_db_prepare(db, "UPDATE jobs SET lost_from_step=NULL,"
				    " lost_node=NULL, lost_price=0 WHERE id=?", &st, e);
		if (!rc) {
			sqlite3_bind_int64(st, 1, job);
			rc = ctl_db_step_done(db, st, e, "lost work settled");
			sqlite3_finalize(st);
		}
	}
	return rc;
}
