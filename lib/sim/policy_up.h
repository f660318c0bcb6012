/*
 * policy_up.h - internal: the Uniform Progress rules shared by `up` and
 * `ups` (policy_up.c).
 */
#ifndef SR_SIM_POLICY_UP_H
#define SR_SIM_POLICY_UP_H

#include "sim/policy.h"

struct up_state {
	int safety_net; /* the safety net fired: on-demand to the end */
};

void policy__up_reset(void *state, const struct policy_job *job);

/* The UP decision given the spot region to use if spot is wanted
 * (spot_region < 0: no spot available). */
struct policy_choice policy__up_decide(struct up_state *s,
				       const struct policy_job *job,
				       const struct policy_obs *o,
				       int spot_region);

/* The `ups` region choice: the running spot instance's region while spot
 * lasts there, else the cheapest region with spot this tick (ties: the
 * lowest index); -1 if none has spot. */
int policy__up_region(const struct policy_job *job, const struct policy_obs *o);

#endif
