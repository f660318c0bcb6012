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
 * loses nothing.  Each count is one ledger_lost row (the dollars: lost
 * time x the attempt's price) and one lost_work event, in the same
 * transaction: `spotrun cost`, /metrics, FOCUS, the dashboard, `status`
 * and `events` all read these, never a figure of their own.
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

const char *recon__step_str(int64_t step, char *buf, size_t n)
{
	if (step < 0)
		snprintf(buf, n, "unknown");
	else
		snprintf(buf, n, "%" PRId64, step);
	return buf;
}

int recon__lost_open(struct ctl *c, struct store *db, const struct rjob *j,
		     const char *cause, int64_t node, sr_micros price,
		     int64_t now, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	(void)c;
	if (j->attempt <= 0)
		return 0; /* nothing ran yet */
	rc = store_prepare(db, "INSERT INTO lost_pending(job_id, attempt, cause,"
			   " node_id, price_micros, started_ns, ended_ns, step)"
			   " VALUES(?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, j->id);
	store_bind_i64(st, 2, j->attempt);
	store_bind_text(st, 3, cause);
	if (node > 0)
		store_bind_i64(st, 4, node);
	else
		store_bind_null(st, 4);
	store_bind_i64(st, 5, price > 0 ? price : 0);
	store_bind_i64(st, 6, j->run_started_ns > 0 && j->run_started_ns <= now ?
		       j->run_started_ns : now);
	store_bind_i64(st, 7, now);
	if (j->step >= 0)
		store_bind_i64(st, 8, j->step);
	else
		store_bind_null(st, 8);
	rc = recon__run(st, e, "lost work pending");
	store_done(st);
	return rc;
}

int recon__lost_seen(struct store *db, int64_t job, int64_t attempt,
		     int64_t step, int64_t at_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	if (step < 0 || attempt <= 0)
		return 0;
	rc = store_prepare(db, "INSERT INTO ckpt_seen(job_id, step, attempt,"
			   " seen_ns) VALUES(?,?,?,?) ON CONFLICT DO NOTHING", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, step);
	store_bind_i64(st, 3, attempt);
	store_bind_i64(st, 4, at_ns);
	rc = recon__run(st, e, "checkpoint seen");
	store_done(st);
	return rc;
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
		if (j->notice_ns && live[i].created_ns >= j->notice_ns &&
		    !live[i].notice_ns) /* placed at the notice: ran nothing */
			continue;
		sum += live[i].price;
		have++;
	}
	if (have < j->num_nodes && each > 0)
		sum += (sr_micros)each * (j->num_nodes - have);
	return sum;
}

/* One preemption of the job, counted once for every surface: the job's
 * counter and a ledger row (kind preemption, at node x's place and price)
 * in the caller's transaction. */
int recon__preemption_count(struct ctl *c, struct store *db, const struct rjob *j,
			    const struct rnode *x, int64_t now, struct sr_err *e)
{
	struct ledger_event le = {
		.kind = LEDGER_EV_PREEMPTION, .job_id = j->id,
		.node_id = x ? x->id : 0, .provider = x ? x->cloud : NULL,
		.region = x ? x->region : NULL, .zone = x ? x->zone : NULL,
		.instance_type = x ? x->itype : NULL, .at_ns = now,
		.unit_price = x ? x->price : 0,
	};
	int rc = recon__job_set(db, j->id, "preemptions=preemptions+?1", 1, e);

	(void)c;
	return rc ? rc : ledger_event_add(db, &le, e);
}

struct pending {
	int64_t attempt, node, started, ended, step;
	sr_micros price;
	char cause[16], cloud[16], region[40], zone[40], itype[48];
};

/* Up to `cap` pending attempts of `job` older than `before` (0 = all),
 * oldest first.  Returns how many, or < 0. */
static int pending_load(struct store *db, int64_t job, int64_t before,
			struct pending *v, int cap, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int n = 0, rc;

	rc = store_prepare(db, "SELECT p.attempt AS attempt, p.cause AS cause,"
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
		struct pending *p = &v[n++];

		p->attempt = store_col_i64(st, "attempt");
		p->node = store_col_i64(st, "node");
		p->price = store_col_i64(st, "price");
		p->started = store_col_i64(st, "started");
		p->ended = store_col_i64(st, "ended");
		p->step = store_col_i64(st, "step");
		snprintf(p->cause, sizeof p->cause, "%s", store_col_text(st, "cause"));
		snprintf(p->cloud, sizeof p->cloud, "%s", store_col_text(st, "cloud"));
		snprintf(p->region, sizeof p->region, "%s", store_col_text(st, "region"));
		snprintf(p->zone, sizeof p->zone, "%s", store_col_text(st, "zone"));
		snprintf(p->itype, sizeof p->itype, "%s", store_col_text(st, "itype"));
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "lost work: pending") : n;
}

/* When `step` was committed and during which attempt: 1, 0 if never
 * reported, < 0. */
static int seen_of(struct store *db, int64_t job, int64_t step, int64_t *at,
		   int64_t *attempt, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(db, "SELECT seen_ns, attempt FROM ckpt_seen"
			       " WHERE job_id=?1 AND step=?2", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, step);
	rc = store_step(st, e);
	if (rc == 1) {
		*at = store_col_i64(st, "seen_ns");
		*attempt = store_col_i64(st, "attempt");
	}
	store_done(st);
	return rc;
}

/* The newest step committed during `attempt`, -1 if none (or < -1). */
static int64_t newest_in(struct store *db, int64_t job, int64_t attempt,
			 struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int64_t v = -1;
	int rc = store_prepare(db, "SELECT coalesce(max(step), -1) AS s FROM"
			       " ckpt_seen WHERE job_id=?1 AND attempt=?2", &st, e);

	if (rc)
		return -2;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, attempt);
	rc = store_step(st, e);
	if (rc == 1)
		v = store_col_i64(st, "s");
	store_done(st);
	return rc < 0 ? -2 : v;
}

/* A restore names the durable checkpoint: a step reported as checkpointed
 * before (a snapshot not yet durable when the node went) is not work
 * done. */
static int set_restored(struct store *db, int64_t job, int64_t restored,
			struct sr_err *e)
{
	return recon__job_set(db, job, "ckpt_step=?1", restored, e);
}

/* Count one pending attempt; r = what its successor resumed from (-1:
 * not said). */
static int settle_one(struct ctl *c, struct store *db, int64_t job,
		      const struct pending *p, int64_t r, bool said, int64_t now,
		      struct sr_err *e)
{
	int64_t t0 = p->started, at = 0, in = 0, lost_ns;
	struct store_stmt *st = NULL;
	char msg[320], dur[32];
	const char *basis;
	json_t *d;
	int rc;

	if (!said) {
		r = newest_in(db, job, p->attempt, e);
		if (r < -1)
			return sr_err_set(e, -EIO, "lost work: cannot read checkpoints");
	}
	rc = r >= 0 ? seen_of(db, job, r, &at, &in, e) : 0;
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
	lost_ns = (int64_t)(fmax(0.0, (double)(p->ended - t0)) *
			    c->cfg.time_scale);
	{
		struct ledger_lost l = {
			.job_id = job, .attempt = p->attempt, .cause = p->cause,
			.node_id = p->node, .provider = p->cloud[0] ? p->cloud : NULL,
			.region = p->region, .zone = p->zone, .instance_type = p->itype,
			.at_ns = now, .value_ns = lost_ns, .unit_price = p->price,
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
	rc = store_prepare(db, "DELETE FROM lost_pending WHERE job_id=?1 AND"
			   " attempt=?2", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	store_bind_i64(st, 2, p->attempt);
	rc = recon__run(st, e, "lost work settled");
	store_done(st);
	return rc;
}

int recon__lost_settle(struct ctl *c, struct store *db, int64_t job,
		       int64_t attempt, int64_t restored, bool first,
		       int64_t now, struct sr_err *e)
{
	struct pending v[16];
	int n, rc;

	if (first && restored >= 0) {
		rc = set_restored(db, job, restored, e);
		if (rc)
			return rc;
	}
	n = pending_load(db, job, attempt > 0 ? attempt : 0, v,
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
