/*
 * lambda.h - a Lambda Cloud client (the public REST API, v1) and the
 * compute driver over it (cloud/compute.h).
 *
 * API (https://cloud.lambda.ai/api/v1, `Authorization: Bearer <key>`,
 * the key from LAMBDA_API_KEY or the configuration's api_key_file):
 *   GET  /instance-types            {"data": {NAME: {"instance_type":
 *        {"name", "price_cents_per_hour", ...},
 *        "regions_with_capacity_available": [{"name": "us-east-1"}]}}}
 *   POST /instance-operations/launch {"region_name", "instance_type_name",
 *        "ssh_key_names": [K], "quantity": 1, "name": N}
 *        -> {"data": {"instance_ids": [ID]}}
 *   GET  /instances                 {"data": [{"id", "name", "ip",
 *        "status": booting|active|unhealthy|terminating|terminated,
 *        "region": {"name"}, "instance_type": {"name"}}]}
 *   POST /instance-operations/terminate {"instance_ids": [ID]}
 *   errors: {"error": {"code": "instance-operations/launch/insufficient-
 *        capacity", "message", "suggestion"}}
 *
 * Lambda sells on-demand only, has no tags and no idempotency token.
 * So a node's instance is NAMED for it: "sr-<cluster>-<node>-<attempt>"
 * (cloud_idem_key).  A launch first lists the instances and answers the
 * one already carrying its name (a relaunch after a crash finds the
 * earlier launch), and list(cluster) keeps the instances whose name
 * starts with "sr-<cluster>-", parsing node and attempt back.
 *
 * It has no user-data either: the driver's bootstrap step is part of the
 * launch.  Once the instance is active, the node's script is piped to
 * `ssh -i KEY -o BatchMode=yes -o StrictHostKeyChecking=accept-new
 * USER@IP sudo -n sh -s` (argv, no shell; the script on stdin, never on
 * a command line), retried while sshd comes up, within the boot
 * timeout.  The key is the private half of the SSH key the user
 * registered with Lambda (ssh_key_name).  An emulator gives `ssh` as
 * another program taking the same arguments.
 *
 * Error classes: insufficient-capacity -> capacity; quota-exceeded ->
 * quota; invalid-api-key, 401/403 -> auth; 429 -> throttle; 5xx ->
 * transient; other 4xx -> invalid.
 *
 * Threading: every call may run on any thread (no shared mutable state
 * but the options).
 */
#ifndef SR_LAMBDA_LAMBDA_H
#define SR_LAMBDA_LAMBDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloud/compute.h"
#include "common/err.h"

#define LAMBDA_DEFAULT_ENDPOINT "https://cloud.lambda.ai/api/v1"

struct lambda_opts {
	const char *endpoint;      /* NULL: LAMBDA_DEFAULT_ENDPOINT */
	const char *api_key;       /* NULL: $LAMBDA_API_KEY */
	const char *region;        /* where launches go ("us-east-1") */
	const char *ssh_key_name;  /* registered with Lambda; required to launch */
	const char *ssh_key_file;  /* its private half (the bootstrap step) */
	const char *ssh_user;      /* NULL: "ubuntu" */
	const char *ssh;           /* the ssh program; NULL: "/usr/bin/ssh" */
	bool allow_remote;
	long timeout_ms;           /* per request; 0: 30000 */
	long boot_timeout_ms;      /* launch -> bootstrapped; 0: 20 min */
	long poll_ms;              /* while booting; 0: 5000 */
};

/* One instance type's offer. */
struct lambda_type {
	char name[48];
	sr_micros price_per_h;
	char **regions;            /* with capacity now (malloc'd) */
	size_t nregions;
};

struct lambda;

/* 0, -SR_ENOTFOUND when no API key is set (naming LAMBDA_API_KEY), or
 * -EINVAL naming a bad setting.  *out the caller's (lambda_close). */
int lambda_open(const struct lambda_opts *o, struct lambda **out,
		struct sr_err *e);
void lambda_close(struct lambda *l); /* NULL-safe */
const char *lambda_endpoint(const struct lambda *l);

int lambda_types(struct lambda *l, struct lambda_type **out, size_t *n,
		 struct cloud_error *err);
void lambda_types_free(struct lambda_type *v, size_t n);

/* Launch (or find) l's instance, wait for it, bootstrap it. */
int lambda_launch(struct lambda *c, const struct cloud_launch *l,
		  struct cloud_instance *out, struct cloud_error *err);
int lambda_terminate(struct lambda *c, const char *const *ids, size_t n,
		     struct cloud_error *err);
/* The cluster's instances (by name), not yet terminated. */
int lambda_list(struct lambda *c, const char *cluster,
		struct cloud_instance **out, size_t *n, struct cloud_error *err);

/* Parsers (tests, the fuzzer). */
int lambda_parse_error(long status, const char *body, size_t len,
		       const char *op, struct cloud_error *err);
/* The instances of a GET /instances body whose name starts with
 * "sr-<cluster>-" (cluster NULL: all), node and attempt from the name. */
int lambda_parse_instances(const char *body, size_t len, const char *cluster,
			   struct cloud_instance **out, size_t *n,
			   struct sr_err *e);
int lambda_parse_types(const char *body, size_t len, struct lambda_type **out,
		       size_t *n, struct sr_err *e);

/* The compute driver over c (takes it; ops->destroy closes it). */
void lambda_driver_init(struct lambda *c, struct cloud_driver *out);

#endif
