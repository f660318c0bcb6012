/*
 * policy_prior.h - what `spotrun` believes about a market before it has
 * seen it: spell ends and exposure by age, pooled over many markets
 * (pools, GPU types, clouds), for the shrinkage of its own estimates
 * (policy_spotrun.c).
 *
 * A prior is counts, not rates: for outages (kind 0) and availability
 * runs (kind 1), how many spells ended at each age and how many ticks
 * were spent at each age, on a doubling scale of ages in 600 s ticks -
 * [0,1) [1,2) [2,4) ... [256,inf) - after each trace is resampled to
 * 600 s (the state at each 600 s boundary, as a probe would see it).
 * Kinds 2 and 3 are the pair model's counts (policy_spotrun.c,
 * pair_fit()) over markets of several zones: for each zone's run with no
 * other zone up (kind 2, o = 0) or another up (kind 3, o = 1) a tick
 * before, the ticks spent at each pair age (the time since the run began
 * or o last changed) and how many of them the pair changed (the run
 * ended or o flipped).
 * policy_prior_buckets() turns them into pseudo-counts on a job's own
 * age buckets and tick, scaled to a given number of spell ends: the
 * weight the prior has against the spell ends the policy has observed.
 *
 * The default prior (policy_prior_bundled) is fitted on every bundled
 * trace (data/traces); `spotrun trace prior` prints such a fit, and
 * tests/unit/test_sim_prior.c checks the table below against a fit of
 * the files.  For validation on folds it was not fitted on, a caller
 * fits its own on the other folds (`spotrun sim --prior-trace`).
 */
#ifndef SR_SIM_POLICY_PRIOR_H
#define SR_SIM_POLICY_PRIOR_H

#include <stdint.h>

#include "sim/trace.h"

#define PRIOR_BINS 10
#define PRIOR_TICK_S 600
#define PRIOR_PAIR 2 /* kind of the pair changes with o = 0; o = 1 is PRIOR_PAIR + 1 */
#define PRIOR_KINDS 4

struct policy_prior {
	/* [0] outages, [1] runs: spells ended by age bin; [2 + o] pair
	 * changes by pair age bin */
	double ends[PRIOR_KINDS][PRIOR_BINS];
	double expo[PRIOR_KINDS][PRIOR_BINS]; /* 600 s ticks spent at each age bin */
};

/* Fitted on every bundled trace (policy_prior.c). */
extern const struct policy_prior policy_prior_bundled;

/* Add one trace's spells: resampled to 600 s, the first spell (its start
 * unseen) left out, the last counted as exposure without an end. */
void policy_prior_add(struct policy_prior *p, const struct trace *t);

/* Add the pair counts (kinds 2, 3) of one market of n zones, t[0..n-1],
 * each resampled to 600 s and read index by index from their first ticks
 * (as sim_market_init() aligns regions) up to the shortest; a pair whose
 * start was not seen is left out until its first change.  Nothing with
 * n < 2 or n > SIM_MAX_REGIONS (policy_prior_fit() refuses those). */
void policy_prior_add_pairs(struct policy_prior *p, const struct trace *const *t, int n);

/* A fit of trace files: every file's spells (policy_prior_add()), and
 * the pair counts (policy_prior_add_pairs()) of each market among them:
 * the files whose paths differ only in the zone, the text up to the
 * first '_' of the last path component holding one (ZONE_INSTANCE.json
 * or ZONE_INSTANCE/full.json, as data/traces names them).  Adds to *p.
 * Returns 0, or trace_load()'s error with *e naming the file. */
int policy_prior_fit(struct policy_prior *p, const char *const *paths, int n,
		     struct sr_err *e);

/* The prior of kind `kind` (0-3) as pseudo-counts on a job's age buckets (the plan's
 * PLAN_AGES doubling buckets of unit_s, policy__plan_age()) and
 * ticks of gap_s: ends e[b] and exposure x[b] in ticks, scaled so that
 * the ends add up to `weight`.  A prior bin counts toward a bucket by the
 * share of its ages (whole 600 s ticks; the open last bin taken as
 * [256, 512)) that fall in the bucket.  All zero if the prior has no end
 * of that kind. */
void policy_prior_buckets(const struct policy_prior *p, int kind, double unit_s,
			  int64_t gap_s, double weight, double *e, double *x);

#endif
