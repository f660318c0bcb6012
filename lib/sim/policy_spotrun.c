/*
 * policy_spotrun.c - `spotrun`, the default policy: deadline-safe slack
 * budgeting against the market it has observed.
 *
 * Let C be the work left, L the time left and S = L - C the slack left:
 * the time the job may still spend not working (idle, restarting) and
 * finish by the deadline.  Spot is cheap but comes in runs separated by
 * outages; during an outage the job either waits (spending slack) or
 * runs on-demand (spending money, plus a restart R each way).  The
 * offline optimum waits through short outages and buys on-demand through
 * long ones.  Online, an outage's length is unknown when it starts, so
 * spotrun budgets:
 *
 *   runs   = max(1, C / mu)        spot runs still needed, mu = mean run
 *   budget = (S - reserve - runs * R) / runs
 *                                  slack each coming outage may use,
 *                                  after paying one restart per run and
 *                                  keeping `reserve` = R + one tick for
 *                                  the final fall-back to on-demand
 *
 * and in an outage it waits while the wait so far plus one tick stays
 * within budget, then starts on-demand (a ski-rental rule: rent = wait,
 * buy = on-demand).  It stays on on-demand until spot returns, and moves
 * back to spot only if it can pay that restart and still afford one more
 * to get back (S - R >= reserve + R).  Spot is taken in the region with
 * the lowest restart-amortised price p * (1 + R/mu) plus the checkpoint
 * egress spread over a run; a running spot instance is kept while its
 * region has spot.  Last, policy_guard() forbids any choice that could
 * make the deadline unreachable by on-demand, so no meetable deadline is
 * missed.
 *
 * mu per region is an exposure estimate over what was observed (history
 * before the job, if the caller has it, then every tick seen):
 * mu = gap * (up ticks + 1) / (up->down transitions + 1).  The only
 * constants are the pseudo-counts that keep it defined at the first tick;
 * nothing is fitted to a particular trace.
 */
#include <math.h>

#include "sim/policy.h"

struct region_stats {
	double up, downs;
	uint8_t last, seen;
};

struct spotrun_state {
	struct region_stats reg[SIM_MAX_REGIONS];
	double wait_s; /* idle time in the current outage */
};

static void spotrun_reset(void *state, const struct policy_job *job)
{
	(void)state;
	(void)job;
}

static void spotrun_observe(void *state, const struct policy_job *job,
			    const uint8_t *avail, const double *price)
{
	struct spotrun_state *s = state;

	(void)price;
	for (int r = 0; r < job->nregions; r++) {
		struct region_stats *g = &s->reg[r];

		if (g->seen && g->last && !avail[r])
			g->downs++;
		g->seen = 1;
		g->up += avail[r] ? 1 : 0;
		g->last = avail[r] ? 1 : 0;
	}
}

/* Mean length of a spot run in region r, seconds. */
static double run_mean_s(const struct spotrun_state *s,
			 const struct policy_job *job, int r)
{
	return (double)job->gap_s * (s->reg[r].up + 1) / (s->reg[r].downs + 1);
}

/* Restart-amortised $/h of spot in region r, egress included. */
static double eff_price(const struct spotrun_state *s,
			const struct policy_job *job,
			const struct policy_obs *o, int r)
{
	double mu_h = run_mean_s(s, job, r) / 3600.0;
	double p = o->spot_price[r] * (1 + job->restart_s / 3600.0 / mu_h);

	if (o->ckpt_region >= 0 && o->ckpt_region != r)
		p += job->egress_usd / mu_h;
	return p;
}

/* The region with the cheapest usable spot now, or -1. */
static int pick_region(const struct spotrun_state *s,
		       const struct policy_job *job, const struct policy_obs *o)
{
	int best = -1;

	if (o->hold == SIM_SPOT && o->avail[o->region])
		return o->region;
	for (int r = 0; r < job->nregions; r++) {
		if (o->avail[r] && (best < 0 || eff_price(s, job, o, r) <
						  eff_price(s, job, o, best)))
			best = r;
	}
	if (best >= 0 && eff_price(s, job, o, best) >= job->od_price)
		return -1;
	return best;
}

/* Slack one coming outage may spend waiting. */
static double outage_budget(const struct spotrun_state *s,
			    const struct policy_job *job,
			    const struct policy_obs *o)
{
	double mu = 0, S = o->time_left_s - o->work_left_s, runs;
	double reserve = job->restart_s + (double)job->gap_s;

	for (int r = 0; r < job->nregions; r++) {
		double m = run_mean_s(s, job, r);

		if (m > mu)
			mu = m;
	}
	runs = o->work_left_s / mu;
	if (runs < 1)
		runs = 1;
	return (S - reserve - runs * job->restart_s) / runs;
}

static struct policy_choice spotrun_decide(void *state,
					   const struct policy_job *job,
					   const struct policy_obs *o)
{
	struct spotrun_state *s = state;
	struct policy_choice none = { SIM_NONE, -1 };
	struct policy_choice od = { SIM_OD, job->od_region };
	double S = o->time_left_s - o->work_left_s, R = job->restart_s;
	double reserve = R + (double)job->gap_s;
	int best;

	spotrun_observe(s, job, o->avail, o->spot_price);
	if (o->work_left_s <= 1e-6)
		return none;
	best = pick_region(s, job, o);
	if (best >= 0) {
		s->wait_s = 0;
		if (o->hold == SIM_OD && S - R < reserve + R)
			return od;
		return (struct policy_choice){ SIM_SPOT, best };
	}
	if (o->hold == SIM_OD)
		return od;
	if (s->wait_s + (double)job->gap_s <= outage_budget(s, job, o)) {
		s->wait_s += (double)job->gap_s;
		return none;
	}
	return od;
}

const struct policy_ops policy_spotrun = {
	.name = "spotrun",
	.summary = "deadline-safe slack budgeting on the observed market (default)",
	.state_size = sizeof(struct spotrun_state),
	.reset = spotrun_reset,
	.observe = spotrun_observe,
	.decide = spotrun_decide,
};
