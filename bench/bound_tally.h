/*
 * bound_tally.h - the sums behind bench_policy_bound and
 * bench_policy_bound2: per window, the law-knowing reference's cost and
 * its plan's expected cost at the start, the optimum's, spotrun's and a
 * peer policy's; per market or set, their means; over all, the strict
 * bound (the reference's mean cost over optimal's, with its standard
 * error by the delta method) and the report both benches print.
 */
#ifndef SR_BENCH_BOUND_TALLY_H
#define SR_BENCH_BOUND_TALLY_H

#include <math.h>
#include <stdio.h>

struct tally {
	double opt, billed, v0;        /* sums of costs */
	double c2, o2, co, diff_sq;    /* for the standard errors */
	double known, known_sq, spotrun, peer; /* sums of cost / optimal */
	int windows, misses;
};

/* One window: the reference billed `known` (its plan expected v0), the
 * optimum `opt`, spotrun and the peer their costs; misses of the three. */
static inline void tally_window(struct tally *t, double opt, double known, double v0,
				double spotrun, double peer, int misses)
{
	t->opt += opt;
	t->billed += known;
	t->v0 += v0;
	t->c2 += known * known;
	t->o2 += opt * opt;
	t->co += known * opt;
	t->diff_sq += (known - v0) * (known - v0);
	t->known += known / opt;
	t->known_sq += (known / opt) * (known / opt);
	t->spotrun += spotrun / opt;
	t->peer += peer / opt;
	t->misses += misses;
	t->windows++;
}

/* Add one market's (or set's) tally t to sum: the cost sums pooled, the
 * mean ratios as the mean over markets of each market's mean. */
static inline void tally_add(struct tally *sum, const struct tally *t)
{
	sum->opt += t->opt;
	sum->billed += t->billed;
	sum->v0 += t->v0;
	sum->c2 += t->c2;
	sum->o2 += t->o2;
	sum->co += t->co;
	sum->diff_sq += t->diff_sq;
	sum->known_sq += t->known_sq;
	sum->windows += t->windows;
	sum->misses += t->misses;
	sum->known += t->known / t->windows;
	sum->spotrun += t->spotrun / t->windows;
	sum->peer += t->peer / t->windows;
}

/* The reference's mean cost over optimal's, and its standard error. */
static inline double tally_bound(const struct tally *t, double *se)
{
	double r = t->billed / t->opt, n = t->windows;

	*se = sqrt(fmax(0, t->c2 - 2 * r * t->co + r * r * t->o2) / n / n) / (t->opt / n);
	return r;
}

/* The closing lines over n markets (what: "markets" or "sets"), naming
 * the reference (known), the peer and what the reference's values come
 * from (whose: "plan" or "table"), and issue 27's goal: spotrun's mean
 * ratio to optimal at most goal x the reference's, 0 misses.  Returns 1
 * if the goal is met, 0 if not (the bench's exit status, for make bench). */
static inline int tally_report(const struct tally *sum, int n, const char *what,
			       const char *known, const char *peer, const char *whose,
			       double goal)
{
	double se, bound = tally_bound(sum, &se), mean = sum->known / n;
	double dmean = (sum->billed - sum->v0) / sum->windows;
	int met;

	printf("mean of %d %s, ratio to optimal: %s %.4f (standard error %.4f),\n"
	       "  spotrun %.4f, %s %.4f; spotrun / %s %.4f; misses %d\n"
	       "%s's mean cost over optimal's (no online policy can have a lower one): %.4f\n"
	       "  (standard error %.4f)\n"
	       "%s: the %s's expected cost at the start $%.2f, billed $%.2f (mean per window;\n"
	       "  difference %+.2f, standard error %.2f)\n",
	       n, what, known, mean,
	       sqrt(fmax(0, sum->known_sq / sum->windows - mean * mean) / sum->windows),
	       sum->spotrun / n, peer, sum->peer / n, known, sum->spotrun / sum->known,
	       sum->misses, known, bound, se, known, whose, sum->v0 / sum->windows,
	       sum->billed / sum->windows, dmean,
	       sqrt(fmax(0, sum->diff_sq / sum->windows - dmean * dmean) / sum->windows));
	met = sum->spotrun / sum->known <= goal && !sum->misses;
	printf("goal: spotrun / %s <= %.2f, 0 misses: %s\n", known, goal, met ? "met" : "NOT met");
	return met;
}

#endif
