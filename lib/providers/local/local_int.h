/*
 * local_int.h - internals shared by the local provider's files: local.c
 * (its definition, market view, bootstrap, metadata) and local_drv.c (its
 * compute driver).
 */
#ifndef SR_PROVIDERS_LOCAL_INT_H
#define SR_PROVIDERS_LOCAL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cloud/localmkt.h"
#include "cloud/provider.h"

#define LOCAL_PATH_MAX 2600 /* a record's or a disk's path */

/* One local cloud: its market and driver share it (st of both). */
struct local_prov {
	const struct cloud_host *h;  /* borrowed */
	struct localmkt *m;          /* the catalog's pools, replayed */
	int64_t notice_ms;           /* interruption lead, real ms */
	pthread_mutex_t mu;          /* guards the records */
	bool mu_init;
	char dir[2200];              /* <state>/localcloud */
	/* outages set by hand (local_outage.c): until[pool] on the cloud's
	 * clock, 0 none; under omu (the market reads it without mu) */
	pthread_mutex_t omu;
	bool omu_init;
	double *outage_until;
	size_t npools;
};

static inline double local__sim(const struct local_prov *l)
{
	return l->h->sim_s(l->h->ud);
}

static inline int64_t local__now(const struct local_prov *l)
{
	return l->h->real_ns(l->h->ud);
}

/* Outages set by hand (local_outage.c, <state>/outages.json).
 *   _load: read the file at open (a missing one: none).
 *   _set: cloud_provider_ops.outage.
 *   local__available: spot capacity in pool at sim_s - the trace's, and
 *     no outage (any thread).
 *   _mark: clear spot_available of offerings in an outage. */
int local__outage_load(struct local_prov *l, struct sr_err *e);
int local__outage_set(void *st, int pool, double for_s, double *until_s,
		      struct sr_err *e);
bool local__available(struct local_prov *l, int pool, double sim_s);
void local__outage_free(struct local_prov *l);

/* cloud_provider_ops.preempt (local_drv.c). */
int local__preempt(void *st, int64_t node, int64_t lead_ms, int64_t *notice_ns,
		   struct sr_err *e);

/* The compute driver (local_drv.c); st = struct local_prov. */
extern const struct cloud_driver_ops local__drv_ops;

/* The cloud's timeline caught up at open (local_drv.c): an instance
 * whose interruption time passed while the daemon - and this cloud in it
 * - was down is taken now, before the daemon serves any node. */
void local__catch_up(struct local_prov *l);

/* The newest instance of `node` (a gone one too: its agent may still
 * read the notice that ended it): 0 or -SR_ENOTFOUND (local_drv.c). */
int local__metadata(void *st, int64_t node, struct cloud_meta *out);

/* What the bill needs of an ended instance (local_bill.c). */
struct local_billed {
	const char *id, *itype, *cluster;
	int64_t job, node;
	int pool;
	bool spot;
	int64_t launched_ns, gone_ns;   /* wall clock */
	double launched_sim, gone_sim;  /* cloud clock */
};

/* Append the instance's lines to <state>/localcloud/bill.csv (under
 * l->mu).  Failures are logged: a bill is never worth a launch. */
void local__bill(struct local_prov *l, const struct local_billed *b);

#endif
