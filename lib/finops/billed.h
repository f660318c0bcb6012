/*
 * billed.h - the cloud's billed figure kept beside spotrun's estimate
 * (`spotrun cost reconcile --apply`; docs/finops.md "Matching the bill").
 *
 * Table ledger_billed (append-only): per job, UTC day and provider, the
 * ledger's estimate and the bill's figure, with the bill it came from.
 * The newest row of a key supersedes older ones.  Reports then carry
 * billed_micros beside cost_micros (the estimate): in the total, and in
 * groups by job, day and cloud (the keys a bill is matched on).
 */
#ifndef SR_FINOPS_BILLED_H
#define SR_FINOPS_BILLED_H

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

#endif
