/*
 * budget.c - budgets' forecasts, crossings and the launch check (see
 * budget.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "budget.h"
#include "common/timeutil.h"

#define RUN_RATE_WINDOW_NS (INT64_C(3600) * SR_NS_PER_SEC)

/* The jobs column of b's scope. */
static const char *label_col(const struct finops_budget *b)
{
	return b->scope == FINOPS_BUDGET_PROJECT ? "project" : "team";
}

static int query_micros(struct store *db, const char *sql,
			const struct finops_budget *b, int64_t a1, int64_t a2,
			sr_micros *out, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(db, sql, &st, e);

	*out = 0;
	if (rc)
		return rc;
	store_bind_text(st, 1, b->name);
	store_bind_i64(st, 2, a1);
	store_bind_i64(st, 3, a2);
	rc = store_step(st, e);
	if (rc == 1 && !store_col_null(st, "v"))
		*out = store_col_i64(st, "v");
	store_done(st);
	return rc < 0 ? rc : 0;
}

/* Unfinished jobs' remaining plans, capped at cloud_left_s each. */
static int planned(struct store *db, const struct finops_budget *b,
		   double cloud_left_s, sr_micros *out, struct sr_err *e)
{
	char sql[900];
	struct store_stmt *st = NULL;
	int rc;

	snprintf(sql, sizeof sql,
		 "SELECT j.work_s AS w, j.run_s AS r, j.num_nodes AS nn,"
		 " (SELECT sum(n.price_micros) FROM nodes n WHERE n.job_id = j.id"
		 "  AND n.state NOT IN ('TERMINATED', 'LOST')) AS live,"
		 " (SELECT p.od_price FROM ledger_plan p WHERE p.job_id = j.id)"
		 " AS od FROM jobs j WHERE j.%s = ?1 AND j.work_s > 0"
		 " AND j.state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')",
		 label_col(b));
	*out = 0;
	rc = store_prepare(db, sql, &st, e);
	if (rc)
		return rc;
	store_bind_text(st, 1, b->name);
	while ((rc = store_step(st, e)) == 1) {
		double left = store_col_f64(st, "w") - store_col_f64(st, "r");
		sr_micros price = store_col_i64(st, "live");

		if (store_col_null(st, "live") || price <= 0)
			price = store_col_i64(st, "od") * store_col_i64(st, "nn");
		if (left > cloud_left_s)
			left = cloud_left_s;
		if (left > 0 && price > 0)
			*out += sr_money_cost(price, (int64_t)(left * 1e9));
	}
	store_done(st);
	return rc < 0 ? rc : 0;
}

int finops_budget_forecast(struct store *db, const struct finops_conf *c,
			   const struct finops_budget *b, int64_t now_ns,
			   double time_scale, struct finops_forecast *out,
			   struct sr_err *e)
{
	char sql[700], ts[40];
	struct finops_filter f = { 0 };
	struct finops_alloc al;
	int64_t ms = sr_time_month_start(now_ns, 0), me = sr_time_month_start(now_ns, 1);
	int64_t win = now_ns - ms < RUN_RATE_WINDOW_NS ? now_ns - ms : RUN_RATE_WINDOW_NS;
	sr_micros recent = 0;
	int rc;

	memset(out, 0, sizeof *out);
	out->month_start_ns = ms;
	out->month_end_ns = me;
	out->budget = b->monthly;
	sr_time_format_rfc3339(ms, 0, ts, sizeof ts);
	snprintf(out->month, sizeof out->month, "%.7s", ts);
	snprintf(sql, sizeof sql, "SELECT sum(cost) AS v FROM ledger WHERE"
		 " start_ns >= ?2 AND start_ns < ?3 AND job_id IN"
		 " (SELECT id FROM jobs WHERE %s = ?1)", label_col(b));
	rc = query_micros(db, sql, b, ms, now_ns, &out->spent, e);
	/* the run rate: jobs without a plan still running their course */
	snprintf(sql, sizeof sql, "SELECT sum(cost) AS v FROM ledger WHERE"
		 " start_ns >= ?2 AND start_ns < ?3 AND job_id IN"
		 " (SELECT id FROM jobs WHERE %s = ?1 AND (work_s IS NULL OR"
		 " work_s <= 0) AND state NOT IN ('SUCCEEDED', 'FAILED',"
		 " 'CANCELLED'))", label_col(b));
	if (!rc)
		rc = query_micros(db, sql, b, now_ns - win, now_ns, &recent, e);
	if (!rc && win > 0)
		out->run_rate_rest = (sr_micros)((double)recent / (double)win *
						 (double)(me - now_ns));
	if (!rc)
		rc = planned(db, b, (double)(me - now_ns) / 1e9 * time_scale,
			     &out->planned, e);
	f.since_ns = ms;
	f.until_ns = now_ns;
	if (!rc && now_ns > ms)
		rc = finops_alloc_build(db, c, &f, now_ns, &al, e);
	for (size_t i = 0; !rc && i < al.nshares; i++) {
		const char *v = b->scope == FINOPS_BUDGET_PROJECT ?
				al.shares[i].project : al.shares[i].team;

		if (!strcmp(v, b->name))
			out->shared += al.shares[i].cost;
	}
	if (!rc && now_ns > ms) {
		out->shared_rest = (sr_micros)((double)out->shared /
					       (double)(now_ns - ms) *
					       (double)(me - now_ns));
		finops_alloc_free(&al);
	}
	if (rc)
		return sr_err_prefix(e, "budget %s %s", label_col(b), b->name);
	out->forecast = out->spent + out->shared + out->shared_rest +
			out->planned + out->run_rate_rest;
	out->level = out->forecast >= b->monthly ? 100 :
		     out->forecast * 5 >= b->monthly * 4 ? 80 : 0;
	return 0;
}

int finops_budget_crossed(struct store *db, const struct finops_budget *b,
			  const struct finops_forecast *f, int level,
			  int64_t now_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(db, "INSERT INTO budget_alerts(scope, name, month,"
			       " level, at_ns, forecast, budget) VALUES(?1, ?2, ?3,"
			       " ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING RETURNING"
			       " level", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, label_col(b));
	store_bind_text(st, 2, b->name);
	store_bind_text(st, 3, f->month);
	store_bind_i64(st, 4, level);
	store_bind_i64(st, 5, now_ns);
	store_bind_i64(st, 6, f->forecast);
	store_bind_i64(st, 7, f->budget);
	rc = store_step(st, e);
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "budget alert record") : rc;
}

/* "$1050.00" (cents, as every table). */
static void usd(char *buf, size_t n, sr_micros m)
{
	long long cents = (llabs(m) + 5000) / 10000;

	snprintf(buf, n, "%s$%lld.%02lld", m < 0 ? "-" : "", cents / 100,
		 cents % 100);
}

int finops_budget_admit(struct store *db, const struct finops_conf *c,
			const char *team, const char *project,
			sr_micros job_cost, const char *job_cost_why,
			int64_t now_ns, double time_scale, struct sr_err *e)
{
	for (size_t i = 0; i < c->nbudgets; i++) {
		const struct finops_budget *b = &c->budgets[i];
		const char *label = b->scope == FINOPS_BUDGET_PROJECT ? project : team;
		struct finops_forecast f;
		char bud[32], fc[32], jc[32], tot[32], over[32];
		int rc;

		if (!b->hard || !label || strcmp(label, b->name))
			continue;
		rc = finops_budget_forecast(db, c, b, now_ns, time_scale, &f, e);
		if (rc)
			return rc;
		if (f.forecast + job_cost <= b->monthly)
			continue;
		usd(bud, sizeof bud, b->monthly);
		usd(fc, sizeof fc, f.forecast);
		usd(jc, sizeof jc, job_cost);
		usd(tot, sizeof tot, f.forecast + job_cost);
		usd(over, sizeof over, f.forecast + job_cost - b->monthly);
		return sr_err_set(e, -EDQUOT, "%s %s: hard budget %s for %s: "
				  "month-end forecast %s + this job %s (%s) = %s, "
				  "over by %s; raise the budget in finops.json or "
				  "lower the job's work/max_cost",
				  finops_budget_scope_name(b->scope), b->name, bud,
				  f.month, fc, jc, job_cost_why, tot, over);
	}
	return 0;
}
