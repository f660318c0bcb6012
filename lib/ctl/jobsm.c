/*
 * jobsm.c - the job lifecycle.
 *
 *                 +-----------------------------------------------+
 *                 |                    cancel (from any            |
 *                 v                    non-terminal state)         |
 *   PENDING --> PROVISIONING --> RUNNING ------------------> SUCCEEDED
 *      |            ^   |          |  |  \                         |
 *      |            |   |          |  |   `--(crash, restarts       |
 *      |            |   |          |  |      exhausted)-----> FAILED
 *      |            |   |          |  v
 *      |            |   |          | NOTICE --> CHECKPOINTING --> PREEMPTED
 *      |            |   |          |                                  |
 *      |            |   |          `-(node lost / workload crash)-+   |
 *      |            |   |                                         v   v
 *      |            +---+------------------------------------- RECOVERING
 *      |                |
 *      `----------------+--(no placement can ever fit)------> FAILED
 *
 * Transition table (from -> allowed to).  Every change is one
 * transaction made by jobsm_transition(), which also appends an event.
 *
 *   PENDING        PROVISIONING  FAILED  CANCELLED
 *   PROVISIONING   RUNNING  RECOVERING  FAILED  CANCELLED
 *   RUNNING        NOTICE  RECOVERING  SUCCEEDED  FAILED  CANCELLED
 *   NOTICE         CHECKPOINTING  PREEMPTED  CANCELLED
 *   CHECKPOINTING  PREEMPTED  SUCCEEDED  FAILED  CANCELLED
 *   PREEMPTED      RECOVERING  CANCELLED
 *   RECOVERING     PROVISIONING  FAILED  CANCELLED
 *   SUCCEEDED, FAILED, CANCELLED: terminal, no way out.
 *
 * Notes on the less obvious edges:
 *   PROVISIONING -> RECOVERING  a node of the gang was preempted or lost
 *                               while the others were still booting.
 *   NOTICE -> PREEMPTED         the node was killed before any agent
 *                               acknowledged the notice.
 *   RUNNING -> NOTICE           also when the policy moves the job between
 *                               spot and on-demand (reason "migrate"): the
 *                               same checkpoint-stop-replace path, not
 *                               counted as a preemption.
 *   CHECKPOINTING -> SUCCEEDED  the workload finished its last step while
 *   CHECKPOINTING -> FAILED     being checkpointed (or crashed for good).
 *
 * What each state waits for is the reconciler's business (reconcile.c).
 */
#include "ctl/jobsm.h"

#include <stdlib.h>
#include <string.h>


static const char *const names[JOB_NSTATES] = {
	"PENDING", "PROVISIONING", "RUNNING", "NOTICE", "CHECKPOINTING",
	"PREEMPTED", "RECOVERING", "SUCCEEDED", "FAILED", "CANCELLED",
};

#define B(s) (1u << (s))
static const unsigned table[JOB_NSTATES] = {
	[JOB_PENDING] = B(JOB_PROVISIONING) | B(JOB_FAILED) | B(JOB_CANCELLED),
	[JOB_PROVISIONING] = B(JOB_RUNNING) | B(JOB_RECOVERING) | B(JOB_FAILED) |
			     B(JOB_CANCELLED),
	[JOB_RUNNING] = B(JOB_NOTICE) | B(JOB_RECOVERING) | B(JOB_SUCCEEDED) |
			B(JOB_FAILED) | B(JOB_CANCELLED),
	[JOB_NOTICE] = B(JOB_CHECKPOINTING) | B(JOB_PREEMPTED) | B(JOB_CANCELLED),
	[JOB_CHECKPOINTING] = B(JOB_PREEMPTED) | B(JOB_SUCCEEDED) | B(JOB_FAILED) |
			      B(JOB_CANCELLED),
	[JOB_PREEMPTED] = B(JOB_RECOVERING) | B(JOB_CANCELLED),
	[JOB_RECOVERING] = B(JOB_PROVISIONING) | B(JOB_FAILED) | B(JOB_CANCELLED),
	[JOB_SUCCEEDED] = 0,
	[JOB_FAILED] = 0,
	[JOB_CANCELLED] = 0,
};
#undef B

const char *jobsm_name(enum job_state s)
{
	return (unsigned)s < JOB_NSTATES ? names[s] : "?";
}

int jobsm_parse(const char *s, enum job_state *out)
{
	for (int i = 0; i < JOB_NSTATES; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum job_state)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool jobsm_terminal(enum job_state s)
{
	return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
}

bool jobsm_allowed(enum job_state from, enum job_state to)
{
	if ((unsigned)from >= JOB_NSTATES || (unsigned)to >= JOB_NSTATES)
		return false;
	return (table[from] >> to) & 1u;
}

int ctl_event_append(struct store *s, int64_t job_id, const char *type,
		     const char *from, const char *to, int64_t node_id,
		     int64_t now_ns, double sim_s, const json_t *data,
		     const char *msg, struct sr_err *e)
{
	struct store_event ev = {
		.job_id = job_id, .type = type, .from = from, .to = to,
		.node_id = node_id, .ts_ns = now_ns, .sim_s = sim_s,
		.message = msg,
	};
	char *d = NULL;
	int rc;

	if (data) {
		d = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
		if (!d)
			return sr_err_set(e, -ENOMEM, "event %s: out of memory", type);
	}
	ev.data = d;
	rc = store_event_add(s, &ev, NULL, e);
	free(d);
	return rc;
}

int jobsm_move(struct store *s, int64_t id, enum job_state from,
	       enum job_state to, int64_t now_ns, double sim_s,
	       const char *msg, struct sr_err *e)
{
	int rc;

	if (!jobsm_allowed(from, to))
		return sr_err_set(e, -SR_ECONFLICT, "job %lld: %s -> %s is not "
				  "a legal transition", (long long)id,
				  jobsm_name(from), jobsm_name(to));
	rc = store_job_set_state(s, id, jobsm_name(from), jobsm_name(to),
				 jobsm_terminal(to), now_ns, msg, e);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return sr_err_set(e, -SR_ECONFLICT, "job %lld is not %s",
				  (long long)id, jobsm_name(from));
	return ctl_event_append(s, id, "transition", jobsm_name(from),
				jobsm_name(to), 0, now_ns, sim_s, NULL, msg, e);
}

int jobsm_cancel(struct store *s, int64_t id, int64_t now_ns, double sim_s,
		 const char *why, struct sr_err *e)
{
	int rc = store_job_request_cancel(s, id, now_ns, e);

	if (rc == 1)
		rc = ctl_event_append(s, id, "cancel_requested", NULL, NULL, 0,
				      now_ns, sim_s, NULL, why, e) ?: 1;
	return rc;
}
