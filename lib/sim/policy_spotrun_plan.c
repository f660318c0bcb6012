/*
 * policy_spotrun_plan.c - the plan behind `spotrun`.
 *
 * A certainty-equivalent semi-Markov decision process.  The market is a
 * two-state process - spot available somewhere, or nowhere - whose spells
 * end with a probability that depends on how old the spell is (spot
 * traces are heavy-tailed: most runs and outages are short, the few long
 * ones hold most of the time, so a fresh run is fragile and an old outage
 * tends to persist).  A held spot instance can also be lost to a region
 * hop while spot stays up elsewhere.  Time is cut into planning steps.
 *
 * State (c, s, h, a, b): c = work steps left, s = slack steps left (time
 * left minus work left), h = held (none / on-demand / spot), a = spot up
 * somewhere, b = age bucket of the current spell.  Time left is c + s, so
 * the process is stationary and one pass in increasing (c, s) solves it
 * exactly; there is no value iteration.
 *
 *   idle (a=0)  (c, s-1, none)                       cost 0
 *   on-demand   keep (c-1, s, od) / start (c-1, s-K, od)
 *                                                   od * (unit [+ R])
 *   spot (a=1)  keep (c-1, s, spot) / start (c-1, s-K, spot)
 *                                                   spot * (unit [+ R])
 *
 * K = R / unit is a whole number when R >= unit (policy__plan_unit()
 * stretches the step to divide R), else a fraction: values are
 * interpolated linearly in s.  The spell moves on as the chain says: it
 * ends with end_up/end_down[b] (landing in the other state at age 0, a
 * held spot instance lost), or
 * ages into the next bucket with probability 1 / (bucket width).  V = 0
 * when c = 0; s < 0 is infeasible (V = inf), and any expectation over an
 * infeasible outcome is inf, so the plan never takes a chance on missing
 * the deadline.
 *
 * Age buckets: the doubling scale of policy__plan_age() (PLAN_AGES of
 * them, left at the rate 1 / width, so the age within a bucket is
 * forgotten), or, when the model says exact_ages = n, ages in whole steps
 * 0 .. n-2 that move one bucket every step and an open last one.  With
 * exact ages and a market whose spells are independent draws from known
 * lengths, the state holds everything an online policy can know, so the
 * plan is the best online policy there (bench/bench_policy_bound.c).
 *
 * Several regions (m.multi): "spot somewhere" is then nearly always up,
 * its spell sits in the top age bucket, and an age-independent hop rate
 * would price a fresh spot start like an old one.  So when a = 1, b is
 * the age bucket of a region run instead: the held instance's run (h =
 * spot), or the run a spot start would land in (the chosen region's
 * current run; nothing or on-demand held), together with o: whether
 * another region besides that run is up now (index b = age + PLAN_AGES *
 * o).  That run ends with loss[age] (the pooled per-region run hazard at
 * that age); then with probability rho[o] no spot is left anywhere (a =
 * 0, outage age 0) - a run end with no other region up is an outage
 * unless another comes up in the same step, one with another up only if
 * both end together - otherwise spot is still up
 * elsewhere and the run a start would now land in has the age drawn from
 * land[] (the ages of the oldest run still up, seen at past region run
 * ends) and o = 1 with land_other.  A run that goes on ages, and o flips
 * with flip[o].  A start keeps b: it lands in the run it was priced on.
 * Outages (a = 0) keep the spot-somewhere age (index < PLAN_AGES), and
 * end at run age 0 with o = 1 with out_other.
 *
 * The pair model (m.pair, with m.multi): the same index, but its age is
 * that of the pair (the run, o) - since the run began or o last changed
 * - and the pair's change (chg[o][age]) is one of: o flips, the run ends
 * with spot up elsewhere, or it ends into an outage (pout[o]); see
 * expect_pair().  With two zones that is their joint spell.
 *
 * Tables: v[k][b][c][s] for k in {none a=0, none a=1, od a=0, od a=1,
 * spot}, b < na (PLAN_AGES, exact_ages, or 2 x PLAN_AGES with m.multi;
 * there the a = 0 tables use only b < PLAN_AGES).
 *
 * Scoring a rule (eval_table): the same pass with the action in each
 * cell fixed - the plan's (act), or UP's (up_acts(), which depends on
 * the state alone) - under any model.  The guard (policy__plan_guard)
 * scores both under the plan's model and under each alternative model
 * the caller gives, and marks in act the cells where the plan's
 * advantage is below z standard errors (the delta method over the
 * alternatives); every pass needs the whole table (a state's value
 * reads states with less time left), so it is 1 + 2 x alternatives
 * passes, each a third of a build or less.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "sim/policy_spotrun_plan.h"

#define PLAN_MAX_C 256
#define PLAN_MAX_S 64

enum { VN0, VN1, VO0, VO1, VS, NV };

/* Probability of moving to the next age bucket in one step: doubling
 * buckets are left at the rate 1 / width; exact ages move every step. */
static const double advance_doubling[PLAN_AGES] = { 1, 1, 0.5, 0.25, 0.125, 0 };

/* P(the spell of availability a and age bucket b ends within a step). */
static inline double end_of(const struct plan *pl, int a, int b)
{
	if (pl->m.exact_ages)
		return a ? pl->m.exact_up[b] : pl->m.exact_down[b];
	return a ? pl->m.end_up[b] : pl->m.end_down[b];
}

static inline double advance(const struct plan *pl, int b)
{
	if (pl->m.exact_ages)
		return b + 1 < pl->na ? 1 : 0;
	return advance_doubling[b % PLAN_AGES];
}

double policy__plan_unit(const struct policy_job *job)
{
	double u = (double)job->gap_s, slack = job->deadline_s - job->work_s;

	if (u < job->work_s / PLAN_MAX_C)
		u = job->work_s / PLAN_MAX_C;
	if (slack > 0 && u < slack / PLAN_MAX_S)
		u = slack / PLAN_MAX_S;
	/* A restart costs a whole number of steps: move the step to the
	 * nearer (by ratio) of the two lengths around it that divide R, the
	 * shorter one only if it is no shorter than a tick.  Otherwise the
	 * slack R takes is rounded onto the grid, and the two restarts a
	 * spot start must keep in reserve (its own, and on-demand's if it
	 * is lost) need up to a step more slack than they do: with 4 h of
	 * slack at 675 s steps and R = 720 s, spot needs 3 steps (0.56 h)
	 * left instead of 0.4 h.  The nearer one, not always the longer:
	 * stretched to nearly twice its length, the step coarsens the work
	 * axis (2 h of work with R = 3 h and 1.5 h steps became one 3 h
	 * step, inside which the plan sees no risk, so it waited for a
	 * cheaper start).  docs/policies.md. */
	if (job->restart_s >= u) {
		double k = floor(job->restart_s / u + 1e-9);
		double up = job->restart_s / k, dn = job->restart_s / (k + 1);

		u = dn >= (double)job->gap_s && u / dn < up / u ? dn : up;
	}
	return u;
}

int policy__plan_age(double age_s, double unit_s)
{
	double x = age_s / unit_s;
	int b = 0;

	if (x < 1)
		return 0;
	for (double lim = 2; b < PLAN_AGES - 2 && x >= lim; lim *= 2)
		b++;
	return b + 1;
}

int policy__plan_age_exact(double age_s, double unit_s, int exact)
{
	double x = floor(age_s / unit_s + 1e-9);

	return x < exact - 1 ? (int)x : exact - 1;
}

#define HOT static inline __attribute__((always_inline))

HOT double *cell(const struct plan *pl, int k, int b, size_t c, size_t s)
{
	return pl->v + (((size_t)k * (size_t)pl->na + (size_t)b) * (pl->nc + 1) + c) *
			       (pl->ns + 1) + s;
}

/* A slack coordinate resolved once: infeasible, a cell, or between two.
 * With several regions it also keeps, once computed, the value of
 * landing in a run after a run ended with spot up elsewhere (the sum
 * over land[] in expect_run()): it depends only on the table landed in
 * (none or on-demand, a = 1), the work left and this coordinate, not on
 * the state the step starts from, and every state of one (c, s) reads it
 * at the same three coordinates (idle at c, keep and start at c - 1). */
struct spt {
	int kind; /* 0: s < 0 (inf), 1: cell lo, 2: interpolate lo, lo+1 */
	size_t lo;
	double f;
	uint8_t xok[2]; /* xland[0] (k1 = VN1) / [1] (VO1) computed */
	double xland[2];
};

static struct spt spt_make(const struct plan *pl, double s)
{
	struct spt p = { 1, 0, 0, { 0, 0 }, { 0, 0 } };

	if (s < -1e-9) {
		p.kind = 0;
	} else if (s >= (double)pl->ns) {
		p.lo = pl->ns;
	} else {
		p.lo = (size_t)floor(s + 1e-9);
		p.f = s - (double)p.lo;
		if (p.f >= 1e-9)
			p.kind = 2;
	}
	return p;
}

/* V_k,b(c, s) at a resolved slack coordinate; inf below 0. */
HOT double at(const struct plan *pl, int k, int b, size_t c, const struct spt *p)
{
	const double *v;

	if (p->kind == 0)
		return INFINITY;
	v = cell(pl, k, b, c, p->lo);
	if (p->kind == 1)
		return *v;
	return (1 - p->f) * v[0] + p->f * v[1];
}

/* p * x, with 0 * inf = 0. */
HOT double w(double p, double x)
{
	return p > 0 ? p * x : 0;
}

/* The pair model (m.pair): index b is the pair's age and o.  The pair
 * changes with chg[o][age]: the run goes on with o flipped (table kst,
 * pair age 0), or ends with spot up elsewhere (k1, the run landed in at
 * pair age 0, another up besides it with land_other), or with no spot
 * anywhere (k0, outage age 0).  Or it goes on and ages. */
HOT double expect_pair(const struct plan *pl, int k0, int k1, int kst, int b,
		       size_t c, struct spt *s)
{
	int o = b / PLAN_AGES, age = b % PLAN_AGES;
	int nage = age + 1 < PLAN_AGES ? age + 1 : age;
	double end = pl->m.chg[o][age], stay = 1 - end, adv = advance(pl, b);
	double lo = pl->m.land_other;
	const double *q = pl->m.pout[o];

	return w(end * q[PAIR_FLIP], at(pl, kst, PLAN_AGES * !o, c, s)) +
	       w(end * q[PAIR_LAND], w(1 - lo, at(pl, k1, 0, c, s)) +
				      w(lo, at(pl, k1, PLAN_AGES, c, s))) +
	       w(end * q[PAIR_OUT], at(pl, k0, 0, c, s)) +
	       w(stay * adv, at(pl, kst, nage + PLAN_AGES * o, c, s)) +
	       w(stay * (1 - adv), at(pl, kst, b, c, s));
}

/* Several regions, spot up somewhere (m.multi): expected value after one
 * step in table kst (none/od a=1, or spot) whose index b is that of a
 * region run - the held one, or the one a start would land in - and o,
 * another region up besides it.  The run ends with loss[age]: with no
 * spot anywhere (rho[o]) to table k0 (a=0) at outage age 0, else to k1
 * (a=1, nothing held) with the run a start would now land in aged as
 * land[] says, another up besides it with land_other.  Or it goes on,
 * ages, and o flips with flip[o]. */
HOT double expect_runs(const struct plan *pl, int k0, int k1, int kst, int b,
		       size_t c, struct spt *s)
{
	int o = b / PLAN_AGES, age = b % PLAN_AGES;
	int nage = age + 1 < PLAN_AGES ? age + 1 : age;
	double end = pl->m.loss[age], stay = 1 - end, adv = advance(pl, b), x = 0;
	double lo = pl->m.land_other, fl = pl->m.flip[o], rho = pl->m.rho[o];
	int b0 = age + PLAN_AGES * o, b1 = age + PLAN_AGES * !o;
	int n0 = nage + PLAN_AGES * o, n1 = nage + PLAN_AGES * !o;

	if (s->xok[k1 == VO1]) {
		x = s->xland[k1 == VO1];
	} else {
		for (int j = 0; j < PLAN_AGES; j++)
			x += w(pl->m.land[j], w(1 - lo, at(pl, k1, j, c, s)) +
					      w(lo, at(pl, k1, j + PLAN_AGES, c, s)));
		s->xland[k1 == VO1] = x;
		s->xok[k1 == VO1] = 1;
	}
	return w(end * rho, at(pl, k0, 0, c, s)) +
	       w(end * (1 - rho), x) +
	       w(stay * adv * (1 - fl), at(pl, kst, n0, c, s)) +
	       w(stay * adv * fl, at(pl, kst, n1, c, s)) +
	       w(stay * (1 - adv) * (1 - fl), at(pl, kst, b0, c, s)) +
	       w(stay * (1 - adv) * fl, at(pl, kst, b1, c, s));
}

/* Several regions, spot up somewhere: the region-run model, or the pair
 * model (m.pair). */
HOT double expect_run(const struct plan *pl, int k0, int k1, int kst, int b,
		      size_t c, struct spt *s)
{
	if (pl->m.pair)
		return expect_pair(pl, k0, k1, kst, b, c, s);
	return expect_runs(pl, k0, k1, kst, b, c, s);
}

/* Expected value after one step that leaves the job in table k (none or
 * od; k0/k1 = the a=0/a=1 variants) or on spot, from availability a and
 * age bucket b. */
HOT double expect(const struct plan *pl, int k0, int k1, int a, int b,
		  size_t c, struct spt *s)
{
	double end, stay, adv;
	int k = a ? k1 : k0, ko = a ? k0 : k1;
	int nb = b + 1 < pl->na ? b + 1 : b;

	if (a && pl->m.multi)
		return expect_run(pl, k0, k1, k1, b, c, s);
	end = end_of(pl, a, b);
	stay = 1 - end;
	adv = advance(pl, b);
	if (pl->m.multi) /* an outage ends in a run of age 0, o as seen */
		return w(end * (1 - pl->m.out_other), at(pl, ko, 0, c, s)) +
		       w(end * pl->m.out_other, at(pl, ko, PLAN_AGES, c, s)) +
		       w(stay * adv, at(pl, k, nb < PLAN_AGES ? nb : b, c, s)) +
		       w(stay * (1 - adv), at(pl, k, b, c, s));

	return w(end, at(pl, ko, 0, c, s)) +
	       w(stay * adv, at(pl, k, nb, c, s)) +
	       w(stay * (1 - adv), at(pl, k, b, c, s));
}

HOT double expect_spot(const struct plan *pl, int b, size_t c,
		       struct spt *s)
{
	double end, stay, adv, hop = pl->m.hop;
	int nb = b + 1 < pl->na ? b + 1 : b;

	if (pl->m.multi)
		return expect_run(pl, VN0, VN1, VS, b, c, s);
	end = end_of(pl, 1, b);
	stay = 1 - end;
	adv = advance(pl, b);
	/* The spell ends: outage, instance lost.  It goes on: the instance
	 * survives, or hops away (none, spot still up). */
	return w(end, at(pl, VN0, 0, c, s)) +
	       w(stay * adv * (1 - hop), at(pl, VS, nb, c, s)) +
	       w(stay * adv * hop, at(pl, VN1, nb, c, s)) +
	       w(stay * (1 - adv) * (1 - hop), at(pl, VS, b, c, s)) +
	       w(stay * (1 - adv) * hop, at(pl, VN1, b, c, s));
}

/* Slack coordinates of one (s): idle -> s-1, keep -> s, start -> s-K. */
struct spts {
	struct spt idle, keep, start;
};

static struct spts spts_make(const struct plan *pl, size_t s)
{
	struct spts p;

	p.idle = spt_make(pl, (double)s - 1);
	p.keep = spt_make(pl, (double)s);
	p.start = spt_make(pl, (double)s - pl->K);
	return p;
}

/* The expected cost of one choice (act) in state (c, s, h, a, b). */
HOT double qval(const struct plan *pl, size_t c, size_t s,
		struct spts *sp, enum sim_hold h, int a, int b,
		enum sim_hold act)
{
	double u_h = pl->unit_s / 3600.0, r_h = pl->m.restart_s / 3600.0;

	/* No waiting while spot is up: waiting only ages the spell, which
	 * holding spot does too, and only an estimate that makes old spells
	 * riskier than young ones could prefer it - with little history, an
	 * age bucket never seen falls back to the pooled rate, above that of
	 * the young buckets seen to survive, and the plan waited for the
	 * spell to end so as to start in a "safer" young one.  On a law
	 * known exactly (m.idle_up) waiting is open in every state: a run
	 * sure to end within the next step is then waited out. */
	if (act == SIM_NONE)
		return s >= 1 && (!a || pl->m.idle_up) ?
		       expect(pl, VN0, VN1, a, b, c, &sp->idle) : INFINITY;
	if (act == SIM_OD) {
		if (h == SIM_OD)
			return pl->m.od_price * u_h + expect(pl, VO0, VO1, a, b, c - 1, &sp->keep);
		if (pl->m.exact_restart) /* a step without work: slack - 1 */
			return pl->m.od_price * u_h + expect(pl, VO0, VO1, a, b, c, &sp->idle);
		return pl->m.od_price * (u_h + r_h) +
		       expect(pl, VO0, VO1, a, b, c - 1, &sp->start);
	}
	if (!a)
		return INFINITY;
	if (h == SIM_SPOT)
		return pl->m.spot_price * u_h + expect_spot(pl, b, c - 1, &sp->keep);
	if (pl->m.exact_restart) /* the run can end before any work is done */
		return pl->m.spot_price * u_h + expect_spot(pl, b, c, &sp->idle);
	return pl->m.spot_price * (u_h + r_h) + expect_spot(pl, b, c - 1, &sp->start);
}

HOT void qvals(const struct plan *pl, size_t c, size_t s,
	       struct spts *sp, enum sim_hold h, int a, int b, double q[3])
{
	q[SIM_NONE] = qval(pl, c, s, sp, h, a, b, SIM_NONE);
	q[SIM_OD] = qval(pl, c, s, sp, h, a, b, SIM_OD);
	q[SIM_SPOT] = qval(pl, c, s, sp, h, a, b, SIM_SPOT);
}

static enum sim_hold argmin(const double q[3])
{
	enum sim_hold best = SIM_OD;

	if (q[SIM_SPOT] < q[best])
		best = SIM_SPOT;
	if (q[SIM_NONE] < q[best])
		best = SIM_NONE;
	return best;
}

/* The five (table, held, spot up) contexts of a state, in table order. */
static const struct {
	enum sim_hold h;
	int a;
} ctx[NV] = {
	[VN0] = { SIM_NONE, 0 }, [VN1] = { SIM_NONE, 1 }, [VO0] = { SIM_OD, 0 },
	[VO1] = { SIM_OD, 1 }, [VS] = { SIM_SPOT, 1 },
};

/* With several regions the outage tables (a = 0) index only the
 * spot-somewhere age: the cells for o = 1 are never read. */
static int unused(const struct plan *pl, int k, int b)
{
	return pl->m.multi && !ctx[k].a && b >= PLAN_AGES;
}

int policy__plan_build(struct plan *pl, const struct plan_model *m,
		       double unit_s, double work_s, double slack_s)
{
	pl->v = NULL;
	pl->act = NULL;
	pl->m = *m;
	pl->unit_s = unit_s;
	pl->nc = (size_t)ceil(work_s / unit_s - 1e-9);
	pl->ns = slack_s > 0 ? (size_t)floor(slack_s / unit_s + 1e-9) : 0;
	pl->K = m->restart_s / unit_s;
	if (m->exact_ages < 0 || m->exact_ages == 1 || m->exact_ages > PLAN_AGES_MAX ||
	    (m->exact_ages && (!m->exact_up || !m->exact_down)))
		return -EINVAL;
	if (m->exact_restart && fabs(pl->K - 1) > 1e-9)
		return -EINVAL;
	if (m->multi && (m->exact_ages || m->idle_up)) /* region runs: doubling
							 * buckets, no waiting up */
		return -EINVAL;
	pl->na = m->exact_ages ? m->exact_ages : m->multi ? 2 * PLAN_AGES : PLAN_AGES;
	pl->v = malloc((size_t)NV * (size_t)pl->na * (pl->nc + 1) * (pl->ns + 1) *
		       sizeof(double));
	pl->act = malloc((size_t)NV * (size_t)pl->na * (pl->nc + 1) * (pl->ns + 1));
	if (!pl->v || !pl->act) {
		policy__plan_free(pl);
		return -ENOMEM;
	}
	for (int k = 0; k < NV; k++) {
		for (int b = 0; b < pl->na; b++) {
			for (size_t s = 0; s <= pl->ns; s++)
				*cell(pl, k, b, 0, s) = 0;
		}
	}
	for (size_t c = 1; c <= pl->nc; c++) {
		for (size_t s = 0; s <= pl->ns; s++) {
			struct spts sp = spts_make(pl, s);

			for (int b = 0; b < pl->na; b++) {
				double q[3];

				for (int k = 0; k < NV; k++) {
					enum sim_hold act;

					if (unused(pl, k, b)) {
						*cell(pl, k, b, c, s) = INFINITY;
						pl->act[cell(pl, k, b, c, s) - pl->v] = SIM_OD;
						continue;
					}
					qvals(pl, c, s, &sp, ctx[k].h, ctx[k].a, b, q);
					act = argmin(q);
					*cell(pl, k, b, c, s) = q[act];
					pl->act[cell(pl, k, b, c, s) - pl->v] = (uint8_t)act;
				}
			}
		}
	}
	return 0;
}

/* UP's rules (policy_up.c) on a plan state: c work steps and s slack
 * steps left, holding h, spot up somewhere (a).  The safety net needs no
 * flag here: once on on-demand with slack below 2d it stays there, since
 * on-demand keeps the slack constant. */
static enum sim_hold up_rule(const struct plan *pl, const struct policy_job *job,
			     size_t c, size_t s, enum sim_hold h, int a)
{
	double gap = (double)job->gap_s, d = job->restart_s;
	double C = (double)c * pl->unit_s, left = (double)(c + s) * pl->unit_s;
	double t = job->deadline_s - left, cp = job->work_s - C;
	double rate = job->work_s / job->deadline_s;

	if (h != SIM_SPOT && ceil((C + 2 * d) / gap) >= floor(left / gap))
		return SIM_OD;
	if (h == SIM_OD && cp < (t + 2 * d) * rate)
		return SIM_OD;
	if (a)
		return SIM_SPOT;
	return cp < t * rate ? SIM_OD : SIM_NONE;
}

/* The value in one cell of the evaluation table ev of a rule whose
 * choice there is act, scored under ev's model; a choice that could miss
 * the deadline becomes on-demand (the deadline guard). */
HOT double rule_value(const struct plan *ev, size_t c, size_t s,
		      struct spts *sp, int k, int b, enum sim_hold act)
{
	enum sim_hold h = ctx[k].h;
	double v = qval(ev, c, s, sp, h, ctx[k].a, b, act);

	if (!isfinite(v) && act != SIM_OD)
		v = qval(ev, c, s, sp, h, ctx[k].a, b, SIM_OD);
	return v;
}

/* Fill ev->v (allocated by the caller, the plan's shape) with the value,
 * under ev->m, of following in every state the choices in acts (a table
 * of the plan's act's shape, read with PLAN_ACT_MASK). */
static void eval_table(const struct plan *pl, struct plan *ev, const uint8_t *acts)
{
	for (int k = 0; k < NV; k++) {
		for (int bb = 0; bb < pl->na; bb++) {
			for (size_t x = 0; x <= pl->ns; x++)
				*cell(ev, k, bb, 0, x) = 0;
		}
	}
	for (size_t c = 1; c <= pl->nc; c++) {
		for (size_t s = 0; s <= pl->ns; s++) {
			struct spts sp = spts_make(pl, s);

			for (int bb = 0; bb < pl->na; bb++) {
				for (int k = 0; k < NV; k++) {
					double *v = cell(ev, k, bb, c, s);

					*v = unused(pl, k, bb) ? INFINITY :
					     rule_value(ev, c, s, &sp, k, bb,
							(enum sim_hold)(acts[v - ev->v] & PLAN_ACT_MASK));
				}
			}
		}
	}
}

static size_t table_cells(const struct plan *pl)
{
	return (size_t)NV * (size_t)pl->na * (pl->nc + 1) * (pl->ns + 1);
}

/* UP's choice in every cell of the plan's table (malloc'd; NULL on
 * out-of-memory).  It does not depend on the market's model. */
static uint8_t *up_acts(const struct plan *pl, const struct policy_job *job)
{
	uint8_t *t = malloc(table_cells(pl));

	if (!t)
		return NULL;
	for (int k = 0; k < NV; k++) {
		for (size_t c = 0; c <= pl->nc; c++) {
			for (size_t s = 0; s <= pl->ns; s++) {
				uint8_t a = c ? (uint8_t)up_rule(pl, job, c, s, ctx[k].h,
								 ctx[k].a) : SIM_NONE;

				for (int b = 0; b < pl->na; b++)
					t[cell(pl, k, b, c, s) - pl->v] = a;
			}
		}
	}
	return t;
}

/* The cell a state (C, S, h, a, b) is read from: work rounded up, slack
 * down, both clamped to the table. */
static size_t state_cell(const struct plan *pl, double C, double S,
			 enum sim_hold h, int a, int b)
{
	size_t c = (size_t)ceil(C / pl->unit_s - 1e-9);
	size_t s = (size_t)floor(S / pl->unit_s + 1e-9);
	int k = h == SIM_SPOT ? VS : h == SIM_OD ? (a ? VO1 : VO0) : (a ? VN1 : VN0);

	c = c > pl->nc ? pl->nc : c < 1 ? 1 : c;
	s = s > pl->ns ? pl->ns : s;
	return (size_t)(cell(pl, k, b, c, s) - pl->v);
}

int policy__plan_eval(const struct plan *pl, const struct plan_model *m_eval,
		      const struct policy_job *job, enum plan_rule rule,
		      double C, double S, enum sim_hold h, int a, int b,
		      double *value)
{
	struct plan ev = *pl;
	uint8_t *up = NULL;

	*value = INFINITY;
	if (C <= 0) {
		*value = 0;
		return 0;
	}
	if (S < 0 || !pl->v)
		return 0;
	ev.m = *m_eval;
	ev.act = NULL;
	ev.m.exact_ages = pl->m.exact_ages;
	ev.v = malloc(table_cells(pl) * sizeof(double));
	if (rule == PLAN_RULE_UP)
		up = up_acts(pl, job);
	if (!ev.v || (rule == PLAN_RULE_UP && !up)) {
		free(ev.v);
		free(up);
		return -ENOMEM;
	}
	eval_table(pl, &ev, rule == PLAN_RULE_UP ? up : pl->act);
	*value = ev.v[state_cell(pl, C, S, h, a, b)];
	free(ev.v);
	free(up);
	return 0;
}

int policy__plan_guard(struct plan *pl, const struct policy_job *job,
		       const struct plan_model *alt, int nalt, double z)
{
	size_t n = table_cells(pl);
	struct plan up = *pl, pa = *pl, ua = *pl;
	double *var = NULL;
	uint8_t *upa = NULL;
	int rc = -ENOMEM;

	up.act = pa.act = ua.act = NULL;
	up.v = malloc(n * sizeof(double));
	pa.v = malloc(n * sizeof(double));
	ua.v = malloc(n * sizeof(double));
	var = calloc(n, sizeof(double));
	if (pl->v)
		upa = up_acts(pl, job);
	if (!pl->v || !up.v || !pa.v || !ua.v || !var || !upa)
		goto out;
	eval_table(pl, &up, upa);
	for (int g = 0; g < nalt; g++) {
		pa.m = ua.m = alt[g];
		pa.m.exact_ages = ua.m.exact_ages = pl->m.exact_ages;
		eval_table(pl, &pa, pl->act);
		eval_table(pl, &ua, upa);
		for (size_t i = 0; i < n; i++) {
			double d = (pa.v[i] - pl->v[i]) - (ua.v[i] - up.v[i]);

			if (isfinite(d))
				var[i] += d * d;
		}
	}
	for (size_t i = 0; i < n; i++) {
		double adv = up.v[i] - pl->v[i];

		pl->act[i] &= PLAN_ACT_MASK;
		if (isfinite(pl->v[i]) && isfinite(up.v[i]) && adv < z * sqrt(var[i]))
			pl->act[i] |= PLAN_ACT_UP;
	}
	rc = 0;
out:
	free(up.v);
	free(pa.v);
	free(ua.v);
	free(var);
	free(upa);
	return rc;
}

int policy__plan_follows(const struct plan *pl, double C, double S,
			 enum sim_hold h, int a, int b)
{
	if (C <= 0 || S < 0 || !pl->v)
		return 1;
	return !(pl->act[state_cell(pl, C, S, h, a, b)] & PLAN_ACT_UP);
}

double policy__plan_value(const struct plan *pl, double C, double S,
			  enum sim_hold h, int a, int b)
{
	if (C <= 0)
		return 0;
	if (S < 0 || !pl->v)
		return INFINITY;
	return pl->v[state_cell(pl, C, S, h, a, b)];
}

void policy__plan_free(struct plan *pl)
{
	if (!pl)
		return;
	free(pl->v);
	free(pl->act);
	pl->v = NULL;
	pl->act = NULL;
}

enum sim_hold policy__plan_choose(const struct plan *pl, double C, double S,
				  enum sim_hold h, int a, int b)
{
	double q[3];
	size_t c, s;

	if (C <= 0)
		return SIM_NONE;
	if (S < 0 || !pl->v)
		return SIM_OD;
	c = (size_t)ceil(C / pl->unit_s - 1e-9);
	if (c > pl->nc)
		c = pl->nc;
	if (c < 1)
		c = 1;
	s = (size_t)floor(S / pl->unit_s + 1e-9);
	if (s > pl->ns)
		s = pl->ns;
	{
		struct spts sp = spts_make(pl, s);

		qvals(pl, c, s, &sp, h, a, b, q);
	}
	return argmin(q);
}
