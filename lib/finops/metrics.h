/*
 * metrics.h - Prometheus text exposition (format 0.0.4) of spotrun's
 * FinOps figures, for spotrund's `GET /metrics`.
 *
 * Counters are derived from the append-only ledger, so they are monotonic
 * and survive daemon restarts; gauges about live nodes and jobs come from
 * the daemon (struct finops_live).  Names: `spotrun_` prefix, base units
 * (seconds, dollars), `_total` on counters.  See docs/finops.md for the
 * list.
 */
#ifndef SR_FINOPS_METRICS_H
#define SR_FINOPS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "common/money.h"
#include "commit_use.h"

struct store;

struct finops_live_node {
	int64_t id;
	int64_t job_id;
	const char *provider;      /* the cloud: "aws", ... */
	const char *region;
	const char *zone;
	const char *instance_type;
	bool spot;
	bool committed;            /* capacity paid for (a Slurm partition) */
	sr_micros price_per_hour;
};

struct finops_live_job {
	int64_t id;
	const char *name;
	const char *state;
	bool has_deadline;
	double deadline_slack_s;   /* cloud seconds: the deadline minus the
				      projected finish (lib/ctl/deadline.h);
				      negative = projected late */
	/* tier 3's recovery point (-1 / NaN unknown) */
	int64_t ckpt_local_step;   /* newest on rank 0's disk */
	int64_t ckpt_store_step;   /* newest in the object store */
	double ckpt_store_age_s;   /* wall seconds since that one was saved */
};

struct finops_live {
	const struct finops_live_node *nodes;
	size_t nnodes;
	const struct finops_live_job *jobs;
	size_t njobs;
	/* every job, live or ended, whose deadline passed before it was done
	 * (its deadline_missed event), ascending */
	const int64_t *missed;
	size_t nmissed;
	/* every ended job, ascending: SUCCEEDED, and FAILED or CANCELLED
	 * (wasted: its cost saved nothing) */
	const int64_t *succeeded;
	size_t nsucceeded;
	const int64_t *wasted;
	size_t nwasted;
};

/* Render every metric into a malloc'd NUL-terminated buffer (*out, caller
 * frees).  live may be NULL.  Returns 0 or a negative code with *e set. */
int finops_metrics_render(struct store *db, const struct finops_live *live,
			  char **out, size_t *len, struct sr_err *e);

/* Checkpoint-stall histogram bucket upper bounds, seconds. */
extern const double finops_stall_buckets_s[];
extern const size_t finops_stall_nbuckets;

/* Committed capacity (commit_use.h) as Prometheus gauges, labels
 * provider, region, instance_type, commitment, over the window of v:
 * spotrun_committed_used_cost_dollars (its Committed ledger rows),
 * spotrun_idle_reserved_seconds (instance time paid for, not used by
 * spotrun's jobs: waste), spotrun_idle_reserved_gpu_seconds,
 * spotrun_idle_reserved_cost_dollars.  Appended to f. */
void finops_commit_use_prom(FILE *f, const struct finops_commit_use *v,
			    size_t n);

#endif
