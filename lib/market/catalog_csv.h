/*
 * catalog_csv.h - internal: an RFC 4180 CSV record reader over a buffer.
 *
 * Quoted fields may hold commas, doubled quotes ("") and line breaks;
 * records end at LF or CRLF.  Each record reports the 1-based line on
 * which it starts, so errors can name file:line.  Used by the SkyPilot
 * catalog loader and the offerings table; not a public API.
 */
#ifndef SR_MARKET_CATALOG_CSV_H
#define SR_MARKET_CATALOG_CSV_H

#include <stddef.h>

#include "common/err.h"

struct catalog__csv {
	const char *buf, *end, *p; /* input (borrowed) and read position */
	const char *name;          /* file name for messages (borrowed) */
	int line;                  /* line of the next unread byte */
	char **fields;             /* current record, owned */
	size_t nfields, capfields;
	char *store;               /* field text storage, owned */
	size_t storelen, storecap;
};

void catalog__csv_open(struct catalog__csv *r, const char *buf, size_t len,
		       const char *name);
/* Read the next record.  Returns 1 with r->fields/r->nfields set (valid
 * until the next call) and *line its first line, 0 at end of input, or a
 * negative code with e set ("name:line: unterminated quoted field"). */
int catalog__csv_next(struct catalog__csv *r, int *line, struct sr_err *e);
void catalog__csv_close(struct catalog__csv *r); /* NULL-safe */

/* Read the header record and find names[0..n) in it: col[k] = index, or
 * -1 for an absent name whose bit k is set in optional_mask (a missing
 * required name is "name:line: header: no column X").  *nfields = the
 * header's field count, which every data row must match. */
int catalog__csv_header(struct catalog__csv *r, const char *const *names,
			int n, unsigned optional_mask, int *col, size_t *nfields,
			struct sr_err *e);

/* Next data record with exactly nfields fields, skipping blank lines:
 * 1 with *line set, 0 at the end, or a negative code. */
int catalog__csv_row(struct catalog__csv *r, size_t nfields, int *line,
		     struct sr_err *e);

/* The part of path after its last '/'. */
const char *catalog__basename(const char *path);

/* Index of column `name` in a header record, or -1. */
int catalog__csv_col(char *const *hdr, size_t n, const char *name);

/* Strict number parsing for catalog cells: the whole cell must be a finite
 * decimal number >= 0.  Returns 0 or -EINVAL. */
int catalog__parse_num(const char *s, double *out);

/* Read a whole file into a malloc'd NUL-terminated buffer. */
int catalog__read_file(const char *path, char **buf, size_t *len,
		       struct sr_err *e);

#endif
