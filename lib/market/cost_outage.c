/*
 * cost_outage.c - the cost of spot with on-demand fallback on a pool that
 * stays without capacity for a while after each preemption: a Monte
 * Carlo of what the job does there, for the plan's expected cost and p95.
 *
 * The analytic model (cost.h) has the pool back at once after a
 * preemption.  Measured pools are not (the bundled traces: about an hour
 * down per loss, with a long tail), and the waits use up the slack, so
 * the fallback to on-demand comes earlier and more often than the model
 * says (docs/notes/forecasts.md).  Here the pool alternates up spells
 * (mean 1 / the gang's hazard and coefficient of variation o->up_cv:
 * losses in bursts, many short spells then long ones, when > 1; the
 * same form as the down spells) and down spells (mean o->mean_h and
 * coefficient of variation o->cv: exponential for cv <= 1, else a
 * balanced two-phase hyperexponential with that mean and cv); the job
 * starts in a down spell with the stationary probability.  Markets have
 * better and worse days (the traces' share of hours up moves 0.2-0.3
 * from day to day): each run scales the rate and the outage mean
 * together by a gamma draw of mean 1 and variance o->disp.  The job does
 * what the deadline guard does:
 *
 *   - waits while the pool is down, as long as the on-demand finish
 *     (the work not yet checkpointed + R) still fits before D;
 *   - on spot, pays R (no progress), then works, checkpointing every tau
 *     (a preemption loses the work since the last checkpoint), as long as
 *     a loss would still leave the on-demand finish in time;
 *   - else falls back: the rest of the work + R on demand.
 *
 * Billed: spot for the time on spot (R included), on-demand for the rest;
 * nothing while waiting.  Deterministic for a seed.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "cost.h"
#include "cost_rng.h"

static double expo(uint64_t *rng, double mean)
{
	return -log(cost__unif(rng)) * mean;
}

/* A spell of mean `mean` and coefficient of variation cv: exponential
 * for cv <= 1, else the balanced two-phase hyperexponential (each phase
 * carries half of the mean: phase 1, of probability p, has mean
 * mean / 2p).  resid: the rest of a spell already under way at a random
 * instant (the phases weighed by their share of the time, p x its mean:
 * one half each; an exponential's rest is itself). */
static double spell(uint64_t *rng, double mean, double cv, int resid)
{
	double cv2 = cv * cv, p;

	if (cv2 <= 1 || !isfinite(mean))
		return expo(rng, mean);
	p = 0.5 * (1 + sqrt((cv2 - 1) / (cv2 + 1)));
	if (resid)
		return cost__unif(rng) <= 0.5 ? expo(rng, mean / (2 * p)) :
		       expo(rng, mean / (2 * (1 - p)));
	return cost__unif(rng) <= p ? expo(rng, mean / (2 * p)) :
	       expo(rng, mean / (2 * (1 - p)));
}

/* A standard normal (Box-Muller). */
static double normal(uint64_t *rng)
{
	return sqrt(-2 * log(cost__unif(rng))) * cos(2 * M_PI * cost__unif(rng));
}

/* Gamma of mean 1 and variance v (Marsaglia-Tsang; v > 0). */
static double gamma1(uint64_t *rng, double v)
{
	double k = 1 / v, d, c, boost = 1;

	if (k < 1) { /* G(k) = G(k + 1) U^(1/k) */
		boost = pow(cost__unif(rng), 1 / k);
		k += 1;
	}
	d = k - 1.0 / 3;
	c = 1 / sqrt(9 * d);
	for (;;) {
		double z = normal(rng), x = 1 + c * z, u;

		if (x <= 0)
			continue;
		x = x * x * x;
		u = cost__unif(rng);
		if (log(u) < 0.5 * z * z + d - d * x + d * log(x))
			return d * x * boost * v;
	}
}

/* One run; returns its cost in dollars, *fell = it fell back. */
static double one_run(const struct cost_params *p, const struct cost_outage *o,
		      double lam, double D, double od_per_h, uint64_t *rng,
		      int *fell)
{
	double W = p->work_h, R = p->resume_h, tau = p->ckpt_interval_h;
	double C = (double)p->price_per_h / 1e6, t = 0, done = 0, spot_h = 0;
	double up_mean = lam > 0 ? 1 / lam : INFINITY;
	int down = lam > 0 && cost__unif(rng) <= o->mean_h / (o->mean_h + up_mean);
	int first = 1; /* the spell the job starts in is under way */

	if (!(tau > 0) || tau >= W)
		tau = W;
	*fell = 1;
	for (;;) {
		double x, start, kept, end;

		if (down) {
			/* wait while the on-demand finish still fits */
			t += spell(rng, o->mean_h, o->cv, first);
			first = 0;
			if (t > D - (W - done) - R)
				break;
		}
		down = 1; /* a preemption is followed by a down spell */
		if (t > D - (W - done) - R)
			break;
		x = t + (lam > 0 ? spell(rng, up_mean, o->up_cv, first) : INFINITY);
		first = 0;
		/* the resume (kept = done), then segments of tau, each
		 * keeping its work at its end */
		start = t;
		kept = done;
		end = t + R;
		for (int k = 0;; k++) {
			/* the latest time a loss leaves the on-demand finish */
			double stop = D - (W - kept) - R;

			if (stop < start) {
				spot_h += start - t;
				done = kept;
				goto fallback;
			}
			if (x < end && x <= stop) { /* preempted */
				spot_h += x - t;
				done = kept;
				t = x;
				break;
			}
			if (stop < end) { /* the deadline guard steps in */
				spot_h += stop - t;
				done = kept;
				goto fallback;
			}
			if (k > 0) /* a segment done: its checkpoint */
				kept = fmin(W, kept + tau);
			if (kept >= W - 1e-9) {
				spot_h += end - t;
				*fell = 0;
				return spot_h * C;
			}
			start = end;
			end = start + fmin(tau, W - kept);
		}
	}
fallback:
	return spot_h * C + (W - done + R) * od_per_h;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int cost_fallback_mc(const struct cost_params *p, const struct cost_outage *o,
		     double deadline_h, sr_micros od_per_h, long trials,
		     uint64_t seed, struct cost_mc_result *out)
{
	struct cost_estimate est;
	double *v, sum = 0;
	long fell = 0;
	uint64_t rng = seed;

	if (trials <= 0 || !o || !(o->mean_h >= 0) || !(o->cv >= 0) ||
	    !(o->up_cv >= 0) ||
	    !isfinite(deadline_h) || od_per_h < 0 || cost_estimate(p, &est))
		return -EINVAL;
	v = malloc((size_t)trials * sizeof *v);
	if (!v)
		return -ENOMEM;
	for (long i = 0; i < trials; i++) {
		int f;

		double lam = est.gang_hazard_per_h;
		struct cost_outage oi = *o;

		if (o->disp > 0) {
			double g = gamma1(&rng, o->disp);

			lam *= g;
			oi.mean_h *= g;
		}
		v[i] = one_run(p, &oi, lam, deadline_h,
			       (double)od_per_h / 1e6, &rng, &f);
		sum += v[i];
		fell += f;
	}
	qsort(v, (size_t)trials, sizeof *v, cmp_d);
	out->mean = (sr_micros)llround(sum / (double)trials * 1e6);
	out->p95 = (sr_micros)llround(v[(size_t)ceil(0.95 * (double)trials) - 1] * 1e6);
	out->p_fallback = (double)fell / (double)trials;
	free(v);
	return 0;
}
