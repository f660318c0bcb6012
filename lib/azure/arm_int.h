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
	/* the token cache */
	pthread_mutex_t mu;
	char token[8192];
	int64_t token_end_s;       /* epoch s; 0 none */
};

/* Request options for a call (timeouts and retries of a). */
void arm__http_opts(const struct arm *a, struct sr_http_opts *o);
/* The client_assertion JWT for the certificate credential: malloc'd. */
int arm__cert_assertion(const struct arm *a, const char *aud, char **out,
			struct sr_err *e);

#endif
