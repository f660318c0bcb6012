/*
 * ec2.h - the AWS EC2 compute driver: the EC2 Query API (Version
 * 2016-11-15) over libcurl, signed with SigV4 (common/sigv4.h), answers
 * parsed with libxml2.
 *
 * Two layers:
 *   1. ec2_* operations, synchronous, one HTTPS request each (plus
 *      pagination): RunInstances, DescribeInstances, TerminateInstances,
 *      DescribeSpotPriceHistory, DescribeInstanceTypeOfferings.
 *   2. ec2_driver_new(): the compute-driver contract of cloud/compute.h
 *      (asynchronous provision, tag sweep, error classes) on top of them.
 *
 * Where it talks to: region and endpoint as the AWS SDKs find them
 * (common/awscred.h: AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL, profile,
 * then https://ec2.REGION.amazonaws.com).  No accidental spending: an
 * endpoint that is not on loopback is refused unless opts.allow_remote is
 * set, which only `spotrund --providers aws` (the user enabling the
 * provider) does.
 *
 * Errors: every operation fills a struct cloud_error (class, EC2 code,
 * message "EC2 RunInstances: InsufficientInstanceCapacity: ...") and
 * returns the class's negative code (compute.h).
 *
 * Threading: a struct ec2 may be used from several threads at once; its
 * only mutable part, the credentials, lives in a struct sr_awscred_cache
 * (common/awscred.h), which renews temporary credentials before they
 * expire.
 */
#ifndef SR_AWS_EC2_H
#define SR_AWS_EC2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloud/compute.h"
#include "common/awscred.h"
#include "common/err.h"
#include "common/money.h"

#define EC2_API_VERSION "2016-11-15"

struct ec2_opts {
	const char *region;        /* NULL: AWS_REGION / config (awscred.h) */
	const char *endpoint;      /* NULL: as the SDKs resolve it */
	bool allow_remote;         /* permit a non-loopback endpoint */
	/* Launch settings (RunInstances). */
	const char *image_id;      /* AMI with spotrun-agent installed */
	const char *subnet_id;     /* NULL: the default VPC of the zone */
	const char *security_group_id; /* NULL: the VPC's default group */
	const char *key_name;      /* NULL: no SSH key */
	const char *instance_profile; /* IAM instance profile name, or NULL */
	/* Node bootstrap (user-data). */
	const char *api_url;       /* control plane URL as nodes reach it */
	const char *agent_path;    /* NULL: /usr/local/bin/spotrun-agent */
	long timeout_ms;           /* per request; 0: 15000 */
	int max_retries;           /* HTTP-level retries; -1: 2 */
};

struct ec2; /* a configured client; opaque */

/*
 * Resolve credentials, region and endpoint and make a client.  *out is
 * the caller's, freed with ec2_close().  On failure *out is NULL and *e
 * names what is missing (the variable, file or option) - never a secret.
 */
int ec2_open(const struct ec2_opts *o, struct ec2 **out, struct sr_err *e);
void ec2_close(struct ec2 *c); /* NULL-safe */

/* Borrowed strings, valid until ec2_close(). */
const char *ec2_region(const struct ec2 *c);
const char *ec2_endpoint(const struct ec2 *c);
const char *ec2_cred_source(const struct ec2 *c); /* as found at open */

/* The client's credentials (state, health: common/awscred.h); borrowed,
 * valid until ec2_close(). */
struct sr_awscred_cache *ec2_creds(struct ec2 *c);

/* Fencing (cloud/compute.h, FENCING): a call carrying a lease epoch
 * (ec2_run.epoch, ec2_terminate_at) is sent only if fence(ud, epoch)
 * says so just before it leaves.  Set once, before the client is
 * shared. */
void ec2_set_fence(struct ec2 *c, bool (*fence)(void *ud, int64_t epoch),
		   void *ud);

/* One RunInstances: exactly one instance. */
struct ec2_run {
	const char *client_token;  /* idempotency key (ClientToken) */
	const char *instance_type;
	const char *zone;          /* Placement.AvailabilityZone, or NULL */
	bool spot;                 /* InstanceMarketOptions spot, one-time */
	sr_micros max_price_per_h; /* spot MaxPrice; <= 0: not sent */
	struct cloud_tags tags;
	const char *user_data;     /* plain text; sent base64-encoded */
	/* NULL: the client's options (ec2_opts) */
	const char *image_id, *subnet_id, *security_group_id;
	int64_t epoch;             /* lease epoch it was decided under
				      (fenced); 0: not fenced */
};

/* Launch; *out describes the new (or, for a repeated client token, the
 * already started) instance.  Clear it with cloud_instance_clear(). */
int ec2_run_instances(struct ec2 *c, const struct ec2_run *r,
		      struct cloud_instance *out, struct cloud_error *err);

/* Instances tagged CLOUD_TAG_CLUSTER=cluster (every state EC2 still
 * lists), following NextToken.  ids (NULL-terminated, may be NULL)
 * narrows to those instance ids.  *out malloc'd: cloud_instances_free. */
int ec2_describe_instances(struct ec2 *c, const char *cluster,
			   const char *const *ids, struct cloud_instance **out,
			   size_t *n, struct cloud_error *err);

/* Terminate; ids EC2 no longer knows are not an error.  _at: fenced by
 * epoch (0: not fenced). */
int ec2_terminate_instances(struct ec2 *c, const char *const *ids, size_t n,
			    struct cloud_error *err);
int ec2_terminate_at(struct ec2 *c, const char *const *ids, size_t n,
		     int64_t epoch, struct cloud_error *err);

struct ec2_spot_price {
	char zone[40];
	char instance_type[48];
	char product[40];          /* "Linux/UNIX" */
	sr_micros price_per_h;
	int64_t at_s;              /* epoch seconds */
};

/* Linux/UNIX spot prices of instance_type since since_s (epoch s), in one
 * zone or all (zone NULL), newest first as EC2 returns them, at most
 * max_items (0: 1000).  *out malloc'd (caller frees). */
int ec2_spot_price_history(struct ec2 *c, const char *instance_type,
			   const char *zone, int64_t since_s, size_t max_items,
			   struct ec2_spot_price **out, size_t *n,
			   struct cloud_error *err);

/* Linux/UNIX spot prices of several instance types at once, in the
 * listed zones (none: all; one: AvailabilityZone; more: an
 * availability-zone filter), since since_s, following NextToken, at most
 * max_items (0: 1000).  One call per 1000 points instead of one per type.
 * once: each page asked once, no retry (a caller that backs off itself).
 * *out malloc'd (caller frees). */
struct ec2_price_query {
	const char *const *types;
	size_t ntypes;
	const char *const *zones;
	size_t nzones;
	int64_t since_s;
	size_t max_items;
	bool once;
};
int ec2_spot_prices(struct ec2 *c, const struct ec2_price_query *q,
		    struct ec2_spot_price **out, size_t *n,
		    struct cloud_error *err);

/* The newest price of each (zone, instance type) in v[0..n), cheapest
 * first (ties by zone): what the market view shows as "spot price now".
 * *out malloc'd (caller frees), *nout its length; -ENOMEM. */
int ec2_spot_price_latest(const struct ec2_spot_price *v, size_t n,
			  struct ec2_spot_price **out, size_t *nout);

/* Availability zones of the region that sell instance_type: *zones is a
 * malloc'd array of n malloc'd strings, sorted (ec2_strv_free). */
int ec2_instance_type_zones(struct ec2 *c, const char *instance_type,
			    char ***zones, size_t *n, struct cloud_error *err);
void ec2_strv_free(char **v, size_t n); /* NULL-safe */

/*
 * The EC2 calls of a region that are not launches, on a thread of their
 * own (ec2_watch.c has the loop and why): the cluster's instances listed
 * every period_ns, spot price history of the given types and zones
 * every price_period_ns, terminations sent as they are queued.  Nothing
 * here blocks on EC2.  The client c is borrowed and must outlive the
 * watch.
 */
struct ec2_watch_opts {
	const char *cluster;         /* CLOUD_TAG_CLUSTER value to list */
	int64_t period_ns;           /* listing; 0: 5 s */
	const char *const *types;    /* spot prices of these types ... */
	size_t ntypes;               /* ... (0: no prices) */
	const char *const *zones;    /* in these zones (0: all) */
	size_t nzones;
	int64_t price_period_ns;     /* 0: 5 min */
	int64_t history_s;           /* kept and first fetched; 0: 24 h */
};

struct ec2_watch_stats {
	uint64_t describe_calls, describe_failed;
	uint64_t price_calls, terminate_calls;
	uint64_t fenced;             /* terminations not sent: lease gone */
	uint64_t terminate_resent;   /* accepted, still listed running a
					period later: sent again */
	size_t queued_terminations;
};

struct ec2_watch;
int ec2_watch_start(struct ec2 *c, const struct ec2_watch_opts *o,
		    struct ec2_watch **out, struct sr_err *e);
void ec2_watch_stop(struct ec2_watch *w); /* joins the thread; NULL-safe */

/* The cluster's instances (cloud_instances_free): the last listing, plus
 * launches made here it does not show yet, with those being terminated
 * shown stopping.  A transient error before the first listing or when
 * it is more than 5 minutes old. */
int ec2_watch_list(struct ec2_watch *w, struct cloud_instance **out,
		   size_t *n, struct cloud_error *err);
/* A launch answered: listed from now on (until EC2 lists it itself). */
void ec2_watch_launched(struct ec2_watch *w, const struct cloud_instance *in);
/* Queue terminations decided under lease `epoch` (0: unfenced); they are
 * sent from the watch's thread, fenced, retried with backoff. */
int ec2_watch_terminate(struct ec2_watch *w, const char *const *ids, size_t n,
			int64_t epoch, struct cloud_error *err);
/* The newest spot price of (zone, type) and when it was fetched;
 * -SR_ENOTFOUND when none is known. */
int ec2_watch_price_now(struct ec2_watch *w, const char *zone,
			const char *type, sr_micros *per_h, int64_t *at_s);
/* usd_h[i]: the price in effect (n - i) * step_s seconds before now_s,
 * -1 where the history does not reach; returns how many are known. */
int ec2_watch_price_history(struct ec2_watch *w, const char *zone,
			    const char *type, int64_t now_s, double step_s,
			    int n, double *usd_h);
void ec2_watch_stats(struct ec2_watch *w, struct ec2_watch_stats *out);

/*
 * The user-data script that starts spotrun-agent for node `node_id` with
 * its one-time bootstrap secret (lib/ctl/nodeboot.h: user-data is
 * readable from the node for its whole life, so it never carries a node
 * token) and the control-plane URL, with the same workload isolation as
 * every provider's agent: --private for the node's own directory (its
 * work dir, the node dir, stays visible), cloud-init's copies of the
 * user-data (/var/lib/cloud), each path of private_paths (NULL-ended,
 * may be NULL: the daemon's state dir when the node shares its host) and,
 * on the EC2 emulator, $SPOTRUN_EMU_HIDE (every emulated instance).
 * On a real instance (run as root by cloud-init) the script makes the
 * system user "spotrun", gives it the node dir and the bootstrap file
 * (0600), enables user namespaces for it and starts the agent as it, so
 * the isolation is full, not root-partial (ec2_userdata.c).
 * Values are checked (the secret, URL and paths may hold no quote, space
 * or control character; the agent path only [A-Za-z0-9._/+-]) and sit in
 * single quotes, so nothing can break out of the script, and a
 * plain http:// URL is accepted only for a loopback host (the secret is
 * a bearer credential until used).  Returns 0 with *out malloc'd (caller
 * wipes and frees), or -EINVAL naming the bad field.
 */
int ec2_bootstrap_script(const char *agent_path, const char *api_url,
			 int64_t node_id, const char *bootstrap,
			 const char *const *private_paths, char **out,
			 struct sr_err *e);
/* The same script for a cloud whose agent watches another notice source
 * (the agent's --notice list, e.g. "scheduled-events" for Azure, whose
 * customData cloud-init runs the same way; NULL: the agent's default). */
int ec2_bootstrap_script_notice(const char *agent_path, const char *api_url,
				int64_t node_id, const char *bootstrap,
				const char *const *private_paths,
				const char *notice, char **out,
				struct sr_err *e);

/*
 * The compute driver (cloud/compute.h) over client c.  The driver takes
 * ownership of c (closed by ops->destroy).  launch->bootstrap is sent as
 * user-data as given; the image, subnet and group come from the launch
 * (cloud_launch.image, .subnet, .security_group) or else c's options,
 * the key and instance profile from c's options.  On failure c is closed too.
 */
int ec2_driver_new(struct ec2 *c, struct cloud_driver *out, struct sr_err *e);

/* ---- below: the parts exposed for tests and the fuzz target -------- */

/* Map an EC2 error code (and the HTTP status when code is "") to a class. */
enum cloud_err_class ec2_err_class(const char *code, long http_status);

/* Parsers of EC2 XML answers (libxml2).  Return 0, or -SR_EPARSE with
 * err->msg naming the element that is missing or wrong. */
int ec2_xml_instances(const char *xml, size_t len, const char *region,
		      struct cloud_instance **out, size_t *n, char *next_token,
		      size_t next_len, struct cloud_error *err);
int ec2_xml_error(const char *xml, size_t len, char *code, size_t code_len,
		  char *msg, size_t msg_len);
int ec2_xml_spot_prices(const char *xml, size_t len,
			struct ec2_spot_price **out, size_t *n,
			char *next_token, size_t next_len,
			struct cloud_error *err);
int ec2_xml_offerings(const char *xml, size_t len, char ***zones, size_t *n,
		      char *next_token, size_t next_len,
		      struct cloud_error *err);

#endif
