/*
 * policy_spotrun_plan.c - the plan behind `spotrun`.
 *
 * A certainty-equivalent Markov decision process: the market is modelled
 * as a two-state chain (spot available somewhere / nowhere) with the
 * transition probabilities the policy has observed, plus the chance that
 * the held spot instance is lost while other regions still have spot (a
 * region hop).  Time is cut into planning steps of unit_s seconds.
 *
 * State (c, s, h, a): c = work steps left, s = slack steps left (time left
 * minus work left), h = held (none / on-demand / spot), a = spot available
 * now.  Time left is c + s, so the process is stationary and one pass in
 * increasing (c, s) order solves it exactly; no value iteration.
 *
 *   idle        (c, s-1, none)                                cost 0
 *   on-demand   keep: (c-1, s, od)                             od * unit
 *               start: (c-1, s-K, od)                          od * (R + unit)
 *   spot (a=1)  keep: (c-1, s, spot), lost w.p. p_fail         spot * unit
 *               start: (c-1, s-K, spot)                        spot * (R + unit)
 *
 * with K = R / unit (fractional: V is interpolated linearly in s), the
 * next a drawn from the chain, and a lost spot instance landing in
 * (none, a = 1) if the loss was a region hop (another region still has
 * spot) or (none, a = 0) if it was an outage.  V(0, .) = 0; s < 0 is
 * infeasible (V = inf), and an expectation over an infeasible outcome is
 * inf, so the plan never takes a risk that could miss the deadline.
 *
 * Tables v[k][c][s], k = 0: none & a=0, 1: none & a=1, 2: od & a=0,
 * 3: od & a=1, 4: spot (a=1).  nc, ns <= PLAN_MAX_*.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "sim/policy_spotrun_plan.h"

#define PLAN_MAX_C 1024
#define PLAN_MAX_S 256

enum { VN0, VN1, VO0, VO1, VS, NV };

static double *cell(const struct plan *pl, int k, size_t c, size_t s)
{
	return pl->v + ((size_t)k * (pl->nc + 1) + c) * (pl->ns + 1) + s;
}

/* V_k(c, s) for fractional s; inf below 0. */
static double at(const struct plan *pl, int k, size_t c, double s)
{
	double f;
	size_t lo;

	if (s < -1e-9)
		return INFINITY;
	if (s >= (double)pl->ns)
		return *cell(pl, k, c, pl->ns);
	lo = (size_t)floor(s + 1e-9);
	f = s - (double)lo;
	if (f < 1e-9)
		return *cell(pl, k, c, lo);
	return (1 - f) * *cell(pl, k, c, lo) + f * *cell(pl, k, c, lo + 1);
}

static double mix(double p, double x, double y)
{
	/* p*x + (1-p)*y with 0 * inf = 0. */
	if (p <= 0)
		return y;
	if (p >= 1)
		return x;
	return p * x + (1 - p) * y;
}

/* Expected value of arriving at (c, s) holding nothing, given a now. */
static double e_none(const struct plan *pl, size_t c, double s, int a)
{
	double p1 = a ? 1 - pl->m.p_outage : pl->m.p_recover;

	return mix(p1, at(pl, VN1, c, s), at(pl, VN0, c, s));
}

static double e_od(const struct plan *pl, size_t c, double s, int a)
{
	double p1 = a ? 1 - pl->m.p_outage : pl->m.p_recover;

	return mix(p1, at(pl, VO1, c, s), at(pl, VO0, c, s));
}

/* After a productive spot step: kept, hopped, or in an outage. */
static double e_spot(const struct plan *pl, size_t c, double s)
{
	double keep = 1 - pl->m.p_fail;
	double hop = pl->m.p_fail - pl->m.p_outage;
	double v = 0;

	if (keep > 0)
		v += keep * at(pl, VS, c, s);
	if (hop > 0)
		v += hop * at(pl, VN1, c, s);
	if (pl->m.p_outage > 0)
		v += pl->m.p_outage * at(pl, VN0, c, s);
	return v;
}

/* Q-values of the three actions at (c, s), holding h, availability a. */
static void qvals(const struct plan *pl, size_t c, size_t s, enum sim_hold h,
		  int a, double q[3])
{
	double u_h = pl->m.unit_s / 3600.0, r_h = pl->m.restart_s / 3600.0;
	double sd = (double)s;

	q[SIM_NONE] = s >= 1 ? e_none(pl, c, sd - 1, a) : INFINITY;
	if (h == SIM_OD)
		q[SIM_OD] = pl->m.od_price * u_h + e_od(pl, c - 1, sd, a);
	else
		q[SIM_OD] = pl->m.od_price * (u_h + r_h) + e_od(pl, c - 1, sd - pl->K, a);
	q[SIM_SPOT] = INFINITY;
	if (a) {
		if (h == SIM_SPOT)
			q[SIM_SPOT] = pl->m.spot_price * u_h + e_spot(pl, c - 1, sd);
		else
			q[SIM_SPOT] = pl->m.spot_price * (u_h + r_h) +
				      e_spot(pl, c - 1, sd - pl->K);
	}
}

static double qmin(const double q[3])
{
	double m = q[0] < q[1] ? q[0] : q[1];

	return q[2] < m ? q[2] : m;
}

int policy__plan_build(struct plan *pl, const struct plan_model *m,
		       double work_s, double slack_s)
{
	pl->m = *m;
	if (pl->m.unit_s < work_s / PLAN_MAX_C)
		pl->m.unit_s = work_s / PLAN_MAX_C;
	if (slack_s > 0 && pl->m.unit_s < slack_s / PLAN_MAX_S)
		pl->m.unit_s = slack_s / PLAN_MAX_S;
	pl->nc = (size_t)ceil(work_s / pl->m.unit_s - 1e-9);
	pl->ns = slack_s > 0 ? (size_t)floor(slack_s / pl->m.unit_s + 1e-9) : 0;
	pl->K = m->restart_s / pl->m.unit_s;
	{
		double n = pl->m.unit_s / m->gap_s; /* ticks per step */

		pl->m.p_fail = 1 - pow(1 - m->p_fail, n);
		pl->m.p_outage = 1 - pow(1 - m->p_outage, n);
		pl->m.p_recover = 1 - pow(1 - m->p_recover, n);
	}
	pl->v = malloc((size_t)NV * (pl->nc + 1) * (pl->ns + 1) * sizeof(double));
	if (!pl->v)
		return -ENOMEM;
	for (size_t s = 0; s <= pl->ns; s++) {
		for (int k = 0; k < NV; k++)
			*cell(pl, k, 0, s) = 0;
	}
	for (size_t c = 1; c <= pl->nc; c++) {
		for (size_t s = 0; s <= pl->ns; s++) {
			double q[3];

			qvals(pl, c, s, SIM_NONE, 0, q);
			*cell(pl, VN0, c, s) = qmin(q);
			qvals(pl, c, s, SIM_NONE, 1, q);
			*cell(pl, VN1, c, s) = qmin(q);
			qvals(pl, c, s, SIM_OD, 0, q);
			*cell(pl, VO0, c, s) = qmin(q);
			qvals(pl, c, s, SIM_OD, 1, q);
			*cell(pl, VO1, c, s) = qmin(q);
			qvals(pl, c, s, SIM_SPOT, 1, q);
			*cell(pl, VS, c, s) = qmin(q);
		}
	}
	return 0;
}

void policy__plan_free(struct plan *pl)
{
	if (!pl)
		return;
	free(pl->v);
	pl->v = NULL;
}

enum sim_hold policy__plan_choose(const struct plan *pl, double C, double S,
				  enum sim_hold h, int a)
{
	double q[3];
	size_t c, s;
	enum sim_hold best = SIM_OD;

	if (C <= 0)
		return SIM_NONE;
	c = (size_t)ceil(C / pl->m.unit_s - 1e-9);
	if (c > pl->nc)
		c = pl->nc;
	if (S < 0)
		return SIM_OD;
	s = (size_t)floor(S / pl->m.unit_s + 1e-9);
	if (s > pl->ns)
		s = pl->ns;
	qvals(pl, c, s, h, a, q);
	if (q[SIM_SPOT] < q[best])
		best = SIM_SPOT;
	if (q[SIM_NONE] < q[best])
		best = SIM_NONE;
	return best;
}
