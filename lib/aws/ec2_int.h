/*
 * ec2_int.h - internals shared by the files of lib/aws (not an API).
 */
#ifndef SR_AWS_EC2_INT_H
#define SR_AWS_EC2_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "common/awscred.h"
#include "ec2.h"

/* where the user-data script finds the agent unless told */
#define EC2_DEFAULT_AGENT "/usr/local/bin/spotrun-agent"

struct ec2 {
	char *region;
	char *endpoint;       /* "https://ec2.us-east-1.amazonaws.com" */
	char *host;           /* Host header: authority of endpoint */
	struct sr_awscred_cache *cred; /* refreshed before they expire */
	char cred_source[320];   /* where they came from at open */
	char *image_id, *subnet_id, *security_group_id, *key_name;
	char *instance_profile, *api_url, *agent_path;
	long timeout_ms;
	int max_retries;
	/* the lease check of a fenced call (ec2_set_fence); NULL: none */
	bool (*fence)(void *ud, int64_t epoch);
	void *fence_ud;
};

/* An ordered list of Query API parameters (name, value), values raw. */
struct ec2_params {
	char **kv;    /* 2*n strings, malloc'd */
	size_t n, cap;
	int oom;      /* set when an add failed: the call reports -ENOMEM */
	int64_t epoch; /* a side effect's lease epoch: checked with the
			  client's fence just before sending; 0: not fenced */
	bool once;     /* exactly one attempt, no HTTP-level retry: a caller
			  with a backoff of its own (ec2_watch.c) decides
			  when to ask again */
};

/* Appends; on out-of-memory sets p->oom (checked once by the caller). */
void ec2__param(struct ec2_params *p, const char *name, const char *value);
void ec2__paramf(struct ec2_params *p, const char *value, const char *namefmt,
		 ...) __attribute__((format(printf, 3, 4)));
void ec2__params_free(struct ec2_params *p);

/* The form body "Action=A&Version=2016-11-15&k=v..." (RFC 3986 encoded).
 * Returns malloc'd string or NULL on out-of-memory. */
char *ec2__form(const char *action, const struct ec2_params *p);

/* POST the action, signed.  On 0, *body (malloc'd, NUL-terminated; caller
 * frees) is a 200 answer.  Otherwise err is classified and the class's
 * code returned. */
int ec2__call(struct ec2 *c, const char *action, const struct ec2_params *p,
	      char **body, size_t *len, struct cloud_error *err);

/* ec2_describe_instances with each page's call made once (p.once) when
 * `once`: a throttled listing costs one request, not a round of
 * retries (ec2_watch.c). */
int ec2__describe(struct ec2 *c, const char *cluster, const char *const *ids,
		  bool once, struct cloud_instance **out, size_t *n,
		  struct cloud_error *err);

#endif
