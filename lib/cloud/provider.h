/*
 * provider.h - one provider: everything a cloud (or a cluster) must do for
 * spotrun, as one set of operations.  The control plane drives every
 * provider through this header and the two halves it names (market.h,
 * compute.h); it never names a provider.  docs/providers.md, "Writing a
 * provider", is the guide.
 *
 *   market       offerings, prices, price history      cloud/market.h
 *   compute      provision, poll, terminate, list      cloud/compute.h
 *   bootstrap    the text a new node boots with (its first secret
 *                travels in it): cloud_provider_ops.bootstrap
 *   notice       how a node learns of a preemption: the agent's notice
 *                source (cloud_prov_def.notice) and, for a provider
 *                whose nodes have no metadata service of their own, the
 *                view the daemon serves them (ops.metadata)
 *   credentials  check (spotrun check, start-up) and refresh
 *
 * A provider is a folder, lib/providers/<name>/, that defines one
 * `const struct cloud_prov_def prov_<name>`, and one line in the registry
 * (lib/providers/registry.c).  The control plane opens it once per
 * configured region (cloud_prov_def.regional) or once (the local cloud),
 * with a cloud_host (what the daemon lends it) and its section of the
 * daemon's configuration (cloud_conf: docs/providers.md "Configuration").
 *
 * CAPABILITIES (cloud_prov_def.caps): facts the control plane acts on,
 * never a provider's name.
 *   CLOUD_CAP_SPOT         sells spot (preemptible) capacity; without it
 *                          every pool is on-demand.
 *   CLOUD_CAP_TAGS         instances carry the CLOUD_TAG_* tags and
 *                          list(cluster) finds them: the leak sweep
 *                          terminates what no node holds.  Without it the
 *                          sweep leaves the provider alone.
 *   CLOUD_CAP_QUEUES       a request may wait in the provider's queue for
 *                          long (a batch scheduler): a node it reports as
 *                          pending runs no boot timeout.
 *   CLOUD_CAP_SHARED_DISK  nodes see the control plane's disk: the node
 *                          API may hand them directories under the state
 *                          directory (checkpoints without a tier-3 URI).
 *   CLOUD_CAP_FALLBACK     sells every pool of the catalog (a simulation
 *                          of them): ordered after every other provider,
 *                          so a pool a real provider sells goes there.
 *   CLOUD_CAP_KNOWN_BOOT   its provisioning delay is its own setting,
 *                          known exactly: restart estimates use the
 *                          daemon's provision/restart figures, never the
 *                          job's provision/image_pull guesses.
 *   CLOUD_CAP_HOSTED_META  its nodes have no metadata service of their
 *                          own: the daemon serves an IMDSv2 for each at
 *                          /imds/{node} (docs/api.md), answered by
 *                          ops.metadata.
 *   CLOUD_CAP_GROUP_ALLOC  it starts a launch group (compute.h, LAUNCH
 *                          GROUPS) as one allocation, whose nodes end
 *                          together (a batch job of k nodes): a notice to
 *                          one of them dooms the whole group, whose ranks
 *                          are all placed again - as one group.
 *
 * THE NOTICE.  A preemption notice carries the cloud's time: the instant
 * the instance will be taken (AWS: instance-action's "time", two minutes
 * ahead; GCP: 30 s; Azure: Scheduled Events' NotBefore).  That instant is
 * the node's deadline end to end: the agent reports it, the control
 * plane stores it as the node's kill time, the final checkpoint is due
 * before it and the node is ended at it.  A provider that announces it
 * through its API sets cloud_instance.notice_ns; one that tells only the
 * instance lets the agent report it.  A rebalance recommendation (AWS)
 * is an early warning, not a notice: cloud_meta.rebalance_ns.
 *
 * OWNERSHIP AND THREADS.  open() fills a cloud_provider the caller owns
 * and releases with cloud_provider_close() (market, driver, then the
 * provider's own state), also after a failed open (NULL-safe parts).  The
 * host and the configuration are borrowed and outlive the provider.
 * ops.metadata may be called from any thread; bootstrap and the
 * credential calls from the reconciler thread.
 */
#ifndef SR_CLOUD_PROVIDER_H
#define SR_CLOUD_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloud/compute.h"
#include "cloud/conf.h"
#include "cloud/market.h"
#include "common/err.h"

enum cloud_cap {
	CLOUD_CAP_SPOT = 1u << 0,
	CLOUD_CAP_TAGS = 1u << 1,
	CLOUD_CAP_QUEUES = 1u << 2,
	CLOUD_CAP_SHARED_DISK = 1u << 3,
	CLOUD_CAP_FALLBACK = 1u << 4,
	CLOUD_CAP_KNOWN_BOOT = 1u << 5,
	CLOUD_CAP_HOSTED_META = 1u << 6,
	CLOUD_CAP_GROUP_ALLOC = 1u << 7,
};

/* What the daemon lends a provider (borrowed; outlives it). */
struct cloud_host {
	const char *state_dir;     /* the daemon's state directory (0700) */
	const char *data_dir;      /* catalog + traces (market/catalog.h) */
	/* the spotrun-agent binary the daemon found (a simulated instance
	 * runs it); agent_given: the operator named it (--agent) */
	const char *agent_path;
	bool agent_given;
	const char *cluster;       /* the CLOUD_TAG_CLUSTER value */
	/* The daemon's clocks: real time (ns, injectable by tests) and the
	 * cloud clock (seconds; accelerated by --time-scale, which only a
	 * simulated market reads). */
	int64_t (*real_ns)(void *ud);
	double (*sim_s)(void *ud);
	void *ud;
	/* the daemon's settings for a simulated cloud (real ms; the local
	 * provider's configuration may override them) */
	int64_t notice_ms, provision_ms;
	/* Fencing (compute.h, FENCING).  lease_epoch: the epoch the daemon
	 * leads under now (when it does not lead, one fence_ok refuses:
	 * never 0, "not fenced"); a side effect asked of a provider
	 * (provision, terminate) is decided under it.  fence_ok:
	 * whether that epoch is still held - call it just before the request
	 * leaves, and send nothing when it says no.  Both any thread; NULL
	 * in tests that run no lease (never fenced). */
	int64_t (*lease_epoch)(void *ud);
	bool (*fence_ok)(void *ud, int64_t epoch);
};

/* What a node needs at its first boot (borrowed). */
struct cloud_boot {
	int64_t node_id, job_id;
	/* the node's one-time bootstrap secret (lib/ctl/nodeboot.h): its
	 * agent exchanges it for its token at first contact.  Put it in
	 * the instance's bootstrap channel and nowhere else; never a node
	 * token (spotrun-agent --bootstrap-file) */
	const char *bootstrap;
	const char *api_url;       /* the control plane(s), leader first */
};

/* What the daemon's IMDSv2 serves a CLOUD_CAP_HOSTED_META node. */
struct cloud_meta {
	int64_t notice_ns;         /* interruption time (wall clock), 0 none */
	int64_t rebalance_ns;      /* rebalance recommendation, 0 none */
	char zone[40], instance_type[48];
	char instance_id[64];      /* as the node's metadata names it */
	bool spot;
};

/* The state of a provider's credentials, as `spotrun check` reports
 * them. */
enum cloud_cred_state {
	CLOUD_CRED_UNSET = 0,      /* derive from check()'s code:
				      cloud_cred_state_of */
	CLOUD_CRED_VALID,          /* found, and a signed call took them */
	CLOUD_CRED_MISSING,        /* none found (the message names the
				      variable or file to set) */
	CLOUD_CRED_BAD,            /* found but refused, expired or
				      malformed (the message names where) */
	CLOUD_CRED_UNVERIFIED,     /* found; the endpoint could not be
				      reached to try them */
	CLOUD_CRED_NONE,           /* the provider needs none */
};

/* What `spotrun check` prints about a provider. */
struct cloud_check {
	enum cloud_cred_state cred; /* UNSET: from check()'s code */
	char credentials[256];     /* where they came from ("" none needed) */
	char region[64], endpoint[256];
	int64_t expires_s;         /* temporary credentials: epoch s, 0 none */
	/* they, or what renews them, run out within the hour and cannot be
	 * renewed unaided: what to do ("" none) */
	char warning[SR_ERR_MSG_MAX];
	char probe[48];            /* the instance type probed, "" none */
	char **zones;              /* zones selling it (malloc'd strings in
				      a malloc'd array) */
	size_t nzones;
	char detail[256];          /* one line for a provider without these */
};

/* One row of the catalog a provider is asked to price live (borrowed
 * strings, valid for the call). */
struct cloud_price_ask {
	const char *region, *zone, *instance_type;
	const char *accelerator;   /* "L4", "" none */
	double accel_count, vcpus, memory_gib; /* per node; 0 unknown */
};

/* A live price the provider's feed quoted. */
struct cloud_price_quote {
	char region[40], zone[40]; /* zone "": every zone of the region */
	char instance_type[48];
	sr_micros spot_per_h;      /* -1: not quoted */
	sr_micros ondemand_per_h;  /* -1: not quoted */
};

struct cloud_provider_ops {
	/* The first-boot text (EC2: a user-data script; the local cloud: a
	 * JSON startup document).  *out malloc'd; the caller wipes and
	 * frees it (it holds the bootstrap secret). */
	int (*bootstrap)(void *st, const struct cloud_boot *b, char **out,
			 struct sr_err *e);
	/* CLOUD_CAP_HOSTED_META: node's view; -SR_ENOTFOUND when this
	 * provider never launched it.  NULL otherwise. */
	int (*metadata)(void *st, int64_t node, struct cloud_meta *out);
	/* Credentials: valid now?  *expires_s (may be NULL) the epoch second
	 * temporary ones expire, 0 none.  0 when good; 1 with *e naming
	 * what to do when they (or what renews them) run out within the
	 * hour and cannot be renewed unaided (the daemon alerts); < 0 when
	 * they are gone (-EKEYEXPIRED) or refused.  NULL: none needed. */
	int (*cred_check)(void *st, int64_t *expires_s, struct sr_err *e);
	/* Refresh temporary credentials now.  NULL: nothing to refresh. */
	int (*cred_refresh)(void *st, struct sr_err *e);
	/* Driven by hand (`spotrun cloud preempt|outage`; a simulated cloud
	 * only, NULL elsewhere).
	 *   preempt: reclaim node's running spot instance as the cloud
	 *     would, its notice lead_ms (real ms; 0: the provider's own
	 *     lead) ahead; *notice_ns the kill time (wall clock), the
	 *     earlier one if the instance already had a notice.
	 *     -SR_ENOTFOUND: no running instance of node here; -EINVAL with
	 *     *e: an on-demand instance (never reclaimed).
	 *   outage: no spot capacity in `pool` for for_s seconds of the
	 *     cloud's clock from now: its spot instances are reclaimed one
	 *     at a time and spot launches into it fail for capacity.
	 *     *until_s the end on the cloud's clock.  -SR_ENOTFOUND: the
	 *     provider does not sell pool.
	 * Any thread. */
	int (*preempt)(void *st, int64_t node, int64_t lead_ms,
		       int64_t *notice_ns, struct sr_err *e);
	int (*outage)(void *st, int pool, double for_s, double *until_s,
		      struct sr_err *e);
	void (*destroy)(void *st); /* NULL-safe st */
};

/* One open provider (one region of it). */
struct cloud_provider {
	struct cloud_market mkt;
	struct cloud_driver drv;
	const struct cloud_provider_ops *ops;
	void *st;
	char region[40];           /* the region it serves; "" any */
};

/* A provider as the registry lists it. */
struct cloud_prov_def {
	const char *name;          /* nodes.provider, --providers, config */
	const char *summary;       /* one line for --help and spotrun check */
	unsigned caps;             /* CLOUD_CAP_* */
	bool regional;             /* opened once per configured region */
	/* the keys its configuration section and regions may hold (NULL-
	 * terminated), beyond `regions` itself */
	const char *const *conf_keys;
	/* the clouds (offering.cloud, a job's infra) it sells beyond the
	 * catalog's (NULL-terminated; NULL: none, it sells catalog pools) */
	const char *const *infra;
	/* the agent's notice source (docs/agent.md: "imds" = IMDSv2
	 * spot/instance-action + rebalance; "signal" = a scheduler's
	 * signal) and whether the notice must be acknowledged */
	const char *notice_source;
	bool notice_ack;
	/* Open it for `region` (NULL: not regional, or the region its
	 * environment names).  0 or an error naming what is missing. */
	int (*open)(const struct cloud_host *h, const struct cloud_conf *conf,
		    const struct cloud_conf_region *region,
		    struct cloud_provider *out, struct sr_err *e);
	/* spotrun check: can it be used from here (credentials, one cheap
	 * signed read)?  Starts nothing.  Fills *out (cloud_check_clear). */
	int (*check)(const struct cloud_conf *conf,
		     const struct cloud_conf_region *region,
		     struct cloud_check *out, struct sr_err *e);
	/* spotrun plan / gpus: one pass over the provider's live price
	 * feed for ask[0..nask) (the catalog's rows of the cloud named
	 * like the provider), in `region` (NULL: the one its environment
	 * names, or every region of ask it can reach).  Blocks (seconds);
	 * CLI only, never the daemon.  *out malloc'd (caller frees), feed
	 * names the feed ("EC2 DescribeSpotPriceHistory").  0; -SR_ENOTFOUND
	 * with *e naming the variable or file when there are no
	 * credentials (found without a network call where it can be: the
	 * catalog answers then); other < 0 an error.  NULL: no live feed. */
	int (*live_prices)(const struct cloud_conf *conf,
			   const struct cloud_conf_region *region,
			   const struct cloud_price_ask *ask, size_t nask,
			   struct cloud_price_quote **out, size_t *n,
			   char *feed, size_t feedcap, struct sr_err *e);
	/* spotrun plan / gpus: the offerings of a provider whose pools are
	 * not the catalog's (a cluster), read from the cluster now, with
	 * their queue estimate (cloud_offering.queue_wait_s, queue_basis)
	 * for a job of `nodes` nodes.  Asked only where the configuration
	 * (conf, not NULL) enables the provider.  Blocks (seconds); CLI
	 * only.  *out malloc'd (caller frees).  0 or < 0 with *e set.
	 * NULL: the provider sells the catalog's pools. */
	int (*own_offerings)(const struct cloud_conf *conf, int nodes,
			     struct cloud_offering **out, size_t *n,
			     struct sr_err *e);
};

/* Close p (NULL-safe parts; zeroes it). */
void cloud_provider_close(struct cloud_provider *p);
void cloud_check_clear(struct cloud_check *c);

/* The credential state check() meant by its code: 0 valid,
 * -SR_ENOTFOUND missing, -EACCES -EPERM -EKEYEXPIRED -EKEYREJECTED
 * -SR_EPARSE bad, any other (the network) unverified. */
enum cloud_cred_state cloud_cred_state_of(int rc);
/* "valid", "missing", "bad", "unverified", "none needed"; never NULL. */
const char *cloud_cred_state_str(enum cloud_cred_state s);

#endif
