/*
 * gce.h - a Compute Engine client (REST v1, JSON through jansson) for the
 * `gcp` provider: the calls a compute driver needs, their answers as
 * cloud_instance / cloud_error (cloud/compute.h).
 *
 *   insert   POST {ep}/projects/{p}/zones/{z}/instances?requestId=UUID
 *            {name, machineType: zones/{z}/machineTypes/{t},
 *             scheduling: SPOT {provisioningModel: SPOT,
 *               instanceTerminationAction: DELETE, onHostMaintenance:
 *               TERMINATE, automaticRestart: false} | STANDARD
 *               {provisioningModel: STANDARD, onHostMaintenance:
 *               TERMINATE (with accelerators, else MIGRATE),
 *               automaticRestart: true},
 *             guestAccelerators: [{acceleratorType: zones/{z}/
 *               acceleratorTypes/{a}, acceleratorCount}],
 *             labels: the CLOUD_TAG_* tags, keys "spotrun-cluster" ...
 *               (GCP label keys allow no ':'; values lower-cased, [a-z0-9_-]),
 *             metadata.items: [{key: startup-script, value: the node's
 *               bootstrap script}],
 *             disks: [{boot, autoDelete, initializeParams.sourceImage}],
 *             networkInterfaces: [{network | subnetwork,
 *               accessConfigs: [ONE_TO_ONE_NAT]}]}
 *            -> a zone Operation.  requestId: a UUID derived from the
 *            launch's idempotency key (gce_request_id), so a repeat after
 *            a crash is the same request to GCE; the instance name is
 *            derived from the tags too (one name per node attempt: a
 *            repeat past requestId's memory answers alreadyExists, taken
 *            as "it is there").
 *   op_wait  POST .../zones/{z}/operations/{op}/wait until status DONE
 *            (each call returns within ~2 min); its error.errors[0].code
 *            classified like an HTTP error.
 *   get      GET  .../zones/{z}/instances/{name}
 *   list     GET  {ep}/projects/{p}/aggregated/instances
 *            ?filter=labels.spotrun-cluster="C"&maxResults=500
 *            &pageToken=...  (every zone, every page)
 *   delete   DELETE .../zones/{z}/instances/{name}?requestId=UUID
 *            (404: already gone, not an error)
 *
 * ERRORS (HTTP {"error":{"code","message","errors":[{"reason"}]}} or an
 * operation's error.errors[].code):
 *   ZONE_RESOURCE_POOL_EXHAUSTED(_WITH_DETAILS), resourcePoolExhausted,
 *     UNSUPPORTED_OPERATION... stockout              -> CLOUD_ECAPACITY
 *   QUOTA_EXCEEDED, quotaExceeded                    -> CLOUD_EQUOTA
 *   rateLimitExceeded, userRateLimitExceeded, 429    -> CLOUD_ETHROTTLE
 *   401, 403 (other reasons)                         -> CLOUD_EAUTH
 *   a token that cannot be had now                   -> CLOUD_ECREDS
 *   other 4xx                                        -> CLOUD_EINVALID
 *   5xx, no answer                                   -> CLOUD_ETRANSIENT
 *
 * Instance states: PROVISIONING, STAGING -> pending; RUNNING -> running;
 * STOPPING, SUSPENDING, SUSPENDED, TERMINATED -> stopping (the sweep
 * deletes it); not listed -> gone.  A spot VM that GCE preempted says
 * so in its lastStopTimestamp/statusMessage; with
 * instanceTerminationAction DELETE it is then deleted.
 *
 * Endpoint: opts.endpoint, else $CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE,
 * else https://compute.googleapis.com/compute/v1; plain http only to
 * loopback (the emulator).  Thread-safe: one client may serve several
 * threads (the token cache is locked).
 */
#ifndef SR_GCP_GCE_H
#define SR_GCP_GCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloud/compute.h"
#include "common/err.h"
#include "gcp/gcpcred.h"

#define GCE_ENDPOINT "https://compute.googleapis.com/compute/v1"
#define GCE_NAME_MAX 64            /* RFC 1035 label, 63 + NUL */
#define GCE_ID_NAME_MAX 36         /* our names: "zone/name" fits an id */
#define GCE_LABEL_CLUSTER "spotrun-cluster"
#define GCE_LABEL_JOB "spotrun-job"
#define GCE_LABEL_NODE "spotrun-node"
#define GCE_LABEL_ATTEMPT "spotrun-attempt"

struct gce_opts {
	const char *project;       /* NULL: the credentials' (gcpcred.h) */
	const char *endpoint;      /* NULL: see above */
	long timeout_ms;           /* per request; 0: 30000 */
	int max_retries;           /* HTTP-level; -1 or 0: 2 */
};

struct gce;

/* Credentials, project and endpoint; no request is sent.  *out the
 * caller's (gce_close).  0 or the error naming the variable, file or
 * option (-SR_ENOTFOUND: no credentials, or no project). */
int gce_open(const struct gce_opts *o, struct gce **out, struct sr_err *e);
void gce_close(struct gce *c); /* NULL-safe */

const char *gce_project(const struct gce *c);   /* borrowed */
const char *gce_endpoint(const struct gce *c);  /* borrowed */
struct gcpcred *gce_creds(struct gce *c);       /* borrowed */

/* Fencing (compute.h): checked just before a side effect is sent. */
void gce_set_fence(struct gce *c, bool (*fence)(void *ud, int64_t epoch),
		   void *ud);

struct gce_insert {
	const char *zone, *machine_type;
	bool spot;
	const char *accelerator;   /* "nvidia-tesla-a100", NULL none */
	int accel_count;
	const char *image;         /* sourceImage URL or path */
	const char *network;       /* NULL: global/networks/default */
	const char *subnetwork;    /* NULL: none (the network's auto) */
	const char *service_account; /* NULL: none attached */
	struct cloud_tags tags;
	const char *startup_script;/* the bootstrap script */
	const char *idem_key;      /* -> requestId and the name */
	int64_t epoch;             /* fenced under it; 0 not fenced */
};

/* Insert, wait for its zone operation, read the instance back into *out
 * (cloud_instance_clear).  Blocks (the driver's worker). */
int gce_insert_wait(struct gce *c, const struct gce_insert *in,
		    struct cloud_instance *out, struct cloud_error *err);

/* The instance name of a launch (RFC 1035: [a-z][-a-z0-9]{0,62}). */
void gce_instance_name(const struct cloud_tags *t, char out[GCE_NAME_MAX]);
/* "8-4-4-4-12" lower-case hex, a version-5-shaped UUID of SHA-256(key). */
void gce_request_id(const char *key, char out[37]);
/* A label value: lower-cased, [a-z0-9_-] kept, others '-', 63 at most. */
void gce_label_value(const char *s, char *out, size_t n);

/* Every instance labelled with cluster, every zone, every page. */
int gce_list(struct gce *c, const char *cluster, struct cloud_instance **out,
	     size_t *n, struct cloud_error *err);

/* Delete zone/name (an instance id from gce_list/insert is "zone/name").
 * Gone already is 0. */
int gce_delete(struct gce *c, const char *id, int64_t epoch,
	       struct cloud_error *err);

/* The zones of region (regions.get): *zones a malloc'd array of n
 * malloc'd strings (free each, then the array).  The check's cheap read. */
int gce_region_zones(struct gce *c, const char *region, char ***zones,
		     size_t *n, struct cloud_error *err);

/* JSON pieces (gce_json.c), exposed for tests and the fuzzer. */
/* The insert body; *out malloc'd JSON text (caller wipes and frees: it
 * holds the startup script). */
int gce_insert_body(const struct gce_insert *in, const char *project,
		    char **out, struct sr_err *e);
/* One Instance resource into *out (id "zone/name"). */
int gce_parse_instance(const char *body, size_t len, struct cloud_instance *out,
		       struct sr_err *e);
/* An error answer (HTTP status, body: an {"error"} document or an
 * Operation with error.errors) into *err; returns its negative code. */
int gce_classify(long status, const char *body, size_t len, const char *what,
		 struct cloud_error *err);

#endif
