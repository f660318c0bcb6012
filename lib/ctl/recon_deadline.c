/*
 * recon_deadline.c - what the job is told about its deadline, as it
 * happens: a warning with the projected finish when the work left stops
 * fitting, and a verdict the moment the deadline passes with the job not
 * done (or when it ends after it).  Each is an event, so the alerts
 * (Slack, PagerDuty: src/spotrund/finops_hooks.c), `spotrun events`, the
 * job view and /metrics all see the same thing.
 *
 *   jobs.deadline_state    event on entering
 *   0 nothing said         -
 *   1 at risk              deadline_risk  {projected_finish_at, late_by_s}
 *   2 missed (final)       deadline_missed {deadline_at, late_s, state}
 *
 *   0 -> 1   the projected finish (deadline.h) falls after the deadline
 *   1 -> 0   it fits again (no event: the next risk warns again)
 *   0|1 -> 2 the cloud clock passed the deadline before the job was done,
 *            or the job ended after it (SUCCEEDED late included)
 *
 * Checked once per reconciler pass for every live job, and inside the
 * transaction that ends a job.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "common/timeutil.h"
#include "ctl/deadline.h"
#include "ctl/recon_int.h"

/* The wall-clock instant the cloud clock reads `sim` (RFC 3339). */
static void sim_time_str(struct ctl *c, double sim, char *buf, size_t n)
{
	int64_t at = c->real0_ns + (int64_t)((sim - c->sim0_s) /
					     c->cfg.time_scale * 1e9);

	if (sr_time_format_rfc3339(at, 0, buf, n) <= 0)
		snprintf(buf, n, "?");
}

static int set_state(struct store *db, int64_t job, int64_t st,
		     struct sr_err *e)
{
	return recon__job_set(db, job, "deadline_state=?1", st, e);
}

/* Enter state `st` with its event; takes `data` (may be NULL). */
static int say(struct ctl *c, struct store *db, int64_t job, int64_t st,
	       const char *type, json_t *data, const char *msg, int64_t now,
	       struct sr_err *e)
{
	int rc = set_state(db, job, st, e);

	if (!rc)
		rc = ctl_event_append(db, job, type, NULL, NULL, 0, now,
				      ctl__sim_at(c, now), data, msg, e);
	json_decref(data);
	return rc;
}

int recon__deadline_check(struct ctl *c, struct store *db, const struct rjob *j,
			  enum job_state end, int64_t now, struct sr_err *e)
{
	double sim = ctl__sim_at(c, now), total = recon__work_total(j, c->cfg.time_scale);
	bool ended = jobsm_terminal(end);
	struct ctl_deadline_in in = {
		.now_s = sim, .start_s = j->sim_start_s, .deadline_s = j->deadline_s,
		.work_total_s = total,
		.work_done_s = ctl_deadline_work_done(total, j->step, j->total_steps,
						      j->run_s),
		.restart_s = j->est_restart_s, /* as the job view (views.c) */
		.running = j->state == JOB_RUNNING, .ended = ended,
		.succeeded = end == JOB_SUCCEEDED,
	};
	struct ctl_deadline d;
	char due[40], when[40], msg[300];
	json_t *data;

	if (j->deadline_state >= 2 || !isfinite(j->deadline_s))
		return 0;
	ctl_deadline_eval(&in, &d);
	sim_time_str(c, j->sim_start_s + j->deadline_s, due, sizeof due);
	if (d.state == CTL_DEADLINE_MISSED) {
		char late[32];

		sr_dur_format((int64_t)(d.late_s + 0.5) * SR_NS_PER_SEC, late, sizeof late);
		snprintf(msg, sizeof msg, "deadline missed: %s at %s, %s of cloud "
			 "time after the deadline (%s)", ended ? "ended" : "not done",
			 ended ? jobsm_name(end) : jobsm_name(j->state), late, due);
		data = json_pack("{s:s,s:f,s:s,s:b}", "deadline_at", due,
				 "late_s", d.late_s, "state",
				 jobsm_name(ended ? end : j->state), "ended", ended);
		return say(c, db, j->id, 2, "deadline_missed", data, msg, now, e);
	}
	if (ended)
		return 0;
	if (d.state == CTL_DEADLINE_AT_RISK && j->deadline_state == 0) {
		char late[32];
		double by = d.projected_s - (j->sim_start_s + j->deadline_s);

		sim_time_str(c, d.projected_s, when, sizeof when);
		sr_dur_format((int64_t)(by + 0.5) * SR_NS_PER_SEC, late, sizeof late);
		snprintf(msg, sizeof msg, "deadline at risk: projected to finish at "
			 "%s, %s after the deadline (%s)", when, late, due);
		data = json_pack("{s:s,s:s,s:f,s:f}", "projected_finish_at", when,
				 "deadline_at", due, "late_by_s", by,
				 "work_left_s", fmax(0, total - in.work_done_s));
		return say(c, db, j->id, 1, "deadline_risk", data, msg, now, e);
	}
	if (d.state == CTL_DEADLINE_ON_TRACK && j->deadline_state == 1)
		return set_state(db, j->id, 0, e);
	return 0;
}
