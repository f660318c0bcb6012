/*
 * arm_int.h - the ARM client's internals shared by its files
 * (arm_auth.c: credentials; arm.c: requests, operations, errors, the
 * driver; arm_vm.c: VM bodies and lists).
 */
#ifndef SR_AZURE_ARM_INT_H
#define SR_AZURE_ARM_INT_H

#include <pthread.h>

#include "azure/arm.h"
#include "common/http.h"

enum arm_cred_kind { ARM_CRED_SECRET, ARM_CRED_CERT, ARM_CRED_MI };

struct arm {
	char *endpoint, *login, *imds, *sub, *rg, *loc;
	char *image, *subnet, *admin, *ssh_key;
	bool public_ip;
	long timeout_ms, create_timeout_ms;
	int max_retries;
	/* credentials (secrets never logged: sr_log_secret) */
	enum arm_cred_kind kind;
	char *tenant, *client_id, *secret, *cert_path;
	char source[256];
	int64_t (*epoch)(void *ud);
	bool (*fence)(void *ud, int64_t epoch);
	void *fence_ud;
	/* the leak sweep of NICs, disks, IPs: one at a time, each
	 * sweep_every_ms at most */
	pthread_mutex_t sweep_mu;
	long sweep_every_ms;
	int64_t sweep_next_ns;     /* monotonic; 0 now */
	/* the token cache */
	pthread_mutex_t mu;
	char token[8192];
	int64_t token_end_s;       /* epoch s; 0 none */
};

/* One ARM call (url absolute).  0 with *r (any status), or < 0 with *err
 * (no answer, or no token: its class). */
int arm__call(struct arm *a, const char *method, const char *url,
	      const char *body, const char *op, struct sr_http_resp *r,
	      struct cloud_error *err);
/* GET a list from url first, page(ud, body, len, &next, e) for each page,
 * following next (nextLink) on a's endpoint.  0 or < 0 with *err. */
int arm__list_pages(struct arm *a, const char *first, const char *op,
		    int (*page)(void *ud, const char *body, size_t len,
				char **next, struct sr_err *e),
		    void *ud, struct cloud_error *err);

/* The driver's list() with the leak sweep (arm_sweep.c): begin reads the
 * resources no VM holds (NULL when no sweep is due, or it failed: then
 * end does nothing); end deletes those whose VM is not in vms (the VM
 * list read after them; nothing unless listed: the list worked), and
 * frees sw. */
struct arm_sweep;
struct arm_sweep *arm__sweep_begin(struct arm *a, const char *cluster);
void arm__sweep_end(struct arm *a, struct arm_sweep *sw, bool listed,
		    const struct cloud_instance *vms, size_t n);

/* Request options for a call (timeouts and retries of a). */
void arm__http_opts(const struct arm *a, struct sr_http_opts *o);
/* The client_assertion JWT for the certificate credential: malloc'd. */
int arm__cert_assertion(const struct arm *a, const char *aud, char **out,
			struct sr_err *e);

#endif
