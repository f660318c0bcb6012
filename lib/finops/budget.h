/*
 * budget.h - team and project budgets per calendar month (UTC), their
 * month-end forecast, the alert once per crossing, and the launch check
 * (docs/finops.md "Budgets").
 *
 * Forecast of a budget's label (team or project) for the month of now:
 *   spent     ledger cost this month of the label's jobs
 *   shared    their share of the shared costs this month (alloc.h),
 *             and the same rate to the month's end
 *   planned   each unfinished job's plan: its remaining declared work
 *             (work - cloud time run; capped at the cloud time left in
 *             the month) x its hourly price (its live nodes', else its
 *             planned on-demand price x nodes)
 *   run rate  the last hour's cost of the label's jobs that have no plan
 *             (no declared work, or finished), per wall second, x the
 *             wall time left in the month
 *   forecast  = spent + shared (to month end) + planned + run rate
 * Levels: 80 when forecast >= 80% of the budget, 100 at >= 100%.
 *
 * Thread-safety: none; the caller serialises use of db.
 */
#ifndef SR_FINOPS_BUDGET_H
#define SR_FINOPS_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"
#include "fconf.h"
#include "store/store.h"

struct finops_forecast {
	char month[8];             /* "2026-12" */
	int64_t month_start_ns, month_end_ns;
	sr_micros budget;
	sr_micros spent, shared, shared_rest, planned, run_rate_rest;
	sr_micros forecast;
	int level;                 /* 0, 80 or 100 */
};

/* The forecast of budget b at now_ns; time_scale = cloud s per wall s
 * (the local cloud's; 1 for real clouds). */
int finops_budget_forecast(struct store *db, const struct finops_conf *c,
			   const struct finops_budget *b, int64_t now_ns,
			   double time_scale, struct finops_forecast *out,
			   struct sr_err *e);

/* Record that b's forecast reached `level` this month (table
 * budget_alerts), once: 1 when this call recorded it (send the alert),
 * 0 when it was recorded before, < 0 on a store error. */
int finops_budget_crossed(struct store *db, const struct finops_budget *b,
			  const struct finops_forecast *f, int level,
			  int64_t now_ns, struct sr_err *e);

/* Would a job of `team`/`project` expected to cost `job_cost` push a
 * hard budget past 100% of this month's?  0 when not (or no hard budget
 * names them); -EDQUOT with the numbers in *e ("team ml: budget $1000.00
 * for 2026-12: forecast $900.00 + this job $150.00 = $1050.00, over by
 * $50.00"). */
int finops_budget_admit(struct store *db, const struct finops_conf *c,
			const char *team, const char *project,
			sr_micros job_cost, const char *job_cost_why,
			int64_t now_ns, double time_scale, struct sr_err *e);

#endif
