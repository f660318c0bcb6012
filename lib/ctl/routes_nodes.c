/*
 * routes_nodes.c - the node API spoken by spotrun-agent: register,
 * heartbeat, report (docs/api.md "Node API").
 *
 * These handlers only record what nodes say; every decision (state
 * transitions, replacements, billing) is the reconciler's.  The directive
 * a node gets back is derived from the database on each call:
 *
 *   node TERMINATED/LOST                  -> 409 (the agent exits)
 *   job terminal, or cancel requested     -> exit
 *   node has a preemption notice          -> exit (after its own stop)
 *   node is being retired by the policy   -> stop (then it is replaced)
 *   job RUNNING and node READY            -> run  (attempt = job.attempt)
 *   job never ran yet (attempt 0)         -> idle
 *   otherwise                             -> stop (attempt = job.attempt)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/api_body.h"
#include "ctl/ctl_int.h"
#include "ctl/db.h"
#include "ctl/secrets.h"
#include "ctl/jobsm.h"
#include "ctl/place.h"
#include "ctl/recon_int.h"
#include "ctl/workest.h"
#include "finops/ledger.h"

struct nodeinfo {
	int64_t id, job, rank, attempt, num_nodes;
	char state[16], job_state[16], desired[8];
	bool notice, retire;
	char cloud[16], region[40], zone[40], itype[48];
	bool spot;
	int64_t price;
};

static int node_load(sqlite3 *db, int64_t id, struct nodeinfo *n)
{
	sqlite3_stmt *st = NULL;
	int rc = -SR_ENOTFOUND;

	memset(n, 0, sizeof *n);
	if (sqlite3_prepare_v2(db, "SELECT n.id, n.job_id, n.rank, n.state,"
			       " j.state, j.desired, j.attempt, j.num_nodes,"
			       " n.notice_ns IS NOT NULL, n.cloud, n.region, n.zone,"
			       " n.instance_type, n.spot, n.price_micros, n.retire"
			       " FROM nodes n JOIN jobs j ON j.id=n.job_id"
			       " WHERE n.id=?", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		n->id = sqlite3_column_int64(st, 0);
		n->job = sqlite3_column_int64(st, 1);
		n->rank = sqlite3_column_int64(st, 2);
		snprintf(n->state, sizeof n->state, "%s", ctl_db_text(st, 3));
		snprintf(n->job_state, sizeof n->job_state, "%s", ctl_db_text(st, 4));
		snprintf(n->desired, sizeof n->desired, "%s", ctl_db_text(st, 5));
		n->attempt = sqlite3_column_int64(st, 6);
		n->num_nodes = sqlite3_column_int64(st, 7);
		n->notice = sqlite3_column_int(st, 8);
		snprintf(n->cloud, sizeof n->cloud, "%s", ctl_db_text(st, 9));
		snprintf(n->region, sizeof n->region, "%s", ctl_db_text(st, 10));
		snprintf(n->zone, sizeof n->zone, "%s", ctl_db_text(st, 11));
		snprintf(n->itype, sizeof n->itype, "%s", ctl_db_text(st, 12));
		n->spot = sqlite3_column_int(st, 13);
		n->price = sqlite3_column_int64(st, 14);
		n->retire = sqlite3_column_int(st, 15);
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

static bool node_gone(const struct nodeinfo *n)
{
	return strcmp(n->state, "TERMINATED") == 0 || strcmp(n->state, "LOST") == 0;
}

static json_t *directive_of(const struct nodeinfo *n)
{
	enum job_state js = JOB_PENDING;
	const char *a;

	jobsm_parse(n->job_state, &js);
	if (jobsm_terminal(js) || strcmp(n->desired, "cancel") == 0 || n->notice)
		a = "exit";
	else if (n->retire)
		a = "stop";
	else if (js == JOB_RUNNING && strcmp(n->state, "READY") == 0)
		a = "run";
	else if (n->attempt == 0)
		a = "idle";
	else
		a = "stop";
	return json_pack("{s:s,s:I}", "action", a, "attempt", (json_int_t)n->attempt);
}

json_t *ctl__directive(sqlite3 *db, int64_t node_id)
{
	struct nodeinfo n;

	if (node_load(db, node_id, &n) || node_gone(&n))
		return NULL;
	return directive_of(&n);
}

/* Common prologue: id, node row, liveness.  Returns 0 or has answered. */
static int prologue(struct ctl_req *rq, struct ctl_resp *rs, struct nodeinfo *n)
{
	int64_t id;

	if (ctl_req_param_id(rq, "id", &id, rs))
		return -1;
	if (node_load(ctl_req_db(rq), id, n)) {
		ctl_resp_error(rs, 404, "node %" PRId64 " not found", id);
		return -1;
	}
	if (node_gone(n)) {
		ctl_resp_error(rs, 409, "node %" PRId64 " is %s; exit", id, n->state);
		return -1;
	}
	return 0;
}

/* The job's checkpoint URI (spotrun.checkpoint.uri) into uri, or "". */
static void ckpt_uri_of(sqlite3 *db, int64_t job, char *uri, size_t un)
{
	sqlite3_stmt *st = NULL;

	uri[0] = '\0';
	if (sqlite3_prepare_v2(db, "SELECT spec_json FROM jobs WHERE id=?", -1,
			       &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, job);
	if (sqlite3_step(st) == SQLITE_ROW) {
		json_t *spec = json_loads(ctl_db_text(st, 0), 0, NULL);
		json_t *u = json_object_get(json_object_get(json_object_get(
			spec, "spotrun"), "checkpoint"), "uri");

		if (json_is_string(u))
			snprintf(uri, un, "%s", json_string_value(u));
		json_decref(spec);
	}
	sqlite3_finalize(st);
}

/* NULL (key left out by json_pack's "o*") when there is no URI. */
static json_t *uri_json(const char *uri)
{
	return uri[0] ? json_string(uri) : NULL;
}

/* What a SkyPilot-style job adds to a node's assignment: its secrets (as
 * envs), file_mounts, whether workdir: is to be copied to the node, and
 * the GPUs per node (the first accelerators choice). */
struct sky_extra {
	json_t *mounts;   /* new reference, an object */
	int sync_workdir;
	int gpus;
};

static void sky_of(json_t *spec, json_t *envs, struct sky_extra *x)
{
	json_t *sec = json_object_get(spec, "secrets"), *m, *acc, *v;
	const char *k, *colon;

	json_object_foreach(sec, k, v) {
		if (json_is_string(v))
			json_object_set(envs, k, v);
	}
	m = json_object_get(spec, "file_mounts");
	if (json_is_object(m)) {
		json_decref(x->mounts);
		x->mounts = json_incref(m);
	}
	x->sync_workdir = json_is_string(json_object_get(spec, "workdir"));
	acc = json_object_get(json_object_get(spec, "resources"), "accelerators");
	if (json_is_array(acc))
		acc = json_array_get(acc, 0);
	colon = json_is_string(acc) ? strchr(json_string_value(acc), ':') : NULL;
	x->gpus = colon ? atoi(colon + 1) : 0;
}

static json_t *envs_of(struct ctl *c, sqlite3 *db, int64_t job,
		       json_t **setup, json_t **run, char *workdir, size_t wn,
		       struct sky_extra *x)
{
	sqlite3_stmt *st = NULL;
	json_t *envs = json_object();

	*setup = json_null();
	*run = json_null();
	workdir[0] = '\0';
	if (sqlite3_prepare_v2(db, "SELECT spec_json, envs, workdir, secrets_enc "
			       "FROM jobs WHERE id=?", -1, &st, NULL) != SQLITE_OK)
		return envs;
	sqlite3_bind_int64(st, 1, job);
	if (sqlite3_step(st) == SQLITE_ROW) {
		json_t *spec = json_loads(ctl_db_text(st, 0), 0, NULL);
		json_t *over = json_loads(ctl_db_text(st, 1), 0, NULL);

		if (spec) {
			json_t *e = json_object_get(spec, "envs");

			if (json_is_object(e))
				json_object_update(envs, e);
			sky_of(spec, envs, x);
			json_decref(*setup);
			json_decref(*run);
			*setup = json_incref(json_object_get(spec, "setup"));
			*run = json_incref(json_object_get(spec, "run"));
			if (!*setup)
				*setup = json_null();
			if (!*run)
				*run = json_null();
		}
		if (json_is_object(over))
			json_object_update(envs, over);
		if (sqlite3_column_type(st, 3) == SQLITE_BLOB) {
			/* the job's secrets, sealed at submit (secrets.h) */
			json_t *sec = ctl_secrets_open(sqlite3_column_blob(st, 3),
					(size_t)sqlite3_column_bytes(st, 3),
					c->secrets_key);

			if (sec)
				json_object_update(envs, sec);
			else
				sr_error("api", "cannot open the job's sealed "
					 "secrets (secrets.key replaced?)",
					 "job=%" PRId64, job);
			json_decref(sec);
		}
		snprintf(workdir, wn, "%s", ctl_db_text(st, 2));
		json_decref(spec);
		json_decref(over);
	}
	sqlite3_finalize(st);
	return envs;
}

/* ---- POST /v1/nodes/{id}/register ---------------------------------------- */

static int node_register(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	sqlite3 *db = ctl_req_db(rq);
	struct api_register b;
	struct nodeinfo n;
	struct sr_err e = { 0 };
	sqlite3_stmt *st = NULL;
	json_t *root = NULL, *setup, *run, *envs, *dir;
	struct sky_extra sky = { NULL, 0, 0 };
	char ckpt[2500], nodedir[2400], workdir[1100], uri[1100];
	int64_t now = sr_time_real_ns();
	size_t len;
	const char *body = ctl_req_body(rq, &len);
	int rc;

	if (prologue(rq, rs, &n))
		return 0;
	rc = api_parse_register(body, len, &root, &b, &e);
	if (rc)
		return ctl_resp_error(rs, 400, "%s", sr_err_str(&e, rc));
	json_decref(root);
	snprintf(nodedir, sizeof nodedir, "%s/nodes/%" PRId64, c->state_dir, n.id);
	/* with a checkpoint URI (tier 3) each node keeps its tier 2 on its
	 * own disk, deleted with the node; without one, nodes share the
	 * control plane's directory */
	ckpt_uri_of(db, n.job, uri, sizeof uri);
	if (uri[0])
		snprintf(ckpt, sizeof ckpt, "%s/ckpt", nodedir);
	else
		snprintf(ckpt, sizeof ckpt, "%s/jobs/%" PRId64 "/ckpt",
			 c->state_dir, n.job);
	rc = sr_fs_mkdir_p(ckpt, 0700);
	if (rc)
		return ctl_resp_error(rs, 500, "%s: %s", ckpt, sr_strerror(rc));
	rc = ctl_db_begin(db, &e);
	if (!rc)
		rc = ctl_db_prepare(db, "UPDATE nodes SET state='READY',"
				    " registered_ns=coalesce(registered_ns, ?1),"
				    " last_hb_ns=?1 WHERE id=?2 AND state IN"
				    " ('REQUESTED','BOOTING','READY')", &st, &e);
	if (!rc) {
		sqlite3_bind_int64(st, 1, now);
		sqlite3_bind_int64(st, 2, n.id);
		rc = ctl_db_step_done(db, st, &e, "register");
	}
	if (!rc && strcmp(n.state, "READY") != 0)
		rc = ctl_event_add(db, n.job, "node_ready", NULL, NULL, n.id, now,
				   ctl__sim_at(c, now), NULL, "node registered", &e);
	sqlite3_finalize(st);
	rc = ctl_db_end(db, rc, &e);
	if (rc)
		return ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
	sr_info("api", "node registered", "node=%" PRId64 " job=%" PRId64
		" rank=%" PRId64 " pid=%" PRId64, n.id, n.job, n.rank, b.pid);
	ctl__wake(c);
	node_load(db, n.id, &n);
	sky.mounts = json_object();
	envs = envs_of(ctl_req_ctl(rq), db, n.job, &setup, &run, workdir,
		       sizeof workdir, &sky);
	dir = json_string(workdir[0] ? workdir : nodedir);
	return ctl_resp_json(rs, 200, json_pack(
		"{s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:s,s:s,s:I,s:I,s:I,"
		"s:{s:s,s:s,s:s,s:s,s:s,s:b,s:I},s:o,s:o,s:b,s:i,s:o*}",
		"node_id", (json_int_t)n.id, "job_id", (json_int_t)n.job,
		"rank", (json_int_t)n.rank, "num_nodes", (json_int_t)n.num_nodes,
		"setup", setup, "run", run, "envs", envs, "workdir", dir,
		"ckpt_dir", ckpt, "node_dir", nodedir,
		"heartbeat_ms", (json_int_t)c->cfg.heartbeat_ms,
		"imds_poll_ms", (json_int_t)c->cfg.imds_poll_ms,
		"attempt", (json_int_t)n.attempt,
		"placement", "provider", c->prov.ops->name, "cloud", n.cloud,
		"region", n.region, "zone", n.zone, "instance_type", n.itype,
		"spot", n.spot, "price_micros_per_hour", (json_int_t)n.price,
		"directive", directive_of(&n), "file_mounts", sky.mounts,
		"sync_workdir", sky.sync_workdir, "gpus_per_node", sky.gpus,
		"ckpt_uri", uri_json(uri)));
}

/* ---- POST /v1/nodes/{id}/heartbeat --------------------------------------- */

static int node_heartbeat(struct ctl_req *rq, struct ctl_resp *rs)
{
	sqlite3 *db = ctl_req_db(rq);
	struct api_heartbeat b;
	struct nodeinfo n;
	struct sr_err e = { 0 };
	sqlite3_stmt *st = NULL;
	json_t *root = NULL;
	int64_t now = sr_time_real_ns();
	bool first = false;
	size_t len;
	const char *body = ctl_req_body(rq, &len);
	int rc;

	if (prologue(rq, rs, &n))
		return 0;
	rc = api_parse_heartbeat(body, len, &root, &b, &e);
	if (rc)
		return ctl_resp_error(rs, 400, "%s", sr_err_str(&e, rc));
	json_decref(root);
	rc = ctl_db_begin(db, &e);
	if (!rc)
		rc = ctl_db_prepare(db, "UPDATE nodes SET last_hb_ns=?1, workload=?2,"
				    " wl_attempt=?3, wl_pgid=coalesce(?4, wl_pgid),"
				    " cpu_util=?5, gpu_util=?6,"
				    " util_sum=util_sum+coalesce(?7, 0),"
				    " util_n=util_n+(?7 IS NOT NULL)"
				    " WHERE id=?8", &st, &e);
	if (!rc) {
		double u = b.gpu_util >= 0 ? b.gpu_util : b.cpu_util;

		sqlite3_bind_int64(st, 1, now);
		sqlite3_bind_text(st, 2, api_workload_name(b.workload), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, b.attempt);
		if (b.workload_pgid > 0)
			sqlite3_bind_int64(st, 4, b.workload_pgid);
		if (b.cpu_util >= 0)
			sqlite3_bind_double(st, 5, b.cpu_util);
		if (b.gpu_util >= 0)
			sqlite3_bind_double(st, 6, b.gpu_util);
		if (u >= 0)
			sqlite3_bind_double(st, 7, u);
		sqlite3_bind_int64(st, 8, n.id);
		rc = ctl_db_step_done(db, st, &e, "heartbeat");
		sqlite3_finalize(st);
		st = NULL;
	}
	/* Progress comes from rank 0 of the current attempt. */
	if (!rc && n.rank == 0 && b.attempt == n.attempt && n.attempt > 0 &&
	    (b.step >= 0 || b.total_steps >= 0 || b.ckpt_step >= 0)) {
		/* Pace: from the first step this attempt reported, once it has
		 * moved by 2 % of the steps and by 10 (a quarter of a job of
		 * fewer than 40).  A reported step is only known to one step,
		 * at each end of the window, so a 2-step window could read
		 * anything from 0 to twice the true pace, and the policy would
		 * migrate on the noise; 10 steps bound the error to 20 %. */
		rc = ctl_db_prepare(db, "UPDATE jobs SET step=coalesce(?1, step),"
				    " total_steps=coalesce(?2, total_steps),"
				    " ckpt_step=max(coalesce(?3, ckpt_step),"
				    " coalesce(ckpt_step, ?3)),"
				    " step_ns=CASE WHEN ?1 IS NOT NULL AND pace_attempt=?5"
				    "  AND ?1 - pace_step0 >= max(1, coalesce(?2, total_steps,"
				    "  0) / 50, min(10, coalesce(?2, total_steps, 0) / 4))"
				    "  THEN (?6 - pace_t0_ns) * 1.0 / (?1 - pace_step0)"
				    "  ELSE step_ns END,"
				    " pace_step0=CASE WHEN pace_attempt=?5 OR ?1 IS NULL"
				    "  THEN pace_step0 ELSE ?1 END,"
				    " pace_t0_ns=CASE WHEN pace_attempt=?5 OR ?1 IS NULL"
				    "  THEN pace_t0_ns ELSE ?6 END,"
				    " pace_attempt=CASE WHEN ?1 IS NULL THEN pace_attempt"
				    "  ELSE ?5 END WHERE id=?4", &st, &e);
		if (!rc) {
			sqlite3_bind_int64(st, 5, b.attempt);
			sqlite3_bind_int64(st, 6, now);
			if (b.step >= 0)
				sqlite3_bind_int64(st, 1, b.step);
			if (b.total_steps >= 0)
				sqlite3_bind_int64(st, 2, b.total_steps);
			if (b.ckpt_step >= 0)
				sqlite3_bind_int64(st, 3, b.ckpt_step);
			sqlite3_bind_int64(st, 4, n.job);
			rc = ctl_db_step_done(db, st, &e, "progress");
		}
		sqlite3_finalize(st);
		/* What this attempt restored: the workload says so, or its
		 * first checkpoint step (the agent resets that to "none" for
		 * each new attempt, while its step may still be a previous
		 * attempt's, or 0 before the workload wrote anything). */
		int64_t restored = b.restored_step >= 0 ? b.restored_step :
				   b.ckpt_step >= 0 ? (b.step >= 0 && b.step <
				   b.ckpt_step ? b.step : b.ckpt_step) : -1;

		if (!rc && b.step >= 0 && (b.step > 0 || restored >= 0)) {
			rc = workest_report(db, n.job, b.attempt, b.step, now,
					    rq->ctl->cfg.time_scale, (int64_t)(
					    PLACE_GAP_S * 1e9 / rq->ctl->cfg.time_scale),
					    &e);
			first = rc == 1;
			if (first)
				rc = 0;
		}
		/* The first report of a later attempt names the checkpoint it
		 * restored: count the work the last preemption lost, and make
		 * it the job's checkpoint (recon_lost.c). */
		if (!rc && restored >= 0)
			rc = recon__lost_settle(rq->ctl, db, n.job, b.attempt,
						restored, first, now, &e);
	}
	rc = ctl_db_end(db, rc, &e);
	if (rc)
		return ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "directive",
						directive_of(&n)));
}

/* ---- POST /v1/nodes/{id}/report ------------------------------------------ */

static int add_log(sqlite3 *db, const struct nodeinfo *n, const struct api_event *ev,
		   int64_t now, struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = ctl_db_prepare(db, "INSERT INTO logs(job_id, node_id, rank, attempt,"
			    " ts_ns, stream, line, truncated) VALUES(?,?,?,?,?,?,?,?)",
			    &st, e);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, n->job);
	sqlite3_bind_int64(st, 2, n->id);
	sqlite3_bind_int64(st, 3, n->rank);
	sqlite3_bind_int64(st, 4, ev->attempt >= 0 ? ev->attempt : n->attempt);
	sqlite3_bind_int64(st, 5, ev->ts_ns ? ev->ts_ns : now);
	sqlite3_bind_text(st, 6, ev->stream, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, ev->line, (int)ev->line_len, SQLITE_STATIC);
	sqlite3_bind_int(st, 8, ev->truncated);
	rc = ctl_db_step_done(db, st, e, "insert log");
	sqlite3_finalize(st);
	return rc;
}

static int add_exit(sqlite3 *db, const struct nodeinfo *n, int64_t attempt,
		    int64_t code, int64_t sig, const char *cause, int64_t now,
		    struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = ctl_db_prepare(db, "INSERT OR IGNORE INTO exits(job_id, attempt, rank,"
			    " node_id, exit_code, signal, cause, ts_ns)"
			    " VALUES(?,?,?,?,?,?,?,?)", &st, e);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, n->job);
	sqlite3_bind_int64(st, 2, attempt);
	sqlite3_bind_int64(st, 3, n->rank);
	sqlite3_bind_int64(st, 4, n->id);
	if (code != INT64_MIN)
		sqlite3_bind_int64(st, 5, code);
	if (sig)
		sqlite3_bind_int64(st, 6, sig);
	sqlite3_bind_text(st, 7, cause, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, now);
	rc = ctl_db_step_done(db, st, e, "insert exit");
	sqlite3_finalize(st);
	return rc;
}

static int exec_bind2(sqlite3 *db, const char *sql, int64_t a, int64_t b,
		      struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc = ctl_db_prepare(db, sql, &st, e);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	rc = ctl_db_step_done(db, st, e, sql);
	sqlite3_finalize(st);
	return rc;
}

static int apply_event(struct ctl *c, sqlite3 *db, const struct nodeinfo *n,
		       const struct api_event *ev, int64_t now, struct sr_err *e)
{
	double sim = ctl__sim_at(c, now);
	sqlite3_stmt *st = NULL;
	char msg[600];
	json_t *d = NULL;
	int rc = 0;

	switch (ev->type) {
	case EV_LOG:
		return add_log(db, n, ev, now, e);
	case EV_UTIL:
		if (ev->cpu_util >= 0 || ev->gpu_util >= 0) {
			double u = ev->gpu_util >= 0 ? ev->gpu_util : ev->cpu_util;

			rc = ctl_db_prepare(db, "UPDATE nodes SET cpu_util=?1, "
					    "util_sum=util_sum+?2, util_n=util_n+1 "
					    "WHERE id=?3", &st, e);
			if (rc)
				return rc;
			if (ev->cpu_util >= 0)
				sqlite3_bind_double(st, 1, ev->cpu_util);
			sqlite3_bind_double(st, 2, u);
			sqlite3_bind_int64(st, 3, n->id);
			rc = ctl_db_step_done(db, st, e, "util");
			sqlite3_finalize(st);
		}
		return rc;
	case EV_NOTICE:
		/* The provider normally recorded the notice first; a cloud that
		 * tells only the node is covered here. */
		rc = ctl_db_prepare(db, "UPDATE nodes SET notice_ns=coalesce("
				    "notice_ns, ?1), kill_ns=coalesce(kill_ns, ?2)"
				    " WHERE id=?3", &st, e);
		if (!rc) {
			sqlite3_bind_int64(st, 1, now);
			sqlite3_bind_int64(st, 2, ev->time_ns ? ev->time_ns :
					   now + c->cfg.notice_ms * 1000000);
			sqlite3_bind_int64(st, 3, n->id);
			rc = ctl_db_step_done(db, st, e, "notice");
			sqlite3_finalize(st);
		}
		d = json_pack("{s:s}", "time", ev->time ? ev->time : "");
		rc = rc ? rc : ctl_event_add(db, n->job, "notice_ack", NULL, NULL,
					     n->id, now, sim, d, "agent saw the "
					     "preemption notice", e);
		break;
	case EV_CHECKPOINT:
		d = json_pack("{s:I,s:I,s:f,s:b,s:b}", "attempt", (json_int_t)ev->attempt,
			      "step", (json_int_t)ev->step, "stall_ms", ev->stall_ms,
			      "final", ev->final, "durable", ev->durable);
		snprintf(msg, sizeof msg, "%scheckpoint at step %" PRId64
			 " (stall %.1f ms)", ev->final ? "final " : "", ev->step,
			 ev->stall_ms);
		rc = ctl_event_add(db, n->job, "checkpoint", NULL, NULL, n->id, now,
				   sim, d, msg, e);
		if (!rc && ev->step >= 0 && ev->durable && n->rank == 0)
			rc = exec_bind2(db, "UPDATE jobs SET ckpt_step=max(coalesce("
					"ckpt_step, ?1), ?1) WHERE id=?2", ev->step,
					n->job, e);
		if (!rc && ev->stall_ms >= 0) {
			struct ledger_event le = {
				.kind = LEDGER_EV_CKPT_STALL, .job_id = n->job,
				.node_id = n->id, .provider = n->cloud,
				.region = n->region, .zone = n->zone,
				.instance_type = n->itype, .at_ns = now,
				.value_ns = (int64_t)(ev->stall_ms * 1e6),
			};

			rc = ledger_event_append(db, &le, e);
		}
		break;
	case EV_EXIT:
		d = json_pack("{s:I,s:o,s:I,s:s}", "attempt", (json_int_t)ev->attempt,
			      "exit_code", ev->exit_code == INT64_MIN ? json_null() :
			      json_integer(ev->exit_code), "signal", (json_int_t)ev->signal,
			      "cause", api_cause_name(ev->cause));
		snprintf(msg, sizeof msg, "rank %" PRId64 " workload %s (exit %s%"
			 PRId64 ")", n->rank, api_cause_name(ev->cause),
			 ev->exit_code == INT64_MIN ? "signal " : "",
			 ev->exit_code == INT64_MIN ? ev->signal : ev->exit_code);
		rc = ctl_event_add(db, n->job, "workload_exit", NULL, NULL, n->id,
				   now, sim, d, msg, e);
		if (!rc && ev->attempt > 0)
			rc = add_exit(db, n, ev->attempt, ev->exit_code, ev->signal,
				      api_cause_name(ev->cause), now, e);
		break;
	case EV_CKPT_ERROR:
		d = json_pack("{s:I,s:s}", "attempt", (json_int_t)ev->attempt,
			      "error", ev->message);
		snprintf(msg, sizeof msg, "checkpoints are not reaching the "
			 "object store (training goes on with local ones): %.400s",
			 ev->message);
		rc = ctl_event_add(db, n->job, "checkpoint_failed", NULL, NULL,
				   n->id, now, sim, d, msg, e);
		break;
	case EV_ISOLATION:
		d = json_pack("{s:s,s:s}", "mode", ev->mode, "message", ev->message);
		snprintf(msg, sizeof msg, "workload isolation: %.16s: %.400s",
			 ev->mode, ev->message);
		rc = ctl_event_add(db, n->job, "isolation", NULL, NULL, n->id, now,
				   sim, d, msg, e);
		break;
	case EV_SETUP_DONE:
		d = json_pack("{s:o}", "exit_code", ev->exit_code == INT64_MIN ?
			      json_null() : json_integer(ev->exit_code));
		snprintf(msg, sizeof msg, "setup finished (exit %" PRId64 ")",
			 ev->exit_code == INT64_MIN ? -1 : ev->exit_code);
		rc = ctl_event_add(db, n->job, "setup_done", NULL, NULL, n->id, now,
				   sim, d, msg, e);
		if (!rc)
			rc = exec_bind2(db, "UPDATE nodes SET setup_rc=?1 WHERE id=?2",
					ev->exit_code == INT64_MIN ? 255 : ev->exit_code,
					n->id, e);
		break;
	}
	json_decref(d);
	return rc;
}

static int node_report(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	sqlite3 *db = ctl_req_db(rq);
	struct api_report b = { 0 };
	struct nodeinfo n;
	struct sr_err e = { 0 };
	json_t *root = NULL;
	int64_t now = sr_time_real_ns();
	size_t len, i;
	const char *body = ctl_req_body(rq, &len);
	bool wake = false;
	int rc;

	if (prologue(rq, rs, &n))
		return 0;
	rc = api_parse_report(body, len, &root, &b, &e);
	if (rc)
		return ctl_resp_error(rs, 400, "%s", sr_err_str(&e, rc));
	for (i = 0; i < b.n; i++) {
		/* an exit is for an attempt this node was told to run: never
		 * past the job's current one (issue 10: attempt 999) */
		if (b.ev[i].type == EV_EXIT &&
		    (b.ev[i].attempt == 0 || b.ev[i].attempt > n.attempt)) {
			rc = ctl_resp_error(rs, 400, "request body: events[%zu]: "
					    "exit for attempt %" PRId64 ", but "
					    "job %" PRId64 " is at attempt %"
					    PRId64, i, b.ev[i].attempt, n.job,
					    n.attempt);
			api_report_free(&b);
			json_decref(root);
			return rc;
		}
	}
	rc = ctl_db_begin(db, &e);
	for (i = 0; !rc && i < b.n; i++) {
		rc = apply_event(c, db, &n, &b.ev[i], now, &e);
		wake |= b.ev[i].type != EV_LOG && b.ev[i].type != EV_UTIL;
	}
	rc = ctl_db_end(db, rc, &e);
	api_report_free(&b);
	json_decref(root);
	if (rc)
		return ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
	if (wake)
		ctl__wake(c);
	node_load(db, n.id, &n);
	return ctl_resp_json(rs, 200, json_pack("{s:I,s:o}", "accepted",
				(json_int_t)i, "directive", directive_of(&n)));
}

static const struct ctl_route routes[] = {
	{ "POST", "/v1/nodes/{id}/register", CTL_AUTH_NODE, node_register,
	  "node_register" },
	{ "POST", "/v1/nodes/{id}/heartbeat", CTL_AUTH_NODE, node_heartbeat,
	  "node_heartbeat" },
	{ "POST", "/v1/nodes/{id}/report", CTL_AUTH_NODE, node_report,
	  "node_report" },
};

void ctl__routes_nodes(void)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		ctl_route_register(&routes[i]);
}
