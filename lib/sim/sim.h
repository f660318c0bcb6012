/*
 * sim.h - the trace simulator: a job with a deadline on a spot market.
 *
 * The model (docs/simulator.md) follows Can't Be Late (NSDI '24) and its
 * public simulator: ticks of gap_s; at each boundary a policy holds SPOT
 * (in one region), ON_DEMAND or nothing; every held tick is billed in
 * full; every new start owes R seconds of zero progress; a preemption
 * keeps the work up to the last checkpoint.
 */
#ifndef SR_SIM_SIM_H
#define SR_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "sim/policy.h"
#include "sim/trace.h"

/* Several traces aligned in time: one spot region each.  Borrows the
 * traces' arrays; the traces must outlive the market. */
struct sim_market {
	int nregions;
	int64_t gap_s;
	size_t n; /* usable ticks: the shortest trace */
	const uint8_t *avail[SIM_MAX_REGIONS];
	const double *price[SIM_MAX_REGIONS]; /* per tick, or NULL */
	double const_price[SIM_MAX_REGIONS];  /* used when price[r] is NULL */
	const char *name[SIM_MAX_REGIONS];
	double od_price;
	int od_region; /* on-demand runs in the region with the cheapest od */
};

/* Build a market from n traces.  A trace without prices takes
 * spot_price; on-demand is the cheapest od price the traces give, or
 * od_price if none gives one (od_price > 0 forces it).  Errors: gap
 * mismatch, too many regions. */
int sim_market_init(struct sim_market *m, struct trace *const *t, int n,
		    double spot_price, double od_price, int force_od,
		    struct sr_err *e);

static inline double sim_spot_price(const struct sim_market *m, int r, size_t i)
{
	return m->price[r] ? m->price[r][i] : m->const_price[r];
}

struct sim_params {
	double work_h, deadline_h, restart_h;
	double ckpt_interval_h; /* 0 = continuous (the paper's model) */
	double ckpt_gb, egress_per_gb;
	double history_h;       /* market history shown to policies before the
				 * window starts (policy_ops.observe) */
	const struct policy_prior *prior; /* spotrun's prior; NULL = the bundled one */
	int zone_pairs; /* policy_job.zone_pairs */
};

/* Can a job with these parameters meet its deadline at all?  Checks
 * that every number is finite and in range and that work + one restart
 * fits before the deadline (on-demand from the first tick is the fastest
 * schedule there is).  Returns 0 or -EINVAL with e naming the field and
 * its value ("work_hours 60 + restart_hours 0.2 exceeds deadline_hours
 * 52").  sim_sweep_run() calls it; so should a front end, to report a
 * usage error before any work is done. */
int sim_params_check(const struct sim_params *p, struct sr_err *e);

/* The policy_job a window of this market runs with. */
void sim_job(const struct sim_market *m, const struct sim_params *p,
	     struct policy_job *job);

/* Ticks a window needs: ceil(deadline / gap). */
size_t sim_window_ticks(const struct sim_market *m, const struct sim_params *p);

struct sim_result {
	double cost;        /* $ */
	int met;            /* finished by the deadline */
	int preemptions;
	double finish_s;    /* when the work was done (after the deadline if missed) */
	int64_t spot_ticks, od_ticks; /* held ticks of each kind */
	int64_t starts;     /* new starts (each paid R) */
};

/* Run one window starting at trace tick `start` with an online policy.
 * state must hold pol->state_size bytes (it is zeroed, reset, fed the
 * history and, at the end, destroyed here).
 * If log is non-NULL, the choice made at tick k (after the guard and the
 * simulator's sanitising) is stored in log[k] for k < log_cap, and unused
 * entries are set to hold = -1.  Returns 0, or -EINVAL if the window does
 * not fit the market.
 *
 * A missed deadline is finished on on-demand after the deadline (billed,
 * met = 0), so a miss never looks cheaper than meeting it. */
int sim_run(const struct sim_market *m, size_t start,
	    const struct sim_params *p, const struct policy_ops *pol,
	    void *state, struct sim_result *r, struct policy_choice *log,
	    size_t log_cap);

/* The omniscient offline optimum of the same window (sim_optimal.c):
 * the minimum cost of meeting the deadline, as a lower bound (see its
 * header for the state space and the places where it relaxes the model).
 * *cost = INFINITY when no schedule meets the deadline.  Returns 0 or
 * -ENOMEM / -EINVAL. */
int sim_optimal(const struct sim_market *m, size_t start,
		const struct sim_params *p, double *cost);

#endif
