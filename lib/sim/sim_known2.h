/*
 * sim_known2.h - the best online policy on a two-zone renewal market
 * whose law is known (sim_known2.c; bench/bench_policy_bound2.c).
 */
#ifndef SR_SIM_SIM_KNOWN2_H
#define SR_SIM_SIM_KNOWN2_H

#include <stddef.h>
#include <stdint.h>

/* Ages counted in whole steps: 0 .. ages-2, then ages-1 for every older one. */
#define KNOWN2_AGES_MAX 192

/* What is held, and the choices: nothing, on-demand, spot in zone 0 or 1. */
enum known2_hold { KNOWN2_NONE, KNOWN2_OD, KNOWN2_SPOT0, KNOWN2_SPOT1, KNOWN2_HOLDS };

struct known2_model {
	int ages;                /* 2 .. KNOWN2_AGES_MAX */
	/* end[z][k][a]: P(a spell of zone z, outage (k = 0) or run (k = 1),
	 * of age a steps ends within the next step), a < ages; borrowed, alive
	 * while the table is built. */
	const double *end[2][2];
	double spot_price[2], od_price; /* $/h */
	double step_s;           /* one step = one tick = the restart R */
	/* Or one joint spell (joint = 1): the market is in state j (bit z set
	 * = zone z up) for a spell whose end, and the state after it, depend
	 * on j and the spell's age only.  jend[j * ages + a] = P(it ends
	 * within a step); jnext[(j * ages + a) * 4 + j2] = P(state j2 next |
	 * it ends then).  Borrowed like end, which joint mode ignores. */
	int joint;
	const double *jend, *jnext;
	int idle_when_up;        /* 1: waiting is a choice in every state; 0: only
				  * with spot down in both zones (the single-region
				  * plan's rule, for the unit test) */
};

struct sim_known2 {
	struct known2_model m;
	size_t nc, ns;  /* work steps 1..nc, slack steps 0..ns */
	size_t nm;      /* market states: (2 * ages)^2, or 4 * ages if joint */
	uint8_t *act;   /* [c-1][s][hold][market]: the best choice, 2 bits each */
	double *top;    /* [s][hold][market]: the expected cost at c = nc */
};

/* Solve the table for work_s of work and slack_s of slack (both whole
 * multiples of step_s after rounding: work up, slack down).  Returns 0,
 * -ENOMEM, or -EINVAL for a model out of range; k (which must not hold
 * a table already) owns its tables (sim_known2_free, NULL-safe). */
int sim_known2_build(struct sim_known2 *k, const struct known2_model *m,
		     double work_s, double slack_s);
void sim_known2_free(struct sim_known2 *k);

/* The market state of zones with spot up[z] (0/1) in a spell of age[z]
 * steps (capped at ages - 1). */
size_t sim_known2_market(const struct sim_known2 *k, const int up[2], const int age[2]);

/* The market state of a joint spell j (bit z = zone z up) aged age steps. */
size_t sim_known2_market_joint(const struct sim_known2 *k, int j, int age);

/* The best choice (enum known2_hold) with c work steps (1..nc) and s slack
 * steps (0..ns) left, holding h, in market state mk. */
int sim_known2_choose(const struct sim_known2 *k, size_t c, size_t s, int h, size_t mk);

/* The expected cost of the best policy from c = nc, s slack steps, held
 * h, market state mk (INFINITY if the deadline cannot be made sure). */
double sim_known2_value(const struct sim_known2 *k, size_t s, int h, size_t mk);

#endif
