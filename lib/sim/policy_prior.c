/*
 * policy_prior.c - the pooled prior of `spotrun`'s spell estimates
 * (policy_prior.h): fitting it from traces, and reading it on a job's
 * age buckets.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/policy.h"
#include "sim/policy_prior.h"
#include "sim/policy_spotrun_plan.h"

/* Bin of an age of a whole 600 s ticks: 0 for 0, then 1 + floor(log2 a). */
static int bin_of(size_t a)
{
	int j = 0;

	while (a && j < PRIOR_BINS - 1) {
		a >>= 1;
		j++;
	}
	return j;
}

/* Ticks of t resampled to 600 s, and the state at 600 s tick j. */
static size_t len600(const struct trace *t)
{
	return (size_t)floor((double)t->n * (double)t->gap_s / PRIOR_TICK_S);
}

static uint8_t at600(const struct trace *t, size_t j)
{
	size_t i = (size_t)floor((double)j * PRIOR_TICK_S / (double)t->gap_s);

	return t->avail[i < t->n ? i : t->n - 1] ? 1 : 0;
}

void policy_prior_add(struct policy_prior *p, const struct trace *t)
{
	size_t n = len600(t);
	size_t age = 0;
	int started = 0;
	uint8_t last = 0;

	for (size_t j = 0; j < n; j++) {
		uint8_t a = at600(t, j);

		if (j && a != last) {
			if (started)
				p->ends[last][bin_of(age)]++;
			started = 1; /* the first spell's start was not seen */
			age = 0;
		} else if (j) {
			age++;
		}
		if (started)
			p->expo[a][bin_of(age)]++;
		last = a;
	}
}

/* As spotrun_observe() counts the pairs (policy_spotrun.c): at each tick,
 * each zone that was up a tick before, with o = another zone up then,
 * adds a tick of exposure at its pair age, and a change if it went down
 * or o flipped; the pair's age then goes on or restarts at 0. */
void policy_prior_add_pairs(struct policy_prior *p, const struct trace *const *t, int n)
{
	size_t len = SIZE_MAX, age[SIM_MAX_REGIONS] = { 0 };
	uint8_t last[SIM_MAX_REGIONS] = { 0 }, seen[SIM_MAX_REGIONS] = { 0 };

	if (n < 2 || n > SIM_MAX_REGIONS)
		return;
	for (int z = 0; z < n; z++)
		len = len600(t[z]) < len ? len600(t[z]) : len;
	for (size_t j = 0; j < len; j++) {
		uint8_t a[SIM_MAX_REGIONS];
		int nup = 0, nwas = 0;

		for (int z = 0; z < n; z++) {
			a[z] = at600(t[z], j);
			nup += a[z];
			nwas += last[z];
		}
		for (int z = 0; z < n && j > 0; z++) { /* the first tick only sets last */
			int o = nwas - 1 > 0, on = nup - a[z] > 0;

			if (last[z] && seen[z]) {
				p->expo[PRIOR_PAIR + o][bin_of(age[z])]++;
				if (!a[z] || on != o)
					p->ends[PRIOR_PAIR + o][bin_of(age[z])]++;
			}
			if (last[z] && a[z] && o == on) {
				age[z]++;
			} else {
				age[z] = 0;
				seen[z] = 1; /* the next pair starts here */
			}
		}
		memcpy(last, a, (size_t)n);
	}
}

/* The market a trace file belongs to: its path without the zone, the
 * text up to and with the first '_' of the last path component that has
 * one (data/traces: ZONE_INSTANCE.json, ZONE_INSTANCE/full.json).
 * Writes at most cap bytes to key. */
static void market_key(const char *path, char *key, size_t cap)
{
	const char *comp = NULL, *c = path;

	for (const char *q = path;; q++) { /* c: the start of each component */
		if (*q == '/' || !*q) {
			const char *u = memchr(c, '_', (size_t)(q - c));

			if (u)
				comp = c;
			if (!*q)
				break;
			c = q + 1;
		}
	}
	if (!comp) {
		snprintf(key, cap, "%s", path);
		return;
	}
	snprintf(key, cap, "%.*s%s", (int)(comp - path), path, strchr(comp, '_') + 1);
}

int policy_prior_fit(struct policy_prior *p, const char *const *paths, int n,
		     struct sr_err *e)
{
	struct trace *t[SIM_MAX_REGIONS] = { NULL };
	uint8_t *done = calloc(n > 0 ? (size_t)n : 1, 1);
	char ki[4096], kj[4096];
	int m = 0, rc = 0;

	if (!done)
		return sr_err_set(e, -ENOMEM, "prior: out of memory");
	for (int i = 0; i < n && !rc; i++) {
		if (done[i])
			continue;
		market_key(paths[i], ki, sizeof ki);
		for (int j = i; j < n && !rc; j++) {
			if (done[j])
				continue;
			market_key(paths[j], kj, sizeof kj);
			if (strcmp(ki, kj))
				continue;
			done[j] = 1;
			if (m == SIM_MAX_REGIONS) {
				rc = sr_err_set(e, -EINVAL,
						"%s: more than %d zones of one market (prior)",
						paths[j], SIM_MAX_REGIONS);
				break;
			}
			rc = trace_load(paths[j], TRACE_FMT_AUTO, &t[m], e);
			if (!rc)
				policy_prior_add(p, t[m++]);
		}
		if (!rc)
			policy_prior_add_pairs(p, (const struct trace *const *)t, m);
		while (m)
			trace_free(t[--m]);
	}
	free(done);
	return rc;
}

void policy_prior_buckets(const struct policy_prior *p, int kind, double unit_s,
			  int64_t gap_s, double weight, double *e, double *x)
{
	double total = 0;

	for (int b = 0; b < PLAN_AGES; b++)
		e[b] = x[b] = 0;
	for (int j = 0; j < PRIOR_BINS; j++) {
		size_t lo = j ? (size_t)1 << (j - 1) : 0, hi = j ? 2 * lo : 1;

		for (size_t a = lo; a < hi; a++) {
			int b = policy__plan_age((double)a * PRIOR_TICK_S, unit_s);

			e[b] += p->ends[kind][j] / (double)(hi - lo);
			x[b] += p->expo[kind][j] / (double)(hi - lo) * PRIOR_TICK_S /
				(double)gap_s;
		}
	}
	for (int b = 0; b < PLAN_AGES; b++)
		total += e[b];
	for (int b = 0; b < PLAN_AGES; b++) {
		e[b] = total > 0 ? e[b] * weight / total : 0;
		x[b] = total > 0 ? x[b] * weight / total : 0;
	}
}

/* Fitted on every bundled trace: `spotrun trace prior` over the files
 * scripts/sim-policy-table lists (every JSON trace under data/traces),
 * kinds 2 and 3 over its markets of several zones (policy_prior_fit())
 * (checked by tests/unit/test_sim_prior.c). */
const struct policy_prior policy_prior_bundled = {
	.ends = {
		{ 881, 286, 324, 321, 183, 133, 57, 42, 9, 10 },
		{ 655, 338, 348, 293, 248, 158, 115, 58, 26, 7 },
		{ 879, 257, 186, 129, 70, 39, 23, 11, 5, 0 },
		{ 737, 319, 341, 341, 227, 160, 89, 33, 14, 1 },
	},
	.expo = {
		{ 2254, 1373, 2004, 2433, 2737, 2924, 2717, 2508, 1814, 3418 },
		{ 2266, 1610, 2354, 3176, 3997, 4658, 4834, 4218, 2648, 2604 },
		{ 1600, 721, 820, 850, 891, 926, 842, 694, 169, 0 },
		{ 2280, 1542, 2251, 2948, 3282, 3600, 2967, 2193, 1486, 323 },
	},
};
