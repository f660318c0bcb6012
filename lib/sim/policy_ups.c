/*
 * policy_ups.c - `ups`: Uniform Progress with cheapest-first region
 * failover.
 *
 * The UP rules (policy_up.c) with "spot is available" meaning "in some
 * region".  A running spot instance stays where it is until preempted
 * (UP's exploitation rule); a new spot start goes to the region with the
 * lowest spot price this tick (ties: the lowest region index).
 */
#include "sim/policy.h"
#include "sim/policy_up.h"

static struct policy_choice ups_decide(void *state, const struct policy_job *job,
				       const struct policy_obs *o)
{
	return policy__up_decide(state, job, o, policy__up_region(job, o));
}

const struct policy_ops policy_ups = {
	.name = "ups",
	.summary = "Uniform Progress + cheapest-first region failover",
	.state_size = sizeof(struct up_state),
	.reset = policy__up_reset,
	.decide = ups_decide,
};
