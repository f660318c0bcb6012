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

/* Terminate; ids EC2 no longer knows are not an error. */
int ec2_terminate_instances(struct ec2 *c, const char *const *ids, size_t n,
			    struct cloud_error *err);

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
 * The user-data script that starts spotrun-agent for node `node_id` with
 * its one-time bootstrap secret (lib/ctl/nodeboot.h: user-data is
 * readable from the node for its whole life, so it never carries a node
 * token) and the control-plane URL, with the same workload isolation as
 * every provider's agent: --private for the node's own directory (its
 * work dir, the node dir, stays visible), cloud-init's copies of the
 * user-data (/var/lib/cloud), each path of private_paths (NULL-ended,
 * may be NULL: the daemon's state dir when the node shares its host) and,
 * on the EC2 emulator, $SPOTRUN_EMU_HIDE (every emulated instance).
 * Values are checked (the secret, URL and paths may hold no quote, space
 * or control character) so nothing can break out of the script, and a
 * plain http:// URL is accepted only for a loopback host (the secret is
 * a bearer credential until used).  Returns 0 with *out malloc'd (caller
 * wipes and frees), or -EINVAL naming the bad field.
 */
int ec2_bootstrap_script(const char *agent_path, const char *api_url,
			 int64_t node_id, const char *bootstrap,
			 const char *const *private_paths, char **out,
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
