/*
 * place.h - placement and recovery: the market/sim policy driven live.
 *
 * At job creation place_plan_init() fixes the job's market: up to
 * SIM_MAX_REGIONS spot pools (the cheapest matching offerings with a spot
 * price, cheapest first - the policy's "regions") and the cheapest
 * on-demand pool, plus the numbers the policy needs (work, deadline,
 * restart overhead, all in cloud seconds).  The plan is stored with the
 * job, so decisions after a restart see the same regions.
 *
 * Then, once per policy tick (cloud time), place_decide() feeds the
 * policy (lib/sim/policy.h, `spotrun` by default) what a live cloud
 * shows - which pools have spot now, their prices, what the job holds,
 * how much work is safely checkpointed - and returns its choice.  The
 * policy's memory is an opaque blob kept in the jobs table.
 *
 * Governance (docs/market.md) is applied on top of the policy:
 *   criticality critical or use_spot false -> on-demand only;
 *   best-effort                            -> spot only (wait otherwise).
 */
#ifndef SR_CTL_PLACE_H
#define SR_CTL_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "market/jobspec.h"
#include "sim/policy.h"

struct ctl;

/* The policy tick, cloud s: the traces' common 10-minute grain. */
#define PLACE_GAP_S 600

struct place_plan {
	int nspot;
	int spot[SIM_MAX_REGIONS]; /* provider pools, cheapest spot first */
	int od;                    /* pool for on-demand, -1 if none */
	double od_price_usd;       /* $/h of the on-demand pool */
	double deadline_s;         /* cloud s after submit; INFINITY = none */
	double work_s;             /* estimated cloud s of work */
	double restart_s;          /* cloud s lost per (re)start */
	int64_t gap_s;             /* policy tick, cloud s */
	int crit;                  /* enum jobspec_crit */
	int use_spot;              /* -1 unset, 0, 1 */
	int spares;                /* warm spares to keep: spotrun.spares,
				      or without it the plan's choice
				      (place_spare_choose) */
	bool spares_planned;       /* spares is the plan's choice */
	char spares_why[160];      /* the choice in words */
	double spare_saved_s;      /* cloud s a set-up spare saves per
				      recovery: the job's provisioning +
				      image_pull (market/spare.h) */
	int64_t delay_per_h;       /* micro-$ an hour of delay costs the
				      job (spotrun.delay_cost_per_hour);
				      -1: the gang's own $/h */
	bool train_through;        /* spotrun.train_through_notice */
	bool has_setup;            /* the job has a `setup:` */
};

/* Build the plan for `js` submitted at now_ns.  -SR_ENOTFOUND (with a
 * message naming resources.accelerators) if the market has nothing that
 * fits; -EINVAL for a deadline already past. */
int place_plan_init(struct ctl *c, const struct jobspec *js, int64_t now_ns,
		    struct place_plan *p, struct sr_err *e);

struct cloud_offering;
struct plan_spare;

/* The plan's warm-spare choice for js (spotrun.spares absent): the
 * planner `spotrun plan` runs (market/plan.h plan_make; its first
 * placement's spare, market/spare.h), over the n offerings v of this
 * daemon's clouds, with the job's deadline deadline_s in cloud s after
 * now (INFINITY: none).  Fills *out; 0, or the planner's error (a job
 * without spotrun.work cannot be planned: -SR_EPARSE) with *e set. */
int place_spare_choose(const struct jobspec *js, const struct cloud_offering *v,
		       size_t n, double deadline_s, int64_t now_ns,
		       struct plan_spare *out, struct sr_err *e);

/* JSON round trip for the jobs.candidates column.  _json returns a
 * malloc'd string (caller frees) or NULL. */
char *place_plan_json(const struct place_plan *p);
int place_plan_parse(const char *s, double deadline_s, double work_s,
		     struct place_plan *p);

/* What the job looks like now, in cloud seconds. */
struct place_now {
	int64_t tick;
	double work_done_s;   /* safely checkpointed work */
	double time_left_s;   /* until the deadline (inf without one) */
	double elapsed_s;     /* cloud time since the job's start */
	int held_pool;        /* pool of the live nodes, -1 if none */
	bool held_spot;
	int ckpt_pool;        /* pool the job last ran in, -1 if never */
	bool preempted;       /* spot was just taken away */
};

struct place_choice {
	enum sim_hold hold;   /* SIM_NONE = wait */
	int pool;             /* provider pool, -1 for NONE */
	bool spot;
	char why[160];
};

/* One policy decision.  `state` is the policy's memory, `*state_len`
 * bytes; pass NULL/0 the first time - a new state is allocated and reset
 * into *state (caller releases it with place_state_free).  A state of the
 * wrong size is released and replaced.  `policy` NULL = "spotrun". */
int place_decide(struct ctl *c, const struct place_plan *p, const char *policy,
		 const struct place_now *now, void **state, size_t *state_len,
		 struct place_choice *out, struct sr_err *e);

/* The move rule for a job on on-demand that the policy would put back on
 * spot in `pool` (spot_usd_h now): true only if the move pays for itself
 * - what it saves over the work left exceeds twice what it costs (the
 * restart overhead and a lost partial step of `step_s`, at the spot
 * price, plus egress) - and spot stays safe for the deadline with a
 * margin of one restart, one policy tick and one step beyond the guard's
 * (hysteresis). */
bool place_spot_pays(const struct place_plan *p, const struct place_now *now,
		     int pool, double spot_usd_h, double step_s);

/* Show the policy the market's recent past before its first decision, as
 * a controller watching the market before the job arrived would have
 * seen it: `ticks` policy ticks, oldest first, avail[t * nspot + i] and
 * price[t * nspot + i] (USD/h) for the plan's spot pool i - what a real
 * cloud can tell (recon_place.c: the market's price history and our own
 * observed preemptions and launch failures), never a replayed trace.
 * Only the policy's observation statistics change; no decision is used.
 * Releases any *state given and allocates a new one like place_decide. */
int place_warmup(struct ctl *c, const struct place_plan *p, const char *policy,
		 int ticks, const uint8_t *avail, const double *price,
		 void **state, size_t *state_len, struct sr_err *e);

/* Release a policy state from place_decide/place_warmup: the policy's
 * destroy op (what the state allocated), then the bytes.  NULL-safe. */
void place_state_free(const char *policy, void *state, size_t len);

/* A policy state persisted in the jobs table carries a header: magic,
 * PLACE_STATE_VERSION, the policy's name and state size.  Bump the
 * version whenever a policy's state layout changes.  _pack: *out
 * malloc'd.  _unpack: -SR_ECORRUPT for bytes of another format, version,
 * policy or size (the caller rebuilds the state from the market's past);
 * *state malloc'd. */
#define PLACE_STATE_VERSION 4 /* 4: spotrun keeps its prior's pseudo-counts */
int place_state_pack(const char *policy, const void *state, size_t len,
		     void **out, size_t *out_len);
int place_state_unpack(const char *policy, const void *data, size_t n,
		       void **state, size_t *len);

/* Whether the policy's state may own memory (it has a destroy op), so its
 * bytes mean nothing outside this process and must not be persisted. */
bool place_state_owns(const char *policy);

#endif
