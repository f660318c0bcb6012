/*
 * dbutil.h - what the query files of lib/finops share (not public).
 */
#ifndef SR_FINOPS_DBUTIL_H
#define SR_FINOPS_DBUTIL_H

#include <stdint.h>

#include "common/err.h"

struct finops_filter;

/* The store's cached statement for `sql`, whose ?1 ?2 ?3 are since_ns,
 * until_ns and job_id, bound from f (NULL = no filter).  Lives in
 * report.c. */
struct store;
struct store_stmt;
int finops__prepare_filtered(struct store *db, const char *sql,
			     const struct finops_filter *f,
			     struct store_stmt **st, struct sr_err *e);

#endif
