/*
 * focus_int.h - what the FOCUS 1.2 (focus.c) and 1.3 (focus13.c)
 * exporters share: one ledger row's values, formatted once.
 */
#ifndef SR_FINOPS_FOCUS_INT_H
#define SR_FINOPS_FOCUS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "billed.h"
#include "common/money.h"
#include "store/store.h"

/* Where the last ChargePeriod of each node ended (the export's own
 * memory, so rounding to whole seconds cannot make two periods of one
 * resource overlap).  v malloc'd; free(v) at the end. */
struct node_ends {
	int64_t (*v)[2]; /* node id, end ns */
	size_t n, cap;
};

/* One ledger row, its values formatted (strings borrowed from the row's
 * statement are valid until the next step). */
struct focus_usage {
	const char *provider, *region, *zone, *type, *accel, *cat;
	const char *display, *service;
	int64_t job_id, node_id, start_ns, end_ns, billed_ns;
	sr_micros cost, unit_price;
	int busy, has_util, has_reserved;
	bool spare;             /* a warm spare's time (ledger.h) */
	/* billed: the row's share of an applied bill (billed.h), else the
	 * estimate; est: the ledger's estimate */
	char billed[32], est[32], list[32], qty[48], lup[32], rup[32], rcost[32],
	     idle[32], util[16], job[24], node[24], gpus[16], desc[512],
	     rid[32], sku[512], tags[512], bps[32], bpe[32], cps[32], cpe[32];
};

/* x_UsageState: "Spare" (a warm spare's time), "Busy" or "Idle". */
const char *finops__usage_state(const struct focus_usage *u);

/* SELECT of the ledger rows, ?1 since ?2 until ?3 job, in period order. */
extern const char finops__usage_sql[];

/* bm: the applied bills to spread (NULL: none) */
int finops__usage_fill(struct store_stmt *st, struct node_ends *ends,
		       struct finops_billed_map *bm,
		       struct focus_usage *u);   /* 0, -ENOMEM, -ENOSPC */
int64_t *finops__node_end_slot(struct node_ends *t, int64_t node);
void finops__provider_lookup(const char *id, const char **display,
			     const char **service);
void finops__put_field(FILE *out, const char *s, int first);
int finops__fmt_time(int64_t ns, char *buf, size_t n);
void finops__focus_tags(struct store_stmt *st, const char *job,
			const char *node, char *out, size_t n);

#endif
