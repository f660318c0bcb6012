/*
 * policy_od.c - `od`: on-demand only, from the first tick to the end.
 */
#include "sim/policy.h"

static void od_reset(void *state, const struct policy_job *job)
{
	(void)state;
	(void)job;
}

static struct policy_choice od_decide(void *state, const struct policy_job *job,
				      const struct policy_obs *o)
{
	(void)state;
	if (o->work_left_s <= 0)
		return (struct policy_choice){ SIM_NONE, -1 };
	return (struct policy_choice){ SIM_OD, job->od_region };
}

const struct policy_ops policy_od = {
	.name = "od",
	.summary = "on-demand only",
	.state_size = 1,
	.reset = od_reset,
	.decide = od_decide,
};
