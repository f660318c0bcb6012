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
#include "ctl/routes.h"
#include "finops/report.h"
#include "ctl/jobsm.h"
#include "ctl/place.h"
#include "ctl/secrets.h"
#include "market/jobspec.h"

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
	struct store_stmt *st = NULL;
	const void *h;
	size_t hn;
	int rc;

	if (!k->key)
		return 0;
	rc = store_prepare(db, "SELECT id, idem_hash FROM jobs WHERE idem_key=?",
			   &st, e);
	if (rc)
		return rc;
	store_bind_text(st, 1, k->key);
	rc = store_step(st, e);
	if (rc == 1) {
		h = store_col_blob(st, "idem_hash", &hn);
		if (!h || hn != CTL_DIGEST_LEN || memcmp(h, k->hash, CTL_DIGEST_LEN)) {
			rc = sr_err_set(e, -SR_ECONFLICT, "Idempotency-Key '%s' "
					"was used for job %lld with a different "
					"request", k->key,
					(long long)store_col_i64(st, "id"));
		} else {
			*id = store_col_i64(st, "id");
			k->replayed = true;
			rc = 0;
		}
	} else if (rc < 0) {
		sr_err_prefix(e, "idempotency key");
	}
	store_done(st);
	return rc;
}

static int job_insert(struct ctl *c, struct store *db,
		      const struct api_job_create *b, const struct jobspec *js,
		      json_t *specj, const struct place_plan *plan,
		      struct idem *k, const struct ctl_secrets *sec, int64_t *id,
		      struct sr_err *e)
{
	struct store_stmt *st = NULL;
	char *spec = NULL, *envs = NULL, *cand = NULL;
	int64_t now = sr_time_real_ns();
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
	rc = store_prepare(db, "INSERT INTO jobs(name, state, spec_name, "
			   "spec_yaml, spec_json, workdir, envs, num_nodes, "
			   "max_restarts, created_ns, updated_ns, state_since_ns,"
			   " sim_start_s, deadline_s, work_s, candidates, message,"
			   " idem_key, idem_hash, secrets_enc, files)"
			   " VALUES(?1,'PENDING',?2,?3,?4,?5,?6,?7,?8,?9,?9,?9,"
			   "?10,?11,?12,?13,'accepted',?14,?15,?16,?17) RETURNING id",
			   &st, e);
	if (rc)
		goto out;
	store_bind_text(st, 1, js->name ? js->name : b->spec_name);
	store_bind_text(st, 2, b->spec_name);
	store_bind_textn(st, 3, sec->yaml, sec->yaml_len);
	store_bind_text(st, 4, spec);
	store_bind_text(st, 5, b->workdir);
	store_bind_text(st, 6, envs);
	store_bind_i64(st, 7, js->num_nodes);
	/* workload failures tolerated: the API's value, else SkyPilot's
	 * job_recovery.max_restarts_on_errors, else spotrun.max_restarts */
	store_bind_i64(st, 8, b->max_restarts >= 0 ? b->max_restarts :
		       js->max_restarts_on_errors >= 0 ? js->max_restarts_on_errors :
		       js->max_restarts >= 0 ? js->max_restarts : 3);
	store_bind_i64(st, 9, now);
	store_bind_f64(st, 10, sim);
	if (isfinite(plan->deadline_s))
		store_bind_f64(st, 11, plan->deadline_s);
	else
		store_bind_null(st, 11);
	store_bind_f64(st, 12, plan->work_s);
	store_bind_text(st, 13, cand);
	store_bind_text(st, 14, k->key);
	if (k->key)
		store_bind_blob(st, 15, k->hash, CTL_DIGEST_LEN);
	else
		store_bind_null(st, 15);
	store_bind_blob(st, 16, sec->sealed, sec->sealed_len);
	store_bind_text(st, 17, b->files);
	rc = store_step(st, e);
	if (rc == 1) {
		*id = store_col_i64(st, "id");
		rc = 0;
	} else if (rc == 0) {
		rc = sr_err_set(e, -EIO, "insert job: no id returned");
	}
	store_done(st);
	if (!rc)
		rc = ctl_event_append(db, *id, "created", NULL, "PENDING", 0, now,
				      sim, NULL, "job accepted", e);
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
	size_t len;
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
	rc = place_plan_init(c, &js, sr_time_real_ns(), &plan, &e);
	if (rc) {
		if (rc == -SR_ENOTFOUND || rc == -EINVAL)
			ctl_resp_error(rs, 400, "%s: %s", b.spec_name,
				       sr_err_str(&e, rc));
		else
			internal(rs, &e, rc);
		goto out;
	}
	specj = jobspec_to_json(&js);
	if (!specj || !db) {
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

/* Append to arr the jobs of `sql` (selecting id and state, bound with
 * `name` when not NULL): at most limit, only states in `states` (NULL =
 * all).  0, or an error (a failed step is one, never "no more jobs"). */
static int jobs_append(struct ctl *c, struct store *db, const char *sql,
		       const char *name, const char *states, int limit,
		       json_t *arr, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	struct finops_report rep = { 0 };
	json_t *j;
	int rc;

	/* every job's ledger figures in one pass over the ledger */
	rc = finops_report_build(db, NULL, FINOPS_BY_JOB, &rep, e);
	if (!rc)
		rc = store_prepare(db, sql, &st, e);
	if (rc) {
		finops_report_free(&rep);
		return rc;
	}
	if (name)
		store_bind_text(st, 1, name);
	while ((int)json_array_size(arr) < limit && (rc = store_step(st, e)) == 1) {
		static const struct finops_totals none;
		const struct finops_group *g;
		char key[32];

		if (states && !state_in(states, store_col_text(st, "state")))
			continue;
		snprintf(key, sizeof key, "%lld", (long long)store_col_i64(st, "id"));
		g = finops_report_group(&rep, key);
		j = ctl__job_json_with(c, db, store_col_i64(st, "id"), false,
				       g ? &g->t : &none, e);
		if (!j && e->code == -SR_ENOTFOUND)
			continue; /* gone between the two reads */
		if (!j || json_array_append_new(arr, j)) {
			rc = j ? sr_err_set(e, -ENOMEM, "jobs: out of memory")
			       : e->code ? e->code : -EIO;
			break;
		}
	}
	store_done(st);
	finops_report_free(&rep);
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
		rc = jobs_append(c, db, "SELECT id, state FROM jobs WHERE name=?"
				 " ORDER BY id DESC", name, NULL, (int)limit, arr, &e);
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
	rc = jobs_append(c, db, "SELECT id, state FROM jobs ORDER BY id DESC",
			 NULL, states, (int)limit, arr, &e);
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
	int64_t id, now = sr_time_real_ns();
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
	struct store_stmt *st = NULL;
	enum job_state s = JOB_PENDING;
	int rc;

	rc = store_prepare(db, "SELECT state FROM jobs WHERE id=?", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, id);
	rc = store_step(st, e);
	if (rc == 1) {
		jobsm_parse(store_col_text(st, "state"), &s);
		if (terminal)
			*terminal = jobsm_terminal(s);
	}
	store_done(st);
	return rc;
}

static json_t *text_or_null(struct store_stmt *st, const char *col)
{
	return store_col_null(st, col) ? json_null() :
	       json_string(store_col_text(st, col));
}

static json_t *ts_json(int64_t ns)
{
	char buf[40];

	if (sr_time_format_rfc3339(ns, 3, buf, sizeof buf) < 0)
		return json_null();
	return json_string(buf);
}

static int jobs_events(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct store *db = ctl_req_store(rq);
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	int64_t id, after, limit, next;
	json_t *arr = NULL, *data, *ev;
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
	rc = store_prepare(db, "SELECT seq, ts_ns, sim_s, type, from_state,"
			   " to_state, node_id, message, data FROM events"
			   " WHERE job_id=? AND seq>? ORDER BY seq LIMIT ?", &st, &e);
	if (rc)
		return internal(rs, &e, rc);
	store_bind_i64(st, 1, id);
	store_bind_i64(st, 2, after);
	store_bind_i64(st, 3, limit);
	arr = json_array();
	next = after;
	while (arr && (rc = store_step(st, &e)) == 1) {
		data = NULL;
		if (!store_col_null(st, "data"))
			data = json_loads(store_col_text(st, "data"), 0, NULL);
		next = store_col_i64(st, "seq");
		ev = json_pack("{s:I,s:o,s:f,s:s,s:o,s:o,s:o,s:s,s:o}",
			"seq", (json_int_t)next,
			"ts", ts_json(store_col_i64(st, "ts_ns")),
			"sim_s", store_col_f64(st, "sim_s"),
			"type", store_col_text(st, "type"),
			"from", text_or_null(st, "from_state"),
			"to", text_or_null(st, "to_state"),
			"node_id", store_col_null(st, "node_id") ? json_null() :
				json_integer(store_col_i64(st, "node_id")),
			"message", store_col_text(st, "message"),
			"data", data ? data : json_object());
		if (!ev || json_array_append_new(arr, ev)) {
			rc = sr_err_set(&e, -ENOMEM, "events: out of memory");
			break;
		}
	}
	store_done(st);
	if (!arr || rc < 0) {
		json_decref(arr);
		return internal(rs, &e, arr ? rc : -ENOMEM);
	}
	return ctl_resp_json(rs, 200, json_pack("{s:o,s:I}", "events", arr,
						"next", (json_int_t)next));
}

static int jobs_logs(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct store *db = ctl_req_store(rq);
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	int64_t id, after, limit, rank, next;
	bool terminal = false;
	json_t *arr, *ln;
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
	rc = store_prepare(db, "SELECT seq, ts_ns, node_id, rank, attempt,"
			   " stream, line, truncated FROM logs WHERE job_id=?1"
			   " AND seq>?2 AND (?3<0 OR rank=?3) ORDER BY seq LIMIT ?4",
			   &st, &e);
	if (rc)
		return internal(rs, &e, rc);
	store_bind_i64(st, 1, id);
	store_bind_i64(st, 2, after);
	store_bind_i64(st, 3, rank);
	store_bind_i64(st, 4, limit);
	arr = json_array();
	next = after;
	while (arr && (rc = store_step(st, &e)) == 1) {
		next = store_col_i64(st, "seq");
		ln = json_pack("{s:I,s:o,s:I,s:I,s:I,s:s,s:s,s:b}",
			"seq", (json_int_t)next,
			"ts", ts_json(store_col_i64(st, "ts_ns")),
			"node_id", (json_int_t)store_col_i64(st, "node_id"),
			"rank", (json_int_t)store_col_i64(st, "rank"),
			"attempt", (json_int_t)store_col_i64(st, "attempt"),
			"stream", store_col_text(st, "stream"),
			"line", store_col_text(st, "line"),
			"truncated", store_col_i64(st, "truncated") != 0);
		if (!ln || json_array_append_new(arr, ln)) {
			rc = sr_err_set(&e, -ENOMEM, "logs: out of memory");
			break;
		}
	}
	store_done(st);
	if (!arr || rc < 0) {
		json_decref(arr);
		return internal(rs, &e, arr ? rc : -ENOMEM);
	}
	/* done: terminal, and nothing after what we return (the reconciler
	 * stops nodes before a job is terminal, so no line can follow). */
	return ctl_resp_json(rs, 200, json_pack("{s:o,s:I,s:b}", "lines", arr,
				"next", (json_int_t)next,
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
