/*
 * focus13.h - FOCUS 1.3 export: the Cost and Usage dataset (one row per
 * ledger row, plus the allocated charges of the shared costs), the
 * Contract Commitment dataset (reserved capacity from finops.json) and
 * the dataset metadata (freshness, completeness).  docs/finops.md "FOCUS
 * 1.3 export" lists every column and rule; tests/unit/focus_check.c
 * checks them.
 */
#ifndef SR_FINOPS_FOCUS13_H
#define SR_FINOPS_FOCUS13_H

#include <stdio.h>

#include "alloc.h"
#include "fconf.h"
#include "focus.h"

extern const char *const finops_focus13_columns[];   /* NULL-terminated */
extern const char *const finops_focus13_cc_columns[];/* Contract Commitment */

/* Cost and Usage: the ledger rows matching f, then the allocated charges
 * of a (may be NULL; with f->job_id only that job's).  c gives the
 * commitments a Committed row is applied to (ContractApplied). */
int finops_focus13_write(struct store *db, const struct finops_filter *f,
			 const struct finops_focus_opts *o,
			 const struct finops_conf *c, const struct finops_alloc *a,
			 FILE *out, size_t *nrows, struct sr_err *e);
/* Contract Commitment: one row per commitment of c. */
int finops_focus13_cc_write(const struct finops_conf *c,
			    const struct finops_focus_opts *o, FILE *out,
			    size_t *nrows, struct sr_err *e);
/* Metadata: a JSON object (new reference) naming the FOCUS version, the
 * data generator, when it was created, and per dataset its rows, the
 * newest ledger time it holds (freshness) and whether the window is
 * complete (every billing interval of it is in the ledger). */
json_t *finops_focus13_metadata(struct store *db, const struct finops_filter *f,
				int64_t now_ns, size_t cu_rows, size_t cc_rows,
				struct sr_err *e);

#endif
