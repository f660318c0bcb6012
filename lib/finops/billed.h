/*
 * billed.h - the cloud's billed figure kept beside spotrun's estimate
 * (`spotrun cost reconcile --apply`; docs/finops.md "Matching the bill").
 *
 * Table ledger_billed (append-only): per job, UTC day and provider, the
 * ledger's estimate and the bill's figure, with the bill it came from.
 * The newest row of a key supersedes older ones.  Reports then carry
 * billed_micros beside cost_micros (the estimate): in the total, and in
 * groups by job, day and cloud (the keys a bill is matched on).
 *
 * Per ledger row (the FOCUS exports: BilledCost and EffectiveCost, the
 * estimate in x_EstimatedCost; /metrics sums the same per job), a cell's
 * billed figure is spread over the cell's rows in proportion to their
 * estimates, in the order they come: row k gets round(billed * E_k /
 * estimate) - round(billed * E_k-1 / estimate), E_k the estimates seen
 * so far, so the rows of a cell sum to its billed figure to the
 * micro-dollar while the ledger holds what the bill was applied to (rows
 * billed since are scaled alike).  A row of a day no bill covers keeps
 * its estimate.
 */
#ifndef SR_FINOPS_BILLED_H
#define SR_FINOPS_BILLED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"
#include "report.h"
#include "store/store.h"

struct finops_billed {
	int64_t job_id;            /* 0: lines of no job */
	int64_t day;               /* UTC days since the epoch */
	char provider[32];
	sr_micros estimate, billed;
};

/* Record cells (one transaction of the caller's, or its own).  0 or < 0
 * with *e set; -EINVAL naming a bad cell. */
int finops_billed_add(struct store *db, const struct finops_billed *v, size_t n,
		      const char *source, int64_t now_ns, struct sr_err *e);

/* Add the newest billed figures inside f's window (by day) to r: total
 * and, by job/day/cloud, the groups (billed_rows counts them). */
int finops_billed_report(struct store *db, const struct finops_filter *f,
			 struct finops_report *r, struct sr_err *e);

/* The newest applied cells, for spreading over ledger rows (above). */
struct finops_billed_cell {
	int64_t job_id, day;
	char provider[32];         /* nodes.provider */
	sr_micros estimate, billed;
	sr_micros seen, given;     /* the rows' estimates and shares so far */
};

struct finops_billed_map {
	struct finops_billed_cell *v; /* malloc'd; finops_billed_map_free */
	size_t n;
};

/* Load every key's newest cell into *m (empty when no bill was applied).
 * 0 or < 0 with *e set. */
int finops_billed_map_load(struct store *db, struct finops_billed_map *m,
			   struct sr_err *e);
void finops_billed_map_free(struct finops_billed_map *m); /* NULL-safe */

/* A ledger row's billed share (its job, UTC day, its node's provider and
 * its estimate `cost`): *billed says whether a bill covered it (else the
 * estimate is returned).  m may be NULL. */
sr_micros finops_billed_share(struct finops_billed_map *m, int64_t job,
			      int64_t day, const char *provider, sr_micros cost,
			      bool *billed);

#endif
