/*
 * policy_spotrun.c - `spotrun`, the default policy: deadline-safe slack
 * budgeting against the market it has observed.
 *
 * Idea.  Let C be the work left, L the time left and S = L - C the slack
 * left.  If the job ran on spot alone from now on, idling through
 * outages, it would use about
 *
 *     need(C) = C * (1 - a) / a  +  (C / mu + 1) * R
 *
 * of slack: the outage time while C of spot work gets done (a = the
 * fraction of time some region offers spot) plus one restart per spot
 * run (mu = mean length of a spot run in the region used) and one to get
 * going.  As long as S comfortably covers need(C), waiting for spot is
 * expected to finish in time and on-demand would be wasted money; when it
 * does not, every hour of on-demand now lowers C, hence need(C), by more
 * than it spends, so on-demand during outages is the cheapest way back
 * to a plan that spot alone can finish.  This is Uniform Progress's
 * idea with the line drawn from the observed market instead of a uniform
 * spread, which is what lets it wait through long outages when the
 * market has been good and buy on-demand early when it has been bad.
 *
 * Rules at each boundary (margin = one tick + R, the cost of acting one
 * boundary late plus one extra restart):
 *   - spot usable and cheaper than on-demand:
 *       on spot there -> stay (a restart costs R; nothing is gained)
 *       idle          -> take it, in the region with the lowest
 *                        restart-amortised price p * (1 + R/mu) plus the
 *                        checkpoint egress spread over a run
 *       on-demand     -> switch only if S - R >= need(C) + margin
 *   - no usable spot:
 *       on-demand     -> stay while S < need(C) + margin + R
 *       idle          -> start on-demand if S < need(C) + margin
 *   - then policy_guard(): never a choice that could make the deadline
 *     unreachable by on-demand, so no meetable deadline is missed.
 *
 * The estimates are counts of what was observed (ticks seen, ticks with
 * spot, up->down transitions) with one pseudo-observation so that they
 * are defined at the first tick: a = (up + 1) / (seen + 2) and
 * mu = gap * (up + 1) / (downs + 1).  Nothing in it is fitted to a trace.
 */
#include <math.h>

#include "sim/policy.h"

struct region_stats {
	double seen, up, downs;
	uint8_t last;
};

struct spotrun_state {
	struct region_stats reg[SIM_MAX_REGIONS];
	double any_seen, any_up;
};

static void spotrun_reset(void *state, const struct policy_job *job)
{
	(void)state;
	(void)job;
}

static void observe(struct spotrun_state *s, const struct policy_job *job,
		    const uint8_t *avail)
{
	int any = 0;

	for (int r = 0; r < job->nregions; r++) {
		struct region_stats *g = &s->reg[r];

		if (g->seen > 0 && g->last && !avail[r])
			g->downs++;
		g->seen++;
		g->up += avail[r] ? 1 : 0;
		g->last = avail[r] ? 1 : 0;
		any |= avail[r];
	}
	s->any_seen++;
	s->any_up += any ? 1 : 0;
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

static double need_slack(const struct spotrun_state *s,
			 const struct policy_job *job, double C, int r)
{
	double a = (s->any_up + 1) / (s->any_seen + 2);
	double mu = run_mean_s(s, job, r);

	return C * (1 - a) / a + (C / mu + 1) * job->restart_s;
}

static struct policy_choice spotrun_decide(void *state,
					   const struct policy_job *job,
					   const struct policy_obs *o)
{
	struct spotrun_state *s = state;
	struct policy_choice none = { SIM_NONE, -1 };
	struct policy_choice od = { SIM_OD, job->od_region };
	double C = o->work_left_s, S = o->time_left_s - o->work_left_s;
	double margin = (double)job->gap_s + job->restart_s, need;
	int best = -1, ref;

	observe(s, job, o->avail);
	if (C <= 1e-6)
		return none;
	for (int r = 0; r < job->nregions; r++) {
		if (o->avail[r] && (best < 0 || eff_price(s, job, o, r) <
						  eff_price(s, job, o, best)))
			best = r;
	}
	if (o->hold == SIM_SPOT && o->avail[o->region])
		best = o->region;
	if (best >= 0 && eff_price(s, job, o, best) >= job->od_price)
		best = -1;
	/* The region whose runs the plan would rely on. */
	ref = best >= 0 ? best : (o->ckpt_region >= 0 ? o->ckpt_region : 0);
	need = need_slack(s, job, C, ref);

	if (best >= 0) {
		struct policy_choice spot = { SIM_SPOT, best };

		if (o->hold == SIM_OD && S - job->restart_s < need + margin)
			return od;
		return spot;
	}
	if (o->hold == SIM_OD)
		return S < need + margin + job->restart_s ? od : none;
	return S < need + margin ? od : none;
}

const struct policy_ops policy_spotrun = {
	.name = "spotrun",
	.summary = "deadline-safe slack budgeting on the observed market (default)",
	.state_size = sizeof(struct spotrun_state),
	.reset = spotrun_reset,
	.decide = spotrun_decide,
};
