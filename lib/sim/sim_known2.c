/*
 * sim_known2.c - the exact plan on a two-zone renewal market (the bound
 * across regions at 52 h / 0.2 h, bench/bench_policy_bound2.c).
 *
 * Each zone is its own renewal process whose spells end with a known
 * probability given their age (sim_law.h), independently of the other
 * zone.  The step is the simulator's tick and equals the restart R, so a
 * start is one step without work during which the market moves on - the
 * simulator's model (sim.c) exactly, zone switches included: moving a
 * spot instance to the other zone is a new start like any other (no
 * egress here).
 *
 * State (c, s, h, m): c work steps left (1..nc; 0 is done, cost 0), s
 * slack steps left (0..ns; time left is c + s), h held (none, on-demand,
 * spot in zone 0 or 1; spot in a zone only while that zone is up), and
 * m = (z0, z1), zone z's spell: up or down and its age in steps (capped
 * at ages - 1, whose end rate is the mean over every older age).
 *
 *   choice          allowed                      cost       next (c, s)
 *   wait            s >= 1                       0          (c, s-1), none
 *   on-demand keep  h = od                       od step    (c-1, s), od
 *   on-demand start h != od, s >= 1              od step    (c, s-1), od
 *   spot z keep     h = spot z                   spot step  (c-1, s), spot z
 *   spot z start    zone z up, h != spot z, s>=1 spot step  (c, s-1), spot z
 *
 * after which each zone's spell ends (flipping it, age 0) or ages by one
 * step, and a spot instance whose zone went down is lost (h = none), as
 * sim.c preempts at the next boundary.  s < 0 is infeasible (inf), so the
 * plan never risks the deadline; a step that finishes the work (c = 1,
 * keep) has no risk left.
 *
 * Joint spells (m.joint): the market is instead one spell of the joint
 * state j (bit z = zone z up), m = j * ages + age; it ends with jend and
 * moves to the state jnext says (age 0), or ages.  Zones up and the
 * table of choices are as above.
 *
 * Order: every choice moves to time left c + s - 1, so the layers t = c + s
 * are solved in increasing t, each from the one below, and only the
 * expectations of layer t - 1 are kept (E[s][table][m], tables: none, od,
 * spot 0, spot 1, with a lost instance folded into none).  The choices of
 * every cell are kept (act, two bits each: 240 x 21 x 4 x 384^2 of them,
 * 0.74 GB, at 48 h / 52 h and 192 ages) for the policy to follow, and the
 * values at c = nc (top) for the window's start.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_known2.h"

struct solve {
	const struct sim_known2 *k;
	size_t A, Z;        /* ages, zone states 2A */
	double *end[2];     /* [z][zone state]: P(the spell ends within a step) */
	size_t *stay;       /* [zone state]: the state one step older */
	double *ep, *ec;    /* layer expectations [ns+1][KNOWN2_HOLDS][nm] */
	double *v, *x, *y;  /* [KNOWN2_HOLDS][nm], [nm], [nm] */
};

/* p * x, with 0 * inf = 0. */
static inline double w(double p, double x)
{
	return p > 0 ? p * x : 0;
}

/* Choices are packed four to a byte (two bits each); act starts zeroed
 * and each entry is written once. */
static inline void act_put(uint8_t *act, size_t i, int a)
{
	act[i / 4] |= (uint8_t)(a << (2 * (i % 4)));
}

static inline int act_get(const uint8_t *act, size_t i)
{
	return (act[i / 4] >> (2 * (i % 4))) & 3;
}

static inline int zone_up(const struct solve *q, size_t zs)
{
	return zs >= q->A;
}

/* e[m] = E[x(m')]: one step of both zones' chains, zone 1 then zone 0. */
static void expect2(const struct solve *q, const double *x, double *y, double *e)
{
	size_t Z = q->Z;

	for (size_t z0 = 0; z0 < Z; z0++) {
		const double *row = x + z0 * Z;

		for (size_t z1 = 0; z1 < Z; z1++) {
			double p = q->end[1][z1];
			size_t fl = zone_up(q, z1) ? 0 : q->A;

			y[z0 * Z + z1] = w(1 - p, row[q->stay[z1]]) + w(p, row[fl]);
		}
	}
	for (size_t z0 = 0; z0 < Z; z0++) {
		double p = q->end[0][z0];
		size_t fl = zone_up(q, z0) ? 0 : q->A;
		const double *st = y + q->stay[z0] * Z, *fr = y + fl * Z;

		for (size_t z1 = 0; z1 < Z; z1++)
			e[z0 * Z + z1] = w(1 - p, st[z1]) + w(p, fr[z1]);
	}
}

/* Is spot up in zone z in market state m?  Zones: m = z0 * Z + z1, a
 * zone state below A is down.  Joint: m = j * A + age, bit z of j. */
static inline int market_up(const struct solve *q, size_t m, int z)
{
	if (q->k->m.joint)
		return (int)(m / q->A) >> z & 1;
	return (z ? m % q->Z : m / q->Z) >= q->A;
}

/* e[m] = E[x(m')] on the joint chain: the spell of state j at age a ends
 * with jend[j][a] into state j' (jnext[j][a][j'], age 0), else ages. */
static void expect_joint(const struct solve *q, const double *x, double *e)
{
	const struct known2_model *md = &q->k->m;
	size_t A = q->A;

	for (size_t j = 0; j < 4; j++) {
		for (size_t a = 0; a < A; a++) {
			double p = md->jend[j * A + a], f = 0;
			const double *nx = md->jnext + (j * A + a) * 4;

			for (size_t j2 = 0; j2 < 4; j2++)
				f += w(nx[j2], x[j2 * A]);
			e[j * A + a] = w(1 - p, x[j * A + (a + 1 < A ? a + 1 : a)]) + w(p, f);
		}
	}
}

/* The expectations of one solved cell's values v into e[KNOWN2_HOLDS][nm]. */
static void expect_cell(const struct solve *q, const double *v, double *e)
{
	size_t nm = q->k->nm;

	for (int hs = 0; hs < KNOWN2_HOLDS; hs++) {
		const double *x = v + (size_t)hs * nm;

		if (hs >= KNOWN2_SPOT0) {
			/* Spot kept if its zone is still up, else lost: none. */
			for (size_t m = 0; m < nm; m++)
				q->x[m] = market_up(q, m, hs - KNOWN2_SPOT0) ? x[m] :
									   v[KNOWN2_NONE * nm + m];
			x = q->x;
		}
		if (q->k->m.joint)
			expect_joint(q, x, e + (size_t)hs * nm);
		else
			expect2(q, x, q->y, e + (size_t)hs * nm);
	}
}

/* Values and choices of cell (c, s); kp / st = the expectations after a
 * step that keeps (c-1, s) / starts or waits (c, s-1), NULL = done (0) /
 * infeasible. */
static void solve_cell(const struct solve *q, size_t c, size_t s, const double *kp,
		       const double *st)
{
	const struct sim_known2 *k = q->k;
	size_t nm = k->nm;
	double step_h = k->m.step_s / 3600.0;
	double od = k->m.od_price * step_h;
	double sp[2] = { k->m.spot_price[0] * step_h, k->m.spot_price[1] * step_h };
	size_t base = ((c - 1) * (k->ns + 1) + s) * KNOWN2_HOLDS * nm;

	for (size_t m = 0; m < nm; m++) {
		int up[2] = { market_up(q, m, 0), market_up(q, m, 1) };

		for (int h = 0; h < KNOWN2_HOLDS; h++) {
			double best = INFINITY, val;
			int pick = KNOWN2_OD;

			if (h >= KNOWN2_SPOT0 && !up[h - KNOWN2_SPOT0]) {
				q->v[(size_t)h * nm + m] = INFINITY; /* never held */
				continue;
			}
			for (int a = 0; a < KNOWN2_HOLDS; a++) {
				int keep = a == h && a != KNOWN2_NONE;
				const double *src = keep ? kp : st;
				double price = a == KNOWN2_OD ? od : a == KNOWN2_NONE ? 0 :
								  sp[a - KNOWN2_SPOT0];

				if (a >= KNOWN2_SPOT0 && !up[a - KNOWN2_SPOT0])
					continue;
				if (a == KNOWN2_NONE && !k->m.idle_when_up && (up[0] || up[1]))
					continue;
				if (!keep && !st)
					continue; /* no slack for a step without work */
				val = price + (src ? src[(size_t)a * nm + m] : 0);
				if (val < best) {
					best = val;
					pick = a;
				}
			}
			q->v[(size_t)h * nm + m] = best;
			act_put(k->act, base + (size_t)h * nm + m, pick);
		}
	}
	if (c == k->nc)
		memcpy(k->top + s * KNOWN2_HOLDS * nm, q->v, KNOWN2_HOLDS * nm * sizeof(double));
}

static inline int prob_ok(double p)
{
	return p >= 0 && p <= 1;
}

static int joint_ok(const struct known2_model *m)
{
	if (!m->jend || !m->jnext)
		return 0;
	for (int i = 0; i < 4 * m->ages; i++) {
		double sum = 0;

		for (int j = 0; j < 4; j++) {
			if (!prob_ok(m->jnext[4 * i + j]))
				return 0;
			sum += m->jnext[4 * i + j];
		}
		if (!prob_ok(m->jend[i]) || (m->jend[i] > 0 && fabs(sum - 1) > 1e-9))
			return 0;
	}
	return 1;
}

static int model_ok(const struct known2_model *m)
{
	if (m->ages < 2 || m->ages > KNOWN2_AGES_MAX || !(m->step_s > 0) ||
	    !(m->od_price >= 0) || !(m->spot_price[0] >= 0) || !(m->spot_price[1] >= 0))
		return 0;
	if (m->joint)
		return joint_ok(m);
	for (int z = 0; z < 2; z++) {
		for (int kd = 0; kd < 2; kd++) {
			if (!m->end[z][kd])
				return 0;
			for (int a = 0; a < m->ages; a++) {
				if (!prob_ok(m->end[z][kd][a]))
					return 0;
			}
		}
	}
	return 1;
}

int sim_known2_build(struct sim_known2 *k, const struct known2_model *m,
		     double work_s, double slack_s)
{
	struct solve q = { .k = k };
	size_t layer;
	int rc = -ENOMEM;

	memset(k, 0, sizeof *k);
	if (!model_ok(m) || !(work_s > 0) || !(slack_s >= 0) || !isfinite(work_s + slack_s))
		return -EINVAL;
	k->m = *m;
	k->nc = (size_t)ceil(work_s / m->step_s - 1e-9);
	k->ns = (size_t)floor(slack_s / m->step_s + 1e-9);
	q.A = (size_t)m->ages;
	q.Z = 2 * q.A;
	k->nm = m->joint ? 4 * q.A : q.Z * q.Z;
	layer = (k->ns + 1) * KNOWN2_HOLDS * k->nm;
	k->act = calloc((k->nc * layer + 3) / 4, 1);
	k->top = malloc(layer * sizeof(double));
	q.end[0] = malloc(q.Z * sizeof(double));
	q.end[1] = malloc(q.Z * sizeof(double));
	q.stay = malloc(q.Z * sizeof(size_t));
	q.ep = malloc(layer * sizeof(double));
	q.ec = malloc(layer * sizeof(double));
	q.v = malloc(KNOWN2_HOLDS * k->nm * sizeof(double));
	q.x = malloc(k->nm * sizeof(double));
	q.y = malloc(k->nm * sizeof(double));
	if (!k->act || !k->top || !q.end[0] || !q.end[1] || !q.stay || !q.ep || !q.ec ||
	    !q.v || !q.x || !q.y)
		goto out;
	for (size_t zs = 0; zs < q.Z && !m->joint; zs++) {
		size_t u = zs / q.A, a = zs % q.A;

		q.stay[zs] = u * q.A + (a + 1 < q.A ? a + 1 : a);
		q.end[0][zs] = m->end[0][u][a];
		q.end[1][zs] = m->end[1][u][a];
	}
	for (size_t t = 1; t <= k->nc + k->ns; t++) {
		size_t lo = t > k->nc ? t - k->nc : 0, hi = t - 1 < k->ns ? t - 1 : k->ns;
		double *tmp;

		for (size_t s = lo; s <= hi; s++) {
			size_t c = t - s;
			const double *kp = c > 1 ? q.ep + s * KNOWN2_HOLDS * k->nm : NULL;
			const double *st = s > 0 ? q.ep + (s - 1) * KNOWN2_HOLDS * k->nm : NULL;

			solve_cell(&q, c, s, kp, st);
			expect_cell(&q, q.v, q.ec + s * KNOWN2_HOLDS * k->nm);
		}
		tmp = q.ep;
		q.ep = q.ec;
		q.ec = tmp;
	}
	rc = 0;
out:
	free(q.end[0]);
	free(q.end[1]);
	free(q.stay);
	free(q.ep);
	free(q.ec);
	free(q.v);
	free(q.x);
	free(q.y);
	if (rc)
		sim_known2_free(k);
	return rc;
}

void sim_known2_free(struct sim_known2 *k)
{
	if (!k)
		return;
	free(k->act);
	free(k->top);
	k->act = NULL;
	k->top = NULL;
}

size_t sim_known2_market_joint(const struct sim_known2 *k, int j, int age)
{
	size_t A = (size_t)k->m.ages;
	size_t a = age < 0 ? 0 : (size_t)age >= A ? A - 1 : (size_t)age;

	return (size_t)(j & 3) * A + a;
}

size_t sim_known2_market(const struct sim_known2 *k, const int up[2], const int age[2])
{
	size_t A = (size_t)k->m.ages, zs[2];

	for (int z = 0; z < 2; z++) {
		size_t a = age[z] < 0 ? 0 : (size_t)age[z] >= A ? A - 1 : (size_t)age[z];

		zs[z] = (up[z] ? A : 0) + a;
	}
	return zs[0] * 2 * A + zs[1];
}

int sim_known2_choose(const struct sim_known2 *k, size_t c, size_t s, int h, size_t mk)
{
	if (!k->act || c < 1 || h < 0 || h >= KNOWN2_HOLDS || mk >= k->nm)
		return KNOWN2_OD;
	if (c > k->nc)
		c = k->nc;
	if (s > k->ns)
		s = k->ns;
	return act_get(k->act, ((c - 1) * (k->ns + 1) + s) * KNOWN2_HOLDS * k->nm +
				       (size_t)h * k->nm + mk);
}

double sim_known2_value(const struct sim_known2 *k, size_t s, int h, size_t mk)
{
	if (!k->top || s > k->ns || h < 0 || h >= KNOWN2_HOLDS || mk >= k->nm)
		return INFINITY;
	return k->top[(s * KNOWN2_HOLDS + (size_t)h) * k->nm + mk];
}
