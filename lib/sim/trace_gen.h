/*
 * trace_gen.h - synthetic spot markets: a semi-Markov generator with
 * heavy-tailed spells, for stress-testing policies on market shapes the
 * bundled traces do not have (docs/simulator.md, "Synthetic traces").
 *
 * Each of `nodes` nodes alternates between up and down spells whose
 * lengths are Lomax (Pareto II) distributed with the given means and tail
 * shape; spot is available for a tick when every node of the gang is up
 * at its start (a gang needs all of its nodes).  One node gives a plain
 * alternating renewal process; many give what gang capacity looks like:
 * long outages and short, fragile spells.  On-demand costs od_ratio times
 * spot_price; spot costs spot_price, or, with price_vol > 0, a price that
 * moves every tick around it.
 *
 * Widened for issue 27 (markets the policy has never seen), all off by
 * default so the same seed and the old parameters give the old trace:
 *   - several zones drawn together (trace_gen_market), correlated by
 *     gang nodes they share: a shared node down takes every zone down;
 *   - a forced outage at the trace's start (all zones down for outage_h,
 *     broken by one-tick blips), after which the node processes, which
 *     ran on underneath, show again: an outage longer than a window's
 *     slack, with a recovery inside the window;
 *   - per-tick spot prices (a mean-reverting log price).
 */
#ifndef SR_SIM_TRACE_GEN_H
#define SR_SIM_TRACE_GEN_H

#include <stdint.h>

#include "common/err.h"
#include "sim/trace.h"

struct trace_gen_params {
	int nodes;         /* gang size, 1..TRACE_GEN_MAX_NODES */
	double up_h;       /* mean up spell of one node, hours (> 0) */
	double down_h;     /* mean down spell of one node, hours (> 0) */
	double tail;       /* Lomax shape, > 1: near 1 = very heavy tails,
			    * large = close to exponential (memoryless) */
	int64_t gap_s;     /* tick length, seconds (1..604800) */
	double hours;      /* trace length, hours */
	double spot_price; /* $/h (> 0) */
	double od_ratio;   /* on-demand / spot price (>= 1) */
	uint64_t seed;     /* same seed and parameters -> same trace */
	/* Off (0) by default: */
	int shared;        /* of the gang's nodes, how many every zone shares
			    * (0..nodes; trace_gen_market) */
	double outage_h;   /* forced outage from tick 0, hours (< hours) */
	double blip_h;     /* in it, mean hours between one-tick blips of spot
			    * (0 = none; else at least one tick) */
	double price_vol;  /* sd of the log spot price per tick around
			    * spot_price, mean-reverting with a 6 h half-life
			    * (0..2; 0 = constant) */
};

#define TRACE_GEN_MAX_NODES 256

/* Defaults: one 16-node gang, node spells of 20 h up / 1 h down with tail
 * 1.5, 600 s ticks, 30 days, spot $1/h, on-demand 5x, seed 1. */
void trace_gen_defaults(struct trace_gen_params *p);

/* Check the parameters; the error names the bad field and value. */
int trace_gen_check(const struct trace_gen_params *p, struct sr_err *e);

/* Generate one region's trace (*out: caller frees with trace_free). */
int trace_gen(const struct trace_gen_params *p, const char *name,
	      struct trace **out, struct sr_err *e);

#define TRACE_GEN_MAX_ZONES 16

/* Generate `zones` zones of one market (1..TRACE_GEN_MAX_ZONES), aligned
 * in time: zone k is the AND of its own nodes - p->nodes - p->shared of
 * them, drawn from seed + k, so with shared = 0 zone k is trace_gen()'s
 * trace for seed + k - and the p->shared nodes every zone shares (one
 * stream for all zones); the forced outage covers all zones at once, its
 * blips and the prices are each zone's own.  names[k] names zone k.  On
 * success out[0..zones-1] are new traces (caller frees each with
 * trace_free); on failure all are NULL. */
int trace_gen_market(const struct trace_gen_params *p, int zones,
		     const char *const *names, struct trace **out, struct sr_err *e);

/* Write a trace as SkyNomad JSON (1 = unavailable, prices, price_info),
 * durably (temp file, fsync, rename).  spot_price is price_info.price. */
int trace_write_skynomad(const struct trace *t, double spot_price,
			 const char *path, struct sr_err *e);

#endif
