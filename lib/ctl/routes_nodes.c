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
 *   node has a preemption notice          -> exit (after its own stop);
 *                                            run while a job that trains
 *                                            through the notice runs
 *                                            (recon_through.c)
 *   node is being retired by the policy   -> stop (then it is replaced)
 *   node is a warm spare (no rank yet)    -> idle (its setup runs at
 *                                            registration; recon_spare.c)
 *   node replaces a noticed one while the -> idle (its setup runs at
 *   job trains through the notice            registration; recon_through.c)
 *   job RUNNING and node READY            -> run  (attempt = job.attempt,
 *                                            master_addr and node_ips: the
 *                                            gang's addresses, rank 0 first;
 *                                            master_port: the attempt's;
 *                                            rank: the node's, which a
 *                                            spare learns here)
 *   job never ran yet (attempt 0)         -> idle
 *   otherwise                             -> stop (attempt = job.attempt)
 */
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/text.h"
#include "common/timeutil.h"
#include "ctl/api_body.h"
#include "ctl/ctl_int.h"
#include "ctl/routes.h"
#include "ctl/secrets.h"
#include "ctl/jobsm.h"
#include "ctl/place.h"
#include "ctl/recon_int.h"
#include "ctl/workest.h"
#include "finops/ledger.h"
#include "store/store_ctl.h"
#include "market/jobspec.h"

static bool node_gone(const struct store_node_ctx *n)
{
	return strcmp(n->state, "TERMINATED") == 0 || strcmp(n->state, "LOST") == 0;
}

/* The addresses of the gang's live nodes, by rank ("" for a rank whose
 * node has not registered yet).  Caller owns the array (json_decref). */
static void addr_set(void *ud, int64_t r, const char *addr)
{
	json_t *a = ud;

	if (r >= 0 && (size_t)r < json_array_size(a))
		json_array_set_new(a, (size_t)r, json_string(addr));
}

static json_t *gang_addrs(struct store *db, const struct store_node_ctx *n)
{
	struct sr_err e = { 0 };
	json_t *a = json_array();

	for (int64_t r = 0; a && r < n->num_nodes; r++)
		json_array_append_new(a, json_string(""));
	if (a)
		store_gang_addrs(db, n->job, addr_set, a, &e);
	return a;
}

/* The rendezvous port of a job's attempt: the agent's formula
 * (src/agent/envp.c, envp_master_port) shifted by a salt from this
 * daemon's state dir, so that two daemons on one host (job ids start at
 * 1 in each) do not hand the same port to their jobs' same attempt. */
static int64_t master_port(const char *state_dir, int64_t job, int64_t attempt)
{
	uint64_t h = sr_text_fnv1a(state_dir ? state_dir : "",
				   SR_FNV1A_BASIS_SHORT);
	uint64_t j = (uint64_t)(job < 0 ? -job : job) % 12000;
	uint64_t at = (uint64_t)(attempt < 0 ? 0 : attempt) % 12000;
	return 20000 + (int64_t)((j * 7919 + at + h % 12000) % 12000);
}

static json_t *directive_of(const struct ctl *c, struct store *db,
			    const struct store_node_ctx *n)
{
	enum job_state js = JOB_PENDING;
	const char *a;
	json_t *d, *ips;
	bool through;

	jobsm_parse(n->job_state, &js);
	through = n->notice && n->train_through && js == JOB_RUNNING &&
		  strcmp(n->state, "READY") == 0;
	if (jobsm_terminal(js) || strcmp(n->desired, "cancel") == 0 ||
	    (n->notice && !through))
		a = "exit";
	else if (n->retire)
		a = "stop";
	else if (n->spare || (n->stand_in && js == JOB_RUNNING))
		a = "idle";
	else if (js == JOB_RUNNING && strcmp(n->state, "READY") == 0)
		a = "run"; /* a noticed node training through too */
	else if (n->attempt == 0)
		a = "idle";
	else
		a = "stop";
	d = json_pack("{s:s,s:I}", "action", a, "attempt", (json_int_t)n->attempt);
	/* a node the cloud will take: its time, which the agent may not
	 * have read on its own metadata yet (the final checkpoint's and the
	 * kill's deadline, docs/api.md) */
	if (d && n->notice && n->kill_ns && !through) {
		char t[40];

		if (sr_time_format_rfc3339(n->kill_ns, 3, t, sizeof t) >= 0)
			json_object_set_new(d, "notice_time", json_string(t));
	}
	/* An attempt runs once every rank is READY, so every address is
	 * known: each attempt's rendezvous is at its own rank 0, which a
	 * recovery may have replaced (kept nodes learn it here). */
	if (d && strcmp(a, "run") == 0) {
		ips = gang_addrs(db, n);
		if (ips && json_array_size(ips) > 0) {
			json_object_set(d, "master_addr", json_array_get(ips, 0));
			json_object_set(d, "node_ips", ips);
		}
		json_decref(ips);
		json_object_set_new(d, "master_port", json_integer(master_port(
			c ? c->state_dir : NULL, n->job, n->attempt)));
		json_object_set_new(d, "rank", json_integer(n->rank));
	}
	return d;
}

json_t *ctl__directive(struct store *db, int64_t node_id)
{
	struct sr_err e = { 0 };
	struct store_node_ctx n;

	if (store_node_ctx_load(db, node_id, &n, &e) || node_gone(&n))
		return NULL;
	return directive_of(NULL, db, &n);
}

/* The address the request came from, numeric, into buf ("" if unknown). */
static void peer_addr(const struct ctl_req *rq, char *buf, size_t n)
{
	const union MHD_ConnectionInfo *ci = NULL;
	const struct sockaddr *sa;

	buf[0] = '\0';
	if (rq->conn)
		ci = MHD_get_connection_info(rq->conn,
					     MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	sa = ci ? ci->client_addr : NULL;
	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
	    getnameinfo(sa, sa->sa_family == AF_INET ?
			sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6),
			buf, (socklen_t)n, NULL, 0, NI_NUMERICHOST) != 0)
		buf[0] = '\0';
}

/* Common prologue: id, node row, liveness.  Returns 0 or has answered. */
static int prologue(struct ctl_req *rq, struct ctl_resp *rs, struct store_node_ctx *n)
{
	struct sr_err e = { 0 };
	int64_t id;
	int rc;

	if (ctl_req_param_id(rq, "id", &id, rs))
		return -1;
	rc = store_node_ctx_load(ctl_req_store(rq), id, n, &e);
	if (rc == -SR_ENOTFOUND) {
		ctl_resp_error(rs, 404, "node %" PRId64 " not found", id);
		return -1;
	}
	if (rc) {
		ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
		return -1;
	}
	if (node_gone(n)) {
		ctl_resp_error(rs, 409, "node %" PRId64 " is %s; exit", id, n->state);
		return -1;
	}
	return 0;
}

/* The job's checkpoint URI (spotrun.checkpoint.uri) into uri, or "". */
static void ckpt_uri_of(struct store *db, int64_t job, char *uri, size_t un,
			int64_t *alert_intervals)
{
	struct store_job j;
	struct sr_err e = { 0 };
	json_t *spec, *ck, *u, *ai;

	uri[0] = '\0';
	*alert_intervals = JOBSPEC_DEFAULT_ALERT_INTERVALS;
	if (store_job_load(db, job, STORE_JOB_SPEC, &j, &e))
		return;
	spec = json_loads(j.spec_json, 0, NULL);
	ck = json_object_get(json_object_get(spec, "spotrun"), "checkpoint");
	u = json_object_get(ck, "uri");
	ai = json_object_get(ck, "alert_intervals");
	if (json_is_string(u))
		snprintf(uri, un, "%s", json_string_value(u));
	if (json_is_integer(ai) && json_integer_value(ai) > 0)
		*alert_intervals = json_integer_value(ai);
	json_decref(spec);
	store_job_free(&j);
}

/* NULL (key left out by json_pack's "o*") when there is no URI. */
static json_t *uri_json(const char *uri)
{
	return uri[0] ? json_string(uri) : NULL;
}

/* What a SkyPilot-style job adds to a node's assignment: its secrets (as
 * envs), file_mounts (local sources, {dst: src}), its bucket mounts
 * ([{dst, uri, store, mode}], issue 30), whether workdir: is to be copied
 * to the node, and the GPUs per node (the first accelerators choice). */
struct sky_extra {
	json_t *mounts;   /* new reference, an object */
	json_t *buckets;  /* new reference, an array */
	int sync_workdir;
	int gpus;
	int files;        /* the job brings files (GET .../files) */
	char task_id[320];/* SKYPILOT_TASK_ID, "" unknown */
	char preempt_signal[8]; /* spotrun.preempt_signal, "" = TERM */
	int64_t sync_quiet_ms;  /* spotrun.sync_quiet_ms, 0 = the agent's */
};

/* SkyPilot's managed-job task id, the same on every node and attempt:
 * sky-managed-YYYY-MM-DD-HH-MM-SS-UUUUUU_NAME_JOB-0 (the submit time,
 * UTC; task 0 of the job's one-task pipeline). */
static void sky_task_id(const char *name, int64_t created_ns, int64_t job,
			char *out, size_t n)
{
	time_t t = (time_t)(created_ns / 1000000000);
	struct tm tm;
	char ts[40];

	if (!gmtime_r(&t, &tm))
		memset(&tm, 0, sizeof tm);
	strftime(ts, sizeof ts, "%Y-%m-%d-%H-%M-%S", &tm);
	snprintf(out, n, "sky-managed-%s-%06lld_%s_%lld-0", ts,
		 (long long)(created_ns % 1000000000 / 1000), name, (long long)job);
}

static void sky_of(json_t *spec, json_t *envs, struct sky_extra *x)
{
	json_t *sec = json_object_get(spec, "secrets"), *m, *acc, *v;
	const char *k, *colon;

	json_object_foreach(sec, k, v) {
		if (json_is_string(v))
			json_object_set(envs, k, v);
	}
	m = json_object_get(spec, "file_mounts");
	json_object_foreach(m, k, v) {
		if (json_is_string(v))
			json_object_set(x->mounts, k, v);
		else if (json_is_object(v))
			json_array_append_new(x->buckets, json_pack(
				"{s:s,s:O?,s:O?,s:O?}", "dst", k,
				"uri", json_object_get(v, "uri"),
				"store", json_object_get(v, "store"),
				"mode", json_object_get(v, "mode")));
	}
	x->sync_workdir = json_is_string(json_object_get(spec, "workdir"));
	/* checked at submit (jobspec_from_json) */
	v = json_object_get(json_object_get(spec, "spotrun"), "preempt_signal");
	if (json_is_string(v))
		snprintf(x->preempt_signal, sizeof x->preempt_signal, "%s",
			 json_string_value(v));
	v = json_object_get(json_object_get(spec, "spotrun"), "sync_quiet_ms");
	if (json_is_integer(v))
		x->sync_quiet_ms = json_integer_value(v);
	/* spotrun.peer_replicas: the workload's DistCheckpointer reads it
	 * (python/spotrun/dist_peer.py) */
	v = json_object_get(json_object_get(spec, "spotrun"), "peer_replicas");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		json_object_set_new(envs, "SPOTRUN_PEER_REPLICAS",
				    json_sprintf("%d", (int)json_integer_value(v)));
	acc = json_object_get(json_object_get(spec, "resources"), "accelerators");
	if (json_is_array(acc))
		acc = json_array_get(acc, 0);
	colon = json_is_string(acc) ? strchr(json_string_value(acc), ':') : NULL;
	x->gpus = colon ? atoi(colon + 1) : 0;
}

static json_t *envs_of(struct ctl *c, struct store *db, int64_t job,
		       json_t **setup, json_t **run, char *workdir, size_t wn,
		       struct sky_extra *x)
{
	struct store_job_env j;
	struct sr_err err = { 0 };
	json_t *envs = json_object(), *spec, *over;

	*setup = json_null();
	*run = json_null();
	workdir[0] = '\0';
	if (store_job_env_load(db, job, &j, &err))
		return envs;
	spec = json_loads(j.spec_json, 0, NULL);
	over = j.envs ? json_loads(j.envs, 0, NULL) : NULL;
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
	if (j.sealed) {
		/* the job's secrets, sealed at submit (secrets.h) */
		json_t *sec = ctl_secrets_open(j.sealed, j.sealed_len,
					       c->secrets_key);

		if (sec)
			json_object_update(envs, sec);
		else
			sr_error("api", "cannot open the job's sealed secrets "
				 "(secrets.key replaced?)", "job=%" PRId64, job);
		json_decref(sec);
	}
	snprintf(workdir, wn, "%s", j.workdir);
	x->files = j.files;
	sky_task_id(j.name, j.created_ns, job, x->task_id, sizeof x->task_id);
	json_decref(spec);
	json_decref(over);
	store_job_env_free(&j);
	return envs;
}

/* ---- POST /v1/nodes/{id}/register ---------------------------------------- */

static int node_register(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct store *db = ctl_req_store(rq);
	struct api_register b;
	struct store_node_ctx n;
	struct sr_err e = { 0 };
	json_t *root = NULL, *setup, *run, *envs, *dir;
	struct sky_extra sky = { NULL, NULL, 0, 0, 0, "", "", 0 };
	char ckpt[2500], nodedir[2400], workdir[1100], uri[1100], addr[64];
	int64_t alert_intervals;
	int64_t now = ctl__now(c); /* the reconciler's clock (ctl__now) */
	bool shared;
	size_t len;
	const char *body = ctl_req_body(rq, &len);
	int rc;

	if (prologue(rq, rs, &n))
		return 0;
	rc = api_parse_register(body, len, &root, &b, &e);
	if (rc)
		return ctl_resp_error(rs, 400, "%s", sr_err_str(&e, rc));
	/* the node's address for its peers: its own word, else where the
	 * request came from */
	if (b.addr[0])
		snprintf(addr, sizeof addr, "%s", b.addr);
	else
		peer_addr(rq, addr, sizeof addr);
	json_decref(root);
	shared = ctl__prov_caps(c, n.pool) & CLOUD_CAP_SHARED_DISK;
	snprintf(nodedir, sizeof nodedir, "%s/nodes/%" PRId64, c->state_dir, n.id);
	/* with a checkpoint URI (tier 3) each node keeps its tier 2 on its
	 * own disk, deleted with the node; without one, nodes share the
	 * control plane's directory - on a provider with a shared disk
	 * only (CLOUD_CAP_SHARED_DISK): a cloud's
	 * node sees no directory of ours, and the agent uses its own */
	ckpt_uri_of(db, n.job, uri, sizeof uri, &alert_intervals);
	if (uri[0])
		snprintf(ckpt, sizeof ckpt, "%s/ckpt", nodedir);
	else
		snprintf(ckpt, sizeof ckpt, "%s/jobs/%" PRId64 "/ckpt",
			 c->state_dir, n.job);
	rc = shared ? sr_fs_mkdir_p(ckpt, 0700) : 0;
	if (rc)
		return ctl_resp_error(rs, 500, "%s: %s", ckpt, sr_strerror(rc));
	rc = store_begin(db, &e);
	if (!rc)
		rc = store_node_register(db, n.id, addr, now, &e);
	if (!rc && strcmp(n.state, "READY") != 0)
		rc = ctl_event_append(db, n.job, "node_ready", NULL, NULL, n.id, now,
				      ctl__sim_at(c, now), NULL, "node registered",
				      &e);
	rc = store_end(db, rc, &e);
	if (!rc)
		rc = store_node_ctx_load(db, n.id, &n, &e);
	if (rc)
		return ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
	sr_info("api", "node registered", "node=%" PRId64 " job=%" PRId64
		" rank=%" PRId64 " pid=%" PRId64, n.id, n.job, n.rank, b.pid);
	ctl__wake(c);
	sky.mounts = json_object();
	sky.buckets = json_array();
	envs = envs_of(ctl_req_ctl(rq), db, n.job, &setup, &run, workdir,
		       sizeof workdir, &sky);
	if (!json_array_size(sky.buckets)) {
		json_decref(sky.buckets);
		sky.buckets = NULL;
	}
	dir = workdir[0] ? json_string(workdir) : shared ? json_string(nodedir) :
	      json_null();
	return ctl_resp_json(rs, 200, json_pack(
		"{s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:s?,s:s?,s:I,s:I,s:I,"
		"s:{s:s,s:s,s:s,s:s,s:s,s:b,s:I},s:o,s:o,s:b,s:b,s:i,s:o*,s:I,"
		"s:o*,s:s?,s:b,s:s?,s:o*,s:b,s:b}",
		"node_id", (json_int_t)n.id, "job_id", (json_int_t)n.job,
		"rank", (json_int_t)n.rank, "num_nodes", (json_int_t)n.num_nodes,
		"setup", setup, "run", run, "envs", envs, "workdir", dir,
		"ckpt_dir", shared ? ckpt : NULL,
		"node_dir", shared ? nodedir : NULL,
		"heartbeat_ms", (json_int_t)c->cfg.heartbeat_ms,
		"imds_poll_ms", (json_int_t)c->cfg.imds_poll_ms,
		"attempt", (json_int_t)n.attempt,
		"placement", "provider", ctl__prov_name(c, n.pool), "cloud", n.cloud,
		"region", n.region, "zone", n.zone, "instance_type", n.itype,
		"spot", n.spot, "price_micros_per_hour", (json_int_t)n.price,
		"directive", directive_of(c, db, &n), "file_mounts", sky.mounts,
		"sync_workdir", sky.sync_workdir, "files", sky.files,
		"gpus_per_node", sky.gpus, "ckpt_uri", uri_json(uri),
		"ckpt_alert_intervals", (json_int_t)alert_intervals,
		"bucket_mounts", sky.buckets,
		"task_id", sky.task_id[0] ? sky.task_id : NULL,
		"spare", n.spare,
		"preempt_signal", sky.preempt_signal[0] ? sky.preempt_signal : NULL,
		"sync_quiet_ms", sky.sync_quiet_ms > 0 ?
				 json_integer(sky.sync_quiet_ms) : NULL,
		"setup_ahead", n.spare || (n.stand_in && n.train_through),
		"train_through_notice", n.train_through));
}

/* ---- POST /v1/nodes/{id}/heartbeat --------------------------------------- */

static int node_heartbeat(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct store *db = ctl_req_store(rq);
	struct api_heartbeat b;
	struct store_node_ctx n;
	struct sr_err e = { 0 };
	json_t *root = NULL;
	int64_t now = ctl__now(ctl_req_ctl(rq)); /* the reconciler's clock */
	bool first = false, progress;
	size_t len;
	const char *body = ctl_req_body(rq, &len);
	int rc;

	if (prologue(rq, rs, &n))
		return 0;
	rc = api_parse_heartbeat(body, len, &root, &b, &e);
	if (rc)
		return ctl_resp_error(rs, 400, "%s", sr_err_str(&e, rc));
	json_decref(root);
	/* Progress comes from rank 0 of the current attempt. */
	progress = n.rank == 0 && b.attempt == n.attempt && n.attempt > 0 &&
		   (b.step >= 0 || b.total_steps >= 0 || b.ckpt_step >= 0 ||
		    b.ckpt_local_step >= 0);
	/* A heartbeat that reports no progress is one single-row UPDATE of
	 * the node's heartbeat columns, atomic by itself: it runs in its own
	 * autocommit statement, not in a store_begin() transaction, so it
	 * does not queue on the writers' lock behind the reconciler's
	 * transactions (on PostgreSQL that lock is an advisory lock, and
	 * BEGIN + COMMIT are two more round trips).  Nothing the reconciler
	 * does needs heartbeats serialised with its transactions:
	 *  - it reads the heartbeat columns (last_hb_ns, workload, util_*)
	 *    when it lists the nodes, before and outside the transaction
	 *    that acts on them, so a heartbeat could always commit between
	 *    its read and its write; silence is judged from the value read
	 *    (a heartbeat landing just after only delays a LOST by a pass);
	 *  - its writes to a node row are single UPDATEs too: on SQLite the
	 *    database's one write lock orders them, on PostgreSQL the row
	 *    lock does (an UPDATE waits for the other's commit and re-reads
	 *    the row), so neither loses the other's columns;
	 *  - billing subtracts the utilisation it read (util_sum, util_n)
	 *    instead of zeroing it, so a sample that lands in between is
	 *    kept for the next interval (recon_nodes.c, bill());
	 *  - the heartbeat never changes a node's or a job's state, and the
	 *    node's liveness (prologue) was read outside any transaction
	 *    before too: a heartbeat that races the node's end may stamp
	 *    last_hb_ns on an ended row, which nothing reads.
	 * A heartbeat with progress writes the job too (pace, lost work):
	 * that read-modify-write stays in one transaction. */
	if (progress)
		rc = store_begin(db, &e);
	if (!rc)
		rc = store_node_heartbeat(db, &(struct store_hb){
			.node = n.id, .now_ns = now, .attempt = b.attempt,
			.workload = api_workload_name(b.workload),
			.pgid = b.workload_pgid, .cpu_util = b.cpu_util,
			.gpu_util = b.gpu_util, .steps_per_s = b.steps_per_s }, &e);
	if (!rc && progress) {
		rc = store_job_progress(db, &(struct store_progress){
			.job = n.job, .attempt = b.attempt, .now_ns = now,
			.step = b.step, .total_steps = b.total_steps,
			.ckpt_step = b.ckpt_step,
			.ckpt_local_step = b.ckpt_local_step,
			.ckpt_store_ns = b.ckpt_store_ns }, &e);
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
		/* When this attempt committed its checkpoint: the store's
		 * save time with tier 3, else the agent's own time when it
		 * gives one (a heartbeat comes up to a period later), never
		 * in the future */
		if (!rc && b.ckpt_step >= 0) {
			int64_t at = b.ckpt_store_ns > 0 ? b.ckpt_store_ns :
				     b.ckpt_at_ns;

			rc = recon__lost_seen(db, n.job, b.attempt, b.ckpt_step,
					      at > 0 && at < now ? at : now, &e);
		}
		/* The first report of a later attempt names the checkpoint it
		 * restored: count the work the attempts before it lost, and
		 * make it the job's checkpoint (recon_lost.c). */
		if (!rc && restored >= 0)
			rc = recon__lost_settle(rq->ctl, db, n.job,
						b.attempt, restored, first, now, &e);
	}
	if (progress)
		rc = store_end(db, rc, &e);
	if (rc)
		return ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
	return ctl_resp_json(rs, 200, json_pack("{s:o}", "directive",
						directive_of(rq->ctl, db, &n)));
}

/* ---- POST /v1/nodes/{id}/report ------------------------------------------ */

static int add_log(struct store *db, const struct store_node_ctx *n,
		   const struct api_event *ev, int64_t now, struct sr_err *e)
{
	return store_log_add(db, &(struct store_log_line){
		.job = n->job, .node = n->id, .rank = n->rank,
		.attempt = ev->attempt >= 0 ? ev->attempt : n->attempt,
		.ts_ns = ev->ts_ns ? ev->ts_ns : now, .stream = ev->stream,
		.line = ev->line, .line_len = ev->line_len,
		.truncated = ev->truncated }, e);
}

static int apply_event(struct ctl *c, struct store *db,
		       const struct store_node_ctx *n, const struct api_event *ev,
		       int64_t now, struct sr_err *e)
{
	double sim = ctl__sim_at(c, now);
	char msg[600];
	json_t *d = NULL;
	int rc = 0;

	switch (ev->type) {
	case EV_LOG:
		return add_log(db, n, ev, now, e);
	case EV_UTIL:
		/* a GPU sample counts toward busy/idle; CPU load never does
		 * (store_hb) */
		if (ev->gpu_util >= 0)
			rc = store_node_util(db, n->id, ev->cpu_util, ev->gpu_util, e);
		return rc;
	case EV_NOTICE:
		/* The provider normally recorded the notice first; a cloud that
		 * tells only the node is covered here.  The cloud's time (AWS:
		 * instance-action's) is the node's deadline; a notice without
		 * one (a scheduler's signal) sets none: the node goes when its
		 * instance is gone. */
		d = json_pack("{s:s,s:s}", "time", ev->time ? ev->time : "",
			      "source", ev->source ? ev->source : "imds");
		rc = ctl_event_append(db, n->job, "notice_ack", NULL, NULL, n->id,
				      now, sim, d, "agent saw the preemption "
				      "notice", e);
		/* the first word of it counts the job's preemption */
		rc = rc ? rc : recon__node_reclaimed(c, db, n->id, now,
						     ev->time_ns, e);
		rc = rc < 0 ? rc : 0;
		break;
	case EV_REBALANCE:
		/* the cloud's early warning: recorded on the node (the first
		 * one) and as an event; nothing is ended by it */
		rc = store_node_rebalance(db, n->id, ev->time_ns ? ev->time_ns : now,
					  e);
		d = json_pack("{s:s,s:s,s:s,s:s}", "time", ev->time ? ev->time : "",
			      "cloud", n->cloud, "zone", n->zone,
			      "instance_type", n->itype);
		snprintf(msg, sizeof msg, "the cloud recommends moving off node %"
			 PRId64 " (%s %s): a rebalance recommendation, an early "
			 "warning of spot interruption", n->id, n->zone, n->itype);
		rc = rc ? rc : ctl_event_append(db, n->job, "rebalance", NULL, NULL,
					     n->id, now, sim, d, msg, e);
		break;
	case EV_CHECKPOINT:
		d = json_pack("{s:I,s:I,s:f,s:b,s:b}", "attempt", (json_int_t)ev->attempt,
			      "step", (json_int_t)ev->step, "stall_ms", ev->stall_ms,
			      "final", ev->final, "durable", ev->durable);
		{
			char st_[32], stall[32] = "stall unknown";

			if (ev->stall_ms >= 0)
				snprintf(stall, sizeof stall, "stall %.1f ms",
					 ev->stall_ms);
			snprintf(msg, sizeof msg, "%scheckpoint at step %s (%s)",
				 ev->final ? "final " : "",
				 recon__step_str(ev->step, st_, sizeof st_), stall);
		}
		rc = ctl_event_append(db, n->job, "checkpoint", NULL, NULL, n->id,
				      now, sim, d, msg, e);
		if (!rc && ev->step >= 0 && ev->durable && n->rank == 0)
			rc = store_job_ckpt_step_raise(db, n->job, ev->step, e);
		if (!rc && ev->step >= 0 && ev->durable && n->rank == 0)
			rc = recon__lost_seen(db, n->job, ev->attempt, ev->step,
					      ev->ts_ns > 0 && ev->ts_ns < now ?
					      ev->ts_ns : now, e);
		if (!rc && ev->stall_ms >= 0) {
			struct ledger_event le = {
				.kind = LEDGER_EV_CKPT_STALL, .job_id = n->job,
				.node_id = n->id, .provider = n->cloud,
				.region = n->region, .zone = n->zone,
				.instance_type = n->itype, .at_ns = now,
				.value_ns = (int64_t)(ev->stall_ms * 1e6),
			};

			rc = ledger_event_add(db, &le, e);
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
		rc = ctl_event_append(db, n->job, "workload_exit", NULL, NULL,
				      n->id, now, sim, d, msg, e);
		if (!rc && ev->attempt > 0)
			rc = store_exit_add(db, &(struct store_exit){
				.job = n->job, .attempt = ev->attempt,
				.rank = n->rank, .node = n->id,
				.code = ev->exit_code == INT64_MIN ? STORE_NULL_I64 :
					ev->exit_code,
				.signal = ev->signal,
				.cause = api_cause_name(ev->cause), .ts_ns = now }, e);
		break;
	case EV_CKPT_ERROR:
		d = json_pack("{s:I,s:s}", "attempt", (json_int_t)ev->attempt,
			      "error", ev->message);
		snprintf(msg, sizeof msg, "checkpoints are not reaching the "
			 "object store (training goes on with local ones): %.400s",
			 ev->message);
		rc = ctl_event_append(db, n->job, "checkpoint_failed", NULL, NULL,
				      n->id, now, sim, d, msg, e);
		break;
	case EV_ISOLATION:
		d = json_pack("{s:s,s:s,s:O}", "mode", ev->mode, "message",
			      ev->message, "hidden", ev->hidden ? ev->hidden :
			      json_null());
		snprintf(msg, sizeof msg, "workload isolation: %.16s: %.400s",
			 ev->mode, ev->message);
		rc = ctl_event_append(db, n->job, "isolation", NULL, NULL, n->id,
				      now, sim, d, msg, e);
		break;
	case EV_FILE_MOUNTS:
		d = json_pack("{s:s}", "message", ev->message);
		snprintf(msg, sizeof msg, "file_mounts failed before setup: %.400s",
			 ev->message);
		rc = ctl_event_append(db, n->job, "file_mounts", NULL, NULL, n->id,
				      now, sim, d, msg, e);
		if (!rc)
			rc = store_node_set_setup_rc(db, n->id, RECON_SETUP_FILES, e);
		break;
	case EV_SYNC: {
		/* a bucket mount (issue 30): which round a node restored, how
		 * the final round went, an upload failing */
		char kind[32];

		d = json_pack("{s:I,s:s,s:I}", "attempt", (json_int_t)ev->attempt,
			      "what", ev->what, "round", (json_int_t)ev->round);
		snprintf(kind, sizeof kind, "sync_%s", ev->what);
		snprintf(msg, sizeof msg, "%.580s", ev->message);
		rc = ctl_event_append(db, n->job, kind, NULL, NULL, n->id, now,
				      sim, d, msg, e);
		break;
	}
	case EV_RESTORED:
		/* where each part of a multi-rank restore came from (a peer's
		 * copy, this node's disk, the store: docs/distributed.md) */
		d = json_pack("{s:I,s:I,s:I,s:s}", "attempt",
			      (json_int_t)ev->attempt, "rank", (json_int_t)n->rank,
			      "step", (json_int_t)ev->step, "from", ev->message);
		snprintf(msg, sizeof msg, "rank %d restored step %" PRId64
			 ": %.400s", (int)n->rank, ev->step, ev->message);
		rc = ctl_event_append(db, n->job, "restored", NULL, NULL, n->id,
				      now, sim, d, msg, e);
		break;
	case EV_SETUP_DONE:
		d = json_pack("{s:o}", "exit_code", ev->exit_code == INT64_MIN ?
			      json_null() : json_integer(ev->exit_code));
		snprintf(msg, sizeof msg, "setup finished (exit %" PRId64 ")",
			 ev->exit_code == INT64_MIN ? -1 : ev->exit_code);
		rc = ctl_event_append(db, n->job, "setup_done", NULL, NULL, n->id,
				      now, sim, d, msg, e);
		if (!rc)
			rc = store_node_set_setup_rc(db, n->id, ev->exit_code ==
						     INT64_MIN ? 255 : ev->exit_code, e);
		break;
	}
	json_decref(d);
	return rc;
}

static int node_report(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct store *db = ctl_req_store(rq);
	struct api_report b = { 0 };
	struct store_node_ctx n;
	struct sr_err e = { 0 };
	json_t *root = NULL;
	/* the reconciler's clock: a report's times (a notice, a rebalance
	 * recommendation) are aged against ctl__now (an injected clock in
	 * the tests: the real one here made a rebalance look younger by the
	 * test's own run time, and an early spare outlived its horizon) */
	int64_t now = ctl__now(c);
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
	rc = store_begin(db, &e);
	for (i = 0; !rc && i < b.n; i++) {
		rc = apply_event(c, db, &n, &b.ev[i], now, &e);
		wake |= b.ev[i].type != EV_LOG && b.ev[i].type != EV_UTIL;
	}
	rc = store_end(db, rc, &e);
	api_report_free(&b);
	json_decref(root);
	if (!rc)
		rc = store_node_ctx_load(db, n.id, &n, &e);
	if (rc)
		return ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
	if (wake)
		ctl__wake(c);
	return ctl_resp_json(rs, 200, json_pack("{s:I,s:o}", "accepted",
				(json_int_t)i, "directive", directive_of(c, db, &n)));
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
