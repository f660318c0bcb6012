/*
 * workest.c - the bounded work estimator (see workest.h).
 */
#include "ctl/workest.h"

#include <errno.h>
#include <math.h>
#include <string.h>


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
	struct store_stmt *st = NULL;
	double sample = 0, est = 0;
	int rc;

	rc = store_prepare(db, "SELECT n.created_ns, j.est_restart_s FROM nodes n"
			   " JOIN jobs j ON j.id=n.job_id WHERE n.job_id=?1 AND"
			   " n.rank=0 AND n.state='READY' AND NOT EXISTS"
			   " (SELECT 1 FROM exits x WHERE x.node_id=n.id)"
			   " ORDER BY n.id DESC LIMIT 1", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	rc = store_step(st, e);
	if (rc == 1) {
		sample = (double)(now_ns - store_col_i64(st, "created_ns")) / 1e9 *
			 scale;
		est = store_col_f64(st, "est_restart_s");
	}
	store_done(st);
	if (rc < 0 || sample <= 0)
		return rc < 0 ? rc : 0;
	rc = store_prepare(db, "UPDATE jobs SET est_restart_s=?1 WHERE id=?2", &st, e);
	if (rc)
		return rc;
	store_bind_f64(st, 1, workest_restart(est, sample));
	store_bind_i64(st, 2, job);
	rc = store_run(st, e);
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "restart estimate") : 0;
}

int workest_report(struct store *db, int64_t job, int64_t attempt,
		   int64_t step, int64_t now_ns, double scale,
		   int64_t interval_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	struct workest w;
	struct workest_job j = { .scale = scale, .interval_ns = interval_ns };
	int rc, first = 0;

	memset(&w, 0, sizeof w);
	rc = store_prepare(db, "SELECT work_s, coalesce(total_steps, -1) AS total,"
			   " est_work_s, est_pace_ns, est_steps, est_attempt,"
			   " est_step0, est_t0_ns, est_last_step, est_last_ns,"
			   " est_upd_ns FROM jobs WHERE id=?", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	rc = store_step(st, e);
	if (rc <= 0) {
		store_done(st);
		return rc < 0 ? rc : sr_err_set(e, -SR_ENOTFOUND, "job %lld",
						(long long)job);
	}
	j.declared_s = store_col_f64(st, "work_s");
	j.total_steps = store_col_i64(st, "total");
	w.work_s = store_col_f64(st, "est_work_s");
	w.pace_ns = store_col_f64(st, "est_pace_ns");
	w.steps = store_col_i64(st, "est_steps");
	w.attempt = store_col_i64(st, "est_attempt");
	w.step0 = store_col_i64(st, "est_step0");
	w.t0_ns = store_col_i64(st, "est_t0_ns");
	w.last_step = store_col_i64(st, "est_last_step");
	w.last_ns = store_col_i64(st, "est_last_ns");
	w.upd_ns = store_col_i64(st, "est_upd_ns");
	store_done(st);
	if (attempt != w.attempt && step >= 0) {
		first = 1;
		rc = restart_sample(db, job, now_ns, scale, e);
		if (rc)
			return rc;
	}
	workest_sample(&w, &j, attempt, step, now_ns);
	rc = store_prepare(db, "UPDATE jobs SET est_work_s=?1, est_pace_ns=?2,"
			   " est_steps=?3, est_attempt=?4, est_step0=?5,"
			   " est_t0_ns=?6, est_last_step=?7, est_last_ns=?8,"
			   " est_upd_ns=?9 WHERE id=?10", &st, e);
	if (rc)
		return rc;
	store_bind_f64(st, 1, w.work_s);
	store_bind_f64(st, 2, w.pace_ns);
	store_bind_i64(st, 3, w.steps);
	store_bind_i64(st, 4, w.attempt);
	store_bind_i64(st, 5, w.step0);
	store_bind_i64(st, 6, w.t0_ns);
	store_bind_i64(st, 7, w.last_step);
	store_bind_i64(st, 8, w.last_ns);
	store_bind_i64(st, 9, w.upd_ns);
	store_bind_i64(st, 10, job);
	rc = store_run(st, e);
	store_done(st);
	if (rc < 0)
		return sr_err_prefix(e, "work estimate");
	return first;
}
