/*
 * routes_jobs.c - the user API: jobs, nodes, offerings, health
 * (docs/api.md "User API").
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/api_body.h"
#include "ctl/ctl_int.h"
#include "ctl/teamtok.h"
#include "ctl/routes.h"
#include "finops/budget.h"
#include "finops/fconf.h"
#include "finops/report.h"
#include "ctl/jobsm.h"
#include "ctl/place.h"
#include "ctl/secrets.h"
#include "market/jobspec.h"
#include "store/store_ctl.h"

#define VERSION "0.1.0"

static int internal(struct ctl_resp *rs, const struct sr_err *e, int rc)
{
	/* a fenced write is not an error: the router answers not_leader */
	if (!ctl__fenced())
		sr_error("api", "internal error", "err=\"%s\"", sr_err_str(e, rc));
	return ctl_resp_error(rs, 500, "%s", sr_err_str(e, rc));
}

static int query_int(const struct ctl_req *rq, const char *key, int64_t def,
		     int64_t min, int64_t max, int64_t *out, struct ctl_resp *rs)
{
	const char *s = ctl_req_query(rq, key);
	char *end = NULL;
	long long v;

	*out = def;
	if (!s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		ctl_resp_error(rs, 400, "query parameter %s: expected an integer "
			       "%" PRId64 "..%" PRId64, key, min, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* ---- POST /v1/jobs ------------------------------------------------------- */

/* An Idempotency-Key (docs/api.md "Idempotency"): the key and the digest
 * of the request body it came with. */
struct idem {
	const char *key; /* borrowed from the request; NULL if none */
	unsigned char hash[CTL_DIGEST_LEN];
	bool replayed;   /* out: the key was seen, *id is that job */
};

/* 0 if the header is absent or valid; else the response is filled. */
static int idem_read(struct ctl_req *rq, const char *body, size_t len,
		     struct idem *k, struct ctl_resp *rs)
{
	const char *v = ctl__req_header(rq, "Idempotency-Key");
	size_t n;

	memset(k, 0, sizeof *k);
	if (!v)
		return 0;
	n = strlen(v);
	if (n < 8 || n > CTL_IDEM_KEY_MAX)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)v[i];

		if (!(ch >= '0' && ch <= '9') && !(ch >= 'a' && ch <= 'z') &&
		    !(ch >= 'A' && ch <= 'Z') && !strchr("-_.:", ch))
			goto bad;
	}
	k->key = v;
	SHA256((const unsigned char *)body, len, k->hash);
	return 0;
bad:
	ctl_resp_error(rs, 400, "Idempotency-Key: expected 8..%d characters "
		       "of [A-Za-z0-9-_.:]", CTL_IDEM_KEY_MAX);
	return -EINVAL;
}

/* Inside the write transaction: the job created with k->key, if any.
 * Returns 0 (found: *id and k->replayed set; or not found), -SR_ECONFLICT
 * when the key came with another body, or a database error. */
static int idem_lookup(struct store *db, struct idem *k, int64_t *id,
		       struct sr_err *e)
{
	unsigned char h[STORE_DIGEST_LEN];
	size_t hn = 0;
	int64_t found = 0;
	int rc;

	if (!k->key)
		return 0;
	rc = store_job_by_idem(db, k->key, &found, h, &hn, e);
	if (rc != 1)
		return rc;
	if (hn != CTL_DIGEST_LEN || memcmp(h, k->hash, CTL_DIGEST_LEN))
		return sr_err_set(e, -SR_ECONFLICT, "Idempotency-Key '%s' was "
				  "used for job %lld with a different request",
				  k->key, (long long)found);
	*id = found;
	k->replayed = true;
	return 0;
}

static int job_insert(struct ctl *c, struct store *db,
		      const struct api_job_create *b, const struct jobspec *js,
		      json_t *specj, const struct place_plan *plan,
		      struct idem *k, const struct ctl_secrets *sec, int64_t *id,
		      struct sr_err *e)
{
	char *spec = NULL, *envs = NULL, *cand = NULL;
	int64_t now = ctl__now(c); /* the reconciler's clock: it ages the row */
	double sim = ctl__sim_at(c, now);
	int rc;

	spec = json_dumps(specj, JSON_COMPACT | JSON_SORT_KEYS);
	envs = sec->envs ? json_dumps(sec->envs, JSON_COMPACT | JSON_SORT_KEYS)
			 : NULL;
	cand = place_plan_json(plan);
	if (!spec || !cand) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	rc = store_begin(db, e);
	if (rc)
		goto out;
	rc = idem_lookup(db, k, id, e);
	if (rc || k->replayed)
		goto out; /* nothing written either way */
	rc = store_job_insert(db, &(struct store_job_new){
		.name = js->name ? js->name : b->spec_name,
		.spec_name = b->spec_name,
		.spec_yaml = sec->yaml, .spec_yaml_len = sec->yaml_len,
		.spec_json = spec, .workdir = b->workdir, .envs = envs,
		.num_nodes = js->num_nodes,
		/* workload failures tolerated: the API's value, else
		 * SkyPilot's job_recovery.max_restarts_on_errors, else
		 * spotrun.max_restarts */
		.max_restarts = b->max_restarts >= 0 ? b->max_restarts :
				js->max_restarts_on_errors >= 0 ?
				js->max_restarts_on_errors :
				js->max_restarts >= 0 ? js->max_restarts : 3,
		.now_ns = now, .sim_start_s = sim,
		.deadline_s = plan->deadline_s, .work_s = plan->work_s,
		.candidates = cand, .idem_key = k->key,
		.idem_hash = k->key ? k->hash : NULL,
		.idem_hash_len = CTL_DIGEST_LEN,
		.secrets = sec->sealed, .secrets_len = sec->sealed_len,
		.files = b->files, .team = js->team, .project = js->project,
		.cost_center = js->cost_center }, id, e);
	if (!rc) {
		/* the warm spares it keeps, and whether the plan chose them */
		json_t *d = json_pack("{s:i,s:b,s:s}", "spares", plan->spares,
				      "spares_planned", plan->spares_planned,
				      "spares_why", plan->spares_why);

		rc = ctl_event_append(db, *id, "created", NULL, "PENDING", 0, now,
				      sim, d, "job accepted", e);
		json_decref(d);
	}
out:
	if (store_in_tx(db))
		rc = store_end(db, rc, e);
	free(spec);
	free(envs);
	free(cand);
	return rc;
}

/* Reply {"job": <job id>} with `status`; a store error is a 500. */
static int job_reply(struct ctl *c, struct store *db, int64_t id, int status,
		     struct ctl_resp *rs)
{
	struct sr_err e = { 0 };
	json_t *j = ctl__job_json(c, db, id, true, &e);

	if (!j)
		return internal(rs, &e, e.code ? e.code : -EIO);
	return ctl_resp_json(rs, status, json_pack("{s:o}", "job", j));
}

/* A hard team/project budget (<state-dir>/finops.json) the job would
 * push past its month: 0, or a 403 naming the numbers set in rs (-1).
 * The job's cost: its declared work x nodes at the on-demand price of
 * its plan (the most it would cost), or its max_cost when lower. */
static int budget_check(struct ctl *c, struct store *db, const struct jobspec *js,
			const struct place_plan *plan, struct ctl_resp *rs)
{
	struct finops_conf conf;
	struct sr_err e = { 0 };
	char path[2200], why[160];
	sr_micros cost = 0;
	int rc;

	snprintf(path, sizeof path, "%s/finops.json", ctl_state_dir(c));
	rc = finops_conf_load(path, &conf, &e);
	if (!rc && !conf.nbudgets) {
		finops_conf_free(&conf);
		return 0;
	}
	snprintf(why, sizeof why, "no declared work");
	if (plan->work_s > 0 && isfinite(plan->work_s) && plan->od_price_usd > 0) {
		cost = sr_money_cost(sr_money_from_usd(plan->od_price_usd) *
				     js->num_nodes, (int64_t)(plan->work_s * 1e9));
		snprintf(why, sizeof why, "%.1f h x %d node(s) at $%.2f/h on-demand",
			 plan->work_s / 3600, js->num_nodes, plan->od_price_usd);
	}
	if (js->max_cost >= 0 && (js->max_cost < cost || !(plan->work_s > 0))) {
		cost = js->max_cost;
		snprintf(why, sizeof why, "its max_cost");
	}
	if (!rc)
		rc = finops_budget_admit(db, &conf, js->team, js->project, cost, why,
					 ctl__now(c), c->cfg.time_scale, &e);
	finops_conf_free(&conf);
	if (rc == -EDQUOT) {
		ctl_resp_error(rs, 403, "refused: %s", e.msg);
		return -1;
	}
	if (rc) {
		internal(rs, &e, rc);
		return -1;
	}
	return 0;
}

static int jobs_create(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct api_job_create b;
	struct jobspec js;
	struct place_plan plan;
	struct sr_err e = { 0 };
	struct idem k;
	struct ctl_secrets sec = { 0 };
	json_t *root = NULL, *specj = NULL;
	struct store *db = ctl_req_store(rq);
	int64_t id = 0;
	size_t len, idem_hn = 0;
	unsigned char idem_h[STORE_DIGEST_LEN];
	const char *body = ctl_req_body(rq, &len);
	int rc;

	jobspec_init(&js);
	memset(&plan, 0, sizeof plan);
	if (idem_read(rq, body, len, &k, rs))
		return 0;
	rc = api_parse_job_create(body, len, &root, &b, &e);
	if (rc)
		return ctl_resp_error(rs, 400, "%s", sr_err_str(&e, rc));
	rc = jobspec_parse_buf(b.spec_yaml, b.spec_len, b.spec_name, &js, &e);
	if (rc) {
		ctl_resp_error(rs, 400, "%s", sr_err_str(&e, rc));
		goto out;
	}
	rc = place_plan_init(c, &js, ctl__now(c), &plan, &e);
	if (rc) {
		if (rc == -SR_ENOTFOUND || rc == -EINVAL)
			ctl_resp_error(rs, 400, "%s: %s", b.spec_name,
				       sr_err_str(&e, rc));
		else
			internal(rs, &e, rc);
		goto out;
	}
	if (!db) {
		rc = internal(rs, &e, -EIO);
		goto out;
	}
	/* the team token's labels where the job file gives none */
	ctl__team_token_apply(c, rq->team_token, &js);
	/* a retry of a create already applied is answered below, never
	 * refused by a budget that job itself now weighs on */
	if (!(k.key && store_job_by_idem(db, k.key, &id, idem_h, &idem_hn,
					 &e) == 1) &&
	    budget_check(c, db, &js, &plan, rs)) {
		rc = 0;
		goto out;
	}
	id = 0;
	specj = jobspec_to_json(&js);
	if (!specj) {
		rc = internal(rs, &e, -ENOMEM);
		goto out;
	}
	/* the job's files came with it, never from a path of ours */
	rc = ctl__files_check(c, db, &js, b.files, b.workdir, &e);
	if (rc) {
		if (rc == -EINVAL || rc == -EPERM)
			ctl_resp_error(rs, 400, "%s: %s", b.spec_name,
				       sr_err_str(&e, rc));
		else
			internal(rs, &e, rc);
		goto out;
	}
	/* secret values never reach the database in clear */
	rc = ctl_secrets_split(&js, b.spec_yaml, b.spec_len, specj, b.envs,
			       c->secrets_key, &sec, &e);
	if (rc) {
		if (rc == -EINVAL)
			ctl_resp_error(rs, 400, "%s: %s", b.spec_name,
				       sr_err_str(&e, rc));
		else
			internal(rs, &e, rc);
		goto out;
	}
	rc = job_insert(c, db, &b, &js, specj, &plan, &k, &sec, &id, &e);
	if (rc == -SR_ECONFLICT) {
		ctl_resp_error(rs, 409, "%s", sr_err_str(&e, rc));
		goto out;
	}
	if (rc) {
		internal(rs, &e, rc);
		goto out;
	}
	if (k.replayed) {
		/* a retry of a request already applied: the same job */
		sr_info("api", "job create replayed", "job=%" PRId64, id);
		rc = job_reply(c, db, id, 200, rs);
		goto out;
	}
	sr_info("api", "job created", "job=%" PRId64 " name=%s nodes=%d", id,
		js.name ? js.name : b.spec_name, js.num_nodes);
	ctl__wake(c);
	rc = job_reply(c, db, id, 201, rs);
out:
	ctl_secrets_clear(&sec);
	json_decref(specj);
	json_decref(root);
	jobspec_free(&js);
	return rc;
}

/* ---- GET /v1/jobs, /v1/jobs/{id} ----------------------------------------- */

static bool state_in(const char *states, const char *s)
{
	const char *p = states;
	size_t l = strlen(s);

	while ((p = strstr(p, s)) != NULL) {
		if ((p == states || p[-1] == ',') && (p[l] == '\0' || p[l] == ','))
			return true;
		p += l;
	}
	return false;
}

struct jobs_acc {
	struct ctl *c;
	struct store *db;
	const char *states;          /* NULL: all */
	int limit;
	json_t *arr;
	struct finops_report rep;
};

/* One job into the list (fn of store_jobs_each): 1 once it is full. */
static int jobs_add(void *ud, int64_t id, const char *state, struct sr_err *e)
{
	static const struct finops_totals none;
	struct jobs_acc *a = ud;
	const struct finops_group *g;
	char key[32];
	json_t *j;

	if ((int)json_array_size(a->arr) >= a->limit)
		return 1;
	if (a->states && !state_in(a->states, state))
		return 0;
	snprintf(key, sizeof key, "%lld", (long long)id);
	g = finops_report_group(&a->rep, key);
	j = ctl__job_json_with(a->c, a->db, id, false, g ? &g->t : &none, e);
	if (!j && e->code == -SR_ENOTFOUND)
		return 0; /* gone between the two reads */
	if (!j)
		return e->code ? e->code : -EIO;
	if (json_array_append_new(a->arr, j))
		return sr_err_set(e, -ENOMEM, "jobs: out of memory");
	return 0;
}

/* Append to arr the jobs named `name` (NULL: all), newest first: at most
 * limit, only states in `states` (NULL = all).  0, or an error (a failed
 * step is one, never "no more jobs"). */
static int jobs_append(struct ctl *c, struct store *db, const char *name,
		       const char *states, int limit, json_t *arr,
		       struct sr_err *e)
{
	struct jobs_acc a = { c, db, states, limit, arr, { 0 } };
	int rc;

	/* every job's ledger figures in one pass over the ledger */
	rc = finops_report_build(db, NULL, FINOPS_BY_JOB, &a.rep, e);
	if (!rc)
		rc = store_jobs_each(db, name, jobs_add, &a, e);
	finops_report_free(&a.rep);
	return rc < 0 ? rc : 0;
}

static int jobs_list(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct store *db = ctl_req_store(rq);
	struct sr_err e = { 0 };
	int rc;
	const char *states = ctl_req_query(rq, "state");
	const char *name = ctl_req_query(rq, "name");
	json_t *arr = json_array();
	int64_t limit;

	if (query_int(rq, "limit", 100, 1, 1000, &limit, rs)) {
		json_decref(arr);
		return 0;
	}
	if (!arr)
		return -ENOMEM;
	if (name) {
		/* GET /v1/jobs?name=N: the jobs of that name, newest first */
		rc = jobs_append(c, db, name, NULL, (int)limit, arr, &e);
		goto reply;
	}
	if (states) {
		char buf[256], *save = NULL;
		enum job_state s;

		snprintf(buf, sizeof buf, "%s", states);
		for (char *t = strtok_r(buf, ",", &save); t;
		     t = strtok_r(NULL, ",", &save)) {
			if (jobsm_parse(t, &s)) {
				json_decref(arr);
				return ctl_resp_error(rs, 400, "query parameter "
						      "state: unknown state '%.32s'", t);
			}
		}
	}
	rc = jobs_append(c, db, NULL, states, (int)limit, arr, &e);
reply:
	if (rc) {
		json_decref(arr);
		return internal(rs, &e, rc);
	}
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "jobs", arr));
}

static int load_job(struct ctl_req *rq, struct ctl_resp *rs, int64_t *id,
		    json_t **job)
{
	struct sr_err e = { 0 };

	if (ctl_req_param_id(rq, "id", id, rs))
		return -EINVAL;
	*job = ctl__job_json(ctl_req_ctl(rq), ctl_req_store(rq), *id, true, &e);
	if (!*job && e.code == -SR_ENOTFOUND) {
		ctl_resp_error(rs, 404, "job %" PRId64 " not found", *id);
		return -SR_ENOTFOUND;
	}
	if (!*job) {
		internal(rs, &e, e.code ? e.code : -EIO);
		return -EIO;
	}
	return 0;
}

static int jobs_get(struct ctl_req *rq, struct ctl_resp *rs)
{
	json_t *j;
	int64_t id;

	if (load_job(rq, rs, &id, &j))
		return 0;
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "job", j));
}

/* ---- POST /v1/jobs/{id}/cancel ------------------------------------------ */

static int jobs_cancel(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct store *db = ctl_req_store(rq);
	struct sr_err e = { 0 };
	int64_t id, now = ctl__now(c);
	enum job_state state = JOB_PENDING;
	json_t *j;
	int rc;

	if (load_job(rq, rs, &id, &j))
		return 0;
	jobsm_parse(json_string_value(json_object_get(j, "state")), &state);
	if (jobsm_terminal(state)) {
		ctl_resp_error(rs, 409, "job %" PRId64 " already finished (%s)", id,
			       jobsm_name(state));
		json_decref(j);
		return 0;
	}
	json_decref(j);
	rc = store_begin(db, &e);
	if (!rc) {
		rc = jobsm_cancel(db, id, now, ctl__sim_at(c, now),
				  "cancel requested", &e);
		rc = store_end(db, rc < 0 ? rc : 0, &e);
	}
	if (rc)
		return internal(rs, &e, rc);
	ctl__wake(c);
	return job_reply(c, db, id, 202, rs);
}

/* ---- GET /v1/jobs/{id}/events, /logs ------------------------------------- */

/* 1 when the job exists (*terminal: it has finished), 0 when not, or a
 * store error. */
static int job_exists(struct store *db, int64_t id, bool *terminal,
		      struct sr_err *e)
{
	enum job_state s = JOB_PENDING;
	char state[16];
	int rc = store_job_state(db, id, state, sizeof state, e);

	if (rc == 1 && terminal) {
		jobsm_parse(state, &s);
		*terminal = jobsm_terminal(s);
	}
	return rc;
}

static json_t *text_or_null(const char *v)
{
	return v ? json_string(v) : json_null();
}

static json_t *ts_json(int64_t ns)
{
	char buf[40];

	if (sr_time_format_rfc3339(ns, 3, buf, sizeof buf) < 0)
		return json_null();
	return json_string(buf);
}

/* One event into the array ud (fn of store_events_each). */
static int event_add(void *ud, int64_t seq, const struct store_event *ev,
		     struct sr_err *e)
{
	json_t *data = ev->data ? json_loads(ev->data, 0, NULL) : NULL;
	json_t *j = json_pack("{s:I,s:o,s:f,s:s,s:o,s:o,s:o,s:s,s:o}",
		"seq", (json_int_t)seq,
		"ts", ts_json(ev->ts_ns),
		"sim_s", ev->sim_s,
		"type", ev->type,
		"from", text_or_null(ev->from),
		"to", text_or_null(ev->to),
		"node_id", ev->node_id ? json_integer(ev->node_id) : json_null(),
		"message", ev->message,
		"data", data ? data : json_object());

	if (!j || json_array_append_new(ud, j))
		return sr_err_set(e, -ENOMEM, "events: out of memory");
	return 0;
}

/* The seq of the last entry of arr (key "seq"), or `none`. */
static int64_t last_seq(json_t *arr, int64_t none)
{
	size_t n = json_array_size(arr);

	return n ? json_integer_value(json_object_get(json_array_get(arr, n - 1),
						      "seq")) : none;
}

static int jobs_events(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct store *db = ctl_req_store(rq);
	struct sr_err e = { 0 };
	int64_t id, after, limit;
	json_t *arr;
	int rc;

	if (ctl_req_param_id(rq, "id", &id, rs) ||
	    query_int(rq, "after", 0, 0, INT64_MAX, &after, rs) ||
	    query_int(rq, "limit", 100, 1, 1000, &limit, rs))
		return 0;
	rc = job_exists(db, id, NULL, &e);
	if (rc == 0)
		return ctl_resp_error(rs, 404, "job %" PRId64 " not found", id);
	if (rc < 0)
		return internal(rs, &e, rc);
	arr = json_array();
	rc = arr ? store_events_each(db, id, after, limit, event_add, arr, &e)
		 : -ENOMEM;
	if (rc < 0) {
		json_decref(arr);
		return internal(rs, &e, rc);
	}
	return ctl_resp_json(rs, 200, json_pack("{s:o,s:I}", "events", arr,
						"next",
						(json_int_t)last_seq(arr, after)));
}

/* One line into the array ud (fn of store_logs_each). */
static int line_add(void *ud, const struct store_log_line *l, struct sr_err *e)
{
	json_t *j = json_pack("{s:I,s:o,s:I,s:I,s:I,s:s,s:s,s:b}",
		"seq", (json_int_t)l->seq,
		"ts", ts_json(l->ts_ns),
		"node_id", (json_int_t)l->node,
		"rank", (json_int_t)l->rank,
		"attempt", (json_int_t)l->attempt,
		"stream", l->stream,
		"line", l->line,
		"truncated", l->truncated);

	if (!j || json_array_append_new(ud, j))
		return sr_err_set(e, -ENOMEM, "logs: out of memory");
	return 0;
}

static int jobs_logs(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct store *db = ctl_req_store(rq);
	struct sr_err e = { 0 };
	int64_t id, after, limit, rank;
	bool terminal = false;
	json_t *arr;
	int rc;

	if (ctl_req_param_id(rq, "id", &id, rs) ||
	    query_int(rq, "after", 0, 0, INT64_MAX, &after, rs) ||
	    query_int(rq, "limit", 500, 1, 5000, &limit, rs) ||
	    query_int(rq, "rank", -1, 0, 1023, &rank, rs))
		return 0;
	rc = job_exists(db, id, &terminal, &e);
	if (rc == 0)
		return ctl_resp_error(rs, 404, "job %" PRId64 " not found", id);
	if (rc < 0)
		return internal(rs, &e, rc);
	arr = json_array();
	rc = arr ? store_logs_each(db, id, after, rank, limit, line_add, arr, &e)
		 : -ENOMEM;
	if (rc < 0) {
		json_decref(arr);
		return internal(rs, &e, rc);
	}
	/* done: terminal, and nothing after what we return (the reconciler
	 * stops nodes before a job is terminal, so no line can follow). */
	return ctl_resp_json(rs, 200, json_pack("{s:o,s:I,s:b}", "lines", arr,
				"next", (json_int_t)last_seq(arr, after),
				"done", terminal && (int64_t)json_array_size(arr) < limit));
}

/* ---- GET /v1/nodes -------------------------------------------------------- */

static int nodes_list(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct sr_err e = { 0 };
	int64_t job, all;
	json_t *arr = NULL;
	int rc;

	if (query_int(rq, "job", 0, 0, INT64_MAX, &job, rs) ||
	    query_int(rq, "all", 0, 0, 1, &all, rs))
		return 0;
	rc = ctl__nodes_json(ctl_req_store(rq), job, !all, 10000, &arr, &e);
	if (rc)
		return internal(rs, &e, rc);
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "nodes", arr));
}

/* ---- GET /v1/offerings ---------------------------------------------------- */

json_t *ctl__offering_json(const struct cloud_offering *o, const char *provider)
{
	static const char *const src[] = { "catalog", "live", "trace" };

	return json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:f,s:I,s:I,s:I,s:b,s:f,s:s,"
			 "s:s,s:I}",
		"provider", provider, "pool", o->pool, "cloud", o->cloud,
		"region", o->region, "zone", o->zone,
		"instance_type", o->instance_type, "accelerator", o->accelerator,
		"accelerator_count", o->accel_count,
		"on_demand_micros_per_hour", (json_int_t)o->ondemand_per_h,
		"spot_micros_per_hour", (json_int_t)o->spot_per_h,
		"reserved_micros_per_hour", (json_int_t)o->reserved_per_h,
		"available", o->spot_available,
		"hazard_per_hour", o->hazard_per_h, "trace", o->trace,
		"price_source", src[o->price_src <= CLOUD_PRICE_TRACE ? o->price_src : 0],
		"price_age_s", (json_int_t)o->price_age_s);
}

static int offerings(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct cloud_query q = { 0 };
	struct cloud_offering *v = NULL;
	struct sr_err e = { 0 };
	const char *gpu = ctl_req_query(rq, "gpu");
	const char *spot = ctl_req_query(rq, "spot");
	char name[24];
	size_t n = 0;
	json_t *arr;
	int rc;

	if (gpu) {
		char *colon;

		snprintf(name, sizeof name, "%s", gpu);
		colon = strchr(name, ':');
		if (colon) {
			char *end = NULL;

			*colon = '\0';
			q.accel_count = strtod(colon + 1, &end);
			if (end == colon + 1 || *end || q.accel_count <= 0)
				return ctl_resp_error(rs, 400, "query parameter gpu:"
						      " expected NAME[:COUNT]");
		}
		q.accelerator = name;
	}
	rc = ctl__offerings(c, &q, &v, &n, &e);
	if (rc)
		return internal(rs, &e, rc);
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		if (spot && strcmp(spot, "1") == 0 && v[i].spot_per_h < 0)
			continue;
		json_array_append_new(arr, ctl__offering_json(&v[i],
						ctl__prov_name(c, v[i].pool)));
	}
	free(v);
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "offerings", arr));
}

/* ---- GET /healthz --------------------------------------------------------- */

static int healthz(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	char names[80];

	ctl__clouds_names(c, names, sizeof names);
	return ctl_resp_json(rs, 200, json_pack("{s:b,s:s,s:s,s:f,s:f}",
		"ok", 1, "version", VERSION, "provider", names,
		"time_scale", c->cfg.time_scale, "sim_s", ctl__sim_now(c)));
}

static const struct ctl_route routes[] = {
	{ "GET", "/healthz", CTL_AUTH_PUBLIC, healthz, "healthz" },
	{ "POST", "/v1/jobs", CTL_AUTH_ADMIN, jobs_create, "jobs_create" },
	{ "GET", "/v1/jobs", CTL_AUTH_ADMIN, jobs_list, "jobs_list" },
	{ "GET", "/v1/jobs/{id}", CTL_AUTH_ADMIN, jobs_get, "jobs_get" },
	{ "POST", "/v1/jobs/{id}/cancel", CTL_AUTH_ADMIN, jobs_cancel, "jobs_cancel" },
	{ "GET", "/v1/jobs/{id}/events", CTL_AUTH_ADMIN, jobs_events, "jobs_events" },
	{ "GET", "/v1/jobs/{id}/logs", CTL_AUTH_ADMIN, jobs_logs, "jobs_logs" },
	{ "GET", "/v1/nodes", CTL_AUTH_ADMIN, nodes_list, "nodes_list" },
	{ "GET", "/v1/offerings", CTL_AUTH_ADMIN, offerings, "offerings" },
};

void ctl__routes_jobs(void)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		ctl_route_register(&routes[i]);
}
