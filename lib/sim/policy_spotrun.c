/*
 * policy_spotrun.c - `spotrun`, the default policy: plan against the
 * market as observed, act on the plan, never risk the deadline.
 *
 * 1. Observe.  Every tick it sees (and the market history before the job,
 *    when the caller has it) updates, for "spot somewhere": how long
 *    spells of availability and of outage have lasted and at what age they
 *    ended; per region: spot ticks, losses while spot stayed up elsewhere
 *    (region hops), up->down transitions and prices.  Counts decay with a
 *    half-life of half a day, so the estimates follow a drifting market.
 * 2. Plan.  It turns those counts into age-dependent end probabilities
 *    (each age bucket shrunk toward the pooled rate by one planning step
 *    of pseudo-exposure) and solves the job's semi-Markov decision process
 *    exactly (policy_spotrun_plan.c): over work left x slack left x what
 *    is held x spot up or not x the spell's age (across regions, while
 *    spot is up, the age of the held or next region run and whether
 *    another region is up besides it), the least
 *    expected cost of finishing by the deadline, where any outcome that
 *    could miss it costs infinity.  It replans whenever an outage begins or ends - the
 *    moments the estimates move.  Nothing in it is fitted to a trace: the
 *    only constants are the half-life, the pseudo-counts and the planning
 *    table's size.
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
#include "sim/policy_up.h"

#define MEMORY_HALF_LIFE_H 12.0
/* Replan when an estimate moved by more than this fraction. */
#define REPLAN_TOLERANCE 0.25
/* Standard errors between the estimate and the pessimist's reading of
 * the same counts (safe_to_plan()). */
#define PESSIMISM 1.0

struct region_stats {
	double up, downs, hops, price_sum, seen;
	double age_s; /* age of the region's current spell (up or down) */
	uint8_t last;
};

struct spotrun_state {
	struct region_stats reg[SIM_MAX_REGIONS];
	/* "Spot somewhere" spells, [0] outages, [1] availability. */
	double expo[2][PLAN_AGES], ends[2][PLAN_AGES];
	double age_s;     /* age of the current spell */
	/* One region's spot runs, by age bucket, pooled over regions:
	 * ticks of exposure and ends. */
	double rexpo[PLAN_AGES], rends[PLAN_AGES];
	/* Age bucket of the oldest run still up elsewhere when a region run
	 * ended with spot still up somewhere. */
	double hland[PLAN_AGES];
	/* The same runs by o, another region up besides the run a tick
	 * before: ticks it went on and of those o changed; ends, and of
	 * those ends that left no spot anywhere.  Of the run ends with spot
	 * still up, those where another besides the oldest run was up too;
	 * outage ends, and of those with two or more regions up. */
	double oexpo[2], oflip[2], oends[2], oout[2], lother, outs, oother;
	uint8_t any_last, seen;
	double unit_s;
	int planned;
	uint8_t plan_any; /* spell type when the plan was made */
	uint8_t use_up;   /* the last check preferred Uniform Progress */
	struct plan plan;
	struct up_state up; /* Uniform Progress's own state */
};

static void spotrun_reset(void *state, const struct policy_job *job)
{
	struct spotrun_state *s = state;

	s->unit_s = policy__plan_unit(job);
	policy__up_reset(&s->up, job);
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
	double f = exp2(-(double)job->gap_s / (MEMORY_HALF_LIFE_H * 3600.0));
	uint8_t any = 0, was[SIM_MAX_REGIONS];
	int nup = 0, nwas = 0;

	for (int r = 0; r < job->nregions; r++) {
		any |= avail[r];
		was[r] = s->reg[r].last;
		nup += avail[r] ? 1 : 0;
		nwas += was[r];
	}
	for (int k = 0; k < 2; k++) {
		for (int b = 0; b < PLAN_AGES; b++) {
			s->expo[k][b] *= f;
			s->ends[k][b] *= f;
		}
	}
	for (int r = 0; r < job->nregions; r++) {
		struct region_stats *g = &s->reg[r];

		g->up *= f;
		g->downs *= f;
		g->hops *= f;
		if (r == 0) {
			for (int b = 0; b < PLAN_AGES; b++) {
				s->rexpo[b] *= f;
				s->rends[b] *= f;
				s->hland[b] *= f;
			}
			for (int o = 0; o < 2; o++) {
				s->oexpo[o] *= f;
				s->oflip[o] *= f;
				s->oends[o] *= f;
				s->oout[o] *= f;
			}
			s->lother *= f;
			s->outs *= f;
			s->oother *= f;
		}
		if (s->seen && g->last) {
			int b = policy__plan_age(g->age_s, s->unit_s);
			int o = nwas - 1 > 0; /* another up a tick before */

			s->rexpo[b]++;
			if (!avail[r])
				s->rends[b]++;
			if (avail[r]) {
				s->oexpo[o]++;
				if ((nup - 1 > 0) != o)
					s->oflip[o]++;
			} else {
				s->oends[o]++;
				if (!any)
					s->oout[o]++;
			}
		}
		if (s->seen && g->last == (avail[r] ? 1 : 0))
			g->age_s += (double)job->gap_s;
		else
			g->age_s = 0;
		if (s->seen && g->last && !avail[r]) {
			g->downs++;
			if (any)
				g->hops++;
		}
		g->up += avail[r] ? 1 : 0;
		g->last = avail[r] ? 1 : 0;
		g->price_sum += price[r];
		g->seen++;
	}
	if (s->seen && any) {
		double old = -1;

		for (int r = 0; r < job->nregions; r++) {
			if (avail[r] && s->reg[r].age_s > old)
				old = s->reg[r].age_s;
		}
		for (int r = 0; r < job->nregions; r++) {
			if (was[r] && !avail[r]) {
				s->hland[policy__plan_age(old, s->unit_s)]++;
				s->lother += nup >= 2;
			}
		}
	}
	if (s->seen && any && !s->any_last) {
		s->outs++;
		s->oother += nup >= 2;
	}
	if (s->seen) {
		int b = policy__plan_age(s->age_s, s->unit_s);

		s->expo[s->any_last][b]++;
		if (any != s->any_last) {
			s->ends[s->any_last][b]++;
			s->age_s = 0;
		} else {
			s->age_s += (double)job->gap_s;
		}
	}
	s->any_last = any;
	s->seen = 1;
}

/* Mean length of a spot run in region r, seconds. */
static double run_mean_s(const struct spotrun_state *s,
			 const struct policy_job *job, int r)
{
	return (double)job->gap_s * (s->reg[r].up + 1) / (s->reg[r].downs + 1);
}

/* Expected remaining length (s) of one region's spot run that has lasted
 * age_s, from the per-tick end rates of region runs by age bucket, pooled
 * over regions: piecewise-constant hazard h_b over the bucket's width. */
static double run_left_s(const struct spotrun_state *s,
			 const struct policy_job *job, double age_s)
{
	static const double lo[PLAN_AGES] = { 0, 1, 2, 4, 8, 16 };
	double te = 0, tx = 0, pool, gap = (double)job->gap_s, e = 0;
	int b0 = policy__plan_age(age_s, s->unit_s);

	for (int b = 0; b < PLAN_AGES; b++) {
		te += s->rends[b];
		tx += s->rexpo[b];
	}
	pool = (te + 1) / (tx + 2);
	for (int b = PLAN_AGES - 1; b >= b0; b--) {
		double h = (s->rends[b] + pool) / (s->rexpo[b] + 1), L, q;

		h = h < 1e-6 ? 1e-6 : h > 1 ? 1 : h;
		if (b == PLAN_AGES - 1) {
			e = 1 / h;
			continue;
		}
		/* ticks left in the bucket */
		L = (lo[b + 1] * s->unit_s - (b == b0 ? age_s : lo[b] * s->unit_s)) / gap;
		L = L < 1 ? 1 : L;
		q = pow(1 - h, L);
		e = (1 - q) / h + q * e;
	}
	return e * gap;
}

/* Restart-amortised $/h of spot in region r at price p, egress included. */
static double eff_price(const struct spotrun_state *s,
			const struct policy_job *job, int ckpt_region, int r,
			double p, int by_age)
{
	double mu_s = by_age && job->nregions > 1 ?
		      run_left_s(s, job, s->reg[r].age_s) : run_mean_s(s, job, r);
	double mu_h = mu_s / 3600.0;
	double e = p * (1 + job->restart_s / 3600.0 / mu_h);

	if (ckpt_region >= 0 && ckpt_region != r)
		e += job->egress_usd / mu_h;
	return e;
}

/* Per-step probability from per-tick counts, shrunk toward the pool, moved
 * z standard errors (Poisson: sqrt of the events) from the estimate. */
static double per_step(double ends, double expo, double pool, double ticks,
		       double z)
{
	double n = ends + pool * ticks;
	double lam = (n + z * sqrt(n)) / (expo + ticks);

	lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;
	return 1 - pow(1 - lam, ticks);
}

/* The market as estimated (z = 0), or as a pessimist reads the same counts
 * (z = PESSIMISM): spot spells end sooner, outages later, hops happen
 * more often. */
static void model_fit(struct spotrun_state *s, const struct policy_job *job,
		      double z, struct plan_model *out)
{
	struct plan_model m = { 0 };
	double ticks = s->unit_s / (double)job->gap_s, best_e = INFINITY;
	int best = 0;

	for (int r = 0; r < job->nregions; r++) {
		double e = eff_price(s, job, -1, r, s->reg[r].price_sum / s->reg[r].seen, 0);

		if (e < best_e) {
			best_e = e;
			best = r;
		}
	}
	for (int k = 0; k < 2; k++) {
		double te = 0, tx = 0, pool;

		for (int b = 0; b < PLAN_AGES; b++) {
			te += s->ends[k][b];
			tx += s->expo[k][b];
		}
		pool = (te + 1) / (tx + 2);
		for (int b = 0; b < PLAN_AGES; b++) {
			double p = per_step(s->ends[k][b], s->expo[k][b], pool, ticks,
					    k ? z : -z);

			if (k)
				m.end_up[b] = p;
			else
				m.end_down[b] = p;
		}
	}
	{
		double h = s->reg[best].hops, lam = (h + z * sqrt(h)) / (s->reg[best].up + 1);

		m.hop = 1 - pow(1 - (lam > 1 ? 1 : lam), ticks);
	}
	/* Several regions: the plan prices a held or started instance by its
	 * region run's age (policy_spotrun_plan.c), from the same pooled
	 * region-run counts as the region choice, each bucket shrunk toward
	 * the pool like the spell rates above. */
	if (job->nregions > 1) {
		double te = 0, tx = 0, pool, hl = 0;

		m.multi = 1;
		for (int b = 0; b < PLAN_AGES; b++) {
			te += s->rends[b];
			tx += s->rexpo[b];
			hl += s->hland[b];
		}
		pool = (te + 1) / (tx + 2);
		for (int b = 0; b < PLAN_AGES; b++)
			m.loss[b] = per_step(s->rends[b], s->rexpo[b], pool, ticks, z);
		/* By o, another region up besides the run: a run end with none
		 * other up is an outage unless another comes up at once, one
		 * with another up only if both end together; while the run
		 * goes on, o flips at the hop rate's convention (events over
		 * exposure + 1). */
		for (int o = 0; o < 2; o++) {
			double lam = s->oflip[o] / (s->oexpo[o] + 1);

			m.rho[o] = (s->oout[o] + 1) / (s->oends[o] + 2);
			m.flip[o] = 1 - pow(1 - (lam > 1 ? 1 : lam), ticks);
		}
		for (int b = 0; b < PLAN_AGES; b++)
			m.land[b] = (s->hland[b] + 1.0 / PLAN_AGES) / (hl + 1);
		m.land_other = (s->lother + 0.5) / (hl + 1);
		m.out_other = (s->oother + 0.5) / (s->outs + 1);
	}
	m.spot_price = s->reg[best].price_sum / s->reg[best].seen;
	m.od_price = job->od_price;
	m.restart_s = job->restart_s;
	*out = m;
}

static int moved(double a, double b)
{
	return fabs(a - b) > REPLAN_TOLERANCE * (fabs(b) + 0.01);
}

/* Has the market moved enough since the plan was made to redo it? */
static int model_moved(const struct plan_model *now, const struct plan_model *was)
{
	if (moved(now->hop, was->hop) || moved(now->spot_price, was->spot_price))
		return 1;
	for (int b = 0; b < PLAN_AGES; b++) {
		if (now->multi && moved(now->loss[b], was->loss[b]))
			return 1;
		if (moved(now->end_up[b], was->end_up[b]) ||
		    moved(now->end_down[b], was->end_down[b]))
			return 1;
	}
	return 0;
}

/* Safe improvement over Uniform Progress: is the plan still better than
 * UP when the market is read pessimistically?  Both rules are scored from
 * the present state under the pessimist's model; the plan is followed
 * only if it wins there too (under its own model it always wins: UP is
 * one of the policies the plan optimises over).  On out-of-memory, UP. */
static int safe_to_plan(struct spotrun_state *s, const struct policy_job *job,
			const struct policy_obs *o, const struct plan_model *pess,
			int b)
{
	double C = o->work_left_s, S = o->time_left_s - o->work_left_s;
	int a = s->any_last;
	double v_plan, v_up;

	if (policy__plan_eval(&s->plan, pess, job, PLAN_RULE_PLAN, C, S, o->hold,
			      a, b, &v_plan) ||
	    policy__plan_eval(&s->plan, pess, job, PLAN_RULE_UP, C, S, o->hold, a,
			      b, &v_up))
		return 0;
	return v_plan <= v_up;
}

static struct policy_choice spotrun_decide(void *state,
					   const struct policy_job *job,
					   const struct policy_obs *o)
{
	struct spotrun_state *s = state;
	struct policy_choice od = { SIM_OD, job->od_region };
	enum sim_hold want;
	int best = -1, dear = 0, b;
	double best_e = INFINITY;

	spotrun_observe(s, job, o->avail, o->spot_price);
	if (o->work_left_s <= 1e-6)
		return (struct policy_choice){ SIM_NONE, -1 };
	for (int r = 0; r < job->nregions; r++) {
		double e;

		if (!o->avail[r])
			continue;
		e = eff_price(s, job, o->ckpt_region, r, o->spot_price[r], 1);
		if (e < best_e) {
			best_e = e;
			best = r;
		}
	}
	if (o->hold == SIM_SPOT && o->avail[o->region])
		best = o->region;
	else if (best >= 0 && best_e >= job->od_price)
		dear = 1; /* spot no cheaper than on-demand after restarts */
	/* The plan's age index: the spot-somewhere spell's, or with several
	 * regions and spot up, the age of the run held or to be started. */
	b = policy__plan_age(job->nregions > 1 && best >= 0 ? s->reg[best].age_s :
			     s->age_s, s->unit_s);
	if (job->nregions > 1 && best >= 0) { /* and another region up besides */
		for (int r = 0; r < job->nregions; r++) {
			if (r != best && o->avail[r]) {
				b += PLAN_AGES;
				break;
			}
		}
	}
	/* (Re)plan at the start, and when an outage begins or ends if the
	 * estimates have moved since the plan was made. */
	if (!s->planned || s->plan_any != s->any_last) {
		struct plan_model m, pess;

		model_fit(s, job, 0, &m);
		s->plan_any = s->any_last;
		if (!s->planned || model_moved(&m, &s->plan.m)) {
			policy__plan_free(&s->plan);
			s->planned = 0;
			if (policy__plan_build(&s->plan, &m, s->unit_s, o->work_left_s,
					       o->time_left_s - o->work_left_s))
				return od; /* out of memory: the safe choice */
			s->planned = 1;
			model_fit(s, job, PESSIMISM, &pess);
			s->use_up = !safe_to_plan(s, job, o, &pess, b);
		}
	}
	if (s->use_up) /* Uniform Progress with failover: the `ups` rule */
		return policy__up_decide(&s->up, job, o, policy__up_region(job, o));
	/* Spot that is there but dear is not an outage.  Asking the plan as
	 * if spot were down made it wait - its outage model says outages end
	 * and waiting pays - for spot that was already there, until the
	 * slack ran out.  So the plan is asked with spot up, and a dear spot
	 * market gets a node, never a wait: spot if the plan wants it (the
	 * plan prices restarts and losses itself) and its price now is below
	 * on-demand's, otherwise on-demand. */
	want = policy__plan_choose(&s->plan, o->work_left_s,
				   o->time_left_s - o->work_left_s, o->hold,
				   best >= 0, b);
	if (want == SIM_SPOT && best >= 0 &&
	    (!dear || o->spot_price[best] < job->od_price))
		return (struct policy_choice){ SIM_SPOT, best };
	if (want == SIM_NONE && !dear)
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
