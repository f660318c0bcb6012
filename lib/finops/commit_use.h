/*
 * commit_use.h - committed capacity over a window: what spotrun's jobs
 * used of each commitment (its Committed ledger rows) and what stayed
 * idle, paid for all the same (docs/finops.md "Committed capacity").
 *
 * A commitment is finops.json's, or a committed pool of a provider (a
 * Slurm partition: lib/ctl/commit.c adds one per partition, its nodes at
 * the amortised price, over the report's window).  Per commitment and
 * window [lo, hi) clipped to its period:
 *   used   the wall time of the Committed ledger rows of its provider,
 *          region and instance type starting in it, and their cost;
 *   idle   (period x count) - used instance time, at its hourly price:
 *          waste (the same figure alloc.h splits as a shared cost).
 *
 * Ownership: *out malloc'd, borrowing the commitments of c (keep c
 * alive); free(*out).
 */
#ifndef SR_FINOPS_COMMIT_USE_H
#define SR_FINOPS_COMMIT_USE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"
#include "fconf.h"
#include "store/store.h"

struct finops_commit_use {
	const struct finops_commitment *cm;  /* borrowed */
	int64_t lo, hi;                      /* the window within its period */
	int64_t used_ns;                     /* instance time used */
	sr_micros used_cost;                 /* its Committed rows' cost */
	int64_t idle_ns;                     /* instance time idle, >= 0 */
	sr_micros idle_cost;
};

/* cm's use over [lo, hi) clipped to its period, into *u (u->cm = cm):
 * 1 when the window overlaps the period, 0 when not (*u then has only
 * cm and the empty window), < 0 on error. */
int finops_commit_use_one(struct store *db, const struct finops_commitment *cm,
			  int64_t lo, int64_t hi, struct finops_commit_use *u,
			  struct sr_err *e);

/* One entry per commitment of c overlapping [lo, hi).  0 or < 0. */
int finops_commit_use(struct store *db, const struct finops_conf *c,
		      int64_t lo, int64_t hi, struct finops_commit_use **out,
		      size_t *n, struct sr_err *e);

/* {"idle_cost_micros", "idle_cost_usd", "used_cost_micros", ...,
 *  "pools": [{"commitment", "provider", "region", "instance_type",
 *  "count", "gpus", "hourly_price_micros", "used_hours", "used_cost_micros",
 *  "idle_hours", "idle_gpu_hours", "idle_cost_micros", ...}]}.  New
 * reference, NULL on out of memory. */
json_t *finops_commit_use_json(const struct finops_commit_use *v, size_t n);

#endif
