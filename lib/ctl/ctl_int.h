/*
 * ctl_int.h - internals shared by the files of lib/ctl (not public).
 */
#ifndef SR_CTL_INT_H
#define SR_CTL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common/backoff.h"
#include "ctl/auth.h"
#include "ctl/ctl.h"
#include "cloud/compute.h"
#include "cloud/market.h"
#include "ctl/router.h"
#include "store/store.h"

/* The SQLite file in the state directory (the default store). */
#define CTL_DB_FILE "spotrun.db"

struct MHD_Daemon;

/* One job's live policy memory (polcache.c).  Owned by the reconciler
 * thread; `state` is `len` bytes of the policy's state, released with
 * place_state_free(). */
struct ctl_pol {
	int64_t job;
	void *state;
	size_t len;
};

/* The reconciler's clocks.  NULL functions = the system's real-time and
 * monotonic clocks (sr_time_real_ns, sr_time_mono_ns); unit tests
 * inject their own so a pass is deterministic (no sleeps). */
struct ctl_clock {
	int64_t (*real_ns)(void *ud);
	int64_t (*mono_ns)(void *ud);
	void *ud;
};

#define CTL_MARKS_MAX 64

/* ---- clouds (provider contract v2: cloud/market.h + cloud/compute.h) ---- */

/* What a node needs at its first boot; a cloud's bootstrap() turns it
 * into the text its driver hands the instance (EC2: a user-data script;
 * the local cloud: a JSON startup document).  Borrowed. */
struct ctl_boot {
	int64_t node_id, job_id;
	const char *token;         /* the node's bearer token */
	const char *api_url;       /* the control plane, as nodes reach it */
};

/* One cloud the reconciler drives: a market view, a compute driver and
 * the node bootstrap (clouds.c).  Owned by the daemon (ctl_stop destroys
 * mkt, then drv). */
struct ctl_cloud {
	char name[16];             /* "local", "aws": nodes.provider */
	/* Nodes see the control plane's disk (the local cloud): the node
	 * API may hand them directories under the state dir.  False for a
	 * cloud: a node keeps everything on its own disk. */
	bool shared_disk;
	struct cloud_market mkt;
	struct cloud_driver drv;
	/* *out malloc'd; the caller wipes and frees it (it holds the token). */
	int (*bootstrap)(struct ctl *c, const struct ctl_boot *b, char **out,
			 struct sr_err *e);
};

#define CTL_CLOUDS_MAX 4
#define CTL_INFLIGHT_MAX 64

/* A node as the clouds see it (clouds.c). */
struct ctl_node_ref {
	int64_t id, job_id;
	int pool;
	bool spot;
	const char *instance_id;   /* the cloud's id; NULL/"" not known yet */
};

/* What a cloud says about a node's instance. */
struct ctl_node_obs {
	bool alive;                /* the instance still exists */
	bool reclaim;              /* the cloud announced its interruption */
	bool pending;              /* the cloud still boots it: a slow
				      cloud's boot, not the node's, so no
				      boot timeout runs */
};

/* A launch the reconciler started and has not committed. */
struct ctl_inflight {
	int64_t node;
	int cloud;
	struct cloud_req *req;
};

struct ctl {
	struct ctl_config cfg;
	struct ctl_clock clock;
	char state_dir[2048];
	char db_path[2304];
	char data_dir[2048];
	char agent_path[4200];
	char url[128];               /* http[s]://host:port as agents see it */
	char *tls_cert_pem, *tls_key_pem; /* TLS: PEM text, owned (server.c) */
	char admin_token[CTL_TOKEN_HEX + 1];
	unsigned char admin_digest[CTL_DIGEST_LEN];
	unsigned char imds_key[CTL_DIGEST_LEN];
	unsigned char secrets_key[CTL_DIGEST_LEN]; /* seals job secrets */
	int port;

	/* Cloud clock: sim_s = sim0_s + (real_ns - real0_ns) * scale / 1e9.
	 * (real0_ns, sim0_s) is persisted in settings at first start. */
	int64_t real0_ns;
	double sim0_s;

	struct ctl_cloud clouds[CTL_CLOUDS_MAX]; /* in ownership order */
	size_t nclouds;
	char cluster[32];            /* the spotrun:cluster tag (settings) */
	struct ctl_inflight fly[CTL_INFLIGHT_MAX]; /* reconciler thread */
	size_t nfly;

	struct MHD_Daemon *httpd;
	pthread_t reconciler;
	bool reconciler_started;
	atomic_bool stopping;
	pthread_mutex_t wake_mu;
	pthread_cond_t wake_cv;
	bool wake;

	/* The leader's lease (lease.c): written by the reconciler thread;
	 * `leader` read by any thread, leader_url under mu. */
	struct {
		char holder[17];         /* this process's random id */
		_Atomic int64_t epoch;   /* held epoch (while leader) */
		atomic_bool leader;
		/* when the held lease was last renewed (or taken), on this
		 * process's monotonic clock: it is ours until then + lease */
		_Atomic int64_t renewed_mono;
		int64_t member_mono;
		bool started;            /* take() was tried once */
		int64_t taken_mono;      /* when this daemon took it */
		_Atomic int64_t passed_epoch; /* the last epoch in which a
					       * reconciler pass completed */
		/* the leader's completed reconciler passes: count, total,
		 * longest and last duration (monotonic ns; GET /v1/lease) */
		_Atomic int64_t passes, pass_sum_ns, pass_max_ns, pass_last_ns;
		/* writes answered 503 not_leader (router.c) */
		_Atomic int64_t writes_refused;
		pthread_mutex_t mu;
		bool mu_init;
		char leader_url[128];    /* the last leader seen */
	} lease;

	pthread_key_t db_key;        /* per-thread struct store * */
	pthread_mutex_t conns_mu;    /* every per-thread connection, to close */
	struct store **conns;
	size_t nconns, capconns;
	/* set once the start-up connection is open: a later one waits for
	 * an unreachable PostgreSQL (STORE_WAIT) instead of failing */
	atomic_bool store_wait;

	/* Policy states of the unfinished jobs (reconciler thread only). */
	struct ctl_pol *pols;
	size_t npols, cappols;

	/* Node silence on the monotonic clock (recon_int.h; reconciler
	 * thread only; released by ctl__silence_free). */
	struct hbtable *hbseen;

	/* Pools where a launch just failed for lack of capacity: no spot
	 * there until `until_ns` (real clock; reconciler thread only). */
	struct ctl_mark {
		int pool;
		int64_t until_ns;
	} marks[CTL_MARKS_MAX];
	size_t nmarks;

	/* Paces launches after the cloud throttled us or failed
	 * transiently (monotonic clock; reconciler thread only). */
	struct sr_backoff launch_bo;
};

/* Release c->hbseen (recon_nodes.c). */
void ctl__silence_free(struct ctl *c);

/* Policy state cache (polcache.c, reconciler thread only).  A policy's
 * state may own heap memory (policy_ops.destroy), so it lives here, in
 * this process, and never travels through the database as bytes.
 * ctl__pol_get: the job's entry, or NULL.  ctl__pol_put: take ownership
 * of `state` for the job (releasing any previous one); -ENOMEM leaves
 * `state` with the caller.  ctl__pol_prune: release the entries of jobs
 * not in `live` (ascending ids).  ctl__pol_clear: release all. */
struct ctl_pol *ctl__pol_get(struct ctl *c, int64_t job);
int ctl__pol_put(struct ctl *c, int64_t job, void *state, size_t len);
void ctl__pol_prune(struct ctl *c, const int64_t *live, size_t n);
void ctl__pol_clear(struct ctl *c);

/* Capacity marks (recon_place.c, reconciler thread only).  _mark: a
 * launch in `pool` failed for lack of capacity, or the cloud noticed a
 * node there (reclaiming it); the pool counts as without spot for one
 * policy tick.  _open: the pool sells spot now -
 * the market view says so and no mark holds. */
void ctl__pool_mark(struct ctl *c, int pool);
bool ctl__spot_open(struct ctl *c, int pool);

/* The provider that sells `pool` (its name, as nodes.provider records
 * it) and whether its nodes share the control plane's disk
 * (recon_place.c; any thread). */
const char *ctl__prov_name(const struct ctl *c, int pool);
bool ctl__prov_shared(const struct ctl *c, int pool);

/* The calling thread's store connection (opened on first use); NULL on
 * failure. */
struct store *ctl__store(struct ctl *c);

/* The leader's lease (lease.c).  _tick: take or renew it, on a
 * connection without a fence; _fence: the store fence (store_set_fence)
 * of the reconciler's connection and of every HTTP thread's; _release: let a standby take over at
 * once (clean stop).  ctl__endpoints: this daemon's URL, then the
 * other live members', comma-separated (what agents are given). */
int ctl__lease_init(struct ctl *c, struct sr_err *e);
void ctl__lease_tick(struct ctl *c, struct store *db);
/* The leader renews its lease when a third of it has passed (also within
 * a long reconciler pass, between jobs); false once it is no longer the
 * leader. */
bool ctl__lease_keep(struct ctl *c, struct store *db);
int ctl__lease_fence(struct store *s, void *ud, struct sr_err *e);
void ctl__lease_release(struct ctl *c, struct store *db);
/* The reconciler completed a pass as the leader, in took_ns: counted for
 * GET /v1/lease; the first one of an epoch is logged ("first reconciler pass as the leader") and shown by
 * GET /v1/lease ("passed"). */
void ctl__lease_passed(struct ctl *c, int64_t took_ns);
bool ctl__is_leader(const struct ctl *c);
/* The leader, and its lease not past on this process's monotonic clock
 * (a process paused past its lease knows it lost it before it touches
 * the store): what the router asks before a write (any thread). */
bool ctl__lease_valid(const struct ctl *c);
/* A write of this thread's current request was refused by the fence
 * (ctl__lease_fence): the router answers 503 not_leader.  _clear at the
 * start of each request. */
void ctl__fenced_clear(void);
bool ctl__fenced(void);
void ctl__leader_url(struct ctl *c, char *buf, size_t n);
int ctl__endpoints(struct ctl *c, char *buf, size_t n);

/* Real-time and monotonic now, from c->clock (ctl.c). */
int64_t ctl__now(const struct ctl *c);
int64_t ctl__mono(const struct ctl *c);

/* Cloud clock now / for a wall-clock instant. */
double ctl__sim_now(const struct ctl *c);
double ctl__sim_at(const struct ctl *c, int64_t real_ns);

/* Wake the reconciler early (an API call changed desired state). */
void ctl__wake(struct ctl *c);

/* Route registration of lib/ctl's own routes (static tables, since a
 * constructor in a static library is dropped unless referenced). */
void ctl__routes_jobs(void);
void ctl__routes_nodes(void);
void ctl__routes_imds(void); /* the local cloud's (prov_local.c registers) */

/* HTTP server (server.c).  _prepare checks the listen address against
 * the TLS settings and loads the certificate (before anything slow);
 * _start binds and serves. */
int ctl__http_prepare(struct ctl *c, struct sr_err *e);
int ctl__http_start(struct ctl *c, struct sr_err *e);
void ctl__http_stop(struct ctl *c);

/* ctl_start with an injected cloud (owned from then: destroyed at
 * ctl_stop, also on failure) and clock (NULL: the system's), set before
 * any thread starts; for tests. */
int ctl__start_with(const struct ctl_config *cfg, const struct ctl_cloud *cloud,
		    const struct ctl_clock *clock, struct ctl **out,
		    struct sr_err *e);

/* Reconciler (reconcile.c). */
void *ctl__reconcile_main(void *arg);
/* One pass over every job and node; for tests. */
int ctl__reconcile_once(struct ctl *c);

/* The clouds (clouds.c).  The market of the first cloud that
 * describes a pool sells it; real clouds come before the local one.
 *   _offerings / _describe: the merged market view (any thread).
 *   _launch: start node n (token for its bootstrap).  0: the instance
 *     is known and commit(ud, id, blob, pending: the cloud still boots
 *     it) recorded it; -EINPROGRESS: the
 *     cloud call runs on, ask again on a later pass; else the class's
 *     code (compute.h: -ENOSPC capacity, -EDQUOT quota, -EACCES auth,
 *     -EBUSY throttle, -SR_EHTTP transient, -EINVAL invalid) with *e.
 *   _terminate: idempotent; by instance id, or by the node's tag.
 *   _observe: every cloud's instances of this cluster, matched to the
 *     live nodes v[0..n) (obs[i]); instances no live node holds are
 *     terminated (leaks); refreshes the market views' caches.
 * Reconciler thread only, but _offerings/_describe/_name/_shared. */
int ctl__clouds_add(struct ctl *c, const struct ctl_cloud *cl, struct sr_err *e);
/* This control plane's cluster id (the spotrun:cluster tag every
 * instance carries): made once, kept in the settings; into c->cluster. */
int ctl__cluster_load(struct ctl *c, struct sr_err *e);
void ctl__clouds_free(struct ctl *c);
int ctl__cloud_of(const struct ctl *c, int pool);
int ctl__offerings(struct ctl *c, const struct cloud_query *q,
		   struct cloud_offering **out, size_t *n, struct sr_err *e);
int ctl__describe(struct ctl *c, int pool, struct cloud_offering *out);
int ctl__price_history(struct ctl *c, int pool, double step_s, int n,
		       double *usd_h);
int ctl__launch(struct ctl *c, const struct ctl_node_ref *n, const char *token,
		int (*commit)(void *ud, const char *id, const char *blob,
			      bool pending),
		void *ud, struct sr_err *e);
int ctl__terminate(struct ctl *c, const struct ctl_node_ref *n);
int ctl__observe(struct ctl *c, const struct ctl_node_ref *v, size_t n,
		 struct ctl_node_obs *obs);
/* "local,aws": the enabled clouds' names. */
void ctl__clouds_names(const struct ctl *c, char *out, size_t cap);

/* The local cloud (prov_local.c): its market, driver and bootstrap. */
int ctl__prov_local_init(struct ctl *c, struct ctl_cloud *out, struct sr_err *e);
/* The IMDS view of node `id`'s newest local instance (prov_local.c): 0,
 * or -SR_ENOTFOUND when the local cloud never launched one for it.
 * notice_ns: the interruption it scheduled (wall clock), 0 none. */
int ctl__local_imds(struct ctl *c, int64_t node, int64_t *notice_ns,
		    char *zone, size_t zcap, char *itype, size_t tcap, bool *spot);
/* AWS EC2 (prov_aws.c); needs c->url, c->data_dir, c->cluster. */
int ctl__prov_aws_init(struct ctl *c, struct ctl_cloud *out, struct sr_err *e);

/* The job/node JSON views (views.c), shapes in docs/api.md.
 * ctl__job_json: a new reference, or NULL with *e set (-SR_ENOTFOUND: no
 * such job; a store error is reported, never read as "no job").
 * ctl__node_json: a node row as the API serves it (a new reference), or
 * NULL when out of memory.
 * ctl__nodes_json: *out = the JSON array of store_node_list(s, job,
 * live_only, limit); 0 or an error. */
json_t *ctl__job_json(struct ctl *c, struct store *s, int64_t id,
		      bool with_nodes, struct sr_err *e);
struct store_node;
json_t *ctl__node_json(const struct store_node *n);
int ctl__nodes_json(struct store *s, int64_t job, bool live_only,
		    size_t limit, json_t **out, struct sr_err *e);

/* Fire event hooks for committed events (reconcile.c). */
void ctl__hooks_run(struct ctl *c, struct store *db);
void ctl__hooks_call(struct ctl *c, const json_t *ev);
void ctl__ticks_call(struct ctl *c, struct store *s);
size_t ctl__hooks_count(void);

/* Directive for a node, from the database (routes_nodes.c). */
json_t *ctl__directive(struct store *db, int64_t node_id);

/* One request, built by server.c, read through router.h's accessors. */
#define CTL_MAX_PARAMS 4
struct ctl_req {
	struct ctl *ctl;
	const char *method;
	const char *path;
	const char *auth_header;  /* Authorization, or NULL */
	const char *ctype;        /* Content-Type, or NULL */
	char *body;               /* NUL-terminated */
	size_t body_len;
	void *conn;               /* struct MHD_Connection * */
	int nparams;
	const char *pname[CTL_MAX_PARAMS];
	char pval[CTL_MAX_PARAMS][128];
	const char *long_param;   /* a {name} whose segment was too long */
	int64_t node_id;          /* authenticated node, 0 = admin/public */
};

/* Route and authenticate rq, run the handler, fill rs (router.c). */
void ctl__dispatch(struct ctl_req *rq, struct ctl_resp *rs);
/* Header value of the request (server.c). */
const char *ctl__req_header(const struct ctl_req *rq, const char *name);

#endif
