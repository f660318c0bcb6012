/*
 * sim_law.h - renewal markets with a known law, for the bounds at 52 h /
 * 0.2 h (bench/bench_policy_bound*.c).
 *
 * A trace's availability runs and outages (the first and last, cut by the
 * trace's ends, left out) are measured in whole steps, each at least one.
 * A renewal market drawn from them alternates runs and outages, each
 * length drawn independently from the trace's own list, so nothing but a
 * spell's age says anything about its end, and the chance that a spell of
 * age a ends within the next step is known exactly:
 * h(a) = #(L = a+1) / #(L > a) over the list.
 */
#ifndef SR_SIM_SIM_LAW_H
#define SR_SIM_SIM_LAW_H

#include <stddef.h>
#include <stdint.h>

#include "sim/trace.h"

/* Spell lengths in steps: [0] outages, [1] runs. */
struct sim_law {
	size_t n[2];
	int *len[2];
};

/* The spells of t in steps of step_s seconds.  Returns 0, -ENOMEM, or
 * -EINVAL if it has fewer than two of each kind.  l owns its arrays
 * (sim_law_free). */
int sim_law_from_trace(const struct trace *t, int64_t step_s, struct sim_law *l);
/* NULL-safe; frees the arrays, not l. */
void sim_law_free(struct sim_law *l);

/* P(a spell of kind k (1 = run) that has lasted a steps ends within the
 * next one); age `last` stands for every older one (mean end rate over
 * them). */
double sim_law_end(const struct sim_law *l, int k, int a, int last);

/* A renewal market of n steps drawn from l (seeded).  Returns 0 or
 * -ENOMEM; *out owned by the caller (trace_free). */
int sim_law_draw(const struct sim_law *l, int64_t step_s, size_t n, uint64_t seed,
		 struct trace **out);

/* One tick of a spell's age as a policy sees it: *age_s grows by gap_s
 * while the availability stays *last, and is 0 on the first tick (seen =
 * 0) and when it changes. */
void sim_law_age(double *age_s, uint8_t *last, int seen, uint8_t avail, int64_t gap_s);

#endif
