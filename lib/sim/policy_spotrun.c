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
 *    (each age bucket's counts added to the pseudo-counts of a prior
 *    pooled over many markets and worth PRIOR_WEIGHT spell ends,
 *    policy_prior.h: the mean of a Gamma posterior) and solves the job's
 *    semi-Markov decision process exactly (policy_spotrun_plan.c): over
 *    work left x slack left x what is held x spot up or not x the spell's
 *    age (across regions, while spot is up, the age of the held or next
 *    region run and whether another region is up besides it), the least
 *    expected cost of finishing by the deadline, where any outcome that
 *    could miss it costs infinity.  It replans when an outage begins or
 *    ends - the moments the estimates move - if they moved, and when the
 *    model the scores favour changes (below).  With
 *    job->zone_pairs (SIM_PAIRS_AUTO, the default, or ON) the age across
 *    regions is that of the pair (the run, another region up or not)
 *    and its changes are estimated by o and age (pair_fit()): always
 *    (SIM_PAIRS_ON), or only once the market's own run ends have shown
 *    the pair model predicts them better (SIM_PAIRS_AUTO, pair_chosen();
 *    both models then shrunk toward priors fitted on other markets: the
 *    run ends', the pair changes').
 * 3. Guard.  With each plan, in every state of its table: the plan's
 *    advantage over Uniform Progress and its standard error from the same
 *    evidence (policy__plan_guard(): each group of estimates moved by one
 *    posterior standard error).  Where the advantage is below GUARD_Z
 *    standard errors, UP's rule (`ups`) runs instead.  Read every tick,
 *    so each spot up-edge while on on-demand is a decision point.
 * 4. Act.  Each tick it takes the plan's action for the present state
 *    (work and slack rounded against itself), puts spot in the region with
 *    the lowest restart-amortised price p * (1 + R / mean run) plus the
 *    egress spread over a run, keeps a running spot instance where it is
 *    unless a move pays (move_region(): the price gap to another region,
 *    summed over the time both runs are expected to last, each region's
 *    by its own hazard, against the restart, the egress and the slack the
 *    move costs, by one standard error), and finally passes
 *    policy_guard(), so no meetable deadline is missed even where the
 *    model is wrong.
 *
 * Nothing in it is tuned to a trace: its constants are the half-life,
 * the pseudo-counts, the prior's weight, the guard's bound and the
 * planning table's size; the prior is estimated (docs/design/policies.md).
 */
#include <math.h>
#include <string.h>

#include "sim/policy.h"
#include "sim/policy_prior.h"
#include "sim/policy_spotrun_plan.h"
#include "sim/policy_up.h"

#define MEMORY_HALF_LIFE_H 12.0
/* Replan when an estimate moved by more than this fraction. */
#define REPLAN_TOLERANCE 0.25
/* Spell ends the prior is worth against the ends observed
 * (policy_prior.h): a market seen for a handful of spells is read mostly
 * as the pooled markets are. */
#define PRIOR_WEIGHT 8.0
/* Pseudo-changes the outcomes of a pair change pooled over o are worth
 * against those seen from one o (pair_fit()). */
#define PAIR_OUT_WEIGHT 1.0
/* With job->zone_pairs = SIM_PAIRS_AUTO the pair model is used where its
 * log score on the region runs' ends seen so far beats the run model's
 * by more than this (natural log; 0: the model the market's own runs
 * favour, each predicting from its own shrunk counts, so the larger
 * model pays for its thin cells itself); otherwise the simpler run model
 * (pair_chosen()).  The scores are not decayed: which model fits is the
 * market's structure, and decaying the evidence for it kept it thin. */
#define PAIR_EVIDENCE 0.0
/* The plan is followed where its advantage over Uniform Progress is at
 * least this many standard errors of that advantage (one-sided, ~84%). */
#define GUARD_Z 1.0

/* Groups of estimates the guard moves by one standard error each:
 * run (or, across regions, region run) end rates at young (< 2 steps)
 * and old ages, outage end rates likewise, and across regions the share
 * of run ends that leave no spot anywhere. */
enum { GRP_NONE = -1, GRP_RUN_YOUNG, GRP_RUN_OLD, GRP_OUT_YOUNG, GRP_OUT_OLD,
       GRP_RHO, NGRP };

struct region_stats {
	double up, downs, hops, price_sum, seen;
	double age_s; /* age of the region's current spell (up or down) */
	double pair_s; /* up: time since its run began or o last changed */
	/* Ticks of exposure and ends of the region's runs by age bucket
	 * (decayed, as the pooled rexpo and rends): how much the region's
	 * runs end more or less often than the pooled hazard says
	 * (region_hazard()). */
	double rx[PLAN_AGES], re[PLAN_AGES];
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
	/* The pair (a region's run, o): ticks of exposure and changes by o
	 * and pair age bucket, and how the changes from o went (PAIR_*). */
	double pexpo[2][PLAN_AGES], pchg[2][PLAN_AGES], pcnt[2][3];
	int pair; /* job->zone_pairs (SIM_PAIRS_*), with several regions */
	/* Prequential log scores of each region run's end or survival at
	 * every tick, as the run model and as the pair model predicted it
	 * from the counts before that tick (not decayed). */
	double lrun, lpair;
	/* Spot prices across regions: each region's log price less the mean
	 * of all regions' this tick (x), the last tick's, and the decayed
	 * sums of x(t) x(t-1) and x(t-1)^2 that estimate how much of a price
	 * gap is left a tick later (price_persist()). */
	double xlast[SIM_MAX_REGIONS], xx, xl;
	uint8_t any_last, seen;
	double unit_s;
	int planned;
	uint8_t plan_any; /* spell type when the plan was made */
	uint8_t no_guard; /* the guard could not run (memory): UP's rule */
	/* The prior as pseudo-counts on the plan's age buckets, in ticks:
	 * [0] outages, [1] runs (policy_prior_buckets()); and with
	 * SIM_PAIRS_AUTO the prior's pair changes by o (qe, qx), or the run
	 * prior's where it has none. */
	double pe[2][PLAN_AGES], px[2][PLAN_AGES];
	double qe[2][PLAN_AGES], qx[2][PLAN_AGES];
	struct plan plan;
	struct up_state up; /* Uniform Progress's own state */
};

static void spotrun_reset(void *state, const struct policy_job *job)
{
	struct spotrun_state *s = state;
	const struct policy_prior *prior = job->prior ? job->prior : &policy_prior_bundled;

	s->unit_s = policy__plan_unit(job);
	for (int k = 0; k < 2; k++)
		policy_prior_buckets(prior, k, s->unit_s, job->gap_s, PRIOR_WEIGHT,
				     s->pe[k], s->px[k]);
	for (int o = 0; o < 2; o++) {
		double sum = 0;

		policy_prior_buckets(prior, PRIOR_PAIR + o, s->unit_s, job->gap_s,
				     PRIOR_WEIGHT, s->qe[o], s->qx[o]);
		for (int b = 0; b < PLAN_AGES; b++)
			sum += s->qe[o][b];
		if (sum <= 0) { /* a prior fitted on single zones only */
			memcpy(s->qe[o], s->pe[1], sizeof s->qe[o]);
			memcpy(s->qx[o], s->px[1], sizeof s->qx[o]);
		}
	}
	policy__up_reset(&s->up, job);
	s->pair = job->nregions > 1 ? job->zone_pairs : SIM_PAIRS_OFF;
}

static void spotrun_destroy(void *state)
{
	struct spotrun_state *s = state;

	policy__plan_free(&s->plan);
}

/* The pair model's estimates (pair_fit()): with SIM_PAIRS_ON, the
 * pseudo-exposure that, with the prior's pe[1][b] pseudo-changes, puts
 * the change rate of pair age bucket b for one o at the rate pooled over
 * o (SIM_PAIRS_AUTO shrinks toward the prior's pair changes); and the share
 * of the changes from o that went as outcome i (PAIR_*), shrunk toward
 * the share pooled over o with PAIR_OUT_WEIGHT pseudo-changes. */
static double pair_px(const struct spotrun_state *s, int b)
{
	double n = s->pchg[0][b] + s->pchg[1][b] + s->pe[1][b];
	double x = s->pexpo[0][b] + s->pexpo[1][b] + s->px[1][b];
	double rate = x > 0 ? n / x : 0.5;

	return rate > 0 ? s->pe[1][b] / rate : 0;
}

static double pair_share(const struct spotrun_state *s, int o, int i)
{
	double n = 0, nt = 0;

	for (int j = 0; j < 3; j++) {
		n += s->pcnt[o][j];
		nt += s->pcnt[0][j] + s->pcnt[1][j];
	}
	return (s->pcnt[o][i] + PAIR_OUT_WEIGHT * (s->pcnt[0][i] + s->pcnt[1][i] + 1.0 / 3) /
				(nt + 1)) / (n + PAIR_OUT_WEIGHT);
}

/* log p of a 0/1 outcome predicted with probability p, p kept off 0 and 1. */
static double log_score(double p, int hit)
{
	p = p < 1e-6 ? 1e-6 : p > 1 - 1e-6 ? 1 - 1e-6 : p;
	return log(hit ? p : 1 - p);
}

/* Score one tick of a region run (run age bucket b, o a tick before, pair
 * age bucket pb) that ended or not, under both models as estimated from
 * the counts so far, per tick: the run model's end rate at b, and the
 * pair model's change rate at (o, pb) times its share of changes that
 * end the run.  Only the run's end is scored: the loss of a held
 * instance is what the plan pays for.  Each rate is shrunk toward a
 * prior fitted on other markets, worth PRIOR_WEIGHT spell ends: the run
 * model's toward the prior's run ends (pe, px), the pair model's toward
 * its pair changes by o (qe, qx), as pair_fit() plans with them under
 * SIM_PAIRS_AUTO.  Not toward the market's own pooled rate: a prior
 * fitted to the market would win the score on a history of one-tick
 * blips whatever the zones' structure (session 17); nor toward the run
 * ends' prior, a different quantity that the pair changes run 1.2-2.8x
 * at young ages (session 19, docs/notes/policies.md).  The caller scores
 * only ticks after a run's first: a run that ends after one tick says
 * nothing about whether the zones fail together (session 19).  Whether a
 * tick is left out is known before its outcome (the run's age), so both
 * scores stay proper; the counts take every tick. */
static void score_end(struct spotrun_state *s, int b, int o, int pb, int ended)
{
	double prun = (s->rends[b] + s->pe[1][b]) / (s->rexpo[b] + s->px[1][b] + 1e-12);
	double chg = (s->pchg[o][pb] + s->qe[o][pb]) / (s->pexpo[o][pb] + s->qx[o][pb] + 1e-12);

	s->lrun += log_score(prun, ended);
	s->lpair += log_score((chg > 1 ? 1 : chg) * (1 - pair_share(s, o, PAIR_FLIP)), ended);
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
		for (int b = 0; b < PLAN_AGES; b++) {
			g->rx[b] *= f;
			g->re[b] *= f;
		}
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
			s->xx *= f;
			s->xl *= f;
			s->outs *= f;
			s->oother *= f;
			for (int o = 0; o < 2; o++) {
				for (int b = 0; b < PLAN_AGES; b++) {
					s->pexpo[o][b] *= f;
					s->pchg[o][b] *= f;
				}
				for (int i = 0; i < 3; i++)
					s->pcnt[o][i] *= f;
			}
		}
		if (s->seen && g->last) {
			int b = policy__plan_age(g->age_s, s->unit_s);
			int o = nwas - 1 > 0; /* another up a tick before */

			/* A run's first tick is not scored (score_end()). */
			if (s->pair == SIM_PAIRS_AUTO && g->age_s >= (double)job->gap_s)
				score_end(s, b, o, policy__plan_age(g->pair_s, s->unit_s),
					  !avail[r]);
			s->rexpo[b]++;
			g->rx[b]++;
			if (!avail[r]) {
				s->rends[b]++;
				g->re[b]++;
			}
			if (avail[r]) {
				s->oexpo[o]++;
				if ((nup - 1 > 0) != o)
					s->oflip[o]++;
			} else {
				s->oends[o]++;
				if (!any)
					s->oout[o]++;
			}
			{
				int pb = policy__plan_age(g->pair_s, s->unit_s);
				int on = nup - (avail[r] ? 1 : 0) > 0;

				s->pexpo[o][pb]++;
				if (!avail[r] || on != o) {
					s->pchg[o][pb]++;
					s->pcnt[o][avail[r] ? PAIR_FLIP : any ? PAIR_LAND : PAIR_OUT]++;
				}
			}
		}
		if (s->seen && g->last && avail[r] && (nwas - 1 > 0) == (nup - 1 > 0))
			g->pair_s += (double)job->gap_s;
		else
			g->pair_s = 0;
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
	if (job->nregions > 1) {
		double mean = 0;
		int ok = 1;

		for (int r = 0; r < job->nregions; r++) {
			ok &= price[r] > 0;
			mean += ok ? log(price[r]) / job->nregions : 0;
		}
		for (int r = 0; r < job->nregions && ok; r++) {
			double x = log(price[r]) - mean;

			if (s->seen) {
				s->xx += x * s->xlast[r];
				s->xl += s->xlast[r] * s->xlast[r];
			}
			s->xlast[r] = x;
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

/* The pooled per-tick end rate of a region's run in age bucket b: the
 * runs' ends over their exposure, with the prior's pseudo-counts. */
static double pooled_hazard(const struct spotrun_state *s, int b)
{
	double x = s->rexpo[b] + s->px[1][b];

	return x > 0 ? (s->rends[b] + s->pe[1][b]) / x : 0.5;
}

/* How often region r's runs end against the pooled hazard, for young
 * runs (yo = 1: under 2 steps old, the age buckets the guard's
 * GRP_RUN_YOUNG moves) or old ones (yo = 0): the region's ends at those
 * ages over the ends the pooled hazard expects in its runs' exposure
 * there, both with one pseudo-end (the posterior mean of a Gamma(1, 1)
 * multiplier: 1 where the region has shown nothing, its own rate as its
 * ends mount, as run_mean_s()'s one pseudo-run); *sd: that posterior's
 * standard deviation.  Moves between regions price each run by it, so a
 * cheaper region whose runs end more often is not taken for as steady as
 * the rest, and a move is made only where it pays with that uncertainty
 * (move_margin()). */
static double region_hazard(const struct spotrun_state *s, int r, int yo, double *sd)
{
	double expect = 0, n = 1;

	for (int b = yo ? 0 : 2; b < (yo ? 2 : PLAN_AGES); b++) {
		expect += s->reg[r].rx[b] * pooled_hazard(s, b);
		n += s->reg[r].re[b];
	}
	*sd = sqrt(n) / (expect + 1);
	return n / (expect + 1);
}

/* Expected remaining length (s) of one region's spot run that has lasted
 * age_s, from the per-tick end rates of region runs by age bucket, pooled
 * over regions and scaled by th[1] under 2 steps of age, th[0] above (1:
 * the pooled runs; region_hazard()): piecewise-constant hazard th h_b
 * over the bucket's width. */
static double run_left_s(const struct spotrun_state *s,
			 const struct policy_job *job, double age_s, const double th[2])
{
	static const double lo[PLAN_AGES] = { 0, 1, 2, 4, 8, 16 };
	double gap = (double)job->gap_s, e = 0;
	int b0 = policy__plan_age(age_s, s->unit_s);

	for (int b = PLAN_AGES - 1; b >= b0; b--) {
		double h = th[b < 2] * pooled_hazard(s, b), L, q;

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

/* The share of a price gap between regions left a tick later: the
 * regression through 0 of each region's log price, less the mean over
 * regions, on its value a tick before (0..1); 1 where prices have not
 * moved apart (a gap between constant prices stays). */
static double price_persist(const struct spotrun_state *s)
{
	double phi = s->xl > 1e-12 ? s->xx / s->xl : 1;

	return phi < 0 ? 0 : phi > 1 ? 1 : phi;
}

/* Restart-amortised $/h of spot in region r at price p, egress included. */
static double eff_price(const struct spotrun_state *s,
			const struct policy_job *job, int ckpt_region, int r,
			double p, int by_age)
{
	static const double one[2] = { 1, 1 };
	double mu_s = by_age && job->nregions > 1 ?
		      run_left_s(s, job, s->reg[r].age_s, one) : run_mean_s(s, job, r);
	double mu_h = mu_s / 3600.0;
	double e = p * (1 + job->restart_s / 3600.0 / mu_h);

	if (ckpt_region >= 0 && ckpt_region != r)
		e += job->egress_usd / mu_h;
	return e;
}

/* Per-step end probability from per-tick counts: the ends and ticks of
 * exposure observed plus the prior's pseudo-counts (pe, px) - the mean
 * of a Gamma posterior on the per-tick rate, so the prior weighs as much
 * as its pseudo-ends against the ends seen - or that mean moved z
 * posterior standard errors up. */
static double per_step(double ends, double expo, double pe, double px,
		       double ticks, double z)
{
	double n = ends + pe, x = expo + px, lam;

	if (x <= 0)
		return 0.5; /* no prior and nothing seen */
	lam = (n + z * sqrt(n)) / x;
	lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;
	return 1 - pow(1 - lam, ticks);
}

/* Standard errors group g moves estimate (kind k: 1 runs, 0 outages; age
 * bucket b) by. */
static double z_of(int g, int k, int b)
{
	int young = b < 2;

	if (k)
		return g == (young ? GRP_RUN_YOUNG : GRP_RUN_OLD) ? 1 : 0;
	return g == (young ? GRP_OUT_YOUNG : GRP_OUT_OLD) ? 1 : 0;
}

/* The pair model (plan_model.pair): the change rate of the pair (a
 * region's run, o) by o and pair age, each (o, age) shrunk toward the
 * rate at that age pooled over o, with the prior's weight in that
 * bucket; the pooled rate itself carries the prior of runs.  With
 * SIM_PAIRS_AUTO each (o, age) is shrunk instead toward the prior's pair
 * changes at that o and age (qe, qx: fitted on other markets, worth
 * PRIOR_WEIGHT changes for each o), as score_end() scores it.  The
 * outcomes of a change by o shrunk toward those pooled over o with
 * PAIR_OUT_WEIGHT pseudo-changes.  The rates move with guard group g
 * as the region-run rates do, the outage share with GRP_RHO. */
static void pair_fit(const struct spotrun_state *s, int g, double ticks,
		     struct plan_model *m)
{
	m->pair = 1;
	for (int b = 0; b < PLAN_AGES; b++) {
		for (int o = 0; o < 2; o++)
			m->chg[o][b] = s->pair == SIM_PAIRS_AUTO ?
				       per_step(s->pchg[o][b], s->pexpo[o][b], s->qe[o][b],
						s->qx[o][b], ticks, z_of(g, 1, b)) :
				       per_step(s->pchg[o][b], s->pexpo[o][b], s->pe[1][b],
						pair_px(s, b), ticks, z_of(g, 1, b));
	}
	for (int o = 0; o < 2; o++) {
		double n = 0, q[3], w = PAIR_OUT_WEIGHT;

		for (int i = 0; i < 3; i++) {
			n += s->pcnt[o][i];
			q[i] = pair_share(s, o, i);
		}
		if (g == GRP_RHO) { /* one standard error more outages */
			double d = sqrt(q[PAIR_OUT] * (1 - q[PAIR_OUT]) / (n + w + 1));
			double up = q[PAIR_OUT] + d > 1 ? 1 : q[PAIR_OUT] + d;
			double rest = 1 - q[PAIR_OUT];

			for (int i = 0; i < 3; i++)
				q[i] = i == PAIR_OUT ? up : rest > 0 ? q[i] * (1 - up) / rest : 0;
		}
		for (int i = 0; i < 3; i++)
			m->pout[o][i] = q[i];
	}
}

/* Does the plan use the pair model?  Always (SIM_PAIRS_ON), never
 * (SIM_PAIRS_OFF, or one region), or where the market's own runs have
 * shown it predicts their ends better than the run model by more than
 * PAIR_EVIDENCE (SIM_PAIRS_AUTO): with nothing seen the scores tie and
 * the simpler run model stays. */
static int pair_chosen(const struct spotrun_state *s)
{
	if (s->pair == SIM_PAIRS_AUTO)
		return s->lpair - s->lrun > PAIR_EVIDENCE;
	return s->pair == SIM_PAIRS_ON;
}

/* The market as estimated (g = GRP_NONE), or with the estimates of guard
 * group g moved one standard error up. */
static void model_fit(struct spotrun_state *s, const struct policy_job *job,
		      int g, struct plan_model *out)
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
		for (int b = 0; b < PLAN_AGES; b++) {
			double p = per_step(s->ends[k][b], s->expo[k][b], s->pe[k][b],
					    s->px[k][b], ticks, z_of(g, k, b));

			if (k)
				m.end_up[b] = p;
			else
				m.end_down[b] = p;
		}
	}
	{
		double h = s->reg[best].hops, lam = h / (s->reg[best].up + 1);

		m.hop = 1 - pow(1 - (lam > 1 ? 1 : lam), ticks);
	}
	/* Several regions: the plan prices a held or started instance by its
	 * region run's age (policy_spotrun_plan.c), from the pooled
	 * region-run counts of the region choice and the prior of runs. */
	if (job->nregions > 1) {
		double hl = 0;

		m.multi = 1;
		for (int b = 0; b < PLAN_AGES; b++) {
			hl += s->hland[b];
			m.loss[b] = per_step(s->rends[b], s->rexpo[b], s->pe[1][b],
					     s->px[1][b], ticks, z_of(g, 1, b));
		}
		/* By o, another region up besides the run: a run end with none
		 * other up is an outage unless another comes up at once, one
		 * with another up only if both end together; while the run
		 * goes on, o flips at the hop rate's convention (events over
		 * exposure + 1). */
		for (int o = 0; o < 2; o++) {
			double lam = s->oflip[o] / (s->oexpo[o] + 1), n = s->oends[o] + 2;
			double rho = (s->oout[o] + 1) / n;

			if (g == GRP_RHO)
				rho += sqrt(rho * (1 - rho) / (n + 1));
			m.rho[o] = rho > 1 ? 1 : rho;
			m.flip[o] = 1 - pow(1 - (lam > 1 ? 1 : lam), ticks);
		}
		for (int b = 0; b < PLAN_AGES; b++)
			m.land[b] = (s->hland[b] + 1.0 / PLAN_AGES) / (hl + 1);
		m.land_other = (s->lother + 0.5) / (hl + 1);
		m.out_other = (s->oother + 0.5) / (s->outs + 1);
		if (pair_chosen(s))
			pair_fit(s, g, ticks, &m);
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
	if (now->pair != was->pair || moved(now->hop, was->hop) ||
	    moved(now->spot_price, was->spot_price))
		return 1;
	for (int b = 0; b < PLAN_AGES; b++) {
		if (now->multi && moved(now->loss[b], was->loss[b]))
			return 1;
		if (now->pair && (moved(now->chg[0][b], was->chg[0][b]) ||
				  moved(now->chg[1][b], was->chg[1][b])))
			return 1;
		if (moved(now->end_up[b], was->end_up[b]) ||
		    moved(now->end_down[b], was->end_down[b]))
			return 1;
	}
	return 0;
}

/* The plan for the present state, and the guard over it: the plan is
 * followed only in states where its advantage over Uniform Progress
 * holds by GUARD_Z standard errors of the evidence behind it
 * (policy__plan_guard()).  Returns 0 or -ENOMEM. */
static int replan(struct spotrun_state *s, const struct policy_job *job,
		  const struct policy_obs *o, const struct plan_model *m)
{
	struct plan_model alt[NGRP];
	int n = job->nregions > 1 ? NGRP : GRP_RHO;

	policy__plan_free(&s->plan);
	s->planned = 0;
	if (policy__plan_build(&s->plan, m, s->unit_s, o->work_left_s,
			       o->time_left_s - o->work_left_s))
		return -ENOMEM;
	s->planned = 1;
	for (int g = 0; g < n; g++)
		model_fit(s, job, g, &alt[g]);
	s->no_guard = policy__plan_guard(&s->plan, job, alt, n, GUARD_Z) != 0;
	return 0;
}

/* The plan's age index of a spot run in region r, as spotrun_decide()
 * reads the plan: the run's age (or its pair's), + PLAN_AGES if another
 * region is up besides it. */
static int run_index(const struct spotrun_state *s, const struct policy_job *job,
		     const struct policy_obs *o, int r)
{
	int b = policy__plan_age(s->plan.m.pair ? s->reg[r].pair_s : s->reg[r].age_s,
				 s->unit_s);

	for (int q = 0; q < job->nregions; q++) {
		if (q != r && o->avail[q])
			return b + PLAN_AGES;
	}
	return b;
}

/* What moving a spot instance running in region o->region to region
 * `to` this tick is worth, $ (> 0: the move pays), with the new region's
 * runs ending th_to times as often as the pooled runs and the held
 * region's th_a times ([1] young runs, [0] old: region_hazard()).  Over
 * a horizon H - while both the new region's run and the held one are
 * expected to last (run_left_s(); once the held run would have ended,
 * staying would have moved too) and work is left - the move gains the
 * price gap, which shrinks by price_persist() a tick, and costs its
 * restarts: the one it makes now and H / (the new run's expected life)
 * later, against H / (the held run's) if it stays.  A restart costs R
 * paid at the new price and the slack it uses, priced by the plan (its
 * expected cost with R less slack, holding spot in the new region's
 * run); the move also pays the egress.  -INFINITY where the plan cannot
 * price it. */
static double move_value(const struct spotrun_state *s, const struct policy_job *job,
			 const struct policy_obs *o, int to, const double th_to[2],
			 const double th_a[2])
{
	int a = o->region, b = run_index(s, job, o, to);
	double gap = o->spot_price[a] - o->spot_price[to];
	double slack = o->time_left_s - o->work_left_s;
	double left = run_left_s(s, job, s->reg[to].age_s, th_to);
	double held = run_left_s(s, job, s->reg[a].age_s, th_a);
	double h_s = fmin(left * held / (left + held), o->work_left_s);
	double ticks = h_s / (double)job->gap_s;
	double phi = price_persist(s), persist_h, restarts, cost, v0, v1;

	persist_h = (double)job->gap_s / 3600.0 *
		    (phi < 1 ? (1 - pow(phi, ticks)) / (1 - phi) : ticks);
	v0 = policy__plan_value(&s->plan, o->work_left_s, slack, SIM_SPOT, 1, b);
	v1 = policy__plan_value(&s->plan, o->work_left_s, slack - job->restart_s,
				SIM_SPOT, 1, b);
	if (!isfinite(v0) || !isfinite(v1))
		return -INFINITY;
	restarts = 1 + h_s / left - h_s / held;
	cost = (restarts > 0 ? restarts : 0) *
	       (job->restart_s / 3600.0 * o->spot_price[to] + (v1 > v0 ? v1 - v0 : 0));
	if (o->ckpt_region >= 0 && o->ckpt_region != to)
		cost += job->egress_usd;
	return gap * persist_h - cost;
}

/* A move's worth less GUARD_Z standard errors of it, as the guard
 * follows the plan: the worth at the two regions' hazard multipliers
 * (region_hazard(), young and old runs), its standard error from the
 * change when each multiplier moves one posterior standard deviation
 * the way that makes the move worth less (the new region's runs ending
 * more often, the held one's less; independent estimates: the changes'
 * root sum of squares). */
static double move_margin(const struct spotrun_state *s, const struct policy_job *job,
			  const struct policy_obs *o, int to)
{
	double th[2][2], sd[2][2], v, var = 0;

	for (int y = 0; y < 2; y++) {
		th[0][y] = region_hazard(s, to, y, &sd[0][y]);
		th[1][y] = region_hazard(s, o->region, y, &sd[1][y]);
	}
	v = move_value(s, job, o, to, th[0], th[1]);
	if (!isfinite(v))
		return v;
	for (int k = 0; k < 2; k++) {
		for (int y = 0; y < 2; y++) {
			double t[2][2] = { { th[0][0], th[0][1] }, { th[1][0], th[1][1] } }, d;

			t[k][y] = k ? fmax(t[k][y] - sd[k][y], 0) : t[k][y] + sd[k][y];
			d = move_value(s, job, o, to, t[0], t[1]) - v;
			var += d * d;
		}
	}
	return v - GUARD_Z * sqrt(var);
}

/* Where a spot instance running in region o->region should run this
 * tick: there, or the cheaper region up whose move has the largest
 * margin (move_margin()) if that is above 0 and the deadline guard lets
 * the move stand. */
static int move_region(const struct spotrun_state *s, const struct policy_job *job,
		       const struct policy_obs *o)
{
	int a = o->region, to = a;
	double best = 0;

	if (!s->planned || s->no_guard)
		return a;
	for (int r = 0; r < job->nregions; r++) {
		double m;

		if (r == a || !o->avail[r] || !(o->spot_price[r] < o->spot_price[a]))
			continue;
		m = move_margin(s, job, o, r);
		if (m > best &&
		    policy_guard(job, o, (struct policy_choice){ SIM_SPOT, r }).hold == SIM_SPOT) {
			best = m;
			to = r;
		}
	}
	return to;
}

/* The choice before a move (move_region()): the plan's where the guard
 * lets it stand, else UP's rule with failover. */
static struct policy_choice decide(struct spotrun_state *s,
				   const struct policy_job *job,
				   const struct policy_obs *o)
{
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
	/* (Re)plan at the start, and when an outage begins or ends if the
	 * estimates have moved since the plan was made; and with
	 * SIM_PAIRS_AUTO when the model the scores favour (pair_chosen()) is
	 * no longer the plan's: a plan made under the pair model while it led
	 * was kept after the scores turned, for as long as spot stayed up
	 * somewhere (session 25, docs/notes/policies.md). */
	if (!s->planned || s->plan_any != s->any_last ||
	    (s->pair == SIM_PAIRS_AUTO && pair_chosen(s) != s->plan.m.pair)) {
		struct plan_model m;

		model_fit(s, job, GRP_NONE, &m);
		s->plan_any = s->any_last;
		if ((!s->planned || model_moved(&m, &s->plan.m)) && replan(s, job, o, &m))
			return od; /* out of memory: the safe choice */
	}
	/* The plan's age index: the spot-somewhere spell's, or with several
	 * regions and spot up, the run's held or to be started (run_index()). */
	b = job->nregions > 1 && best >= 0 ? run_index(s, job, o, best) :
	    policy__plan_age(s->age_s, s->unit_s);
	if (s->no_guard ||
	    !policy__plan_follows(&s->plan, o->work_left_s, o->time_left_s - o->work_left_s,
				  o->hold, best >= 0, b)) /* UP with failover: `ups` */
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

/* The choice, with a running spot instance moved where that pays
 * (move_region()). */
static struct policy_choice spotrun_decide(void *state, const struct policy_job *job,
					   const struct policy_obs *o)
{
	struct spotrun_state *s = state;
	struct policy_choice c = decide(s, job, o);

	if (job->nregions > 1 && c.hold == SIM_SPOT && o->hold == SIM_SPOT &&
	    c.region == o->region)
		c.region = move_region(s, job, o);
	return c;
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
