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

#include "ctl/db.h"

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

int ctl_event_add(sqlite3 *db, int64_t job_id, const char *type,
		  const char *from, const char *to, int64_t node_id,
		  int64_t now_ns, double sim_s, const json_t *data,
		  const char *msg, struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	char *d = NULL;
	int rc;

	rc = ctl_db_prepare(db, "INSERT INTO events(job_id, ts_ns, sim_s, type,"
			    " from_state, to_state, node_id, message, data)"
			    " VALUES(?,?,?,?,?,?,?,?,?)", &st, e);
	if (rc)
		return rc;
	if (data)
		d = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
	sqlite3_bind_int64(st, 1, job_id);
	sqlite3_bind_int64(st, 2, now_ns);
	sqlite3_bind_double(st, 3, sim_s);
	sqlite3_bind_text(st, 4, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, from, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, to, -1, SQLITE_STATIC);
	if (node_id > 0)
		sqlite3_bind_int64(st, 7, node_id);
	sqlite3_bind_text(st, 8, msg ? msg : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, d, -1, SQLITE_STATIC);
	rc = ctl_db_step_done(db, st, e, "insert event");
	sqlite3_finalize(st);
	free(d);
	return rc;
}

int jobsm_transition(sqlite3 *db, int64_t id, enum job_state from,
		     enum job_state to, int64_t now_ns, double sim_s,
		     const char *msg, struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (!jobsm_allowed(from, to))
		return sr_err_set(e, -SR_ECONFLICT, "job %lld: %s -> %s is not "
				  "a legal transition", (long long)id,
				  jobsm_name(from), jobsm_name(to));
	rc = ctl_db_prepare(db, "UPDATE jobs SET state=?1, state_since_ns=?2,"
			    " updated_ns=?2, message=?3,"
			    " finished_ns=CASE WHEN ?5 THEN ?2 ELSE finished_ns END"
			    " WHERE id=?4 AND state=?6", &st, e);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, jobsm_name(to), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now_ns);
	sqlite3_bind_text(st, 3, msg ? msg : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, id);
	sqlite3_bind_int(st, 5, jobsm_terminal(to));
	sqlite3_bind_text(st, 6, jobsm_name(from), -1, SQLITE_STATIC);
	rc = ctl_db_step_done(db, st, e, "update job state");
	sqlite3_finalize(st);
	if (rc)
		return rc;
	if (sqlite3_changes(db) != 1)
		return sr_err_set(e, -SR_ECONFLICT, "job %lld is not %s",
				  (long long)id, jobsm_name(from));
	return ctl_event_add(db, id, "transition", jobsm_name(from),
			     jobsm_name(to), 0, now_ns, sim_s, NULL, msg, e);
}
