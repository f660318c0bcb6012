/*
 * provider.h - the one small interface every cloud sits behind.
 *
 * The reconciler decides; a provider only acts and observes:
 *   offerings  what can be bought now (pool, prices, spot availability);
 *   provision  start node `n` (the row already exists in the database);
 *   terminate  stop node `n` and everything on it (idempotent: a node
 *              already gone is not an error, so the reconciler also
 *              calls it to sweep nodes a crash may have left running);
 *   list       observe the nodes the database believes alive: is each
 *              still there, and has the cloud scheduled it for reclaim.
 *
 * Pools are identified by an index stable for the life of the provider
 * (and across restarts with the same data), stored in nodes.pool.
 * Times: `sim_s` is the cloud clock (ctl_clock.h).
 */
#ifndef SR_CTL_PROVIDER_H
#define SR_CTL_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"

struct prov_offering {
	int pool;
	char cloud[16], region[40], zone[40], instance_type[48];
	char accelerator[24];
	double accel_count;
	sr_micros ondemand_per_h;  /* -1 unknown */
	sr_micros spot_per_h;      /* price now; -1 no spot */
	sr_micros reserved_per_h;  /* -1 unknown */
	double hazard_per_h;       /* from the catalog */
	bool spot_available;       /* the pool has spot capacity now */
	char trace[128];           /* trace replayed for this pool ("" none) */
};

struct prov_query {
	const char *accelerator;   /* NULL = any */
	double accel_count;        /* 0 = any */
	const char *const *clouds; /* NULL-terminated allow list, NULL = any */
	const char *const *regions;
};

/* What the provider needs to start one node.  The provider hands the
 * token to the node through its own bootstrap channel (local: a 0600
 * file in the node's work dir; a cloud: user-data) - nothing the
 * control plane keeps on its own disk is assumed visible to a node. */
struct prov_node {
	int64_t id;
	int64_t job_id;
	int pool;
	bool spot;
	const char *token;         /* node bearer token (only at provision;
				      borrowed, wiped by the caller after) */
	int64_t pid, pid_start;    /* the provider's instance identity:
				      from provision; 0 if unknown */
};

struct prov_obs {
	bool alive;                /* the instance still exists */
	bool reclaim;              /* the cloud is taking it back (spot) */
	bool pending;              /* the cloud still boots it (EC2
				      "pending"): a slow cloud's boot, not
				      the node's, so no boot timeout runs */
};

struct prov_ops {
	const char *name;
	/* Nodes see the control plane's disk (the local cloud): the node
	 * API may hand them directories under the state dir.  False for a
	 * cloud: a node keeps everything on its own disk. */
	bool shared_disk;
	void (*destroy)(void *st);
	/* *out malloc'd (caller frees), cheapest spot first. */
	int (*offerings)(void *st, const struct prov_query *q, double sim_s,
			 struct prov_offering **out, size_t *n, struct sr_err *e);
	int (*describe)(void *st, int pool, double sim_s,
			struct prov_offering *out);
	/* Fills n->pid/pid_start.  `commit` is called after the instance
	 * exists but before it may act (local: before exec), so the caller can
	 * record it durably; if commit fails the instance is abandoned.
	 * -EINPROGRESS: the launch runs on (a cloud's API call); the node
	 * stays REQUESTED and the reconciler calls provision() again on a
	 * later pass, which then commits (or fails).  Never blocks long. */
	int (*provision)(void *st, struct prov_node *n,
			 int (*commit)(void *ud, const struct prov_node *n),
			 void *ud, struct sr_err *e);
	int (*terminate)(void *st, const struct prov_node *n);
	int (*list)(void *st, const struct prov_node *nodes, size_t n,
		    double sim_s, struct prov_obs *obs);
	/* Optional (several providers as one): who sells `pool`, and
	 * whether its nodes share the control plane's disk.  NULL: `name`
	 * and `shared_disk` for every pool. */
	const char *(*pool_provider)(void *st, int pool);
	bool (*pool_shared)(void *st, int pool);
};

struct ctl_provider {
	const struct prov_ops *ops;
	void *st;
};

#endif
