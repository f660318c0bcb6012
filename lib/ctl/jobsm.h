/*
 * jobsm.h - the job state machine: states, the legal transitions, and
 * the one function that changes a job's state (with its event row).
 * The diagram and transition table are at the top of jobsm.c.
 */
#ifndef SR_CTL_JOBSM_H
#define SR_CTL_JOBSM_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "store/store.h"

enum job_state {
	JOB_PENDING = 0,
	JOB_PROVISIONING,
	JOB_RUNNING,
	JOB_NOTICE,
	JOB_CHECKPOINTING,
	JOB_PREEMPTED,
	JOB_RECOVERING,
	JOB_SUCCEEDED,
	JOB_FAILED,
	JOB_CANCELLED,
	JOB_NSTATES
};

const char *jobsm_name(enum job_state s);          /* "RUNNING"; "?" if bad */
int jobsm_parse(const char *s, enum job_state *out); /* -EINVAL if unknown */
bool jobsm_terminal(enum job_state s);
/* Is from -> to in the transition table? */
bool jobsm_allowed(enum job_state from, enum job_state to);

/* Inside the caller's transaction: move job `id` from `from` to `to`
 * (compare-and-set on the current state), stamp times and message, and
 * append a 'transition' event.  -SR_ECONFLICT if the job is not in
 * `from` or the transition is not in the table. */
int jobsm_move(struct store *s, int64_t id, enum job_state from,
	       enum job_state to, int64_t now_ns, double sim_s,
	       const char *msg, struct sr_err *e);

/* Inside the caller's transaction: ask for job `id`'s cancellation (the
 * reconciler stops it) and, when that changed anything, append a
 * 'cancel_requested' event with message `why`.  The one way anything -
 * the API, a FinOps policy - cancels a job.  Returns 1 (requested), 0
 * (already cancelling), -SR_ENOTFOUND or a store error. */
int jobsm_cancel(struct store *s, int64_t id, int64_t now_ns, double sim_s,
		 const char *why, struct sr_err *e);

/* Append an event (inside the caller's transaction): the one place an
 * event is serialised.  `data` may be NULL (borrowed; stored as compact
 * JSON with sorted keys).  from/to may be NULL; node_id 0 = none. */
int ctl_event_append(struct store *s, int64_t job_id, const char *type,
		     const char *from, const char *to, int64_t node_id,
		     int64_t now_ns, double sim_s, const json_t *data,
		     const char *msg, struct sr_err *e);

#endif
