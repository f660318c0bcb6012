/*
 * store_ctl.h - the control plane's statements (lib/ctl) as functions
 * (store_ctl.c): lib/ctl holds no SQL of its own for these.  Each runs
 * inside the caller's transaction when there is one, returns 0 (or 1 /
 * 0 for "found" / "none") or a negative code with *e naming what failed.
 */
#ifndef SR_STORE_CTL_H
#define SR_STORE_CTL_H

#include <stdint.h>

#include "common/err.h"

struct store;

/* ---- work lost to a preemption (lib/ctl/recon_lost.c) ---- */

/* What a preemption left pending until a later attempt restores: the
 * step seen, the attempt left, the noticed node (0 none: a move) and the
 * gang's price; with the job's totals and the node's place. */
struct store_lost {
	int64_t from_step, attempt, node, total_steps; /* total -1 unknown */
	int64_t price_micros;                          /* per hour */
	double work_s;          /* the work estimate, else the declared work */
	char cloud[16], region[40], zone[40], itype[48];
};

int store_lost_open(struct store *s, int64_t job, int64_t from_step,
		    int64_t attempt, int64_t node, int64_t price_micros,
		    struct sr_err *e);
/* 1 and *out when work is pending, 0 when none. */
int store_lost_load(struct store *s, int64_t job, struct store_lost *out,
		    struct sr_err *e);
int store_lost_clear(struct store *s, int64_t job, struct sr_err *e);
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

#endif
