/*
 * slurm_drv.c - the slurm provider's compute driver (cloud/compute.h):
 * a node is a Slurm batch job whose one step runs spotrun-agent, and the
 * nodes of a launch group (a gang placed in one pass) are ONE batch job
 * of as many nodes, whose step runs an agent on each.
 *
 * LAUNCH (a worker thread per request; provision() returns at once):
 *
 *   1. fence: the lease it was decided under still held (else EFENCED);
 *   2. look for the job first: `squeue --states=all --name KEY`, where
 *      KEY is the launch's idempotency key (sr-<cluster>-<node>-<attempt>),
 *      or its group's (the key of the group's index-0 launch), and the
 *      job's name.  sbatch has no token: a launch retried after a crash
 *      or a lost answer finds its earlier submission here and never
 *      submits a second job;
 *   3. a launch of a group of k > 1 waits for the group's other launches
 *      (slurm_group.c); the last to come submits for all of them;
 *   4. `sbatch --parsable --job-name KEY --comment spotrun:<cluster>:
 *      <job>:<node>[,<node>...]:<attempt> --partition P --nodes k
 *      --exclusive --no-requeue --signal TERM@<lead> [--time T] --chdir
 *      <node dir> (<state dir>/nodes/<first node>, the daemon's node dir:
 *      CLOUD_CAP_SHARED_DISK) --output <node dir>/slurm-%j.out --export
 *      ALL <script>`, with the agents' settings and each node's one-time
 *      bootstrap secret on the environment sbatch exports, by the node's
 *      index in the allocation (SPOTRUN_SLURM_NODE_<i>, ..._WORKDIR_<i>,
 *      SPOTRUN_AGENT_BOOTSTRAP_<i>: the script reads only those; slurm.c).
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
 *   RUNNING, SIGNALING                           -> CLOUD_INST_RUNNING
 *   COMPLETING, STOPPED, STAGE_OUT               -> CLOUD_INST_STOPPING
 *   anything else (COMPLETED, CANCELLED, FAILED,
 *   TIMEOUT, PREEMPTED, NODE_FAIL, BOOT_FAIL, ...) -> CLOUD_INST_GONE,
 *                                                   reason = the state
 * A job squeue no longer shows (MinJobAge passed) is gone too.
 * SIGNALING is a running job while Slurm delivers it a signal - the
 * preemption's TERM (preempt_send_user_signal), which its agents take as
 * their notice: read as stopping, it ended the noticed nodes before
 * their agents could report the final checkpoint and the exit (a gang's
 * exits refused with 409 - test_slurm_provider's gang, 2 of 3 CIs).
 *
 * Instance ids: "slurm-<jobid>" for a one-node job, "slurm-<jobid>.<i>"
 * for node i of a k-node one (list() gives each its own instance, from
 * the comment's node list).  terminate is `scancel -Q` of the job: ending
 * one node of an allocation ends all of them (a gang's nodes end
 * together, as Slurm preempts them); a job already gone is no error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/json.h"
#include "common/log.h"
#include "providers/slurm/slurm_int.h"

#define GROUP_WAIT_S 300     /* a group's launches come within it */

struct cloud_req {
	struct slurm_prov *p;
	pthread_t th;
	bool started;
	char key[CLOUD_IDEM_MAX], part[40], cluster[64];
	int64_t job, node, epoch;
	int attempt;
	int gsize, gindex;         /* its launch group; gsize 1 alone */
	bool cancel;               /* req_free: stop waiting (p->mu) */
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
		"STAGE_OUT", NULL };

	for (int i = 0; pend[i]; i++)
		if (!strcmp(t, pend[i]))
			return CLOUD_INST_PENDING;
	if (!strcmp(t, "RUNNING") || !strcmp(t, "SIGNALING"))
		return CLOUD_INST_RUNNING;
	for (int i = 0; stop[i]; i++)
		if (!strcmp(t, stop[i]))
			return CLOUD_INST_STOPPING;
	return CLOUD_INST_GONE;
}

/* slurm_int.h: one squeue line into the instances of its nodes */
int slurm__parse_squeue_line(const char *line, const char *cluster,
			     struct cloud_instance *x, int max)
{
	char buf[1024], *f[5], *save = NULL, c[64], nodes[640], *end;
	const char *q;
	long long job, node[SLURM_GROUP_MAX];
	int nf = 0, attempt, used = 0, k = 0;

	snprintf(buf, sizeof buf, "%s", line);
	for (char *t = strtok_r(buf, "|", &save); t && nf < 5;
	     t = strtok_r(NULL, "|", &save))
		f[nf++] = t;
	if (nf != 5 || sscanf(f[3], "spotrun:%63[^:]:%lld:%639[0-9,]:%d%n", c,
			      &job, nodes, &attempt, &used) != 4 ||
	    f[3][used] || (cluster && strcmp(c, cluster)))
		return 0;
	for (q = nodes; *q && k < SLURM_GROUP_MAX; q = *end ? end + 1 : end) {
		node[k++] = strtoll(q, &end, 10);
		if (end == q || (*end && *end != ','))
			return 0;
	}
	for (int i = 0; i < k && i < max; i++) {
		memset(&x[i], 0, sizeof x[i]);
		if (k == 1)
			snprintf(x[i].id, sizeof x[i].id, "slurm-%s", f[0]);
		else
			snprintf(x[i].id, sizeof x[i].id, "slurm-%s.%d", f[0], i);
		x[i].state = state_of(f[2]);
		if (x[i].state == CLOUD_INST_GONE)
			snprintf(x[i].reason, sizeof x[i].reason, "%s", f[2]);
		snprintf(x[i].zone, sizeof x[i].zone, "%s", f[4]);
		snprintf(x[i].instance_type, sizeof x[i].instance_type, "%s", f[4]);
		snprintf(x[i].cluster, sizeof x[i].cluster, "%s", c);
		x[i].job_id = job;
		x[i].node_id = node[i];
		x[i].attempt = attempt;
	}
	return k < max ? k : max;
}

#define SQUEUE_FMT "%i|%j|%T|%k|%P"

/* The instance of r's node in the job named r->key, if squeue shows one:
 * 1 with *x, 0 none. */
static int find(struct cloud_req *r, struct cloud_instance *x,
		struct cloud_error *err)
{
	const char *argv[] = { "squeue", "-h", "--states=all", "--name", r->key,
			       "-o", SQUEUE_FMT, NULL };
	struct cloud_instance v[SLURM_GROUP_MAX];
	char *out = NULL;
	int rc = slurm__run(r->p, argv, NULL, &out, err), found = 0;

	for (char *l = out, *nl; !rc && l && *l && !found; l = nl) {
		int k;

		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		k = slurm__parse_squeue_line(l, r->cluster, v, SLURM_GROUP_MAX);
		for (int i = 0; i < k && !found; i++) {
			if (v[i].node_id == r->node) {
				*x = v[i];
				found = 1;
			}
		}
	}
	free(out);
	return rc ? rc : found;
}

/* r's instance in the Slurm job `id` just submitted. */
static void submitted(const struct cloud_req *r, long long id,
		      struct cloud_instance *x)
{
	memset(x, 0, sizeof *x);
	if (r->gsize > 1)
		snprintf(x->id, sizeof x->id, "slurm-%lld.%d", id, r->gindex);
	else
		snprintf(x->id, sizeof x->id, "slurm-%lld", id);
	x->state = CLOUD_INST_PENDING;
	snprintf(x->zone, sizeof x->zone, "%s", r->part);
	snprintf(x->instance_type, sizeof x->instance_type, "%s", r->part);
	snprintf(x->cluster, sizeof x->cluster, "%s", r->cluster);
	x->job_id = r->job;
	x->node_id = r->node;
	x->attempt = r->attempt;
}

#define KV_MAX 700

/* The next variable of sbatch's environment, "NAME=value", into
 * kv[*e] and env[*e]. */
static void kv_put(const char **env, char (*kv)[KV_MAX], int *e,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void kv_put(const char **env, char (*kv)[KV_MAX], int *e,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(kv[*e], KV_MAX, fmt, ap);
	va_end(ap);
	env[*e] = kv[*e];
	(*e)++;
}

/* The partition's MaxTime now (`sinfo -h -p PART -o %l`), not the market
 * view's (up to a minute old: a MaxTime lowered since would leave the job
 * PENDING for ever); `cached` when sinfo fails (sbatch will say why). */
static int64_t max_time_now(struct slurm_prov *p, const char *part,
			    int64_t cached)
{
	const char *argv[] = { "sinfo", "-h", "-p", part, "-o", "%l", NULL };
	struct cloud_error ce = { 0 };
	char *out = NULL;
	int64_t s = cached;

	if (slurm__run(p, argv, NULL, &out, &ce) == 0) {
		out[strcspn(out, "\n")] = '\0';
		if (slurm__parse_time(out, &s) < 0)
			s = cached;
	}
	free(out);
	return s;
}

/* One Slurm job for the launches m[0..k) (by index; one node each), in
 * m[0]'s partition, named m[0]->key: *id its job id. */
static int submit(struct cloud_req *const *m, int k, long long *id,
		  struct cloud_error *err)
{
	const struct cloud_req *r = m[0];
	struct slurm_prov *p = r->p;
	char dir[600], outp[640], comment[800], sig[32], tm[32], nn[16];
	char (*kv)[KV_MAX] = NULL;
	const char *argv[32], *env[SLURM_EXTRA_MAX + 1];
	char *out = NULL, *end;
	int64_t max_s = -1;
	int a = 0, e = 0, rc, used;

	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->nparts; i++) {
		if (!strcmp(p->parts[i].name, r->part))
			max_s = p->parts[i].max_time_s;
	}
	pthread_mutex_unlock(&p->mu);
	if (p->time_s > 0)
		max_s = max_time_now(p, r->part, max_s);
	/* Slurm would queue it for ever (reason PartitionTimeLimit) */
	if (p->time_s > 0 && max_s >= 0 && p->time_s > max_s)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "providers.slurm."
				     "time: %" PRId64 " s is more than partition "
				     "%s's MaxTime (%" PRId64 " s)", p->time_s,
				     r->part, max_s);
	kv = calloc(SLURM_EXTRA_MAX, sizeof *kv);
	if (!kv)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	used = snprintf(comment, sizeof comment, "spotrun:%s:%" PRId64 ":",
			r->cluster, r->job);
	for (int i = 0; i < k; i++) {
		snprintf(dir, sizeof dir, "%s/nodes/%" PRId64, p->h->state_dir,
			 m[i]->node);
		rc = sr_fs_mkdir_p(dir, 0700);
		if (rc) {
			rc = cloud_err_set(err, CLOUD_EINVALID, NULL, "%s: %s", dir,
					   sr_strerror(rc));
			goto out;
		}
		used += snprintf(comment + used, sizeof comment - (size_t)used,
				 "%s%" PRId64, i ? "," : "", m[i]->node);
		if (used >= (int)sizeof comment - 16) {
			rc = cloud_err_set(err, CLOUD_EINVALID, NULL, "slurm: a "
					   "gang of %d nodes does not fit a "
					   "job's comment", k);
			goto out;
		}
		kv_put(env, kv, &e, "SPOTRUN_SLURM_NODE_%d=%" PRId64, i,
		       m[i]->node);
		kv_put(env, kv, &e, "SPOTRUN_SLURM_WORKDIR_%d=%s/work", i, dir);
		kv_put(env, kv, &e, "SPOTRUN_AGENT_BOOTSTRAP_%d=%s", i,
		       m[i]->secret);
	}
	snprintf(comment + used, sizeof comment - (size_t)used, ":%d",
		 r->attempt);
	/* the job's directory and output: its first node's */
	snprintf(dir, sizeof dir, "%s/nodes/%" PRId64, p->h->state_dir, r->node);
	snprintf(outp, sizeof outp, "%s/slurm-%%j.out", dir);
	snprintf(sig, sizeof sig, "TERM@%" PRId64, p->lead_s);
	snprintf(nn, sizeof nn, "%d", k);
	argv[a++] = "sbatch";
	argv[a++] = "--parsable";
	argv[a++] = "--job-name";
	argv[a++] = r->key;
	argv[a++] = "--comment";
	argv[a++] = comment;
	argv[a++] = "--partition";
	argv[a++] = r->part;
	argv[a++] = "--nodes";
	argv[a++] = nn;
	argv[a++] = "--exclusive";
	argv[a++] = "--no-requeue";
	argv[a++] = "--signal";
	argv[a++] = sig;
	if (p->time_s > 0) {
		snprintf(tm, sizeof tm, "%" PRId64 ":%02" PRId64, p->time_s / 60,
			 p->time_s % 60);
		argv[a++] = "--time";
		argv[a++] = tm;
	}
	argv[a++] = "--chdir";
	argv[a++] = dir;
	argv[a++] = "--output";
	argv[a++] = outp;
	argv[a++] = "--export";
	argv[a++] = "ALL";
	argv[a++] = p->script;
	argv[a] = NULL;
	kv_put(env, kv, &e, "SPOTRUN_SLURM_AGENT=%s", p->h->agent_path);
	kv_put(env, kv, &e, "SPOTRUN_SLURM_API=%s", r->api);
	kv_put(env, kv, &e, "SPOTRUN_SLURM_LEAD=%" PRId64 "s", p->lead_s);
	kv_put(env, kv, &e, "SPOTRUN_SLURM_PRIVATE=%s", p->h->state_dir);
	kv_put(env, kv, &e, "SPOTRUN_SLURM_SCRIPT=%s", p->script);
	kv_put(env, kv, &e, "SPOTRUN_SLURM_NNODES=%d", k);
	kv_put(env, kv, &e, "SPOTRUN_SLURM_TASK=");
	env[e] = NULL;
	rc = slurm__run(p, argv, env, &out, err);
	if (rc)
		goto out;
	*id = strtoll(out, &end, 10);
	if (end == out || *id <= 0 || (*end && *end != ';' && *end != '\n')) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "sbatch: "
				   "unexpected answer '%.40s'", out);
		goto out;
	}
	sr_info("slurm", "submitted", "job=%lld nodes=%d first_node=%" PRId64
		" partition=%s", *id, k, r->node, r->part);
out:
	free(out);
	explicit_bzero(kv, SLURM_EXTRA_MAX * sizeof *kv);
	free(kv);
	return rc;
}

/* Find or submit r's job; a launch of a group waits for the others and
 * the last to come submits for all. */
static int launch(struct cloud_req *r, struct cloud_instance *x,
		  struct cloud_error *err)
{
	struct cloud_req *m[SLURM_GROUP_MAX];
	struct slurm_group *g = NULL;
	long long id = 0;
	int rc = find(r, x, err);

	if (rc)
		return rc == 1 ? 0 : rc;
	if (r->gsize <= 1) {
		rc = submit(&r, 1, &id, err);
	} else {
		rc = slurm__group_join(r->p, r->key, r->gsize, r->gindex, r, &g,
				       (void **)m, err);
		if (rc == 1) {
			rc = submit(m, r->gsize, &id, err);
			slurm__group_done(r->p, g, rc, id, err);
		} else if (rc == 0) {
			rc = slurm__group_wait(r->p, g, &r->cancel, GROUP_WAIT_S,
					       &id, err);
		}
		slurm__group_leave(r->p, g, r->gindex);
	}
	if (!rc)
		submitted(r, id, x);
	return rc;
}

static void *launch_main(void *arg)
{
	struct cloud_req *r = arg;
	const struct cloud_host *h = r->p->h;
	struct cloud_instance x = { 0 };
	struct cloud_error err = { 0 };
	int rc;

	if (r->epoch && h->fence_ok && !h->fence_ok(h->ud, r->epoch))
		rc = cloud_err_set(&err, CLOUD_EFENCED, NULL, "slurm: not "
				   "submitted: the lease it was decided under "
				   "is gone");
	else
		rc = launch(r, &x, &err);
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
	/* a group's launches share its key: the Slurm job's name */
	r->gsize = l->group.size > 1 ? l->group.size : 1;
	r->gindex = r->gsize > 1 ? l->group.index : 0;
	if (r->gsize > 1 && (!l->group.key || r->gindex < 0 ||
			     r->gindex >= r->gsize)) {
		rc = cloud_err_set(err, CLOUD_EINVALID, NULL, "slurm: launch %d "
				   "of a group of %d without a key", r->gindex,
				   r->gsize);
		goto fail;
	}
	snprintf(r->key, sizeof r->key, "%s", r->gsize > 1 ? l->group.key :
		 l->idem_key);
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
	struct slurm_prov *p = st;

	if (r && r->started) {
		pthread_mutex_lock(&p->mu);
		r->cancel = true;  /* a launch waiting for its group stops */
		pthread_mutex_unlock(&p->mu);
		slurm__group_wake(p);
		pthread_join(r->th, NULL);
	}
	req_destroy(r);
}

/* The Slurm job id of instance id ("slurm-<job>" or "slurm-<job>.<i>")
 * into out, or false: not ours. */
static bool job_of(const char *id, char *out, size_t cap)
{
	size_t n;

	if (strncmp(id, "slurm-", 6))
		return false;
	id += 6;
	n = strspn(id, "0123456789");
	if (!n || n >= cap || (id[n] && (id[n] != '.' || !id[n + 1] ||
					 strspn(id + n + 1, "0123456789") !=
					 strlen(id + n + 1))))
		return false;
	memcpy(out, id, n);
	out[n] = '\0';
	return true;
}

/* scancel -Q of every job the ids name (once each, at most 64 a call). */
static int d_terminate(void *st, const char *const *ids, size_t n,
		       struct cloud_error *err)
{
	const char *argv[72];
	char jobs[64][24], *out = NULL;
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i <= n && !rc; i++) {
		bool dup = false;

		if (i < n && k < 64 && job_of(ids[i], jobs[k], sizeof jobs[k])) {
			for (size_t q = 0; q < k && !dup; q++)
				dup = !strcmp(jobs[q], jobs[k]);
			k += !dup;
		}
		if (k && (i == n || k == 64)) {
			argv[0] = "scancel";
			argv[1] = "-Q";
			for (size_t q = 0; q < k; q++)
				argv[2 + q] = jobs[q];
			argv[2 + k] = NULL;
			rc = slurm__run(st, argv, NULL, &out, err);
			free(out);
			out = NULL;
			k = 0;
		}
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
	/* a job is at most SLURM_GROUP_MAX instances (its nodes) */
	for (char *c = text; *c; c++)
		cap += *c == '\n';
	cap = (cap + 1) * SLURM_GROUP_MAX;
	*out = calloc(cap, sizeof **out);
	if (!*out) {
		free(text);
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	}
	for (char *l = text, *nl; l && *l; l = nl) {
		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		*n += (size_t)slurm__parse_squeue_line(l, cluster, *out + *n,
						       (int)(cap - *n));
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
