/*
 * routes_finops.c - spotrund's FinOps routes.
 *
 *   GET /                      dashboard (public: static, holds no data)
 *   GET /dashboard.js, .css    its script and style (public)
 *   GET /metrics               Prometheus text exposition (admin token)
 *   GET /v1/cost               report: ?since= &until= &job= &by=
 *   GET /v1/cost/focus         FOCUS CSV, same filters; ?version=1.3 (the
 *                              default) or 1.2; ?dataset=cost_and_usage
 *                              (default), contract_commitment or metadata
 *                              (JSON)
 *   POST /v1/cost/billed       the bill's figures beside the estimate
 *                              (spotrun cost reconcile --apply):
 *                              {"source", "cells": [{"job", "day",
 *                              "provider", "ledger_micros", "bill_micros"}]}
 *   GET /v1/cost/series        cost over time: ?buckets=N &bucket=DUR &since=
 *   GET /v1/finops/timeline    preemptions and recoveries: ?limit= &since=
 *
 * Everything except the static files needs the admin token.  Live node
 * prices and deadline slack for /metrics are read from the daemon's
 * `nodes` and `jobs` tables; every other figure comes from the ledger.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/commit.h"
#include "ctl/ctl_int.h"
#include "ctl/deadline.h"
#include "ctl/routes.h"
#include "finops/alloc.h"
#include "finops/billed.h"
#include "finops/commit_use.h"
#include "finops/focus.h"
#include "finops/focus13.h"
#include "finops/metrics.h"
#include "finops/report.h"
#include "router.h"
#include "web_assets.h"

static int asset_get(struct ctl_req *rq, struct ctl_resp *rs)
{
	const char *body, *ctype;
	size_t len;

	if (web_asset_get(ctl_req_path(rq), &body, &len, &ctype))
		return ctl_resp_error(rs, 404, "no such page");
	return ctl_resp_text(rs, 200, ctype, body, len);
}

/* CTL_ROUTE names its registration after the handler: one per path. */
static int web_root(struct ctl_req *rq, struct ctl_resp *rs) { return asset_get(rq, rs); }
static int web_index(struct ctl_req *rq, struct ctl_resp *rs) { return asset_get(rq, rs); }
static int web_js(struct ctl_req *rq, struct ctl_resp *rs) { return asset_get(rq, rs); }
static int web_css(struct ctl_req *rq, struct ctl_resp *rs) { return asset_get(rq, rs); }

CTL_ROUTE("GET", "/", CTL_AUTH_PUBLIC, web_root)
CTL_ROUTE("GET", "/index.html", CTL_AUTH_PUBLIC, web_index)
CTL_ROUTE("GET", "/dashboard.js", CTL_AUTH_PUBLIC, web_js)
CTL_ROUTE("GET", "/dashboard.css", CTL_AUTH_PUBLIC, web_css)

/* ?since ?until ?job into *f; on a bad value a 400 is set in rs. */
static int filter_from_query(struct ctl_req *rq, struct finops_filter *f,
			     struct ctl_resp *rs)
{
	const char *since = ctl_req_query(rq, "since");
	const char *until = ctl_req_query(rq, "until");
	const char *job = ctl_req_query(rq, "job");
	int64_t now = sr_time_real_ns();
	char *end;

	memset(f, 0, sizeof *f);
	if (since && finops_parse_when(since, now, &f->since_ns)) {
		ctl_resp_error(rs, 400, "query: since: '%.64s' is not an RFC 3339 "
			       "time, a date or a duration", since);
		return -EINVAL;
	}
	if (until && finops_parse_when(until, now, &f->until_ns)) {
		ctl_resp_error(rs, 400, "query: until: '%.64s' is not an RFC 3339 "
			       "time, a date or a duration", until);
		return -EINVAL;
	}
	if (job) {
		f->job_id = strtoll(job, &end, 10);
		if (*end || f->job_id <= 0) {
			ctl_resp_error(rs, 400, "query: job: '%.64s' is not a job id", job);
			return -EINVAL;
		}
	}
	return 0;
}

static int query_int(struct ctl_req *rq, const char *key, int64_t def,
		     int64_t lo, int64_t hi, int64_t *out, struct ctl_resp *rs)
{
	const char *v = ctl_req_query(rq, key);
	char *end;

	*out = def;
	if (!v)
		return 0;
	*out = strtoll(v, &end, 10);
	if (*end || *out < lo || *out > hi) {
		ctl_resp_error(rs, 400, "query: %s: '%.32s' not in %lld..%lld", key, v,
			       (long long)lo, (long long)hi);
		return -EINVAL;
	}
	return 0;
}

static int db_fail(struct ctl_resp *rs, const struct sr_err *e, int rc)
{
	sr_error("finops", "query failed", "err=\"%s\"", sr_err_str(e, rc));
	return ctl_resp_error(rs, 500, "database error");
}

/* The committed pools of the enabled providers (a Slurm cluster's
 * partitions) as commitments of c over the window of f (ctl/commit.h);
 * that window into *lo, *hi, for the figures read over it. */
static int committed_load(struct ctl_req *rq, const struct finops_filter *f,
			  struct finops_conf *c, int64_t *lo, int64_t *hi,
			  struct sr_err *e)
{
	int rc = finops_window(ctl_req_store(rq), f, sr_time_real_ns(), lo, hi,
			       e);

	/* to the end of the window's last second (the window is whole
	 * seconds): every row billed so far starts inside the period */
	return rc ? rc : ctl_commitments_add(ctl_req_ctl(rq), c, *lo,
					     *hi + SR_NS_PER_SEC, e);
}

/* <state-dir>/finops.json (lib/finops/fconf.h) and, when it names shared
 * costs, their split over the window of f into *a; that window into
 * *lo, *hi.  On an error a 500 naming the file and field is set in rs
 * and -1 returned. */
static int shared_load(struct ctl_req *rq, const struct finops_filter *f,
		       struct finops_conf *c, struct finops_alloc *a,
		       int64_t *lo, int64_t *hi, struct ctl_resp *rs)
{
	char path[2200];
	struct sr_err e = { 0 };
	int rc;

	memset(a, 0, sizeof *a);
	snprintf(path, sizeof path, "%s/finops.json",
		 ctl_state_dir(ctl_req_ctl(rq)));
	rc = finops_conf_load(path, c, &e);
	if (!rc)
		rc = committed_load(rq, f, c, lo, hi, &e);
	if (!rc)
		rc = finops_alloc_build(ctl_req_store(rq), c, f, sr_time_real_ns(),
					a, &e);
	if (rc) {
		sr_error("finops", "shared costs", "err=\"%s\"", sr_err_str(&e, rc));
		ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
		finops_conf_free(c);
		return -1;
	}
	return 0;
}

/* Committed capacity over the window [lo, hi) (finops/commit_use.h):
 * what the jobs used of each commitment, and what stayed idle (waste). */
static int committed_json(struct ctl_req *rq, int64_t lo, int64_t hi,
			  const struct finops_conf *c, json_t **out,
			  struct sr_err *e)
{
	struct finops_commit_use *v = NULL;
	size_t n = 0;
	int rc = finops_commit_use(ctl_req_store(rq), c, lo, hi, &v, &n, e);

	if (rc)
		return rc;
	*out = finops_commit_use_json(v, n);
	free(v);
	return *out ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
}

static int cost_get(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct finops_filter f;
	struct finops_report rep;
	struct finops_conf conf;
	struct finops_alloc al;
	enum finops_by by = FINOPS_BY_TOTAL;
	const char *bys = ctl_req_query(rq, "by");
	struct sr_err e;
	json_t *j, *cj = NULL;
	int64_t lo, hi;
	int rc;

	if (filter_from_query(rq, &f, rs))
		return 0;
	if (bys && finops_by_parse(bys, &by))
		return ctl_resp_error(rs, 400, "query: by: '%.32s' is not one of total, "
				      "job, cloud, region, pool, day, team, project,"
				      " cost_center", bys);
	if (shared_load(rq, &f, &conf, &al, &lo, &hi, rs))
		return 0;
	rc = finops_report_build(ctl_req_store(rq), &f, by, &rep, &e);
	if (!rc && finops_report_add_shared(&rep, &al, f.job_id))
		rc = sr_err_set(&e, -ENOMEM, "out of memory");
	if (!rc)
		rc = finops_billed_report(ctl_req_store(rq), &f, &rep, &e);
	if (!rc)
		rc = committed_json(rq, lo, hi, &conf, &cj, &e);
	j = rc ? NULL : finops_report_json(&rep, &f);
	if (j) {
		json_object_set_new(j, "shared_split",
				    json_string(finops_split_name(conf.split)));
		json_object_set_new(j, "committed", cj);
		cj = NULL;
	}
	json_decref(cj);
	finops_report_free(&rep);
	finops_alloc_free(&al);
	finops_conf_free(&conf);
	if (rc)
		return db_fail(rs, &e, rc);
	if (!j)
		return -ENOMEM;
	return ctl_resp_json(rs, 200, j);
}

CTL_ROUTE("GET", "/v1/cost", CTL_AUTH_ADMIN, cost_get)

static int billed_post(struct ctl_req *rq, struct ctl_resp *rs)
{
	size_t len, i, n;
	const char *body = ctl_req_body(rq, &len);
	json_t *root = json_loadb(body, len, 0, NULL), *cells, *c;
	const char *src = json_string_value(json_object_get(root, "source"));
	struct finops_billed *v = NULL;
	struct sr_err e = { 0 };
	int rc;

	cells = json_object_get(root, "cells");
	if (!json_is_object(root) || !src || !*src || !json_is_array(cells)) {
		json_decref(root);
		return ctl_resp_error(rs, 400, "body: expected {\"source\": \"...\", "
				      "\"cells\": [...]}");
	}
	n = json_array_size(cells);
	v = calloc(n + 1, sizeof *v);
	if (!v) {
		json_decref(root);
		return -ENOMEM;
	}
	json_array_foreach(cells, i, c) {
		const char *day = json_string_value(json_object_get(c, "day"));
		const char *prov = json_string_value(json_object_get(c, "provider"));
		json_t *j = json_object_get(c, "job");
		json_t *l = json_object_get(c, "ledger_micros");
		json_t *b = json_object_get(c, "bill_micros");
		char ts[40];
		int64_t t;

		snprintf(ts, sizeof ts, "%.10sT00:00:00Z", day ? day : "");
		if (!json_is_integer(j) || !json_is_integer(l) || !json_is_integer(b) ||
		    !prov || !*prov || strlen(prov) >= sizeof v[i].provider ||
		    !day || strlen(day) != 10 || sr_time_parse_rfc3339(ts, &t, NULL)) {
			free(v);
			json_decref(root);
			return ctl_resp_error(rs, 400, "cells[%zu]: expected {job, day "
					      "YYYY-MM-DD, provider, ledger_micros, "
					      "bill_micros}", i);
		}
		v[i].job_id = json_integer_value(j);
		v[i].day = t / (INT64_C(86400) * SR_NS_PER_SEC);
		snprintf(v[i].provider, sizeof v[i].provider, "%s", prov);
		v[i].estimate = json_integer_value(l);
		v[i].billed = json_integer_value(b);
	}
	rc = finops_billed_add(ctl_req_store(rq), v, n, src, sr_time_real_ns(), &e);
	free(v);
	json_decref(root);
	if (rc == -EINVAL)
		return ctl_resp_error(rs, 400, "%s", e.msg);
	if (rc)
		return db_fail(rs, &e, rc);
	return ctl_resp_json(rs, 200, json_pack("{s:I}", "applied", (json_int_t)n));
}

CTL_ROUTE("POST", "/v1/cost/billed", CTL_AUTH_ADMIN, billed_post)

static int focus_get(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct finops_filter f;
	struct finops_focus_opts o = { ctl_req_query(rq, "account"),
				       ctl_req_query(rq, "account_name") };
	const char *ver = ctl_req_query(rq, "version");
	const char *ds = ctl_req_query(rq, "dataset");
	struct finops_conf conf;
	struct finops_alloc al;
	struct sr_err e = { 0 };
	int64_t lo, hi; /* the window; the export reads f */
	char *buf = NULL;
	size_t len = 0, rows = 0;
	json_t *meta = NULL;
	FILE *mem;
	int rc;

	if (filter_from_query(rq, &f, rs))
		return 0;
	if (ver && strcmp(ver, "1.3") && strcmp(ver, "1.2"))
		return ctl_resp_error(rs, 400, "query: version: '%.16s' is not 1.3 "
				      "or 1.2", ver);
	if (!ds)
		ds = "cost_and_usage";
	if (strcmp(ds, "cost_and_usage") && strcmp(ds, "contract_commitment") &&
	    strcmp(ds, "metadata"))
		return ctl_resp_error(rs, 400, "query: dataset: '%.32s' is not "
				      "cost_and_usage, contract_commitment or "
				      "metadata", ds);
	if (ver && !strcmp(ver, "1.2") && strcmp(ds, "cost_and_usage"))
		return ctl_resp_error(rs, 400, "query: dataset: FOCUS 1.2 has only "
				      "cost_and_usage");
	if (shared_load(rq, &f, &conf, &al, &lo, &hi, rs))
		return 0;
	mem = open_memstream(&buf, &len);
	if (!mem) {
		rc = -ENOMEM;
		goto out;
	}
	if (ver && !strcmp(ver, "1.2"))
		rc = finops_focus_write(ctl_req_store(rq), &f, &o, mem, NULL, &e);
	else if (!strcmp(ds, "contract_commitment"))
		rc = finops_focus13_cc_write(&conf, &o, mem, NULL, &e);
	else
		rc = finops_focus13_write(ctl_req_store(rq), &f, &o, &conf, &al,
					  mem, &rows, &e);
	fclose(mem);
	if (!rc && !strcmp(ds, "metadata")) {
		meta = finops_focus13_metadata(ctl_req_store(rq), &f,
					       sr_time_real_ns(), rows,
					       conf.ncommitments, &e);
		rc = meta ? 0 : (e.code ? e.code : -ENOMEM);
	}
	if (rc) {
		rc = db_fail(rs, &e, rc);
		goto out;
	}
	if (meta) {
		rc = ctl_resp_json(rs, 200, meta);
		meta = NULL;
	} else {
		rc = ctl_resp_text(rs, 200, "text/csv; charset=utf-8", buf, len);
	}
out:
	json_decref(meta);
	free(buf);
	finops_alloc_free(&al);
	finops_conf_free(&conf);
	return rc;
}

CTL_ROUTE("GET", "/v1/cost/focus", CTL_AUTH_ADMIN, focus_get)

static int series_get(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct finops_filter f;
	const char *bucket = ctl_req_query(rq, "bucket");
	int64_t buckets, bucket_ns = 0, first = 0;
	struct sr_err e = { 0 };
	json_t *j;
	int rc;

	if (filter_from_query(rq, &f, rs) ||
	    query_int(rq, "buckets", 120, 1, 10000, &buckets, rs))
		return 0;
	if (bucket && (sr_dur_parse(bucket, &bucket_ns, NULL) || bucket_ns <= 0))
		return ctl_resp_error(rs, 400, "query: bucket: '%.32s' is not a "
				      "duration", bucket);
	if (!bucket_ns) {
		/* spread the span of the data over the requested buckets */
		rc = store_query_i64(ctl_req_store(rq), "SELECT min(start_ns) FROM"
				     " ledger WHERE start_ns >= ?1", f.since_ns,
				     &first, &e);
		if (rc < 0)
			return db_fail(rs, &e, rc);
		bucket_ns = first > 0 ? (sr_time_real_ns() - first) / buckets + 1 : 0;
		if (bucket_ns < SR_NS_PER_SEC)
			bucket_ns = SR_NS_PER_SEC;
	}
	rc = finops_series_json(ctl_req_store(rq), &f, bucket_ns, (int)buckets, &j, &e);
	if (rc)
		return db_fail(rs, &e, rc);
	return ctl_resp_json(rs, 200, j);
}

CTL_ROUTE("GET", "/v1/cost/series", CTL_AUTH_ADMIN, series_get)

static int timeline_get(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct finops_filter f;
	int64_t limit;
	struct sr_err e;
	json_t *j;
	int rc;

	if (filter_from_query(rq, &f, rs) ||
	    query_int(rq, "limit", 100, 1, 1000, &limit, rs))
		return 0;
	rc = finops_timeline_json(ctl_req_store(rq), &f, (int)limit, &j, &e);
	if (rc)
		return db_fail(rs, &e, rc);
	return ctl_resp_json(rs, 200, j);
}

CTL_ROUTE("GET", "/v1/finops/timeline", CTL_AUTH_ADMIN, timeline_get)

/* ---- /metrics ---------------------------------------------------------- */

/* The live nodes and unfinished jobs, every one (no cap): arrays grown
 * as rows come, their strings kept beside them; the pointers in the
 * finops_live rows are set once loading is done (load_live). */
struct live_buf {
	struct finops_live_node *nodes;
	char (*nstr)[4][64];          /* cloud region zone type */
	size_t nn, capn;
	struct finops_live_job *jobs;
	char (*jname)[64];
	size_t nj, capj;
	int64_t *missed;
	size_t nm, capm;
	struct idlist { int64_t *v; size_t n, cap; } ok, wasted; /* ended */
	struct finops_live live;
};

static void live_free(struct live_buf *b)
{
	free(b->nodes);
	free(b->nstr);
	free(b->jobs);
	free(b->jname);
	free(b->missed);
	free(b->ok.v);
	free(b->wasted.v);
}

static int cmp_id(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

/* store_jobs_ended: SUCCEEDED into b->ok, the others into b->wasted. */
static int ended_one(void *ud, int64_t id, const char *state)
{
	struct live_buf *b = ud;
	struct idlist *l = strcmp(state, "SUCCEEDED") ? &b->wasted : &b->ok;

	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 64;
		int64_t *nv = realloc(l->v, nc * sizeof *nv);

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = id;
	return 0;
}

/* Room for one more row in v (element size sz) and its strings in s
 * (element size ssz). */
static int live_grow(void **v, size_t sz, void **str, size_t ssz, size_t n,
		     size_t *cap)
{
	size_t nc;
	void *nv, *ns;

	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : 64;
	nv = realloc(*v, nc * sz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	ns = realloc(*str, nc * ssz);
	if (!ns)
		return -ENOMEM;
	*str = ns;
	*cap = nc;
	return 0;
}

static void copy_col(char *dst, struct store_stmt *st, const char *col)
{
	snprintf(dst, 64, "%s", store_col_text(st, col));
}

/* The deadline minus the projected finish (lib/ctl/deadline.h), cloud s,
 * of the live job in st's row. */
static double slack_of(struct ctl *c, struct store_stmt *st, double sim_now)
{
	double total = store_col_f64(st, "est_work_s") > 0 ?
		       store_col_f64(st, "est_work_s") : store_col_f64(st, "work_s");
	double run = store_col_f64(st, "run_s");
	bool running = !store_col_null(st, "run_started_ns");
	struct ctl_deadline d;

	if (running)
		run += (double)(sr_time_real_ns() - store_col_i64(st,
			"run_started_ns")) / 1e9 * c->cfg.time_scale;
	ctl_deadline_eval(&(struct ctl_deadline_in){
		.now_s = sim_now, .start_s = store_col_f64(st, "sim_start_s"),
		.deadline_s = store_col_f64(st, "deadline_s"),
		.work_total_s = total,
		.work_done_s = ctl_deadline_work_done(total,
			store_col_null(st, "step") ? -1 : store_col_i64(st, "step"),
			store_col_null(st, "total_steps") ? -1 :
			store_col_i64(st, "total_steps"), run),
		.restart_s = store_col_f64(st, "est_restart_s"),
		.running = running }, &d);
	return store_col_f64(st, "sim_start_s") + store_col_f64(st, "deadline_s") -
	       d.projected_s;
}

static int load_live(struct ctl *c, struct store *db, struct live_buf *b,
		     struct sr_err *e)
{
	struct store_stmt *st = NULL;
	struct cloud_offering o;
	double sim_now = ctl__sim_now(c);
	int rc;

	rc = store_prepare(db, "SELECT id, job_id, cloud, region, zone, "
			   "instance_type, spot, pool, price_micros FROM nodes WHERE state"
			   " NOT IN ('TERMINATED', 'LOST') ORDER BY id", &st, e);
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		struct finops_live_node *nd;

		rc = live_grow((void **)&b->nodes, sizeof *b->nodes,
			       (void **)&b->nstr, sizeof *b->nstr, b->nn, &b->capn);
		if (rc)
			break;
		nd = &b->nodes[b->nn];
		copy_col(b->nstr[b->nn][0], st, "cloud");
		copy_col(b->nstr[b->nn][1], st, "region");
		copy_col(b->nstr[b->nn][2], st, "zone");
		copy_col(b->nstr[b->nn][3], st, "instance_type");
		nd->id = store_col_i64(st, "id");
		nd->job_id = store_col_i64(st, "job_id");
		nd->spot = store_col_i64(st, "spot") != 0;
		/* a committed pool's node (a Slurm partition's) */
		nd->committed = !nd->spot && ctl__describe(c, (int)store_col_i64(
					st, "pool"), &o) == 0 && o.committed;
		nd->price_per_hour = store_col_i64(st, "price_micros");
		b->nn++;
	}
	store_done(st);
	if (rc < 0)
		return rc;
	rc = store_prepare(db, "SELECT id, name, state, sim_start_s, deadline_s,"
			   " run_s, run_started_ns, work_s, est_work_s, est_restart_s,"
			   " step, total_steps, ckpt_step, ckpt_local_step,"
			   " ckpt_store_ns FROM jobs"
			   " WHERE state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
			   " ORDER BY id", &st, e);
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		struct finops_live_job *j;

		rc = live_grow((void **)&b->jobs, sizeof *b->jobs,
			       (void **)&b->jname, sizeof *b->jname, b->nj, &b->capj);
		if (rc)
			break;
		j = &b->jobs[b->nj];
		copy_col(b->jname[b->nj], st, "name");
		j->id = store_col_i64(st, "id");
		j->state = "";
		j->ckpt_local_step = store_col_null(st, "ckpt_local_step") ? -1 :
				     store_col_i64(st, "ckpt_local_step");
		/* ckpt_step is the store's only for a job with tier 3 (the
		 * ones whose agent reports the node's disk apart) */
		j->ckpt_store_step = store_col_null(st, "ckpt_step") ||
				     j->ckpt_local_step < 0 ? -1 :
				     store_col_i64(st, "ckpt_step");
		j->ckpt_store_age_s = store_col_null(st, "ckpt_store_ns") ? NAN :
			(sr_time_real_ns() - store_col_i64(st, "ckpt_store_ns")) / 1e9;
		j->has_deadline = !store_col_null(st, "deadline_s");
		if (j->has_deadline)
			j->deadline_slack_s = slack_of(c, st, sim_now);
		b->nj++;
	}
	store_done(st);
	if (rc < 0)
		return rc;
	rc = store_prepare(db, "SELECT id FROM jobs WHERE deadline_state = 2"
			   " ORDER BY id", &st, e);
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		void *unused = NULL;

		rc = live_grow((void **)&b->missed, sizeof *b->missed, &unused, 1,
			       b->nm, &b->capm);
		free(unused);
		if (rc)
			break;
		b->missed[b->nm++] = store_col_i64(st, "id");
	}
	store_done(st);
	if (rc < 0)
		return rc;
	rc = store_jobs_ended(db, ended_one, b, e);
	if (rc == -ENOMEM)
		return sr_err_set(e, rc, "metrics: out of memory");
	if (rc)
		return rc;
	if (b->ok.n > 1) /* v is NULL while empty */
		qsort(b->ok.v, b->ok.n, sizeof *b->ok.v, cmp_id);
	if (b->wasted.n > 1)
		qsort(b->wasted.v, b->wasted.n, sizeof *b->wasted.v, cmp_id);
	for (size_t i = 0; i < b->nn; i++) {
		b->nodes[i].provider = b->nstr[i][0];
		b->nodes[i].region = b->nstr[i][1];
		b->nodes[i].zone = b->nstr[i][2];
		b->nodes[i].instance_type = b->nstr[i][3];
	}
	for (size_t i = 0; i < b->nj; i++)
		b->jobs[i].name = b->jname[i];
	b->live.nodes = b->nodes;
	b->live.nnodes = b->nn;
	b->live.jobs = b->jobs;
	b->live.njobs = b->nj;
	b->live.missed = b->missed;
	b->live.nmissed = b->nm;
	b->live.succeeded = b->ok.v;
	b->live.nsucceeded = b->ok.n;
	b->live.wasted = b->wasted.v;
	b->live.nwasted = b->wasted.n;
	return 0;
}

/* Committed capacity since the first ledger row, appended to the
 * exposition *text (finops_commit_use_prom): *text is replaced; kept
 * as it was on an error. */
static int committed_prom(struct ctl_req *rq, char **text, size_t *len,
			  struct sr_err *e)
{
	struct finops_filter f = { 0 };
	struct finops_commit_use *v = NULL;
	struct finops_conf conf;
	char path[2200], *buf = NULL;
	size_t n = 0, blen = 0;
	FILE *mem;
	int64_t lo, hi;
	int rc;

	snprintf(path, sizeof path, "%s/finops.json",
		 ctl_state_dir(ctl_req_ctl(rq)));
	rc = finops_conf_load(path, &conf, e);
	if (!rc)
		rc = committed_load(rq, &f, &conf, &lo, &hi, e);
	if (!rc)
		rc = finops_commit_use(ctl_req_store(rq), &conf, lo, hi, &v, &n, e);
	mem = rc ? NULL : open_memstream(&buf, &blen);
	if (!rc && !mem)
		rc = sr_err_set(e, -ENOMEM, "metrics: out of memory");
	if (mem) {
		fwrite(*text, 1, *len, mem);
		finops_commit_use_prom(mem, v, n);
		if (fclose(mem))
			rc = sr_err_set(e, -ENOMEM, "metrics: out of memory");
	}
	free(v);
	finops_conf_free(&conf);
	if (rc) {
		free(buf);
		return rc;
	}
	free(*text);
	*text = buf;
	*len = blen;
	return 0;
}

static int metrics_get(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct live_buf b = { 0 };
	struct sr_err e;
	char *text = NULL;
	size_t len = 0;
	int rc;

	rc = load_live(ctl_req_ctl(rq), ctl_req_store(rq), &b, &e);
	if (rc) {
		sr_warn("finops", "metrics: live nodes/jobs unavailable",
			"err=\"%s\"", sr_err_str(&e, rc));
		memset(&b.live, 0, sizeof b.live);
	}
	rc = finops_metrics_render(ctl_req_store(rq), &b.live, &text, &len, &e);
	live_free(&b);
	if (rc)
		return db_fail(rs, &e, rc);
	rc = committed_prom(rq, &text, &len, &e);
	if (rc) /* finops.json unreadable: the rest still serves */
		sr_warn("finops", "metrics: committed capacity unavailable",
			"err=\"%s\"", sr_err_str(&e, rc));
	rc = ctl_resp_text(rs, 200, "text/plain; version=0.0.4; charset=utf-8",
			   text, len);
	free(text);
	return rc;
}

CTL_ROUTE("GET", "/metrics", CTL_AUTH_ADMIN, metrics_get)
