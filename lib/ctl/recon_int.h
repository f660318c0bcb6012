/*
 * recon_int.h - internals shared by the reconciler's files:
 * reconcile.c (the loop and the job state machine's actions),
 * recon_nodes.c (node lifecycle, notices, billing), recon_place.c
 * (policy ticks, node creation).
 */
#ifndef SR_CTL_RECON_INT_H
#define SR_CTL_RECON_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl/ctl_int.h"
#include "ctl/jobsm.h"
#include "ctl/place.h"
#include "ctl/recon.h"

#define RECON_MAX_NODES 1024
#define RECON_JOB_PAGE 1024 /* active job ids read per query */

/* A job row as the reconciler needs it. */
struct rjob {
	int64_t id;
	enum job_state state;
	bool cancel;
	int num_nodes;
	int64_t attempt, restarts, max_restarts;
	int64_t step, total_steps, ckpt_step;   /* -1 unknown */
	int64_t ckpt_store_ns;  /* when the newest checkpoint reached the
				   job's store (tier 3), 0 never: only such a
				   checkpoint outlives a move of every node */
	double step_ns;                         /* measured pace; 0 unknown */
	double est_work_s;                      /* workest.h; 0 = declared */
	double est_pace_ns;                     /* workest.h; 0 unknown */
	double est_restart_s;                   /* workest.h; 0 unknown */
	int64_t pace_attempt, pace_step0;       /* first report of an attempt */
	double sim_start_s, deadline_s, work_s, run_s; /* deadline INF if none */
	int64_t run_started_ns, down_since_ns, notice_ns; /* 0 if unset */
	char recover_reason[16];
	struct place_plan plan;
	bool plan_ok;
	int last_pool;                          /* from placement, -1 none */
	int64_t policy_tick;
	int64_t deadline_state;                 /* recon_deadline.c */
	char placement[512];
};

/* A node's setup_rc when its file_mounts could not be put in place
 * (the agent's "file_mounts" event): setup never ran.  Outside 0..255,
 * so no exit code of a setup script reads as it; the job ends with 126. */
#define RECON_SETUP_FILES 1126

/* A node row. */
struct rnode {
	int64_t id, job, rank;
	char state[16];
	char phase[12];              /* "queued" / "pending" / "" (schema.c) */
	int pool;
	bool spot;
	char instance[64];                              /* "" not known */
	int64_t created_ns, boot_at_ns, registered_ns, last_hb_ns;
	int64_t notice_ns, kill_ns, billed_until_ns;   /* 0 if unset */
	int64_t rebalance_ns;      /* the cloud recommends moving off it (a
				      rebalance recommendation), 0 none:
				      an early warning the planner may read */
	int64_t price, list, reserved;
	char cloud[16], region[40], zone[40], itype[48], accel[24];
	double accel_count;
	char workload[16];
	double util_sum;
	int64_t util_n;
	bool gpu_util;             /* the samples are the GPU's (NVML), not
				      the workload's progress (store_hb) */
	double gpu_last;           /* the latest GPU sample (0..1), when
				      gpu_util */
	int64_t setup_rc;                               /* INT64_MIN unset;
							 * RECON_SETUP_FILES */
	bool retire;                                    /* policy moves off it */
	bool spare;            /* a warm spare bound to no rank yet (rank is
				  the job's num_nodes; recon_spare.c) */
	int64_t adopted_ns;    /* a spare took a lost rank then, 0 never */
};

/* Node x was placed at job j's notice to replace a noticed one, or is a
 * warm spare that took the rank then: it has run nothing of the attempt
 * being stopped (reconcile.c). */
bool recon__placed_at_notice(const struct rjob *j, const struct rnode *x);

/* SQL over table nodes: a node of the job's gang, i.e. no warm spare
 * still waiting for a rank (schema.c, 16). */
#define RECON_GANG_SQL "(spare=0 OR adopted_ns IS NOT NULL)"

/* Run a statement that returns no row (store_run): 0 or the error,
 * prefixed with `what`.  The caller still store_done()s it. */
int recon__run(struct store_stmt *st, struct sr_err *e, const char *what);

int recon__job_load(struct ctl *c, struct store *db, int64_t id, struct rjob *j);
/* A cancelled job whose rank 0 still runs with a bucket mount synced back
 * (MOUNT, MOUNT_CACHED): true until its agent reports the run's exit,
 * which it does once the final round is committed (recon_cancel.c). */
bool recon__cancel_waits(struct store *db, const struct rjob *j,
			 const struct rnode *live, size_t n);
/* A step for a message: the number, or "unknown" when < 0. */
const char *recon__step_str(int64_t step, char *buf, size_t n);
/* A location for a message, as the CLI prints one (ctlcli_where):
 * "cloud/region/zone", "cloud/region" when there is no zone.  Returns buf. */
const char *recon__where(const char *cloud, const char *region,
			 const char *zone, char *buf, size_t n);
/* Nodes matching `where` (SQL over the nodes table, ?1 = arg), by id.
 * *out malloc'd. */
int recon__nodes_query(struct ctl *c, struct store *db, const char *where,
		       int64_t arg, struct rnode **out, size_t *n);
/* Live (REQUESTED/BOOTING/READY) nodes of job's gang (no spare waiting
 * for a rank), or of every job, spares too, if job=0.  *out malloc'd. */
int recon__nodes_live(struct ctl *c, struct store *db, int64_t job,
		      struct rnode **out, size_t *n);

/* The ids of every unfinished job, ascending, read RECON_JOB_PAGE at a
 * time (no cap: a job past any fixed count would be starved).  *out
 * malloc'd (caller frees). */
int recon__active_jobs(struct store *db, int64_t **out, size_t *n);

/* Node side (recon_nodes.c). */

/* Silence of each live node as this process has seen it, on the
 * monotonic clock (reconciler thread only).  `key` is what proves life:
 * the node's last_hb_ns in the database, or -1 while it boots.  A node
 * first seen by this process (a new node, or every node after a restart)
 * starts silent for 0 ns: heartbeat and boot ages count from the
 * daemon's start, never from before an outage - a grace of one timeout
 * for agents to reconnect. */
struct hbseen {
	int64_t node, key, mono_ns;
};
struct hbtable {
	struct hbseen *v;
	size_t n, cap;
};
/* ns since `key` changed for `node` (0 when first seen or on -ENOMEM). */
int64_t recon__silence(struct hbtable *t, int64_t node, int64_t key,
		       int64_t mono_now);
/* Forget the nodes not in live[0..n) (ascending ids, as
 * recon__nodes_live returns them). */
void recon__silence_prune(struct hbtable *t, const struct rnode *live, size_t n);
void recon__silence_clear(struct hbtable *t);

/* Whether job may have a live spare not yet adopted: false only when
 * this pass's node list (recon__nodes_pass) was read and holds none, so
 * a pass over jobs that keep none asks the store nothing about spares
 * (recon__spares_keep). */
bool recon__job_spared(const struct ctl *c, int64_t job);

/* What the node pass does with one live node. */
enum node_act {
	NODE_KEEP, NODE_START, NODE_BILL, NODE_NOTICE, NODE_END_PREEMPTED,
	NODE_LOST_BOOT, NODE_LOST_HB,
	/* no notice, and the cloud lists its instance terminated (ended
	 * outside spotrun), or has shown it absent or shutting down for
	 * RECON_MISSING_NS (not at once: EC2 lists a new instance only after
	 * a while) */
	NODE_LOST_GONE, NODE_LOST_MISSING,
	/* a noticed node whose instance the cloud lists as shutting down
	 * before the notice deadline: ended once its agent owes no report
	 * (recon__node_owes_exit), else kept (and billed) until it reports
	 * or the deadline passes */
	NODE_GOING,
};
#define RECON_MISSING_NS (60 * SR_NS_PER_SEC)
/* Decide for node x: `listed` says whether the provider's list() worked
 * (when it did not, `o` is not used: nothing is ended or noticed on
 * missing information); `silent_ns` from recon__silence; times in real
 * ns (database stamps) except silent_ns. */
enum node_act recon__node_act(const struct ctl_config *cfg,
			      const struct rnode *x, const struct ctl_node_obs *o,
			      bool listed, int64_t now, int64_t silent_ns);

int recon__nodes_pass(struct ctl *c, struct store *db);
/* Inside a transaction: mark node TERMINATED/LOST with reason and bill
 * its last interval.  The process is killed by recon__kill after commit. */
int recon__node_end(struct ctl *c, struct store *db, const struct rnode *n,
		    const char *state, const char *reason, int64_t now,
		    struct sr_err *e);
void recon__kill(struct ctl *c, struct store *db, const struct rnode *n);
/* Inside a transaction: bill node n's time up to `until` (a ledger row). */
int recon__node_bill(struct ctl *c, struct store *db, const struct rnode *n,
		     int64_t until, struct sr_err *e);
/* 1 (and the message in msg) if the cloud refused a launch of the job
 * for good (auth, invalid request: a job-level error), 0 if not,
 * < 0 on error. */
int recon__launch_refused(struct store *db, int64_t job, char *msg, size_t cap);
/* Retry the terminates that failed (nodes.kill_pending). */
void recon__kill_pending(struct ctl *c, struct store *db);
/* Terminate again the nodes the database says are gone (after a crash
 * between commit and terminate). */
void recon__sweep_orphans(struct ctl *c, struct store *db);

/* Placement side (recon_place.c). */
/* Run the policy for the current tick if not done yet; fills *ch with the
 * decision of the current tick.  `fresh`: the decision is about to be
 * acted on, so a spot choice whose pool has no capacity now is redone. */
int recon__policy_tick(struct ctl *c, struct store *db, struct rjob *j,
		       const struct rnode *live, size_t nlive, bool fresh,
		       struct place_choice *ch, struct sr_err *e);
/* What the job looks like now (for the policy and the move rule); sets
 * j->plan.work_s to the current estimate.  now->tick is left 0. */
void recon__place_now(struct ctl *c, struct rjob *j, const struct rnode *live,
		      size_t nlive, double sim, struct place_now *now);
/* Inside a transaction: create nodes for `ranks` in `pool`; with
 * `spare`, nranks warm spares instead (ranks unused: theirs is the
 * job's num_nodes). */
int recon__nodes_create(struct ctl *c, struct store *db, const struct rjob *j,
			const int *ranks, int nranks, int pool, bool spot,
			bool spare, int64_t now, struct sr_err *e);

/* Warm spares (recon_spare.c).  _adopt, from recon__place_missing: give
 * the missing ranks ranks[0..*nr) to the job's live spares, READY ones
 * first, each in its own transaction (its bill as a spare closed at the
 * adoption); the ranks given are taken out of ranks[].  The number
 * adopted, or < 0.  _keep: once per pass of a RUNNING job, end its
 * noticed spares and those whose setup failed, and launch one when it
 * keeps fewer than its plan's count (place_plan.spares). */
int recon__spares_adopt(struct ctl *c, struct store *db, const struct rjob *j,
			int *ranks, int *nr, int64_t now);
/* _keep also keeps the early replacements recon__early_price asks for
 * beside the plan's count, and releases a spare beyond both (an early
 * replacement whose node got no notice within its horizon).  gang/n:
 * the job's live gang nodes (recon__nodes_live). */
void recon__spares_keep(struct ctl *c, struct store *db, const struct rjob *j,
			const struct rnode *gang, size_t n);

/* Early replacements (recon_early.c): what the gang's nodes with a
 * rebalance recommendation ask for now, priced against a replacement at
 * spare_per_h. */
struct recon_early {
	int want;                /* replacements wanted now (<= num_nodes) */
	int64_t node;            /* the first node at risk, 0 none */
	double age_s;            /* cloud s since its rebalance
				    recommendation */
	double horizon_s;        /* cloud s a replacement pays for itself
				    after a recommendation */
	double saved_s;          /* downtime one saves per recovery */
	sr_micros delay_per_h;   /* the job's cost of an hour of delay */
};
void recon__early_price(struct ctl *c, const struct rjob *j,
			const struct rnode *gang, size_t n, sr_micros spare_per_h,
			int64_t now, struct recon_early *out);
/* The pool of the gang's first node with a rebalance recommendation and
 * no notice (a replacement should go elsewhere), -1 none. */
int recon__early_avoid(const struct rnode *gang, size_t n);

/* Training through a notice (recon_through.c): a RUNNING job with
 * spotrun.train_through_notice and a noticed node.  1: it trains on
 * (the replacement asked for, not yet READY, before the last safe
 * moment); 0: leave RUNNING as at any notice; 2: a rank's node of the
 * attempt is gone (taken before the last safe moment): leave now. */
int recon__train_through(struct ctl *c, struct store *db, struct rjob *j,
			 const struct rnode *live, size_t n);
/* After such a job left RUNNING (j as loaded before): its notice time is
 * its first noticed node's of the attempt, not the stop's, so that the
 * replacements asked for while it trained on count as placed at the
 * notice (recon__placed_at_notice: they ran nothing of the attempt). */
void recon__through_notice_at(struct ctl *c, struct store *db,
			      const struct rjob *j);
/* Inside a transaction: UPDATE jobs SET <assign> (with ?1 = a) for job id. */
int recon__job_set(struct store *db, int64_t id, const char *assign, int64_t a,
		   struct sr_err *e);
/* Update the job's human message (no event). */
void recon__job_set_msg(struct store *db, int64_t id, const char *msg);
/* Create nodes for the ranks without a live node where the policy says,
 * moving the job to PROVISIONING.  1 = created (or none missing), 0 =
 * the policy waits, < 0 on error. */
int recon__place_missing(struct ctl *c, struct store *db, struct rjob *j,
			 const struct rnode *live, size_t nlive);
/* Estimated total work and safely kept work, cloud seconds. */
double recon__work_total(const struct rjob *j, double scale);
double recon__work_done(const struct rjob *j, double scale);
/* Every step of the job is in a checkpoint (the workload only has to
 * restore and report completion). */
bool recon__work_finished(const struct rjob *j);

/* Deadlines (recon_deadline.c): inside a transaction, record what job j
 * must be told about its deadline now - at risk (with the projected
 * finish), missed - once each.  `end`: the terminal state the job is
 * entering, or j->state while it lives.  0 or a store error. */
int recon__deadline_check(struct ctl *c, struct store *db, const struct rjob *j,
			  enum job_state end, int64_t now, struct sr_err *e);

/* Lost work (recon_lost.c).  _open, inside the transaction that ends
 * attempt j->attempt before its work was safe (cause "preemption",
 * "lost", "crash", "move"): remember its start, its end (now), a node of
 * it and the price of its nodes together ($/h).  _seen: committed step
 * `step` was first reported at at_ns during `attempt` (rank 0).
 * _settle, inside a transaction: count every pending attempt older than
 * `attempt` (-1: every one; the job ends) - `restored`, the step that
 * attempt resumed from, is its predecessor's successor's word (-1: not
 * said) - as a ledger_lost row and a lost_work event.  `first`: this is
 * the attempt's first report, so `restored` also becomes the job's
 * checkpoint step (a step reported as checkpointed that the restore did
 * not find was never durable). */
int recon__lost_open(struct ctl *c, struct store *db, const struct rjob *j,
		     const char *cause, int64_t node, sr_micros price,
		     int64_t now, struct sr_err *e);
/* The price of the attempt's nodes together, $/h (a rank whose node is
 * gone at the placement's price). */
sr_micros recon__gang_price(const struct rjob *j, const struct rnode *live,
			    size_t n);
/* Every rank completed `attempt`: its pending loss (if it was stopped
 * as it finished) is dropped, not counted. */
int recon__lost_none(struct store *db, int64_t job, int64_t attempt,
		     struct sr_err *e);
int recon__lost_seen(struct store *db, int64_t job, int64_t attempt,
		     int64_t step, int64_t at_ns, struct sr_err *e);
int recon__lost_settle(struct ctl *c, struct store *db, int64_t job,
		       int64_t attempt, int64_t restored, bool first,
		       int64_t now, struct sr_err *e);

/* Node x ran its rank of job j's current attempt to completion (exit
 * 0 reported from it): its work is done, whatever the cloud does to it
 * now (recon_preempt.c). */
bool recon__node_done(struct store *db, const struct rjob *j,
		      const struct rnode *x);
/* Rank `rank` completed job j's current attempt (exit 0), on any node. */
bool recon__rank_done(struct store *db, const struct rjob *j, int64_t rank);
/* Preemptions (recon_preempt.c, which says what one is).  _reclaimed,
 * inside the caller's transaction: the cloud reclaims node `node` (its
 * notice seen now, by the provider, the node's agent or the workload's
 * exit; kill_ns the cloud's deadline, 0 none): recorded on the node and,
 * the first time for that node, counted as one preemption of its job.
 * 1 = counted, 0 = noticed before (or the job had ended, or the node's
 * rank had completed there: recon__node_done), < 0 error.
 * _count: count one preemption of job j at node x (the job's counter, a
 * ledger event, a "preempted" event); only _reclaimed calls it. */
int recon__node_reclaimed(struct ctl *c, struct store *db, int64_t node,
			  int64_t now, int64_t kill_ns, struct sr_err *e);
int recon__preemption_count(struct ctl *c, struct store *db, const struct rjob *j,
			    const struct rnode *x, int64_t now, struct sr_err *e);
/* Whether noticed node x's agent still owes its last reports: it ran
 * its job's current attempt and its rank's exit of that attempt is not
 * recorded (false when they cannot be read: the node goes). */
bool recon__node_owes_exit(struct ctl *c, struct store *db,
			   const struct rnode *x);

#endif
