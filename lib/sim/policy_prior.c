/*
 * policy_prior.c - the pooled prior of `spotrun`'s spell estimates
 * (policy_prior.h): fitting it from traces, and reading it on a job's
 * age buckets.
 */
#include <math.h>
#include <string.h>

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

void policy_prior_add(struct policy_prior *p, const struct trace *t)
{
	size_t n = (size_t)floor((double)t->n * (double)t->gap_s / PRIOR_TICK_S);
	size_t age = 0;
	int started = 0;
	uint8_t last = 0;

	for (size_t j = 0; j < n; j++) {
		size_t i = (size_t)floor((double)j * PRIOR_TICK_S / (double)t->gap_s);
		uint8_t a = t->avail[i < t->n ? i : t->n - 1] ? 1 : 0;

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
 * scripts/sim-policy-table lists (every JSON trace under data/traces)
 * (checked by tests/unit/test_sim_prior.c). */
const struct policy_prior policy_prior_bundled = {
	.ends = {
		{ 881, 286, 324, 321, 183, 133, 57, 42, 9, 10 },
		{ 655, 338, 348, 293, 248, 158, 115, 58, 26, 7 },
	},
	.expo = {
		{ 2254, 1373, 2004, 2433, 2737, 2924, 2717, 2508, 1814, 3418 },
		{ 2266, 1610, 2354, 3176, 3997, 4658, 4834, 4218, 2648, 2604 },
	},
};
