/*
 * policy_spotrun_plan.h - internal: the plan behind `spotrun`, a finite
 * semi-Markov decision process solved by one backward pass
 * (policy_spotrun_plan.c).
 */
#ifndef SR_SIM_POLICY_SPOTRUN_PLAN_H
#define SR_SIM_POLICY_SPOTRUN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "sim/policy.h"

/* Spell ages are bucketed on a doubling scale of planning steps:
 * [0,1) [1,2) [2,4) [4,8) [8,16) [16,inf). */
#define PLAN_AGES 6
/* Or counted in whole steps, 0 .. n-2 and then n-1 for every older age
 * (plan_model.exact_ages = n): for a market whose spell lengths are
 * known exactly (bench/bench_policy_bound.c). */
#define PLAN_AGES_MAX 192

/* The market as the policy has estimated it, per planning step. */
struct plan_model {
	double end_up[PLAN_AGES];   /* P(spot-somewhere spell ends within a step | age) */
	double end_down[PLAN_AGES]; /* P(outage ends within a step | age) */
	/* Exact ages: exact_ages = n in 2..PLAN_AGES_MAX, and the end
	 * probabilities by age in steps are read from exact_up/_down[0..n-1]
	 * (owned by the caller, alive while the plan is) instead of the
	 * arrays above.  0 and NULL for the doubling buckets. */
	int exact_ages;
	const double *exact_up, *exact_down;
	int exact_restart;          /* 1: a start is one step without work while the
				     * market moves on (needs R = one step) */
	int idle_up;                /* 1: waiting is a choice with spot up too (the
				     * exact-law reference of bench_policy_bound,
				     * one region); 0: only in an outage, the
				     * policy's rule (policy_spotrun_plan.c) */
	double hop;                 /* P(held instance lost within a step while spot
				     * stays up elsewhere) */
	double spot_price, od_price; /* $/h */
	double restart_s;
	/* Several regions (multi = 1): with spot up, the age index is that of
	 * a region run - the held one, or the one a start would land in - and
	 * these replace end_up and hop (policy_spotrun_plan.c). */
	int multi;
	double loss[PLAN_AGES]; /* P(that region run ends within a step | age) */
	double land[PLAN_AGES]; /* P(age bucket of the run a start would land in,
				 * just after a run ended with spot up elsewhere) */
	/* The index also says whether another region besides that run is up
	 * (o = 1) or not (o = 0): index = age + PLAN_AGES * o. */
	double rho[2];     /* P(no spot anywhere | that run ended, o a step before) */
	double flip[2];    /* P(o changes within a step | o, the run goes on) */
	double land_other; /* P(o = 1 for the run landed in after a run end) */
	double out_other;  /* P(o = 1 for the run an outage ends in) */
	/* Which regions are up together (pair = 1, with multi): the age in
	 * the index is then that of the pair (the run, o) - the time since
	 * the run started or o last changed - and the pair's end replaces
	 * loss, rho, flip and land: it changes with chg[o][age], and then
	 * the run goes on with o flipped (pout[o][PAIR_FLIP]), ends with
	 * spot up elsewhere (PAIR_LAND: the run landed in at pair age 0, o
	 * = 1 with land_other), or ends with no spot anywhere (PAIR_OUT). */
	int pair;
	double chg[2][PLAN_AGES];
	double pout[2][3];
};

enum { PAIR_FLIP, PAIR_LAND, PAIR_OUT };

#define PLAN_ACT_MASK 0x03
#define PLAN_ACT_UP 0x80

struct plan {
	struct plan_model m;
	double unit_s;     /* planning step, seconds */
	size_t nc, ns;     /* work steps 0..nc, slack steps 0..ns */
	int na;            /* age indices: PLAN_AGES, m.exact_ages, or with
			    * m.multi 2 x PLAN_AGES (age and o) */
	double K;          /* restart in steps (fractional) */
	double *v;         /* see the .c file */
	uint8_t *act;      /* the choice behind each cell of v (PLAN_ACT_MASK),
			    * and PLAN_ACT_UP where the guard chose UP */
};

/* The planning step for a job: at least one tick, and coarse enough to
 * keep the table bounded.  Known from the job alone, so the estimator can
 * bucket ages in it from the first tick. */
double policy__plan_unit(const struct policy_job *job);

/* Age bucket of a spell that has lasted age_s seconds: on the doubling
 * scale (exact = 0), or in whole steps capped at exact - 1. */
int policy__plan_age(double age_s, double unit_s);
int policy__plan_age_exact(double age_s, double unit_s, int exact);

/* Build the plan for work_s of work and slack_s of slack.  Returns 0,
 * -ENOMEM, or -EINVAL if m->exact_ages is not 0 or 2..PLAN_AGES_MAX,
 * m->exact_restart is set and R is not one step, or m->multi is set with
 * exact ages (region runs use the doubling buckets) or idle_up; the plan owns its table
 * (plan_free, NULL-safe). */
int policy__plan_build(struct plan *pl, const struct plan_model *m,
		       double unit_s, double work_s, double slack_s);
void policy__plan_free(struct plan *pl);

/* Rules policy__plan_eval() can score. */
enum plan_rule {
	PLAN_RULE_PLAN, /* the plan's own choice (its argmin) */
	PLAN_RULE_UP,   /* Uniform Progress (policy_up.c) on the plan's state */
};

/* Expected cost of following `rule` from work C and slack S left (held h,
 * spot up a, age bucket b) when the market behaves as m_eval says rather
 * than as the plan's own model: one more backward pass over the plan's
 * grid with the action fixed by the rule (a choice that could miss the
 * deadline becomes on-demand, as policy_guard() does).  *value = INFINITY
 * if even that cannot finish.  Returns 0 or -ENOMEM. */
int policy__plan_eval(const struct plan *pl, const struct plan_model *m_eval,
		      const struct policy_job *job, enum plan_rule rule,
		      double C, double S, enum sim_hold h, int a, int b,
		      double *value);

/* The dominance guard.  Scores the plan's own choices and Uniform
 * Progress's rules in every state under the plan's model, and again
 * under each of the nalt models in alt (the same estimates with one
 * group of them moved by one standard error of the evidence behind
 * them), and marks the states where the plan's advantage over UP,
 * V_up - V_plan, is below z times its standard error (the changes in
 * that advantage under the alt models, added in quadrature: the delta
 * method).  There policy__plan_follows() says no, and the caller runs
 * UP's rule.  Returns 0 or -ENOMEM (then nothing is marked). */
int policy__plan_guard(struct plan *pl, const struct policy_job *job,
		       const struct plan_model *alt, int nalt, double z);

/* Does the guard let the plan's choice stand in this state (the cell
 * policy__plan_choose() reads)?  1 where no guard was run. */
int policy__plan_follows(const struct plan *pl, double C, double S,
			 enum sim_hold h, int a, int b);

/* The plan's expected cost to finish from work C and slack S left
 * (held h, spot up a, age bucket b as for policy__plan_choose()), read
 * from its table (work rounded up, slack down); 0 if C <= 0, INFINITY if
 * S < 0 or there is no table. */
double policy__plan_value(const struct plan *pl, double C, double S,
			  enum sim_hold h, int a, int b);

/* The step choice for work C and slack S left, holding h, spot available
 * somewhere now (a) in a spell of age bucket b (with m.multi and a = 1:
 * the region run's bucket + PLAN_AGES if another region is up besides
 * it): SIM_NONE, SIM_OD or SIM_SPOT. */
enum sim_hold policy__plan_choose(const struct plan *pl, double C, double S,
				  enum sim_hold h, int a, int b);

#endif
