/*
 * sim_optimal.c - the omniscient offline optimum (`optimal`): a dynamic
 * program over the simulator's model that knows the whole window.
 *
 * Slack.  With work W and deadline D, a schedule succeeds iff the time it
 * does NOT turn into work before finishing - idle ticks, restart
 * overheads, ticks lost to preemption - is at most D - W.  Call that
 * time the slack used, s.  At boundary t a state with slack s has done
 * w = t*gap - s of work, so (t, s) determines the work.
 *
 * State space.  At every tick boundary t (0 <= t <= ceil(D/gap)):
 *
 *     N(t, s)     holding nothing
 *     O(t, s)     a productive (overhead served) on-demand instance
 *     P_r(t, s)   a productive spot instance in region r, r < nregions
 *
 * with s in [0, D - W] in quanta of q seconds, value = least $ spent.
 * That is (2 + nregions) * (D/gap) * ((D - W)/q) cells; each tick is a
 * handful of vector min operations over s.
 *
 * Transitions at boundary t (F = min of N, O and the P_r that survive
 * the preemption check: stopping is free at a boundary):
 *
 *     P_r(t) with spot gone in r at t    -> F(t)            (preempted)
 *     F(t)          idle one tick        -> N(t+1, s + gap)
 *     O(t), P_r(t)  run one tick         -> O/P_r(t+1, s), + price(t),
 *                                           or done if w + gap >= W
 *     F(t)          start on-demand      -> O(t+K, s + R), + K ticks of od
 *     F(t)          start spot in r      -> P_r(t+K, s + R), + K ticks of
 *                   (spot up in r for all of t .. t+K-1)   spot in r
 *
 * where K = ceil(R/gap): a start is folded into one step over its
 * overhead (a productive instance gives gap - R mod gap in the tick that
 * finishes the overhead, which the s + R bookkeeping captures exactly).
 * A start that is preempted during its overhead is left out: it spends
 * the same slack as idling and costs more, so it is never optimal.
 *
 * Relaxations (each can only lower the value, so the result stays a
 * lower bound on every policy): the slack quantum q is gcd(gap, R) when
 * that keeps the table under SLACK_BINS_PREF bins, else gap, with R
 * rounded down to a multiple of it;
 * with a checkpoint interval the optimum may stop at the boundary of a
 * preemption without losing work; checkpoint egress between regions is
 * not charged.  With continuous checkpointing, no egress and q | R (all
 * of the paper's settings except the 32 s traces at 70 h and the 34 s
 * traces, where R is rounded down to whole ticks: 6-20 s less per start)
 * the value is exact.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* The inner loops are element-wise min/add over the slack axis; let gcc
 * vectorise them as clang does at -O2. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize")
#endif

#define SLACK_BINS_PREF 4096   /* use gcd(gap, R) below this many bins */
#define SLACK_BINS_MAX 262144  /* refuse (-E2BIG) above this many */

struct dp {
	int nr;            /* regions */
	size_t S;          /* slack bins: s in [0, S] */
	size_t ring;       /* K + 2 layers */
	double *N, *O, *P; /* [ring][S+1], P: [ring][nr][S+1] */
	double *F;         /* [S+1] */
};

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static double *layer(double *base, size_t t, size_t ring, size_t width)
{
	return base + (t % ring) * width;
}

static void fill_inf(double *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = INFINITY;
}

/* dst[i + shift] = min(dst[i + shift], src[i] + add) for i <= hi, i + shift <= S.
 * Written branch-free so that it vectorises. */
static void relax_shift(double *restrict dst, const double *restrict src,
			size_t S, size_t shift, double add, size_t hi)
{
	if (shift > S)
		return;
	if (hi > S - shift)
		hi = S - shift;
	dst += shift;
	for (size_t i = 0; i <= hi; i++) {
		double v = src[i] + add, w = dst[i];

		dst[i] = v < w ? v : w;
	}
}

/* min over src[0..n) + add, or INFINITY if n == 0. */
static double min_plus(const double *src, size_t n, double add)
{
	double b = INFINITY;

	for (size_t i = 0; i < n; i++) {
		double v = src[i] + add;

		b = v < b ? v : b;
	}
	return b;
}

/* dst[i] = min(dst[i], a[i]) for i <= hi. */
static void min_into(double *restrict dst, const double *restrict a, size_t hi)
{
	for (size_t i = 0; i <= hi; i++)
		dst[i] = a[i] < dst[i] ? a[i] : dst[i];
}

int sim_optimal(const struct sim_market *m, size_t start,
		const struct sim_params *p, double *cost)
{
	struct dp d = { 0 };
	int64_t gap = m->gap_s, R = llround(p->restart_h * 3600), q;
	double W = p->work_h * 3600, D = p->deadline_h * 3600, best = INFINITY;
	size_t ticks = sim_window_ticks(m, p), K, G, Rq, width;
	size_t *up_until = NULL; /* [nr][ticks+1]: first tick >= t without spot */
	int rc = 0;

	*cost = INFINITY;
	if (start > m->n || m->n - start < ticks || W <= 0 || D <= 0 || R < 0)
		return -EINVAL;
	if (W + (double)R > D)
		return 0; /* not even on-demand from the start can make it */
	q = R > 0 ? gcd64(gap, R) : gap;
	if ((D - W) / (double)q > SLACK_BINS_PREF)
		q = gap;
	if ((D - W) / (double)q > SLACK_BINS_MAX)
		return -E2BIG;
	d.nr = m->nregions;
	d.S = (size_t)floor((D - W) / (double)q);
	K = (size_t)((R + gap - 1) / gap);
	G = (size_t)(gap / q);
	Rq = (size_t)(R / q);
	d.ring = K + 2; /* layers t .. t+K+1 live at once */
	width = d.S + 1;
	d.N = malloc(d.ring * width * sizeof(double));
	d.O = malloc(d.ring * width * sizeof(double));
	d.P = malloc(d.ring * (size_t)d.nr * width * sizeof(double));
	d.F = malloc(width * sizeof(double));
	up_until = malloc((size_t)d.nr * (ticks + 1) * sizeof *up_until);
	if (!d.N || !d.O || !d.P || !d.F || !up_until) {
		rc = -ENOMEM;
		goto out;
	}
	fill_inf(d.N, d.ring * width);
	fill_inf(d.O, d.ring * width);
	fill_inf(d.P, d.ring * (size_t)d.nr * width);
	for (int r = 0; r < d.nr; r++) {
		size_t *u = up_until + (size_t)r * (ticks + 1);

		u[ticks] = ticks;
		for (size_t t = ticks; t-- > 0;)
			u[t] = m->avail[r][start + t] ? u[t + 1] : t;
	}
	layer(d.N, 0, d.ring, width)[0] = 0;

	for (size_t t = 0; t < ticks; t++) {
		double *N = layer(d.N, t, d.ring, width);
		double *O = layer(d.O, t, d.ring, width);
		double odp = m->od_price * (double)gap / 3600.0;
		/* Highest slack bin reachable by now, and the highest bin at
		 * which a productive tick t finishes the work. */
		double lim = ((double)(t + 1) * (double)gap - W) / (double)q;
		size_t hi = t * G; /* slack used <= time elapsed */
		long term = lim < 0 ? -1 : (long)floor(lim + 1e-9);

		if (hi > d.S)
			hi = d.S;
		memcpy(d.F, N, width * sizeof(double));
		min_into(d.F, O, hi);
		for (int r = 0; r < d.nr; r++) {
			double *P = layer(d.P, t, d.ring, width * (size_t)d.nr) + (size_t)r * width;

			min_into(d.F, P, hi);
			if (!m->avail[r][start + t])
				fill_inf(P, width); /* preempted: only F keeps them */
		}
		/* Starts (K = 0 means no overhead: the start is productive now). */
		for (int r = -1; r < d.nr; r++) {
			size_t land = t + K;
			double c = 0;
			double *dst;

			if (land > ticks)
				break;
			if (r < 0) {
				c = (double)K * odp;
				dst = layer(d.O, land, d.ring, width);
			} else {
				if (up_until[(size_t)r * (ticks + 1) + t] < t + K ||
				    !m->avail[r][start + t])
					continue;
				for (size_t k = 0; k < K; k++)
					c += sim_spot_price(m, r, start + t + k) * (double)gap / 3600.0;
				dst = layer(d.P, land, d.ring, width * (size_t)d.nr) + (size_t)r * width;
			}
			if (K > 0) {
				/* Finishing inside the overhead's last tick:
				 * i + Rq <= ((t+K)*gap - W)/q. */
				double l2 = ((double)land * (double)gap - W) / (double)q;

				if (l2 >= (double)Rq - 1e-9 && Rq <= d.S) {
					/* ... and by the deadline: i + Rq <= S. */
					double lim2 = fmin(floor(l2 + 1e-9), (double)d.S) - (double)Rq;
					size_t n2 = lim2 >= (double)hi ? hi + 1 : (size_t)lim2 + 1;
					double b = min_plus(d.F, n2, c);

					best = b < best ? b : best;
				}
			}
			relax_shift(dst, d.F, d.S, Rq, c, hi);
		}
		/* Productive ticks: finish, or carry on to t+1. */
		for (int r = -1; r < d.nr; r++) {
			double *src, *dst, price;

			if (r < 0) {
				src = O;
				dst = layer(d.O, t + 1, d.ring, width);
				price = odp;
			} else {
				src = layer(d.P, t, d.ring, width * (size_t)d.nr) + (size_t)r * width;
				if (!m->avail[r][start + t])
					continue;
				dst = layer(d.P, t + 1, d.ring, width * (size_t)d.nr) + (size_t)r * width;
				price = sim_spot_price(m, r, start + t) * (double)gap / 3600.0;
			}
			{
				size_t nt = term < 0 ? 0 : (size_t)term + 1;
				double b;

				if (nt > hi + 1)
					nt = hi + 1;
				b = min_plus(src, nt, price);
				best = b < best ? b : best;
				if (nt <= hi)
					relax_shift(dst + nt, src + nt, d.S - nt, 0, price, hi - nt);
			}
		}
		/* Idle tick. */
		relax_shift(layer(d.N, t + 1, d.ring, width), d.F, d.S, G, 0, hi);
		/* Layer t is done: recycle it for t + ring. */
		fill_inf(N, width);
		fill_inf(O, width);
		fill_inf(layer(d.P, t, d.ring, width * (size_t)d.nr), width * (size_t)d.nr);
	}
	*cost = best;
out:
	free(d.N);
	free(d.O);
	free(d.P);
	free(d.F);
	free(up_until);
	return rc;
}
