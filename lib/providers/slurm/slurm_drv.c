/*
 * slurm_drv.c - the slurm provider's compute driver (cloud/compute.h):
 * a node is a Slurm batch job whose one step runs spotrun-agent.
 *
 * LAUNCH (a worker thread per request; provision() returns at once):
 *
 *   1. fence: the lease it was decided under still held (else EFENCED);
 *   2. look for the job first: `squeue --states=all --name KEY`, where
 *      KEY is the launch's idempotency key (sr-<cluster>-<node>-<attempt>)
 *      and the job's name.  sbatch has no token: a launch retried after a
 *      crash or a lost answer finds its earlier submission here and never
 *      submits a second job;
 *   3. else `sbatch --parsable --job-name KEY --comment spotrun:<cluster>:
 *      <job>:<node>:<attempt> --partition P --nodes 1 --exclusive
 *      --no-requeue --signal TERM@<lead> [--time T] --chdir <node dir>
 *      (<state dir>/nodes/<node>, the daemon's node dir: CLOUD_CAP_SHARED_DISK)
 *      --output <node dir>/slurm-%j.out --export ALL <script>`, with the
 *      agent's settings and its one-time bootstrap secret on the
 *      environment sbatch exports (the script reads only those; slurm.c).
 *
 * --no-requeue: spotrun, not Slurm, decides where a preempted node's work
 * goes next (back to the Slurm queue or to spot, by the job's policy); a
 * job Slurm requeued by itself would start an agent whose secret is spent.
 *
 * STATES (squeue %T):
 *   PENDING, CONFIGURING, REQUEUED, REQUEUE_HOLD,
 *   RESV_DEL_HOLD, SUSPENDED, RESIZING           -> CLOUD_INST_PENDING
 *                                                   (queued: no boot timeout,
 *                                                   CLOUD_CAP_QUEUES)
 *   RUNNING                                      -> CLOUD_INST_RUNNING
 *   COMPLETING, STOPPED, SIGNALING, STAGE_OUT    -> CLOUD_INST_STOPPING
 *   anything else (COMPLETED, CANCELLED, FAILED,
 *   TIMEOUT, PREEMPTED, NODE_FAIL, BOOT_FAIL, ...) -> CLOUD_INST_GONE,
 *                                                   reason = the state
 * A job squeue no longer shows (MinJobAge passed) is gone too.
 *
 * Instance ids are "slurm-<jobid>".  terminate is `scancel -Q`: a job
 * already gone is no error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/json.h"
#include "common/log.h"
#include "providers/slurm/slurm_int.h"

struct cloud_req {
	struct slurm_prov *p;
	pthread_t th;
	bool started;
	char key[CLOUD_IDEM_MAX], part[40], cluster[64];
	int64_t job, node, epoch;
	int attempt;
	char *api, *secret;        /* from the bootstrap text; wiped */
	void (*done)(void *ud);
	void *done_ud;
	pthread_mutex_t mu;        /* the fields below */
	bool finished;
	int rc;
	struct cloud_instance inst;
	struct cloud_error err;
};

static bool safe_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return false;
	}
	return true;
}

static enum cloud_inst_state state_of(const char *t)
{
	static const char *const pend[] = { "PENDING", "CONFIGURING",
		"REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
		"SUSPENDED", "RESIZING", NULL };
	static const char *const stop[] = { "COMPLETING", "STOPPED",
		"SIGNALING", "STAGE_OUT", NULL };

	for (int i = 0; pend[i]; i++)
		if (!strcmp(t, pend[i]))
			return CLOUD_INST_PENDING;
	if (!strcmp(t, "RUNNING"))
		return CLOUD_INST_RUNNING;
	for (int i = 0; stop[i]; i++)
		if (!strcmp(t, stop[i]))
			return CLOUD_INST_STOPPING;
	return CLOUD_INST_GONE;
}

/* One squeue line "%i|%j|%T|%k|%P" of this cluster into *x: 1, or 0 when
 * the job is not ours (another name or comment). */
static int parse_job(const char *line, const char *cluster,
		     struct cloud_instance *x)
{
	char buf[512], *f[5], *save = NULL, c[64];
	long long job, node;
	int nf = 0, attempt, used = 0;

	snprintf(buf, sizeof buf, "%s", line);
	for (char *t = strtok_r(buf, "|", &save); t && nf < 5;
	     t = strtok_r(NULL, "|", &save))
		f[nf++] = t;
	if (nf != 5 || sscanf(f[3], "spotrun:%63[^:]:%lld:%lld:%d%n", c, &job,
			      &node, &attempt, &used) != 4 || f[3][used] ||
	    (cluster && strcmp(c, cluster)))
		return 0;
	memset(x, 0, sizeof *x);
	snprintf(x->id, sizeof x->id, "slurm-%s", f[0]);
	x->state = state_of(f[2]);
	if (x->state == CLOUD_INST_GONE)
		snprintf(x->reason, sizeof x->reason, "%s", f[2]);
	snprintf(x->zone, sizeof x->zone, "%s", f[4]);
	snprintf(x->instance_type, sizeof x->instance_type, "%s", f[4]);
	snprintf(x->cluster, sizeof x->cluster, "%s", c);
	x->job_id = job;
	x->node_id = node;
	x->attempt = attempt;
	return 1;
}

#define SQUEUE_FMT "%i|%j|%T|%k|%P"

/* The job named key, if squeue shows one: 1 with *x, 0 none. */
static int find(struct cloud_req *r, struct cloud_instance *x,
		struct cloud_error *err)
{
	const char *argv[] = { "squeue", "-h", "--states=all", "--name", r->key,
			       "-o", SQUEUE_FMT, NULL };
	char *out = NULL;
	int rc = slurm__run(r->p, argv, NULL, &out, err), found = 0;

	for (char *l = out, *nl; !rc && l && *l && !found; l = nl) {
		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		found = parse_job(l, r->cluster, x);
	}
	free(out);
	return rc ? rc : found;
}

static int submit(struct cloud_req *r, struct cloud_instance *x,
		  struct cloud_error *err)
{
	struct slurm_prov *p = r->p;
	char dir[600], outp[640], comment[160], sig[32], tm[32], node[32],
	     agent[600], api[600], wd[640], lead[32], priv[600], boot[400];
	const char *argv[32], *env[8];
	char *out = NULL, *end;
	int64_t max_s = -1;
	long long id;
	int k = 0, rc;

	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->nparts; i++) {
		if (!strcmp(p->parts[i].name, r->part))
			max_s = p->parts[i].max_time_s;
	}
	pthread_mutex_unlock(&p->mu);
	/* Slurm would queue it for ever (reason PartitionTimeLimit) */
	if (p->time_s > 0 && max_s >= 0 && p->time_s > max_s)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "providers.slurm."
				     "time: %" PRId64 " s is more than partition "
				     "%s's MaxTime (%" PRId64 " s)", p->time_s,
				     r->part, max_s);
	snprintf(dir, sizeof dir, "%s/nodes/%" PRId64, p->h->state_dir, r->node);
	rc = sr_fs_mkdir_p(dir, 0700);
	if (rc)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "%s: %s", dir,
				     sr_strerror(rc));
	snprintf(outp, sizeof outp, "%s/slurm-%%j.out", dir);
	snprintf(comment, sizeof comment, "spotrun:%s:%" PRId64 ":%" PRId64 ":%d",
		 r->cluster, r->job, r->node, r->attempt);
	snprintf(sig, sizeof sig, "TERM@%" PRId64, p->lead_s);
	argv[k++] = "sbatch";
	argv[k++] = "--parsable";
	argv[k++] = "--job-name";
	argv[k++] = r->key;
	argv[k++] = "--comment";
	argv[k++] = comment;
	argv[k++] = "--partition";
	argv[k++] = r->part;
	argv[k++] = "--nodes";
	argv[k++] = "1";
	argv[k++] = "--exclusive";
	argv[k++] = "--no-requeue";
	argv[k++] = "--signal";
	argv[k++] = sig;
	if (p->time_s > 0) {
		snprintf(tm, sizeof tm, "%" PRId64 ":%02" PRId64, p->time_s / 60,
			 p->time_s % 60);
		argv[k++] = "--time";
		argv[k++] = tm;
	}
	argv[k++] = "--chdir";
	argv[k++] = dir;
	argv[k++] = "--output";
	argv[k++] = outp;
	argv[k++] = "--export";
	argv[k++] = "ALL";
	argv[k++] = p->script;
	argv[k] = NULL;
	snprintf(agent, sizeof agent, "SPOTRUN_SLURM_AGENT=%s", p->h->agent_path);
	snprintf(api, sizeof api, "SPOTRUN_SLURM_API=%s", r->api);
	snprintf(node, sizeof node, "SPOTRUN_SLURM_NODE=%" PRId64, r->node);
	snprintf(wd, sizeof wd, "SPOTRUN_SLURM_WORKDIR=%s/work", dir);
	snprintf(lead, sizeof lead, "SPOTRUN_SLURM_LEAD=%" PRId64 "s", p->lead_s);
	snprintf(priv, sizeof priv, "SPOTRUN_SLURM_PRIVATE=%s", p->h->state_dir);
	snprintf(boot, sizeof boot, "SPOTRUN_AGENT_BOOTSTRAP=%s", r->secret);
	env[0] = agent;
	env[1] = api;
	env[2] = node;
	env[3] = wd;
	env[4] = lead;
	env[5] = priv;
	env[6] = boot;
	env[7] = NULL;
	rc = slurm__run(p, argv, env, &out, err);
	explicit_bzero(boot, sizeof boot);
	if (rc)
		return rc;
	id = strtoll(out, &end, 10);
	if (end == out || id <= 0 || (*end && *end != ';' && *end != '\n')) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "sbatch: "
				   "unexpected answer '%.40s'", out);
		free(out);
		return rc;
	}
	free(out);
	memset(x, 0, sizeof *x);
	snprintf(x->id, sizeof x->id, "slurm-%lld", id);
	x->state = CLOUD_INST_PENDING;
	snprintf(x->zone, sizeof x->zone, "%s", r->part);
	snprintf(x->instance_type, sizeof x->instance_type, "%s", r->part);
	snprintf(x->cluster, sizeof x->cluster, "%s", r->cluster);
	x->job_id = r->job;
	x->node_id = r->node;
	x->attempt = r->attempt;
	sr_info("slurm", "submitted", "job=%lld node=%" PRId64 " partition=%s",
		id, r->node, r->part);
	return 0;
}

static void *launch_main(void *arg)
{
	struct cloud_req *r = arg;
	const struct cloud_host *h = r->p->h;
	struct cloud_instance x = { 0 };
	struct cloud_error err = { 0 };
	int rc;

	if (r->epoch && h->fence_ok && !h->fence_ok(h->ud, r->epoch)) {
		rc = cloud_err_set(&err, CLOUD_EFENCED, NULL, "slurm: not "
				   "submitted: the lease it was decided under "
				   "is gone");
		goto out;
	}
	rc = find(r, &x, &err);
	if (rc == 0)
		rc = submit(r, &x, &err);
	else if (rc == 1)
		rc = 0;
out:
	pthread_mutex_lock(&r->mu);
	r->rc = rc;
	r->inst = x;
	r->err = err;
	r->finished = true;
	pthread_mutex_unlock(&r->mu);
	if (r->done)
		r->done(r->done_ud);
	return NULL;
}

static void wipe(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void req_destroy(struct cloud_req *r)
{
	if (!r)
		return;
	wipe(r->api);
	wipe(r->secret);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* The bootstrap text (slurm.c): {"api", "node", "bootstrap"}. */
static int read_boot(struct cloud_req *r, const char *text,
		     struct cloud_error *err)
{
	json_t *d = text ? json_loads(text, 0, NULL) : NULL;
	const char *api = NULL, *sec = NULL;
	int rc = 0;

	if (!d || sr_json_get_str(d, "api", &api, "bootstrap", NULL) ||
	    sr_json_get_str(d, "bootstrap", &sec, "bootstrap", NULL))
		rc = cloud_err_set(err, CLOUD_EINVALID, NULL, "slurm: the "
				   "launch's bootstrap text is not the slurm "
				   "provider's");
	if (!rc) {
		r->api = strdup(api);
		r->secret = strdup(sec);
		if (!r->api || !r->secret)
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of "
					   "memory");
	}
	if (d && sec)
		explicit_bzero((char *)sec, strlen(sec));
	json_decref(d);
	return rc;
}

static int d_provision(void *st, const struct cloud_launch *l,
		       struct cloud_req **req, struct cloud_error *err)
{
	struct cloud_req *r = calloc(1, sizeof *r);
	int rc;

	*req = NULL;
	if (!r)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	pthread_mutex_init(&r->mu, NULL);
	r->p = st;
	if (!safe_name(l->zone) || strlen(l->zone) >= sizeof r->part) {
		rc = cloud_err_set(err, CLOUD_EINVALID, NULL, "slurm: '%s' is "
				   "not a partition name", l->zone ? l->zone :
				   "(none)");
		goto fail;
	}
	if (!safe_name(l->tags.cluster) || !l->idem_key) {
		rc = cloud_err_set(err, CLOUD_EINVALID, NULL, "slurm: a launch "
				   "needs a cluster id and an idempotency key");
		goto fail;
	}
	rc = read_boot(r, l->bootstrap, err);
	if (rc)
		goto fail;
	snprintf(r->key, sizeof r->key, "%s", l->idem_key);
	snprintf(r->part, sizeof r->part, "%s", l->zone);
	snprintf(r->cluster, sizeof r->cluster, "%s", l->tags.cluster);
	r->job = l->tags.job_id;
	r->node = l->tags.node_id;
	r->attempt = l->tags.attempt;
	r->epoch = l->epoch;
	r->done = l->done;
	r->done_ud = l->done_ud;
	rc = pthread_create(&r->th, NULL, launch_main, r);
	if (rc) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "slurm: no "
				   "thread: %s", strerror(rc));
		goto fail;
	}
	r->started = true;
	*req = r;
	return 0;
fail:
	req_destroy(r);
	return rc;
}

static int d_poll(void *st, struct cloud_req *r, struct cloud_instance *out,
		  struct cloud_error *err)
{
	int rc = -EAGAIN;

	(void)st;
	pthread_mutex_lock(&r->mu);
	if (r->finished) {
		rc = r->rc;
		*err = r->err;
		if (rc == 0) {
			*out = r->inst;
			out->blob = NULL;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

static void d_req_free(void *st, struct cloud_req *r)
{
	(void)st;
	if (r && r->started)
		pthread_join(r->th, NULL);
	req_destroy(r);
}

static int d_terminate(void *st, const char *const *ids, size_t n,
		       struct cloud_error *err)
{
	const char *argv[72];
	char *out = NULL;
	size_t k = 0;
	int rc = 0;

	argv[k++] = "scancel";
	argv[k++] = "-Q";
	for (size_t i = 0; i < n; i++) {
		if (strncmp(ids[i], "slurm-", 6) || !ids[i][6] ||
		    strspn(ids[i] + 6, "0123456789") != strlen(ids[i] + 6))
			continue; /* not ours: nothing to end */
		argv[k++] = ids[i] + 6;
		if (k == 70 || i + 1 == n) {
			argv[k] = NULL;
			rc = slurm__run(st, argv, NULL, &out, err);
			free(out);
			out = NULL;
			if (rc)
				return rc;
			k = 2;
		}
	}
	if (k > 2) {
		argv[k] = NULL;
		rc = slurm__run(st, argv, NULL, &out, err);
		free(out);
	}
	return rc;
}

static int d_list(void *st, const char *cluster, struct cloud_instance **out,
		  size_t *n, struct cloud_error *err)
{
	const char *argv[] = { "squeue", "-h", "--me", "--states=all", "-o",
			       SQUEUE_FMT, NULL };
	char *text = NULL;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = slurm__run(st, argv, NULL, &text, err);
	if (rc)
		return rc;
	for (char *c = text; *c; c++)
		cap += *c == '\n';
	*out = calloc(cap + 1, sizeof **out);
	if (!*out) {
		free(text);
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	}
	for (char *l = text, *nl; l && *l; l = nl) {
		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		if (*n < cap + 1 && parse_job(l, cluster, &(*out)[*n]))
			(*n)++;
	}
	free(text);
	return 0;
}

static void d_destroy(void *st)
{
	(void)st; /* the provider's state: slurm.c frees it */
}

const struct cloud_driver_ops slurm__drv_ops = {
	.name = "slurm",
	.provision = d_provision,
	.poll = d_poll,
	.req_free = d_req_free,
	.terminate = d_terminate,
	.list = d_list,
	.destroy = d_destroy,
};
