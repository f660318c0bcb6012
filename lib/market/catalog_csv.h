/*
 * catalog_csv.h - internal: helpers the catalog loaders share (the CSV
 * reader itself is lib/common/csv.h).
 */
#ifndef SR_MARKET_CATALOG_CSV_H
#define SR_MARKET_CATALOG_CSV_H

#include <stddef.h>

#include "common/csv.h"
#include "common/err.h"

/* The part of path after its last '/'. */
const char *catalog__basename(const char *path);

/* Strict number parsing for catalog cells: the whole cell must be a finite
 * decimal number >= 0.  Returns 0 or -EINVAL. */
int catalog__parse_num(const char *s, double *out);

/* Read a whole file into a malloc'd NUL-terminated buffer. */
int catalog__read_file(const char *path, char **buf, size_t *len,
		       struct sr_err *e);

#endif
