/*
 * ctl_int.h - the daemon's core, shared by the files of lib/ctl (not
 * public): struct ctl, its clocks, its store connections, the leader's
 * lease, waking the reconciler.  The parts along the data flow have
 * their own headers:
 *   ctl/routes.h   the API: requests, routes, views, the HTTP server
 *   ctl/recon.h    the reconciler: passes, policy cache, capacity marks,
 *                  event hooks
 *   ctl/clouds.h   the open providers (the registry's, lib/providers)
 */
#ifndef SR_CTL_INT_H
#define SR_CTL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common/backoff.h"
#include "ctl/auth.h"
#include "ctl/ctl.h"
#include "cloud/provider.h"
#include "ctl/clouds.h"
#include "store/store.h"

/* The SQLite file in the state directory (the default store). */
#define CTL_DB_FILE "spotrun.db"

struct MHD_Daemon;
struct ctl_pol;
struct hbtable;

/* The reconciler's clocks.  NULL functions = the system's real-time and
 * monotonic clocks (sr_time_real_ns, sr_time_mono_ns); unit tests
 * inject their own so a pass is deterministic (no sleeps). */
struct ctl_clock {
	int64_t (*real_ns)(void *ud);
	int64_t (*mono_ns)(void *ud);
	void *ud;
};

#define CTL_MARKS_MAX 64 /* capacity marks (recon.h) */

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
	struct ctl_team_token *team_tokens; /* finops.json tokens (teamtok.h) */
	size_t nteam_tokens;
	unsigned char imds_key[CTL_DIGEST_LEN];
	unsigned char secrets_key[CTL_DIGEST_LEN]; /* seals job secrets */
	int port;

	/* Cloud clock: sim_s = sim0_s + (real_ns - real0_ns) * scale / 1e9.
	 * (real0_ns, sim0_s) is read from settings at start; a new anchor
	 * (first start, or a new time scale) is written only by the leader,
	 * fenced (ctl__clock_save), until then clock_unsaved. */
	int64_t real0_ns;
	double sim0_s;
	atomic_bool clock_unsaved;

	/* The open providers, in ownership order (clouds.c): a pool
	 * belongs to the first whose market describes it. */
	struct ctl_cloud *clouds;
	size_t nclouds, capclouds;
	struct cloud_host host;      /* what the providers borrow */
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
		/* this process's id: random, or its state dir's previous
		 * daemon's, reclaimed (lease_id.c) */
		char holder[17];
		int id_fd;               /* lease.lock held, -1 none */
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
	/* Since when each live node's recorded instance has been missing
	 * from the listings (absent or shutting down; the same table, keyed
	 * 1 while missing: recon_nodes.c; released with hbseen). */
	struct hbtable *unseen;

	/* The jobs with a live spare not yet adopted, as this pass's node
	 * list read them (recon__nodes_pass; sorted ids; reconciler thread
	 * only; released by ctl__silence_free).  !valid: the list was not
	 * read, and every job may have one. */
	struct {
		int64_t *job;
		size_t n;
		bool valid;
	} spared;

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
	/* Paces new launches once a cloud throttled them (AIMD: at about the
	 * rate it grants; reconciler thread only). */
	struct sr_pacer launch_pace;
};

/* The calling thread's store connection (opened on first use); NULL on
 * failure. */
struct store *ctl__store(struct ctl *c);

/* The leader's lease (lease.c).  _tick: take or renew it, on a
 * connection without a fence; _fence: the store fence (store_set_fence)
 * of the reconciler's connection and of every HTTP thread's; _release: let a standby take over at
 * once (clean stop).  ctl__endpoints: this daemon's URL, then the
 * other live members', comma-separated (what agents are given). */
int ctl__lease_init(struct ctl *c, struct sr_err *e);
/* lease_id.c: _claim (at start, once the state dir exists): hold
 * <state>/lease.lock and take the holder id of this state dir's previous
 * daemon (gone: the lock was free), so a lease it left is taken at once;
 * the random id when another live daemon holds the lock.  _release: let
 * the lock go (ctl_stop). */
void ctl__lease_id_claim(struct ctl *c);
void ctl__lease_id_release(struct ctl *c);
void ctl__lease_tick(struct ctl *c, struct store *db);
/* Write this daemon's new clock anchor (first start, new time scale) to
 * the settings when it has one and leads; db must carry the lease fence
 * (store_set_fence(db, ctl__lease_fence, c)), so a daemon that lost the
 * lease writes nothing.  0 when written or nothing to write (a standby
 * keeps its anchor unsaved for when it leads). */
int ctl__clock_save(struct ctl *c, struct store *db, struct sr_err *e);
/* The leader renews its lease when a third of it has passed (also within
 * a long reconciler pass, between jobs); false once it is no longer the
 * leader. */
bool ctl__lease_keep(struct ctl *c, struct store *db);
int ctl__lease_fence(struct store *s, void *ud, struct sr_err *e);
/* Fencing beyond the database (cloud/compute.h, FENCING).  _epoch: the
 * epoch this daemon leads under; when it does not lead, the last one it
 * led under (or CTL_EPOCH_NEVER), which _fence_ok refuses - never 0,
 * which a driver sends unfenced.  _fence_ok: whether
 * it still holds `epoch` - leads under it and renewed it within the
 * lease less a margin on its own monotonic clock, so a leader paused
 * past its lease (SIGSTOP, a frozen VM) sends nothing when it wakes,
 * even before its reconciler notices.  Any thread. */
#define CTL_EPOCH_NEVER INT64_MAX /* no epoch held yet: always fenced */
int64_t ctl__lease_epoch(struct ctl *c);
bool ctl__lease_fence_ok(struct ctl *c, int64_t epoch);
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

/* ctl_start with an injected cloud (owned from then: destroyed at
 * ctl_stop, also on failure) and clock (NULL: the system's), set before
 * any thread starts; for tests. */
int ctl__start_with(const struct ctl_config *cfg, struct ctl_cloud *cloud,
		    const struct ctl_clock *clock, struct ctl **out,
		    struct sr_err *e);

#endif
