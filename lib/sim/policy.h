/*
 * policy.h - spot policies: what to hold for the next tick.
 *
 * A policy is a pure decision function over an observation plus its own
 * small state (policy_ops.state_size bytes, zeroed then reset()).  It is
 * called once per tick boundary, in tick order, and sees only the present
 * and what it chose to remember of the past: no trace, no future.  That
 * makes the same code usable by the simulator (sim.c) and by a live
 * controller, which builds a policy_obs from what the cloud reports.
 *
 * Driving a policy (what sim_run() does, and what a live caller must do):
 *   memset(state, 0, ops->state_size); ops->reset(state, &job);
 *   for each recorded past tick: ops->observe(state, &job, avail, price)
 *                                (if ops->observe is not NULL);
 *   at each boundary: c = ops->decide(state, &job, &obs);
 *                     SPOT in a region without spot -> NONE;
 *                     if (!ops->self_guarded) c = policy_guard(&job, &obs, c);
 *   at the end: ops->destroy(state) if not NULL.
 *
 * Units: seconds for time and work, $/h for prices, $ for egress.
 */
#ifndef SR_SIM_POLICY_H
#define SR_SIM_POLICY_H

#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_REGIONS 16

struct policy_prior;

enum sim_hold { SIM_NONE = 0, SIM_SPOT = 1, SIM_OD = 2 };

/* policy_job.zone_pairs: spotrun's model across regions - the pair's
 * once the market's own run ends favour it by the evidence, both models
 * shrunk toward a bundled prior (auto, the default: 0, so every zeroed
 * policy_job plans with it, the simulator's and the control plane's
 * alike), the region run's age only (off, the path before session 25),
 * or the pair's always (on; policy_spotrun.c, docs/notes/policies.md). */
enum sim_pairs { SIM_PAIRS_AUTO = 0, SIM_PAIRS_OFF = 1, SIM_PAIRS_ON = 2 };
_Static_assert(SIM_PAIRS_AUTO == 0, "a zeroed policy_job plans with --zone-pairs auto");

/* Constant for one job. */
struct policy_job {
	double work_s;          /* total work */
	double deadline_s;      /* deadline, from the job's start */
	double restart_s;       /* R: zero-progress time of every new start */
	double ckpt_interval_s; /* 0 = continuous checkpointing */
	double egress_usd;      /* cost of moving the checkpoint between regions */
	int64_t gap_s;          /* decision period (tick length) */
	int nregions;           /* spot regions, 1..SIM_MAX_REGIONS */
	double od_price;        /* on-demand $/h */
	int od_region;          /* region on-demand runs in */
	/* What spotrun believes before it has seen the market
	 * (policy_prior.h); NULL = policy_prior_bundled. */
	const struct policy_prior *prior;
	/* SIM_PAIRS_*: does spotrun plan across regions with the pair
	 * model (which regions are up together, policy_spotrun_plan.h)?
	 * 0 = SIM_PAIRS_AUTO, the default (docs/notes/policies.md). */
	int zone_pairs;
};

/* What the policy sees at one tick boundary. */
struct policy_obs {
	int64_t tick;             /* boundaries since the job started */
	double work_done_s;       /* safely kept work (after any preemption loss) */
	double work_left_s;       /* work_s - work_done_s */
	double time_left_s;       /* deadline_s - now */
	double overhead_left_s;   /* restart overhead still owed by the held instance */
	enum sim_hold hold;       /* held now, after a preemption at this boundary */
	int region;               /* region of the held instance, -1 if none */
	int ckpt_region;          /* where the latest checkpoint is, -1 if none yet */
	int preempted;            /* 1 if spot was taken away at this boundary */
	const uint8_t *avail;     /* [nregions] spot can be held for the next tick */
	const double *spot_price; /* [nregions] spot $/h now */
};

struct policy_choice {
	enum sim_hold hold;
	int region; /* for SIM_SPOT: which region; ignored otherwise */
};

struct policy_ops {
	const char *name;
	const char *summary;
	size_t state_size;
	int self_guarded; /* 1: the simulator does not apply policy_guard() */
	void (*reset)(void *state, const struct policy_job *job);
	/* Optional (may be NULL): learn from one tick of market history from
	 * before the job started (a live controller feeds what it recorded;
	 * the simulator feeds the ticks before the window). */
	void (*observe)(void *state, const struct policy_job *job,
			const uint8_t *avail, const double *spot_price);
	struct policy_choice (*decide)(void *state, const struct policy_job *job,
				       const struct policy_obs *obs);
	/* Optional (may be NULL): release what the state allocated.  Called
	 * once when the job ends; the state's bytes are then discarded. */
	void (*destroy)(void *state);
};

extern const struct policy_ops policy_od, policy_greedy, policy_up,
	policy_ups, policy_spotrun;

/* Online policies by name (not "optimal", which is offline: sim_optimal()).
 * NULL if unknown. */
const struct policy_ops *policy_find(const char *name);
/* NULL-terminated list of the online policies, in table order. */
extern const struct policy_ops *const policy_all[];

/*
 * Shared deadline arithmetic (policy.c).
 *
 * policy_safe_after(job, obs, prog) - if the coming tick yields `prog`
 * seconds of work and the instance is then lost at the next boundary (the
 * worst case), can on-demand started at that boundary still finish by the
 * deadline?  Accounts for the work a checkpoint interval would lose.
 *
 * policy_tick_progress(job, obs, choice) - the work the coming tick would
 * yield if the choice is kept for the whole tick.
 *
 * policy_guard(job, obs, choice) - the deadline guard every online policy
 * except greedy applies last: it replaces a choice that could make the
 * deadline unreachable by on-demand.
 */
int policy_safe_after(const struct policy_job *job, const struct policy_obs *o,
		      double prog);
double policy_tick_progress(const struct policy_job *job,
			    const struct policy_obs *o, struct policy_choice c);
struct policy_choice policy_guard(const struct policy_job *job,
				  const struct policy_obs *o,
				  struct policy_choice c);
/* Would choice c start a new instance (and owe the restart overhead)? */
int policy_is_new_start(const struct policy_obs *o, struct policy_choice c);

#endif
