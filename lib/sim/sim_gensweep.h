/*
 * sim_gensweep.h - one cell of the widened generator sweep (issue 27):
 * spotrun against Uniform Progress (up, ups) and the offline optimum on
 * synthetic markets of one shape (trace_gen.h), the same windows for
 * every policy.
 *
 * A cell is a market shape and a job.  Its windows are either
 * stationary - non-overlapping windows of one market, each after
 * history_h of it - or each in a market of its own that starts in a
 * forced outage (spot down everywhere, one-tick blips every blip_h) and
 * recovers outage_left_h into the window: the policy's whole history is
 * that outage, and the outage outlasts the window's slack.
 *
 * Used by tests/unit/test_sim_synthetic.c (a few cells, in make check)
 * and bench/bench_policy_sweep.c (the whole grid, in make bench).
 */
#ifndef SR_SIM_SIM_GENSWEEP_H
#define SR_SIM_SIM_GENSWEEP_H

#include <stdint.h>

#include "common/err.h"
#include "sim/trace_gen.h"

struct gensweep_cell {
	struct trace_gen_params gen; /* nodes, spells, tail, tick, prices, ratio,
				      * shared nodes; seed, hours, outage_h set
				      * per window */
	int zones;                   /* 1..TRACE_GEN_MAX_ZONES */
	double work_h, deadline_h, restart_h, history_h;
	/* 0: stationary windows.  > 0: every window starts in a forced
	 * outage that ends this many hours in.  < 0: the same, the hours
	 * drawn per window uniformly from [slack + 1, deadline - 10]. */
	double outage_left_h;
	int zone_pairs; /* spotrun's model across zones: policy_job.zone_pairs */
};

struct gensweep_result {
	int windows, misses;  /* misses of all policies run */
	double spotrun, up, ups, optimal; /* mean cost per window, $ */
	double spotrun_spot;  /* spotrun's share of held ticks on spot */
};

/* The sweep's base cell: 600 s ticks, node spells 30 h up / 1 h down
 * with tail 1.5, spot prices that move every tick (log-price sd 0.2),
 * one-tick blips every 4 h in a forced outage; one zone; 48 h of work by
 * a 60 h deadline, R = 0.2 h, 24 h of history; stationary windows. */
void gensweep_cell_base(struct gensweep_cell *c);

/* Issue 27's market, rebuilt on the base cell: a 16-node gang, on-demand
 * 5.6x spot at a fixed price, node spells 2000 h up (spot up for days
 * once back), every window starting in an outage that ends left_h hours
 * into it. */
void gensweep_cell_issue27(struct gensweep_cell *c, double left_h);

/* Run `windows` windows of cell c (seeded: the same seed gives the same
 * result); optimal too if with_optimal (else r->optimal = NAN).  Returns
 * 0, or -EINVAL (a bad cell) / -ENOMEM with e set. */
int gensweep_run(const struct gensweep_cell *c, int windows, uint64_t seed,
		 int with_optimal, struct gensweep_result *r, struct sr_err *e);

/* spotrun's mean cost over the better of up's and ups's. */
double gensweep_vs_up(const struct gensweep_result *r);

#endif
