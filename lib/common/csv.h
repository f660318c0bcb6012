/*
 * csv.h - an RFC 4180 CSV record reader over a buffer: the one CSV
 * reader of the project (catalogs, offerings tables, CSV spot traces).
 *
 * Quoted fields may hold commas, doubled quotes ("") and line breaks;
 * records end at LF or CRLF.  Each record reports the 1-based line on
 * which it starts, so errors can name file:line.  Internal to spotrun:
 * not exported from libspotckpt.
 */
#ifndef SR_COMMON_CSV_H
#define SR_COMMON_CSV_H

#include <stddef.h>

#include "common/err.h"

struct sr_csv {
	const char *buf, *end, *p; /* input (borrowed) and read position */
	const char *name;          /* file name for messages (borrowed) */
	int line;                  /* line of the next unread byte */
	char **fields;             /* current record, owned */
	size_t nfields, capfields;
	char *store;               /* field text storage, owned */
	size_t storelen, storecap;
};

void sr_csv_open(struct sr_csv *r, const char *buf, size_t len,
		 const char *name);
/* Read the next record.  Returns 1 with r->fields/r->nfields set (valid
 * until the next call) and *line its first line, 0 at end of input, or a
 * negative code with e set ("name:line: unterminated quoted field"). */
int sr_csv_next(struct sr_csv *r, int *line, struct sr_err *e);
void sr_csv_close(struct sr_csv *r); /* NULL-safe */

/* Read the header record and find names[0..n) in it: col[k] = index, or
 * -1 for an absent name whose bit k is set in optional_mask (a missing
 * required name is "name:line: header: no column X").  *nfields = the
 * header's field count, which every data row must match. */
int sr_csv_header(struct sr_csv *r, const char *const *names, int n,
		  unsigned optional_mask, int *col, size_t *nfields,
		  struct sr_err *e);

/* Next data record with exactly nfields fields, skipping blank lines:
 * 1 with *line set, 0 at the end, or a negative code. */
int sr_csv_row(struct sr_csv *r, size_t nfields, int *line,
	       struct sr_err *e);

/* Index of column `name` in a header record, or -1. */
int sr_csv_col(char *const *hdr, size_t n, const char *name);

#endif
