/*
 * slurm_int.h - the `slurm` provider's parts (slurm.c: entry, market,
 * bootstrap; slurm_drv.c: the compute driver; slurm_cmd.c: running
 * Slurm's commands and reading what they print).  Private to
 * lib/providers/slurm/.
 */
#ifndef SR_PROVIDERS_SLURM_INT_H
#define SR_PROVIDERS_SLURM_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cloud/provider.h"

#define SLURM_PARTS_MAX 32
/* the most nodes of one launch group (one allocation), and the most
 * variables a launch adds to sbatch's environment: 3 a node + 8 */
#define SLURM_GROUP_MAX 32
#define SLURM_EXTRA_MAX (8 + 3 * SLURM_GROUP_MAX)

struct slurm_group;

/* One partition: one pool. */
struct slurm_part {
	char name[40];
	int nodes, idle;           /* nodes in it; idle now */
	int gpus;                  /* GPUs per node (gres gpu), 0 none */
	char gpu_type[24];         /* the gres type ("" untyped) */
	int64_t max_time_s;        /* MaxTime, -1 UNLIMITED */
	bool up;
	/* the queue estimate of a one-node job (slurm__queue_read), -1
	 * unknown; set by the market view's refresh */
	int64_t wait_s;
	char wait_basis[120];
};

struct slurm_prov {
	const struct cloud_host *h;        /* borrowed */
	char slurm_conf[512];              /* SLURM_CONF for the commands, "" */
	char bin[256];                     /* folder of sbatch & co, "" PATH */
	char workdir[512];                 /* <state dir>/slurm */
	char script[600];                  /* workdir/spotrun-node.sh */
	char cluster[40];                  /* offering.region */
	char accelerator[24];              /* "" from the gres type */
	char only[SLURM_PARTS_MAX][40];    /* partitions sold, none: all */
	int nonly;
	sr_micros gpu_h;                   /* amortised $/GPU-hour */
	int64_t time_s;                    /* --time, 0: the partition's */
	int64_t lead_s;                    /* --signal USR1@lead */
	pthread_mutex_t mu;                /* parts, refreshed_ns */
	bool mu_init;
	struct slurm_part parts[SLURM_PARTS_MAX];
	int nparts;
	int64_t refreshed_ns;              /* monotonic, 0 never */
	struct slurm_group *groups;        /* being gathered (mu) */
};

/* Launch groups (slurm_group.c; cloud/compute.h LAUNCH GROUPS), under
 * p->mu.  _join: launch `ud`, index `index` of group key (size), has
 * come: 1 when it is the last, so its caller starts the group with
 * members[0..size) (every launch, by index, held - never freed - until
 * _done); 0 when another will: _wait.  *g is the caller's until _leave.
 * _wait: until the group is started (0, *jobid) or failed (its error),
 * *cancel is set, or timeout_s pass (both transient:
 * the launch is asked again).  _wake: every waiter checks its cancel
 * flag (set under p->mu).  -EINVAL: size above SLURM_GROUP_MAX. */
int slurm__group_join(struct slurm_prov *p, const char *key, int size,
		      int index, void *ud, struct slurm_group **g,
		      void **members, struct cloud_error *err);
void slurm__group_done(struct slurm_prov *p, struct slurm_group *g, int rc,
		       long long jobid, const struct cloud_error *err);
int slurm__group_wait(struct slurm_prov *p, struct slurm_group *g,
		      const bool *cancel, int64_t timeout_s, long long *jobid,
		      struct cloud_error *err);
void slurm__group_leave(struct slurm_prov *p, struct slurm_group *g,
			int index);
void slurm__group_wake(struct slurm_prov *p);

/* slurm_cmd_run (slurm_cmd.h) of `argv` from p->bin with SLURM_CONF set,
 * plus extra "K=V" entries (NULL-terminated; may be NULL) on the
 * environment.  *out malloc'd (NUL-ended stdout; caller frees) on 0.
 * Else err has the class and message slurm_cmd_run gives. */
int slurm__run(struct slurm_prov *p, const char *const *argv,
	       const char *const *extra, char **out, struct cloud_error *err);

/* The error class of a Slurm command's message. */
enum cloud_err_class slurm__classify(const char *msg);

/* Parse `sinfo -h -a -o %R|%D|%a|%l|%G|%t` lines into parts (merged per
 * partition, at most SLURM_PARTS_MAX): the count, or -EINVAL naming the
 * line. */
int slurm__parse_sinfo(const char *text, struct slurm_part *parts, int max,
		       struct sr_err *e);

/* A Slurm time ("1-02:03:04", "02:03:04", "03:04", "60", "UNLIMITED")
 * in seconds: 0, -1 for UNLIMITED/infinite, or -EINVAL. */
int slurm__parse_time(const char *s, int64_t *out_s);

/* One job of `squeue -o %T|%D|%L` (slurm_queue.c). */
struct slurm_qjob {
	bool pending;
	int nodes;
	int64_t left_s;            /* time left (pending: its limit), -1 none */
};

#define SLURM_QJOBS_MAX 4096

/* Parse those lines into v (at most max; lines past it are not kept):
 * the count, or -EINVAL naming the line. */
int slurm__parse_squeue_queue(const char *text, struct slurm_qjob *v, int max,
			      struct sr_err *e);

/* The expected wait in seconds of a job of k nodes on partition pt given
 * its jobs v[0..n) (reordered), -1 unknown; basis gets what it rests on,
 * in words. */
int64_t slurm__queue_wait(const struct slurm_part *pt, struct slurm_qjob *v,
			  int n, int k, char *basis, size_t cap);

/* The queue estimate of a job of `nodes` nodes on partition pt (squeue
 * now, slurm__queue_wait): 0 with *wait_s and basis, or < 0 with *e. */
int slurm__queue_read(struct slurm_prov *p, const struct slurm_part *pt,
		      int nodes, int64_t *wait_s, char *basis, size_t cap,
		      struct sr_err *e);

/* Open and refresh (market view). */
int slurm__refresh(struct slurm_prov *p, bool queues, struct sr_err *e);

/* One squeue line "%i|%j|%T|%k|%P" of `cluster` (NULL: any) as the
 * driver lists it (slurm_drv.c, STATES): its instances, one a node of
 * the comment's list, into x[0..max); their count, 0 when the job is
 * not ours (another comment or cluster) or the line is malformed. */
int slurm__parse_squeue_line(const char *line, const char *cluster,
			     struct cloud_instance *x, int max);

extern const struct cloud_driver_ops slurm__drv_ops;

#endif
