/*
 * alloc.h - shared costs and how they are split (docs/finops.md "Shared
 * costs").
 *
 * Shared costs are what no single job bought:
 *   - the control plane's own instance (finops.json control_plane): its
 *     hourly price over the window, wall clock;
 *   - idle reserved capacity: each commitment's instance-hours in the
 *     window not used by a Committed ledger row of its provider, region
 *     and instance type, at its hourly price.  It stays waste, and is
 *     allocated too.
 * Each is one origin charge per calendar month (UTC) of the window, split
 * over the jobs that ran in that month:
 *   gpu_hours (default)  each job's share of the month's GPU-hours billed
 *                        (node-hours when no job used a GPU);
 *   even                 each team (label, "unassigned" for none) alike,
 *                        and within a team by GPU-hours.
 * A month with no job gives the whole charge to job 0 ("unassigned").
 * The shares of one charge sum to its cost exactly (micro-dollars, by
 * largest remainder) and their ratios to 1.
 *
 * Ownership: *out owns its arrays; finops_alloc_free releases them.
 */
#ifndef SR_FINOPS_ALLOC_H
#define SR_FINOPS_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"
#include "fconf.h"
#include "report.h"

enum finops_shared_kind {
	FINOPS_SHARED_CONTROL_PLANE = 0,
	FINOPS_SHARED_IDLE_RESERVED,
};

/* One origin charge. */
struct finops_shared_item {
	enum finops_shared_kind kind;
	const struct finops_commitment *cm;  /* IDLE_RESERVED: borrowed from
						the conf */
	int64_t start_ns, end_ns;            /* within one UTC month */
	int64_t qty_ns;                      /* hours (x count) charged */
	sr_micros unit_price;                /* $/h */
	sr_micros cost;
};

/* One allocated charge: item's share for one job. */
struct finops_share {
	size_t item;                         /* index into items */
	int64_t job_id;                      /* 0: no job ran */
	char team[64], project[64], cost_center[64], job_name[128];
	int64_t gpu_ns;                      /* the job's usage that month */
	double ratio;                        /* of the item's cost */
	sr_micros cost;
};

struct finops_alloc {
	enum finops_split split;
	struct finops_shared_item *items;
	size_t nitems;
	struct finops_share *shares;         /* grouped by item */
	size_t nshares;
};

/* Build the shared charges of the window [f->since_ns or the first ledger
 * row, f->until_ns or now_ns) and their split.  f->job_id is ignored
 * (costs are shared over every job).  0 or < 0 with *e set. */
/* The window of a report as the shared costs take it: [f->since_ns, or
 * the first ledger row (hi when the ledger is empty); f->until_ns, or
 * now_ns), whole seconds.  0 or < 0 with *e set. */
int finops_window(struct store *db, const struct finops_filter *f,
		  int64_t now_ns, int64_t *lo, int64_t *hi, struct sr_err *e);

int finops_alloc_build(struct store *db, const struct finops_conf *c,
		       const struct finops_filter *f, int64_t now_ns,
		       struct finops_alloc *out, struct sr_err *e);
void finops_alloc_free(struct finops_alloc *a); /* NULL-safe */

/* Add the shares to r's groups (by total, job, team, project or
 * cost_center; other groupings get it in the total only) as
 * totals.shared_cost.  0 or -ENOMEM. */
int finops_report_add_shared(struct finops_report *r,
			     const struct finops_alloc *a, int64_t job_id);

#endif
