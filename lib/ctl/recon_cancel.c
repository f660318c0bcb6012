/*
 * recon_cancel.c - a cancel waits for the bucket mounts' final round.
 *
 * A job with a bucket mount synced back to its bucket (MOUNT or
 * MOUNT_CACHED, issue 30; docs/jobs.md "Bucket mounts") has files on its
 * rank 0 node that may not be in the bucket yet.  A cancel sends every
 * node the `exit` directive (routes_nodes.c); the agent stops the
 * workload, takes a final round of every file and reports the run's exit
 * only once that round is committed, or says in a sync_error event how
 * much was left and where.  Terminating the node at once would SIGKILL
 * that round, so the cancel waits for rank 0's exit report.
 *
 * The wait needs no timer of its own: the agent bounds its stop (the
 * stop grace) and its final round (mounts.c), and a node that stops
 * heart-beating (an agent that exits without a report: it never started
 * the run) is ended by the node pass (recon_nodes.c) like any lost node,
 * which ends this wait too.
 */
#include <string.h>

#include "ctl/recon_int.h"
#include "store/store_ctl.h"

/* Does the job's spec have a bucket mount synced back (MOUNT or
 * MOUNT_CACHED)?  Its file_mounts hold {uri, store, mode, ...} objects
 * for buckets and strings for local paths (jobspec_json.c). */
static bool syncs_back(struct store *db, int64_t job)
{
	struct store_job j;
	struct sr_err e = { 0 };
	json_t *spec, *fm, *v;
	const char *k;
	bool yes = false;

	if (store_job_load(db, job, STORE_JOB_SPEC, &j, &e))
		return false;
	spec = json_loads(j.spec_json, 0, NULL);
	fm = json_object_get(spec, "file_mounts");
	json_object_foreach(fm, k, v) {
		const char *mode = json_string_value(json_object_get(v, "mode"));

		if (json_is_object(v) && mode && strcmp(mode, "COPY") != 0)
			yes = true;
	}
	json_decref(spec);
	store_job_free(&j);
	return yes;
}

bool recon__cancel_waits(struct store *db, const struct rjob *j,
			 const struct rnode *live, size_t n)
{
	struct sr_err e = { 0 };
	const struct rnode *r0 = NULL;

	for (size_t i = 0; i < n; i++) {
		if (live[i].rank == 0 && strcmp(live[i].state, "READY") == 0)
			r0 = &live[i];
	}
	/* only rank 0 uploads; an agent that runs nothing has nothing left
	 * to send (it restores before setup, and sends nothing then).  The
	 * attempt's run may have started before a heartbeat said so: a
	 * RUNNING job's rank 0 counts as running until it reports its exit */
	if (!r0 || (j->state != JOB_RUNNING &&
		    strcmp(r0->workload, "setup") != 0 &&
		    strcmp(r0->workload, "running") != 0 &&
		    strcmp(r0->workload, "stopping") != 0))
		return false;
	if (j->attempt <= 0 || store_exit_seen(db, j->id, j->attempt, 0, &e) != 0)
		return false; /* reported (1), or unknown (< 0): do not hang */
	return syncs_back(db, j->id);
}
