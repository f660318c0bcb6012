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
#include "ctl/db.h"
#include "ctl/jobsm.h"
#include "ctl/place.h"
#include "ctl/secrets.h"
#include "market/jobspec.h"

#define VERSION "0.1.0"

static int internal(struct ctl_resp *rs, const struct sr_err *e, int rc)
{
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
static int idem_lookup(sqlite3 *db, struct idem *k, int64_t *id,
		       struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc, src;

	if (!k->key)
		return 0;
	rc = ctl_db_prepare(db, "SELECT id, idem_hash FROM jobs WHERE idem_key=?",
			    &st, e);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, k->key, -1, SQLITE_STATIC);
	src = sqlite3_step(st);
	if (src == SQLITE_ROW) {
		const void *h = sqlite3_column_blob(st, 1);

		if (!h || sqlite3_column_bytes(st, 1) != CTL_DIGEST_LEN ||
		    memcmp(h, k->hash, CTL_DIGEST_LEN) != 0) {
			rc = sr_err_set(e, -SR_ECONFLICT, "Idempotency-Key '%s' "
					"was used for job %lld with a different "
					"request", k->key,
					(long long)sqlite3_column_int64(st, 0));
		} else {
			*id = sqlite3_column_int64(st, 0);
			k->replayed = true;
		}
	} else if (src != SQLITE_DONE) {
		rc = ctl_db_err(db, src, e, "idempotency key");
	}
	sqlite3_finalize(st);
	return rc;
}

static int job_insert(struct ctl *c, sqlite3 *db, const struct api_job_create *b,
		      const struct jobspec *js, json_t *specj,
		      const struct place_plan *plan, struct idem *k,
		      const struct ctl_secrets *sec, int64_t *id,
		      struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
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
	rc = ctl_db_begin(db, e);
	if (rc)
		goto out;
	rc = idem_lookup(db, k, id, e);
	if (rc || k->replayed)
		goto fail; /* nothing written either way */
	rc = ctl_db_prepare(db, "INSERT INTO jobs(name, state, spec_name, "
			    "spec_yaml, spec_json, workdir, envs, num_nodes, "
			    "max_restarts, created_ns, updated_ns, state_since_ns,"
			    " sim_start_s, deadline_s, work_s, candidates, message,"
			    " idem_key, idem_hash, secrets_enc)"
			    " VALUES(?1,'PENDING',?2,?3,?4,?5,?6,?7,?8,?9,?9,?9,"
			    "?10,?11,?12,?13,'accepted',?14,?15,?16)", &st, e);
	if (rc)
		goto fail;
	sqlite3_bind_text(st, 1, js->name ? js->name : b->spec_name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, b->spec_name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, sec->yaml, (int)sec->yaml_len, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, spec, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, b->workdir, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, envs, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 7, js->num_nodes);
	/* workload failures tolerated: the API's value, else SkyPilot's
	 * job_recovery.max_restarts_on_errors, else spotrun.max_restarts */
	sqlite3_bind_int64(st, 8, b->max_restarts >= 0 ? b->max_restarts :
			   js->max_restarts_on_errors >= 0 ? js->max_restarts_on_errors :
			   js->max_restarts >= 0 ? js->max_restarts : 3);
	sqlite3_bind_int64(st, 9, now);
	sqlite3_bind_double(st, 10, sim);
	if (isfinite(plan->deadline_s))
		sqlite3_bind_double(st, 11, plan->deadline_s);
	sqlite3_bind_double(st, 12, plan->work_s);
	sqlite3_bind_text(st, 13, cand, -1, SQLITE_STATIC);
	if (k->key) {
		sqlite3_bind_text(st, 14, k->key, -1, SQLITE_STATIC);
		sqlite3_bind_blob(st, 15, k->hash, CTL_DIGEST_LEN, SQLITE_STATIC);
	}
	if (sec->sealed)
		sqlite3_bind_blob(st, 16, sec->sealed, (int)sec->sealed_len,
				  SQLITE_STATIC);
	rc = ctl_db_step_done(db, st, e, "insert job");
	if (rc)
		goto fail;
	*id = sqlite3_last_insert_rowid(db);
	rc = ctl_event_add(db, *id, "created", NULL, "PENDING", 0, now, sim,
			   NULL, "job accepted", e);
	if (rc)
		goto fail;
	rc = ctl_db_commit(db, e);
	goto out;
fail:
	ctl_db_rollback(db);
out:
	sqlite3_finalize(st);
	free(spec);
	free(envs);
	free(cand);
	return rc;
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
	sqlite3 *db = ctl_req_db(rq);
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
		rc = ctl_resp_json(rs, 200, json_pack("{s:o}", "job",
						      ctl__job_json(c, db, id, true)));
		goto out;
	}
	sr_info("api", "job created", "job=%" PRId64 " name=%s nodes=%d", id,
		js.name ? js.name : b.spec_name, js.num_nodes);
	ctl__wake(c);
	rc = ctl_resp_json(rs, 201, json_pack("{s:o}", "job",
					      ctl__job_json(c, db, id, true)));
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

json_t *ctl_jobs_json(struct ctl *c, sqlite3 *db, const char *states, int limit)
{
	sqlite3_stmt *st = NULL;
	json_t *arr = json_array();

	if (limit <= 0)
		limit = 1000;
	if (!arr || sqlite3_prepare_v2(db, "SELECT id, state FROM jobs ORDER BY"
				       " id DESC", -1, &st, NULL) != SQLITE_OK) {
		json_decref(arr);
		return NULL;
	}
	while ((int)json_array_size(arr) < limit && sqlite3_step(st) == SQLITE_ROW) {
		if (states && !state_in(states, ctl_db_text(st, 1)))
			continue;
		json_array_append_new(arr, ctl__job_json(c, db,
					sqlite3_column_int64(st, 0), false));
	}
	sqlite3_finalize(st);
	return arr;
}

/* GET /v1/jobs?name=N: the jobs of that name, newest first. */
static json_t *jobs_named(struct ctl *c, sqlite3 *db, const char *name, int limit)
{
	sqlite3_stmt *st = NULL;
	json_t *arr = json_array();

	if (!arr || sqlite3_prepare_v2(db, "SELECT id FROM jobs WHERE name=?"
				       " ORDER BY id DESC LIMIT ?", -1, &st,
				       NULL) != SQLITE_OK) {
		json_decref(arr);
		return NULL;
	}
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, limit);
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(arr, ctl__job_json(c, db,
					sqlite3_column_int64(st, 0), false));
	sqlite3_finalize(st);
	return arr;
}

static int jobs_list(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	sqlite3 *db = ctl_req_db(rq);
	const char *states = ctl_req_query(rq, "state");
	const char *name = ctl_req_query(rq, "name");
	json_t *arr = json_array();
	int64_t limit;

	if (query_int(rq, "limit", 100, 1, 1000, &limit, rs)) {
		json_decref(arr);
		return 0;
	}
	if (name) {
		json_decref(arr);
		arr = jobs_named(c, db, name, (int)limit);
		if (!arr)
			return -EIO;
		return ctl_resp_json(rs, 200, json_pack("{s:o}", "jobs", arr));
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
	json_decref(arr);
	arr = ctl_jobs_json(c, db, states, (int)limit);
	if (!arr)
		return -EIO;
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "jobs", arr));
}

static int load_job(struct ctl_req *rq, struct ctl_resp *rs, int64_t *id,
		    json_t **job)
{
	if (ctl_req_param_id(rq, "id", id, rs))
		return -EINVAL;
	*job = ctl__job_json(ctl_req_ctl(rq), ctl_req_db(rq), *id, true);
	if (!*job) {
		ctl_resp_error(rs, 404, "job %" PRId64 " not found", *id);
		return -SR_ENOTFOUND;
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
	sqlite3 *db = ctl_req_db(rq);
	struct sr_err e = { 0 };
	sqlite3_stmt *st = NULL;
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
	rc = ctl_db_begin(db, &e);
	if (!rc)
		rc = ctl_db_prepare(db, "UPDATE jobs SET desired='cancel', "
				    "updated_ns=? WHERE id=? AND desired='run'", &st, &e);
	if (!rc) {
		sqlite3_bind_int64(st, 1, now);
		sqlite3_bind_int64(st, 2, id);
		rc = ctl_db_step_done(db, st, &e, "cancel");
	}
	if (!rc && sqlite3_changes(db) == 1)
		rc = ctl_event_add(db, id, "cancel_requested", NULL, NULL, 0, now,
				   ctl__sim_at(c, now), NULL, "cancel requested", &e);
	sqlite3_finalize(st);
	rc = ctl_db_end(db, rc, &e);
	if (rc)
		return internal(rs, &e, rc);
	ctl__wake(c);
	return ctl_resp_json(rs, 202, json_pack("{s:o}", "job",
						ctl__job_json(c, db, id, true)));
}

/* ---- GET /v1/jobs/{id}/events, /logs ------------------------------------- */

static bool job_exists(sqlite3 *db, int64_t id, bool *terminal)
{
	sqlite3_stmt *st = NULL;
	bool ok = false;

	if (sqlite3_prepare_v2(db, "SELECT state FROM jobs WHERE id=?", -1, &st,
			       NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		enum job_state s = JOB_PENDING;

		jobsm_parse(ctl_db_text(st, 0), &s);
		ok = true;
		if (terminal)
			*terminal = jobsm_terminal(s);
	}
	sqlite3_finalize(st);
	return ok;
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
	sqlite3 *db = ctl_req_db(rq);
	sqlite3_stmt *st = NULL;
	int64_t id, after, limit, next;
	json_t *arr;

	if (ctl_req_param_id(rq, "id", &id, rs) ||
	    query_int(rq, "after", 0, 0, INT64_MAX, &after, rs) ||
	    query_int(rq, "limit", 100, 1, 1000, &limit, rs))
		return 0;
	if (!job_exists(db, id, NULL))
		return ctl_resp_error(rs, 404, "job %" PRId64 " not found", id);
	if (sqlite3_prepare_v2(db, "SELECT seq, ts_ns, sim_s, type, from_state,"
			       " to_state, node_id, message, data FROM events"
			       " WHERE job_id=? AND seq>? ORDER BY seq LIMIT ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, after);
	sqlite3_bind_int64(st, 3, limit);
	arr = json_array();
	next = after;
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *data = NULL;

		if (sqlite3_column_type(st, 8) != SQLITE_NULL)
			data = json_loads(ctl_db_text(st, 8), 0, NULL);
		next = sqlite3_column_int64(st, 0);
		json_array_append_new(arr, json_pack(
			"{s:I,s:o,s:f,s:s,s:o,s:o,s:o,s:s,s:o}",
			"seq", (json_int_t)next,
			"ts", ts_json(sqlite3_column_int64(st, 1)),
			"sim_s", sqlite3_column_double(st, 2),
			"type", ctl_db_text(st, 3),
			"from", sqlite3_column_type(st, 4) == SQLITE_NULL ?
				json_null() : json_string(ctl_db_text(st, 4)),
			"to", sqlite3_column_type(st, 5) == SQLITE_NULL ?
				json_null() : json_string(ctl_db_text(st, 5)),
			"node_id", sqlite3_column_type(st, 6) == SQLITE_NULL ?
				json_null() : json_integer(sqlite3_column_int64(st, 6)),
			"message", ctl_db_text(st, 7),
			"data", data ? data : json_object()));
	}
	sqlite3_finalize(st);
	return ctl_resp_json(rs, 200, json_pack("{s:o,s:I}", "events", arr,
						"next", (json_int_t)next));
}

static int jobs_logs(struct ctl_req *rq, struct ctl_resp *rs)
{
	sqlite3 *db = ctl_req_db(rq);
	sqlite3_stmt *st = NULL;
	int64_t id, after, limit, rank, next;
	bool terminal = false;
	json_t *arr;

	if (ctl_req_param_id(rq, "id", &id, rs) ||
	    query_int(rq, "after", 0, 0, INT64_MAX, &after, rs) ||
	    query_int(rq, "limit", 500, 1, 5000, &limit, rs) ||
	    query_int(rq, "rank", -1, 0, 1023, &rank, rs))
		return 0;
	if (!job_exists(db, id, &terminal))
		return ctl_resp_error(rs, 404, "job %" PRId64 " not found", id);
	if (sqlite3_prepare_v2(db, "SELECT seq, ts_ns, node_id, rank, attempt,"
			       " stream, line, truncated FROM logs WHERE job_id=?"
			       " AND seq>? AND (?<0 OR rank=?) ORDER BY seq LIMIT ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, after);
	sqlite3_bind_int64(st, 3, rank);
	sqlite3_bind_int64(st, 4, rank);
	sqlite3_bind_int64(st, 5, limit);
	arr = json_array();
	next = after;
	while (sqlite3_step(st) == SQLITE_ROW) {
		next = sqlite3_column_int64(st, 0);
		json_array_append_new(arr, json_pack(
			"{s:I,s:o,s:I,s:i,s:I,s:s,s:s,s:b}",
			"seq", (json_int_t)next,
			"ts", ts_json(sqlite3_column_int64(st, 1)),
			"node_id", (json_int_t)sqlite3_column_int64(st, 2),
			"rank", sqlite3_column_int(st, 3),
			"attempt", (json_int_t)sqlite3_column_int64(st, 4),
			"stream", ctl_db_text(st, 5),
			"line", ctl_db_text(st, 6),
			"truncated", sqlite3_column_int(st, 7)));
	}
	sqlite3_finalize(st);
	/* done: terminal, and nothing after what we return (the reconciler
	 * stops nodes before a job is terminal, so no line can follow). */
	return ctl_resp_json(rs, 200, json_pack("{s:o,s:I,s:b}", "lines", arr,
				"next", (json_int_t)next,
				"done", terminal && (int64_t)json_array_size(arr) < limit));
}

/* ---- GET /v1/nodes -------------------------------------------------------- */

static json_t *nodes_json(sqlite3 *db, int64_t job, int64_t all)
{
	sqlite3_stmt *st = NULL;
	char sql[768];
	json_t *arr;

	snprintf(sql, sizeof sql, "SELECT %s FROM nodes WHERE (?1=0 OR job_id=?1)"
		 " AND (?2=1 OR state IN ('REQUESTED','BOOTING','READY'))"
		 " ORDER BY id LIMIT 10000", ctl__node_cols);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, job);
	sqlite3_bind_int64(st, 2, all);
	arr = json_array();
	while (arr && sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(arr, ctl__node_json_row(st));
	sqlite3_finalize(st);
	return arr;
}

json_t *ctl_nodes_json(sqlite3 *db, int all)
{
	return nodes_json(db, 0, all);
}

static int nodes_list(struct ctl_req *rq, struct ctl_resp *rs)
{
	int64_t job, all;
	json_t *arr;

	if (query_int(rq, "job", 0, 0, INT64_MAX, &job, rs) ||
	    query_int(rq, "all", 0, 0, 1, &all, rs))
		return 0;
	arr = nodes_json(ctl_req_db(rq), job, all);
	if (!arr)
		return -EIO;
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "nodes", arr));
}

/* ---- GET /v1/offerings ---------------------------------------------------- */

json_t *ctl__offering_json(const struct prov_offering *o, const char *provider)
{
	return json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:f,s:I,s:I,s:I,s:b,s:f,s:s}",
		"provider", provider, "pool", o->pool, "cloud", o->cloud,
		"region", o->region, "zone", o->zone,
		"instance_type", o->instance_type, "accelerator", o->accelerator,
		"accelerator_count", o->accel_count,
		"on_demand_micros_per_hour", (json_int_t)o->ondemand_per_h,
		"spot_micros_per_hour", (json_int_t)o->spot_per_h,
		"reserved_micros_per_hour", (json_int_t)o->reserved_per_h,
		"available", o->spot_available,
		"hazard_per_hour", o->hazard_per_h, "trace", o->trace);
}

static int offerings(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct prov_query q = { 0 };
	struct prov_offering *v = NULL;
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
	rc = c->prov.ops->offerings(c->prov.st, &q, ctl__sim_now(c), &v, &n, &e);
	if (rc)
		return internal(rs, &e, rc);
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		if (spot && strcmp(spot, "1") == 0 && v[i].spot_per_h < 0)
			continue;
		json_array_append_new(arr, ctl__offering_json(&v[i], c->prov.ops->name));
	}
	free(v);
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "offerings", arr));
}

/* ---- GET /healthz --------------------------------------------------------- */

static int healthz(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);

	return ctl_resp_json(rs, 200, json_pack("{s:b,s:s,s:s,s:f,s:f}",
		"ok", 1, "version", VERSION, "provider", c->prov.ops->name,
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
