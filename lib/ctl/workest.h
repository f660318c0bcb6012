/*
 * workest.h - the live loop's estimate of a job's total work.
 *
 * The job file's declared `work` is the basis.  The workload's measured
 * pace (wall time per step, from rank 0's progress reports) refines it,
 * but only through a bounded estimator, so that CPU noise, a stall or a
 * restore cannot swing the plan (docs/control-plane.md):
 *
 *   samples   one per window of at least `min_steps` steps within one
 *             attempt.  A new attempt, a step that goes backwards, or a
 *             gap without progress longer than STALL_X paces re-anchors
 *             the window: start-up, restore and stalls are never timed;
 *   robust    each sample is clamped to [pace/2, 2 pace] before it is
 *             smoothed (an EWMA in log space, weight ALPHA);
 *   confident the estimate moves from the declared work toward the
 *             measured one (pace x total steps) with a weight
 *             c = steps / (steps + k), k = max(10, total_steps / 10), in
 *             log space;
 *   bounded   per policy interval the estimate changes by at most a factor
 *             RATE (and pro rata for shorter gaps between samples).
 *
 * The pure part (workest_sample) is separate from the database glue so it
 * can be tested with any clock and any pace.
 */
#ifndef SR_CTL_WORKEST_H
#define SR_CTL_WORKEST_H

#include <stdint.h>

#include "common/err.h"
#include "store/store.h"

#define WORKEST_ALPHA 0.25  /* EWMA weight of a new pace sample */
#define WORKEST_RATE 1.5    /* most the estimate moves per interval (x or /) */
#define WORKEST_STALL_X 3.0 /* a gap of this many paces without a step: pause */

struct workest {
	double work_s;      /* current estimate, cloud s; 0 = declared work */
	double pace_ns;     /* smoothed wall ns per step; 0 = none yet */
	int64_t steps;      /* steps observed in sample windows */
	int64_t attempt;    /* attempt of the window's anchor */
	int64_t step0;      /* window anchor: step and wall time */
	int64_t t0_ns;
	int64_t last_step;  /* last report: step and wall time */
	int64_t last_ns;
	int64_t upd_ns;     /* wall time of the last estimate change; 0 none */
};

struct workest_job {
	double declared_s;  /* the job file's work, cloud s */
	int64_t total_steps;
	double scale;       /* cloud s per real s */
	int64_t interval_ns;/* the policy interval, real ns */
};

/* Feed one progress report (attempt, step at wall time now_ns).
 * Returns 1 if the estimate changed. */
int workest_sample(struct workest *w, const struct workest_job *j,
		   int64_t attempt, int64_t step, int64_t now_ns);

/* The estimate of the total work, cloud s (declared work until there is a
 * measured one). */
double workest_total(const struct workest *w, const struct workest_job *j);

/* The restart overhead the policy plans with: the larger of the plan's
 * guess and what restarts have measured - a new node's request to its
 * workload's first step - rising at once to a slower sample and
 * decaying by WORKEST_RESTART_DECAY toward faster ones.  Returns the new
 * measured estimate (cloud s) from the old one and one sample. */
#define WORKEST_RESTART_DECAY 0.2
double workest_restart(double est_s, double sample_s);

/* Database glue: feed rank 0's report of `step` in `attempt` for job
 * `job` (inside the caller's transaction).  Returns 1 when this is the
 * first report of a new attempt, 0 otherwise, < 0 on error.  The first report of an
 * attempt on a node that ran no earlier attempt also samples the restart
 * overhead (jobs.est_restart_s). */
int workest_report(struct store *db, int64_t job, int64_t attempt,
		   int64_t step, int64_t now_ns, double scale,
		   int64_t interval_ns, struct sr_err *e);

#endif
