/*
 * clouds.h - the open providers as lib/ctl drives them (clouds.c): which
 * provider sells a pool, launches, terminations and the observation of
 * every instance with the leak sweep.  The providers themselves come from
 * the registry (lib/providers/registry.h) through cloud/provider.h; no
 * provider is named here.
 */
#ifndef SR_CTL_CLOUDS_H
#define SR_CTL_CLOUDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cloud/provider.h"
#include "common/err.h"

struct ctl;

/* ---- clouds: the open providers (cloud/provider.h, clouds.c) ---- */

/* One open provider (one region of it) the reconciler drives.  Owned by
 * the daemon (ctl_stop closes it). */
struct ctl_cloud {
	const struct cloud_prov_def *def; /* NULL: a test's injected cloud */
	char name[16];             /* def->name: nodes.provider */
	unsigned caps;             /* CLOUD_CAP_* */
	struct cloud_provider p;
};

#define CTL_INFLIGHT_MAX 64

/* A node as the clouds see it (clouds.c). */
struct ctl_node_ref {
	int64_t id, job_id;
	int pool;
	bool spot;
	const char *instance_id;   /* the cloud's id; NULL/"" not known yet */
	const char *image;         /* the task's image (resources.image_id) for
				      the pool's region; NULL: the provider's */
	/* its launch group (cloud/compute.h, LAUNCH GROUPS): the nodes of
	 * its job placed with it in one pass; size <= 1 alone.  first: the
	 * node id of index 0, whose key is the group's */
	int group_size, group_index;
	int64_t group_first;
};

/* What a cloud says about a node's instance. */
struct ctl_node_obs {
	bool alive;                /* the instance still exists */
	int64_t notice_ns;         /* the cloud announced its interruption at
				      this wall-clock time: the node's
				      deadline (0: none) */
	bool pending;              /* the cloud still boots it: a slow
				      cloud's boot, not the node's, so no
				      boot timeout runs */
	bool stopping;             /* not alive, but listed as shutting
				      down (CLOUD_INST_STOPPING: GCE's
				      STOPPING at a preemption, Slurm's
				      COMPLETING): its agent may still be
				      sending its last reports */
	char found[64];            /* a node with no instance recorded: the
				      running one the cloud lists under its
				      tag ("" none) */
	bool gone;                 /* its instance listed as terminated */
	bool unlisted;             /* its cloud was listed, and showed
				      nothing of its instance */
	int64_t missing_ns;        /* how long (monotonic) the listings have
				      shown its recorded instance absent or
				      shutting down: the nodes pass sets it */
};

/* A launch the reconciler started and has not committed. */
struct ctl_inflight {
	int64_t node;
	int cloud;
	struct cloud_req *req;
};

/* The provider that sells `pool`: its name, as nodes.provider records
 * it, and its capabilities (CLOUD_CAP_*; 0 when none sells it)
 * (clouds.c; any thread). */
const char *ctl__prov_name(const struct ctl *c, int pool);
unsigned ctl__prov_caps(const struct ctl *c, int pool);

/* The clouds (clouds.c).  The market of the first cloud that
 * describes a pool sells it; CLOUD_CAP_FALLBACK ones come last.
 *   _offerings / _describe: the merged market view (any thread).
 *   _launch: start node n (a bootstrap secret issued for it travels
 *     in its bootstrap: nodeboot.h).  0: the instance
 *     is known and commit(ud, id, blob, pending: the cloud still boots
 *     it) recorded it; -EINPROGRESS: the
 *     cloud call runs on, ask again on a later pass; else the class's
 *     code (compute.h: -ENOSPC capacity, -EDQUOT quota, -EACCES auth,
 *     -EBUSY throttle, -SR_EHTTP transient, -EINVAL invalid) with *e.
 *   _terminate: idempotent; by instance id, or by the node's tag.
 *   _observe: every cloud's instances of this cluster, matched to the
 *     live nodes v[0..n) (obs[i]); instances no live node holds are
 *     terminated (leaks); refreshes the market views' caches.
 * Reconciler thread only, but _offerings/_describe/_name/_shared. */
/* A launch's parameters kept from its first attempt (launchrec.c): the
 * same idempotency key always goes with the same parameters, whichever
 * daemon sends it.  _recall: 1 and *l filled from the kept record (its
 * strings borrowed from *doc, the caller's to json_decref), 0 when
 * none is kept, < 0 on an error; _keep: seal *l and write it in a
 * fenced transaction before it is sent (0 or < 0: then it must not be
 * sent); _forget: drop it once the instance is recorded. */
int ctl__launch_recall(struct ctl *c, int64_t node, const char *key,
		       struct cloud_launch *l, json_t **doc, struct sr_err *e);
int ctl__launch_keep(struct ctl *c, int64_t node, const struct cloud_launch *l,
		     struct sr_err *e);
void ctl__launch_forget(struct ctl *c, int64_t node);

/* Add an open provider (owned from here, also on failure). */
int ctl__clouds_add(struct ctl *c, struct ctl_cloud *cl, struct sr_err *e);
/* Open the providers cfg names (cfg->provider, else those of
 * cfg->providers, else "local") from the registry: regional ones once per
 * configured region. */
int ctl__clouds_open(struct ctl *c, struct sr_err *e);
/* This control plane's cluster id (the spotrun:cluster tag every
 * instance carries): made once, kept in the settings; into c->cluster. */
int ctl__cluster_load(struct ctl *c, struct sr_err *e);
void ctl__clouds_free(struct ctl *c);
int ctl__cloud_of(const struct ctl *c, int pool);
int ctl__offerings(struct ctl *c, const struct cloud_query *q,
		   struct cloud_offering **out, size_t *n, struct sr_err *e);
int ctl__describe(struct ctl *c, int pool, struct cloud_offering *out);
int ctl__price_history(struct ctl *c, int pool, double step_s, int n,
		       double *usd_h);
int ctl__launch(struct ctl *c, const struct ctl_node_ref *n,
		int (*commit)(void *ud, const char *id, const char *blob,
			      bool pending),
		void *ud, struct sr_err *e);
int ctl__terminate(struct ctl *c, const struct ctl_node_ref *n);
/* A launch of node `node` is in flight (ctl__launch answered
 * -EINPROGRESS): the next ctl__launch polls it, sending nothing new. */
bool ctl__launch_pending(const struct ctl *c, int64_t node);
/* Stop polling node's launch in flight, if any (its instance was found
 * otherwise: by its tag). */
void ctl__launch_drop(struct ctl *c, int64_t node);
int ctl__observe(struct ctl *c, const struct ctl_node_ref *v, size_t n,
		 struct ctl_node_obs *obs);
/* "local,aws/us-east-1": the open clouds' names (and regions). */
void ctl__clouds_names(const struct ctl *c, char *out, size_t cap);

/* The metadata the daemon serves node `node` (routes_imds.c): from the
 * first CLOUD_CAP_HOSTED_META provider that launched it; -SR_ENOTFOUND. */
int ctl__node_meta(struct ctl *c, int64_t node, struct cloud_meta *out);

#endif
