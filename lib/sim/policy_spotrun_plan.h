/*
 * policy_spotrun_plan.h - internal: the plan behind `spotrun`, a finite
 * Markov decision process solved by one backward pass
 * (policy_spotrun_plan.c).
 */
#ifndef SR_SIM_POLICY_SPOTRUN_PLAN_H
#define SR_SIM_POLICY_SPOTRUN_PLAN_H

#include <stddef.h>

#include "sim/policy.h"

/* The market as the policy has estimated it, per planning step. */
struct plan_model {
	double unit_s;     /* planning step, seconds (>= gap_s) */
	double gap_s;      /* the tick the probabilities below are per */
	double p_fail;     /* P(the spot instance held is lost within a tick) */
	double p_outage;   /* P(spot in no region next tick | some now) */
	double p_recover;  /* P(spot somewhere next tick | none now) */
	double spot_price, od_price; /* $/h */
	double restart_s;
};

struct plan {
	struct plan_model m;
	size_t nc, ns;     /* work steps 0..nc, slack steps 0..ns */
	double K;          /* restart in steps (fractional) */
	double *v;         /* [5][nc+1][ns+1]: see the .c file */
};

/* Build the plan for up to work_s of work and slack_s of slack; the step
 * grows from unit_s as needed to keep the table bounded, and the per-tick
 * probabilities become per-step ones.  Returns
 * 0 or -ENOMEM; the plan owns its table (plan_free). */
int policy__plan_build(struct plan *pl, const struct plan_model *m,
		       double work_s, double slack_s);
void policy__plan_free(struct plan *pl);

/* The step choice for work C and slack S left, holding h, spot available
 * somewhere now (a): SIM_NONE, SIM_OD or SIM_SPOT. */
enum sim_hold policy__plan_choose(const struct plan *pl, double C, double S,
				  enum sim_hold h, int a);

#endif
