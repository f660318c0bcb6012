/*
 * policy.c - the policy registry and the deadline arithmetic every policy
 * shares.
 *
 * The guard is exact for the simulator's model (docs/simulator.md): a
 * choice for the coming tick is allowed when, even if that tick is the
 * last one the spot market gives us, on-demand started at the next
 * boundary (paying the restart overhead R) still finishes by the deadline.
 * Continuing a productive on-demand instance is always allowed.  Because
 * the guard looks one tick ahead, a policy that applies it never misses a
 * deadline that was meetable at the start (work + R <= deadline).
 */
#include <math.h>
#include <string.h>

#include "sim/policy.h"

#define EPS 1e-6

const struct policy_ops *const policy_all[] = {
	&policy_od, &policy_greedy, &policy_up, &policy_ups, &policy_spotrun,
	NULL,
};

const struct policy_ops *policy_find(const char *name)
{
	for (int i = 0; policy_all[i]; i++) {
		if (!strcmp(policy_all[i]->name, name))
			return policy_all[i];
	}
	return NULL;
}

int policy_is_new_start(const struct policy_obs *o, struct policy_choice c)
{
	if (c.hold == SIM_NONE)
		return 0;
	if (c.hold != o->hold)
		return 1;
	if (c.hold == SIM_SPOT)
		return c.region != o->region;
	return 0;
}

double policy_tick_progress(const struct policy_job *job,
			    const struct policy_obs *o, struct policy_choice c)
{
	double ovh, prog;

	if (c.hold == SIM_NONE)
		return 0;
	ovh = policy_is_new_start(o, c) ? job->restart_s : o->overhead_left_s;
	prog = (double)job->gap_s - ovh;
	if (prog < 0)
		prog = 0;
	if (prog > o->work_left_s)
		prog = o->work_left_s;
	return prog;
}

int policy_safe_after(const struct policy_job *job, const struct policy_obs *o,
		      double prog)
{
	double done = o->work_done_s + prog, lost = 0, left;

	if (done >= job->work_s - EPS)
		return 1;
	if (job->ckpt_interval_s > 0)
		lost = fmod(done, job->ckpt_interval_s);
	left = job->work_s - done + lost;
	return left + job->restart_s <= o->time_left_s - (double)job->gap_s + EPS;
}

struct policy_choice policy_guard(const struct policy_job *job,
				  const struct policy_obs *o,
				  struct policy_choice c)
{
	struct policy_choice od = { SIM_OD, job->od_region };

	if (o->work_left_s <= EPS)
		return (struct policy_choice){ SIM_NONE, -1 };
	if (c.hold == SIM_OD)
		return c;
	if (c.hold == SIM_SPOT) {
		/* A spot tick must leave on-demand reachable if lost. */
		if (policy_safe_after(job, o, policy_tick_progress(job, o, c)))
			return c;
		/* A productive spot instance that finishes this very tick. */
		if (policy_tick_progress(job, o, c) >= o->work_left_s - EPS)
			return c;
		return od;
	}
	if (policy_safe_after(job, o, 0))
		return c;
	/* Keep a running on-demand instance rather than restarting it. */
	return od;
}
