/*
 * store_ctl.h - the control plane's statements (lib/ctl) as functions
 * (store_ctl.c): lib/ctl holds no SQL of its own for these.  Each runs
 * inside the caller's transaction when there is one, returns 0 (or 1 /
 * 0 for "found" / "none") or a negative code with *e naming what failed.
 */
#ifndef SR_STORE_CTL_H
#define SR_STORE_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct store;

/* ---- work lost (lib/ctl/recon_lost.c) ---- */

/* An attempt that ended before its work was safe, until a later attempt
 * says what it restored (table lost_pending): with the place of one of
 * its nodes when read back. */
struct store_lost {
	int64_t attempt, node;               /* node 0: none */
	int64_t started_ns, ended_ns;        /* wall clock */
	int64_t step;                        /* last seen, -1 unknown */
	int64_t price_micros;                /* its nodes together, per hour */
	char cause[16];                      /* preemption lost crash move */
	char cloud[16], region[40], zone[40], itype[48];
};

/* Record attempt p->attempt (a second record of it is ignored). */
int store_lost_open(struct store *s, int64_t job, const struct store_lost *p,
		    struct sr_err *e);
/* The pending attempts older than `before` (0: all), oldest first, at
 * most cap into v: how many, or < 0. */
int store_lost_pending(struct store *s, int64_t job, int64_t before,
		       struct store_lost *v, int cap, struct sr_err *e);
int store_lost_clear(struct store *s, int64_t job, int64_t attempt,
		     struct sr_err *e);
/* Committed step `step` was first reported at at_ns during `attempt`
 * (table ckpt_seen; a later report of it is ignored). */
int store_ckpt_seen_add(struct store *s, int64_t job, int64_t attempt,
			int64_t step, int64_t at_ns, struct sr_err *e);
/* 1 and when/during which attempt `step` was committed, 0 never seen. */
int store_ckpt_seen_get(struct store *s, int64_t job, int64_t step,
			int64_t *at_ns, int64_t *attempt, struct sr_err *e);
/* 1 and the newest step committed during `attempt`, 0 none. */
int store_ckpt_newest_in(struct store *s, int64_t job, int64_t attempt,
			 int64_t *step, struct sr_err *e);
/* The job's checkpoint step is the one a restore found (a step reported
 * checkpointed before it was durable is not work done). */
int store_job_set_ckpt_step(struct store *s, int64_t job, int64_t step,
			    struct sr_err *e);

/* ---- the work estimator's state (lib/ctl/workest.c) ---- */

struct store_est {
	double declared_s;                 /* jobs.work_s */
	int64_t total_steps;               /* -1 unknown */
	double work_s, pace_ns;            /* the estimate (workest.h) */
	int64_t steps, attempt, step0, t0_ns, last_step, last_ns, upd_ns;
};

/* 0, or -SR_ENOTFOUND when there is no such job. */
int store_est_load(struct store *s, int64_t job, struct store_est *out,
		   struct sr_err *e);
/* Writes the estimate's fields (not declared_s, total_steps). */
int store_est_save(struct store *s, int64_t job, const struct store_est *w,
		   struct sr_err *e);
/* The job's rank-0 node that runs and reported no exit yet (a new node
 * of this attempt): 1 with its creation time and the job's restart
 * estimate, 0 when none. */
int store_restart_node(struct store *s, int64_t job, int64_t *created_ns,
		       double *est_restart_s, struct sr_err *e);
int store_job_set_restart_est(struct store *s, int64_t job, double est_s,
			      struct sr_err *e);

/* ---- placement (lib/ctl/recon_place.c) ---- */

/* Each time since since_ns at which one of our nodes in `pool` got a
 * preemption notice or a launch there ended for capacity or quota:
 * fn(ud, at_ns) once per row. */
int store_pool_unavailable(struct store *s, int pool, int64_t since_ns,
			   void (*fn)(void *ud, int64_t at_ns), void *ud,
			   struct sr_err *e);
/* The job's policy state (a malloc'd copy, *len bytes; NULL, 0 when
 * none) and last decision (malloc'd JSON text; NULL none): 0, or
 * -SR_ENOTFOUND.  The caller frees both. */
int store_job_policy_load(struct store *s, int64_t job, void **state,
			  size_t *len, char **decision, struct sr_err *e);
int store_job_policy_save(struct store *s, int64_t job, const void *state,
			  size_t len, const char *decision, int64_t tick,
			  struct sr_err *e);

/* A new node row, REQUESTED (borrowed strings). */
struct store_node_new {
	int64_t job, rank;
	const void *token_hash;
	size_t token_hash_len;
	const char *provider, *cloud, *region, *zone, *instance_type;
	const char *accelerator;
	double accel_count;
	bool spot;
	int pool;
	int64_t price_micros, list_micros, reserved_micros; /* per hour */
	int64_t created_ns, boot_at_ns;
	bool spare;                 /* a warm spare: rank is the job's
				       num_nodes (schema.c, 16) */
};

int store_node_insert(struct store *s, const struct store_node_new *n,
		      int64_t *id, struct sr_err *e);
/* The job's human message, when it changed (no event). */
int store_job_set_message(struct store *s, int64_t job, const char *msg,
			  struct sr_err *e);
/* Where the job's missing ranks were placed (JSON), counting a move. */
int store_job_set_placement(struct store *s, int64_t job, const char *json,
			    bool moved, struct sr_err *e);

/* ---- the node pass (lib/ctl/recon_nodes.c) ---- */

/* A terminate failed (pending 1: retried on every pass) or went through
 * (0).  1 changed, 0 already so. */
int store_node_set_kill_pending(struct store *s, int64_t node, bool pending,
				struct sr_err *e);
/* The node's phase within `state` (schema m9; NULL none): 1 changed, 0
 * the node is no longer in `state`. */
int store_node_set_phase(struct store *s, int64_t node, const char *state,
			 const char *phase, struct sr_err *e);
/* Bill a node up to until_ns: its cost so far, the utilisation samples
 * billed taken out, and the job's sums (cost, list, reserved; reserved
 * unknown when the offering has no reserved price). */
struct store_bill {
	int64_t node, job, until_ns;
	int64_t cost, list_cost, reserved_cost;   /* micro-dollars */
	bool reserved_unknown;
	double util_sum;                          /* the samples billed */
	int64_t util_n;
};
int store_node_bill(struct store *s, const struct store_bill *b,
		    struct sr_err *e);
/* A live node ends (TERMINATED or LOST, why, when): 1 ended, 0 it had
 * already ended. */
int store_node_end(struct store *s, int64_t node, const char *state,
		   const char *reason, int64_t now_ns, struct sr_err *e);
/* The instance a launch answered with: recorded, the node BOOTING
 * (pending: the cloud still boots it) and billed from now.  A node whose
 * agent registered before (READY, no instance yet) keeps its state.
 * 1 recorded, 0 the node was neither. */
int store_node_booted(struct store *s, int64_t node, const char *instance_id,
		      const char *blob, bool pending, int64_t now_ns,
		      struct sr_err *e);
/* A live node with no instance recorded (its agent registered before
 * the launch was, and the launch's answer never came: recon_nodes.c)
 * takes the instance the cloud lists under its tag.  State and billing
 * stay as they are.  1 recorded, 0 the node had one or has ended. */
int store_node_instance_found(struct store *s, int64_t node,
			      const char *instance_id, struct sr_err *e);
/* The message of the job's last launch_refused event into msg: 1, or 0
 * when it has none. */
int store_job_refusal(struct store *s, int64_t job, char *msg, size_t cap,
		      struct sr_err *e);

/* ---- node tokens and bootstrap secrets (store_boot.c; lib/ctl/router.c,
 * nodeboot.c) ----
 * Secrets and tokens are kept only as digests (STORE_DIGEST_LEN bytes). */
#define STORE_DIGEST_LEN 32

/* 1 and *node: the live or ended node whose token has digest d; 0 none. */
int store_node_by_token(struct store *s, const unsigned char *d,
			int64_t *node, struct sr_err *e);
/* Keep a bootstrap secret's digest for node until expires_ns, dropping
 * every secret expired by now_ns (one transaction). */
int store_boot_issue(struct store *s, const unsigned char *hash, int64_t node,
		     int64_t now_ns, int64_t expires_ns, struct sr_err *e);
/* A secret's row and its node's state. */
struct store_boot {
	int64_t node, expires_ns;
	bool used;                         /* exchanged once already */
	unsigned char nonce[STORE_DIGEST_LEN]; /* that exchange's nonce's */
	size_t nonce_len;                  /* digest: STORE_DIGEST_LEN */
	char state[16];                    /* the node's */
};
/* 1 with the row of the secret with digest hash, 0 when none. */
int store_boot_get(struct store *s, const unsigned char *hash,
		   struct store_boot *out, struct sr_err *e);
/* The secret `hash` was exchanged at now_ns with `nonce`: marked used,
 * the node's other secrets dropped, its token's digest now `token`.
 * Inside the caller's transaction. */
int store_boot_use(struct store *s, int64_t node, const unsigned char *hash,
		   const unsigned char *nonce, const unsigned char *token,
		   int64_t now_ns, struct sr_err *e);

/* ---- a job's files (store_files.c; lib/ctl/routes_files.c) ---- */

/* Keep an uploaded archive under id (the same id again: its time is
 * renewed), dropping, in the same transaction, every upload older than
 * drop_before_ns that no unfinished job names. */
int store_upload_put(struct store *s, const char *id, const void *data,
		     size_t n, int64_t now_ns, int64_t drop_before_ns,
		     struct sr_err *e);
/* The archive of upload id (store_upload_read) or of node's job
 * (store_node_files): fn(ud, data, n, e) reads it in place (valid during
 * the call only) and its result is returned; 0 and fn not called when
 * there is none, or < 0 on a store error. */
typedef int (*store_blob_fn)(void *ud, const void *data, size_t n,
			     struct sr_err *e);
int store_upload_read(struct store *s, const char *id, store_blob_fn fn,
		      void *ud, struct sr_err *e);
int store_node_files(struct store *s, int64_t node, store_blob_fn fn,
		     void *ud, struct sr_err *e);

/* ---- the leader's lease and the members (store_lease.c; lib/ctl/lease.c)
 * ----  Each runs inside the caller's transaction when there is one. */

/* The lease row (table lease, id 1). */
struct store_lease {
	char holder[64], url[128];         /* longer ones are cut */
	int64_t epoch, expires_ns;
};
/* 0, or -EIO when the row is missing. */
int store_lease_get(struct store *s, struct store_lease *out,
		    struct sr_err *e);
/* 1 when holder still holds the lease with epoch, unexpired at now_ns;
 * 0 when not. */
int store_lease_held(struct store *s, const char *holder, int64_t epoch,
		     int64_t now_ns, struct sr_err *e);
/* Take the lease read at `epoch` (compare-and-set): holder and url, epoch
 * + 1, until expires_ns.  1 taken, 0 another took it first. */
int store_lease_take(struct store *s, const char *holder, const char *url,
		     int64_t epoch, int64_t expires_ns, struct sr_err *e);
/* Renew holder's lease of epoch until expires_ns (0: release it, so a
 * standby takes over at once).  1 done, 0 it is no longer holder's. */
int store_lease_renew(struct store *s, const char *holder, int64_t epoch,
		      int64_t expires_ns, struct sr_err *e);
/* Member holder (at url) is alive at now_ns; members not seen since
 * forget_before_ns are dropped (one transaction). */
int store_member_seen(struct store *s, const char *holder, const char *url,
		      int64_t now_ns, int64_t forget_before_ns,
		      struct sr_err *e);
/* fn(ud, url) for each member seen after since_ns, in holder order. */
int store_members(struct store *s, int64_t since_ns,
		  void (*fn)(void *ud, const char *url), void *ud,
		  struct sr_err *e);

/* ---- the jobs API (store_api.c; lib/ctl/routes_jobs.c) ---- */

/* 1 with the job created with idempotency key `key` and the digest its
 * request had (up to STORE_DIGEST_LEN bytes into hash, *hn of them; 0
 * when none was kept), 0 when no job has that key. */
int store_job_by_idem(struct store *s, const char *key, int64_t *id,
		      unsigned char *hash, size_t *hn, struct sr_err *e);
/* A new job row, PENDING, "accepted" (borrowed strings; NULL text is
 * SQL NULL). */
struct store_job_new {
	const char *name, *spec_name, *spec_json, *workdir, *envs;
	const char *spec_yaml;
	size_t spec_yaml_len;
	int64_t num_nodes, max_restarts;
	int64_t now_ns;                /* created, updated, state since */
	double sim_start_s;
	double deadline_s;             /* not finite: none */
	double work_s;
	const char *candidates;        /* the placement plan, JSON */
	const char *idem_key;          /* NULL none */
	const void *idem_hash;         /* NULL none */
	size_t idem_hash_len;
	const void *secrets;           /* sealed */
	size_t secrets_len;
	const char *files;             /* an upload id, NULL none */
	const char *team, *project, *cost_center; /* NULL or "": none */
};
int store_job_insert(struct store *s, const struct store_job_new *j,
		     int64_t *id, struct sr_err *e);
/* fn(ud, id, state, e) for the jobs named `name` (NULL: every job),
 * newest first, until fn returns non-zero: what it returned, 0 at the
 * end, or a store error (< 0). */
typedef int (*store_job_fn)(void *ud, int64_t id, const char *state,
			    struct sr_err *e);
int store_jobs_each(struct store *s, const char *name, store_job_fn fn,
		    void *ud, struct sr_err *e);
/* 1 and the job's state into state[cap], 0 when there is no such job. */
int store_job_state(struct store *s, int64_t id, char *state, size_t cap,
		    struct sr_err *e);
/* The job's (0: every job's) events after seq `after`, oldest first, at
 * most limit:
 * fn(ud, seq, ev, e) each (ev's strings valid during the call; from, to
 * and data NULL when unset) until it returns non-zero.  0, or < 0. */
typedef int (*store_event_fn)(void *ud, int64_t seq,
			      const struct store_event *ev, struct sr_err *e);
int store_events_each(struct store *s, int64_t job, int64_t after,
		      int64_t limit, store_event_fn fn, void *ud,
		      struct sr_err *e);
/* One line of a job's output (table logs). */
struct store_log_line {
	int64_t seq, job, ts_ns, node, rank, attempt;
	const char *stream, *line;
	size_t line_len;                   /* read: strlen(line) */
	bool truncated;
};
/* The job's lines after seq `after` of rank (< 0: every rank), oldest
 * first, at most limit: fn(ud, line, e) as store_events_each's. */
typedef int (*store_log_fn)(void *ud, const struct store_log_line *l,
			    struct sr_err *e);
int store_logs_each(struct store *s, int64_t job, int64_t after,
		    int64_t rank, int64_t limit, store_log_fn fn, void *ud,
		    struct sr_err *e);

/* ---- the node API (store_nodes_api.c; lib/ctl/routes_nodes.c) ---- */

/* A node with what the node API needs of its job. */
struct store_node_ctx {
	int64_t id, job, rank, attempt, num_nodes;  /* attempt: the job's */
	char state[16], job_state[16], desired[8];
	bool notice, retire;
	bool spare;                 /* a warm spare not bound to a rank yet */
	bool stand_in;              /* another live node of its rank has a
				       notice: it replaces that one */
	bool train_through;         /* the job trains through a notice's lead
				       (its plan, jobs.candidates, says
				       "train_through":true: lib/ctl/place.c) */
	int64_t kill_ns;            /* the notice's deadline, 0 none */
	char cloud[16], region[40], zone[40], itype[48];
	bool spot;
	int64_t price;              /* micro-dollars per hour */
	int pool;
};
/* 0, -SR_ENOTFOUND, or a store error. */
int store_node_ctx_load(struct store *s, int64_t id, struct store_node_ctx *n,
			struct sr_err *e);
/* fn(ud, rank, addr) for each live node of the job ("" when it gave no
 * address yet). */
int store_gang_addrs(struct store *s, int64_t job,
		     void (*fn)(void *ud, int64_t rank, const char *addr),
		     void *ud, struct sr_err *e);
/* What a job's node runs with (malloc'd; store_job_env_free). */
struct store_job_env {
	char *spec_json;
	char *envs;                 /* the API's envs (JSON), NULL none */
	char *workdir;              /* "" none */
	char *name;                 /* the job's name */
	int64_t created_ns;         /* when it was submitted (Unix ns) */
	void *sealed;               /* the job's sealed secrets, NULL none */
	size_t sealed_len;
	bool files;                 /* the job brings an upload */
};
/* 0, -SR_ENOTFOUND, or an error (nothing to free then). */
int store_job_env_load(struct store *s, int64_t job, struct store_job_env *out,
		       struct sr_err *e);
void store_job_env_free(struct store_job_env *j);
/* A live node's agent registered at now_ns from addr ("" unknown): READY. */
int store_node_register(struct store *s, int64_t node, const char *addr,
			int64_t now_ns, struct sr_err *e);
/* A heartbeat's node columns (a negative utilisation: not measured). */
/* A heartbeat.  Its utilisation sample (util_sum, util_n: what billing
 * calls busy or idle) is the GPU's where the node reports it (NVML),
 * else the workload's progress - 1 when its steps advanced lately
 * (steps_per_s > 0), 0 when they stalled - else none: never the CPU's
 * (cpu_util is kept for display). */
struct store_hb {
	int64_t node, now_ns, attempt;
	const char *workload;
	int64_t pgid;               /* <= 0: keep the last one */
	double cpu_util, gpu_util;  /* < 0: not reported */
	double steps_per_s;         /* < 0: not reported */
};
int store_node_heartbeat(struct store *s, const struct store_hb *h,
			 struct sr_err *e);
/* A heartbeat's progress of the job's rank 0 (a negative value: not
 * reported) and the pace measured from it. */
struct store_progress {
	int64_t job, attempt, now_ns;
	int64_t step, total_steps, ckpt_step, ckpt_local_step, ckpt_store_ns;
};
int store_job_progress(struct store *s, const struct store_progress *p,
		       struct sr_err *e);
/* A line of output (job, node, rank, attempt, ts_ns, stream, line of
 * line_len bytes, truncated). */
int store_log_add(struct store *s, const struct store_log_line *l,
		  struct sr_err *e);
/* A rank's workload ended (table exits; the same one twice is kept
 * once). */
struct store_exit {
	int64_t job, attempt, rank, node;
	int64_t code;               /* STORE_NULL_I64: killed by `signal` */
	int64_t signal;             /* 0 none */
	const char *cause;
	int64_t ts_ns;
};
int store_exit_add(struct store *s, const struct store_exit *x,
		   struct sr_err *e);
/* A utilisation sample: cpu (< 0 unknown) and the one billed. */
int store_node_util(struct store *s, int64_t node, double cpu, double util,
		    struct sr_err *e);
/* A notice of node's reclaim seen at now_ns (by the provider or the
 * node's agent), the cloud's deadline kill_ns (0 none): each kept unless
 * the node has it already.  1 = the node's first notice, 0 = it had one. */
int store_node_notice_seen(struct store *s, int64_t node, int64_t now_ns,
			   int64_t kill_ns, struct sr_err *e);
/* A rebalance recommendation at at_ns (the first one is kept). */
int store_node_rebalance(struct store *s, int64_t node, int64_t at_ns,
			 struct sr_err *e);
/* A durable checkpoint at step: the job's step is the greater. */
int store_job_ckpt_step_raise(struct store *s, int64_t job, int64_t step,
			      struct sr_err *e);
/* The setup's exit code. */
int store_node_set_setup_rc(struct store *s, int64_t node, int64_t rc,
			    struct sr_err *e);

/* ---- the job pass (store_recon.c; lib/ctl/reconcile.c) ---- */

/* fn(ud, cause, code, sig, node) for each rank's exit of the job's
 * attempt (code -1 when killed by signal sig; node: the node it ran on). */
int store_exits_each(struct store *s, int64_t job, int64_t attempt,
		     void (*fn)(void *ud, const char *cause, int64_t code,
				int64_t sig, int64_t node),
		     void *ud, struct sr_err *e);
/* 1 when rank's exit of the attempt is recorded, 0 when not. */
int store_exit_seen(struct store *s, int64_t job, int64_t attempt,
		    int64_t rank, struct sr_err *e);
/* 1 when rank completed the attempt (cause "completed", exit code 0) -
 * on node `node` when node > 0, on any when 0: its work is done,
 * whatever happens to its node after; 0 when not. */
int store_exit_done(struct store *s, int64_t job, int64_t attempt,
		    int64_t rank, int64_t node, struct sr_err *e);
/* The attempt that stops ran add_s of cloud time: the job's clock stops. */
int store_job_run_clock(struct store *s, int64_t job, double add_s,
			struct sr_err *e);
/* Warm spare `node` takes rank `rank` of its job at now_ns (schema.c,
 * 16): -SR_ECONFLICT when it is no spare, or one adopted already. */
int store_node_adopt(struct store *s, int64_t node, int64_t rank,
		     int64_t now_ns, struct sr_err *e);
/* The policy moves the job off node: it is retired. */
int store_node_retire(struct store *s, int64_t node, struct sr_err *e);
/* The job left RUNNING at now_ns for `reason`, counted as a restart when
 * `restart`; with `notice` its notice time and step are kept. */
int store_job_went_down(struct store *s, int64_t job, int64_t now_ns,
			const char *reason, bool restart, bool notice,
			struct sr_err *e);
/* The ids of every unfinished job, ascending, read `page` at a time (no
 * cap): *out malloc'd (caller frees), *n of them. */
int store_jobs_unfinished(struct store *s, int64_t page, int64_t **out,
			  size_t *n, struct sr_err *e);

#endif
