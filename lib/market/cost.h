/*
 * cost.h - expected cost and time of a checkpointed job on preemptible
 * nodes: NETC, optimal checkpoint intervals, makespan and P(deadline).
 *
 * The model (docs/market.md has the derivations):
 *   - a gang of n nodes runs W hours of work; any node's preemption stops
 *     the gang, so preemptions arrive as a Poisson process of rate
 *     Lambda = n * lambda (lambda = per-node hazard per hour);
 *   - work is cut into segments of tau compute hours, each followed by a
 *     checkpoint that stalls the job delta hours (the last segment has no
 *     checkpoint); a preemption loses the time since the segment began;
 *   - each preemption costs a resume of R = provisioning + image pull +
 *     restore hours (restore = checkpoint size / restore bandwidth) before
 *     the segment is retried; the resume itself is not preempted;
 *   - every hour of the makespan is billed at the gang's price C.
 * Then, with Wald's identity, the expected cost is exactly the seed's
 *   NETC = C*T_train + sum_{k=1..N} (C*t_lost(k) + C_resume)
 * in expectation, with T_train = W + (#checkpoints)*delta, C_resume = C*R.
 *
 * Units: hours as double (suffix _h), money as int64 micro-dollars.
 * Every function is pure and thread-safe.
 */
#ifndef SR_MARKET_COST_H
#define SR_MARKET_COST_H

#include <stdint.h>

#include "common/money.h"

struct cost_params {
	double work_h;          /* W > 0: compute hours without interruption */
	int nodes;              /* n >= 1 */
	double hazard_per_h;    /* lambda per node; 0 = never preempted */
	sr_micros price_per_h;  /* C: the whole gang's $/h */
	double ckpt_interval_h; /* tau; <= 0 or >= W: no checkpoints */
	double ckpt_stall_h;    /* delta >= 0 */
	double resume_h;        /* R = provision + image pull + restore */
};

struct cost_estimate {
	double gang_hazard_per_h; /* Lambda */
	int n_ckpt;               /* checkpoints taken in a failure-free run */
	double t_train_h;         /* W + n_ckpt * delta */
	double n_preempt;         /* E[N] */
	double t_lost_h;          /* E[t_lost] per preemption */
	double makespan_h;        /* E[T] = T_train + E[N] * (t_lost + R) */
	double makespan_sd_h;     /* standard deviation of T */
	sr_micros c_resume;       /* C * R */
	sr_micros netc;           /* expected NETC = C * E[T] */
};

/* Validate p: 0, or -EINVAL when a field is out of range. */
int cost_params_check(const struct cost_params *p);

/* Fill *out from p (exact expectations of the model).  0 or -EINVAL. */
int cost_estimate(const struct cost_params *p, struct cost_estimate *out);

/* The seed's NETC for given N, mean t_lost and C_resume: the formula
 * itself, C*T_train + N*(C*t_lost + C_resume), rounded to micros. */
sr_micros cost_netc(sr_micros price_per_h, double t_train_h, double n_preempt,
		    double t_lost_h, sr_micros c_resume);

/* P(T <= deadline_h), analytic approximation: the number of preemptions
 * is computed exactly (negative binomial over checkpoint segments); the
 * lost time given N = 0 and 1 is exact, and given N >= 2 a normal
 * approximation.  Returns a probability in [0, 1], or -1 if p is invalid. */
double cost_p_finish_by(const struct cost_params *p, double deadline_h);

/* E[max(0, T - deadline_h)] hours, with the same approximation. */
double cost_expected_overrun_h(const struct cost_params *p, double deadline_h);

/* Optimal checkpoint intervals (compute time between checkpoints) for a
 * checkpoint cost delta and a mean time between failures M, in hours.
 * Young: sqrt(2 delta M).  Daly (2006), higher order:
 *   sqrt(2 delta M) * (1 + sqrt(delta/(2M))/3 + (delta/(2M))/9) - delta
 * for delta < 2M, else M.  Both return 0 if M is infinite or not > 0. */
double cost_young_interval_h(double delta_h, double mtbf_h);
double cost_daly_interval_h(double delta_h, double mtbf_h);

/* Restore time: bytes / bytes_per_s, in hours (0 if bandwidth <= 0). */
double cost_restore_h(uint64_t ckpt_bytes, double restore_bytes_per_s);

/* Monte Carlo of the same model (for tests and validation): `trials`
 * runs with a splitmix64 stream from `seed`.  Fills the mean makespan,
 * mean preemptions and the fraction of runs with T <= deadline_h. */
int cost_monte_carlo(const struct cost_params *p, double deadline_h,
		     long trials, uint64_t seed, double *mean_makespan_h,
		     double *mean_preempt, double *p_meet);

/* Spot with on-demand fallback on a pool that stays without capacity
 * after each preemption (cost_outage.c: the model and the job's rule):
 * down spells of mean mean_h hours and coefficient of variation cv. */
struct cost_outage {
	double mean_h, cv;
	double disp;      /* the market's day-to-day spread: each run's rate
			     and outage mean are the given ones x one gamma
			     draw of mean 1 and this variance (0 = the same
			     in every run) */
	double up_cv;     /* the up spells' coefficient of variation (mean:
			     1 / the gang's hazard): <= 1 exponential, else
			     the same two-phase form as the down spells
			     (losses in bursts) */
};

struct cost_mc_result {
	sr_micros mean, p95;  /* the cost: mean and 95th percentile */
	double p_fallback;    /* share of runs that ended on demand */
};

/* `trials` runs (seeded, deterministic) of p with the deadline
 * deadline_h and on-demand at od_per_h for the fallback.  0, -EINVAL or
 * -ENOMEM. */
int cost_fallback_mc(const struct cost_params *p, const struct cost_outage *o,
		     double deadline_h, sr_micros od_per_h, long trials,
		     uint64_t seed, struct cost_mc_result *out);

#endif
