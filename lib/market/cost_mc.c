/*
 * cost_mc.c - Monte Carlo of the cost model in cost.h, used to validate
 * the analytic formulas.  It simulates the model directly: for each
 * segment, draw exponential inter-arrival times of gang preemptions;
 * a draw shorter than the segment loses that time plus a resume R.
 */
#include <errno.h>
#include <math.h>

#include "cost.h"
#include "cost_rng.h"

static double run_segment(double s, double lam, double R, uint64_t *rng,
			  long *n)
{
	double t = 0;

	if (lam <= 0)
		return s;
	for (;;) {
		double x = -log(cost__unif(rng)) / lam;

		if (x >= s)
			return t + s;
		t += x + R;
		(*n)++;
	}
}

int cost_monte_carlo(const struct cost_params *p, double deadline_h,
		     long trials, uint64_t seed, double *mean_makespan_h,
		     double *mean_preempt, double *p_meet)
{
	struct cost_estimate est;
	double lam, tau = p ? p->ckpt_interval_h : 0, sum_t = 0, last;
	long met = 0, npre = 0;
	int nfull;
	uint64_t rng = seed;

	if (trials <= 0 || cost_estimate(p, &est))
		return -EINVAL;
	lam = est.gang_hazard_per_h;
	nfull = est.n_ckpt;
	last = p->work_h - (nfull ? nfull * tau : 0);
	for (long t = 0; t < trials; t++) {
		double T = 0;

		for (int i = 0; i < nfull; i++)
			T += run_segment(tau + p->ckpt_stall_h, lam, p->resume_h,
					 &rng, &npre);
		T += run_segment(last, lam, p->resume_h, &rng, &npre);
		sum_t += T;
		if (T <= deadline_h)
			met++;
	}
	*mean_makespan_h = sum_t / (double)trials;
	*mean_preempt = (double)npre / (double)trials;
	*p_meet = (double)met / (double)trials;
	return 0;
}
