/*
 * report.h - totals derived from the ledger: cost, savings against the
 * on-demand list price and the reserved baseline, work lost to
 * preemption, and idle waste - in total and grouped by job, cloud,
 * region, pool or day.
 *
 * Definitions (every figure is a sum over ledger rows whose start_ns is in
 * the filter's window, or over ledger events whose at_ns is):
 *   cost            = sum(cost)                  FOCUS EffectiveCost/BilledCost
 *   list_cost       = sum(list_cost)             the same hours at on-demand list
 *   savings_vs_list = list_cost - cost over the jobs whose cost bought work
 *                     (running or SUCCEEDED): the saving against
 *                     on-demand for the node-hours actually used - THE
 *                     HEADLINE ("SAVED")
 *   failed_cost     = cost of FAILED and CANCELLED jobs: waste, all of
 *                     it, never a saving (failed_jobs: how many)
 *   planned_od_cost = each SUCCEEDED job's plan (ledger_plan: its declared
 *                     work x nodes x its on-demand price, planned in the
 *                     window), booked to each group for the share of the
 *                     job's node-hours the group served
 *   savings_vs_plan = planned_od_cost - the cost of those same jobs (and
 *                     groups): the second, labelled line ("VS-PLAN");
 *                     negative when a job cost more than its plan on
 *                     on-demand (only meaningful when plans > 0)
 *   reserved_cost   = sum(reserved_cost) over rows with a known reserved price
 *   savings_vs_reserved = reserved_cost - sum(cost) over those same rows
 *   lost_work_cost  = sum(value_cost) of ledger_lost rows (each attempt
 *                     that ended before its work was safe: the time it ran
 *                     past what the next attempt restored, at its nodes'
 *                     price; lib/ctl/recon_lost.c), plus preemption events
 *                     of before that table
 *   waste_cost      = failed_cost + lost work and idle cost of the other
 *                     jobs: money that bought no work
 *   idle_*          = rows with busy = 0 (no workload, or utilisation under
 *                     the threshold) but a spare's; idle_gpu_ns = billed_ns
 *                     * gpus
 *   spare_*         = warm spares' rows (FINOPS_SPARE_ROW_SQL, ledger.h):
 *                     nodes kept booted beside a gang to take a lost
 *                     rank's place, their own line (not idle waste)
 * Groups: job = job id ("none" for nodes without a job); cloud = provider;
 * region = provider/region; pool = provider/region/zone/instance_type;
 * day = UTC date of the row's start (events: of at_ns); team, project,
 * cost_center = the label of the row's job (FINOPS_UNASSIGNED if none).
 */
#ifndef SR_FINOPS_REPORT_H
#define SR_FINOPS_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"
#include "store/store.h"

enum finops_by {
	FINOPS_BY_TOTAL = 0,
	FINOPS_BY_JOB,
	FINOPS_BY_CLOUD,
	FINOPS_BY_REGION,
	FINOPS_BY_POOL,
	FINOPS_BY_DAY,
	FINOPS_BY_TEAM,        /* the job's chargeback labels (jobs.team ...); */
	FINOPS_BY_PROJECT,     /* FINOPS_UNASSIGNED for rows of no job or a */
	FINOPS_BY_COST_CENTER, /* job without the label */
};

/* The group of rows whose job carries no such label. */
#define FINOPS_UNASSIGNED "unassigned"

/* "total", "job", "cloud", "region", "pool", "day", "team", "project",
 * "cost_center". */
const char *finops_by_name(enum finops_by by);
int finops_by_parse(const char *s, enum finops_by *out); /* -EINVAL */

/* A point in time for --since/--until and ?since=: an RFC 3339 time, a
 * UTC date "YYYY-MM-DD", or a duration before now_ns ("24h", "7d").
 * 0 or -EINVAL. */
int finops_parse_when(const char *s, int64_t now_ns, int64_t *out);

struct finops_filter {
	int64_t since_ns;   /* include rows starting at or after; 0 = all */
	int64_t until_ns;   /* ... and before; 0 = no bound */
	int64_t job_id;     /* only this job; 0 = all */
};

struct finops_totals {
	int64_t rows;
	sr_micros cost;
	sr_micros list_cost;
	sr_micros savings_vs_list;
	int64_t reserved_rows;          /* rows with a known reserved price */
	sr_micros reserved_cost;
	sr_micros savings_vs_reserved;  /* meaningful when reserved_rows > 0 */
	int64_t billed_ns;
	int64_t gpu_ns;                 /* billed_ns * gpus */
	int64_t idle_ns;
	int64_t idle_gpu_ns;
	sr_micros idle_cost;
	int64_t spare_ns;               /* warm spares' billed time */
	sr_micros spare_cost;
	int64_t preemptions;
	int64_t recoveries;
	int64_t lost_work_ns;
	sr_micros lost_work_cost;
	int64_t lost_attempts;          /* ledger_lost rows */
	int64_t downtime_ns;
	int64_t ckpt_stalls;
	int64_t ckpt_stall_ns;
	int64_t plans;                  /* SUCCEEDED jobs with a plan */
	sr_micros planned_od_cost;      /* their plans (this group's share) */
	sr_micros plan_cost;            /* what those jobs cost here */
	sr_micros savings_vs_plan;      /* meaningful when plans > 0 */
	sr_micros failed_cost;          /* FAILED/CANCELLED jobs: waste */
	int64_t failed_jobs;
	sr_micros ok_cost, ok_list_cost;/* the other jobs' (running, SUCCEEDED) */
	sr_micros ok_waste;             /* their lost work + idle */
	sr_micros waste_cost;
	/* shared costs allocated to this group (lib/finops/alloc.h: the
	 * control plane, idle reserved capacity), not part of `cost` */
	sr_micros shared_cost;
	/* the cloud's bill where one was applied (billed.h): rows of
	 * ledger_billed, the billed figure and the estimate it replaced */
	int64_t billed_rows;
	sr_micros billed, billed_estimate;
};

struct finops_group {
	char key[224];  /* room for a cell's "<key>#<job id>" */
	struct finops_totals t;
};

struct finops_report {
	enum finops_by by;
	struct finops_totals total;
	struct finops_group *groups; /* sorted by key; owned */
	size_t ngroups;
};

/* Build a report.  On success *out owns its groups (free with
 * finops_report_free); on failure *out is empty. */
int finops_report_build(struct store *db, const struct finops_filter *f,
			enum finops_by by, struct finops_report *out,
			struct sr_err *e);
void finops_report_free(struct finops_report *r); /* NULL-safe */
/* Add `shared` to the shared_cost of group `key` (created, in order, when
 * absent; NULL key: the total only) and of the total.  0 or -ENOMEM. */
int finops_report_add_shared_to(struct finops_report *r, const char *key,
				sr_micros shared);
/* Add one billed figure (billed.h) to group `key` when r has it (NULL or
 * absent: the total only) and to the total. */
void finops_report_add_billed(struct finops_report *r, const char *key,
			      sr_micros billed, sr_micros estimate);
/* The group of `key` (a job id as text for FINOPS_BY_JOB), or NULL;
 * borrowed from r. */
const struct finops_group *finops_report_group(const struct finops_report *r,
					       const char *key);

/* {"by":..., "since":..., "total":{...}, "groups":[{"key":...,...}]}
 * with money as both *_micros (integers, exact) and *_usd (numbers), and
 * durations/hours as *_s and *_hours.  New reference, NULL on ENOMEM. */
json_t *finops_report_json(const struct finops_report *r,
			   const struct finops_filter *f);
json_t *finops_totals_json(const struct finops_totals *t);

/* Cost over time for charts: ledger rows bucketed by start time into
 * buckets of bucket_ns, oldest first, at most max_buckets (the newest are
 * kept).  {"bucket_s": N, "points": [{"t": RFC3339, "cost_micros": ..,
 * "list_cost_micros": .., "idle_cost_micros": ..}, ...]}.  *out is a new
 * reference. */
int finops_series_json(struct store *db, const struct finops_filter *f,
		       int64_t bucket_ns, int max_buckets, json_t **out,
		       struct sr_err *e);

/* Preemptions and recoveries, newest first (at most `limit`):
 * {"events": [{"t": RFC3339, "kind": "preemption"|"recovery", "job_id",
 * "node_id", "pool", "value_s", "lost_work_micros"}]}. */
int finops_timeline_json(struct store *db, const struct finops_filter *f,
			 int limit, json_t **out, struct sr_err *e);

#endif
