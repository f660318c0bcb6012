/*
 * localmkt.h - the local cloud's market: catalog offerings whose spot
 * availability and price replay real traces.
 *
 * Every catalog offering is a pool.  A pool replays one trace from
 * <data>/traces, chosen deterministically:
 *   1. among the traces naming the pool's accelerator in their file name
 *      ("_v100_"), or all traces if none does,
 *   2. those recorded in the pool's zone or region ("us-west-2c_v100_1"
 *      for an AWS V100 pool in us-west-2) if any, and
 *   3. of these, number hash(cloud/region/zone/type) mod their count.
 * A pool matched by place keeps phase 0 (the real history of that place);
 * the others get a phase offset, hash mod trace length, so that pools
 * sharing a trace are not preempted in lock-step.  The trace is replayed
 * cyclically: at cloud time t the pool is in tick
 * (floor(t / gap) + phase) mod n.
 *
 * Spot price: the trace's price column (SkyNomad) scaled by the ratio of
 * the catalog spot price to the trace's mean price, or the catalog spot
 * price when the trace has none.  On-demand and reserved prices come from
 * the catalog unchanged.
 */
#ifndef SR_CLOUD_LOCALMKT_H
#define SR_CLOUD_LOCALMKT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "cloud/market.h"

struct localmkt;

/* Load <data_dir>/catalog + offerings and every trace under
 * <data_dir>/traces.  *out owned by the caller (localmkt_free). */
int localmkt_load(const char *data_dir, struct localmkt **out, struct sr_err *e);
void localmkt_free(struct localmkt *m);

size_t localmkt_npools(const struct localmkt *m);
/* Pool `pool` at cloud time sim_s.  -SR_ENOTFOUND if out of range. */
int localmkt_describe(const struct localmkt *m, int pool, double sim_s,
		      struct cloud_offering *out);
/* Is spot capacity available in `pool` at sim_s? */
bool localmkt_available(const struct localmkt *m, int pool, double sim_s);
/* Matching offerings, cheapest spot (then on-demand) first. */
int localmkt_offerings(const struct localmkt *m, const struct cloud_query *q,
		       double sim_s, struct cloud_offering **out, size_t *n,
		       struct sr_err *e);

/* A real provider's view of the catalog: its cloud's pools in one
 * region (the same pool numbers), each passed through view (its live
 * price and availability estimate; NULL: the catalog's), the catalog
 * clock at 0 (no trace replayed). */
struct localmkt_place {
	const char *cloud, *region;
	void (*view)(void *ud, struct cloud_offering *o);
	void *ud;
};
/* localmkt_offerings kept to the place, viewed, cheapest spot first. */
int localmkt_offerings_at(const struct localmkt *m,
			  const struct localmkt_place *pl,
			  const struct cloud_query *q, struct cloud_offering **out,
			  size_t *n, struct sr_err *e);
/* localmkt_describe of a pool of the place, viewed; -SR_ENOTFOUND for a
 * pool elsewhere. */
int localmkt_describe_at(const struct localmkt *m,
			 const struct localmkt_place *pl, int pool,
			 struct cloud_offering *out);

#endif
