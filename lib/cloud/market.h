/*
 * market.h - provider contract v2, the market-view half: what can be
 * bought, at what price, and how likely it is to stay.  (The other half,
 * compute.h, starts and stops machines.)
 *
 * A market view answers from what its cloud can really tell:
 *   - list prices (on-demand, reserved) and the catalog's preemption
 *     rate (hazard_per_h);
 *   - the spot price now and its recent history (EC2:
 *     DescribeSpotPriceHistory; the local cloud: its replayed trace; the
 *     catalog CSV as the fallback), with where it came from and its age;
 *   - spot availability as an ESTIMATE (spot_available): the cloud's own
 *     signal where it has one, else "a spot price is quoted".  The
 *     control plane corrects it with what it observed itself - launch
 *     failures and preemption notices per pool (ctl__pool_mark) - and
 *     never asks a market for past availability.
 *
 * Pools are small integers, stable for the life of the view and across
 * restarts with the same data (the catalog's row numbers), stored with
 * each node.  Several views may number pools the same way; the control
 * plane gives a pool to the first view that describes it.  A provider
 * whose offerings are not the catalog's (a cluster, a cloud the catalog
 * lacks) numbers them from CLOUD_POOL_OWN_BASE, stably.
 *
 * Times: a view keeps its own clock (the local cloud's is accelerated
 * by --time-scale; a real cloud's is the wall clock); no call takes one.
 *
 * THREADING: offerings() and describe() may be called from any thread,
 * concurrently (HTTP threads list offerings) and never block on the
 * network: a view serves a cache.  refresh() may block (seconds, the
 * cloud's API) and is called only from the reconciler thread.
 */
#ifndef SR_CLOUD_MARKET_H
#define SR_CLOUD_MARKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"

/* The first pool number of a provider's own offerings (not the
 * catalog's rows, which stay below it). */
#define CLOUD_POOL_OWN_BASE (1 << 24)

enum cloud_price_src {
	CLOUD_PRICE_CATALOG = 0, /* the catalog CSV's spot price */
	CLOUD_PRICE_LIVE,        /* the cloud's price feed */
	CLOUD_PRICE_TRACE,       /* the local cloud's replayed trace */
};

struct cloud_offering {
	int pool;
	char cloud[16], region[40], zone[40], instance_type[48];
	char accelerator[24];
	double accel_count;
	sr_micros ondemand_per_h;  /* -1 unknown */
	sr_micros spot_per_h;      /* price now; -1 no spot */
	sr_micros reserved_per_h;  /* -1 unknown */
	double hazard_per_h;       /* from the catalog */
	bool spot_available;       /* estimate: spot can be bought now */
	/* capacity already paid for (a reserved cluster: the slurm
	 * provider): `criticality: critical` prefers it to on-demand */
	bool committed;
	int committed_count;       /* committed: its instances (nodes) */
	/* own_offerings (provider.h) only: the expected wait in the
	 * cluster's queue before a job starts, -1 unknown, and what the
	 * estimate is based on, in words ("" none) */
	int64_t queue_wait_s;
	char queue_basis[120];
	enum cloud_price_src price_src;
	int64_t price_age_s;       /* how old spot_per_h is; 0 now */
	char trace[128];           /* local cloud: trace replayed ("" none) */
};

struct cloud_query {
	const char *accelerator;   /* NULL = any */
	double accel_count;        /* 0 = any */
	const char *const *clouds; /* NULL-terminated allow list, NULL = any */
	const char *const *regions;
};

struct cloud_market_ops {
	const char *name;
	/* Matching offerings, cheapest spot first; *out malloc'd (caller
	 * frees).  0 or a negative code with *e set. */
	int (*offerings)(void *st, const struct cloud_query *q,
			 struct cloud_offering **out, size_t *n,
			 struct sr_err *e);
	/* Pool `pool` now: 0, or -SR_ENOTFOUND when this view does not sell
	 * it. */
	int (*describe)(void *st, int pool, struct cloud_offering *out);
	/* Spot price history of `pool` in USD/h: usd_h[i] is the price
	 * (n - i) * step_s seconds ago on the view's clock, -1 where the
	 * view does not know it.  Returns how many entries it knew.
	 * NULL-able: a view with no history (the caller reads all -1). */
	int (*price_history)(void *st, int pool, double step_s, int n,
			     double *usd_h);
	/* Refresh cached prices (reconciler thread; may block).  NULL-able. */
	void (*refresh)(void *st);
	void (*destroy)(void *st);
};

struct cloud_market {
	const struct cloud_market_ops *ops;
	void *st;
};

/* qsort order of offerings: cheapest spot first (no spot last), then
 * cheapest on-demand, then pool index. */
int cloud_offering_cmp(const void *a, const void *b);

#endif
