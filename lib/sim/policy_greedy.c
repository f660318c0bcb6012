/*
 * policy_greedy.c - `greedy`: spot whenever it is available, idle when it
 * is not, until the slack runs out; then on-demand to the end.
 *
 * This is the paper's greedy baseline in its home region (region 0).  It
 * runs without the shared deadline guard, with its own rule instead: it
 * switches to on-demand once waiting one more tick would leave less than
 * work + R before the deadline, and stays there ("stay until the end").
 */
#include "sim/policy.h"

struct greedy_state {
	int on_od; /* committed to on-demand for the rest of the job */
};

static void greedy_reset(void *state, const struct policy_job *job)
{
	struct greedy_state *s = state;

	(void)job;
	s->on_od = 0;
}

static struct policy_choice greedy_decide(void *state,
					  const struct policy_job *job,
					  const struct policy_obs *o)
{
	struct greedy_state *s = state;
	struct policy_choice spot = { SIM_SPOT, 0 }, od = { SIM_OD, job->od_region };

	if (o->work_left_s <= 0)
		return (struct policy_choice){ SIM_NONE, -1 };
	if (s->on_od)
		return od;
	if (o->avail[0]) {
		/* Keep or take spot while a loss would still leave time. */
		if (policy_safe_after(job, o, policy_tick_progress(job, o, spot)))
			return spot;
	} else if (policy_safe_after(job, o, 0)) {
		return (struct policy_choice){ SIM_NONE, -1 };
	}
	s->on_od = 1;
	return od;
}

const struct policy_ops policy_greedy = {
	.name = "greedy",
	.summary = "spot until the slack runs out, then on-demand",
	.state_size = sizeof(struct greedy_state),
	.self_guarded = 1,
	.reset = greedy_reset,
	.decide = greedy_decide,
};
