/*
 * plan.h - rank every placement of a job across the catalog.
 *
 * A placement is an offering (cloud, region, zone, instance type) and a
 * purchase mode.  For each one the planner computes the expected cost and
 * the probability of finishing by the deadline with the cost model
 * (cost.h), applies the governance rules of the job's criticality, and
 * ranks the feasible placements by expected cost:
 *
 *   criticality   modes considered
 *   critical      reserved, on-demand; a committed pool (a provider's
 *                 own cluster: catalog_offering.committed) first
 *                 among the feasible, at any price
 *   standard      spot with on-demand fallback, on-demand
 *                 (resources.use_spot: true -> spot with fallback only;
 *                  use_spot: false -> on-demand only)
 *   best-effort   spot only (no fallback)
 *
 * A committed pool is placed once, at its committed price (mode
 * reserved), for every job that may buy on demand; its queue wait
 * (queue_wait_s) comes before the work, and an unknown wait meets no
 * deadline.
 *
 * Feasible = P(meet deadline) >= p_target, expected cost <= max_cost and
 * expected preemptions <= max_restarts.  Offerings that do not match the
 * accelerators, infra/any_of, network tier or max_hourly_cost are not
 * placements at all.  docs/market.md gives the fallback approximation.
 *
 * Ownership: plan_make() fills a caller-owned struct plan_result whose
 * array it owns; release it with plan_result_free().
 */
#ifndef SR_MARKET_PLAN_H
#define SR_MARKET_PLAN_H

#include <jansson.h>
#include <stddef.h>

#include "market/catalog.h"
#include "market/cost.h"
#include "market/jobspec.h"
#include "market/spare.h"

enum plan_mode {
	PLAN_SPOT = 0,       /* spot only; a miss is a miss */
	PLAN_SPOT_FALLBACK,  /* spot, switching to on-demand to keep the deadline */
	PLAN_ONDEMAND,
	PLAN_RESERVED,       /* amortized committed price */
};

/* Minimum checkpoint interval the planner chooses on its own (hours). */
#define PLAN_MIN_CKPT_INTERVAL_H (5.0 / 60.0)

struct plan_placement {
	struct catalog_offering o;   /* copy of the offering */
	enum plan_mode mode;
	sr_micros price_per_h;       /* whole gang, in this mode */
	double ckpt_interval_h;      /* tau used; 0 = no checkpoints */
	struct cost_estimate est;    /* spot part for SPOT_FALLBACK */
	double p_meet;               /* P(finish by deadline) */
	double p_fallback;           /* SPOT_FALLBACK: P(switch to on-demand) */
	sr_micros expected_cost;
	sr_micros cost_p95;          /* 95th percentile of the cost (>= expected) */
	double savings_vs_od;        /* 1 - cost/baseline; NAN if no baseline */
	double savings_vs_reserved;
	int feasible;
	int preferred;               /* a committed pool for a critical job:
					ranked before the cheaper feasible */
	char why[96];                /* reason when !feasible, else "" */
};

struct plan_result {
	struct plan_placement *items; /* owned: feasible by cost, then the rest */
	size_t n, n_feasible;
	double deadline_h;            /* +inf when the job has none */
	double resume_h;              /* R used for every placement */
	double stall_h;               /* checkpoint stall delta */
	sr_micros baseline_od;        /* cheapest on-demand placement; -1 none */
	sr_micros baseline_reserved;  /* cheapest reserved placement; -1 none */
	struct plan_spare spare;      /* a warm spare for items[0] (spare.h) */
};

/* Plan js over c.  now_ns (Unix ns) resolves an absolute deadline.
 * Errors: -SR_EPARSE when the job lacks accelerators or work, or the
 * deadline has passed; -EINVAL when a name is not in the catalog (GPU,
 * GPU count, cloud, region, zone: the message gives the nearest valid
 * names) or the work cannot fit before the deadline.  Zone names
 * ("us-east-1a") are matched through the catalog's zone table.
 * Placements whose price or on-demand fallback price is above
 * max_hourly_cost are dropped. */
int plan_make(const struct catalog *c, const struct jobspec *js,
	      int64_t now_ns, struct plan_result *out, struct sr_err *e);
void plan_result_free(struct plan_result *r); /* NULL-safe */

/* The cost-model inputs of running js on offering o in `mode`, exactly as
 * plan_make() uses them: gang price, gang hazard (0 unless spot), the
 * job's checkpoint stall, resume time (provisioning + image pull +
 * restore) and checkpoint interval (the job's, else Daly's optimum, at
 * least PLAN_MIN_CKPT_INTERVAL_H).  For the control plane, to re-derive
 * a placement's interval or cost.  0, or -EINVAL when the mode has no
 * price on o or js lacks work. */
int plan_cost_params(const struct jobspec *js, const struct catalog_offering *o,
		     enum plan_mode mode, struct cost_params *cp);

const char *plan_mode_name(enum plan_mode m);
/* "low" (P(miss) < 1%), "medium" (< 5%), "high"; "n/a" without deadline. */
const char *plan_risk(const struct plan_result *r, const struct plan_placement *p);

/* New reference: {"deadline_h", "p_target", "baseline_od_micros", ...,
 * "placements": [...]}; NULL on out-of-memory. */
json_t *plan_to_json(const struct plan_result *r, const struct jobspec *js);

#endif
