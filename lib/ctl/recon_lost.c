/*
 * recon_lost.c - the work an attempt lost, counted as it was: the cloud
 * time the attempt ran past the point the next attempt resumed from.
 *
 * When an attempt ends before its work is safe - a preemption, a lost
 * node, a crash, a move - the job records it in lost_pending: its start,
 * its end (when the daemon saw it end: the notice, the loss, the crash),
 * the price of its nodes together (every rank of a gang redoes the work).
 * Nothing is counted then: what survived is known only when a later
 * attempt says which checkpoint it restored (its first progress report;
 * libspotckpt reports a fresh start as step 0).  ckpt_seen holds, for
 * every committed step of the job, when it was committed (as the node's
 * agent saw it) and during which attempt.  Then, oldest first, for each
 * pending attempt i:
 *
 *   r    the step the next attempt restored (the newest pending attempt,
 *        when a later one reports); for an attempt whose successor never
 *        said (it ended first, or the job ended): the newest step
 *        committed during i - the best case - or none
 *   t0   when r was committed, if that was during attempt i; else i's
 *        start: its successor resumed from before it, so all of it is lost
 *   lost_i = max(0, end_i - t0) x the time scale, in cloud seconds
 *
 * So six attempts that each restart from step 0 lose all of each
 * attempt's time, and a final checkpoint committed after the notice
 * loses nothing.  Nor does an attempt whose every rank then completed
 * (exit 0: the job SUCCEEDED on it, a notice or a move that stopped it
 * came as its work was done): its pending entry is dropped uncounted
 * (recon__lost_none) - no ledger_lost row, no lost_work event.  Each
 * count is one ledger_lost row (the dollars: lost time x the attempt's
 * price) and one lost_work event, in the same transaction: `spotrun
 * cost`, /metrics, FOCUS, the dashboard, `status` and `events` all read
 * these, never a figure of their own.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"
#include "ctl/jobsm.h"
#include "ctl/recon_int.h"
#include "finops/ledger.h"
#include "store/store_ctl.h"

const char *recon__step_str(int64_t step, char *buf, size_t n)
{
	if (step < 0)
		snprintf(buf, n, "unknown");
	else
		snprintf(buf, n, "%" PRId64, step);
	return buf;
}

const char *recon__where(const char *cloud, const char *region,
			 const char *zone, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s%s%s", cloud ? cloud : "?", region ? region : "?",
		 zone && zone[0] ? "/" : "", zone && zone[0] ? zone : "");
	return buf;
}

int recon__lost_open(struct ctl *c, struct store *db, const struct rjob *j,
		     const char *cause, int64_t node, sr_micros price,
		     int64_t now, struct sr_err *e)
{
	struct store_lost p = {
		.attempt = j->attempt, .node = node, .price_micros = price,
		.started_ns = j->run_started_ns > 0 && j->run_started_ns <= now ?
			      j->run_started_ns : now,
		.ended_ns = now, .step = j->step,
	};

	(void)c;
	if (j->attempt <= 0)
		return 0; /* nothing ran yet */
	snprintf(p.cause, sizeof p.cause, "%s", cause);
	return store_lost_open(db, j->id, &p, e);
}

int recon__lost_none(struct store *db, int64_t job, int64_t attempt,
		     struct sr_err *e)
{
	if (attempt <= 0)
		return 0;
	return store_lost_clear(db, job, attempt, e);
}

int recon__lost_seen(struct store *db, int64_t job, int64_t attempt,
		     int64_t step, int64_t at_ns, struct sr_err *e)
{
	if (step < 0 || attempt <= 0)
		return 0;
	return store_ckpt_seen_add(db, job, attempt, step, at_ns, e);
}

/* The price of the attempt's nodes together, $/h: the live ones, and a
 * rank whose node is gone at the price of the job's placement. */
sr_micros recon__gang_price(const struct rjob *j, const struct rnode *live,
			    size_t n)
{
	sr_micros sum = 0;
	int have = 0;
	json_t *pl = json_loads(j->placement, 0, NULL);
	json_int_t each = json_integer_value(json_object_get(pl,
						"price_micros_per_hour"));

	json_decref(pl);
	for (size_t i = 0; i < n; i++) {
		if (recon__placed_at_notice(j, &live[i]) &&
		    !live[i].notice_ns) /* placed at the notice: ran nothing */
			continue;
		sum += live[i].price;
		have++;
	}
	if (have < j->num_nodes && each > 0)
		sum += (sr_micros)each * (j->num_nodes - have);
	return sum;
}

/* Count one pending attempt; r = what its successor resumed from (-1:
 * not said). */
static int settle_one(struct ctl *c, struct store *db, int64_t job,
		      const struct store_lost *p, int64_t r, bool said, int64_t now,
		      struct sr_err *e)
{
	int64_t t0 = p->started_ns, at = 0, in = 0, lost_ns;
	char msg[320], dur[32];
	const char *basis;
	json_t *d;
	int rc;

	if (!said) {
		rc = store_ckpt_newest_in(db, job, p->attempt, &r, e);
		if (rc < 0)
			return rc;
		if (rc == 0)
			r = -1;
	}
	rc = r >= 0 ? store_ckpt_seen_get(db, job, r, &at, &in, e) : 0;
	if (rc < 0)
		return rc;
	if (rc == 1 && in == p->attempt) {
		t0 = at;
		basis = said ? "restored a checkpoint this attempt committed" :
			"its successor did not say what it restored: counted from "
			"the newest checkpoint it committed";
	} else {
		basis = !said && r < 0 ? "it committed no checkpoint" :
			"the next attempt resumed from before it: all of it";
	}
	lost_ns = (int64_t)(fmax(0.0, (double)(p->ended_ns - t0)) *
			    c->cfg.time_scale);
	{
		struct ledger_lost l = {
			.job_id = job, .attempt = p->attempt, .cause = p->cause,
			.node_id = p->node, .provider = p->cloud[0] ? p->cloud : NULL,
			.region = p->region, .zone = p->zone, .instance_type = p->itype,
			.at_ns = now, .value_ns = lost_ns, .unit_price = p->price_micros,
			.restored_step = said ? r : -1,
		};
		sr_micros cost = 0;

		rc = ledger_lost_add(db, &l, &cost, e);
		if (rc)
			return rc;
		d = json_pack("{s:I,s:s,s:o,s:f,s:I,s:s}", "attempt",
			      (json_int_t)p->attempt, "cause", p->cause,
			      "restored_step", said && r >= 0 ? json_integer(r) :
			      json_null(), "lost_work_s", (double)lost_ns / 1e9,
			      "lost_work_micros", (json_int_t)cost, "basis", basis);
	}
	sr_dur_format((lost_ns + SR_NS_PER_SEC / 2) / SR_NS_PER_SEC * SR_NS_PER_SEC,
		      dur, sizeof dur); /* to the second */
	if (said)
		snprintf(msg, sizeof msg, "attempt %" PRId64 " (%s): the next "
			 "attempt resumed from step %" PRId64 ": %s of cloud work "
			 "lost (%s)", p->attempt, p->cause, r, dur, basis);
	else
		snprintf(msg, sizeof msg, "attempt %" PRId64 " (%s): %s of cloud "
			 "work lost (%s)", p->attempt, p->cause, dur, basis);
	rc = ctl_event_append(db, job, "lost_work", NULL, NULL, p->node, now,
			      ctl__sim_at(c, now), d, msg, e);
	json_decref(d);
	if (rc)
		return rc;
	return store_lost_clear(db, job, p->attempt, e);
}

int recon__lost_settle(struct ctl *c, struct store *db, int64_t job,
		       int64_t attempt, int64_t restored, bool first,
		       int64_t now, struct sr_err *e)
{
	struct store_lost v[16];
	int n, rc;

	/* A restore names the durable checkpoint: a step reported as
	 * checkpointed before (a snapshot not yet durable when the node
	 * went) is not work done. */
	if (first && restored >= 0) {
		rc = store_job_set_ckpt_step(db, job, restored, e);
		if (rc)
			return rc;
	}
	n = store_lost_pending(db, job, attempt > 0 ? attempt : 0, v,
			       (int)(sizeof v / sizeof v[0]), e);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		/* what the reporting attempt restored is its predecessor's */
		bool said = attempt > 0 && restored >= 0 && i == n - 1;

		rc = settle_one(c, db, job, &v[i], said ? restored : -1, said, now, e);
		if (rc)
			return rc;
	}
	return 0;
}
