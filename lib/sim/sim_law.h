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

/* Two zones' joint spells: state j = (zone 0 up) | (zone 1 up) << 1, each
 * spell's length in steps and the state after it.  A market drawn from
 * it keeps the zones' correlation but nothing of either zone's own age:
 * a joint spell's end and the next state depend on j and its age only. */
struct sim_law2 {
	size_t n[4];
	int *len[4];
	uint8_t *next[4];
};

/* The joint spells of t[0] and t[1] (aligned at tick 0, the shorter one's
 * length, the cut ends left out).  Returns 0, -ENOMEM, or -EINVAL if the
 * gaps differ, there are fewer than two spells, or a spell leads to a
 * state with none of its own.  l owns its arrays (sim_law2_free). */
int sim_law2_from_traces(const struct trace *const t[2], int64_t step_s, struct sim_law2 *l);
void sim_law2_free(struct sim_law2 *l);

/* P(a joint spell of state j that has lasted a steps ends within the next
 * one), as sim_law_end; next[j2] = P(state j2 follows | it ends then). */
double sim_law2_end(const struct sim_law2 *l, int j, int a, int last, double next[4]);

/* A market of n steps drawn from l (seeded): out[z] is zone z's trace,
 * both owned by the caller (trace_free).  Returns 0 or -ENOMEM. */
int sim_law2_draw(const struct sim_law2 *l, int64_t step_s, size_t n, uint64_t seed,
		  struct trace *out[2]);

/* One tick of a spell's age as a policy sees it: *age_s grows by gap_s
 * while the availability stays *last, and is 0 on the first tick (seen =
 * 0) and when it changes. */
void sim_law_age(double *age_s, uint8_t *last, int seen, uint8_t avail, int64_t gap_s);

#endif
