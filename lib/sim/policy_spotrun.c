/*
 * policy_spotrun.c - `spotrun`, the default policy: plan against the
 * market as observed, act on the plan, never risk the deadline.
 *
 * 1. Observe.  Every tick it sees (and, if the caller has it, the market
 *    history before the job) updates counts per region - ticks with spot,
 *    up->down transitions, prices - and for "spot somewhere": ticks up and
 *    down and the transitions between them.
 * 2. Plan.  At its first decision it fits a two-state availability chain
 *    to those counts (Laplace pseudo-counts keep every estimate defined on
 *    the first tick) and solves the job's Markov decision process exactly
 *    (policy_spotrun_plan.c): over work left x slack left x what is held x
 *    whether spot is up, the least expected cost of finishing by the
 *    deadline, where any outcome that misses it costs infinity.  This is
 *    the textbook certainty-equivalent controller; it trades slack against
 *    money by the observed outage and preemption rates, the restart
 *    overhead and the two prices, and has no constant tuned to any trace.
 * 3. Act.  Each tick it takes the plan's action for the present state
 *    (work and slack rounded against itself), puts spot in the region with
 *    the lowest restart-amortised price p * (1 + R / mean run) plus the
 *    egress spread over a run, keeps a running spot instance where it is,
 *    and finally passes policy_guard(), so no meetable deadline is missed
 *    even where the model is wrong.
 */
#include <math.h>
#include <string.h>

#include "sim/policy.h"
#include "sim/policy_spotrun_plan.h"

#ifndef MEMORY_HALF_LIFE_H
#define MEMORY_HALF_LIFE_H 12.0
#endif

struct region_stats {
	double up, downs, price_sum, seen;
	uint8_t last;
};

struct spotrun_state {
	struct region_stats reg[SIM_MAX_REGIONS];
	double any_up, any_down, any_downs, any_ups; /* ticks, transitions */
	uint8_t any_last, seen;
	int planned;
	uint8_t plan_any; /* spot-somewhere state when the plan was made */
	struct plan plan;
};

static void spotrun_reset(void *state, const struct policy_job *job)
{
	(void)state;
	(void)job;
}

static void spotrun_destroy(void *state)
{
	struct spotrun_state *s = state;

	policy__plan_free(&s->plan);
}

static void spotrun_observe(void *state, const struct policy_job *job,
			    const uint8_t *avail, const double *price)
{
	struct spotrun_state *s = state;
	uint8_t any = 0;
	double f = exp2(-(double)job->gap_s / (MEMORY_HALF_LIFE_H * 3600.0));

	/* Older ticks weigh less: the market drifts. */
	for (int r = 0; r < job->nregions; r++) {
		s->reg[r].up *= f;
		s->reg[r].downs *= f;
	}
	s->any_up *= f;
	s->any_down *= f;
	s->any_downs *= f;
	s->any_ups *= f;

	for (int r = 0; r < job->nregions; r++) {
		struct region_stats *g = &s->reg[r];

		if (s->seen && g->last && !avail[r])
			g->downs++;
		g->up += avail[r] ? 1 : 0;
		g->last = avail[r] ? 1 : 0;
		g->price_sum += price[r];
		g->seen++;
		any |= avail[r];
	}
	if (s->seen && s->any_last && !any)
		s->any_downs++;
	if (s->seen && !s->any_last && any)
		s->any_ups++;
	if (any)
		s->any_up++;
	else
		s->any_down++;
	s->any_last = any;
	s->seen = 1;
}

/* Mean length of a spot run in region r, seconds. */
static double run_mean_s(const struct spotrun_state *s,
			 const struct policy_job *job, int r)
{
	return (double)job->gap_s * (s->reg[r].up + 1) / (s->reg[r].downs + 1);
}

/* Restart-amortised $/h of spot in region r at price p, egress included. */
static double eff_price(const struct spotrun_state *s,
			const struct policy_job *job, int ckpt_region, int r,
			double p)
{
	double mu_h = run_mean_s(s, job, r) / 3600.0;
	double e = p * (1 + job->restart_s / 3600.0 / mu_h);

	if (ckpt_region >= 0 && ckpt_region != r)
		e += job->egress_usd / mu_h;
	return e;
}

static int plan_build(struct spotrun_state *s, const struct policy_job *job,
		      const struct policy_obs *o)
{
	struct plan_model m = { 0 };
	int best = 0;
	double best_e = INFINITY;

	for (int r = 0; r < job->nregions; r++) {
		double mp = s->reg[r].price_sum / s->reg[r].seen;
		double e = eff_price(s, job, -1, r, mp);

		if (e < best_e) {
			best_e = e;
			best = r;
		}
	}
	m.unit_s = (double)job->gap_s;
	m.gap_s = (double)job->gap_s;
	m.p_fail = (s->reg[best].downs + 1) / (s->reg[best].up + 2);
	m.p_outage = (s->any_downs + 1) / (s->any_up + 2);
	if (m.p_outage > m.p_fail)
		m.p_outage = m.p_fail;
	m.p_recover = (s->any_ups + 1) / (s->any_down + 2);
	m.spot_price = s->reg[best].price_sum / s->reg[best].seen;
	m.od_price = job->od_price;
	m.restart_s = job->restart_s;
	return policy__plan_build(&s->plan, &m, o->work_left_s,
				  o->time_left_s - o->work_left_s);
}

static struct policy_choice spotrun_decide(void *state,
					   const struct policy_job *job,
					   const struct policy_obs *o)
{
	struct spotrun_state *s = state;
	struct policy_choice od = { SIM_OD, job->od_region };
	enum sim_hold want;
	int best = -1;
	double best_e = INFINITY;

	spotrun_observe(s, job, o->avail, o->spot_price);
	if (o->work_left_s <= 1e-6)
		return (struct policy_choice){ SIM_NONE, -1 };
	/* (Re)plan at the start and whenever an outage begins or ends: the
	 * moments the estimates move. */
	if (!s->planned || s->plan_any != s->any_last) {
		policy__plan_free(&s->plan);
		s->planned = 0;
		if (plan_build(s, job, o))
			return od; /* out of memory: the safe choice */
		s->planned = 1;
		s->plan_any = s->any_last;
	}
	for (int r = 0; r < job->nregions; r++) {
		double e;

		if (!o->avail[r])
			continue;
		e = eff_price(s, job, o->ckpt_region, r, o->spot_price[r]);
		if (e < best_e) {
			best_e = e;
			best = r;
		}
	}
	if (o->hold == SIM_SPOT && o->avail[o->region])
		best = o->region;
	else if (best >= 0 && best_e >= job->od_price)
		best = -1; /* spot no cheaper than on-demand after restarts */
	want = policy__plan_choose(&s->plan, o->work_left_s,
				   o->time_left_s - o->work_left_s,
				   o->hold, best >= 0);
	if (want == SIM_SPOT && best >= 0)
		return (struct policy_choice){ SIM_SPOT, best };
	if (want == SIM_NONE)
		return (struct policy_choice){ SIM_NONE, -1 };
	return od;
}

const struct policy_ops policy_spotrun = {
	.name = "spotrun",
	.summary = "plans on the observed market, never risks the deadline (default)",
	.state_size = sizeof(struct spotrun_state),
	.reset = spotrun_reset,
	.observe = spotrun_observe,
	.decide = spotrun_decide,
	.destroy = spotrun_destroy,
};
