/*
 * compute.h - provider contract v2, the compute-driver half: how the
 * control plane starts, observes and stops machines on a real cloud.
 *
 * (The other half, the market view - offerings, prices, availability
 * estimates - is cloud/market.h: a driver may feed it, e.g. EC2's
 * DescribeSpotPriceHistory, but placement never asks a driver "is there
 * capacity now?"; it learns that from launch results, classified below.
 * The control plane drives every cloud through these two headers and
 * cloud/provider.h, lib/ctl/clouds.c; lib/providers/<name>/ and the
 * unit tests' scripted clouds implement them.)
 *
 * LIFECYCLE OF ONE LAUNCH
 *
 *     provision(launch) --> request --poll--> -EAGAIN   (still running)
 *                                       \---> 0         instance known:
 *                                       |               opaque id + blob
 *                                       \---> < 0       cloud_error.cls
 *
 *   provision() returns at once; the cloud call runs on the driver's own
 *   worker thread.  When it finishes, launch->done(launch->done_ud) is
 *   called from that thread (may be NULL), so the reconciler can be woken
 *   instead of polling on a timer.  poll() never blocks.  A driver
 *   whose launch is done before provision() returns (the local cloud
 *   forks a process) need not call done: the caller polls right after
 *   provision().
 *
 * IDEMPOTENCY
 *   launch->idem_key is sent as the cloud's idempotency token (EC2
 *   ClientToken).  The caller derives it from durable state (cluster,
 *   node id, attempt: cloud_idem_key()) and writes it to its database
 *   BEFORE calling provision().  After a crash the same key is sent again
 *   and the cloud answers with the instance it already started, never a
 *   second one.  Keys are at most CLOUD_IDEM_MAX-1 printable ASCII bytes.
 *
 * LAUNCH GROUPS
 *   The nodes the control plane places in one pass (a gang's ranks) are
 *   one launch group: each of their launches carries the group's key
 *   (the idempotency key of its index-0 launch), its size and the
 *   launch's index.  A driver that can start a group as one allocation
 *   (a batch scheduler: one `sbatch -N size`) holds each launch (poll
 *   -EAGAIN) until all size have come - one provision() each, in any
 *   order, over one or more passes - then starts the group once, under
 *   the group's key, and answers each launch with its own instance.  A
 *   launch that finds its group already started (after a crash) takes
 *   its instance at once.  Every other driver ignores the group.  A
 *   rank replaced alone is a group of one (size 1).
 *
 * TAGS
 *   Every instance carries the tags of cloud_tags (CLOUD_TAG_* keys):
 *   cluster id, job id, node id, attempt.  list(cluster) returns every
 *   instance with this cluster's tag in every state the cloud still
 *   reports, so a sweep on start (and periodically) finds instances the
 *   database does not know (a crash between launch and commit, a bug)
 *   and terminates them.
 *
 * ERRORS
 *   Every operation returns 0 or a negative code, and fills a struct
 *   cloud_error whose class tells the caller what to do:
 *     CLOUD_ECAPACITY  no capacity in this pool now (or spot price above
 *                      our maximum): mark the pool, try the next one.
 *     CLOUD_EQUOTA     an account limit: stop launching in this region
 *                      until an instance goes away; tell the user.
 *     CLOUD_EAUTH      credentials missing, wrong or not allowed: a
 *                      job-level error with the message, no retry.
 *     CLOUD_ETHROTTLE  the API rate limit: back off with jitter, retry.
 *     CLOUD_ETRANSIENT network or server error: retry (same idem_key).
 *     CLOUD_EINVALID   the request was rejected as malformed (bad image,
 *                      subnet, parameter): a job-level error, no retry.
 *     CLOUD_ECREDS     our credentials expired and could not be renewed
 *                      yet (ExpiredToken, a failing refresh): wait and
 *                      retry; the daemon alerts.  Never a job's fault.
 *     CLOUD_EFENCED    not sent: the daemon that decided it no longer
 *                      holds the lease it decided it under (FENCING).
 *     CLOUD_ECONFLICT  the idempotency key was used before with other
 *                      parameters (EC2 IdempotentParameterMismatch): this
 *                      launch cannot go on under its key, but the job can
 *                      (the node is replaced under a new key; the tag
 *                      sweep removes whatever the first attempt started).
 *   The cloud's own code (e.g. "InsufficientInstanceCapacity") and its
 *   message are kept in the error for the event log; they never contain
 *   credentials.
 *
 * THREADING
 *   A driver is thread-safe: any operation may be called from any thread
 *   concurrently (the reconciler and HTTP threads).  provision() and poll()
 *   never block on the network; terminate() and list() do (bounded by the
 *   driver's request timeout, seconds) and belong on the reconciler or a
 *   worker thread, never on an HTTP thread.  req_free() waits for the
 *   request's worker.  destroy() must be called once, after every other
 *   call returned and every request was freed.
 *
 * FENCING
 *   Only the leader acts on clouds, and only while it holds its lease.
 *   A side effect (a launch, a terminate, the leak sweep's terminates)
 *   is decided under a lease epoch; the driver checks that epoch with
 *   its host (cloud/provider.h, cloud_host.fence_ok) just before it
 *   sends the request, and sends nothing once the lease is gone
 *   (CLOUD_EFENCED): a leader that was paused or cut off and comes back
 *   after a failover cannot terminate what the new leader launched.
 *
 * SECRETS
 *   A driver never logs or returns credentials.  The bootstrap text
 *   carries the node token: drivers pass it only through the cloud's
 *   bootstrap channel (EC2 user-data), never into logs, errors or blobs.
 */
#ifndef SR_CLOUD_COMPUTE_H
#define SR_CLOUD_COMPUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"

#define CLOUD_IDEM_MAX 65 /* EC2 ClientToken: at most 64 ASCII bytes */

/* Tag keys every instance carries. */
#define CLOUD_TAG_CLUSTER "spotrun:cluster"
#define CLOUD_TAG_JOB "spotrun:job"
#define CLOUD_TAG_NODE "spotrun:node"
#define CLOUD_TAG_ATTEMPT "spotrun:attempt"

enum cloud_err_class {
	CLOUD_EOK = 0,
	CLOUD_ECAPACITY,
	CLOUD_EQUOTA,
	CLOUD_EAUTH,
	CLOUD_ETHROTTLE,
	CLOUD_ETRANSIENT,
	CLOUD_EINVALID,
	CLOUD_ECREDS,
	CLOUD_ECONFLICT,
	CLOUD_EFENCED,
};

struct cloud_error {
	enum cloud_err_class cls;
	char code[64];             /* the cloud's code, "" if none */
	char msg[SR_ERR_MSG_MAX];  /* human message: operation, code, text */
};

struct cloud_tags {
	const char *cluster;  /* the control plane's cluster id */
	int64_t job_id;
	int64_t node_id;
	int attempt;          /* 1, 2, ... for this node row */
};

/* The launch group a launch belongs to (LAUNCH GROUPS); size <= 1:
 * alone, key NULL. */
struct cloud_group {
	const char *key;           /* the group's idempotency key */
	int size, index;           /* index 0..size-1 (the rank order) */
};

/* What to start.  Strings are borrowed for the duration of provision()
 * (the driver copies what it keeps). */
struct cloud_launch {
	const char *idem_key;      /* required, see IDEMPOTENCY */
	const char *zone;          /* e.g. "us-east-1b"; NULL = any */
	const char *instance_type; /* e.g. "p4d.24xlarge" */
	bool spot;
	sr_micros max_price_per_h; /* spot only; <= 0: the on-demand price */
	int pool;                  /* the market view's pool (market.h):
				      a driver that is its own market (the
				      local cloud) uses it; others ignore it */
	struct cloud_tags tags;
	struct cloud_group group;  /* LAUNCH GROUPS */
	const char *bootstrap;     /* the node's first-boot text: the
				      driver's bootstrap channel (EC2: a
				      user-data script; local: a JSON
				      startup document) */
	/* Where and from what it boots; NULL: the driver's default (its
	 * configuration).  image: the task's resources.image_id wins over
	 * the configured one (docs/providers.md "Configuration"). */
	const char *image;         /* EC2: an AMI id */
	const char *subnet;
	const char *security_group;
	int64_t epoch;             /* the lease epoch it is decided under
				      (FENCING); 0: not fenced */
	void (*done)(void *ud);    /* called once from a driver thread */
	void *done_ud;
};

enum cloud_inst_state {
	CLOUD_INST_PENDING,  /* accepted, booting */
	CLOUD_INST_RUNNING,
	CLOUD_INST_STOPPING, /* shutting down / stopping / stopped */
	CLOUD_INST_GONE,     /* terminated */
};

struct cloud_instance {
	char id[64];               /* opaque instance id ("i-0abc...") */
	enum cloud_inst_state state;
	char zone[40];
	char instance_type[48];
	bool spot;
	char cluster[64];          /* tags read back; "" / 0 when absent */
	int64_t job_id, node_id;
	int attempt;
	char reason[128];          /* cloud's state reason code, "" none */
	int64_t launched_s;        /* epoch seconds, 0 unknown */
	int64_t notice_ns;         /* the cloud announced through its API
				    * that it will interrupt the instance at
				    * this wall-clock time; 0 none.  A cloud
				    * that tells only the instance (EC2:
				    * IMDS spot/instance-action, which the
				    * agent reports) leaves 0. */
	char *blob;                /* driver JSON to store with the node,
				    * malloc'd; freed by cloud_instance_clear */
};

struct cloud_req; /* one launch in flight; opaque */

struct cloud_driver_ops {
	const char *name; /* "aws", "local", ... */
	/* Start a launch.  On 0, *req is the caller's to poll and to free
	 * with req_free (also when the launch failed).  A non-zero return
	 * means the launch could not even start (bad arguments, -ENOMEM);
	 * then *req is NULL and done is never called. */
	int (*provision)(void *st, const struct cloud_launch *l,
			 struct cloud_req **req, struct cloud_error *err);
	/* 0: *out filled (caller clears it with cloud_instance_clear);
	 * -EAGAIN: still running; other < 0: failed, err says why.  May be
	 * called again after it returned 0 or an error (same answer). */
	int (*poll)(void *st, struct cloud_req *req, struct cloud_instance *out,
		    struct cloud_error *err);
	/* Waits for the request's worker if it is still running. NULL-safe. */
	void (*req_free)(void *st, struct cloud_req *req);
	/* Terminate instances by id; ids already gone are not an error. */
	int (*terminate)(void *st, const char *const *ids, size_t n,
			 struct cloud_error *err);
	/* Every instance tagged with `cluster`: *out malloc'd array (free
	 * with cloud_instances_free), *n its length. */
	int (*list)(void *st, const char *cluster, struct cloud_instance **out,
		    size_t *n, struct cloud_error *err);
	void (*destroy)(void *st);
};

struct cloud_driver {
	const struct cloud_driver_ops *ops;
	void *st;
};

/* Words for a class ("capacity", "quota", ...).  Never NULL. */
const char *cloud_err_class_str(enum cloud_err_class c);

/* Whether the caller should retry the same request later (throttle,
 * transient, credentials) as opposed to moving on (capacity) or failing the job. */
bool cloud_err_retryable(enum cloud_err_class c);

/* Fill *err (NULL-safe) and return the negative code of the class:
 * capacity -ENOSPC, quota -EDQUOT, auth -EACCES, throttle -EBUSY,
 * transient -SR_EHTTP, invalid -EINVAL, credentials -EKEYEXPIRED,
 * conflict -EEXIST, fenced -ESTALE.  code may be NULL. */
int cloud_err_set(struct cloud_error *err, enum cloud_err_class cls,
		  const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "sr-<cluster>-<node>-<attempt>" cut to fit CLOUD_IDEM_MAX, into out. */
void cloud_idem_key(const struct cloud_tags *t, char out[CLOUD_IDEM_MAX]);

/* Frees the blob and zeroes *inst.  NULL-safe. */
void cloud_instance_clear(struct cloud_instance *inst);
void cloud_instances_free(struct cloud_instance *v, size_t n); /* NULL-safe */

#endif
