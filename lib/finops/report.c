/*
 * report.c - cost, savings and idle-waste totals derived from the ledger.
 *
 * Two grouped aggregate queries - one over `ledger`, one over
 * `ledger_event` - with the same group-key expression, merged by key.
 * The grand total is the sum of the groups, so a report always adds up.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "dbutil.h"
#include "ledger.h"
#include "policy.h"
#include "store/store.h"
#include "report.h"

static const char *const by_names[] = {
	[FINOPS_BY_TOTAL] = "total", [FINOPS_BY_JOB] = "job",
	[FINOPS_BY_CLOUD] = "cloud", [FINOPS_BY_REGION] = "region",
	[FINOPS_BY_POOL] = "pool",   [FINOPS_BY_DAY] = "day",
	[FINOPS_BY_TEAM] = "team",   [FINOPS_BY_PROJECT] = "project",
	[FINOPS_BY_COST_CENTER] = "cost_center",
};

const char *finops_by_name(enum finops_by by)
{
	if ((unsigned)by >= sizeof by_names / sizeof by_names[0])
		return NULL;
	return by_names[by];
}

int finops_by_parse(const char *s, enum finops_by *out)
{
	for (size_t i = 0; s && i < sizeof by_names / sizeof by_names[0]; i++) {
		if (!strcmp(s, by_names[i])) {
			*out = (enum finops_by)i;
			return 0;
		}
	}
	return -EINVAL;
}

int finops_parse_when(const char *s, int64_t now_ns, int64_t *out)
{
	char buf[40];
	int64_t d;

	if (!s || !*s)
		return -EINVAL;
	if (strlen(s) == 10 && s[4] == '-' && s[7] == '-') {
		snprintf(buf, sizeof buf, "%sT00:00:00Z", s);
		return sr_time_parse_rfc3339(buf, out, NULL) ? -EINVAL : 0;
	}
	if (sr_time_parse_rfc3339(s, out, NULL) == 0)
		return 0;
	if (sr_dur_parse(s, &d, NULL) == 0) {
		*out = now_ns - d;
		return 0;
	}
	return -EINVAL;
}

/* Group-key SQL expression, portable SQL (docs/store.md); `events`: the
 * time column is at_ns, else start_ns. */
static const char *key_sql(enum finops_by by, int events)
{
	switch (by) {
	case FINOPS_BY_TOTAL:
		return "'total'";
	case FINOPS_BY_JOB:
		return "COALESCE(CAST(job_id AS TEXT), 'none')";
	case FINOPS_BY_CLOUD:
		return "COALESCE(provider, 'unknown')";
	case FINOPS_BY_REGION:
		return "COALESCE(provider, 'unknown') || '/' || COALESCE(region, 'unknown')";
	case FINOPS_BY_POOL:
		return "COALESCE(provider, 'unknown') || '/' || COALESCE(region, 'unknown')"
		       " || '/' || COALESCE(zone, '-') || '/' ||"
		       " COALESCE(instance_type, 'unknown')";
	case FINOPS_BY_TEAM:
		return "COALESCE((SELECT jl.team FROM jobs jl WHERE jl.id = job_id),"
		       " '" FINOPS_UNASSIGNED "')";
	case FINOPS_BY_PROJECT:
		return "COALESCE((SELECT jl.project FROM jobs jl WHERE jl.id = job_id),"
		       " '" FINOPS_UNASSIGNED "')";
	case FINOPS_BY_COST_CENTER:
		return "COALESCE((SELECT jl.cost_center FROM jobs jl"
		       " WHERE jl.id = job_id), '" FINOPS_UNASSIGNED "')";
	case FINOPS_BY_DAY:
		/* the UTC day number; day_keys() makes it YYYY-MM-DD */
		return events ? "CAST(at_ns / 86400000000000 AS TEXT)"
			      : "CAST(start_ns / 86400000000000 AS TEXT)";
	}
	return NULL;
}

static int is_number(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* Job ids sort numerically, everything else by bytes. */
static int cmp_key(const char *a, const char *b)
{
	if (is_number(a) && is_number(b)) {
		size_t la = strlen(a), lb = strlen(b);

		if (la != lb)
			return la < lb ? -1 : 1;
	}
	return strcmp(a, b);
}

static int cmp_group(const void *x, const void *y)
{
	return cmp_key(((const struct finops_group *)x)->key,
		       ((const struct finops_group *)y)->key);
}

static struct finops_group *add_group(struct finops_report *r, size_t *cap,
				      const char *key)
{
	struct finops_group *g;

	if (r->ngroups == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct finops_group *ng = realloc(r->groups, ncap * sizeof *ng);

		if (!ng)
			return NULL;
		r->groups = ng;
		*cap = ncap;
	}
	g = &r->groups[r->ngroups++];
	memset(g, 0, sizeof *g);
	snprintf(g->key, sizeof g->key, "%s", key);
	return g;
}

int finops__prepare_filtered(struct store *db, const char *sql,
			    const struct finops_filter *f, struct store_stmt **st,
			    struct sr_err *e)
{
	int rc = store_prepare(db, sql, st, e);

	if (rc)
		return rc;
	store_bind_i64(*st, 1, f ? f->since_ns : 0);
	store_bind_i64(*st, 2, f ? f->until_ns : 0);
	store_bind_i64(*st, 3, f ? f->job_id : 0);
	return 0;
}

/* The group of key k in r's sorted groups, or NULL. */
static struct finops_group *find_group(const struct finops_report *r,
				       const char *k)
{
	struct finops_group probe;

	if (!r->ngroups)
		return NULL;
	snprintf(probe.key, sizeof probe.key, "%s", k);
	return bsearch(&probe, r->groups, r->ngroups, sizeof probe, cmp_group);
}

/* The group of key k: found among the first nsorted (sorted) groups, or
 * added; NULL when out of memory. */
static struct finops_group *group_of(struct finops_report *r, size_t *cap,
				     size_t nsorted, const char *k)
{
	struct finops_group probe, *g;

	snprintf(probe.key, sizeof probe.key, "%s", k);
	g = nsorted ? bsearch(&probe, r->groups, nsorted, sizeof probe,
			      cmp_group) : NULL;
	return g ? g : add_group(r, cap, probe.key);
}

static int query_rows(struct store *db, const struct finops_filter *f,
		      const char *k, struct finops_report *r, size_t *cap,
		      struct sr_err *e)
{
	char sql[2048];
	struct store_stmt *st = NULL;
	int rc;

	snprintf(sql, sizeof sql,
		 "SELECT %s AS k, count(*) AS n, sum(cost) AS cost,"
		 " sum(list_cost) AS list,"
		 " sum(CASE WHEN reserved_cost IS NULL THEN 0 ELSE 1 END) AS rrows,"
		 " COALESCE(sum(reserved_cost), 0) AS rcost,"
		 " sum(CASE WHEN reserved_cost IS NULL THEN 0 ELSE cost END) AS rbilled,"
		 " sum(billed_ns) AS billed, sum(billed_ns * gpus) AS gpu,"
		 " sum(CASE WHEN busy = 0 AND sp = 0 THEN billed_ns ELSE 0 END) AS idle,"
		 " sum(CASE WHEN busy = 0 AND sp = 0 THEN billed_ns * gpus ELSE 0 END)"
		 " AS idle_gpu,"
		 " sum(CASE WHEN busy = 0 AND sp = 0 THEN cost ELSE 0 END) AS idle_cost,"
		 " sum(CASE sp WHEN 1 THEN billed_ns ELSE 0 END) AS spare,"
		 " sum(CASE sp WHEN 1 THEN cost ELSE 0 END) AS spare_cost"
		 " FROM (SELECT ledger.*, CASE WHEN " FINOPS_SPARE_ROW_SQL
		 " THEN 1 ELSE 0 END AS sp FROM ledger) AS ledger"
		 " WHERE start_ns >= ?1 AND (CAST(?2 AS BIGINT) = 0 OR start_ns < ?2)"
		 " AND (?3 = 0 OR job_id = ?3) GROUP BY 1", k);
	rc = finops__prepare_filtered(db, sql, f, &st, e);
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		struct finops_group *g = add_group(r, cap, store_col_text(st, "k"));

		if (!g) {
			rc = sr_err_set(e, -ENOMEM, "finops report: out of memory");
			break;
		}
		g->t.rows = store_col_i64(st, "n");
		g->t.cost = store_col_i64(st, "cost");
		g->t.list_cost = store_col_i64(st, "list");
		g->t.reserved_rows = store_col_i64(st, "rrows");
		g->t.reserved_cost = store_col_i64(st, "rcost");
		g->t.savings_vs_reserved = g->t.reserved_cost -
					   store_col_i64(st, "rbilled");
		g->t.billed_ns = store_col_i64(st, "billed");
		g->t.gpu_ns = store_col_i64(st, "gpu");
		g->t.idle_ns = store_col_i64(st, "idle");
		g->t.idle_gpu_ns = store_col_i64(st, "idle_gpu");
		g->t.idle_cost = store_col_i64(st, "idle_cost");
		g->t.spare_ns = store_col_i64(st, "spare");
		g->t.spare_cost = store_col_i64(st, "spare_cost");
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "finops report: ledger") : 0;
}

static int query_events(struct store *db, const struct finops_filter *f,
			const char *k, struct finops_report *r, size_t *cap,
			struct sr_err *e)
{
	char sql[2048];
	struct store_stmt *st = NULL;
	size_t nsorted = r->ngroups;
	int rc;

	snprintf(sql, sizeof sql,
		 "SELECT %s AS k,"
		 " sum(CASE kind WHEN 1 THEN 1 ELSE 0 END) AS preemptions,"
		 " sum(CASE kind WHEN 2 THEN 1 ELSE 0 END) AS recoveries,"
		 " sum(CASE kind WHEN 3 THEN 1 ELSE 0 END) AS stalls,"
		 " sum(CASE kind WHEN 1 THEN value_ns ELSE 0 END) AS lost_ns,"
		 " sum(CASE kind WHEN 1 THEN value_cost ELSE 0 END) AS lost_cost,"
		 " sum(CASE kind WHEN 2 THEN value_ns ELSE 0 END) AS down_ns,"
		 " sum(CASE kind WHEN 3 THEN value_ns ELSE 0 END) AS stall_ns"
		 " FROM ledger_event WHERE at_ns >= ?1 AND (CAST(?2 AS BIGINT) = 0 OR at_ns < ?2)"
		 " AND (?3 = 0 OR job_id = ?3) GROUP BY 1", k);
	rc = finops__prepare_filtered(db, sql, f, &st, e);
	if (rc)
		return rc;
	if (r->ngroups > 1) /* groups may be NULL when empty */
		qsort(r->groups, r->ngroups, sizeof r->groups[0], cmp_group);
	while ((rc = store_step(st, e)) == 1) {
		struct finops_group *g = group_of(r, cap, nsorted,
						  store_col_text(st, "k"));

		if (!g) {
			rc = sr_err_set(e, -ENOMEM, "finops report: out of memory");
			break;
		}
		g->t.preemptions = store_col_i64(st, "preemptions");
		g->t.recoveries = store_col_i64(st, "recoveries");
		g->t.ckpt_stalls = store_col_i64(st, "stalls");
		g->t.lost_work_ns = store_col_i64(st, "lost_ns");
		g->t.lost_work_cost = store_col_i64(st, "lost_cost");
		g->t.downtime_ns = store_col_i64(st, "down_ns");
		g->t.ckpt_stall_ns = store_col_i64(st, "stall_ns");
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "finops report: events") : 0;
}

/* Work lost (ledger_lost, lib/ctl/recon_lost.c), added to what
 * preemption rows of before that table carried. */
static int query_lost(struct store *db, const struct finops_filter *f,
		      const char *k, struct finops_report *r, size_t *cap,
		      struct sr_err *e)
{
	char sql[1024];
	struct store_stmt *st = NULL;
	size_t nsorted = r->ngroups;
	int rc;

	snprintf(sql, sizeof sql,
		 "SELECT %s AS k, count(*) AS n, sum(value_ns) AS lost_ns,"
		 " sum(value_cost) AS lost_cost FROM ledger_lost"
		 " WHERE at_ns >= ?1 AND (CAST(?2 AS BIGINT) = 0 OR at_ns < ?2)"
		 " AND (?3 = 0 OR job_id = ?3) GROUP BY 1", k);
	rc = finops__prepare_filtered(db, sql, f, &st, e);
	if (rc)
		return rc;
	if (r->ngroups > 1)
		qsort(r->groups, r->ngroups, sizeof r->groups[0], cmp_group);
	while ((rc = store_step(st, e)) == 1) {
		struct finops_group *g = group_of(r, cap, nsorted,
						  store_col_text(st, "k"));

		if (!g) {
			rc = sr_err_set(e, -ENOMEM, "finops report: out of memory");
			break;
		}
		g->t.lost_attempts = store_col_i64(st, "n");
		g->t.lost_work_ns += store_col_i64(st, "lost_ns");
		g->t.lost_work_cost += store_col_i64(st, "lost_cost");
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "finops report: lost work") : 0;
}

/* The plans (declared work at on-demand prices) of the jobs planned in
 * the window: one group per job id. */
static int query_plans(struct store *db, const struct finops_filter *f,
		       struct finops_report *r, size_t *cap, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = finops__prepare_filtered(db, "SELECT CAST(job_id AS TEXT) AS k,"
		" planned_cost FROM ledger_plan WHERE at_ns >= ?1 AND"
		" (CAST(?2 AS BIGINT) = 0 OR at_ns < ?2) AND (?3 = 0 OR job_id = ?3)", f, &st, e);
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		struct finops_group *g = add_group(r, cap, store_col_text(st, "k"));

		if (!g) {
			rc = sr_err_set(e, -ENOMEM, "finops report: out of memory");
			break;
		}
		g->t.plans = 1;
		g->t.planned_od_cost = store_col_i64(st, "planned_cost");
	}
	store_done(st);
	if (rc >= 0 && r->ngroups > 1)
		qsort(r->groups, r->ngroups, sizeof r->groups[0], cmp_group);
	return rc < 0 ? sr_err_prefix(e, "finops report: plans") : 0;
}

/* By day, the keys are UTC day numbers: make them YYYY-MM-DD (their
 * order, numeric before, stays the same). */
static void day_keys(struct finops_report *r)
{
	for (size_t i = 0; i < r->ngroups; i++) {
		char ts[40];
		int64_t day = strtoll(r->groups[i].key, NULL, 10);

		if (sr_time_format_rfc3339(day * 86400 * SR_NS_PER_SEC, 0, ts,
					   sizeof ts) >= 10) {
			ts[10] = '\0';
			snprintf(r->groups[i].key, sizeof r->groups[i].key, "%s", ts);
		}
	}
}

/* The figures derived from the others, once every cell is in. */
static void totals_derive(struct finops_totals *t)
{
	t->savings_vs_list = t->ok_list_cost - t->ok_cost;
	t->savings_vs_plan = t->planned_od_cost - t->plan_cost;
	t->waste_cost = t->failed_cost + t->ok_waste;
}

static void totals_add(struct finops_totals *a, const struct finops_totals *b)
{
	a->rows += b->rows;
	a->cost += b->cost;
	a->list_cost += b->list_cost;
	a->reserved_rows += b->reserved_rows;
	a->reserved_cost += b->reserved_cost;
	a->savings_vs_reserved += b->savings_vs_reserved;
	a->billed_ns += b->billed_ns;
	a->gpu_ns += b->gpu_ns;
	a->idle_ns += b->idle_ns;
	a->idle_gpu_ns += b->idle_gpu_ns;
	a->idle_cost += b->idle_cost;
	a->spare_ns += b->spare_ns;
	a->spare_cost += b->spare_cost;
	a->preemptions += b->preemptions;
	a->recoveries += b->recoveries;
	a->lost_work_ns += b->lost_work_ns;
	a->lost_work_cost += b->lost_work_cost;
	a->lost_attempts += b->lost_attempts;
	a->downtime_ns += b->downtime_ns;
	a->ckpt_stalls += b->ckpt_stalls;
	a->ckpt_stall_ns += b->ckpt_stall_ns;
	a->plans += b->plans;
	a->planned_od_cost += b->planned_od_cost;
	a->plan_cost += b->plan_cost;
	a->ok_cost += b->ok_cost;
	a->ok_list_cost += b->ok_list_cost;
	a->ok_waste += b->ok_waste;
	a->failed_cost += b->failed_cost;
	a->failed_jobs += b->failed_jobs;
}

/* What became of a job, for its money: still running or SUCCEEDED (its
 * cost bought work), or FAILED/CANCELLED (all of its cost is waste, none
 * of it a saving). */
enum outcome { JOB_LIVE, JOB_DONE, JOB_WASTED };

struct jobinfo {
	int64_t id;
	enum outcome out;
	int64_t billed_ns;        /* over every cell of the job */
};

static int cmp_jobinfo(const void *x, const void *y)
{
	int64_t a = ((const struct jobinfo *)x)->id, b = ((const struct jobinfo *)y)->id;

	return a < b ? -1 : a > b;
}

/* A cell's key "<group key>#<job id>": the job id, and the group key
 * cut at the '#' into k. */
static int64_t cell_split(const char *cell, char *k, size_t n)
{
	const char *hash = strrchr(cell, '#');
	size_t len = hash ? (size_t)(hash - cell) : strlen(cell);

	snprintf(k, n, "%.*s", (int)len, cell);
	return hash ? strtoll(hash + 1, NULL, 10) : 0;
}

struct jobset {
	struct jobinfo *v;
	size_t n;
};

static int job_ended(void *ud, int64_t id, const char *state)
{
	struct jobset *js = ud;
	struct jobinfo probe = { .id = id }, *j;

	j = bsearch(&probe, js->v, js->n, sizeof *js->v, cmp_jobinfo);
	if (j)
		j->out = strcmp(state, "SUCCEEDED") ? JOB_WASTED : JOB_DONE;
	return 0;
}

/* The jobs of the cells, sorted by id, with their outcome and billed
 * time.  *out malloc'd (caller frees). */
static int jobs_of(struct store *db, const struct finops_report *cells,
		   struct jobinfo **out, size_t *n, struct sr_err *e)
{
	struct jobset js = { 0 };
	size_t m = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (cells->ngroups == 0)
		return 0;
	js.v = calloc(cells->ngroups, sizeof *js.v);
	if (!js.v)
		return sr_err_set(e, -ENOMEM, "finops report: out of memory");
	for (size_t i = 0; i < cells->ngroups; i++) {
		char key[sizeof cells->groups[i].key];

		js.v[i].id = cell_split(cells->groups[i].key, key, sizeof key);
		js.v[i].billed_ns = cells->groups[i].t.billed_ns;
	}
	qsort(js.v, cells->ngroups, sizeof *js.v, cmp_jobinfo);
	/* one entry per job, billed time summed */
	for (size_t i = 0; i < cells->ngroups; i++) {
		if (m && js.v[m - 1].id == js.v[i].id)
			js.v[m - 1].billed_ns += js.v[i].billed_ns;
		else
			js.v[m++] = js.v[i];
	}
	js.n = m;
	rc = store_jobs_ended(db, job_ended, &js, e);
	if (rc < 0) {
		free(js.v);
		return sr_err_prefix(e, "finops report");
	}
	*out = js.v;
	*n = js.n;
	return 0;
}

/* r's groups: one per distinct group key of the cells, sorted, zero. */
static int fold_groups(const struct finops_report *cells, struct finops_report *r,
		       struct sr_err *e)
{
	size_t cap = 0, m = 0;

	for (size_t i = 0; i < cells->ngroups; i++) {
		char key[sizeof cells->groups[i].key];

		cell_split(cells->groups[i].key, key, sizeof key);
		if (!add_group(r, &cap, key))
			return sr_err_set(e, -ENOMEM, "finops report: out of memory");
	}
	if (r->ngroups > 1)
		qsort(r->groups, r->ngroups, sizeof r->groups[0], cmp_group);
	for (size_t i = 0; i < r->ngroups; i++)
		if (!m || cmp_group(&r->groups[m - 1], &r->groups[i]))
			r->groups[m++] = r->groups[i];
	r->ngroups = m;
	return 0;
}

/* Fold the cells into r's groups by their group key: a job's outcome
 * decides where its money goes, its plan is booked to each group for the
 * share of the job's node-hours the group served. */
static int fold(const struct finops_report *cells, const struct finops_report *plans,
		const struct jobinfo *jobs, size_t njobs, struct finops_report *r,
		struct sr_err *e)
{
	int rc = fold_groups(cells, r, e);

	for (size_t i = 0; !rc && i < cells->ngroups; i++) {
		const struct finops_totals *c = &cells->groups[i].t;
		struct jobinfo probe, *j;
		const struct finops_group *p;
		struct finops_group *g;
		char key[sizeof cells->groups[i].key], jk[32];
		struct finops_totals t = *c;

		probe.id = cell_split(cells->groups[i].key, key, sizeof key);
		j = bsearch(&probe, jobs, njobs, sizeof *jobs, cmp_jobinfo);
		snprintf(jk, sizeof jk, "%lld", (long long)probe.id);
		p = finops_report_group(plans, jk);
		g = find_group(r, key);
		t.plans = 0;
		t.planned_od_cost = 0;
		if (j && j->out == JOB_WASTED) {
			t.failed_cost = c->cost;
			t.failed_jobs = 1;
		} else {
			t.ok_cost = c->cost;
			t.ok_list_cost = c->list_cost;
			t.ok_waste = c->lost_work_cost + c->idle_cost;
		}
		if (j && j->out == JOB_DONE && p && j->billed_ns > 0) {
			/* the share of the plan this group's node-hours served */
			double share = (double)c->billed_ns / (double)j->billed_ns;

			t.plans = 1;
			t.planned_od_cost = (sr_micros)((double)p->t.planned_od_cost *
							share + 0.5);
			t.plan_cost = c->cost;
		}
		totals_add(&g->t, &t);
	}
	return rc;
}

int finops_report_build(struct store *db, const struct finops_filter *f,
			enum finops_by by, struct finops_report *out,
			struct sr_err *e)
{
	struct finops_report cells = { 0 }, plans = { 0 };
	struct jobinfo *jobs = NULL;
	size_t cap = 0, pcap = 0, njobs = 0;
	int64_t nfailed = 0, nplanned = 0;
	char kr[512], ke[512];
	int rc;

	memset(out, 0, sizeof *out);
	out->by = by;
	if (!finops_by_name(by))
		return sr_err_set(e, -EINVAL, "finops report: unknown grouping %d",
				  (int)by);
	/* cells: (group key, job) */
	snprintf(kr, sizeof kr, "%s || '#' || CAST(COALESCE(job_id, 0) AS TEXT)",
		 key_sql(by, 0));
	snprintf(ke, sizeof ke, "%s || '#' || CAST(COALESCE(job_id, 0) AS TEXT)",
		 key_sql(by, 1));
	rc = query_rows(db, f, kr, &cells, &cap, e);
	if (!rc)
		rc = query_events(db, f, ke, &cells, &cap, e);
	if (!rc)
		rc = query_lost(db, f, ke, &cells, &cap, e);
	if (!rc)
		rc = query_plans(db, f, &plans, &pcap, e);
	if (!rc && cells.ngroups > 1)
		qsort(cells.groups, cells.ngroups, sizeof cells.groups[0], cmp_group);
	if (!rc)
		rc = jobs_of(db, &cells, &jobs, &njobs, e);
	if (!rc)
		rc = fold(&cells, &plans, jobs, njobs, out, e);
	for (size_t i = 0; !rc && i < njobs; i++) {
		char jk[32];

		snprintf(jk, sizeof jk, "%lld", (long long)jobs[i].id);
		nfailed += jobs[i].out == JOB_WASTED;
		nplanned += jobs[i].out == JOB_DONE && jobs[i].billed_ns > 0 &&
			    finops_report_group(&plans, jk) != NULL;
	}
	free(jobs);
	finops_report_free(&cells);
	finops_report_free(&plans);
	if (rc) {
		finops_report_free(out);
		out->by = by;
		return rc;
	}
	if (by == FINOPS_BY_DAY)
		day_keys(out);
	for (size_t i = 0; i < out->ngroups; i++) {
		totals_derive(&out->groups[i].t);
		totals_add(&out->total, &out->groups[i].t);
	}
	/* a job spread over groups is one job in the total */
	out->total.plans = nplanned;
	out->total.failed_jobs = nfailed;
	totals_derive(&out->total);
	return 0;
}

int finops_report_add_shared_to(struct finops_report *r, const char *key,
				sr_micros shared)
{
	struct finops_group *g;
	size_t cap = r->ngroups;

	r->total.shared_cost += shared;
	if (!key)
		return 0;
	g = find_group(r, key);
	if (!g) {
		if (!add_group(r, &cap, key))
			return -ENOMEM;
		qsort(r->groups, r->ngroups, sizeof r->groups[0], cmp_group);
		g = find_group(r, key);
	}
	g->t.shared_cost += shared;
	return 0;
}

void finops_report_add_billed(struct finops_report *r, const char *key,
			      sr_micros billed, sr_micros estimate)
{
	struct finops_group *g = key ? find_group(r, key) : NULL;
	struct finops_totals *t[2] = { &r->total, g ? &g->t : NULL };

	for (int i = 0; i < 2 && t[i]; i++) {
		t[i]->billed_rows++;
		t[i]->billed += billed;
		t[i]->billed_estimate += estimate;
	}
}

const struct finops_group *finops_report_group(const struct finops_report *r,
					       const char *key)
{
	return find_group(r, key);
}

void finops_report_free(struct finops_report *r)
{
	if (!r)
		return;
	free(r->groups);
	r->groups = NULL;
	r->ngroups = 0;
}

static int set_money(json_t *o, const char *name, sr_micros m)
{
	char k[64];
	int rc;

	snprintf(k, sizeof k, "%s_micros", name);
	rc = json_object_set_new(o, k, json_integer(m));
	snprintf(k, sizeof k, "%s_usd", name);
	return rc | json_object_set_new(o, k, json_real(sr_money_to_usd(m)));
}

static int set_secs(json_t *o, const char *name, int64_t ns)
{
	char k[64];

	snprintf(k, sizeof k, "%s_s", name);
	return json_object_set_new(o, k, json_real((double)ns / 1e9));
}

static int set_hours(json_t *o, const char *name, int64_t ns)
{
	char k[64];

	snprintf(k, sizeof k, "%s_hours", name);
	return json_object_set_new(o, k, json_real((double)ns / 3.6e12));
}

json_t *finops_totals_json(const struct finops_totals *t)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(o, "rows", json_integer(t->rows));
	rc |= set_money(o, "cost", t->cost);
	rc |= set_money(o, "list_cost", t->list_cost);
	rc |= set_money(o, "savings_vs_list", t->savings_vs_list);
	if (t->reserved_rows > 0) {
		rc |= set_money(o, "reserved_cost", t->reserved_cost);
		rc |= set_money(o, "savings_vs_reserved", t->savings_vs_reserved);
	} else {
		rc |= json_object_set_new(o, "reserved_cost_micros", json_null());
		rc |= json_object_set_new(o, "savings_vs_reserved_micros", json_null());
	}
	rc |= json_object_set_new(o, "reserved_rows", json_integer(t->reserved_rows));
	rc |= json_object_set_new(o, "savings_vs_list_fraction",
		t->ok_list_cost > 0 ? json_real((double)t->savings_vs_list /
						(double)t->ok_list_cost) : json_null());
	rc |= set_money(o, "failed_cost", t->failed_cost);
	rc |= json_object_set_new(o, "failed_jobs", json_integer(t->failed_jobs));
	rc |= json_object_set_new(o, "plans", json_integer(t->plans));
	if (t->plans > 0 && t->planned_od_cost > 0) {
		rc |= set_money(o, "planned_od_cost", t->planned_od_cost);
		rc |= set_money(o, "savings_vs_plan", t->savings_vs_plan);
		rc |= json_object_set_new(o, "savings_vs_plan_fraction",
			json_real((double)t->savings_vs_plan /
				  (double)t->planned_od_cost));
	} else {
		rc |= json_object_set_new(o, "planned_od_cost_micros", json_null());
		rc |= json_object_set_new(o, "savings_vs_plan_micros", json_null());
	}
	rc |= set_money(o, "waste_cost", t->waste_cost);
	rc |= set_money(o, "shared_cost", t->shared_cost);
	rc |= set_money(o, "allocated_cost", t->cost + t->shared_cost);
	/* billed: null until a bill was applied (reconcile --apply) */
	rc |= json_object_set_new(o, "billed_micros", t->billed_rows ?
				  json_integer(t->billed) : json_null());
	rc |= json_object_set_new(o, "billed_estimate_micros", t->billed_rows ?
				  json_integer(t->billed_estimate) : json_null());
	rc |= set_hours(o, "billed", t->billed_ns);
	rc |= set_hours(o, "gpu", t->gpu_ns);
	rc |= set_hours(o, "idle", t->idle_ns);
	rc |= set_hours(o, "idle_gpu", t->idle_gpu_ns);
	rc |= set_money(o, "idle_cost", t->idle_cost);
	rc |= set_hours(o, "spare", t->spare_ns);
	rc |= set_money(o, "spare_cost", t->spare_cost);
	rc |= json_object_set_new(o, "idle_fraction",
				  json_real(t->cost > 0 ? (double)t->idle_cost /
								(double)t->cost : 0.0));
	rc |= json_object_set_new(o, "preemptions", json_integer(t->preemptions));
	rc |= json_object_set_new(o, "recoveries", json_integer(t->recoveries));
	rc |= set_secs(o, "lost_work", t->lost_work_ns);
	rc |= json_object_set_new(o, "lost_attempts", json_integer(t->lost_attempts));
	rc |= set_money(o, "lost_work_cost", t->lost_work_cost);
	rc |= set_secs(o, "downtime", t->downtime_ns);
	rc |= json_object_set_new(o, "ckpt_stalls", json_integer(t->ckpt_stalls));
	rc |= set_secs(o, "ckpt_stall", t->ckpt_stall_ns);
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *finops_report_json(const struct finops_report *r,
			   const struct finops_filter *f)
{
	json_t *o = json_object(), *groups = json_array(), *tot;
	char ts[40];
	int rc = 0;

	if (!o || !groups)
		goto fail;
	rc |= json_object_set_new(o, "by", json_string(finops_by_name(r->by)));
	if (f && f->since_ns > 0 &&
	    sr_time_format_rfc3339(f->since_ns, 0, ts, sizeof ts) > 0)
		rc |= json_object_set_new(o, "since", json_string(ts));
	else
		rc |= json_object_set_new(o, "since", json_null());
	rc |= json_object_set_new(o, "currency", json_string("USD"));
	/* what idle_cost counts (recon_nodes.c bill) */
	rc |= json_object_set_new(o, "idle_rule", json_string(finops_idle_rule_all));
	tot = finops_totals_json(&r->total);
	if (!tot)
		goto fail;
	rc |= json_object_set_new(o, "total", tot);
	for (size_t i = 0; i < r->ngroups; i++) {
		json_t *g = finops_totals_json(&r->groups[i].t);

		if (!g)
			goto fail;
		rc |= json_object_set_new(g, "key", json_string(r->groups[i].key));
		rc |= json_array_append_new(groups, g);
	}
	rc |= json_object_set_new(o, "groups", groups);
	groups = NULL;
	if (rc)
		goto fail;
	return o;
fail:
	json_decref(groups);
	json_decref(o);
	return NULL;
}

int finops_series_json(struct store *db, const struct finops_filter *f,
		       int64_t bucket_ns, int max_buckets, json_t **out,
		       struct sr_err *e)
{
	static const char sql[] =
		"SELECT * FROM (SELECT start_ns / ?4 AS b, sum(cost) AS cost,"
		" sum(list_cost) AS list,"
		" sum(CASE busy WHEN 0 THEN cost ELSE 0 END) AS idle FROM ledger"
		" WHERE start_ns >= ?1 AND (CAST(?2 AS BIGINT) = 0 OR start_ns < ?2)"
		" AND (?3 = 0 OR job_id = ?3) GROUP BY b ORDER BY b DESC LIMIT ?5)"
		" AS recent ORDER BY b";
	struct store_stmt *st = NULL;
	json_t *pts = NULL;
	int rc;

	*out = NULL;
	if (bucket_ns <= 0 || max_buckets <= 0)
		return sr_err_set(e, -EINVAL, "series: bucket and count must be positive");
	rc = finops__prepare_filtered(db, sql, f, &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 4, bucket_ns);
	store_bind_i64(st, 5, max_buckets);
	pts = json_array();
	if (!pts) {
		rc = sr_err_set(e, -ENOMEM, "series: out of memory");
		goto out;
	}
	while ((rc = store_step(st, e)) == 1) {
		char ts[40];
		json_t *p;

		sr_time_format_rfc3339(store_col_i64(st, "b") * bucket_ns, 0, ts,
				       sizeof ts);
		p = json_pack("{s:s, s:I, s:I, s:I}", "t", ts,
			      "cost_micros", (json_int_t)store_col_i64(st, "cost"),
			      "list_cost_micros", (json_int_t)store_col_i64(st, "list"),
			      "idle_cost_micros", (json_int_t)store_col_i64(st, "idle"));
		if (!p || json_array_append_new(pts, p)) {
			rc = sr_err_set(e, -ENOMEM, "series: out of memory");
			break;
		}
	}
	if (rc == 0) {
		*out = json_pack("{s:f, s:o}", "bucket_s", (double)bucket_ns / 1e9,
				 "points", pts);
		pts = NULL;
		if (!*out)
			rc = sr_err_set(e, -ENOMEM, "series: out of memory");
	} else if (rc != -ENOMEM) {
		sr_err_prefix(e, "series");
	}
out:
	store_done(st);
	json_decref(pts);
	return rc;
}

int finops_timeline_json(struct store *db, const struct finops_filter *f,
			 int limit, json_t **out, struct sr_err *e)
{
	static const char sql[] =
		"SELECT at_ns, kind, job_id, COALESCE(node_id, 0) AS node,"
		" COALESCE(provider, '') || '/' || COALESCE(region, '') || '/' ||"
		" COALESCE(zone, '-') || '/' || COALESCE(instance_type, '') AS pool,"
		" value_ns, value_cost FROM ledger_event"
		" WHERE kind IN (1, 2) AND at_ns >= ?1 AND (CAST(?2 AS BIGINT) = 0 OR at_ns < ?2)"
		" AND (?3 = 0 OR job_id = ?3) ORDER BY at_ns DESC, id DESC LIMIT ?4";
	struct store_stmt *st = NULL;
	json_t *evs;
	int rc;

	*out = NULL;
	rc = finops__prepare_filtered(db, sql, f, &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 4, limit > 0 ? limit : 100);
	evs = json_array();
	if (!evs) {
		rc = sr_err_set(e, -ENOMEM, "timeline: out of memory");
		goto out;
	}
	while ((rc = store_step(st, e)) == 1) {
		char ts[40];
		json_t *o;

		sr_time_format_rfc3339(store_col_i64(st, "at_ns"), 3, ts, sizeof ts);
		o = json_pack("{s:s, s:s, s:I, s:I, s:s, s:f, s:I}", "t", ts,
			      "kind", store_col_i64(st, "kind") == 1 ? "preemption"
								     : "recovery",
			      "job_id", (json_int_t)store_col_i64(st, "job_id"),
			      "node_id", (json_int_t)store_col_i64(st, "node"),
			      "pool", store_col_text(st, "pool"),
			      "value_s", (double)store_col_i64(st, "value_ns") / 1e9,
			      "lost_work_micros", (json_int_t)store_col_i64(st, "value_cost"));
		if (!o || json_array_append_new(evs, o)) {
			rc = sr_err_set(e, -ENOMEM, "timeline: out of memory");
			break;
		}
	}
	if (rc == 0) {
		*out = json_pack("{s:o}", "events", evs);
		evs = NULL;
		if (!*out)
			rc = sr_err_set(e, -ENOMEM, "timeline: out of memory");
	} else if (rc != -ENOMEM) {
		sr_err_prefix(e, "timeline");
	}
out:
	store_done(st);
	json_decref(evs);
	return rc;
}
