/*
 * recon_nodes.c - the reconciler's node pass: start requested nodes,
 * notice reclaimed spot nodes, kill them at the notice deadline, declare
 * silent nodes LOST, and bill every live node.
 *
 * Node lifecycle (QUEUED and PENDING are REQUESTED and BOOTING with
 * nodes.phase 'queued' / 'pending', schema.c m9):
 *
 *   REQUESTED --(provisioning delay; the cloud accepts the launch)--> QUEUED
 *   REQUESTED/QUEUED --(the cloud answers with a pending instance)--> PENDING
 *   REQUESTED/QUEUED --(... with a running instance)----------------> BOOTING
 *   PENDING   --(the cloud says it runs)----------------------------> BOOTING
 *   QUEUED    --(capacity / quota / refused)------------------------> TERMINATED
 *   BOOTING   --(agent registers; also from PENDING)-------------> READY
 *   BOOTING   --(no register within boot timeout)-----------> LOST
 *   READY     --(no heartbeat within heartbeat timeout)-----> LOST
 *   any live  --(job done / cancelled / spot capacity gone)-> TERMINATED
 *   notice set: kill at kill_ns (the cloud's notice time), or as soon
 *               as the instance is gone - or shuts down and its agent
 *               owes no report (its exit of the attempt it ran)
 *               ---------------------------------------------> TERMINATED
 *
 * Order of effects: the database first, the world second.  A node row
 * exists before its instance; the provider records the instance (its
 * commit callback) before the instance may act; a node is marked
 * TERMINATED in a committed transaction before it is terminated.  After
 * a crash in between, recon__sweep_orphans() terminates again what the
 * database says is gone (terminate is idempotent).  A node's token is
 * random, made when its agent first calls with the one-time bootstrap
 * secret its launch carried (nodeboot.h); only its digest is stored.
 */
#include <errno.h>
#include <inttypes.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/backoff.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/auth.h"
#include "ctl/recon_int.h"
#include "finops/ledger.h"
#include "finops/policy.h"
#include "market/jobspec.h"
#include "store/store_ctl.h"

/* The reconciler's view of a node row (struct store_node, store.h). */
static void node_row(const struct store_node *x, struct rnode *n)
{
	memset(n, 0, sizeof *n);
	n->id = x->id;
	n->job = x->job_id;
	n->rank = x->rank;
	snprintf(n->state, sizeof n->state, "%s", x->state);
	snprintf(n->phase, sizeof n->phase, "%s", x->phase);
	n->pool = x->pool;
	n->spot = x->spot;
	snprintf(n->instance, sizeof n->instance, "%s",
		 x->instance_id ? x->instance_id : "");
	n->created_ns = x->created_ns;
	n->boot_at_ns = x->boot_at_ns;
	n->registered_ns = x->registered_ns == STORE_NULL_I64 ? 0 : x->registered_ns;
	n->last_hb_ns = x->last_hb_ns == STORE_NULL_I64 ? 0 : x->last_hb_ns;
	n->notice_ns = x->notice_ns == STORE_NULL_I64 ? 0 : x->notice_ns;
	n->kill_ns = x->kill_ns == STORE_NULL_I64 ? 0 : x->kill_ns;
	n->rebalance_ns = x->rebalance_ns == STORE_NULL_I64 ? 0 : x->rebalance_ns;
	n->billed_until_ns = x->billed_until_ns == STORE_NULL_I64 ? 0 :
			     x->billed_until_ns;
	n->price = x->price_micros;
	n->list = x->list_micros;
	n->reserved = x->reserved_micros;
	snprintf(n->cloud, sizeof n->cloud, "%s", x->cloud);
	snprintf(n->region, sizeof n->region, "%s", x->region);
	snprintf(n->zone, sizeof n->zone, "%s", x->zone);
	snprintf(n->itype, sizeof n->itype, "%s", x->instance_type);
	snprintf(n->accel, sizeof n->accel, "%s", x->accelerator);
	n->accel_count = x->accel_count;
	snprintf(n->workload, sizeof n->workload, "%s", x->workload);
	n->util_sum = x->util_sum;
	n->util_n = x->util_n;
	n->gpu_util = !isnan(x->gpu_util);
	n->gpu_last = n->gpu_util ? x->gpu_util : 0;
	n->setup_rc = x->setup_rc; /* STORE_NULL_I64 is INT64_MIN: unset */
	n->retire = x->retire;
	n->adopted_ns = x->adopted_ns == STORE_NULL_I64 ? 0 : x->adopted_ns;
	n->spare = x->spare && !n->adopted_ns;
}

int recon__nodes_query(struct ctl *c, struct store *db, const char *where,
		       int64_t arg, struct rnode **out, size_t *n)
{
	struct store_node *v = NULL;
	struct rnode *r = NULL;
	struct sr_err e = { 0 };
	size_t k = 0;
	int rc;

	(void)c;
	*out = NULL;
	*n = 0;
	rc = store_node_select(db, where, arg, &v, &k, &e);
	if (rc)
		return rc;
	r = malloc((k ? k : 1) * sizeof *r);
	if (!r) {
		store_nodes_free(v, k);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k; i++)
		node_row(&v[i], &r[i]);
	store_nodes_free(v, k);
	*out = r;
	*n = k;
	return 0;
}

int recon__nodes_live(struct ctl *c, struct store *db, int64_t job,
		      struct rnode **out, size_t *n)
{
	return recon__nodes_query(c, db, job ?
			   "state IN ('REQUESTED','BOOTING','READY') AND job_id=?1"
			   " AND " RECON_GANG_SQL :
			   "state IN ('REQUESTED','BOOTING','READY') AND ?1=0",
			   job, out, n);
}

static struct ctl_node_ref pnode(const struct rnode *n)
{
	struct ctl_node_ref p = {
		.id = n->id, .job_id = n->job, .pool = n->pool, .spot = n->spot,
		.instance_id = n->instance,
	};
	return p;
}

static void set_kill_pending(struct store *db, int64_t node, int pending)
{
	struct sr_err e = { 0 };
	int rc = store_node_set_kill_pending(db, node, pending, &e);

	if (rc < 0)
		sr_warn("recon", "cannot record a pending terminate", "node=%"
			PRId64 " err=\"%s\"", node, sr_err_str(&e, rc));
}

/* The node's phase within `state` (schema.c m9): NULL for none. */
static void set_phase(struct store *db, const struct rnode *n, const char *state,
		      const char *phase)
{
	struct sr_err e = { 0 };
	int rc = store_node_set_phase(db, n->id, state, phase, &e);

	if (rc == 1)
		sr_info("recon", "node phase", "node=%" PRId64 " state=%s phase=%s",
			n->id, state, phase ? phase : "-");
	else if (rc < 0)
		sr_warn("recon", "cannot record a node's phase", "node=%" PRId64
			" err=\"%s\"", n->id, sr_err_str(&e, rc));
}

/* The database already says the node is gone; make the world agree.  A
 * terminate that fails is recorded (nodes.kill_pending) and retried on
 * every node pass until the provider confirms it. */
void recon__kill(struct ctl *c, struct store *db, const struct rnode *n)
{
	struct ctl_node_ref p = pnode(n);
	int rc = ctl__terminate(c, &p);

	if (rc) {
		sr_error("recon", "terminate failed", "node=%" PRId64 " provider=%s"
			 " err=\"%s\": retrying on the next pass", n->id,
			 ctl__prov_name(c, n->pool), sr_strerror(rc));
		set_kill_pending(db, n->id, 1);
	} else {
		set_kill_pending(db, n->id, 0);
	}
}

void recon__kill_pending(struct ctl *c, struct store *db)
{
	struct rnode *v = NULL;
	size_t n = 0;

	if (recon__nodes_query(c, db, "kill_pending=1 AND state IN ('TERMINATED',"
			"'LOST') AND ?1=?1", 0, &v, &n))
		return;
	for (size_t i = 0; i < n; i++)
		recon__kill(c, db, &v[i]);
	free(v);
}

/* ---- billing --------------------------------------------------------------- */

static int bill(struct ctl *c, struct store *db, const struct rnode *n, int64_t until,
		struct sr_err *e)
{
	struct ledger_row r = { 0 };
	struct cloud_offering o;
	sr_micros cost = 0, list_cost = 0, res_cost = 0;
	int util = n->util_n ? (int)lround(n->util_sum / (double)n->util_n * 1000) : -1;
	int rc;

	/* no heartbeat in the row (one a second and a row a second drift
	 * apart, or the row ends the node before the next one): the GPU is
	 * as its latest sample said until the next */
	if (!n->util_n && n->gpu_util)
		util = (int)lround(n->gpu_last * 1000);

	if (n->billed_until_ns <= 0 || until <= n->billed_until_ns)
		return 0;
	/* The offering's cloud is the provider a bill names (FOCUS
	 * ProviderName), whichever provider of ours ran it (a simulation
	 * of that cloud's market, or the cloud itself). */
	r.provider = n->cloud;
	r.region = n->region;
	r.zone = n->zone;
	r.instance_type = n->itype;
	r.accelerator = n->accel;
	r.gpus = (int)ceil(n->accel_count);
	r.pricing = n->spot ? LEDGER_DYNAMIC : LEDGER_STANDARD;
	/* a committed pool's time (a Slurm partition: paid for, amortised)
	 * is Committed, at its committed price */
	if (!n->spot && ctl__describe(c, n->pool, &o) == 0 && o.committed)
		r.pricing = LEDGER_COMMITTED;
	r.unit_price = n->price;
	if (n->spot && ctl__describe(c, n->pool, &o) == 0 &&
	    o.spot_per_h >= 0)
		r.unit_price = o.spot_per_h;
	r.list_price = n->list >= 0 ? n->list : r.unit_price;
	r.reserved_price = n->reserved >= 0 ? n->reserved : LEDGER_PRICE_UNKNOWN;
	r.job_id = n->job;
	r.node_id = n->id;
	/* idle: under 10 % GPU utilisation where the node reports it (the
	 * row's samples, else the latest), else under 10 % of its
	 * heartbeats with recent training progress (no step for
	 * STEPSTAT_IDLE_S), else unknown: busy while running.  A share of
	 * heartbeats is no utilisation: the row's is then unknown */
	r.busy = finops_node_is_busy(strcmp(n->workload, "running") == 0, util,
				     FINOPS_IDLE_UTIL_DEFAULT_PERMILLE);
	r.util_permille = !n->gpu_util ? -1 : util > 1000 ? 1000 : util;
	r.start_ns = n->billed_until_ns;
	r.end_ns = until;
	r.billed_ns = (int64_t)((double)(until - n->billed_until_ns) *
				c->cfg.time_scale);
	rc = ledger_row_add(db, &r, &cost, e);
	if (rc == -SR_ECONFLICT) {
		rc = 0;
		cost = 0;
	}
	if (rc)
		return rc;
	if (cost)
		list_cost = sr_money_cost(r.list_price, r.billed_ns);
	if (cost && n->reserved >= 0)
		res_cost = sr_money_cost(n->reserved, r.billed_ns);
	/* The interval's utilisation is the samples read with n: take
	 * those out, and keep any a heartbeat added since (heartbeats do not
	 * wait for the reconciler's transactions: routes_nodes.c); a stale
	 * n billed twice (the ledger conflict above) cannot go below 0. */
	{
		struct store_bill b = {
			.node = n->id, .job = n->job, .until_ns = until,
			.cost = cost, .list_cost = list_cost,
			.reserved_cost = res_cost,
			.reserved_unknown = n->reserved < 0,
			.util_sum = n->util_sum, .util_n = n->util_n,
		};

		rc = store_node_bill(db, &b, e);
	}
	return rc;
}

int recon__node_bill(struct ctl *c, struct store *db, const struct rnode *n,
		     int64_t until, struct sr_err *e)
{
	return bill(c, db, n, until, e);
}

int recon__node_end(struct ctl *c, struct store *db, const struct rnode *n,
		    const char *state, const char *reason, int64_t now,
		    struct sr_err *e)
{
	char msg[128];
	int rc;

	rc = bill(c, db, n, now, e);
	if (rc)
		return rc;
	rc = store_node_end(db, n->id, state, reason, now, e);
	if (rc <= 0)
		return rc;
	snprintf(msg, sizeof msg, "node %" PRId64 " (rank %" PRId64 ") %s: %s",
		 n->id, n->rank, strcmp(state, "LOST") == 0 ? "lost" : "terminated",
		 reason);
	return ctl_event_append(db, n->job, strcmp(state, "LOST") == 0 ? "node_lost" :
			     "node_terminated", NULL, NULL, n->id, now,
			     ctl__sim_at(c, now), NULL, msg, e);
}

/* ---- per-node actions -------------------------------------------------------- */

struct commit_ud {
	struct ctl *c;
	struct store *db;
	int64_t now;
	int64_t node;
};

static int commit_boot(void *ud, const char *id, const char *blob, bool pending)
{
	struct commit_ud *u = ud;
	struct sr_err e = { 0 };
	int rc;

	rc = store_begin(u->db, &e);
	if (rc)
		return rc;
	/* A cloud's instance may boot and its agent register (READY) before
	 * this commit: its bootstrap secret was valid before the launch. */
	rc = store_node_booted(u->db, u->node, id, blob, pending, u->now, &e);
	rc = rc == 1 ? 0 : rc < 0 ? rc : -SR_ECONFLICT;
	if (!rc)
		rc = store_commit(u->db, &e);
	else
		store_rollback(u->db);
	return rc;
}

static int end_tx(struct ctl *c, struct store *db, const struct rnode *n,
		  const char *state, const char *reason, int64_t now, bool kill)
{
	struct sr_err e = { 0 };
	int rc = store_begin(db, &e);

	if (!rc)
		rc = recon__node_end(c, db, n, state, reason, now, &e);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_error("recon", "cannot end node", "node=%" PRId64 " err=\"%s\"",
			 n->id, sr_err_str(&e, rc));
	else if (kill)
		recon__kill(c, db, n);
	return rc;
}

/* A launch the cloud refused for good (credentials, a bad image or
 * parameter): the node ends, and an event the job step turns into a
 * job-level failure with the cloud's message (recon__launch_refused). */
static void refuse_tx(struct ctl *c, struct store *db, const struct rnode *n,
		      int64_t now, const char *why)
{
	struct sr_err e = { 0 };
	char msg[SR_ERR_MSG_MAX + 64];
	int rc = store_begin(db, &e);

	snprintf(msg, sizeof msg, "the cloud refused to start node %" PRId64
		 ": %s", n->id, why);
	if (!rc)
		rc = recon__node_end(c, db, n, "TERMINATED", "launch_refused", now, &e);
	if (!rc)
		rc = ctl_event_append(db, n->job, "launch_refused", NULL, NULL, n->id,
				   now, ctl__sim_at(c, now), NULL, msg, &e);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_error("recon", "cannot end node", "node=%" PRId64 " err=\"%s\"",
			 n->id, sr_err_str(&e, rc));
}

/* The image job asks for in `region` (resources.image_id: one, or one
 * per region), into out; "" when it names none (the provider's
 * configured image). */
static int job_image(struct store *db, int64_t job, const char *region,
		     char *out, size_t cap, struct sr_err *e)
{
	struct store_job j;
	struct jobspec js;
	json_t *spec = NULL;
	const char *img;
	int rc;

	out[0] = '\0';
	jobspec_init(&js);
	rc = store_job_load(db, job, STORE_JOB_SPEC, &j, e);
	if (rc)
		return rc;
	spec = json_loads(j.spec_json, 0, NULL);
	rc = spec ? jobspec_from_json(spec, &js, e) :
		    sr_err_set(e, -SR_ECORRUPT, "job %" PRId64 ": spec is not "
			       "JSON", job);
	img = rc ? NULL : jobspec_image_for(&js, region);
	if (img && strlen(img) >= cap)
		rc = sr_err_set(e, -EINVAL, "job %" PRId64 ": image_id longer "
				"than %zu bytes", job, cap - 1);
	else if (img)
		snprintf(out, cap, "%s", img);
	json_decref(spec);
	jobspec_free(&js);
	store_job_free(&j);
	return rc;
}

/* Node v[i] as a launch: its launch group (cloud/compute.h) is the
 * nodes of its job placed with it in one pass (recon__nodes_create:
 * one pool, one created_ns), in rank order; a warm spare is alone. */
static struct ctl_node_ref group_of(const struct rnode *v, size_t n, size_t i)
{
	struct ctl_node_ref p = pnode(&v[i]);
	const struct rnode *first = &v[i];

	for (size_t k = 0; k < n; k++) {
		if (v[k].job != v[i].job || v[k].pool != v[i].pool ||
		    v[k].created_ns != v[i].created_ns ||
		    ((v[k].spare || v[i].spare) && k != i))
			continue;
		p.group_size++;
		p.group_index += v[k].rank < v[i].rank;
		if (v[k].rank < first->rank)
			first = &v[k];
	}
	p.group_first = first->id;
	return p;
}

/* Start node n.  What a failure means comes from its class (clouds.c,
 * cloud/compute.h): capacity (-ENOSPC) and quota (-EDQUOT) end the node
 * and mark the pool, so the next placement goes elsewhere; throttling
 * (-EBUSY) keeps it REQUESTED and paces new launches at about the rate
 * the cloud grants (c->launch_pace: halved at each throttle, grown per
 * success - the rate limit is the account's, and a backoff after every
 * refusal would let a burst of launches through once a minute);
 * transient errors (-SR_EHTTP, -ETIMEDOUT, -EAGAIN, -EINTR) and our own
 * expired credentials (-EKEYEXPIRED: the daemon alerts, the job is not
 * at fault) keep it REQUESTED and pace every launch with one backoff
 * with jitter; auth (-EACCES)
 * and invalid (-EINVAL) fail the job; an idempotency conflict (-EEXIST)
 * and anything else end the node, and it is replaced under a new key. */
static void start_node(struct ctl *c, struct store *db, const struct rnode *n,
		       struct ctl_node_ref p, int64_t now)
{
	struct commit_ud u = { c, db, now, n->id };
	struct sr_err e = { 0 };
	int64_t mono = ctl__mono(c), wait;
	char image[256];
	int rc;

	if (!c->launch_bo.base_ns) {
		sr_backoff_init(&c->launch_bo, SR_NS_PER_SEC, 60 * SR_NS_PER_SEC);
		/* after a throttle: 2 launches a second, halving to one in
		 * 20 s, +1 a second per 4 successes, free again above 10 */
		sr_pacer_init(&c->launch_pace, 2, 0.05, 10, 0.25);
	}
	/* a new launch waits its turn; one in flight is polled whatever the
	 * pacing (its answer may be in) */
	if (!ctl__launch_pending(c, n->id) &&
	    (!sr_backoff_ready(&c->launch_bo, mono) ||
	     !sr_pacer_take(&c->launch_pace, mono)))
		return;
	/* a pool marked without capacity takes no new launch; one in
	 * flight is awaited - ended here, its instance ran on unpolled, and
	 * its entry in the launch table kept it from the leak sweep */
	if (n->spot && !ctl__launch_pending(c, n->id) &&
	    !ctl__spot_open(c, n->pool)) {
		end_tx(c, db, n, "TERMINATED", "capacity", now, false);
		return;
	}
	if (!ctl__launch_pending(c, n->id)) {
		rc = job_image(db, n->job, n->region, image, sizeof image, &e);
		if (rc) {
			sr_error("recon", "cannot read the job's image", "node=%"
				 PRId64 " err=\"%s\"", n->id, sr_err_str(&e, rc));
			return; /* the next pass tries again */
		}
		p.image = image;
	}
	rc = ctl__launch(c, &p, commit_boot, &u, &e);
	switch (rc) {
	case 0:
		sr_backoff_ok(&c->launch_bo);
		sr_pacer_ok(&c->launch_pace);
		return;
	case -ESTALE:
		/* fenced: this daemon lost its lease - before the launch
		 * was sent, or before its instance was recorded (then the
		 * launch is sent again under its key by whoever leads, and
		 * the cloud answers with that instance) */
		sr_warn("recon", "launch not done: the lease is gone", "node=%"
			PRId64 " err=\"%s\"", n->id, sr_err_str(&e, rc));
		return;
	case -EINPROGRESS:
		/* the cloud carries the launch out: QUEUED, asked again on
		 * the next pass (or when the driver wakes us) */
		if (!n->phase[0])
			set_phase(db, n, "REQUESTED", "queued");
		return;
	case -EBUSY:
		sr_pacer_throttled(&c->launch_pace, mono);
		sr_warn("recon", "launch throttled", "node=%" PRId64 " err=\"%s\""
			" launches_per_s=%.2f", n->id, sr_err_str(&e, rc),
			c->launch_pace.rate);
		return;
	case -SR_EHTTP:
	case -ETIMEDOUT:
	case -EAGAIN:
	case -EINTR:
	case -EKEYEXPIRED:
		wait = sr_backoff_fail(&c->launch_bo, mono);
		sr_warn("recon", "launch deferred", "node=%" PRId64 " err=\"%s\""
			" retry_in_ms=%" PRId64, n->id, sr_err_str(&e, rc),
			wait / 1000000);
		return;
	case -EACCES:
	case -EINVAL:
		sr_error("recon", "launch refused", "node=%" PRId64 " err=\"%s\"",
			 n->id, sr_err_str(&e, rc));
		refuse_tx(c, db, n, now, sr_err_str(&e, rc));
		return;
	case -ENOSPC:
	case -EDQUOT:
		/* no capacity, or an account limit, there now: the next
		 * placement looks elsewhere */
		ctl__pool_mark(c, n->pool);
		sr_warn("recon", "no capacity", "node=%" PRId64 " pool=%d err=\"%s\"",
			n->id, n->pool, sr_err_str(&e, rc));
		end_tx(c, db, n, "TERMINATED", rc == -ENOSPC ? "capacity" : "quota",
		       now, false);
		return;
	default:
		sr_error("recon", "provision failed", "node=%" PRId64 " err=\"%s\"",
			 n->id, sr_err_str(&e, rc));
		end_tx(c, db, n, "TERMINATED", "provision_failed", now, false);
		return;
	}
}

/* A node past its launch (BOOTING, READY) with no instance recorded: its
 * agent registered before the launch's answer was committed, and that
 * answer never was (a commit fenced after a failover, a daemon that died
 * in between, or a launch in flight that nobody polled once the node was
 * READY: start_node polls only REQUESTED nodes).  Nothing recorded its
 * instance then: the listing matched it by tag (notices), but the sweep
 * after a crash skips a node with no instance, the launch held a slot
 * of the in-flight table for good, and an instance the cloud never
 * listed under the tag ran unseen for the job's whole life.  Each pass:
 * the running instance the cloud lists under the node's tag is recorded
 * (the launch in flight and its kept parameters dropped); else, once
 * the node is NOINST_NS old and on a listing that worked, the node ends
 * LOST and whatever runs under its tag is terminated (a launch in flight
 * with it); before that, this daemon's launch still in flight is polled
 * (its answer records the instance).
 * The bound is the EC2 watch's FRESH_NS: longer than any cloud takes to
 * list an instance it started.  true: ended. */
#define NOINST_NS (600 * SR_NS_PER_SEC)
static bool unrecorded_node(struct ctl *c, struct store *db,
			    const struct rnode *x, const struct ctl_node_obs *o,
			    bool listed, int64_t now)
{
	struct commit_ud u = { c, db, now, x->id };
	struct ctl_node_ref p = pnode(x);
	struct sr_err e = { 0 };
	int rc;

	if (listed && o->found[0]) {
		rc = store_begin(db, &e);
		if (!rc)
			rc = store_node_instance_found(db, x->id, o->found, &e);
		rc = store_end(db, rc < 0 ? rc : 0, &e);
		if (rc) {
			sr_error("recon", "cannot record a node's instance", "node=%"
				 PRId64 " instance=%s err=\"%s\"", x->id, o->found,
				 sr_err_str(&e, rc));
			return false;
		}
		ctl__launch_drop(c, x->id);
		ctl__launch_forget(c, x->id);
		sr_info("recon", "instance found by the node's tag", "node=%" PRId64
			" instance=%s", x->id, o->found);
		return false;
	}
	if (!listed || now - x->created_ns < NOINST_NS) {
		if (!ctl__launch_pending(c, x->id))
			return false;
		rc = ctl__launch(c, &p, commit_boot, &u, &e);
		if (rc && rc != -EINPROGRESS)
			sr_warn("recon", "launch of a registered node failed", "node=%"
				PRId64 " err=\"%s\"", x->id, sr_err_str(&e, rc));
		return false;
	}
	sr_warn("recon", "no instance listed for a live node: ending it", "node=%"
		PRId64 " state=%s age_s=%" PRId64, x->id, x->state,
		(now - x->created_ns) / SR_NS_PER_SEC);
	end_tx(c, db, x, "LOST", "no instance listed", now, true);
	return true;
}

/* The cloud announced node n's interruption at kill_at (its own time,
 * wall clock): that is the node's deadline, for the final checkpoint and
 * the kill. */
static void notice_node(struct ctl *c, struct store *db, const struct rnode *n,
			int64_t now, int64_t kill_at)
{
	struct sr_err e = { 0 };
	char msg[320], t[40], where[128];
	int rc;

	sr_time_format_rfc3339(kill_at, 3, t, sizeof t);
	snprintf(msg, sizeof msg, "spot capacity of %s %s reclaimed: node %"
		 PRId64 " will be terminated at %s", recon__where(n->cloud,
		 n->region, n->zone, where, sizeof where), n->itype, n->id, t);
	rc = store_begin(db, &e);
	if (!rc) {
		json_t *d = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s}", "pool", n->pool,
				      "cloud", n->cloud, "region", n->region,
				      "zone", n->zone, "instance_type", n->itype,
				      "time", t);

		rc = ctl_event_append(db, n->job, "notice", NULL, NULL, n->id, now,
				   ctl__sim_at(c, now), d, msg, &e);
		json_decref(d);
	}
	/* the node's notice, and the job's preemption (recon_preempt.c) */
	if (!rc)
		rc = recon__node_reclaimed(c, db, n->id, now, kill_at, &e);
	rc = store_end(db, rc < 0 ? rc : 0, &e);
	if (!rc)
		sr_info("recon", "preemption notice", "node=%" PRId64 " job=%" PRId64
			" pool=%d", n->id, n->job, n->pool);
}

static void bill_tx(struct ctl *c, struct store *db, const struct rnode *n, int64_t now)
{
	struct sr_err e = { 0 };
	int rc = store_begin(db, &e);

	if (!rc)
		rc = bill(c, db, n, now, &e);
	rc = store_end(db, rc, &e);
	if (rc)
		sr_error("recon", "billing failed", "node=%" PRId64 " err=\"%s\"",
			 n->id, sr_err_str(&e, rc));
}

int recon__launch_refused(struct store *db, int64_t job, char *msg, size_t cap)
{
	struct sr_err e = { 0 };

	return store_job_refusal(db, job, msg, cap, &e);
}

/* ---- silence on the monotonic clock ------------------------------------------ */

/* The table is kept sorted by node id: lookups are binary searches, and
 * the prune is one merge walk over the live nodes (also by id), so a pass
 * over many thousands of nodes stays linear. */
int64_t recon__silence(struct hbtable *t, int64_t node, int64_t key,
		       int64_t mono_now)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].node < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->n && t->v[lo].node == node) {
		if (t->v[lo].key != key) {
			t->v[lo].key = key;
			t->v[lo].mono_ns = mono_now;
		}
		return mono_now - t->v[lo].mono_ns;
	}
	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 16;
		struct hbseen *nv = realloc(t->v, nc * sizeof *nv);

		if (!nv)
			return 0;
		t->v = nv;
		t->cap = nc;
	}
	memmove(&t->v[lo + 1], &t->v[lo], (t->n - lo) * sizeof t->v[0]);
	t->v[lo] = (struct hbseen){ node, key, mono_now };
	t->n++;
	return 0;
}

void recon__silence_prune(struct hbtable *t, const struct rnode *live, size_t n)
{
	size_t k = 0, j = 0;

	for (size_t i = 0; i < t->n; i++) {
		while (j < n && live[j].id < t->v[i].node)
			j++;
		if (j < n && live[j].id == t->v[i].node)
			t->v[k++] = t->v[i];
	}
	t->n = k;
}

void recon__silence_clear(struct hbtable *t)
{
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}

void ctl__silence_free(struct ctl *c)
{
	free(c->spared.job);
	memset(&c->spared, 0, sizeof c->spared);
	if (c->unseen) {
		recon__silence_clear(c->unseen);
		free(c->unseen);
		c->unseen = NULL;
	}
	if (!c->hbseen)
		return;
	recon__silence_clear(c->hbseen);
	free(c->hbseen);
	c->hbseen = NULL;
}

static bool bill_due_of(const struct ctl_config *cfg, const struct rnode *x,
			int64_t now)
{
	return now - x->billed_until_ns >= cfg->bill_interval_ms * 1000000;
}

enum node_act recon__node_act(const struct ctl_config *cfg,
			      const struct rnode *x, const struct ctl_node_obs *o,
			      bool listed, int64_t now, int64_t silent_ns)
{
	bool booting = strcmp(x->state, "BOOTING") == 0;
	bool bill_due = bill_due_of(cfg, x, now);

	if (strcmp(x->state, "REQUESTED") == 0)
		return now >= x->boot_at_ns ? NODE_START : NODE_KEEP;
	if (x->notice_ns) {
		/* The notice deadline is the cloud's own time, kept in the
		 * database across restarts (none: a notice that came without
		 * one); an instance the provider says is gone goes at once -
		 * but only on a list() that worked.  One that shuts down
		 * before that deadline (GCE lists STOPPING from its notice)
		 * still runs its agent, whose last reports - the final
		 * checkpoint, the exit - must not meet a node already ended
		 * (409): the pass ends it once it owes none. */
		if (x->kill_ns && now >= x->kill_ns)
			return NODE_END_PREEMPTED;
		if (listed && !o->alive)
			return o->stopping && x->kill_ns ? NODE_GOING :
			       NODE_END_PREEMPTED;
		return bill_due ? NODE_BILL : NODE_KEEP;
	}
	if (listed && o->notice_ns)
		return NODE_NOTICE;
	/* its instance went without a notice: at once when the cloud says
	 * it is terminated, not waiting out the heartbeat timeout; an
	 * instance not listed (or shutting down) only after a while */
	if (listed && x->instance[0] && !o->alive && o->gone)
		return NODE_LOST_GONE;
	if (listed && x->instance[0] && !o->alive &&
	    o->missing_ns >= RECON_MISSING_NS)
		return NODE_LOST_MISSING;
	/* no boot timeout while the cloud still boots it (PENDING) */
	if (booting && silent_ns > cfg->boot_timeout_ms * 1000000 &&
	    !(listed ? o->pending : strcmp(x->phase, "pending") == 0))
		return NODE_LOST_BOOT;
	if (!booting && silent_ns > cfg->heartbeat_timeout_ms * 1000000)
		return NODE_LOST_HB;
	return bill_due ? NODE_BILL : NODE_KEEP;
}

static int id_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The pass's spared jobs from its live nodes v[0..n) (spares included). */
static void spared_note(struct ctl *c, const struct rnode *v, size_t n)
{
	size_t k = 0;

	c->spared.valid = false;
	c->spared.n = 0;
	for (size_t i = 0; i < n; i++)
		k += v[i].spare;
	if (k) {
		int64_t *p = realloc(c->spared.job, k * sizeof *p);

		if (!p)
			return; /* !valid: every job is asked */
		c->spared.job = p;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].spare)
			c->spared.job[c->spared.n++] = v[i].job;
	}
	if (c->spared.n)
		qsort(c->spared.job, c->spared.n, sizeof *c->spared.job, id_cmp);
	c->spared.valid = true;
}

bool recon__job_spared(const struct ctl *c, int64_t job)
{
	return !c->spared.valid ||
	       (c->spared.n && bsearch(&job, c->spared.job, c->spared.n,
				       sizeof job, id_cmp));
}

int recon__nodes_pass(struct ctl *c, struct store *db)
{
	struct rnode *v = NULL;
	struct ctl_node_ref *pn = NULL;
	struct ctl_node_obs *obs = NULL;
	int64_t now = ctl__now(c), mono = ctl__mono(c);
	size_t n = 0, i;
	bool listed;
	int rc;

	if (!c->hbseen) {
		c->hbseen = calloc(1, sizeof *c->hbseen);
		if (!c->hbseen)
			return -ENOMEM;
	}
	if (!c->unseen) {
		c->unseen = calloc(1, sizeof *c->unseen);
		if (!c->unseen)
			return -ENOMEM;
	}
	recon__kill_pending(c, db);
	c->spared.valid = false;
	rc = recon__nodes_live(c, db, 0, &v, &n);
	if (rc)
		goto out;
	spared_note(c, v, n);
	recon__silence_prune(c->hbseen, v, n);
	recon__silence_prune(c->unseen, v, n);
	/* observed also with no live node: the clouds' leaks are swept */
	pn = calloc(n + 1, sizeof *pn);
	obs = calloc(n + 1, sizeof *obs);
	if (!pn || !obs) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		pn[i] = pnode(&v[i]);
	listed = ctl__observe(c, pn, n, obs) == 0;
	if (!listed)
		sr_warn("recon", "cloud list failed", "nodes=%zu: no node is "
			"noticed or ended on this pass", n);
	for (i = 0; i < n; i++) {
		const struct rnode *x = &v[i];
		bool booting = strcmp(x->state, "BOOTING") == 0;
		/* PENDING while the cloud boots the instance (or while we
		 * cannot tell), BOOTING from when it runs */
		bool cloud_boots = listed ? obs[i].alive && obs[i].pending :
				   strcmp(x->phase, "pending") == 0;
		/* a boot's silence counts from when the cloud has the
		 * instance running (-2 -> -1 restarts it) */
		int64_t key = !booting ? x->last_hb_ns : cloud_boots ? -2 : -1;

		if (booting && listed && !cloud_boots && x->phase[0])
			set_phase(db, x, "BOOTING", NULL);
		else if (booting && listed && cloud_boots && !x->phase[0])
			set_phase(db, x, "BOOTING", "pending");
		int64_t silent = recon__silence(c->hbseen, x->id, key, mono);

		/* how long its instance has been missing, on listings that
		 * worked (a failed one changes nothing) */
		if (listed && x->instance[0]) {
			bool miss = !obs[i].alive && (obs[i].unlisted ||
						      obs[i].stopping);
			int64_t t = recon__silence(c->unseen, x->id, miss, mono);

			obs[i].missing_ns = miss ? t : 0;
		}

		if (!x->instance[0] && strcmp(x->state, "REQUESTED") &&
		    unrecorded_node(c, db, x, &obs[i], listed, now))
			continue;
		switch (recon__node_act(&c->cfg, x, &obs[i], listed, now, silent)) {
		case NODE_START:
			start_node(c, db, x, group_of(v, n, i), now);
			break;
		case NODE_END_PREEMPTED:
			end_tx(c, db, x, "TERMINATED", "preempted", now, true);
			break;
		case NODE_GOING:
			if (!recon__node_owes_exit(c, db, x))
				end_tx(c, db, x, "TERMINATED", "preempted", now, true);
			else if (bill_due_of(&c->cfg, x, now))
				bill_tx(c, db, x, now);
			break;
		case NODE_NOTICE:
			notice_node(c, db, x, now, obs[i].notice_ns);
			break;
		case NODE_LOST_BOOT:
			end_tx(c, db, x, "LOST", "never registered", now, true);
			break;
		case NODE_LOST_HB:
			end_tx(c, db, x, "LOST", "heartbeat timeout", now, true);
			break;
		case NODE_LOST_GONE:
			sr_warn("recon", "instance terminated without a notice",
				"node=%" PRId64 " instance=%s", x->id, x->instance);
			end_tx(c, db, x, "LOST", "instance terminated", now, true);
			break;
		case NODE_LOST_MISSING:
			sr_warn("recon", "instance not running for long: ending its "
				"node", "node=%" PRId64 " instance=%s s=%" PRId64,
				x->id, x->instance, obs[i].missing_ns / SR_NS_PER_SEC);
			end_tx(c, db, x, "LOST", "instance not listed", now, true);
			break;
		case NODE_BILL:
			bill_tx(c, db, x, now);
			break;
		case NODE_KEEP:
			break;
		}
	}
out:
	free(v);
	free(pn);
	free(obs);
	return rc;
}

/* After a crash between a commit that ended a node and its terminate,
 * the instance may still run: terminate every node that ended in the
 * last hour again (idempotent; the provider tells a live one from a
 * gone one). */
void recon__sweep_orphans(struct ctl *c, struct store *db)
{
	struct rnode *v = NULL;
	size_t n = 0;

	if (recon__nodes_query(c, db, "state IN ('TERMINATED','LOST') AND instance_id IS NOT NULL"
			" AND terminated_ns > ?1", ctl__now(c) -
			INT64_C(3600) * SR_NS_PER_SEC, &v, &n))
		return;
	for (size_t i = 0; i < n; i++)
		recon__kill(c, db, &v[i]);
	free(v);
}
