/*
 * workest.c - the bounded work estimator (see workest.h).
 */
#include "ctl/workest.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "store/store_ctl.h"


double workest_total(const struct workest *w, const struct workest_job *j)
{
	return w->work_s > 0 ? w->work_s : j->declared_s;
}

static int64_t min_window(const struct workest_job *j)
{
	/* A reported step is known to one step at each end of the window:
	 * 5 steps bound that error to 20 % before clamping and smoothing. */
	int64_t m = j->total_steps / 100;

	return m > 5 ? m : 5;
}

static void anchor(struct workest *w, int64_t attempt, int64_t step,
		   int64_t now_ns)
{
	w->attempt = attempt;
	w->step0 = w->last_step = step;
	w->t0_ns = w->last_ns = now_ns;
}

int workest_sample(struct workest *w, const struct workest_job *j,
		   int64_t attempt, int64_t step, int64_t now_ns)
{
	double sample, measured, target, cur, c, k, f, lo, hi, est;
	int64_t ds, dt;

	if (j->total_steps <= 0 || step < 0 || j->scale <= 0)
		return 0;
	if (attempt != w->attempt || step < w->last_step || w->t0_ns == 0) {
		anchor(w, attempt, step, now_ns); /* start-up or restore */
		return 0;
	}
	if (step == w->last_step) {
		/* No progress: a gap much longer than the pace is a pause
		 * (checkpoint stall, suspended workload); keep it out of the
		 * window by moving the anchor forward over it. */
		if (w->pace_ns > 0 &&
		    (double)(now_ns - w->last_ns) > WORKEST_STALL_X * w->pace_ns) {
			int64_t skip = now_ns - w->last_ns - (int64_t)w->pace_ns;

			w->t0_ns += skip;
			w->last_ns += skip;
		}
		return 0;
	}
	w->last_step = step;
	w->last_ns = now_ns;
	ds = step - w->step0;
	dt = now_ns - w->t0_ns;
	if (ds < min_window(j) || dt <= 0)
		return 0;
	sample = (double)dt / (double)ds;
	anchor(w, attempt, step, now_ns);
	if (w->pace_ns > 0) {
		sample = fmin(fmax(sample, w->pace_ns / 2), w->pace_ns * 2);
		w->pace_ns = exp((1 - WORKEST_ALPHA) * log(w->pace_ns) +
				 WORKEST_ALPHA * log(sample));
	} else {
		w->pace_ns = sample;
	}
	w->steps += ds;
	measured = w->pace_ns / 1e9 * j->scale * (double)j->total_steps;
	k = fmax(10.0, (double)j->total_steps / 10.0);
	c = (double)w->steps / ((double)w->steps + k);
	if (j->declared_s > 0)
		target = exp((1 - c) * log(j->declared_s) + c * log(measured));
	else
		target = measured;
	cur = workest_total(w, j);
	if (cur <= 0) {
		w->work_s = target;
		w->upd_ns = now_ns;
		return 1;
	}
	/* At most RATE per interval, pro rata for a shorter time since the
	 * last change (the first change counts its whole window). */
	f = (double)(now_ns - (w->upd_ns ? w->upd_ns : now_ns - dt)) /
	    (double)(j->interval_ns > 0 ? j->interval_ns : 1);
	f = pow(WORKEST_RATE, fmin(1.0, fmax(0.0, f)));
	lo = cur / f;
	hi = cur * f;
	est = fmin(fmax(target, lo), hi);
	w->upd_ns = now_ns;
	if (est == w->work_s)
		return 0;
	w->work_s = est;
	return 1;
}

double workest_restart(double est_s, double sample_s)
{
	if (sample_s <= 0)
		return est_s;
	if (sample_s >= est_s)
		return sample_s;
	return (1 - WORKEST_RESTART_DECAY) * est_s + WORKEST_RESTART_DECAY * sample_s;
}

/* ---- database glue -------------------------------------------------------- */

/* First report of a new attempt: how long the restart took, from rank
 * 0's node being requested to now - when that node is new (it ran no
 * earlier attempt: an in-place restart after a crash is not timed). */
static int restart_sample(struct store *db, int64_t job, int64_t now_ns,
			  double scale, struct sr_err *e)
{
	int64_t created = 0;
	double sample, est = 0;
	int rc = store_restart_node(db, job, &created, &est, e);

	if (rc <= 0)
		return rc;
	sample = (double)(now_ns - created) / 1e9 * scale;
	if (sample <= 0)
		return 0;
	return store_job_set_restart_est(db, job, workest_restart(est, sample), e);
}

int workest_report(struct store *db, int64_t job, int64_t attempt,
		   int64_t step, int64_t now_ns, double scale,
		   int64_t interval_ns, struct sr_err *e)
{
	struct store_est se;
	struct workest w;
	struct workest_job j = { .scale = scale, .interval_ns = interval_ns };
	int rc, first = 0;

	rc = store_est_load(db, job, &se, e);
	if (rc)
		return rc;
	j.declared_s = se.declared_s;
	j.total_steps = se.total_steps;
	w = (struct workest){ se.work_s, se.pace_ns, se.steps, se.attempt,
			      se.step0, se.t0_ns, se.last_step, se.last_ns,
			      se.upd_ns };
	if (attempt != w.attempt && step >= 0) {
		first = 1;
		rc = restart_sample(db, job, now_ns, scale, e);
		if (rc)
			return rc;
	}
	workest_sample(&w, &j, attempt, step, now_ns);
	/* the attempt is recorded even where no pace is measured (a job
	 * that reports no total_steps): otherwise every report of it was
	 * "the first of a new attempt", and recon__lost_settle set the
	 * job's checkpoint back to the restored step at each heartbeat */
	if (step >= 0)
		w.attempt = attempt;
	se.work_s = w.work_s;
	se.pace_ns = w.pace_ns;
	se.steps = w.steps;
	se.attempt = w.attempt;
	se.step0 = w.step0;
	se.t0_ns = w.t0_ns;
	se.last_step = w.last_step;
	se.last_ns = w.last_ns;
	se.upd_ns = w.upd_ns;
	rc = store_est_save(db, job, &se, e);
	return rc ? rc : first;
}
