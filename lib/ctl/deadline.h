/*
 * deadline.h - whether a job meets its deadline, from the figures the
 * job row holds: the work left, its pace, where the cloud clock is.
 *
 * A job's deadline is met when it SUCCEEDED no later than it; missed when
 * the cloud clock passed it before the job was done (running or not) or
 * the job ended after it; at risk when the projected finish - now + the
 * work left (+ a restart when no node runs it) - falls after it.  The
 * reconciler records the verdicts as events (recon_deadline.c); the job
 * view (views.c) shows the same projection.  Pure functions, no state.
 */
#ifndef SR_CTL_DEADLINE_H
#define SR_CTL_DEADLINE_H

#include <stdbool.h>

enum ctl_deadline_state {
	CTL_DEADLINE_NONE = 0,   /* no deadline */
	CTL_DEADLINE_ON_TRACK,   /* projected to finish in time */
	CTL_DEADLINE_AT_RISK,    /* projected to finish after it */
	CTL_DEADLINE_MISSED,     /* passed before the job was done */
	CTL_DEADLINE_MET,        /* SUCCEEDED in time */
	CTL_DEADLINE_NOT_MET,    /* ended (FAILED, CANCELLED) before it, undone */
};

/* Cloud seconds throughout (the cloud clock: sim). */
struct ctl_deadline_in {
	double now_s;            /* the cloud clock now, or at the job's end */
	double start_s;          /* the job's creation */
	double deadline_s;       /* after start_s; NaN or INFINITY: none */
	double work_total_s;     /* the work's estimate */
	double work_done_s;      /* done so far (ctl_deadline_work_done) */
	double restart_s;        /* to add when no attempt runs now */
	bool running;            /* an attempt trains now */
	bool ended;              /* the job reached a terminal state */
	bool succeeded;          /* ... and it is SUCCEEDED */
};

struct ctl_deadline {
	enum ctl_deadline_state state;
	double projected_s;      /* finish, on the cloud clock (ended: now_s) */
	double late_s;           /* past the deadline (missed), else 0 */
};

void ctl_deadline_eval(const struct ctl_deadline_in *in, struct ctl_deadline *out);

/* Work done, cloud s: the share of steps done (step of total_steps) when
 * both are known, else the time spent running (at most 99 % of the work:
 * time alone never says the work is over). */
double ctl_deadline_work_done(double work_total_s, long long step,
			      long long total_steps, double run_s);

/* "met", "missed", "at_risk", "on_track", "not_met", or NULL for none. */
const char *ctl_deadline_name(enum ctl_deadline_state s);

#endif
