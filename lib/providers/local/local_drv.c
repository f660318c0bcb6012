/*
 * local_drv.c - the local cloud's compute driver (cloud/compute.h): an
 * instance is a real spotrun-agent process on this machine.
 *
 * An instance is started with fork + execve (no shell) in its own
 * session, in its own work directory <state>/nodes/<node id> (its
 * "disk").  The cloud keeps one record per launch,
 * <state>/localcloud/<key>.json (key: the launch's idempotency key):
 * instance id "local-<pid>-<start>", the tags, the pool, the notice.  The
 * start gate: the child waits before execve until its record is durable,
 * so a crash of the daemon can never leave a process the cloud does not
 * know; the same key again answers with that record's instance, never a
 * second process.  Terminating SIGKILLs every process of the instance's
 * session, as a cloud reclaiming a machine would, and its disk's
 * checkpoints go with it.
 *
 * Bootstrap channel: a JSON startup document {"api", "node",
 * "bootstrap"} (like a GCE instance's startup metadata, local.c); the
 * driver writes the one-time bootstrap secret to a 0600 file on the
 * instance's disk before the process may run; the agent reads it,
 * removes it and trades it for its token (lib/ctl/nodeboot.h).
 *
 * Spot interruptions.  When a running spot instance's pool has no
 * capacity on the cloud's clock, or <state>/interrupts/<node id> exists
 * (the local cloud's send-spot-instance-interruptions, as AWS FIS
 * offers; tests and `make demo` preempt one node of a gang this way),
 * the cloud schedules the interruption notice_ms ahead (its setting,
 * providers.local.notice_ms or --notice-ms): it serves the notice on the
 * instance's IMDSv2 (local__metadata, which the daemon's /imds routes
 * read), reports it in list() (cloud_instance.notice_ns) and kills the
 * instance when that time comes.  A pool's lost capacity takes a job's
 * instances one at a time, as a cloud's reclaims of a fleet come
 * instance by instance: the job's oldest live instance in that pool is
 * interrupted, the next only once it is gone (so a gang loses one node,
 * keeps the others, and loses the next if the pool stays short).  A
 * spot launch into a pool without capacity fails with the capacity
 * class.  <state>/rebalance/<node id> gives a running spot instance a
 * rebalance recommendation (EC2's early warning), served on its IMDS at
 * events/recommendations/rebalance.  By hand, `spotrun cloud preempt
 * NODE [--lead S]` (ops.preempt, local__preempt) gives one running spot
 * instance its notice at once, S seconds ahead, and `spotrun cloud
 * outage POOL --for D` takes a pool's capacity away (local_outage.c).
 *
 * Threading: the records are under one mutex (struct local_prov.mu).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/proc.h"
#include "providers/local/local_int.h"

#define GONE_KEEP_NS (INT64_C(3600) * SR_NS_PER_SEC) /* records of the gone */
#define LPATH LOCAL_PATH_MAX

/* ---- compute driver ------------------------------------------------------ */

struct lrec {
	char key[CLOUD_IDEM_MAX];
	char id[64];
	int64_t pid, start;
	char cluster[64];
	int64_t job, node;
	int attempt, pool;
	bool spot, gone;
	char zone[40], itype[48];
	int64_t launched_s, notice_ns, gone_ns;
	int64_t launched_ns;       /* wall clock, for the bill */
	double launched_sim;       /* cloud clock at launch, for the bill */
	int64_t rebalance_ns;      /* a rebalance recommendation, 0 none */
	int64_t noticed_ns;        /* when the notice was given, 0 none */
};

struct cloud_req {
	int rc;
	struct cloud_error err;
	struct lrec rec;
};

/* Environment handed to the agent: a short allow list (docs/api.md). */
static const char *const pass_env[] = {
	"PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "PYTHONUSERBASE",
	"SPOTRUN_LIB", "SPOTRUN_LOG_LEVEL", "SPOTRUN_BUILD", "SPOTRUN_CHECK_MODE",
	"LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TMPDIR",
	"SPOTRUN_CA_CERT", "SPOTRUN_ISOLATION", "SPOTRUN_NVML_LIB", NULL
};

/* The record's file: the key with anything but [A-Za-z0-9._-] as '_'. */
static void rec_path(const struct local_prov *d, const char *key, char *out, size_t cap)
{
	char k[CLOUD_IDEM_MAX];
	size_t i;

	for (i = 0; key[i] && i < sizeof k - 1; i++) {
		char ch = key[i];

		k[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		       (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ? ch : '_';
	}
	k[i] = '\0';
	snprintf(out, cap, "%s/%s.json", d->dir, k);
}

static int rec_save(const struct local_prov *d, const struct lrec *r, struct sr_err *e)
{
	char path[LPATH], *s;
	json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:s,s:I,s:I,s:i,s:i,s:b,s:b,s:s,"
			      "s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "key", r->key, "id", r->id,
			      "pid", (json_int_t)r->pid, "start",
			      (json_int_t)r->start, "cluster", r->cluster, "job",
			      (json_int_t)r->job, "node", (json_int_t)r->node,
			      "attempt", r->attempt, "pool", r->pool, "spot",
			      r->spot, "gone", r->gone, "zone", r->zone, "type",
			      r->itype, "launched_s", (json_int_t)r->launched_s,
			      "notice_ns", (json_int_t)r->notice_ns, "gone_ns",
			      (json_int_t)r->gone_ns, "rebalance_ns",
			      (json_int_t)r->rebalance_ns, "noticed_ns",
			      (json_int_t)r->noticed_ns, "launched_ns",
			      (json_int_t)r->launched_ns, "launched_sim",
			      r->launched_sim);
	int rc;

	if (!o)
		return sr_err_set(e, -ENOMEM, "out of memory");
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return sr_err_set(e, -ENOMEM, "out of memory");
	rec_path(d, r->key, path, sizeof path);
	rc = sr_fs_write_atomic(path, s, strlen(s), 0600, e);
	free(s);
	return rc;
}

static void str_of(json_t *o, const char *k, char *out, size_t cap)
{
	const char *v = json_string_value(json_object_get(o, k));

	snprintf(out, cap, "%s", v ? v : "");
}

static int64_t int_of(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int rec_load(const char *path, struct lrec *r)
{
	json_t *o = json_load_file(path, 0, NULL);

	memset(r, 0, sizeof *r);
	if (!json_is_object(o)) {
		json_decref(o);
		return -SR_ECORRUPT;
	}
	str_of(o, "key", r->key, sizeof r->key);
	str_of(o, "id", r->id, sizeof r->id);
	str_of(o, "cluster", r->cluster, sizeof r->cluster);
	str_of(o, "zone", r->zone, sizeof r->zone);
	str_of(o, "type", r->itype, sizeof r->itype);
	r->pid = int_of(o, "pid");
	r->start = int_of(o, "start");
	r->job = int_of(o, "job");
	r->node = int_of(o, "node");
	r->attempt = (int)int_of(o, "attempt");
	r->pool = (int)int_of(o, "pool");
	r->spot = json_is_true(json_object_get(o, "spot"));
	r->gone = json_is_true(json_object_get(o, "gone"));
	r->launched_s = int_of(o, "launched_s");
	r->notice_ns = int_of(o, "notice_ns");
	r->gone_ns = int_of(o, "gone_ns");
	r->rebalance_ns = int_of(o, "rebalance_ns");
	r->noticed_ns = int_of(o, "noticed_ns");
	r->launched_ns = int_of(o, "launched_ns");
	r->launched_sim = json_number_value(json_object_get(o, "launched_sim"));
	json_decref(o);
	return r->id[0] ? 0 : -SR_ECORRUPT;
}

/* Every record: *out malloc'd (caller frees), with each file's path. */
static int recs_all(const struct local_prov *d, struct lrec **out, char (**paths)[LPATH],
		    size_t *n)
{
	DIR *dir = opendir(d->dir);
	struct dirent *de;
	struct lrec *v = NULL;
	char (*p)[LPATH] = NULL;
	size_t k = 0, cap = 0;

	*out = NULL;
	*paths = NULL;
	*n = 0;
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		if (k == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct lrec *nv = realloc(v, nc * sizeof *nv);
			char (*np)[LPATH] = nv ? realloc(p, nc * sizeof *np) : NULL;

			if (nv)
				v = nv;
			if (!nv || !np)
				break;
			p = np;
			cap = nc;
		}
		snprintf(p[k], sizeof p[k], "%s/%s", d->dir, de->d_name);
		if (rec_load(p[k], &v[k]) == 0)
			k++;
	}
	closedir(dir);
	*out = v;
	*paths = p;
	*n = k;
	return 0;
}

static void rec_instance(const struct lrec *r, bool alive,
			 struct cloud_instance *x)
{
	json_t *b;

	memset(x, 0, sizeof *x);
	snprintf(x->id, sizeof x->id, "%s", r->id);
	x->state = alive ? CLOUD_INST_RUNNING : CLOUD_INST_GONE;
	snprintf(x->zone, sizeof x->zone, "%s", r->zone);
	snprintf(x->instance_type, sizeof x->instance_type, "%s", r->itype);
	x->spot = r->spot;
	snprintf(x->cluster, sizeof x->cluster, "%s", r->cluster);
	x->job_id = r->job;
	x->node_id = r->node;
	x->attempt = r->attempt;
	x->launched_s = r->launched_s;
	x->notice_ns = alive ? r->notice_ns : 0;
	if (!alive)
		snprintf(x->reason, sizeof x->reason, "%s", r->notice_ns ?
			 "Server.SpotInstanceTermination" : "terminated");
	b = json_pack("{s:I,s:I,s:i}", "pid", (json_int_t)r->pid, "start",
		      (json_int_t)r->start, "pool", r->pool);
	x->blob = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
}

/* The instance's "disk": <state>/nodes/<id>. */
static void work_dir_of(const struct local_prov *d, int64_t node, char *out, size_t cap)
{
	snprintf(out, cap, "%s/nodes/%" PRId64, d->h->state_dir, node);
}

struct gate_ud {
	struct local_prov *d;
	struct lrec *r;
	struct sr_err *e;
};

/* Runs between fork and execve: the record is durable before the
 * instance can act. */
static int gate(void *ud, int64_t pid, int64_t start)
{
	struct gate_ud *g = ud;

	g->r->pid = pid;
	g->r->start = start;
	snprintf(g->r->id, sizeof g->r->id, "local-%" PRId64 "-%" PRId64, pid,
		 start);
	return rec_save(g->d, g->r, g->e);
}

/* The node's bootstrap secret, one line in a 0600 file of its disk. */
static int token_write(const char *path, const char *token, struct sr_err *e)
{
	size_t n = strlen(token);
	char *line = malloc(n + 2);
	int rc;

	if (!line)
		return sr_err_set(e, -ENOMEM, "out of memory");
	memcpy(line, token, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	rc = sr_fs_write_atomic(path, line, n + 1, 0600, e);
	explicit_bzero(line, n + 1);
	free(line);
	return rc;
}

/* Fork + exec the agent for launch l (its bootstrap parsed into api,
 * node, secret); fills r. */
static int spawn(struct local_prov *d, const struct cloud_launch *l, const char *api,
		 int64_t node, const char *secret, struct lrec *r,
		 struct sr_err *e)
{
	const struct cloud_host *h = d->h;
	char id[24], tokfile[LPATH + 32], imds[1200], logp[LPATH + 32], wd[LPATH];
	char *argv[16], *envp[32];
	struct gate_ud g = { d, r, e };
	int64_t pid = 0, start = 0;
	size_t k = 0;
	int rc;

	work_dir_of(d, node, wd, sizeof wd);
	snprintf(id, sizeof id, "%" PRId64, node);
	snprintf(tokfile, sizeof tokfile, "%s/bootstrap", wd);
	/* api: every daemon sharing the store, the leader first
	 * (cloud_boot.api_url); the agent moves to the next when one stops
	 * answering, for the IMDS too (lease.c) */
	imds[0] = '\0';
	for (const char *p = api; *p;) {
		size_t len = strcspn(p, ","), o = strlen(imds);

		snprintf(imds + o, sizeof imds - o, "%s%.*s/imds/%" PRId64,
			 o ? "," : "", (int)len, p, node);
		p += len + (p[len] == ',');
	}
	snprintf(logp, sizeof logp, "%s/agent.log", wd);
	rc = sr_fs_mkdir_p(wd, 0700);
	if (rc)
		return sr_err_set(e, rc, "%s: %s", wd, sr_strerror(rc));
	rc = token_write(tokfile, secret, e);
	if (rc)
		return rc;
	argv[0] = (char *)h->agent_path;
	argv[1] = "--api";
	argv[2] = (char *)api;
	argv[3] = "--node-id";
	argv[4] = id;
	argv[5] = "--bootstrap-file";
	argv[6] = tokfile;
	argv[7] = "--workdir";
	argv[8] = wd;
	argv[9] = "--imds";
	argv[10] = imds;
	/* the workload must not see the state dir (admin token, database,
	 * keys, other nodes' dirs): docs/security.md */
	argv[11] = "--private";
	argv[12] = (char *)h->state_dir;
	argv[13] = NULL;
	for (size_t i = 0; pass_env[i] && k < 30; i++) {
		const char *v = getenv(pass_env[i]);

		if (!v)
			continue;
		envp[k] = malloc(strlen(pass_env[i]) + strlen(v) + 2);
		if (!envp[k]) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		sprintf(envp[k], "%s=%s", pass_env[i], v);
		k++;
	}
	envp[k] = NULL;
	rc = sr_proc_spawn(argv, envp, wd, logp, gate, &g, &pid, &start, e);
	if (!rc)
		sr_info("local", "node started", "node=%" PRId64 " pid=%" PRId64
			" pool=%d spot=%d", node, pid, l->pool, l->spot);
out:
	for (size_t i = 0; i < k; i++)
		free(envp[i]);
	return rc;
}

static int ld_launch(struct local_prov *d, const struct cloud_launch *l,
		     struct cloud_req *q)
{
	struct lrec *r = &q->rec;
	struct sr_err e = { 0 };
	char path[LPATH];
	json_t *b;
	const char *api, *tok;
	int64_t node;
	int rc;

	rec_path(d, l->idem_key, path, sizeof path);
	if (rec_load(path, r) == 0)
		return 0; /* this key's instance: the same answer again */
	b = l->bootstrap ? json_loads(l->bootstrap, 0, NULL) : NULL;
	api = json_string_value(json_object_get(b, "api"));
	tok = json_string_value(json_object_get(b, "bootstrap"));
	node = json_integer_value(json_object_get(b, "node"));
	if (!api || !tok || node <= 0) {
		json_decref(b);
		return cloud_err_set(&q->err, CLOUD_EINVALID, "InvalidParameterValue",
				     "local: the bootstrap is not a startup "
				     "document {api, node, bootstrap}");
	}
	if (l->spot && !local__available(d, l->pool, local__sim(d))) {
		json_decref(b);
		return cloud_err_set(&q->err, CLOUD_ECAPACITY,
				     "InsufficientInstanceCapacity", "local: no "
				     "spot capacity in pool %d (%s %s)", l->pool,
				     l->zone ? l->zone : "-", l->instance_type);
	}
	memset(r, 0, sizeof *r);
	snprintf(r->key, sizeof r->key, "%s", l->idem_key);
	snprintf(r->cluster, sizeof r->cluster, "%s", l->tags.cluster ?
		 l->tags.cluster : "");
	snprintf(r->zone, sizeof r->zone, "%s", l->zone ? l->zone : "");
	snprintf(r->itype, sizeof r->itype, "%s", l->instance_type);
	r->job = l->tags.job_id;
	r->node = l->tags.node_id;
	r->attempt = l->tags.attempt;
	r->pool = l->pool;
	r->spot = l->spot;
	r->launched_s = local__now(d) / SR_NS_PER_SEC;
	r->launched_ns = local__now(d);
	r->launched_sim = local__sim(d);
	rc = spawn(d, l, api, node, tok, r, &e);
	json_decref(b);
	if (rc)
		return cloud_err_set(&q->err, CLOUD_ETRANSIENT, NULL, "local: %s",
				     sr_err_str(&e, rc));
	return 0;
}

/* Fencing (cloud/compute.h): a side effect is sent only while the
 * daemon still holds the lease it leads under.  Everything here runs at
 * once on the caller's thread, so the epoch is taken and checked
 * together - which still stops a leader paused past its lease that
 * resumes in the middle of a pass. */
static bool fenced(const struct local_prov *d, struct cloud_error *err)
{
	const struct cloud_host *h = d->h;
	int64_t epoch = h->lease_epoch ? h->lease_epoch(h->ud) : 0;

	if (epoch <= 0 || !h->fence_ok || h->fence_ok(h->ud, epoch))
		return false;
	cloud_err_set(err, CLOUD_EFENCED, NULL, "local: not done: lease epoch "
		      "%lld is no longer held", (long long)epoch);
	return true;
}

static int ld_provision(void *st, const struct cloud_launch *l,
			struct cloud_req **req, struct cloud_error *err)
{
	struct local_prov *d = st;
	struct cloud_req *q;

	*req = NULL;
	if (fenced(d, err))
		return -ESTALE;
	if (!l->idem_key || !l->idem_key[0] || !l->instance_type)
		return cloud_err_set(err, CLOUD_EINVALID, "InvalidParameterValue",
				     "local: idem_key and instance_type are "
				     "required");
	q = calloc(1, sizeof *q);
	if (!q)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	pthread_mutex_lock(&d->mu);
	q->rc = ld_launch(d, l, q);
	pthread_mutex_unlock(&d->mu);
	*req = q;
	return 0;
}

static int ld_poll(void *st, struct cloud_req *q, struct cloud_instance *out,
		   struct cloud_error *err)
{
	(void)st;
	memset(out, 0, sizeof *out);
	if (q->rc) {
		if (err)
			*err = q->err;
		return q->rc;
	}
	rec_instance(&q->rec, !q->rec.gone, out);
	return 0;
}

static void ld_req_free(void *st, struct cloud_req *q)
{
	(void)st;
	free(q);
}

/* rm -r WORK_DIR/ckpt, not following symlinks. */
static void ckpt_dir_remove(const char *work_dir)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/ckpt", work_dir);
	sr_fs_rm_tree(path);
}

/* Stop r's processes and its disk's checkpoints; the record says gone. */
static void rec_kill(struct local_prov *d, struct lrec *r, const char *why)
{
	struct sr_err e = { 0 };
	char wd[LPATH];

	if (r->pid > 0 && sr_proc_kill_session(r->pid, r->start) > 0)
		sr_info("local", "node killed", "node=%" PRId64 " pid=%" PRId64
			" why=%s", r->node, r->pid, why);
	work_dir_of(d, r->node, wd, sizeof wd);
	ckpt_dir_remove(wd);
	if (!r->gone) {
		r->gone = true;
		r->gone_ns = local__now(d);
		if (rec_save(d, r, &e))
			sr_warn("local", "cannot record a terminated instance",
				"instance=%s err=\"%s\"", r->id, e.msg);
		else if (r->launched_ns > 0) /* billed once: records before
						the bill have no launch time */
			local__bill(d, &(struct local_billed){
				.id = r->id, .itype = r->itype, .cluster = r->cluster,
				.job = r->job, .node = r->node, .pool = r->pool,
				.spot = r->spot, .launched_ns = r->launched_ns,
				.gone_ns = r->gone_ns, .launched_sim = r->launched_sim,
				.gone_sim = local__sim(d) });
	}
}

static int ld_terminate(void *st, const char *const *ids, size_t n,
			struct cloud_error *err)
{
	struct local_prov *d = st;
	struct lrec *v = NULL;
	char (*paths)[LPATH] = NULL;
	size_t nv = 0;
	int rc;

	if (fenced(d, err))
		return -ESTALE;
	pthread_mutex_lock(&d->mu);
	rc = recs_all(d, &v, &paths, &nv);
	for (size_t i = 0; !rc && i < n; i++) {
		long long pid = 0, start = 0;
		bool found = false;

		for (size_t k = 0; k < nv; k++) {
			if (strcmp(v[k].id, ids[i]) == 0) {
				rec_kill(d, &v[k], "terminate");
				found = true;
			}
		}
		/* an instance from before the records (ctl schema 8):
		 * its id names its process */
		if (!found && sscanf(ids[i], "local-%lld-%lld", &pid, &start) == 2 &&
		    pid > 0)
			sr_proc_kill_session(pid, start);
	}
	pthread_mutex_unlock(&d->mu);
	sr_proc_reap();
	free(v);
	free(paths);
	if (rc)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "local: %s: %s",
				     d->dir, sr_strerror(rc));
	return 0;
}

/* Whether <state>/<what>/<id> asks to reclaim node `id` (interrupts)
 * or to recommend rebalancing it (rebalance). */
static bool injected(const struct local_prov *d, const char *what, int64_t id)
{
	char p[2200];
	struct stat sb;

	snprintf(p, sizeof p, "%s/%s/%" PRId64, d->h->state_dir, what, id);
	return stat(p, &sb) == 0;
}

/* Whether v[i] is the instance a shortage of its pool takes now: no
 * other live instance of its job in that pool is older or already has
 * its notice. */
static bool reclaim_turn(const struct lrec *v, size_t nv, size_t i)
{
	for (size_t k = 0; k < nv; k++) {
		if (k == i || v[k].gone || v[k].job != v[i].job ||
		    v[k].pool != v[i].pool || !v[k].spot ||
		    strcmp(v[k].cluster, v[i].cluster) != 0)
			continue;
		if (v[k].notice_ns || v[k].node < v[i].node)
			return false;
	}
	return true;
}

/* The cloud's own timeline, advanced when it is observed: interruptions
 * scheduled and carried out, dead processes recorded as gone.  `turn`:
 * whether a shortage of its pool takes this instance now. */
static bool rec_step(struct local_prov *d, struct lrec *r, bool turn, int64_t now)
{
	struct sr_err e = { 0 };
	bool alive = !r->gone && r->pid > 0 && sr_proc_alive(r->pid, r->start);

	if (!r->gone && !alive) {
		rec_kill(d, r, "exited");
		return false;
	}
	if (!alive)
		return false;
	if (r->spot && !r->notice_ns &&
	    ((turn && !local__available(d, r->pool, local__sim(d))) ||
	     injected(d, "interrupts", r->node))) {
		r->noticed_ns = now;
		r->notice_ns = now + d->notice_ms * 1000000;
		if (rec_save(d, r, &e))
			sr_warn("local", "cannot record a notice", "instance=%s"
				" err=\"%s\"", r->id, e.msg);
		sr_info("local", "spot interruption scheduled", "node=%" PRId64
			" pool=%d", r->node, r->pool);
	}
	if (r->spot && !r->rebalance_ns && !r->notice_ns &&
	    injected(d, "rebalance", r->node)) {
		/* the cloud's early warning, as EC2's rebalance
		 * recommendation: served on the instance's IMDS */
		r->rebalance_ns = now;
		if (rec_save(d, r, &e))
			sr_warn("local", "cannot record a rebalance recommendation",
				"instance=%s err=\"%s\"", r->id, e.msg);
		sr_info("local", "rebalance recommended", "node=%" PRId64
			" pool=%d", r->node, r->pool);
	}
	if (r->notice_ns && now >= r->notice_ns) {
		rec_kill(d, r, "spot interruption");
		return false;
	}
	return true;
}

/* A real cloud takes a noticed instance at its time whatever the control
 * plane is doing; this one lives in the daemon, so while the daemon was
 * down its instances ran past their deadlines.  Whatever such a node did
 * since (a workload that finished: its report held by the agent's retry
 * backoff) never happened on a real cloud and must not reach the daemon
 * once it serves again: the timeline is advanced at open (rec_step, as
 * at every list; a pool's shortage is left to the first list), so an
 * overdue instance is taken before the daemon serves a node
 * (test_ctl_crash's kill -9 test, SPOTRUN_SEED=656135: a job's end ran
 * twice). */
void local__catch_up(struct local_prov *d)
{
	struct lrec *v = NULL;
	char (*paths)[LPATH] = NULL;
	int64_t now = local__now(d);
	size_t nv = 0;

	pthread_mutex_lock(&d->mu);
	if (recs_all(d, &v, &paths, &nv) == 0) {
		for (size_t i = 0; i < nv; i++)
			rec_step(d, &v[i], false, now);
	}
	pthread_mutex_unlock(&d->mu);
	free(v);
	free(paths);
}

static int ld_list(void *st, const char *cluster, struct cloud_instance **out,
		   size_t *n, struct cloud_error *err)
{
	struct local_prov *d = st;
	struct lrec *v = NULL;
	char (*paths)[LPATH] = NULL;
	struct cloud_instance *x = NULL;
	int64_t now = local__now(d);
	size_t nv = 0, k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	sr_proc_reap();
	pthread_mutex_lock(&d->mu);
	rc = recs_all(d, &v, &paths, &nv);
	if (!rc && nv) {
		x = calloc(nv, sizeof *x);
		if (!x)
			rc = -ENOMEM;
	}
	for (size_t i = 0; !rc && i < nv; i++) {
		bool alive;

		if (strcmp(v[i].cluster, cluster) != 0)
			continue;
		alive = rec_step(d, &v[i], reclaim_turn(v, nv, i), now);
		if (!alive && now - v[i].gone_ns > GONE_KEEP_NS) {
			unlink(paths[i]); /* long gone: forget it */
			continue;
		}
		rec_instance(&v[i], alive, &x[k++]);
	}
	pthread_mutex_unlock(&d->mu);
	free(v);
	free(paths);
	if (rc) {
		cloud_instances_free(x, k);
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "local: %s: %s",
				     d->dir, sr_strerror(rc));
	}
	*out = x;
	*n = k;
	return 0;
}

/* The provider's state is released by its own destroy (local.c). */
static void ld_destroy(void *st)
{
	(void)st;
}

const struct cloud_driver_ops local__drv_ops = {
	.name = "local",
	.provision = ld_provision,
	.poll = ld_poll,
	.req_free = ld_req_free,
	.terminate = ld_terminate,
	.list = ld_list,
	.destroy = ld_destroy,
};


int local__metadata(void *st, int64_t node, struct cloud_meta *out)
{
	struct local_prov *d = st;
	struct lrec *v = NULL, *best = NULL;
	char (*paths)[LPATH] = NULL;
	size_t nv = 0;
	int rc = -SR_ENOTFOUND;

	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&d->mu);
	if (recs_all(d, &v, &paths, &nv) == 0) {
		for (size_t i = 0; i < nv; i++) {
			/* the newest launch of the node (a gone one too: its
			 * agent may still read the notice that ended it) */
			if (v[i].node == node &&
			    (!best || v[i].launched_s > best->launched_s ||
			     (v[i].launched_s == best->launched_s &&
			      v[i].pid > best->pid)))
				best = &v[i];
		}
	}
	if (best) {
		out->notice_ns = best->notice_ns;
		out->rebalance_ns = best->rebalance_ns;
		snprintf(out->zone, sizeof out->zone, "%s", best->zone);
		snprintf(out->instance_type, sizeof out->instance_type, "%s",
			 best->itype);
		out->spot = best->spot;
		snprintf(out->instance_id, sizeof out->instance_id,
			 "i-local%015" PRId64, node);
		rc = 0;
	}
	pthread_mutex_unlock(&d->mu);
	free(v);
	free(paths);
	return rc;
}

int local__preempt(void *st, int64_t node, int64_t lead_ms, int64_t *notice_ns,
		   struct sr_err *e)
{
	struct local_prov *d = st;
	struct lrec *v = NULL, *r = NULL;
	char (*paths)[LPATH] = NULL;
	int64_t now = local__now(d);
	size_t nv = 0;
	int rc;

	*notice_ns = 0;
	pthread_mutex_lock(&d->mu);
	rc = recs_all(d, &v, &paths, &nv);
	for (size_t i = 0; !rc && i < nv; i++) {
		if (v[i].node == node && !v[i].gone && v[i].pid > 0 &&
		    sr_proc_alive(v[i].pid, v[i].start))
			r = &v[i];
	}
	if (rc)
		sr_err_set(e, rc, "%s: %s", d->dir, sr_strerror(rc));
	else if (!r)
		rc = sr_err_set(e, -SR_ENOTFOUND, "node %" PRId64 " has no running "
				"instance on the local cloud", node);
	else if (!r->spot)
		rc = sr_err_set(e, -EINVAL, "node %" PRId64 " is on-demand (%s): "
				"only spot instances are reclaimed", node, r->id);
	else if (r->notice_ns)
		*notice_ns = r->notice_ns; /* already noticed: that one stands */
	else {
		r->noticed_ns = now;
		r->notice_ns = now + (lead_ms > 0 ? lead_ms : d->notice_ms) * 1000000;
		rc = rec_save(d, r, e);
		if (!rc)
			*notice_ns = r->notice_ns;
	}
	pthread_mutex_unlock(&d->mu);
	if (!rc)
		sr_info("local", "spot interruption by hand", "node=%" PRId64
			" at_ns=%" PRId64, node, *notice_ns);
	free(v);
	free(paths);
	return rc;
}
