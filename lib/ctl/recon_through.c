/*
 * recon_through.c - training through a notice's lead (issue 33, arm 5;
 * docs/distributed.md "Training through the notice").
 *
 * A job with `spotrun: {train_through_notice: true}` does not stop its
 * gang at a notice.  While it is RUNNING with a noticed node, the
 * reconciler asks for the noticed rank's replacement at once (a warm
 * spare first: recon__place_missing) and keeps the job RUNNING - every
 * rank, the noticed one too, gets `run` directives (routes_nodes.c),
 * and the noticed node's agent holds the notice back from its workload
 * (src/agent/agent.c) - until one of:
 *
 *   - every noticed rank's replacement is READY (and set up, when the
 *     job has a setup): the switch then costs only the final checkpoint
 *     and the restore;
 *   - the last safe moment: the noticed node's deadline less a quarter
 *     of its lead (THROUGH_MARGIN), time left for the final checkpoint
 *     and the stop;
 *
 * (or at once when a noticed node is gone before that: the cloud took it
 * early, and its rank's replacement has run nothing of the attempt),
 * then the job leaves RUNNING as at any notice (reconcile.c step_running:
 * NOTICE, every rank's final checkpoint, the next attempt on the kept
 * nodes and the replacement).  "Training through" is a phase of
 * RUNNING, not a state of its own (jobs.state keeps its CHECK list):
 * its start and end are the job's events `train_through` and
 * `train_through_end` (with why).  A notice without a deadline (kill
 * unknown) is not trained through.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/jobsm.h"
#include "ctl/recon_int.h"

/* The share of a notice's lead kept for the final checkpoint and stop. */
#define THROUGH_MARGIN_DIV 4

/* The replacement of noticed node x among live: the node of x's rank
 * without a notice (NULL: none yet). */
static const struct rnode *replacement_of(const struct rnode *x,
					  const struct rnode *live, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (live[i].id != x->id && live[i].rank == x->rank &&
		    !live[i].notice_ns)
			return &live[i];
	}
	return NULL;
}

static bool ready_for_run(const struct rjob *j, const struct rnode *r)
{
	return r && strcmp(r->state, "READY") == 0 &&
	       (!j->plan.has_setup || r->setup_rc == 0);
}

static void through_event(struct ctl *c, struct store *db, const struct rjob *j,
			  const struct rnode *x, const char *type, json_t *d,
			  const char *msg)
{
	struct sr_err e = { 0 };
	int64_t now = ctl__now(c);
	int rc = store_begin(db, &e);

	if (!rc)
		rc = ctl_event_append(db, j->id, type, NULL, NULL, x->id, now,
				      ctl__sim_at(c, now), d, msg, &e);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_warn("recon", "cannot record the event", "job=%" PRId64
			" type=%s err=\"%s\"", j->id, type, sr_err_str(&e, rc));
}

/* A rank of the attempt whose node is gone while its replacement waits:
 * every live node of some rank joined after the attempt started (a
 * noticed node the cloud took before the last safe moment).  A rank that
 * completed the attempt is not gone, whatever became of its node. */
static bool rank_gone(struct store *db, const struct rjob *j,
		      const struct rnode *live, size_t n)
{
	for (int r = 0; r < j->num_nodes; r++) {
		bool have = false;

		for (size_t i = 0; i < n && !have; i++)
			have = live[i].rank == r &&
			       live[i].created_ns <= j->run_started_ns &&
			       live[i].adopted_ns <= j->run_started_ns;
		if (!have && !recon__rank_done(db, j, r))
			return true;
	}
	return false;
}

int recon__train_through(struct ctl *c, struct store *db, struct rjob *j,
			 const struct rnode *live, size_t n)
{
	const struct rnode *x = NULL;
	int64_t now = ctl__now(c), safe = INT64_MAX;
	bool all_ready = true, placed_all = true;
	char msg[240];
	json_t *d;

	if (!j->plan.train_through)
		return 0;
	if (j->run_started_ns && rank_gone(db, j, live, n))
		return 2;
	for (size_t i = 0; i < n; i++) {
		int64_t s;

		if (!live[i].notice_ns)
			continue;
		if (!live[i].kill_ns || live[i].kill_ns <= live[i].notice_ns)
			return 0; /* no deadline to train up to */
		s = live[i].kill_ns - (live[i].kill_ns - live[i].notice_ns) /
				      THROUGH_MARGIN_DIV;
		if (s < safe) {
			safe = s;
			x = &live[i];
		}
		placed_all &= replacement_of(&live[i], live, n) != NULL;
		all_ready &= ready_for_run(j, replacement_of(&live[i], live, n));
	}
	if (!x)
		return 0;
	if (!placed_all && now < safe) {
		/* ask for the replacements (a policy that waits is asked
		 * again next pass; RECOVERING places what is still missing) */
		char t[40];

		/* the cloud is reclaiming the noticed pools now, as at any
		 * notice (reconcile.c replace_noticed) */
		for (size_t i = 0; i < n; i++) {
			if (live[i].notice_ns && live[i].spot)
				ctl__pool_mark(c, live[i].pool);
		}
		if (recon__place_missing(c, db, j, live, n) != 1)
			return 1;
		sr_time_format_rfc3339(safe, 3, t, sizeof t);
		d = json_pack("{s:I,s:s}", "node_id", (json_int_t)x->id,
			      "last_safe", t);
		snprintf(msg, sizeof msg, "training through the notice of node %"
			 PRId64 " (rank %" PRId64 "): the gang stops when its "
			 "replacement is ready, at the latest at %s", x->id,
			 x->rank, t);
		through_event(c, db, j, x, "train_through", d, msg);
		json_decref(d);
		return 1;
	}
	if (!all_ready && now < safe)
		return 1;
	d = json_pack("{s:s,s:f}", "why", all_ready ? "replacement_ready" :
		      "last_safe_moment", "trained_s",
		      (double)(now - x->notice_ns) / 1e9 * c->cfg.time_scale);
	snprintf(msg, sizeof msg, "trained %.1f s through the notice: %s",
		 (double)(now - x->notice_ns) / 1e9,
		 all_ready ? "the replacement is ready" :
		 "the last safe moment before the deadline");
	through_event(c, db, j, x, "train_through_end", d, msg);
	json_decref(d);
	return 0;
}

void recon__through_notice_at(struct ctl *c, struct store *db,
			      const struct rjob *j)
{
	struct rnode *v = NULL;
	struct sr_err e = { 0 };
	int64_t first = 0;
	size_t k = 0;
	int rc;

	if (!j->plan.train_through || !j->run_started_ns ||
	    recon__nodes_query(c, db, "job_id=?1 AND notice_ns IS NOT NULL AND "
			       RECON_GANG_SQL, j->id, &v, &k))
		return;
	for (size_t i = 0; i < k; i++) {
		if (v[i].notice_ns >= j->run_started_ns &&
		    (!first || v[i].notice_ns < first))
			first = v[i].notice_ns;
	}
	free(v);
	if (!first)
		return;
	rc = store_begin(db, &e);
	if (!rc)
		rc = recon__job_set(db, j->id, "notice_ns=?1", first, &e);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_warn("recon", "cannot set the notice time", "job=%" PRId64
			" err=\"%s\"", j->id, sr_err_str(&e, rc));
}
