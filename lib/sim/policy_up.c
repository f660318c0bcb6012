/*
 * policy_up.c - `up`: Uniform Progress, Can't Be Late (NSDI '24), §4.
 *
 * Notation of the paper: C0 = total work, R0 = time to the deadline,
 * d = restart (changeover) overhead, cp(t) = work done by elapsed time t,
 * ep(t) = t * C0 / R0 = the progress a uniform spread would have made,
 * C(t) = work left, R(t) = time left.  Rules, in priority order:
 *
 *   Thrifty      cp(t) = C0: release everything.
 *   Safety net   idle (or on on-demand) and R(t) < C(t) + 2d: on-demand,
 *                and stay there to the end.  Tick-aligned as in the public
 *                simulator: ceil((C(t) + 2d)/gap) >= floor(R(t)/gap).
 *   Hysteresis   on on-demand: stay until cp(t) >= ep(t + 2d).
 *   Exploitation on spot: stay until it is preempted.
 *   Taking risks spot available: take it, even if cp(t) < ep(t).
 *   Uniform      no spot and cp(t) < ep(t): on-demand to catch up;
 *   progress     otherwise wait idle for spot.
 *
 * The public simulator applies one more check to every strategy, its
 * "strong guarantee"; here that is policy_guard(), applied by sim_run().
 * `up` uses one region (region 0); `ups` (policy_ups.c) adds failover.
 */
#include <math.h>

#include "sim/policy.h"
#include "sim/policy_up.h"

void policy__up_reset(void *state, const struct policy_job *job)
{
	struct up_state *s = state;

	(void)job;
	s->safety_net = 0;
}

static double ep(const struct policy_job *job, double t)
{
	return t * job->work_s / job->deadline_s;
}

struct policy_choice policy__up_decide(struct up_state *s,
				       const struct policy_job *job,
				       const struct policy_obs *o,
				       int spot_region)
{
	struct policy_choice none = { SIM_NONE, -1 };
	struct policy_choice od = { SIM_OD, job->od_region };
	double gap = (double)job->gap_s, d = job->restart_s;
	double t = (double)o->tick * gap, cp = o->work_done_s;

	if (o->work_left_s <= 1e-6)
		return none;
	if (s->safety_net)
		return od;
	if (o->hold != SIM_SPOT &&
	    ceil((o->work_left_s + 2 * d) / gap) >= floor(o->time_left_s / gap)) {
		s->safety_net = 1;
		return od;
	}
	if (o->hold == SIM_OD && cp < ep(job, t + 2 * d))
		return od;
	if (spot_region >= 0)
		return (struct policy_choice){ SIM_SPOT, spot_region };
	if (cp < ep(job, t))
		return od;
	return none;
}

int policy__up_region(const struct policy_job *job, const struct policy_obs *o)
{
	int best = -1;

	if (o->hold == SIM_SPOT && o->avail[o->region])
		return o->region;
	for (int r = 0; r < job->nregions; r++) {
		if (o->avail[r] && (best < 0 || o->spot_price[r] < o->spot_price[best]))
			best = r;
	}
	return best;
}

static struct policy_choice up_decide(void *state, const struct policy_job *job,
				      const struct policy_obs *o)
{
	return policy__up_decide(state, job, o, o->avail[0] ? 0 : -1);
}

const struct policy_ops policy_up = {
	.name = "up",
	.summary = "Uniform Progress (Can't Be Late), one region",
	.state_size = sizeof(struct up_state),
	.reset = policy__up_reset,
	.decide = up_decide,
};
