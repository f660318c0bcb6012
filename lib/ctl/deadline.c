/*
 * deadline.c - the deadline verdict of a job (deadline.h).
 */
#include <math.h>
#include <stddef.h>

#include "ctl/deadline.h"

static const char *const names[] = {
	[CTL_DEADLINE_NONE] = NULL, [CTL_DEADLINE_ON_TRACK] = "on_track",
	[CTL_DEADLINE_AT_RISK] = "at_risk", [CTL_DEADLINE_MISSED] = "missed",
	[CTL_DEADLINE_MET] = "met", [CTL_DEADLINE_NOT_MET] = "not_met",
};

const char *ctl_deadline_name(enum ctl_deadline_state s)
{
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : NULL;
}

double ctl_deadline_work_done(double work_total_s, long long step,
			      long long total_steps, double run_s)
{
	if (total_steps > 0 && step >= 0)
		return work_total_s * fmin(1.0, (double)step / (double)total_steps);
	return fmin(fmax(run_s, 0.0), 0.99 * work_total_s);
}

void ctl_deadline_eval(const struct ctl_deadline_in *in, struct ctl_deadline *out)
{
	double due = in->start_s + in->deadline_s;
	double left = fmax(0.0, in->work_total_s - in->work_done_s);

	out->state = CTL_DEADLINE_NONE;
	out->projected_s = in->now_s;
	out->late_s = 0;
	if (!isfinite(in->deadline_s))
		return;
	if (in->ended) {
		if (in->now_s > due) {
			out->state = CTL_DEADLINE_MISSED;
			out->late_s = in->now_s - due;
		} else {
			out->state = in->succeeded ? CTL_DEADLINE_MET
						   : CTL_DEADLINE_NOT_MET;
		}
		return;
	}
	out->projected_s = in->now_s + left + (in->running ? 0.0 : in->restart_s);
	if (in->now_s > due) {
		out->state = CTL_DEADLINE_MISSED;
		out->late_s = in->now_s - due;
	} else {
		out->state = out->projected_s > due ? CTL_DEADLINE_AT_RISK
						    : CTL_DEADLINE_ON_TRACK;
	}
}
