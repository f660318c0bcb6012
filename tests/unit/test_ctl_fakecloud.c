/* Unit tests: the reconciler against a scripted cloud and an injected
 * clock.  A real spotrund (lib/ctl) runs with no reconciler thread
 * (manual_reconcile); every pass is one ctl__reconcile_once() call, the
 * clock moves only when the test says so, and the "cloud" is a fake
 * provider: no process is started and nothing sleeps.  The test speaks
 * for the agents through the real node API, with the token they trade
 * the bootstrap secret the fake provider received through its bootstrap
 * channel for (lib/ctl/nodeboot.h).
 *
 * Covered: every job state (PENDING, PROVISIONING, RUNNING, NOTICE,
 * CHECKPOINTING, PREEMPTED, RECOVERING, SUCCEEDED, FAILED, CANCELLED)
 * and node state (REQUESTED, QUEUED, PENDING, BOOTING, READY, TERMINATED,
 * LOST); a
 * capacity error at launch (the pool is marked and the next launch
 * goes elsewhere; a launch in flight when its pool is marked is
 * awaited, not abandoned); throttling (backoff with jitter, one launch); an
 * auth error (a job-level failure with the cloud's message); a launch
 * that answers on a later pass and an instance the cloud boots for ten
 * minutes (no boot timeout until it runs); a notice while booting (a
 * preemption that loses no work); a replacement reclaimed before it ran;
 * a notice told by the agent and the provider (counted once per node,
 * recon_preempt.c); an instance that vanishes
 * after its notice, and one that shuts down (kept for its agent's last
 * reports until its deadline); a slow boot; a silent node; a daemon
 * crash in the middle of a launch and a restart (no double launch); a terminate that
 * fails (retried) and instances left running by a crash (swept at
 * start); a policy move of a running spot job to on-demand (NOTICE
 * "migrate" -> CHECKPOINTING -> PREEMPTED -> RECOVERING: node
 * READY -> TERMINATED "migrated", not counted as a preemption), and of
 * a running spot gang to a cheaper spot pool, whole (and none where the
 * gap does not pay; a lost rank replaced beside its gang meanwhile); a
 * setup
 * that exits non-zero (RUNNING -> FAILED, and PROVISIONING -> FAILED in
 * a gang still waiting for a rank); a noticed workload that never exits
 * (killed at the notice deadline); a workload that completes while it is
 * checkpointed (CHECKPOINTING -> SUCCEEDED, no work lost), and one
 * whose only rank completed before its replacement booted (nothing more
 * placed); a notice after the only rank completed (no preemption), a
 * gang rank noticed after it completed (the gang trains on) and one
 * completing in its notice's lead; a completion committed while a pass
 * decides to stop the attempt (a trigger: the stop reads the exits
 * again); cancel while PENDING and
 * while PROVISIONING (a BOOTING node terminated). */
#include "ctl_fixture.h"
#include "ctl_db_raw.h"

#include <errno.h>
#include <inttypes.h>

#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/recon.h"
#include "ctl/router.h"
#include "ctl/recon_int.h"

#define MS INT64_C(1000000)
#define NPOOL 3

/* ---- the injected clock ----------------------------------------------- */

/* atomic: HTTP threads read the clock too (ctl__sim_now in views) */
static _Atomic int64_t t_real, t_mono;

static int64_t clk_real(void *ud)
{
	(void)ud;
	return t_real;
}

static int64_t clk_mono(void *ud)
{
	(void)ud;
	return t_mono;
}

static void advance_ms(int64_t ms)
{
	t_real += ms * MS;
	t_mono += ms * MS;
}

/* ---- the scripted cloud -------------------------------------------------- */

struct finst {
	char id[32];
	char key[CLOUD_IDEM_MAX];  /* the launch's idempotency key */
	char cluster[64];
	int64_t node, job;
	int pool;
	bool spot, alive;
	bool noticed;               /* interrupted alone (its pool stays) */
	bool stopping;              /* listed as shutting down (GCE's
				       STOPPING after its notice) */
	_Atomic bool pending;       /* the cloud still boots it */
	char token[80];             /* its bootstrap secret */
	char ntoken[80];            /* the node token it got for it, "" */
	char boot[128];             /* the bootstrap text it was started with */
	char gkey[CLOUD_IDEM_MAX];  /* its launch's group: key, size, index */
	int gsize, gindex;
};

/* One launch request: answers after `waits` more polls (-EAGAIN), then
 * rc (or the instance). */
struct cloud_req {
	int rc;
	struct cloud_error err;
	int waits;
	bool hang;                  /* never answers (the daemon "dies") */
	struct cloud_launch l;      /* strings below */
	char key[CLOUD_IDEM_MAX], cluster[64], token[80], boot[128];
	char gkey[CLOUD_IDEM_MAX];
	int inst;                   /* fc.inst index once started, -1 */
};

static struct fcloud {
	_Atomic bool avail[NPOOL];  /* spot capacity now (HTTP threads read it) */
	_Atomic int64_t spot_price[NPOOL]; /* micro-$/h, 0: the pool's default */
	int fail_launch[NPOOL];     /* the next N launches there: capacity */
	bool die_before_commit;     /* the next launch: the daemon "dies" in it */
	char died_token[80];        /* the secret that launch carried */
	int err_code, err_n;        /* the next err_n launches fail so */
	bool async;                 /* launches answer on the next pass */
	bool boot_pending;          /* new instances start "pending" */
	bool register_early;        /* the agent registers before the commit */
	bool term_fail;             /* terminate() fails */
	bool vary_boot;             /* each bootstrap text differs ("#N") */
	bool group_alloc;           /* CLOUD_CAP_GROUP_ALLOC (start_fake) */
	int boots;                  /* bootstrap texts made */
	int mismatches;             /* a key came back with other parameters */
	int launches, terminates, lists;
	struct finst inst[64];
	int ninst;
} fc;

static const char *const zones[NPOOL] = { "us-east-1a", "us-east-1b", "us-west-2a" };

static void offering(int pool, struct cloud_offering *o)
{
	memset(o, 0, sizeof *o);
	o->pool = pool;
	snprintf(o->cloud, sizeof o->cloud, "aws");
	snprintf(o->region, sizeof o->region, "%s", pool < 2 ? "us-east-1" : "us-west-2");
	snprintf(o->zone, sizeof o->zone, "%s", zones[pool]);
	snprintf(o->instance_type, sizeof o->instance_type, "p3.2xlarge");
	snprintf(o->accelerator, sizeof o->accelerator, "V100");
	o->accel_count = 1;
	o->ondemand_per_h = pool == 2 ? 2500000 : 3060000;
	o->spot_per_h = pool == 2 ? -1 : fc.spot_price[pool] ? fc.spot_price[pool] :
			pool == 0 ? 918000 : 990000;
	o->reserved_per_h = -1;
	o->hazard_per_h = 0.01;
	o->spot_available = pool < 2 && fc.avail[pool];
	o->price_src = CLOUD_PRICE_LIVE;
}

static int f_offerings(void *st, const struct cloud_query *q,
		       struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	(void)st;
	*n = 0;
	*out = calloc(NPOOL, sizeof **out);
	if (!*out)
		return sr_err_set(e, -ENOMEM, "out of memory");
	for (int i = 0; i < NPOOL; i++) {
		if (q->accelerator && strcmp(q->accelerator, "V100"))
			continue;
		offering(i, &(*out)[(*n)++]);
	}
	return 0;
}

static int f_describe(void *st, int pool, struct cloud_offering *o)
{
	(void)st;
	if (pool < 0 || pool >= NPOOL)
		return -SR_ENOTFOUND;
	offering(pool, o);
	return 0;
}

static void f_nop(void *st)
{
	(void)st; /* the scripted cloud outlives the daemon (restarts) */
}

static const struct cloud_market_ops fake_mkt = {
	.name = "fake", .offerings = f_offerings, .describe = f_describe,
	.destroy = f_nop,
};

static struct finst *inst_of(int64_t node)
{
	struct finst *last = NULL;

	for (int i = 0; i < fc.ninst; i++) {
		if (fc.inst[i].node == node)
			last = &fc.inst[i];
	}
	return last;
}

static int f_provision(void *st, const struct cloud_launch *l,
		       struct cloud_req **req, struct cloud_error *err)
{
	struct cloud_req *q = calloc(1, sizeof *q);

	(void)st;
	(void)err;
	assert_non_null(q);
	assert_non_null(l->idem_key);
	assert_non_null(l->bootstrap);
	q->l = *l;
	snprintf(q->key, sizeof q->key, "%s", l->idem_key);
	snprintf(q->gkey, sizeof q->gkey, "%s", l->group.key ? l->group.key : "");
	snprintf(q->cluster, sizeof q->cluster, "%s", l->tags.cluster);
	/* the token is the bootstrap's first line */
	snprintf(q->token, sizeof q->token, "%.*s",
		 (int)strcspn(l->bootstrap, "\n"), l->bootstrap);
	snprintf(q->boot, sizeof q->boot, "%s", l->bootstrap);
	q->inst = -1;
	if (fc.fail_launch[l->pool] > 0) {
		fc.fail_launch[l->pool]--;
		q->rc = cloud_err_set(&q->err, CLOUD_ECAPACITY,
				      "InsufficientInstanceCapacity",
				      "no capacity in %s", zones[l->pool]);
	} else if (fc.err_n > 0) {
		fc.err_n--;
		q->rc = cloud_err_set(&q->err, fc.err_code == -EBUSY ?
				      CLOUD_ETHROTTLE : CLOUD_EAUTH,
				      fc.err_code == -EBUSY ? "RequestLimitExceeded" :
				      "UnauthorizedOperation", "scripted: %s",
				      fc.err_code == -EBUSY ? "rate exceeded" :
				      "not allowed");
	}
	q->waits = fc.async ? 1 : 0;
	if (fc.die_before_commit) {
		fc.die_before_commit = false;
		q->hang = true;
	}
	*req = q;
	return 0;
}

/* The instance of request q: the one its key already started, or a new
 * one (a launch). */
static struct finst *start_inst(struct cloud_req *q)
{
	struct finst *x;

	for (int i = 0; i < fc.ninst; i++) {
		if (strcmp(fc.inst[i].key, q->key) != 0)
			continue;
		/* EC2 refuses a key sent again with other parameters
		 * (IdempotentParameterMismatch) */
		if (strcmp(fc.inst[i].boot, q->boot) != 0)
			fc.mismatches++;
		return &fc.inst[i]; /* idempotent: no second launch */
	}
	assert_true(fc.ninst < 64);
	x = &fc.inst[fc.ninst++];
	memset(x, 0, sizeof *x);
	snprintf(x->id, sizeof x->id, "i-fake%02d", fc.ninst);
	snprintf(x->key, sizeof x->key, "%s", q->key);
	snprintf(x->cluster, sizeof x->cluster, "%s", q->cluster);
	snprintf(x->token, sizeof x->token, "%s", q->token);
	snprintf(x->boot, sizeof x->boot, "%s", q->boot);
	x->node = q->l.tags.node_id;
	x->job = q->l.tags.job_id;
	x->pool = q->l.pool;
	x->spot = q->l.spot;
	snprintf(x->gkey, sizeof x->gkey, "%s", q->gkey);
	x->gsize = q->l.group.size;
	x->gindex = q->l.group.index;
	x->alive = true;
	x->pending = fc.boot_pending;
	fc.launches++;
	return x;
}

/* The node token of instance x: at its first call, as its agent would,
 * it trades its bootstrap secret for one. */
static const char *inst_token(struct finst *x)
{
	json_t *v = NULL;
	char p[96];

	if (x->ntoken[0])
		return x->ntoken;
	snprintf(p, sizeof p, "/v1/nodes/%lld/bootstrap", (long long)x->node);
	assert_int_equal(jreq("POST", p, x->token, json_pack("{s:s}", "nonce",
			      "00112233445566778899aabbccddeeff"), &v), 200);
	snprintf(x->ntoken, sizeof x->ntoken, "%s",
		 json_string_value(json_object_get(v, "token")));
	json_decref(v);
	assert_int_equal(strlen(x->ntoken), 64);
	return x->ntoken;
}

static int f_poll(void *st, struct cloud_req *q, struct cloud_instance *out,
		  struct cloud_error *err)
{
	struct finst *x;

	(void)st;
	memset(out, 0, sizeof *out);
	if (q->waits > 0) {
		q->waits--;
		return -EAGAIN;
	}
	if (q->rc) {
		*err = q->err;
		return q->rc;
	}
	if (q->hang) {
		/* the cloud started it; its answer never reaches the daemon,
		 * which the test restarts next */
		x = start_inst(q);
		snprintf(fc.died_token, sizeof fc.died_token, "%s", x->token);
		return -EAGAIN;
	}
	x = start_inst(q);
	if (fc.register_early) {
		/* a fast cloud: the instance boots and its agent registers
		 * (with the token its bootstrap got it) before the commit */
		json_t *v = NULL;
		char p[96];

		snprintf(p, sizeof p, "/v1/nodes/%lld/register", (long long)x->node);
		assert_int_equal(jreq("POST", p, inst_token(x), json_object(), &v),
				 200);
		json_decref(v);
	}
	snprintf(out->id, sizeof out->id, "%s", x->id);
	out->state = x->pending ? CLOUD_INST_PENDING : CLOUD_INST_RUNNING;
	out->node_id = x->node;
	out->blob = strdup("{\"fake\":true}");
	return 0;
}

static void f_req_free(void *st, struct cloud_req *q)
{
	(void)st;
	free(q);
}

static int f_terminate(void *st, const char *const *ids, size_t n,
		       struct cloud_error *err)
{
	(void)st;
	fc.terminates++;
	if (fc.term_fail)
		return cloud_err_set(err, CLOUD_ETRANSIENT, "InternalError",
				     "scripted: terminate failed");
	for (size_t k = 0; k < n; k++) {
		for (int i = 0; i < fc.ninst; i++) {
			if (strcmp(fc.inst[i].id, ids[k]) == 0)
				fc.inst[i].alive = false;
		}
	}
	return 0;
}

static int f_list(void *st, const char *cluster, struct cloud_instance **out,
		  size_t *n, struct cloud_error *err)
{
	struct cloud_instance *v = calloc(64, sizeof *v);
	size_t k = 0;

	(void)st;
	(void)err;
	assert_non_null(v);
	fc.lists++;
	for (int i = 0; i < fc.ninst; i++) {
		const struct finst *x = &fc.inst[i];

		if (strcmp(x->cluster, cluster) != 0)
			continue;
		snprintf(v[k].id, sizeof v[k].id, "%s", x->id);
		snprintf(v[k].cluster, sizeof v[k].cluster, "%.63s", x->cluster);
		v[k].state = !x->alive ? CLOUD_INST_GONE : x->stopping ?
			     CLOUD_INST_STOPPING : x->pending ?
			     CLOUD_INST_PENDING : CLOUD_INST_RUNNING;
		v[k].node_id = x->node;
		v[k].job_id = x->job;
		v[k].attempt = 1;
		v[k].spot = x->spot;
		/* the cloud announces the interruption through its API */
		v[k].notice_ns = x->alive && x->spot &&
				 (!fc.avail[x->pool] || x->noticed) ?
				 t_real + 2000 * MS : 0;
		k++;
	}
	*out = v;
	*n = k;
	return 0;
}

static const struct cloud_driver_ops fake_drv = {
	.name = "fake", .provision = f_provision, .poll = f_poll,
	.req_free = f_req_free, .terminate = f_terminate, .list = f_list,
	.destroy = f_nop,
};

/* The bootstrap channel: the bootstrap secret as the whole text (with
 * vary_boot, a second line that differs every time, as the daemons' list
 * in EC2's user-data differs after a failover). */
static int f_bootstrap(void *st, const struct cloud_boot *b, char **out,
		       struct sr_err *e)
{
	(void)st;
	fc.boots++;
	if (fc.vary_boot) {
		if (asprintf(out, "%s\n#%d", b->bootstrap, fc.boots) < 0)
			*out = NULL;
	} else {
		*out = strdup(b->bootstrap);
	}
	return *out ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
}

static int alive_instances(void)
{
	int k = 0;

	for (int i = 0; i < fc.ninst; i++)
		k += fc.inst[i].alive;
	return k;
}

/* ---- daemon ------------------------------------------------------------------ */

static void start_fake(void)
{
	static const struct cloud_provider_ops ops = { .bootstrap = f_bootstrap };
	struct ctl_cloud cloud = {
		.name = "fake", .caps = CLOUD_CAP_SPOT | CLOUD_CAP_TAGS |
			(fc.group_alloc ? CLOUD_CAP_GROUP_ALLOC : 0),
		.p = { .mkt = { &fake_mkt, NULL }, .drv = { &fake_drv, NULL },
		       .ops = &ops },
	};
	const struct ctl_clock clk = { clk_real, clk_mono, NULL };
	struct ctl_config cfg;
	struct sr_err e = { 0 };

	ctl_config_defaults(&cfg);
	cfg.state_dir = dir;
	cfg.listen_port = 0;
	cfg.data_dir = "data";
	cfg.agent_path = "/bin/false"; /* never started: the cloud is fake */
	cfg.provision_ms = 0;
	cfg.notice_ms = 2000;
	cfg.heartbeat_timeout_ms = 10000;
	cfg.boot_timeout_ms = 30000;
	cfg.manual_reconcile = 1;
	if (ctl__start_with(&cfg, &cloud, &clk, &ctl, &e))
		fail_msg("ctl_start: %s", e.msg);
	snprintf(base, sizeof base, "http://127.0.0.1:%d", ctl_port(ctl));
}

static void stop_fake(void)
{
	ctl_stop(ctl);
	ctl = NULL;
}

/* gang_no_store: the gang's heartbeats do not say its checkpoint
 * reached a store (tier 3, ckpt_store_ns), as a job without a bucket's;
 * false again for each test (fsetup). */
static bool gang_no_store;

static int fsetup(void **state)
{
	(void)state;
	sr_log_set_level(SR_LOG_ERROR);
	memset(&fc, 0, sizeof fc);
	fc.avail[0] = fc.avail[1] = true;
	gang_no_store = false;
	t_real = sr_time_real_ns();
	t_mono = 1000 * 1000 * MS;
	snprintf(dir, sizeof dir, "/tmp/sr-fakecloud-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	start_fake();
	return 0;
}

static int fteardown(void **state)
{
	char cmd[128];

	(void)state;
	stop_fake();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

static void pass(void)
{
	assert_int_equal(ctl__reconcile_once(ctl), 0);
}

/* ---- what the test sees ------------------------------------------------------ */

static const char job_spot[] =
	"name: t\nresources:\n  accelerators: V100:1\n  use_spot: true\n"
	"run: echo hi\nspotrun:\n  deadline: 100h\n  work: 2h\n";

static char *job_state(int64_t id)
{
	static char s[32];
	json_t *j = get_job(id);

	snprintf(s, sizeof s, "%s", json_string_value(json_object_get(j, "state")));
	json_decref(j);
	return s;
}

/* The job's node of `rank` that is not ended (0 if none); its state,
 * zone and end reason of the node with id `want` if given. */
struct nview {
	int64_t id;
	char state[16], zone[40], reason[40];
	int pool;
};

static int nodes_of(int64_t job, struct nview *v, int cap)
{
	json_t *j = get_job(job), *n;
	size_t i;
	int k = 0;

	json_array_foreach(json_object_get(j, "nodes"), i, n) {
		if (k == cap)
			break;
		v[k].id = json_integer_value(json_object_get(n, "id"));
		v[k].pool = (int)json_integer_value(json_object_get(n, "pool"));
		snprintf(v[k].state, sizeof v[k].state, "%s",
			 json_string_value(json_object_get(n, "state")));
		snprintf(v[k].zone, sizeof v[k].zone, "%s",
			 json_string_value(json_object_get(n, "zone")) ?: "");
		snprintf(v[k].reason, sizeof v[k].reason, "%s",
			 json_string_value(json_object_get(n, "end_reason")) ?: "");
		k++;
	}
	json_decref(j);
	return k;
}

static struct nview node_view(int64_t job, int64_t node)
{
	struct nview v[16], none = { 0 };
	int n = nodes_of(job, v, 16);

	for (int i = 0; i < n; i++) {
		if (v[i].id == node)
			return v[i];
	}
	fail_msg("node %lld not in job %lld", (long long)node, (long long)job);
	return none;
}

static int64_t live_node(int64_t job)
{
	json_t *j = get_job(job);
	int64_t id = first_node(j, 0);

	json_decref(j);
	return id;
}

static void agent_post(int64_t node, const char *what, json_t *body, long want)
{
	struct finst *x = inst_of(node);
	json_t *v = NULL;
	char p[96];

	assert_non_null(x);
	snprintf(p, sizeof p, "/v1/nodes/%lld/%s", (long long)node, what);
	assert_int_equal(jreq("POST", p, inst_token(x), body, &v), want);
	json_decref(v);
}

static void agent_register(int64_t node)
{
	agent_post(node, "register", json_object(), 200);
}

static void agent_exit(int64_t node, int attempt, int code, const char *cause)
{
	agent_post(node, "report", json_pack("{s:[{s:s,s:i,s:i,s:s}]}", "events",
		   "type", "exit", "attempt", attempt, "exit_code", code,
		   "cause", cause), 200);
}

/* A running workload's heartbeat body (the caller owns it). */
static json_t *heartbeat_body(int attempt, int step, int total, int ckpt)
{
	return json_pack("{s:s,s:i,s:i,s:i,s:i}", "workload", "running",
			 "attempt", attempt, "step", step, "total_steps", total,
			 "ckpt_step", ckpt);
}

static void agent_heartbeat(int64_t node, int attempt, int step, int total,
			    int ckpt)
{
	agent_post(node, "heartbeat", heartbeat_body(attempt, step, total, ckpt),
		   200);
}

static void agent_setup_done(int64_t node, int code)
{
	agent_post(node, "report", json_pack("{s:[{s:s,s:i}]}", "events",
		   "type", "setup_done", "exit_code", code), 200);
}

static int64_t job_int(int64_t id, const char *key)
{
	json_t *j = get_job(id);
	int64_t v = json_integer_value(json_object_get(j, key));

	json_decref(j);
	return v;
}

/* How many events of job `id` are of `type` (NULL: any) with a message
 * that contains `text` (NULL: any). */
static int count_events(int64_t id, const char *type, const char *text)
{
	json_t *v = NULL, *ev;
	char p[64];
	size_t i;
	int found = 0;

	snprintf(p, sizeof p, "/v1/jobs/%lld/events", (long long)id);
	assert_int_equal(jreq("GET", p, ctl_admin_token(ctl), NULL, &v), 200);
	json_array_foreach(json_object_get(v, "events"), i, ev) {
		const char *t = json_string_value(json_object_get(ev, "type"));
		const char *m = json_string_value(json_object_get(ev, "message"));

		if (getenv("FC_DEBUG"))
			fprintf(stderr, "event %s: %s\n", t, m ? m : "");
		if (t && (!type || !strcmp(t, type)) &&
		    (!text || (m && strstr(m, text))))
			found++;
	}
	json_decref(v);
	return found;
}

static bool has_event(int64_t id, const char *type, const char *text)
{
	return count_events(id, type, text) > 0;
}

/* The job's ledger figure `key` (the job view's "ledger": what `spotrun
 * cost`, /metrics and FOCUS read). */
static double ledger_num(int64_t id, const char *key)
{
	json_t *j = get_job(id);
	double v = json_number_value(json_object_get(json_object_get(j, "ledger"),
						     key));

	json_decref(j);
	return v;
}

/* An attempt whose every rank completed lost no work: no lost_work
 * event, nothing on the ledger (the README's flake, session 16: "7m41s
 * of cloud work lost" for a job SUCCEEDED on its first attempt). */
static void assert_nothing_lost(int64_t id)
{
	assert_int_equal(count_events(id, "lost_work", NULL), 0);
	assert_true(ledger_num(id, "lost_work_s") == 0.0);
	assert_true(ledger_num(id, "lost_attempts") == 0.0);
	assert_true(ledger_num(id, "lost_work_micros") == 0.0);
}

/* Pass until the job leaves PENDING and its rank-0 node is BOOTING. */
static int64_t to_booting(int64_t id)
{
	int64_t node;

	pass();
	assert_string_equal(job_state(id), "PROVISIONING");
	node = live_node(id);
	assert_true(node > 0);
	assert_string_equal(node_view(id, node).state, "REQUESTED");
	pass();
	assert_string_equal(node_view(id, node).state, "BOOTING");
	return node;
}

static int64_t to_running(int64_t id)
{
	int64_t node = to_booting(id);

	agent_register(node);
	assert_string_equal(node_view(id, node).state, "READY");
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	return node;
}

/* The cloud reclaims running node n1's pool: NOTICE -> CHECKPOINTING in
 * one pass, and the replacement placed at the notice (returned). */
static int64_t to_checkpointing(int64_t id, int64_t n1)
{
	int64_t n2;

	fc.avail[node_view(id, n1).pool] = false;
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "CHECKPOINTING");
	n2 = live_node(id);
	assert_true(n2 > n1);
	return n2;
}

/* A spot gang of two, launched: its nodes (v[0] rank 0) after two
 * passes.  Returns the job. */
static int64_t gang_of_two(struct nview v[4])
{
	int64_t id = create_job("name: t\nnum_nodes: 2\nresources:\n"
				"  accelerators: V100:1\n  use_spot: true\n"
				"run: echo hi\nspotrun:\n  deadline: 100h\n"
				"  work: 2h\n");

	pass();
	pass();
	assert_int_equal(nodes_of(id, v, 4), 2);
	return id;
}

/* ... both ranks registered and the gang RUNNING its first attempt. */
static int64_t gang_running(struct nview v[4])
{
	int64_t id = gang_of_two(v);

	agent_register(v[0].id);
	agent_register(v[1].id);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	return id;
}

/* ---- tests ------------------------------------------------------------------ */

/* A spot job: placed, launched, registered, running; its pool loses
 * capacity (notice), a node in the other zone is placed at once to
 * replace it, the workload checkpoints and exits, the noticed node is
 * terminated, and the job completes on the replacement. */
static void test_notice_replace_complete(void **state)
{
	struct nview a, b;
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	assert_string_equal(job_state(id), "PENDING");
	n1 = to_running(id);
	a = node_view(id, n1);
	assert_true(a.pool == 0 || a.pool == 1);
	assert_int_equal(fc.launches, 1);

	fc.avail[a.pool] = false; /* the cloud reclaims the pool */
	advance_ms(100);
	pass();
	/* noticed: NOTICE -> CHECKPOINTING in the same pass */
	assert_string_equal(job_state(id), "CHECKPOINTING");
	assert_string_equal(node_view(id, n1).state, "READY");
	/* the noticed node is doomed: its replacement is asked for now, in
	 * the other zone, and boots while the workload checkpoints */
	n2 = live_node(id);
	assert_true(n2 > n1);
	b = node_view(id, n2);
	assert_string_not_equal(b.zone, a.zone);
	agent_exit(n1, 1, 143, "preempted");
	advance_ms(100);
	pass();
	/* PREEMPTED -> RECOVERING -> PROVISIONING: no rank is missing */
	assert_string_equal(job_state(id), "PROVISIONING");
	a = node_view(id, n1);
	assert_string_equal(a.state, "TERMINATED");
	assert_string_equal(a.reason, "preempted");
	assert_false(inst_of(n1)->alive);
	assert_int_equal(live_node(id), n2);
	pass();
	assert_string_equal(node_view(id, n2).state, "BOOTING");
	agent_register(n2);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	agent_exit(n2, 2, 0, "completed");
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_string_equal(node_view(id, n2).state, "TERMINATED");
	assert_int_equal(fc.launches, 2);
	assert_int_equal(alive_instances(), 0);
}

/* A launch fails for lack of capacity: the node ends, the pool is
 * marked, and the next placement goes to another pool. */
static void test_capacity_error_next_pool(void **state)
{
	struct nview a, b;
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	a = node_view(id, n1);
	fc.fail_launch[a.pool] = 1; /* the market said yes; the launch says no */
	pass(); /* the launch fails; the same pass places again */
	a = node_view(id, n1);
	assert_string_equal(a.state, "TERMINATED");
	assert_string_equal(a.reason, "capacity");
	assert_int_equal(fc.launches, 0);
	n2 = live_node(id);
	assert_true(n2 > n1);
	b = node_view(id, n2);
	assert_int_not_equal(b.pool, a.pool);
	pass();
	assert_string_equal(node_view(id, n2).state, "BOOTING");
	assert_int_equal(fc.launches, 1);
}

/* A node that never registers is LOST after the boot timeout (not
 * before), its instance is terminated, and a new node is placed. */
static void test_slow_boot_lost_and_replaced(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	n1 = to_booting(id);
	pass(); /* the boot's silence counts from here */
	advance_ms(29000);
	pass();
	assert_string_equal(node_view(id, n1).state, "BOOTING");
	advance_ms(2000);
	pass();
	assert_string_equal(node_view(id, n1).state, "LOST");
	assert_string_equal(node_view(id, n1).reason, "never registered");
	assert_false(inst_of(n1)->alive);
	assert_string_equal(job_state(id), "PROVISIONING");
	pass();
	n2 = live_node(id);
	assert_true(n2 > n1);
}

/* A running node that falls silent is LOST; the job recovers on a new
 * node. */
static void test_silent_node_recovers(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	advance_ms(11000);
	pass();
	assert_string_equal(node_view(id, n1).state, "LOST");
	assert_string_equal(node_view(id, n1).reason, "heartbeat timeout");
	assert_string_equal(job_state(id), "PROVISIONING");
	n2 = live_node(id);
	assert_true(n2 > n1);
}

/* The cloud lists a running node's instance terminated, with no notice
 * (someone ended it outside spotrun): the node is LOST on that pass, not
 * after the heartbeat timeout, and the job recovers (session 24). */
static void test_instance_terminated_outside_is_lost_at_once(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	inst_of(n1)->alive = false; /* listed "terminated" from now */
	advance_ms(1000);
	pass();
	assert_string_equal(node_view(id, n1).state, "LOST");
	assert_string_equal(node_view(id, n1).reason, "instance terminated");
	assert_int_equal(job_int(id, "preemptions"), 0);
	assert_string_equal(job_state(id), "PROVISIONING");
	n2 = live_node(id);
	assert_true(n2 > n1);
}

/* Node n1's instance out of the listings for 55 s while its agent beats
 * every 5 s (step *hb on): still READY. */
static void unlisted_55s(int64_t id, int64_t n1, int64_t *hb)
{
	snprintf(inst_of(n1)->cluster, sizeof inst_of(n1)->cluster, "other");
	for (int s = 0; s < 55; s += 5) {
		pass();
		advance_ms(5000);
		agent_heartbeat(n1, 1, (int)++*hb, 1000, 0);
	}
	pass();
	assert_string_equal(node_view(id, n1).state, "READY");
}

/* A recorded instance the listings do not show (eventual consistency:
 * EC2 lists a new instance after a while; or gone from them) is kept
 * while its agent heart-beats, for a minute; then it is LOST. */
static void test_instance_unlisted_for_a_minute_is_lost(void **state)
{
	int64_t id, n1, n2, hb = 0;
	char cluster[64];

	(void)state;
	id = create_job(job_od); /* on-demand: no policy move meanwhile */
	n1 = to_running(id);
	snprintf(cluster, sizeof cluster, "%s", inst_of(n1)->cluster);
	/* not listed for 55 s, its agent beating: kept */
	unlisted_55s(id, n1, &hb);
	/* listed again once: the minute starts over */
	snprintf(inst_of(n1)->cluster, sizeof inst_of(n1)->cluster, "%s", cluster);
	pass();
	unlisted_55s(id, n1, &hb);
	advance_ms(6000);
	agent_heartbeat(n1, 1, (int)++hb, 1000, 0);
	pass();
	assert_string_equal(node_view(id, n1).state, "LOST");
	assert_string_equal(node_view(id, n1).reason, "instance not listed");
	for (int i = 0; i < 3; i++)
		pass();
	n2 = live_node(id);
	assert_true(n2 > n1);
}

/* A notice while the node boots: nothing runs there yet, so it goes at
 * once and another node is placed. */
static void test_notice_while_booting(void **state)
{
	int64_t id, n1;
	struct nview a;

	(void)state;
	id = create_job(job_spot);
	n1 = to_booting(id);
	a = node_view(id, n1);
	fc.avail[a.pool] = false;
	pass();
	pass();
	a = node_view(id, n1);
	assert_string_equal(a.state, "TERMINATED");
	assert_string_equal(a.reason, "preempted");
	assert_string_equal(job_state(id), "PROVISIONING");
	assert_true(live_node(id) > n1);
	/* a preemption that lost no work: counted, and said so */
	assert_int_equal(job_int(id, "preemptions"), 1);
	assert_int_equal(count_events(id, "preempted", "before it ran the job "
				      "(booting)"), 1);
}

/* The replacement placed at a notice is reclaimed too, and gone before
 * the first node's final checkpoint ends: two nodes reclaimed, two
 * preemptions (one while training, one before it ran), each counted
 * once, at its notice - the demo's 14 notices against 12 preemptions. */
static void test_replacement_reclaimed_before_it_ran(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	n2 = to_checkpointing(id, n1);
	assert_int_equal(job_int(id, "preemptions"), 1);
	assert_int_equal(count_events(id, "preempted", "while training attempt "
				      "1"), 1);
	pass();
	agent_register(n2);
	fc.avail[node_view(id, n2).pool] = false;
	advance_ms(100);
	pass();
	assert_int_equal(job_int(id, "preemptions"), 2);
	assert_string_equal(job_state(id), "CHECKPOINTING");
	inst_of(n2)->alive = false; /* gone before n1 has stopped */
	advance_ms(10);
	pass();
	assert_string_equal(node_view(id, n2).state, "TERMINATED");
	assert_string_equal(node_view(id, n2).reason, "preempted");
	agent_exit(n1, 1, 143, "preempted");
	advance_ms(100);
	pass();
	assert_string_not_equal(job_state(id), "CHECKPOINTING");
	assert_int_equal(job_int(id, "preemptions"), 2);
	assert_int_equal(count_events(id, "preempted", NULL), 2);
	assert_int_equal(count_events(id, "preempted", "before it ran the job "
				      "(ready, the attempt not started)"), 1);
	assert_int_equal(count_events(id, "stopped", NULL), 1);
}

/* The node's agent tells the notice first (a cloud that tells only the
 * instance), then the provider lists it: one preemption.  A workload
 * that exits on a notice no word reached the daemon of: one more. */
static void test_notice_counted_once_per_node(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	agent_post(n1, "report", json_pack("{s:[{s:s,s:s}]}", "events",
		   "type", "notice", "source", "imds"), 200);
	assert_int_equal(job_int(id, "preemptions"), 1);
	fc.avail[node_view(id, n1).pool] = false;
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "CHECKPOINTING");
	assert_int_equal(job_int(id, "preemptions"), 1);
	agent_post(n1, "report", json_pack("{s:[{s:s,s:s}]}", "events",
		   "type", "notice", "source", "imds"), 200);
	agent_exit(n1, 1, 143, "preempted");
	fc.avail[node_view(id, n1).pool] = true;
	for (int i = 0; i < 10 && strcmp(job_state(id), "RUNNING"); i++) {
		n2 = live_node(id);
		if (n2 > 0 && !strcmp(node_view(id, n2).state, "BOOTING"))
			agent_register(n2);
		advance_ms(100);
		pass();
	}
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(job_int(id, "preemptions"), 1);
	n2 = live_node(id);
	agent_exit(n2, 2, 143, "preempted"); /* no notice came before */
	advance_ms(100);
	pass();
	assert_string_not_equal(job_state(id), "RUNNING");
	assert_int_equal(job_int(id, "preemptions"), 2);
	assert_int_equal(count_events(id, "preempted", NULL), 2);
}

/* The instance vanishes after its notice, before the notice deadline:
 * the node ends at once, and with its rank gone the job recovers
 * without waiting for the deadline. */
static void test_instance_vanishes_after_notice(void **state)
{
	int64_t id, n1;
	struct nview a;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	a = node_view(id, n1);
	fc.avail[a.pool] = false;
	pass();
	assert_string_equal(job_state(id), "CHECKPOINTING");
	inst_of(n1)->alive = false;
	advance_ms(10);
	pass();
	assert_string_equal(node_view(id, n1).state, "TERMINATED");
	assert_string_equal(node_view(id, n1).reason, "preempted");
	assert_string_equal(job_state(id), "PROVISIONING");
	assert_true(live_node(id) > n1);
}

/* The cloud lists the noticed node as shutting down long before its
 * deadline (GCE shows STOPPING from its notice; the agent runs on): the
 * node is kept for its agent's last reports.  Here the workload had
 * finished as the notice came: its exit lands (on the old rule the node
 * was ended at once, the report got 409 and the job ran again) and the
 * job ends SUCCEEDED after one attempt. */
static void test_shutting_down_node_keeps_its_last_reports(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	n2 = to_checkpointing(id, n1);
	inst_of(n1)->stopping = true;
	advance_ms(10);
	pass();
	assert_string_equal(node_view(id, n1).state, "READY");
	assert_string_equal(job_state(id), "CHECKPOINTING");
	agent_exit(n1, 1, 0, "completed");
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_int_equal(job_int(id, "attempt"), 1);
	assert_string_equal(node_view(id, n1).state, "TERMINATED");
	assert_string_equal(node_view(id, n2).state, "TERMINATED");
}

/* A noticed node shutting down whose agent says nothing more is ended at
 * its notice deadline (the cloud's, 2 s), not before; its replacement,
 * noticed and shutting down before it ran anything, owes no report and
 * goes at once. */
static void test_shutting_down_node_ends_at_its_deadline(void **state)
{
	int64_t id, n1, n2, t0;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	t0 = t_real + 100 * MS; /* to_checkpointing's notice: deadline t0 + 2 s */
	n2 = to_checkpointing(id, n1);
	pass(); /* n2 launched */
	inst_of(n2)->noticed = true;
	advance_ms(10);
	pass();
	assert_string_equal(node_view(id, n2).state, "BOOTING");
	inst_of(n2)->stopping = true;
	pass();
	assert_string_equal(node_view(id, n2).state, "TERMINATED");
	assert_string_equal(node_view(id, n2).reason, "preempted");
	inst_of(n1)->stopping = true;
	advance_ms(2000 - 10 - 10);
	pass();
	assert_int_equal(t_real, t0 + 1990 * MS);
	assert_string_equal(node_view(id, n1).state, "READY");
	assert_string_equal(job_state(id), "CHECKPOINTING");
	advance_ms(10);
	pass();
	assert_string_equal(node_view(id, n1).state, "TERMINATED");
	assert_string_equal(node_view(id, n1).reason, "preempted");
	assert_string_not_equal(job_state(id), "CHECKPOINTING");
}

/* The time field `key` of job id (node 0) or of its node `node`, as the
 * API writes it, against the injected clock's now. */
static void assert_stamped_now(int64_t id, int64_t node, const char *key)
{
	json_t *j = get_job(id), *n, *o = j;
	char want[40];
	size_t i;

	json_array_foreach(json_object_get(j, "nodes"), i, n) {
		if (node && json_integer_value(json_object_get(n, "id")) == node)
			o = n;
	}
	assert_true(!node || o != j);
	assert_true(sr_time_format_rfc3339(t_real, 3, want, sizeof want) > 0);
	assert_string_equal(json_string_value(json_object_get(o, key)), want);
	json_decref(j);
}

/* Every time the API stamps on a row the reconciler ages - a job's
 * creation, a node's registration and heartbeats - comes from the
 * reconciler's clock (ctl__now), as a node report's does: here that
 * clock runs a day ahead of the real one. */
static void test_routes_stamp_the_reconcilers_clock(void **state)
{
	int64_t id, n1;

	(void)state;
	advance_ms(INT64_C(86400000));
	id = create_job(job_spot);
	assert_stamped_now(id, 0, "created_at");
	n1 = to_booting(id);
	advance_ms(1000);
	agent_register(n1);
	assert_stamped_now(id, n1, "last_heartbeat_at");
	advance_ms(1000);
	agent_heartbeat(n1, 0, 0, 0, 0);
	assert_stamped_now(id, n1, "last_heartbeat_at");
}

/* A gang of two: rank 1's instance alone is interrupted and vanishes
 * before its deadline (2 s) while kept rank 0 still takes its final
 * checkpoint.  CHECKPOINTING waits for rank 0 until the vanished node's
 * cloud deadline plus the stop grace (5 s), not until the notice plus
 * two graces (issue 33: the gang stopped 10 s after every notice). */
static void test_gang_waits_to_the_ended_nodes_deadline(void **state)
{
	struct nview v[4];
	int64_t id, t0;

	(void)state;
	id = gang_running(v);
	inst_of(v[1].id)->noticed = true;
	t0 = t_real;
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "CHECKPOINTING");
	inst_of(v[1].id)->alive = false;
	advance_ms(10);
	pass();
	assert_string_equal(node_view(id, v[1].id).state, "TERMINATED");
	/* before the deadline plus the grace: rank 0 is waited for */
	advance_ms(2000 + 4000 - 110);
	pass();
	assert_string_equal(job_state(id), "CHECKPOINTING");
	/* the deadline (2.1 s) plus the grace (5 s) has passed, the notice
	 * plus two graces (10.1 s) has not: the gang moves on */
	advance_ms(1300);
	assert_int_equal(t_real, t0 + 7300 * MS);
	pass();
	assert_string_not_equal(job_state(id), "CHECKPOINTING");
	assert_string_equal(node_view(id, v[0].id).state, "READY");
}

/* The live warm spare of job id (0: none): READY or booting, no rank. */
static int64_t spare_of(int64_t id)
{
	json_t *j = get_job(id), *n;
	int64_t sp = 0;
	size_t i;

	json_array_foreach(json_object_get(j, "nodes"), i, n) {
		const char *s = json_string_value(json_object_get(n, "state"));

		if (json_is_true(json_object_get(n, "spare")) &&
		    strcmp(s, "TERMINATED") && strcmp(s, "LOST"))
			sp = json_integer_value(json_object_get(n, "id"));
	}
	json_decref(j);
	return sp;
}

/* Rank 0's node n1 of RUNNING job id is noticed: in one pass the rank
 * goes to spare sp (no launch), and once n1's workload exits the next
 * attempt runs there. */
static void notice_to_spare(int64_t id, int64_t n1, int64_t sp)
{
	int launches = fc.launches;

	inst_of(n1)->noticed = true;
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "CHECKPOINTING");
	assert_true(has_event(id, "spare_adopted", "takes rank 0"));
	assert_int_equal(live_node(id), sp);
	assert_int_equal(fc.launches, launches);
	agent_exit(n1, 1, 143, "preempted");
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(job_int(id, "attempt"), 2);
	assert_int_equal(job_int(id, "preemptions"), 1);
}

/* Warm spares (issue 33): a RUNNING spot job with spotrun.spares: 1
 * gets a spare, bound to no rank, in the cheapest open spot pool of its
 * region.  The spare's own notice ends it and counts no preemption of
 * the job; the next one goes to the other pool (the noticed one is
 * marked).  At the gang's notice the rank goes to the READY spare - no
 * node is launched for it - and the job runs its next attempt and
 * completes there; the spare kept after that ends with the job. */
static void test_spare_takes_the_noticed_rank(void **state)
{
	int64_t id, n1, s1, s2, s3;

	(void)state;
	id = create_job("name: t\nresources:\n  accelerators: V100:1\n"
			"  use_spot: true\nsetup: echo s\nrun: echo hi\n"
			"spotrun:\n  deadline: 100h\n  work: 2h\n  spares: 1\n");
	n1 = to_running(id);
	/* the pass that started the run launched the spare */
	s1 = spare_of(id);
	assert_true(s1 > n1);
	assert_true(has_event(id, "spare", "warm spare 1 of 1"));
	assert_int_equal(node_view(id, s1).pool, 0);
	pass();
	assert_string_equal(node_view(id, s1).state, "BOOTING");
	agent_register(s1);
	assert_string_equal(node_view(id, s1).state, "READY");
	/* the spare's notice: it goes, the job keeps running */
	inst_of(s1)->noticed = true;
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	assert_string_equal(node_view(id, s1).state, "TERMINATED");
	assert_string_equal(node_view(id, s1).reason, "preempted");
	assert_int_equal(job_int(id, "preemptions"), 0);
	pass();
	s2 = spare_of(id);
	assert_true(s2 > s1);
	assert_int_equal(node_view(id, s2).pool, 1);
	pass();
	agent_register(s2);
	agent_setup_done(s2, 0);
	/* the gang's node is noticed: its rank goes to the spare */
	notice_to_spare(id, n1, s2);
	assert_string_equal(node_view(id, n1).state, "TERMINATED");
	pass();
	s3 = spare_of(id);
	assert_true(s3 > s2);
	agent_exit(s2, 2, 0, "completed");
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_string_equal(node_view(id, s3).state, "TERMINATED");
	assert_int_equal(alive_instances(), 0);
}

/* The plan's own choice (issue 33): a job without spotrun.spares keeps
 * what `spotrun plan` chooses (place_spare.c, market/spare.h): none when
 * a spare's bill is more than the delay it saves is worth (the gang's
 * own $/h), one when the job's hour of delay is dear enough. */
static void test_plan_chooses_the_spares(void **state)
{
	static const char job[] =
		"name: t\nresources:\n  accelerators: V100:1\n  use_spot: true\n"
		"run: echo hi\nspotrun:\n  deadline: 100h\n  work: 2h\n%s";
	char spec[320];
	int64_t a, b;

	(void)state;
	snprintf(spec, sizeof spec, job, "");
	a = create_job(spec);
	to_running(a);
	pass();
	assert_int_equal(spare_of(a), 0);
	assert_int_equal(count_events(a, "spare", NULL), 0);
	snprintf(spec, sizeof spec, job, "  delay_cost_per_hour: 10000\n");
	b = create_job(spec);
	to_running(b);
	assert_true(spare_of(b) > 0);
	assert_true(has_event(b, "spare", "warm spare 1 of 1"));
	assert_int_equal(spare_of(a), 0);
}

/* Early replacement (issue 33, arm 3): a rebalance recommendation on the
 * node of a RUNNING spot job that keeps no spare makes the reconciler
 * launch its replacement before any notice - a spare, in another pool
 * than the node's - once (a pass again launches nothing); at the notice
 * the rank moves onto it and no node is launched.  A recommendation no
 * notice follows: its replacement is released once the horizon passed
 * (its bill then exceeds the downtime it saves: 480 s at $100/h of delay
 * against $0.92/h, ~14.5 cloud h, 3600x here). */
static void test_rebalance_launches_the_replacement_early(void **state)
{
	json_t *rb = json_pack("{s:[{s:s}]}", "events", "type", "rebalance");
	int64_t id, n1, s1, s2;

	(void)state;
	id = create_job("name: t\nresources:\n  accelerators: V100:1\n"
			"  use_spot: true\nsetup: echo s\nrun: echo hi\n"
			"spotrun:\n  deadline: 100h\n  work: 2h\n"
			"  delay_cost_per_hour: 100\n");
	n1 = to_running(id);
	pass();
	assert_int_equal(spare_of(id), 0);
	json_incref(rb);
	agent_post(n1, "report", rb, 200);
	pass();
	s1 = spare_of(id);
	assert_true(s1 > n1);
	assert_true(has_event(id, "early_replacement", "a rebalance recommendation"));
	assert_int_not_equal(node_view(id, s1).pool, node_view(id, n1).pool);
	pass();
	agent_register(s1);
	agent_setup_done(s1, 0);
	pass();
	assert_int_equal(spare_of(id), s1);
	assert_int_equal(count_events(id, "early_replacement", NULL), 1);
	notice_to_spare(id, n1, s1);
	pass();
	assert_int_equal(spare_of(id), 0);
	/* a recommendation no notice follows */
	agent_post(s1, "report", rb, 200);
	pass();
	s2 = spare_of(id);
	assert_true(s2 > s1);
	pass();
	agent_register(s2);
	for (int i = 0; i < 3; i++) {
		advance_ms(5000);
		agent_heartbeat(s1, 2, 1, 10, 0);
		agent_heartbeat(s2, 0, 0, 0, 0);
		pass();
		assert_string_equal(job_state(id), "RUNNING");
	}
	assert_int_equal(spare_of(id), 0);
	assert_string_equal(node_view(id, s2).reason, "released");
	assert_true(has_event(id, "spare_released", "released"));
	assert_int_equal(count_events(id, "early_replacement", NULL), 2);
	agent_exit(s1, 2, 0, "completed");
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_int_equal(alive_instances(), 0);
}

/* The action of the directive node gets on a heartbeat, into buf. */
static const char *directive_action(int64_t node, char *buf, size_t n)
{
	struct finst *x = inst_of(node);
	json_t *v = NULL;
	char p[96];

	assert_non_null(x);
	snprintf(p, sizeof p, "/v1/nodes/%lld/heartbeat", (long long)node);
	assert_int_equal(jreq("POST", p, inst_token(x), json_pack("{s:s}",
			 "workload", "running"), &v), 200);
	snprintf(buf, n, "%s", json_string_value(json_object_get(
		 json_object_get(v, "directive"), "action")) ?: "");
	json_decref(v);
	return buf;
}

static const char job_through[] =
	"name: t\nresources:\n  accelerators: V100:1\n  use_spot: true\n"
	"setup: echo s\nrun: echo hi\nspotrun:\n  deadline: 100h\n"
	"  work: 2h\n  train_through_notice: true\n";

/* A job that trains through notices, running on n1 (*n1), whose node is
 * noticed: it stays RUNNING.  Returns the job. */
static int64_t through_noticed(int64_t *n1)
{
	int64_t id = create_job(job_through);

	*n1 = to_running(id);
	inst_of(*n1)->noticed = true;
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	return id;
}

/* Training through a notice (issue 33, arm 5): the noticed node's job
 * stays RUNNING - its node keeps its `run` - while the replacement
 * boots, registers (told to idle: its setup runs ahead) and reports its
 * setup; then the gang stops as at any notice and the next attempt runs
 * on the replacement. */
static void test_train_through_until_replacement_ready(void **state)
{
	int64_t id, n1, n2;
	char a[16];

	(void)state;
	id = through_noticed(&n1);
	assert_true(has_event(id, "train_through", "training through"));
	assert_string_equal(directive_action(n1, a, sizeof a), "run");
	n2 = live_node(id);
	assert_true(n2 > n1);
	pass();
	agent_register(n2);
	assert_string_equal(directive_action(n2, a, sizeof a), "idle");
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "RUNNING"); /* setup not done */
	agent_setup_done(n2, 0);
	pass();
	assert_true(has_event(id, "train_through_end", "replacement is ready"));
	assert_string_equal(job_state(id), "CHECKPOINTING");
	assert_string_equal(directive_action(n1, a, sizeof a), "exit");
	agent_exit(n1, 1, 143, "preempted");
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(job_int(id, "attempt"), 2);
	assert_int_equal(live_node(id), n2);
	assert_int_equal(job_int(id, "preemptions"), 1);
}

/* The completion lands while the pass decides to stop the attempt: the
 * exits the step read said "running", and rank 0's exit 0 was committed
 * before the stop's transaction (here by a trigger on the event the
 * train-through end writes in between: the race of session 16's README
 * flake, made deterministic).  The stop reads the exits again in its
 * transaction: RUNNING -> SUCCEEDED, no NOTICE, nothing lost. */
static void test_completion_landing_mid_step_finishes_the_job(void **state)
{
	struct sr_err e = { 0 };
	sqlite3 *db = NULL;
	int64_t id, n1, n2;
	char sql[512];

	(void)state;
	id = through_noticed(&n1);
	n2 = live_node(id);
	pass();
	agent_register(n2);
	assert_int_equal(ctl_db_open(ctl_db_path(ctl), &db, &e), 0);
	snprintf(sql, sizeof sql, "CREATE TRIGGER exit_mid_step AFTER INSERT ON"
		 " events WHEN NEW.type='train_through_end' BEGIN INSERT INTO"
		 " exits(job_id, attempt, rank, node_id, exit_code, signal, cause,"
		 " ts_ns) VALUES (%lld, 1, 0, %lld, 0, 0, 'completed', NEW.ts_ns);"
		 " END", (long long)id, (long long)n1);
	assert_int_equal(ctl_db_exec(db, sql, &e), 0);
	sqlite3_close_v2(db);
	agent_setup_done(n2, 0);
	advance_ms(100);
	pass();
	assert_true(has_event(id, "train_through_end", "replacement is ready"));
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_false(has_event(id, "transition", "got a preemption notice"));
	assert_int_equal(job_int(id, "attempt"), 1);
	assert_nothing_lost(id);
}

/* ... and when the replacement is not ready by the last safe moment (the
 * deadline, 2 s after the notice here, less a quarter of the lead), the
 * gang stops then. */
static void test_train_through_stops_at_the_last_safe_moment(void **state)
{
	int64_t id, n1;

	(void)state;
	id = through_noticed(&n1);
	advance_ms(1400);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	advance_ms(150);
	pass();
	assert_true(has_event(id, "train_through_end", "last safe moment"));
	assert_string_equal(job_state(id), "CHECKPOINTING");
}

/* Launch groups (cloud/compute.h): a gang's two ranks placed in one
 * pass are launched as one group - one key (rank 0's launch key), size
 * 2, index = rank.  On a provider whose groups are one allocation
 * (CLOUD_CAP_GROUP_ALLOC), a notice to rank 1 alone places both ranks
 * again at once, as one new group; the replacements' launches carry it. */
static void test_gang_is_one_launch_group(void **state)
{
	struct nview v[4];
	struct finst *a, *b;
	int64_t id;
	int n;

	(void)state;
	stop_fake();
	fc.group_alloc = true;
	start_fake();
	id = gang_of_two(v);
	a = inst_of(v[0].id);
	b = inst_of(v[1].id);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->gsize, 2);
	assert_int_equal(b->gsize, 2);
	assert_string_equal(a->gkey, a->key); /* rank 0's key */
	assert_string_equal(b->gkey, a->key);
	assert_int_equal(a->gindex, 0);
	assert_int_equal(b->gindex, 1);
	agent_register(v[0].id);
	agent_register(v[1].id);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	/* rank 1's notice alone: the allocation ends with it, so rank 0 is
	 * placed again too, with rank 1, in one pass */
	inst_of(v[1].id)->noticed = true;
	advance_ms(100);
	pass();
	pass();
	n = nodes_of(id, v, 4);
	assert_int_equal(n, 4);
	a = inst_of(v[2].id);
	b = inst_of(v[3].id);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->gsize, 2);
	assert_string_equal(a->gkey, a->key);
	assert_string_equal(b->gkey, a->key);
	assert_int_equal(a->gindex + b->gindex, 1);
}

/* ... and when the cloud takes the noticed node before that (its
 * instance gone), the gang stops at once - its rank's replacement has
 * run nothing of the attempt, so CHECKPOINTING waits for no exit of it
 * and the next attempt starts as soon as the replacement is up. */
static void test_train_through_node_taken_early(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = through_noticed(&n1);
	n2 = live_node(id);
	assert_true(n2 > n1);
	inst_of(n1)->alive = false;
	advance_ms(10);
	pass();
	assert_string_equal(node_view(id, n1).state, "TERMINATED");
	assert_true(has_event(id, "transition", "taken while the gang trained"));
	assert_string_equal(job_state(id), "PROVISIONING");
	agent_register(n2);
	agent_setup_done(n2, 0);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(job_int(id, "attempt"), 2);
}

/* Cancel: every node is terminated, the job is CANCELLED. */
static void test_cancel(void **state)
{
	json_t *v = NULL;
	char p[64];
	int64_t id, n1;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	snprintf(p, sizeof p, "/v1/jobs/%lld/cancel", (long long)id);
	assert_int_equal(jreq("POST", p, ctl_admin_token(ctl), NULL, &v), 202);
	json_decref(v);
	pass();
	assert_string_equal(job_state(id), "CANCELLED");
	assert_string_equal(node_view(id, n1).state, "TERMINATED");
	assert_int_equal(alive_instances(), 0);
}

/* A crash restarts in place up to max_restarts, then FAILED with the
 * workload's code. */
static void test_crash_then_failed(void **state)
{
	int64_t id, n1;
	json_t *j;

	(void)state;
	id = create_job("name: t\nresources:\n  accelerators: V100:1\n"
			"  use_spot: true\nrun: echo hi\nspotrun:\n"
			"  deadline: 100h\n  work: 2h\n  max_restarts: 1\n");
	n1 = to_running(id);
	agent_exit(n1, 1, 3, "crashed");
	pass();
	/* RECOVERING with a healthy node: back to PROVISIONING, then RUNNING */
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(fc.launches, 1);
	agent_exit(n1, 2, 3, "crashed");
	pass();
	j = get_job(id);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "FAILED");
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 3);
	json_decref(j);
	assert_int_equal(alive_instances(), 0);
}

/* The daemon dies in the middle of a launch (before the instance was
 * recorded), and again right after one: after each restart the node is
 * launched exactly once in all. */
static void test_crash_mid_provision_no_double_launch(void **state)
{
	int64_t id, n1;

	(void)state;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	fc.die_before_commit = true;
	/* the cloud starts the instance, but the daemon dies before its
	 * answer is recorded: the node is still QUEUED at the restart */
	pass();
	assert_int_equal(fc.launches, 1);
	assert_string_equal(node_view(id, n1).state, "QUEUED");
	stop_fake();
	start_fake();
	pass();
	/* the same idempotency key: the cloud answers with the instance it
	 * started - no second launch, and the leak sweep left it alone */
	assert_int_equal(live_node(id), n1);
	assert_string_equal(node_view(id, n1).state, "BOOTING");
	assert_int_equal(fc.launches, 1);
	assert_true(inst_of(n1)->alive);
	assert_string_equal(inst_of(n1)->token, fc.died_token);
	/* its agent (booted with the first try's secret) is accepted */
	agent_register(n1);
	assert_string_equal(node_view(id, n1).state, "READY");
	/* a restart after the launch committed: nothing is launched again */
	stop_fake();
	start_fake();
	for (int i = 0; i < 5; i++)
		pass();
	assert_int_equal(fc.launches, 1);
	assert_string_equal(node_view(id, n1).state, "READY");
}

/* The same key always goes with the same parameters: a launch whose
 * answer was lost is sent again after a restart with exactly what the
 * first attempt sent (kept, sealed, in node_launch), even though the
 * bootstrap text would now be made differently - no
 * IdempotentParameterMismatch, no second instance. */
static void test_relaunch_sends_kept_parameters(void **state)
{
	int64_t id, n1;

	(void)state;
	fc.vary_boot = true;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	fc.die_before_commit = true;
	pass();
	assert_int_equal(fc.launches, 1);
	assert_int_equal(fc.boots, 1);
	stop_fake();
	start_fake();
	pass();
	assert_int_equal(fc.mismatches, 0);
	assert_int_equal(fc.boots, 1); /* recalled, not made again */
	assert_int_equal(fc.launches, 1);
	assert_int_equal(live_node(id), n1);
	assert_string_equal(node_view(id, n1).state, "BOOTING");
	/* recorded: the kept parameters are dropped */
	{
		int64_t kept = -1;
		struct sr_err e = { 0 };

		assert_int_equal(store_query_i64(ctl__store(ctl), "SELECT count(*)"
						 " FROM node_launch WHERE node_id"
						 " = ?1", n1, &kept, &e), 1);
		assert_int_equal(kept, 0);
	}
}

/* A terminate that fails leaves the instance running: it is retried on
 * every pass until the cloud confirms, and after a restart the sweep
 * terminates every recently ended node's instance again. */
static void test_leaked_instances_swept(void **state)
{
	int64_t id, n1;
	int before;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	fc.term_fail = true;
	agent_exit(n1, 1, 0, "completed");
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_true(inst_of(n1)->alive); /* leaked */
	before = fc.terminates;
	pass();
	assert_true(fc.terminates > before); /* retried */
	assert_true(inst_of(n1)->alive);
	fc.term_fail = false;
	pass();
	assert_false(inst_of(n1)->alive);
	/* a crash left it running again (as if the terminate were lost) */
	inst_of(n1)->alive = true;
	stop_fake();
	start_fake();
	recon__sweep_orphans(ctl, ctl__store(ctl));
	assert_false(inst_of(n1)->alive);
	/* and the tag-based sweep of every node pass: an instance of this
	 * cluster that no live node holds is terminated */
	inst_of(n1)->alive = true;
	before = fc.terminates;
	pass();
	assert_false(inst_of(n1)->alive);
	assert_true(fc.terminates > before);
}

/* The API throttles: the node stays REQUESTED, launches wait out a
 * backoff with jitter (never in the same instant), then it starts once. */
static void test_throttle_backs_off(void **state)
{
	int64_t id, n1;

	(void)state;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	fc.err_code = -EBUSY;
	fc.err_n = 2;
	pass();
	assert_string_equal(node_view(id, n1).state, "REQUESTED");
	assert_int_equal(fc.err_n, 1);
	pass(); /* same instant: the backoff holds the launch */
	assert_int_equal(fc.err_n, 1);
	advance_ms(1000); /* the first wait is 0.5..1 s */
	pass();
	assert_int_equal(fc.err_n, 0);
	assert_string_equal(node_view(id, n1).state, "REQUESTED");
	advance_ms(2000); /* the second, 1..2 s */
	pass();
	assert_string_equal(node_view(id, n1).state, "BOOTING");
	assert_int_equal(live_node(id), n1);
	assert_int_equal(fc.launches, 1);
}

/* The cloud refuses the credentials: a job-level error with the cloud's
 * message, no retry. */
static void test_auth_error_fails_job(void **state)
{
	int64_t id;
	json_t *j;
	const char *msg;

	(void)state;
	id = create_job(job_spot);
	pass();
	fc.err_code = -EACCES;
	fc.err_n = 1;
	pass();
	pass();
	j = get_job(id);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "FAILED");
	msg = json_string_value(json_object_get(j, "message"));
	assert_non_null(msg);
	assert_non_null(strstr(msg, "UnauthorizedOperation"));
	json_decref(j);
	assert_int_equal(fc.launches, 0);
}

/* A cloud whose launch call answers later (-EINPROGRESS) and whose
 * instance boots for ten minutes ("pending"): the node stays REQUESTED,
 * then BOOTING without a boot timeout while the cloud boots it; the
 * timeout counts from when the instance runs. */
static void test_async_launch_and_slow_cloud_boot(void **state)
{
	int64_t id, n1;

	(void)state;
	fc.async = true;
	fc.boot_pending = true;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	pass(); /* RunInstances in flight: QUEUED, not timed */
	assert_string_equal(node_view(id, n1).state, "QUEUED");
	assert_int_equal(fc.launches, 0);
	advance_ms(10 * 60000); /* a slow cloud API: ten minutes */
	pass(); /* answered: recorded, the cloud boots it */
	assert_string_equal(node_view(id, n1).state, "PENDING");
	assert_int_equal(fc.launches, 1);
	for (int i = 0; i < 20; i++) { /* ten minutes of "pending" */
		advance_ms(30000);
		pass();
	}
	assert_string_equal(node_view(id, n1).state, "PENDING");
	inst_of(n1)->pending = false; /* running: the agent has 30 s */
	pass();
	assert_string_equal(node_view(id, n1).state, "BOOTING");
	advance_ms(29000);
	pass();
	assert_string_equal(node_view(id, n1).state, "BOOTING");
	advance_ms(2000);
	pass();
	assert_string_equal(node_view(id, n1).state, "LOST");
	assert_int_equal(fc.launches, 1);
}

/* QUEUED -> TERMINATED: the cloud answers a queued launch with a
 * capacity error (the pool is marked, the next launch goes elsewhere);
 * PENDING -> READY: an agent may register while the cloud still reports
 * its instance as booting; a restart keeps PENDING (the phase is in the
 * database) and no boot timeout runs meanwhile. */
static void test_queued_capacity_then_pending_ready(void **state)
{
	int64_t id, n1, n2;
	struct nview a, b;

	(void)state;
	fc.async = true;
	fc.boot_pending = true;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	a = node_view(id, n1);
	fc.fail_launch[a.pool] = 1;
	pass();
	assert_string_equal(node_view(id, n1).state, "QUEUED");
	pass(); /* the answer: no capacity */
	a = node_view(id, n1);
	assert_string_equal(a.state, "TERMINATED");
	assert_string_equal(a.reason, "capacity");
	pass();
	n2 = live_node(id);
	assert_true(n2 > 0 && n2 != n1);
	b = node_view(id, n2);
	assert_int_not_equal(b.pool, a.pool);
	/* placed and launched in the same pass (no provisioning delay) */
	assert_string_equal(b.state, "QUEUED");
	pass();
	assert_string_equal(node_view(id, n2).state, "PENDING");
	stop_fake();
	start_fake();
	advance_ms(5 * 60000);
	pass();
	assert_string_equal(node_view(id, n2).state, "PENDING");
	agent_register(n2);
	assert_string_equal(node_view(id, n2).state, "READY");
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(fc.launches, 1);
}

/* A spot launch still in flight when its pool is marked without
 * capacity (another node's notice there, a capacity error): the launch
 * is awaited and the node boots on its answer.  The node used to end
 * "capacity" at once while its request stayed in the launch table,
 * polled by nobody: the instance the cloud started for it ran on, kept
 * from the leak sweep by that entry. */
static void test_pool_marked_while_launch_in_flight(void **state)
{
	int64_t id, n1;

	(void)state;
	fc.async = true;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	pass(); /* RunInstances in flight */
	assert_string_equal(node_view(id, n1).state, "QUEUED");
	ctl__pool_mark(ctl, node_view(id, n1).pool);
	assert_false(ctl__spot_open(ctl, node_view(id, n1).pool));
	pass(); /* answered: recorded, not abandoned */
	assert_string_equal(node_view(id, n1).state, "BOOTING");
	assert_false(ctl__launch_pending(ctl, n1));
	assert_int_equal(fc.launches, 1);
	agent_register(n1);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	agent_exit(n1, 1, 0, "completed");
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_int_equal(alive_instances(), 0);
}

/* POST /v1/nodes/{node}/bootstrap with bearer secret and nonce: the
 * status; *tok (may be NULL) gets the token on a 200. */
static long exchange(int64_t node, const char *secret, const char *nonce,
		     char *tok)
{
	json_t *v = NULL;
	char p[96];
	long st;

	snprintf(p, sizeof p, "/v1/nodes/%lld/bootstrap", (long long)node);
	st = jreq("POST", p, secret, nonce ? json_pack("{s:s}", "nonce", nonce) :
		  json_object(), &v);
	if (st == 200 && tok)
		snprintf(tok, 80, "%s", json_string_value(json_object_get(v,
								"token")));
	json_decref(v);
	return st;
}

/* The one-time bootstrap secret (issue 24, lib/ctl/nodeboot.h): one node,
 * one use - a retry of that use with its nonce gets a new token that
 * replaces the first -, a bounded time, a live node; the token is random
 * and what it replaced opens nothing. */
static void test_bootstrap_secret_rules(void **state)
{
	const char *n1 = "0123456789abcdef0123456789abcdef";
	const char *n2 = "fedcba9876543210fedcba9876543210";
	char t1[80], t2[80], p[96];
	json_t *v = NULL;
	int64_t id, a, b;
	struct finst *xa, *xb;

	(void)state;
	id = create_job(job_spot);
	a = to_booting(id);
	xa = inst_of(a);
	/* malformed: no bearer, no nonce, a nonce that is not hex */
	assert_int_equal(exchange(a, NULL, n1, NULL), 401);
	assert_int_equal(exchange(a, xa->token, NULL, NULL), 400);
	assert_int_equal(exchange(a, xa->token, "not hex at all, not hex at all!!",
				  NULL), 400);
	/* the secret never opened the node routes */
	snprintf(p, sizeof p, "/v1/nodes/%lld/register", (long long)a);
	assert_int_equal(jreq("POST", p, xa->token, json_object(), &v), 401);
	json_decref(v);
	/* first use: a token, random (not the secret, not derived) */
	assert_int_equal(exchange(a, xa->token, n1, t1), 200);
	assert_int_equal(strlen(t1), 64);
	assert_string_not_equal(t1, xa->token);
	/* second use (another nonce: not this agent): refused */
	assert_int_equal(exchange(a, xa->token, n2, NULL), 401);
	/* the same exchange retried (its reply lost): a new token, and the
	 * first one no longer opens anything */
	assert_int_equal(exchange(a, xa->token, n1, t2), 200);
	assert_string_not_equal(t1, t2);
	assert_int_equal(jreq("POST", p, t1, json_object(), &v), 401);
	json_decref(v);
	assert_int_equal(jreq("POST", p, t2, json_object(), &v), 200);
	json_decref(v);
	snprintf(xa->ntoken, sizeof xa->ntoken, "%s", t2);
	/* another job's node: its secret is for it alone, and expires */
	id = create_job(job_spot);
	b = to_booting(id);
	xb = inst_of(b);
	assert_int_equal(exchange(a, xb->token, n1, NULL), 401);
	advance_ms(3600 * 1000 + 1000);
	assert_int_equal(exchange(b, xb->token, n1, NULL), 401);
	/* a node that has ended gets 409 (its agent exits) */
	id = create_job(job_spot);
	b = to_booting(id);
	snprintf(p, sizeof p, "/v1/jobs/%lld/cancel", (long long)id);
	assert_int_equal(jreq("POST", p, ctl_admin_token(ctl), NULL, &v), 202);
	json_decref(v);
	pass();
	pass();
	assert_string_equal(node_view(id, b).state, "TERMINATED");
	assert_int_equal(exchange(b, inst_of(b)->token, n1, NULL), 409);
}

/* The agent registers before its launch is recorded (a fast cloud,
 * a slow control plane): its secret is already valid, the commit keeps
 * the node READY, and nothing is terminated. */
static void test_agent_registers_before_commit(void **state)
{
	int64_t id, n1;

	(void)state;
	fc.register_early = true;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	pass();
	assert_string_equal(node_view(id, n1).state, "READY");
	assert_int_equal(fc.launches, 1);
	assert_true(inst_of(n1)->alive);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
}

/* Whether node's row records instance id (NULL: none). */
static bool node_instance_is(int64_t node, const char *id)
{
	struct sr_err e = { 0 };
	int64_t k = -1;
	char sql[160];

	if (id)
		snprintf(sql, sizeof sql, "SELECT count(*) FROM nodes WHERE id=?1"
			 " AND instance_id='%s'", id);
	else
		snprintf(sql, sizeof sql, "SELECT count(*) FROM nodes WHERE id=?1"
			 " AND instance_id IS NULL");
	assert_int_equal(store_query_i64(ctl__store(ctl), sql, node, &k, &e), 1);
	return k == 1;
}

/* A node READY with no instance recorded (its agent registered while
 * the launch's answer was still out; the answer never comes): start_node
 * polls only REQUESTED nodes, so nothing polled that launch again or
 * recorded the instance - it stayed in flight for good.  The instance
 * the cloud lists under the node's tag is recorded on the next pass, the
 * launch in flight and its kept parameters dropped (session 24). */
static void test_registered_node_gets_its_instance_by_tag(void **state)
{
	int64_t id, n1, kept = -1;
	struct sr_err e = { 0 };

	(void)state;
	id = create_job(job_spot);
	pass();
	n1 = live_node(id);
	fc.die_before_commit = true; /* started; its answer never comes */
	pass();
	assert_string_equal(node_view(id, n1).state, "QUEUED");
	agent_register(n1);
	assert_string_equal(node_view(id, n1).state, "READY");
	assert_true(node_instance_is(n1, NULL));
	pass();
	pass();
	assert_true(node_instance_is(n1, inst_of(n1)->id));
	assert_false(ctl__launch_pending(ctl, n1));
	assert_int_equal(store_query_i64(ctl__store(ctl), "SELECT count(*) FROM "
					 "node_launch WHERE node_id = ?1", n1,
					 &kept, &e), 1);
	assert_int_equal(kept, 0);
	assert_string_equal(node_view(id, n1).state, "READY");
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(fc.launches, 1);
	assert_true(inst_of(n1)->alive);
}

/* The same node, but the cloud never lists an instance under its tag:
 * once it is 10 minutes old (the EC2 watch's bound for a launch not
 * listed yet) it ends LOST and the job recovers on another node; before
 * that, heart-beating, it is kept.  It ran unseen for good before. */
static void test_registered_node_never_listed_ends(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_od); /* on-demand: no policy move meanwhile */
	pass();
	n1 = live_node(id);
	fc.die_before_commit = true;
	pass();
	agent_register(n1);
	/* listed under no cluster of ours: the listing never shows it */
	snprintf(inst_of(n1)->cluster, sizeof inst_of(n1)->cluster, "other");
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	for (int s = 5; s < 595; s += 5) {
		advance_ms(5000);
		agent_heartbeat(n1, 1, s, 1000, 0);
		pass();
	}
	assert_string_equal(node_view(id, n1).state, "READY");
	advance_ms(10000);
	agent_heartbeat(n1, 1, 600, 1000, 0);
	pass();
	assert_string_equal(node_view(id, n1).state, "LOST");
	assert_string_equal(node_view(id, n1).reason, "no instance listed");
	for (int i = 0; i < 3; i++)
		pass();
	n2 = live_node(id);
	assert_true(n2 > n1);
}

/* The workload's setup exits non-zero on a running node: RUNNING ->
 * FAILED with the setup's code, every instance terminated, no restart. */
static void test_setup_failure_fails_job(void **state)
{
	int64_t id, n1;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	agent_setup_done(n1, 7);
	pass();
	assert_string_equal(job_state(id), "FAILED");
	assert_int_equal(job_int(id, "exit_code"), 7);
	assert_true(has_event(id, NULL, "setup failed with exit code 7"));
	assert_string_equal(node_view(id, n1).state, "TERMINATED");
	assert_int_equal(job_int(id, "restarts"), 0);
	assert_int_equal(fc.launches, 1);
	assert_int_equal(alive_instances(), 0);
}

/* A gang of two: rank 0's node registers and its setup fails while
 * rank 1's node still boots.  PROVISIONING -> FAILED at once (the job
 * does not wait for the gang), both instances terminated. */
static void test_setup_failure_while_provisioning(void **state)
{
	struct nview v[4];
	int64_t id;

	(void)state;
	id = gang_of_two(v);
	assert_string_equal(v[0].state, "BOOTING");
	assert_string_equal(v[1].state, "BOOTING");
	agent_register(v[0].id);
	agent_setup_done(v[0].id, 2);
	assert_string_equal(job_state(id), "PROVISIONING");
	pass();
	assert_string_equal(job_state(id), "FAILED");
	assert_int_equal(job_int(id, "exit_code"), 2);
	assert_true(has_event(id, NULL, "setup failed with exit code 2"));
	assert_int_equal(alive_instances(), 0);
}

/* The policy moves a running spot job to on-demand: its workload has
 * run (rank 0 reported steps) but checkpointed nothing, and the
 * deadline comes close (the injected clock: 1 s is a cloud hour).
 * RUNNING -> NOTICE (reason "migrate") -> CHECKPOINTING; the node is
 * told to stop, its workload exits "stopped"; -> PREEMPTED ->
 * RECOVERING -> PROVISIONING on the on-demand pool; the old node is
 * TERMINATED "migrated"; a move, not a preemption. */
static void test_migrate_spot_to_on_demand(void **state)
{
	int64_t id, n1, n2;
	struct nview a, b;

	(void)state;
	id = create_job("name: t\nresources:\n  accelerators: V100:1\n"
			"  use_spot: true\nrun: echo hi\nspotrun:\n"
			"  deadline: 20h\n  work: 2h\n");
	n1 = to_running(id);
	a = node_view(id, n1);
	assert_true(a.pool == 0 || a.pool == 1); /* spot: the slack allows it */
	agent_heartbeat(n1, 1, 1, 1000, 0);
	for (int i = 0; i < 60 && !strcmp(job_state(id), "RUNNING"); i++) {
		advance_ms(500); /* 30 cloud minutes */
		agent_heartbeat(n1, 1, 2 + i, 1000, 0);
		pass();
	}
	assert_string_equal(job_state(id), "CHECKPOINTING");
	assert_true(has_event(id, "transition", "moving 1 node(s) to on-demand"));
	assert_int_equal(live_node(id), n1); /* a move places nothing yet */
	agent_exit(n1, 1, 0, "stopped");
	advance_ms(10);
	pass();
	a = node_view(id, n1);
	assert_string_equal(a.state, "TERMINATED");
	assert_string_equal(a.reason, "migrated");
	assert_false(inst_of(n1)->alive);
	assert_true(has_event(id, "migrated", NULL));
	pass();
	n2 = live_node(id);
	assert_true(n2 > n1);
	b = node_view(id, n2);
	assert_int_equal(b.pool, 2); /* the on-demand pool */
	pass();
	agent_register(n2);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(job_int(id, "moves"), 1);
	assert_int_equal(job_int(id, "preemptions"), 0);
	assert_int_equal(fc.launches, 2);
	assert_false(inst_of(n2)->spot);
}

/* Both ranks of a gang report step `step` of attempt 1, half a cloud
 * hour later, and a pass runs. */
static void gang_steps(const struct nview v[2], int step)
{
	advance_ms(500);
	for (int k = 0; k < 2; k++) {
		json_t *b = heartbeat_body(1, step, 1000, 0);

		if (!gang_no_store)
			json_object_set_new(b, "ckpt_store_ns", json_integer(1));
		agent_post(v[k].id, "heartbeat", b, 200);
	}
	pass();
}

/* A gang of two with 40 h of work and a 100 h deadline, placed in spot
 * pool 1 while pool 0 has no capacity, and RUNNING.  v[0..1]: its
 * nodes. */
static int64_t gang_placed_in_pool_1(struct nview v[4])
{
	int64_t id;

	fc.avail[0] = false;
	id = create_job("name: t\nnum_nodes: 2\nresources:\n"
			"  accelerators: V100:1\n  use_spot: true\n"
			"run: echo hi\nspotrun:\n  deadline: 100h\n  work: 40h\n");
	pass();
	pass();
	assert_int_equal(nodes_of(id, v, 4), 2);
	assert_int_equal(v[0].pool, 1);
	assert_int_equal(v[1].pool, 1);
	agent_register(v[0].id);
	agent_register(v[1].id);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	return id;
}

/* That gang after two cloud hours of steps in pool 1; then pool 0 has
 * capacity again. */
static int64_t gang_in_pool_1(struct nview v[4])
{
	int64_t id = gang_placed_in_pool_1(v);

	for (int i = 1; i <= 4; i++)
		gang_steps(v, i);
	assert_string_equal(job_state(id), "RUNNING");
	fc.avail[0] = true;
	return id;
}

/* The gang of gang_in_pool_1() runs 4 cloud hours more (steps 5-12)
 * and stays where it is: RUNNING on its two nodes in pool 1, no move. */
static void gang_stays_in_pool_1(void)
{
	struct nview v[4];
	int64_t id = gang_in_pool_1(v);

	for (int i = 5; i < 13; i++) {
		gang_steps(v, i);
		assert_string_equal(job_state(id), "RUNNING");
	}
	assert_int_equal(nodes_of(id, v, 4), 2);
	assert_int_equal(v[0].pool, 1);
	assert_int_equal(v[1].pool, 1);
	assert_int_equal(job_int(id, "moves"), 0);
	assert_false(has_event(id, "transition", "moving 2 node(s)"));
}

/* A running spot gang of two in pool 1 ($1.80/h) while pool 0 has no
 * capacity; pool 0 ($0.30/h) comes back with 40 h of work left and 57 h
 * of slack.  The price gap over the runs' expected lives pays for the
 * 3 h restart (the fake cloud's provisioning at its time scale) and the
 * slack it uses, by one standard error of the runs' lives (spotrun's
 * move_margin(), the simulator's rule): RUNNING -> NOTICE (reason
 * "migrate") -> CHECKPOINTING for both ranks, both nodes TERMINATED
 * "migrated", the gang placed again whole in pool 0; a move, not a
 * preemption.  The plan that prices the restart's slack is the one of
 * the model the scores favour by then (the run model): a pair-model plan
 * made earlier, while that model led, priced it at $1.61 against $0.12,
 * and before spotrun replanned on a change of the favoured model the
 * gang stayed past step 12 (session 25). */
static int64_t gang_moving_to_pool_0(struct nview v[4])
{
	int64_t id;

	fc.spot_price[0] = 300000;
	fc.spot_price[1] = 1800000;
	id = gang_in_pool_1(v);
	for (int i = 5; i < 13 && !strcmp(job_state(id), "RUNNING"); i++)
		gang_steps(v, i);
	assert_string_equal(job_state(id), "CHECKPOINTING");
	return id;
}

/* Both ranks of the moving gang stop: its nodes end "migrated" and it is
 * placed again whole in pool 0, one move. */
static void gang_lands_in_pool_0(int64_t id, struct nview v[4])
{
	int n;

	agent_exit(v[0].id, 1, 0, "stopped");
	agent_exit(v[1].id, 1, 0, "stopped");
	advance_ms(10);
	pass();
	for (int k = 0; k < 2; k++) {
		struct nview a = node_view(id, v[k].id);

		assert_string_equal(a.state, "TERMINATED");
		assert_string_equal(a.reason, "migrated");
	}
	pass();
	n = nodes_of(id, v, 4);
	assert_int_equal(n, 4);
	for (int k = 0; k < n; k++) {
		if (strcmp(v[k].state, "TERMINATED"))
			assert_int_equal(v[k].pool, 0);
	}
	assert_int_equal(job_int(id, "moves"), 1);
}

static void test_migrate_gang_to_a_cheaper_spot_pool(void **state)
{
	struct nview v[4];
	int64_t id;

	(void)state;
	id = gang_moving_to_pool_0(v);
	assert_true(has_event(id, "transition", "moving 2 node(s) to spot in pool 0"));
	gang_lands_in_pool_0(id, v);
	assert_int_equal(job_int(id, "preemptions"), 0);
}

/* The gang of test_migrate_gang_to_a_cheaper_spot_pool decides to move
 * to pool 0; while it takes its final checkpoint pool 0's price rises
 * past pool 1's, so the policy's later ticks would keep the gang where it
 * is.  The placement still goes to pool 0, where the move was decided:
 * placed on a later tick's choice, the gang was restarted in the pool it
 * had just left (test_dist_gang, session 25) - a restart for nothing. */
static void test_move_is_placed_where_it_was_decided(void **state)
{
	struct nview v[4];
	int64_t id;

	(void)state;
	id = gang_moving_to_pool_0(v);
	fc.spot_price[0] = 2000000;
	for (int i = 0; i < 3; i++) {
		advance_ms(500);
		pass();
	}
	gang_lands_in_pool_0(id, v);
	assert_true(has_event(id, "move", "where the move was decided"));
}

/* The same gang with pool 1 at $0.990/h and pool 0 at $0.9899/h: that
 * gap does not pay for a 3 h restart, and the gang stays in pool 1
 * (RUNNING, its two nodes, no move). */
static void test_gang_stays_where_the_gap_does_not_pay(void **state)
{
	(void)state;
	fc.spot_price[0] = 989900;
	gang_stays_in_pool_1();
}

/* The gang and the prices of test_migrate_gang_to_a_cheaper_spot_pool,
 * but its checkpoints reach no store (no tier 3): a move replaces every
 * node, and every copy of its checkpoints (tier 2, a kept copy, a peer's)
 * goes with them, so the next attempt would start from step 0.  The
 * gang stays RUNNING in pool 1 (a move is priced as a restart, not as
 * all the work done). */
static void test_gang_without_a_store_is_not_moved(void **state)
{
	(void)state;
	gang_no_store = true;
	fc.spot_price[0] = 300000;
	fc.spot_price[1] = 1800000;
	gang_stays_in_pool_1();
}

/* The gang of test_migrate_gang_to_a_cheaper_spot_pool before its
 * workload has run (no step reported, so no move yet) while the policy
 * already prefers pool 0 (pool 1 at $2.40/h: this early the pair model
 * leads the scores, its plan is current, and at $1.80/h the move margin
 * is still below 0 over these 2.5 h): rank 1's instance is ended
 * outside spotrun (LOST), and its replacement is placed beside rank 0 in
 * pool 1, not in the pool the policy would move the gang to - a gang is
 * never split across pools (recon_place.c). */
static void test_lost_rank_placed_beside_its_gang(void **state)
{
	struct nview v[4];
	int64_t id;
	int n, in1 = 0;

	(void)state;
	fc.spot_price[0] = 300000;
	fc.spot_price[1] = 2400000;
	id = gang_placed_in_pool_1(v);
	fc.avail[0] = true;
	for (int i = 0; i < 5; i++) { /* 2.5 h: less than a restart and a tick */
		advance_ms(500);
		pass();
		assert_string_equal(job_state(id), "RUNNING");
	}
	inst_of(v[1].id)->alive = false; /* listed "terminated" from now */
	advance_ms(100);
	pass();
	assert_string_equal(node_view(id, v[1].id).state, "LOST");
	n = nodes_of(id, v, 4);
	assert_int_equal(n, 3);
	for (int k = 0; k < n; k++)
		in1 += strcmp(v[k].state, "LOST") && v[k].pool == 1;
	assert_int_equal(in1, 2);
	assert_true(has_event(id, NULL, "beside the rest of the gang"));
}

/* A noticed node whose workload never reports its exit: the node is
 * killed at the notice deadline (READY -> TERMINATED "preempted", its
 * instance terminated), and with its rank gone CHECKPOINTING ->
 * PREEMPTED -> RECOVERING -> PROVISIONING on the replacement placed at
 * the notice. */
static void test_notice_deadline_kills_silent_workload(void **state)
{
	int64_t id, n1, n2;
	struct nview a;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	n2 = to_checkpointing(id, n1);
	advance_ms(1000); /* half the notice: nothing is killed yet */
	pass();
	assert_string_equal(node_view(id, n1).state, "READY");
	assert_true(inst_of(n1)->alive);
	assert_string_equal(job_state(id), "CHECKPOINTING");
	for (int i = 0; i < 20 && strcmp(job_state(id), "PROVISIONING"); i++) {
		advance_ms(500);
		pass();
	}
	a = node_view(id, n1);
	assert_string_equal(a.state, "TERMINATED");
	assert_string_equal(a.reason, "preempted");
	assert_false(inst_of(n1)->alive);
	assert_string_equal(job_state(id), "PROVISIONING");
	assert_int_equal(live_node(id), n2);
	assert_int_equal(job_int(id, "preemptions"), 1);
}

/* The workload finishes its last step while it is being checkpointed:
 * CHECKPOINTING -> SUCCEEDED, the replacement placed at the notice is
 * terminated unused.  The notice came while it trained (one
 * preemption); the attempt completed, so it lost nothing. */
static void test_completes_while_checkpointing(void **state)
{
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	n2 = to_checkpointing(id, n1);
	advance_ms(60); /* 216 cloud s of the attempt after its notice */
	agent_exit(n1, 1, 0, "completed");
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_string_equal(node_view(id, n1).state, "TERMINATED");
	assert_string_equal(node_view(id, n2).state, "TERMINATED");
	assert_int_equal(alive_instances(), 0);
	assert_int_equal(job_int(id, "preemptions"), 1);
	assert_nothing_lost(id);
}

/* The only rank reported completing while the job checkpointed on a
 * notice, as the cloud reclaims the replacement placed at the notice
 * while it boots: nothing more is placed for the rank - the job is done
 * (SUCCEEDED in that pass, no third node). */
static void test_completed_job_places_nothing(void **state)
{
	struct nview v[4];
	int64_t id, n1, n2;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	n2 = to_checkpointing(id, n1);
	pass(); /* n2 launched */
	assert_string_equal(node_view(id, n2).state, "BOOTING");
	assert_int_equal(fc.launches, 2);
	fc.avail[0] = true; /* pool 0 has capacity again */
	inst_of(n2)->noticed = true;
	agent_exit(n1, 1, 0, "completed");
	advance_ms(400); /* a policy tick on (600 cloud s), in n1's lead */
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_int_equal(nodes_of(id, v, 4), 2); /* no third node asked for */
	assert_int_equal(count_events(id, "move", NULL), 1);
	assert_int_equal(fc.launches, 2);
	assert_int_equal(alive_instances(), 0);
	assert_nothing_lost(id);
}

/* The notice reaches a node whose only rank had reported completing (in
 * the same second): the job is done - SUCCEEDED in that pass, nothing
 * placed, the notice recorded on the node but no preemption counted
 * (recon_preempt.c). */
static void test_notice_after_completion_is_no_preemption(void **state)
{
	struct nview v[4];
	int64_t id, n1;

	(void)state;
	id = create_job(job_spot);
	n1 = to_running(id);
	agent_exit(n1, 1, 0, "completed");
	inst_of(n1)->noticed = true;
	advance_ms(10);
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_int_equal(nodes_of(id, v, 4), 1);
	assert_true(has_event(id, "notice", NULL));
	assert_int_equal(job_int(id, "preemptions"), 0);
	assert_int_equal(count_events(id, "preempted", NULL), 0);
	assert_true(ledger_num(id, "preemptions") == 0.0);
	assert_true(has_event(id, "transition", "RUNNING -> SUCCEEDED") ||
		    has_event(id, "transition", "every rank exited 0"));
	assert_nothing_lost(id);
}

/* A gang of two: rank 0 completed, then the cloud reclaims its node
 * while rank 1 still trains.  Rank 0's work is done: the gang is not
 * stopped (no NOTICE, no `stop` for rank 1), nothing is placed, no
 * preemption is counted, and the node going changes nothing; rank 1
 * completes and the job SUCCEEDED on its first attempt.  Then the other
 * way round: rank 0 completed, rank 1 is noticed while it trains - the
 * gang stops for it (one preemption, its replacement placed), and when
 * rank 1 completes in the lead after all the job SUCCEEDED, lost
 * nothing. */
static void test_gang_rank_completed_then_noticed(void **state)
{
	struct nview v[4], w[4];
	int64_t id, launches;

	(void)state;
	id = gang_running(v);
	launches = fc.launches;
	agent_exit(v[0].id, 1, 0, "completed");
	inst_of(v[0].id)->noticed = true;
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(job_int(id, "preemptions"), 0);
	assert_int_equal(nodes_of(id, w, 4), 2);
	inst_of(v[0].id)->alive = false; /* the cloud takes it */
	advance_ms(100);
	pass();
	assert_string_equal(node_view(id, v[0].id).state, "TERMINATED");
	assert_string_equal(job_state(id), "RUNNING");
	assert_int_equal(nodes_of(id, w, 4), 2);
	assert_int_equal(fc.launches, launches);
	agent_exit(v[1].id, 1, 0, "completed");
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_int_equal(job_int(id, "attempt"), 1);
	assert_int_equal(job_int(id, "preemptions"), 0);
	assert_nothing_lost(id);

	id = gang_running(v);
	agent_exit(v[0].id, 1, 0, "completed");
	inst_of(v[1].id)->noticed = true;
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "CHECKPOINTING");
	assert_int_equal(job_int(id, "preemptions"), 1);
	assert_int_equal(nodes_of(id, w, 4), 3); /* rank 1's replacement */
	agent_exit(v[1].id, 1, 0, "completed");
	advance_ms(100);
	pass();
	assert_string_equal(job_state(id), "SUCCEEDED");
	assert_nothing_lost(id);
}

/* Cancel before anything was placed (PENDING -> CANCELLED, no launch),
 * and while a node boots (PROVISIONING -> CANCELLED, BOOTING ->
 * TERMINATED, its instance terminated). */
static void test_cancel_pending_and_provisioning(void **state)
{
	json_t *v = NULL;
	int64_t a, b, n;
	char p[64];

	(void)state;
	a = create_job(job_spot);
	snprintf(p, sizeof p, "/v1/jobs/%lld/cancel", (long long)a);
	assert_int_equal(jreq("POST", p, ctl_admin_token(ctl), NULL, &v), 202);
	json_decref(v);
	pass();
	assert_string_equal(job_state(a), "CANCELLED");
	assert_int_equal(fc.launches, 0);

	b = create_job(job_spot);
	n = to_booting(b);
	assert_true(inst_of(n)->alive);
	snprintf(p, sizeof p, "/v1/jobs/%lld/cancel", (long long)b);
	assert_int_equal(jreq("POST", p, ctl_admin_token(ctl), NULL, &v), 202);
	json_decref(v);
	pass();
	assert_string_equal(job_state(b), "CANCELLED");
	assert_string_equal(node_view(b, n).state, "TERMINATED");
	assert_int_equal(alive_instances(), 0);
}

/* Overwrite job id's stored placement plan with JSON that is not a plan
 * (a second connection, as another process could). */
static void plan_corrupt(int64_t id)
{
	struct sr_err e = { 0 };
	sqlite3 *db = NULL;
	char sql[96];

	assert_int_equal(ctl_db_open(ctl_db_path(ctl), &db, &e), 0);
	snprintf(sql, sizeof sql, "UPDATE jobs SET candidates='{}' WHERE id=%lld",
		 (long long)id);
	assert_int_equal(ctl_db_exec(db, sql, &e), 0);
	sqlite3_close_v2(db);
}

/* A stored placement plan that no longer parses fails the job with the
 * reason, from the states that place nodes: PENDING (before its first
 * launch) and RECOVERING (its node lost and spot gone, so the policy
 * waits to place a replacement). */
static void test_unreadable_plan_fails_job(void **state)
{
	int64_t a, b, n1;

	(void)state;
	a = create_job(job_spot);
	plan_corrupt(a);
	pass();
	assert_string_equal(job_state(a), "FAILED");
	assert_true(has_event(a, "transition", "plan is unreadable"));
	assert_int_equal(fc.launches, 0);

	b = create_job(job_spot);
	n1 = to_running(b);
	/* the instance goes without a notice, and spot with it: the policy
	 * waits for spot (100 h of slack) rather than buying on-demand */
	inst_of(n1)->alive = false;
	fc.avail[0] = fc.avail[1] = false;
	advance_ms(11000);
	pass();
	assert_string_equal(node_view(b, n1).state, "LOST");
	assert_string_equal(job_state(b), "RECOVERING");
	plan_corrupt(b);
	pass();
	assert_string_equal(job_state(b), "FAILED");
	assert_true(has_event(b, "transition", "plan is unreadable"));
	assert_int_equal(alive_instances(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_notice_replace_complete,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_capacity_error_next_pool,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_slow_boot_lost_and_replaced,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_silent_node_recovers,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_instance_terminated_outside_is_lost_at_once,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_instance_unlisted_for_a_minute_is_lost,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_notice_while_booting,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_replacement_reclaimed_before_it_ran,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_notice_counted_once_per_node,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_instance_vanishes_after_notice,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_shutting_down_node_keeps_its_last_reports,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_shutting_down_node_ends_at_its_deadline,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_routes_stamp_the_reconcilers_clock,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_gang_is_one_launch_group,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_gang_waits_to_the_ended_nodes_deadline,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_spare_takes_the_noticed_rank,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_plan_chooses_the_spares,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_rebalance_launches_the_replacement_early,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_train_through_until_replacement_ready,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_completion_landing_mid_step_finishes_the_job,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_train_through_stops_at_the_last_safe_moment,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_train_through_node_taken_early,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_cancel, fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_crash_then_failed,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_relaunch_sends_kept_parameters,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_crash_mid_provision_no_double_launch,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_leaked_instances_swept,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_throttle_backs_off,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_auth_error_fails_job,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_async_launch_and_slow_cloud_boot,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_agent_registers_before_commit,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_registered_node_gets_its_instance_by_tag,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_registered_node_never_listed_ends,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_queued_capacity_then_pending_ready,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_pool_marked_while_launch_in_flight,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_bootstrap_secret_rules,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_setup_failure_fails_job,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_setup_failure_while_provisioning,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_migrate_gang_to_a_cheaper_spot_pool,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_move_is_placed_where_it_was_decided,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_gang_stays_where_the_gap_does_not_pay,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_gang_without_a_store_is_not_moved,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_lost_rank_placed_beside_its_gang,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_migrate_spot_to_on_demand,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_notice_deadline_kills_silent_workload,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_completes_while_checkpointing,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_completed_job_places_nothing,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_notice_after_completion_is_no_preemption,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_gang_rank_completed_then_noticed,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_cancel_pending_and_provisioning,
						fsetup, fteardown),
		cmocka_unit_test_setup_teardown(test_unreadable_plan_fails_job,
						fsetup, fteardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
