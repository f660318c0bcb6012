/*
 * metrics.c - Prometheus text exposition of the FinOps figures.
 *
 * Family                                    type       labels
 * ----------------------------------------  ---------  ----------------------
 * spotrun_node_hourly_price_dollars         gauge      node, job_id, cloud, region,
 *                                                      zone, instance_type, pricing
 *                                                      (spot, on_demand, committed)
 * spotrun_job_cost_dollars_total            counter    job_id   (billed where a
 *                                                      bill was applied)
 * spotrun_job_estimated_cost_dollars_total  counter    job_id   (the ledger's
 *                                                      estimate)
 * spotrun_job_on_demand_cost_dollars_total  counter    job_id   (same hours at list)
 * spotrun_job_savings_dollars               gauge      job_id   (on-demand for
 *                                                      the hours used - cost)
 * spotrun_job_planned_on_demand_dollars     gauge      job_id   (declared work at
 *                                                      the on-demand price)
 * spotrun_job_savings_vs_plan_dollars       gauge      job_id   (planned - cost)
 * spotrun_job_savings_vs_reserved_dollars   gauge      job_id   (may go down)
 * spotrun_job_lost_work_dollars_total       counter    job_id
 * spotrun_job_lost_work_seconds_total       counter    job_id
 * spotrun_job_idle_gpu_seconds_total        counter    job_id
 * spotrun_job_idle_cost_dollars_total       counter    job_id
 * spotrun_preemptions_total                 counter    job_id
 * spotrun_recoveries_total                  counter    job_id
 * spotrun_recovery_downtime_seconds_total   counter    job_id
 * spotrun_checkpoint_stall_seconds          histogram  -
 * spotrun_job_deadline_slack_seconds        gauge      job_id   (deadline minus
 *                                                      the projected finish)
 * spotrun_job_deadline_missed               gauge      job_id   (1: missed)
 * spotrun_deadlines_missed_total            counter    -     (jobs, all time)
 * spotrun_job_checkpoint_local_step         gauge      job_id   (tier 3: newest
 *                                                      on the node's disk)
 * spotrun_job_checkpoint_store_step         gauge      job_id   (newest in the
 *                                                      object store)
 * spotrun_job_checkpoint_store_age_seconds  gauge      job_id   (since that one
 *                                                      was saved: the recovery
 *                                                      point)
 * spotrun_job_info                          gauge      job_id, team, project,
 *                                                      cost_center (1)
 * spotrun_team_cost_dollars_total           counter    team
 * spotrun_project_cost_dollars_total        counter    project
 * spotrun_cost_center_cost_dollars_total    counter    cost_center
 * spotrun_cost_dollars_total                counter    -     (all jobs)
 * spotrun_idle_gpu_seconds_total            counter    -     (all jobs)
 *
 * The job label is `job_id`: `job` belongs to Prometheus (the scrape job).
 * A job's chargeback labels (docs/finops.md "Teams") are on
 * spotrun_job_info{job_id,team,project,cost_center} 1 (the info-metric
 * join: `spotrun_job_cost_dollars_total * on(job_id) group_left(team)
 * spotrun_job_info`) and summed in spotrun_{team,project,cost_center}_
 * cost_dollars_total{team|project|cost_center} ("unassigned": no label).
 *
 * Durations billed or lost are in cloud seconds (the local cloud's time
 * scale), like the ledger.
 *
 * Cost after `spotrun cost reconcile --apply` (billed.h): for each
 * job-day-provider a bill was applied to, the bill's figure replaces the
 * estimate of that cell (the newest applied bill of it); days no bill
 * covers stay estimates.  The estimate stays beside it,
 * spotrun_job_estimated_cost_dollars_total.  Savings and team sums use
 * the cost.
 *
 * Savings are what `spotrun cost` calls SAVED: the same node-hours at the
 * on-demand list price minus what they were billed; 0 for a job that
 * ended FAILED or CANCELLED (its cost is waste, never a saving).  Savings
 * vs plan are `spotrun cost`'s VS-PLAN: the job's planned on-demand cost
 * (ledger_plan: its declared work at the on-demand price) minus what it
 * was billed, only for SUCCEEDED jobs with a plan; negative when spot
 * cost more.  Which jobs ended how comes from the daemon (finops_live).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "ledger.h"
#include "metrics.h"
#include "store/store.h"

const double finops_stall_buckets_s[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
};
const size_t finops_stall_nbuckets =
	sizeof finops_stall_buckets_s / sizeof finops_stall_buckets_s[0];

/* Label value escaping per the exposition format. */
static void put_label(FILE *f, const char *name, const char *v, int first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*v, f);
	}
	fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void usd(FILE *f, sr_micros m)
{
	fprintf(f, "%s%lld.%06lld\n", m < 0 ? "-" : "",
		(long long)(m < 0 ? -m : m) / 1000000,
		(long long)(m < 0 ? -m : m) % 1000000);
}

static void secs(FILE *f, int64_t ns)
{
	fprintf(f, "%lld.%09lld\n", (long long)(ns / SR_NS_PER_SEC),
		(long long)(ns % SR_NS_PER_SEC));
}

struct job_agg {
	int64_t job;
	char team[64], project[64], cost_center[64];
	/* cost: the bill's figure for the job-days a bill was applied to
	 * (reconcile --apply), the estimate for the rest; estimate: the
	 * ledger's own for every day; billed_cells: how many were billed */
	sr_micros cost, estimate, list, reserved_saving, lost_cost, idle_cost;
	int64_t billed_cells;
	int64_t lost_ns, idle_gpu_ns, preemptions, recoveries, downtime_ns;
	bool planned;              /* the job has a ledger_plan row */
	bool succeeded, wasted;    /* ended SUCCEEDED; FAILED or CANCELLED */
	sr_micros planned_cost;    /* planned on-demand */
	sr_micros savings;         /* list - cost; 0 when wasted */
	sr_micros savings_plan;    /* planned - cost */
};

static int load_jobs(struct store *db, struct job_agg **out, size_t *n,
		     struct sr_err *e)
{
	static const char sql[] =
		"SELECT j, sum(c) AS cost, sum(l) AS list, sum(rs) AS rs,"
		" sum(lc) AS lc, sum(ic) AS ic, sum(ln) AS ln, sum(ig) AS ig,"
		" sum(p) AS p, sum(r) AS r, sum(d) AS d, sum(est) AS est,"
		" sum(nb) AS nb,"
		" (SELECT planned_cost FROM ledger_plan WHERE job_id = j) AS planned,"
		" (SELECT team FROM jobs WHERE id = j) AS team,"
		" (SELECT project FROM jobs WHERE id = j) AS project,"
		" (SELECT cost_center FROM jobs WHERE id = j) AS cc"
		" FROM ("
		" SELECT job_id AS j, cost AS c, list_cost AS l,"
		"  CASE WHEN reserved_cost IS NULL THEN 0 ELSE reserved_cost - cost END AS rs,"
		"  0 AS lc, CASE busy WHEN 0 THEN cost ELSE 0 END AS ic, 0 AS ln,"
		"  CASE busy WHEN 0 THEN billed_ns * gpus ELSE 0 END AS ig,"
		"  0 AS p, 0 AS r, 0 AS d, cost AS est, 0 AS nb FROM ledger"
		"  WHERE job_id IS NOT NULL"
		" UNION ALL"
		" SELECT job_id, 0, 0, 0, value_cost, 0,"
		"  CASE kind WHEN 1 THEN value_ns ELSE 0 END, 0,"
		"  CASE kind WHEN 1 THEN 1 ELSE 0 END, CASE kind WHEN 2 THEN 1 ELSE 0 END,"
		"  CASE kind WHEN 2 THEN value_ns ELSE 0 END, 0, 0 FROM ledger_event"
		" UNION ALL"
		" SELECT job_id, 0, 0, 0, value_cost, 0, value_ns, 0, 0, 0, 0, 0, 0"
		" FROM ledger_lost"
		/* the bill where one was applied: what it billed beside the
		 * estimate of those job-days (billed.h, the newest of each) */
		" UNION ALL"
		" SELECT job_id, billed - estimate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1"
		" FROM ledger_billed b WHERE job_id > 0 AND at_ns = (SELECT"
		"  max(at_ns) FROM ledger_billed c WHERE c.job_id = b.job_id AND"
		"  c.day = b.day AND c.provider = b.provider)"
		") AS rows GROUP BY j ORDER BY j";
	struct store_stmt *st = NULL;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = store_prepare(db, sql, &st, e);
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		struct job_agg *a;

		if (*n == cap) {
			struct job_agg *na;

			cap = cap ? cap * 2 : 32;
			na = realloc(*out, cap * sizeof *na);
			if (!na) {
				rc = sr_err_set(e, -ENOMEM, "metrics: out of memory");
				break;
			}
			*out = na;
		}
		a = &(*out)[(*n)++];
		a->job = store_col_i64(st, "j");
		a->cost = store_col_i64(st, "cost");
		a->estimate = store_col_i64(st, "est");
		a->billed_cells = store_col_i64(st, "nb");
		a->list = store_col_i64(st, "list");
		a->reserved_saving = store_col_i64(st, "rs");
		a->lost_cost = store_col_i64(st, "lc");
		a->idle_cost = store_col_i64(st, "ic");
		a->lost_ns = store_col_i64(st, "ln");
		a->idle_gpu_ns = store_col_i64(st, "ig");
		a->preemptions = store_col_i64(st, "p");
		a->recoveries = store_col_i64(st, "r");
		a->downtime_ns = store_col_i64(st, "d");
		a->planned = !store_col_null(st, "planned");
		a->planned_cost = store_col_i64(st, "planned");
		a->savings_plan = a->planned_cost - a->cost;
		snprintf(a->team, sizeof a->team, "%s", store_col_text(st, "team"));
		snprintf(a->project, sizeof a->project, "%s",
			 store_col_text(st, "project"));
		snprintf(a->cost_center, sizeof a->cost_center, "%s",
			 store_col_text(st, "cc"));
	}
	store_done(st);
	if (rc < 0) {
		sr_err_prefix(e, "metrics: ledger");
		free(*out);
		*out = NULL;
		*n = 0;
		return rc;
	}
	return 0;
}

static bool in_sorted(const int64_t *v, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] == id)
			return true;
		if (v[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* How each job ended (live: the daemon's lists), and what it saved. */
static void jobs_outcome(struct job_agg *a, size_t n,
			 const struct finops_live *live)
{
	for (size_t i = 0; i < n; i++) {
		a[i].succeeded = live && in_sorted(live->succeeded,
						   live->nsucceeded, a[i].job);
		a[i].wasted = live && in_sorted(live->wasted, live->nwasted,
						a[i].job);
		a[i].savings = a[i].wasted ? 0 : a[i].list - a[i].cost;
	}
}

/* spotrun_job_info: one line per job, its labels ("" = none). */
static void job_info(FILE *f, const struct job_agg *a, size_t n)
{
	family(f, "spotrun_job_info", "gauge", "A job's chargeback labels "
	       "(team, project, cost_center; empty: none), value 1.");
	for (size_t i = 0; i < n; i++) {
		char job[24];

		snprintf(job, sizeof job, "%lld", (long long)a[i].job);
		fputs("spotrun_job_info{", f);
		put_label(f, "job_id", job, 1);
		put_label(f, "team", a[i].team, 0);
		put_label(f, "project", a[i].project, 0);
		put_label(f, "cost_center", a[i].cost_center, 0);
		fputs("} 1\n", f);
	}
}

/* spotrun_<label>_cost_dollars_total{<label>=..}: the jobs' cost summed
 * by one label (FINOPS_UNASSIGNED-like "unassigned" for none), sorted. */
static void label_family(FILE *f, const struct job_agg *a, size_t n,
			 size_t label_off, const char *label)
{
	char name[80];
	struct { const char *k; sr_micros v; } *acc = calloc(n ? n : 1, sizeof *acc);
	size_t m = 0;

	snprintf(name, sizeof name, "spotrun_%s_cost_dollars_total", label);
	family(f, name, "counter", "Cost of the jobs carrying each value of the "
	       "label (unassigned: none), dollars.");
	if (!acc)
		return;
	for (size_t i = 0; i < n; i++) {
		const char *k = (const char *)&a[i] + label_off;
		size_t j;

		if (!*k)
			k = "unassigned";
		for (j = 0; j < m && strcmp(acc[j].k, k); j++)
			;
		if (j == m)
			acc[m++].k = k;
		acc[j].v += a[i].cost;
	}
	for (size_t i = 1; i < m; i++)	/* insertion sort: few labels */
		for (size_t j = i; j > 0 && strcmp(acc[j - 1].k, acc[j].k) > 0; j--) {
			__typeof__(*acc) t = acc[j];

			acc[j] = acc[j - 1];
			acc[j - 1] = t;
		}
	for (size_t i = 0; i < m; i++) {
		fprintf(f, "%s{", name);
		put_label(f, label, acc[i].k, 1);
		fputs("} ", f);
		usd(f, acc[i].v);
	}
	free(acc);
}

/* Which jobs a family has a line for: every one; those with a plan;
 * SUCCEEDED ones with a plan (without one there is no baseline, as in
 * spotrun cost). */
enum job_filter { JOBS_ALL, JOBS_PLANNED, JOBS_PLANNED_DONE };

/* One counter/gauge family with a `job` label per aggregated job that
 * passes `which`. */
static void job_family_of(FILE *f, const struct job_agg *a, size_t n,
			  const char *name, const char *type, const char *help,
			  size_t field_off, int is_ns, enum job_filter which)
{
	family(f, name, type, help);
	for (size_t i = 0; i < n; i++) {
		int64_t v = *(const int64_t *)((const char *)&a[i] + field_off);
		char job[24];

		if (which != JOBS_ALL && !a[i].planned)
			continue;
		if (which == JOBS_PLANNED_DONE && !a[i].succeeded)
			continue;
		snprintf(job, sizeof job, "%lld", (long long)a[i].job);
		fprintf(f, "%s{", name);
		put_label(f, "job_id", job, 1);
		fputs("} ", f);
		if (is_ns)
			secs(f, v);
		else
			usd(f, v);
	}
}

static void job_family(FILE *f, const struct job_agg *a, size_t n,
		       const char *name, const char *type, const char *help,
		       size_t field_off, int is_ns)
{
	job_family_of(f, a, n, name, type, help, field_off, is_ns, JOBS_ALL);
}

static void count_family(FILE *f, const struct job_agg *a, size_t n,
			 const char *name, const char *help, size_t field_off)
{
	family(f, name, "counter", help);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s{job_id=\"%lld\"} %lld\n", name, (long long)a[i].job,
			(long long)*(const int64_t *)((const char *)&a[i] + field_off));
	}
}

static int stall_histogram(struct store *db, FILE *f, struct sr_err *e)
{
	static const char sql[] =
		"SELECT value_ns FROM ledger_event WHERE kind = 3";
	const char *name = "spotrun_checkpoint_stall_seconds";
	uint64_t counts[64] = { 0 }, total = 0;
	int64_t sum_ns = 0;
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(db, sql, &st, e);
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		int64_t ns = store_col_i64(st, "value_ns");
		double s = (double)ns / 1e9;

		for (size_t i = 0; i < finops_stall_nbuckets; i++)
			if (s <= finops_stall_buckets_s[i])
				counts[i]++;
		total++;
		sum_ns += ns;
	}
	store_done(st);
	if (rc < 0)
		return sr_err_prefix(e, "metrics: stalls");
	family(f, name, "histogram",
	       "Training time stalled by one checkpoint, seconds.");
	for (size_t i = 0; i < finops_stall_nbuckets; i++)
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name,
			finops_stall_buckets_s[i], (unsigned long long)counts[i]);
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)total);
	fprintf(f, "%s_sum ", name);
	secs(f, sum_ns);
	fprintf(f, "%s_count %llu\n", name, (unsigned long long)total);
	return 0;
}

/* One gauge per live job that has the value (skip: its "unknown"). */
static void job_gauge(FILE *f, const struct finops_live *live,
		      const char *name, const char *help, int which)
{
	family(f, name, "gauge", help);
	for (size_t i = 0; live && i < live->njobs; i++) {
		const struct finops_live_job *j = &live->jobs[i];
		double v = which == 0 ? (double)j->ckpt_local_step :
			   which == 1 ? (double)j->ckpt_store_step :
			   j->ckpt_store_age_s;
		char id[24];

		if (!isfinite(v) || v < 0)
			continue;
		snprintf(id, sizeof id, "%lld", (long long)j->id);
		fprintf(f, "%s{", name);
		put_label(f, "job_id", id, 1);
		fprintf(f, "} %.3f\n", v);
	}
}

static void live_families(FILE *f, const struct finops_live *live)
{
	const char *price = "spotrun_node_hourly_price_dollars";
	const char *slack = "spotrun_job_deadline_slack_seconds";

	family(f, price, "gauge", "Price per hour of each live node, dollars.");
	for (size_t i = 0; live && i < live->nnodes; i++) {
		const struct finops_live_node *n = &live->nodes[i];
		char id[24], job[24];

		snprintf(id, sizeof id, "%lld", (long long)n->id);
		snprintf(job, sizeof job, "%lld", (long long)n->job_id);
		fprintf(f, "%s{", price);
		put_label(f, "node", id, 1);
		put_label(f, "job_id", job, 0);
		put_label(f, "cloud", n->provider, 0);
		put_label(f, "region", n->region, 0);
		put_label(f, "zone", n->zone, 0);
		put_label(f, "instance_type", n->instance_type, 0);
		put_label(f, "pricing", n->spot ? "spot" : n->committed ?
			  "committed" : "on_demand", 0);
		fputs("} ", f);
		usd(f, n->price_per_hour);
	}
	family(f, "spotrun_job_deadline_missed", "gauge",
	       "1 for each job whose deadline passed before it was done.");
	for (size_t i = 0; live && i < live->nmissed; i++)
		fprintf(f, "spotrun_job_deadline_missed{job_id=\"%lld\"} 1\n",
			(long long)live->missed[i]);
	family(f, "spotrun_deadlines_missed_total", "counter",
	       "Jobs whose deadline passed before they were done.");
	fprintf(f, "spotrun_deadlines_missed_total %zu\n", live ? live->nmissed : 0);
	family(f, slack, "gauge",
	       "Cloud seconds from the projected finish to the deadline "
	       "(negative: projected late).");
	for (size_t i = 0; live && i < live->njobs; i++) {
		const struct finops_live_job *j = &live->jobs[i];
		char id[24];

		if (!j->has_deadline || !isfinite(j->deadline_slack_s))
			continue;
		snprintf(id, sizeof id, "%lld", (long long)j->id);
		fprintf(f, "%s{", slack);
		put_label(f, "job_id", id, 1);
		fprintf(f, "} %.3f\n", j->deadline_slack_s);
	}
	job_gauge(f, live, "spotrun_job_checkpoint_local_step",
		  "Tier 3: the newest checkpoint step on the job's node disk.", 0);
	job_gauge(f, live, "spotrun_job_checkpoint_store_step",
		  "Tier 3: the newest checkpoint step in the object store.", 1);
	job_gauge(f, live, "spotrun_job_checkpoint_store_age_seconds",
		  "Tier 3: seconds since the object store's newest checkpoint "
		  "was saved (the recovery point).", 2);
}

#define OFF(field) offsetof(struct job_agg, field)

int finops_metrics_render(struct store *db, const struct finops_live *live,
			  char **out, size_t *len, struct sr_err *e)
{
	struct job_agg *a = NULL;
	sr_micros all_cost = 0;
	int64_t all_idle = 0;
	size_t n = 0, mlen = 0;
	char *buf = NULL;
	FILE *f;
	int rc;

	*out = NULL;
	if (len)
		*len = 0;
	rc = load_jobs(db, &a, &n, e);
	if (rc)
		return rc;
	jobs_outcome(a, n, live);
	f = open_memstream(&buf, &mlen);
	if (!f) {
		free(a);
		return sr_err_set(e, -ENOMEM, "metrics: out of memory");
	}
	live_families(f, live);
	job_info(f, a, n);
	label_family(f, a, n, OFF(team), "team");
	label_family(f, a, n, OFF(project), "project");
	label_family(f, a, n, OFF(cost_center), "cost_center");
	job_family(f, a, n, "spotrun_job_cost_dollars_total", "counter",
		   "What the job's nodes were billed, dollars: the cloud's bill "
		   "for the days one was applied to (spotrun cost reconcile "
		   "--apply), spotrun's estimate for the rest.", OFF(cost), 0);
	job_family(f, a, n, "spotrun_job_estimated_cost_dollars_total", "counter",
		   "spotrun's own estimate of the job's cost (its ledger at "
		   "catalog and trace prices), dollars; the same as "
		   "spotrun_job_cost_dollars_total until a bill is applied.",
		   OFF(estimate), 0);
	job_family(f, a, n, "spotrun_job_on_demand_cost_dollars_total", "counter",
		   "The same node-hours at the on-demand list price, dollars.",
		   OFF(list), 0);
	job_family(f, a, n, "spotrun_job_savings_dollars", "gauge",
		   "On-demand for the node-hours used minus billed cost, dollars "
		   "(as spotrun cost's SAVED); 0 for a FAILED or CANCELLED job, "
		   "whose cost is waste.", OFF(savings), 0);
	job_family_of(f, a, n, "spotrun_job_planned_on_demand_dollars", "gauge",
		      "The job's declared work at the on-demand price (its plan), "
		      "dollars.", OFF(planned_cost), 0, JOBS_PLANNED);
	job_family_of(f, a, n, "spotrun_job_savings_vs_plan_dollars", "gauge",
		      "Planned on-demand cost minus billed cost of a SUCCEEDED "
		      "job, dollars (as spotrun cost's VS-PLAN; negative when "
		      "spot cost more).", OFF(savings_plan), 0, JOBS_PLANNED_DONE);
	job_family(f, a, n, "spotrun_job_savings_vs_reserved_dollars", "gauge",
		   "Reserved-baseline cost minus billed cost where a reserved "
		   "price is known, dollars.", OFF(reserved_saving), 0);
	job_family(f, a, n, "spotrun_job_lost_work_dollars_total", "counter",
		   "Work lost: time attempts ran past what the next attempt "
		   "restored (preemptions, lost nodes, crashes, moves), dollars.",
		   OFF(lost_cost), 0);
	job_family(f, a, n, "spotrun_job_lost_work_seconds_total", "counter",
		   "Work lost, cloud seconds.", OFF(lost_ns), 1);
	job_family(f, a, n, "spotrun_job_idle_gpu_seconds_total", "counter",
		   "GPU time billed while the node was idle, cloud seconds.",
		   OFF(idle_gpu_ns), 1);
	job_family(f, a, n, "spotrun_job_idle_cost_dollars_total", "counter",
		   "Cost of node time billed while idle, dollars.", OFF(idle_cost), 0);
	count_family(f, a, n, "spotrun_preemptions_total",
		     "Spot preemptions the job went through.", OFF(preemptions));
	count_family(f, a, n, "spotrun_recoveries_total",
		     "Recoveries after a preemption or lost node.", OFF(recoveries));
	job_family(f, a, n, "spotrun_recovery_downtime_seconds_total", "counter",
		   "Training downtime from notice to resumed training, cloud "
		   "seconds.", OFF(downtime_ns), 1);
	for (size_t i = 0; i < n; i++) {
		all_cost += a[i].cost;
		all_idle += a[i].idle_gpu_ns;
	}
	family(f, "spotrun_cost_dollars_total", "counter",
	       "What every job's nodes were billed, dollars.");
	fputs("spotrun_cost_dollars_total ", f);
	usd(f, all_cost);
	family(f, "spotrun_idle_gpu_seconds_total", "counter",
	       "GPU time billed while idle across all jobs, cloud seconds.");
	fputs("spotrun_idle_gpu_seconds_total ", f);
	secs(f, all_idle);
	rc = stall_histogram(db, f, e);
	free(a);
	if (fclose(f) != 0 && !rc)
		rc = sr_err_set(e, -ENOMEM, "metrics: out of memory");
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	if (len)
		*len = mlen;
	return 0;
}

static void commit_labels(FILE *f, const char *name,
			  const struct finops_commitment *cm)
{
	fputs(name, f);
	fputc('{', f);
	put_label(f, "provider", cm->provider, 1);
	put_label(f, "region", cm->region, 0);
	put_label(f, "instance_type", cm->instance_type, 0);
	put_label(f, "commitment", cm->id, 0);
	fputs("} ", f);
}

void finops_commit_use_prom(FILE *f, const struct finops_commit_use *v,
			    size_t n)
{
	static const struct { const char *name, *help; } fam[] = {
		{ "spotrun_committed_used_cost_dollars",
		  "Committed capacity used by spotrun's jobs (their Committed "
		  "ledger rows) since the first ledger row, dollars." },
		{ "spotrun_idle_reserved_seconds",
		  "Committed capacity paid for but not used by spotrun's jobs "
		  "since the first ledger row, instance seconds (waste)." },
		{ "spotrun_idle_reserved_gpu_seconds",
		  "Committed GPUs paid for but not used by spotrun's jobs since "
		  "the first ledger row, GPU seconds (waste)." },
		{ "spotrun_idle_reserved_cost_dollars",
		  "Committed capacity paid for but not used by spotrun's jobs "
		  "since the first ledger row, dollars at its price (waste)." },
	};

	for (size_t k = 0; k < sizeof fam / sizeof fam[0]; k++) {
		family(f, fam[k].name, "gauge", fam[k].help);
		for (size_t i = 0; i < n; i++) {
			commit_labels(f, fam[k].name, v[i].cm);
			if (k == 0)
				usd(f, v[i].used_cost);
			else if (k == 1)
				secs(f, v[i].idle_ns);
			else if (k == 2)
				secs(f, v[i].idle_ns * v[i].cm->gpus);
			else
				usd(f, v[i].idle_cost);
		}
	}
}
