/*
 * reconcile.h - matching the cloud's bill to spotrun's ledger
 * (docs/finops.md "Matching the bill").
 *
 * Inputs: spotrun's nodes (id, job, provider, the cloud's instance id),
 * the ledger's cost per node and UTC day, and the bill's lines (a FOCUS
 * export: finops_bill_parse_focus).  A bill line belongs to node N when
 * its ResourceId is N's instance id, or its Tags carry "spotrun/node-id":
 * N (clouds copy an instance's tags to its disks and traffic).  A line is
 * one of:
 *   compute  the instance itself (ResourceId = the instance id)
 *   disk     ServiceCategory Storage
 *   egress   ServiceCategory Networking
 *   credit   ChargeCategory Credit (negative)
 *   other    anything else tagged to the node (taxes, support, ...)
 * Per (job, day, provider) the report holds the ledger, the bill and the
 * difference, and the difference's parts: price (compute billed - the
 * ledger: the real price per second and billed time against spotrun's
 * estimate), disk, egress, other, credit.  diff = price + disk + egress
 * + other + credit, exactly.  A line with spotrun's tags or a "spotrun"
 * name whose resource is no node spotrun recorded is a LEAK (an instance
 * spotrun launched and lost track of), reported by resource id; a line
 * of nothing spotrun's is foreign and only counted.
 */
#ifndef SR_FINOPS_RECONCILE_H
#define SR_FINOPS_RECONCILE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"

struct rec_node {
	int64_t id, job;
	char provider[32];
	char instance_id[96];
};

struct rec_ledger {            /* the ledger's cost of one node on one day */
	int64_t node, day;          /* day: UTC days since the epoch */
	sr_micros cost;
};

enum rec_kind { REC_COMPUTE, REC_DISK, REC_EGRESS, REC_CREDIT, REC_OTHER,
		REC_NKINDS };

struct rec_line {
	char resource_id[96];
	char provider[64];          /* as the bill names it */
	int64_t start_ns;
	sr_micros cost;             /* BilledCost */
	enum rec_kind kind;         /* compute unless classified otherwise */
	int64_t tag_node;           /* "spotrun/node-id" tag, 0 none */
	int spotrun_tagged;         /* any spotrun/ tag */
	int line;                   /* in the bill file */
};

struct rec_cell {
	int64_t job, day;
	char provider[32];
	sr_micros ledger, bill;
	sr_micros part[REC_NKINDS]; /* part[REC_COMPUTE] = price */
};

struct rec_leak {
	char resource_id[96], provider[64];
	int64_t first_ns;
	sr_micros cost;
	int lines;
};

struct rec_report {
	struct rec_cell *cells;     /* sorted by job, day, provider */
	size_t ncells;
	struct rec_leak *leaks;
	size_t nleaks;
	sr_micros ledger, bill, diff, explained, leaked, foreign_cost;
	sr_micros part[REC_NKINDS];
	size_t lines, foreign_lines;
};

/* Parse a FOCUS (1.0-1.3) Cost and Usage CSV: ResourceId, BilledCost,
 * ChargePeriodStart, ChargeCategory, ServiceCategory, Tags and
 * ServiceProviderName or ProviderName.  *out malloc'd (caller frees).
 * Errors name the file and line. */
int finops_bill_parse_focus(const char *buf, size_t len, const char *name,
			    struct rec_line **out, size_t *n, struct sr_err *e);

/* Any bill spotrun reads (bill_formats.c): FOCUS, AWS CUR 2.0 (gzipped
 * or not), the GCP billing export as CSV or JSON, Azure cost details;
 * told apart by their columns.  Same contract as the FOCUS parser. */
int finops_bill_parse(const char *buf, size_t len, const char *name,
		      struct rec_line **out, size_t *n, struct sr_err *e);
/* The node a Tags value names (a spotrun node tag in any provider's
 * spelling), 0 none; *any: some tag names spotrun. */
int64_t finops__tag_node(const char *tags, int *any);

/* Match and explain.  *r owns its arrays (finops_reconcile_free). */
int finops_reconcile(const struct rec_node *nodes, size_t nnodes,
		     const struct rec_ledger *ledger, size_t nledger,
		     const struct rec_line *lines, size_t nlines,
		     struct rec_report *r, struct sr_err *e);
void finops_reconcile_free(struct rec_report *r);

/* {"ledger_micros", "bill_micros", "difference_micros",
 *  "explained_micros", "parts": {...}, "cells": [...], "leaks": [...]} */
json_t *finops_reconcile_json(const struct rec_report *r);

const char *finops_rec_kind_name(enum rec_kind k); /* "price", "disk", ... */

#endif
