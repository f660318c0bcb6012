/*
 * focus.h - FOCUS 1.2 CSV export of the ledger.
 *
 * One FOCUS row per ledger row (ChargeCategory "Usage"), with the 21
 * mandatory columns first, then the conditional columns we can fill, then
 * our own `x_` columns.  The column list and every value rule are in the
 * comment at the top of focus.c and in docs/finops.md.
 *
 * Formatting rules applied to every value:
 *   - date/times are UTC "YYYY-MM-DDTHH:mm:ssZ";
 *   - NULL is an empty field, never a placeholder;
 *   - numbers are plain decimals: no sign for positives, no thousands
 *     separator, no exponent, no currency symbol or unit;
 *   - CSV per RFC 4180: CRLF line ends, fields holding a comma, quote, CR
 *     or LF are quoted with inner quotes doubled.
 */
#ifndef SR_FINOPS_FOCUS_H
#define SR_FINOPS_FOCUS_H

#include <stddef.h>
#include <stdio.h>

#include "common/err.h"
#include "report.h"

struct finops_focus_opts {
	const char *billing_account_id;   /* default "spotrun" */
	const char *billing_account_name; /* default "spotrun" */
};

/* The header, in order (NULL-terminated static array). */
extern const char *const finops_focus_columns[];
size_t finops_focus_ncolumns(void);

/* Write the CSV for the ledger rows matching f (may be NULL) to `out`.
 * *nrows (may be NULL) receives the number of data rows.  Returns 0 or a
 * negative code with *e set. */
int finops_focus_write(struct store *db, const struct finops_filter *f,
		       const struct finops_focus_opts *o, FILE *out,
		       size_t *nrows, struct sr_err *e);

/* Same, durably written to `path` (temp file, fsync, rename, fsync dir;
 * mode 0644). */
int finops_focus_export(struct store *db, const struct finops_filter *f,
			const struct finops_focus_opts *o, const char *path,
			size_t *nrows, struct sr_err *e);

/* Number formatting used by the export (exposed for tests):
 * micro-dollars as a decimal ("0.46", "12", "-0.5"), and a duration as
 * decimal hours rounded to 12 places ("0.5", "0.000277777778").
 * Return the length or -ENOSPC. */
int finops_fmt_micros(sr_micros m, char *buf, size_t n);
int finops_fmt_hours(int64_t ns, char *buf, size_t n);

#endif
