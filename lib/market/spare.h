/*
 * spare.h - the plan's price of a warm spare node (issue 33).
 *
 * A warm spare is a node booted and set up beside a spot gang, spot
 * itself, in the cheapest pool of the placement's cloud and region that
 * meets the job, which takes a lost rank's place at a notice: the
 * recovery then skips the replacement's boot and setup (the job's
 * provisioning + image_pull resume overheads) and keeps only the restore.
 * The spare is preemptible: losing it costs nothing but its bill.
 *
 *   cost   = the spare's $/h x E[T]           (kept for the whole run)
 *   saved  = E[N] x (provisioning + image_pull)   hours of downtime
 *   value  = saved x delay cost per hour      (spotrun.delay_cost_per_hour,
 *                                              default: the gang's own $/h)
 *   keep 1 when value > cost (it pays), or when the deadline's slack
 *   (deadline - E[T]) is smaller than the downtime it saves (the deadline
 *   needs it); else 0.  spotrun.spares: N sets the count instead.
 *
 * E[N] and E[T] are the placement's expected preemptions and makespan
 * (cost.h).  Money in micro-dollars.
 */
#ifndef SR_MARKET_SPARE_H
#define SR_MARKET_SPARE_H

#include "market/catalog.h"
#include "market/jobspec.h"

struct plan_result;
struct plan_placement;

struct plan_spare {
	int priced;                /* 1: a spare pool was found and priced */
	int keep;                  /* spares the plan keeps */
	int fixed;                 /* 1: spotrun.spares gave the count */
	struct catalog_offering o; /* the spare's pool (spot), when priced */
	sr_micros price_per_h;     /* one spare node */
	double kept_h;             /* hours it is kept: E[T] */
	double saved_s;            /* downtime saved per recovery */
	double recoveries;         /* E[N] */
	double slack_h;            /* deadline - E[T]; +inf without one */
	sr_micros delay_per_h;     /* the job's cost of an hour of delay */
	sr_micros cost;            /* one spare over kept_h */
	sr_micros value;           /* the delay it saves, in dollars */
	char why[160];             /* the choice in words */
};

/* Price a spare for placement p of js (the plan's first, feasible one)
 * over catalog cat, with the plan's deadline deadline_h (+inf: none).
 * Fills *out; never fails (out->why says when nothing is priced). */
void plan_spare_price(const struct catalog *cat, const struct jobspec *js,
		      const struct plan_placement *p, double deadline_h,
		      struct plan_spare *out);

#endif
