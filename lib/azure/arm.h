/*
 * arm.h - an Azure Resource Manager client for spot VMs: credentials
 * (Microsoft Entra client credentials, or a managed identity through
 * IMDS), the Compute API's virtualMachines (create, list, delete) with
 * their long-running operations, and the compute driver over them
 * (cloud/compute.h).
 *
 * CREDENTIALS (arm_auth.c), the first that applies:
 *   AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_CLIENT_SECRET
 *     POST {login}/{tenant}/oauth2/v2.0/token, grant_type=
 *     client_credentials, scope=https://management.azure.com/.default
 *   AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_CLIENT_CERTIFICATE_PATH
 *     the same with client_assertion: a JWT (PS256, x5t#S256 header)
 *     signed with the PEM file's key (OpenSSL)
 *   else a managed identity: GET {imds}/metadata/identity/oauth2/token
 *     ?api-version=2018-02-01&resource=https://management.azure.com/
 *     with `Metadata: true` (AZURE_CLIENT_ID, when set, picks a user-
 *     assigned identity)
 *   {login} is AZURE_AUTHORITY_HOST or https://login.microsoftonline.com.
 *   A token is cached until 5 minutes before it expires (expires_in),
 *   then fetched again; one fetch at a time (the cache's mutex).
 *
 * REQUESTS carry `Authorization: Bearer <token>` (added at each attempt,
 * so a retry after a long backoff carries a fresh one) and retry as
 * common/http.h does (429 and 5xx, honouring Retry-After; PUT and
 * DELETE are idempotent in ARM).
 *
 * VMs.  arm_vm_create: PUT .../virtualMachines/{name} (api-version
 * 2024-03-01) with priority Spot, evictionPolicy Delete, billingProfile
 * .maxPrice -1 (pay up to the on-demand price: evicted for capacity,
 * never for price) for spot, the tags, customData (the bootstrap, base64)
 * and the NIC, OS disk and public IP made with the VM, each with
 * deleteOption Delete so they go with it.  The name is the idempotency
 * key: a second PUT of the same VM answers the one ARM has.  The answer
 * (201/200) names an operation in Azure-AsyncOperation: it is polled
 * (honouring Retry-After, default 2 s) until Succeeded, Failed or
 * Canceled, within the create timeout; one that fails (or outlives the
 * timeout) has its VM deleted at once, and with it the NIC, disk and IP
 * (arm_vm_create).
 *
 * ERROR CLASSES (arm_classify):
 *   SkuNotAvailable, AllocationFailed, ZonalAllocationFailed,
 *   OverconstrainedAllocationRequest, OverconstrainedZonalAllocation-
 *   Request                                      -> capacity
 *   OperationNotAllowed (core quota), QuotaExceeded -> quota
 *   HTTP 429, TooManyRequests                     -> throttle (back off)
 *   HTTP 401/403, AuthorizationFailed, InvalidAuthenticationToken*,
 *   AuthenticationFailed                          -> auth
 *   ExpiredAuthenticationToken                    -> credentials
 *   5xx, InternalServerError                      -> transient
 *   other 4xx                                     -> invalid
 *
 * Threading: every call may run on any thread (the token cache has its
 * mutex; the rest is per call).
 */
#ifndef SR_AZURE_ARM_H
#define SR_AZURE_ARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cloud/compute.h"
#include "common/err.h"

#define ARM_DEFAULT_ENDPOINT "https://management.azure.com"
#define ARM_DEFAULT_LOGIN "https://login.microsoftonline.com"
#define ARM_SCOPE "https://management.azure.com/.default"
#define ARM_API_COMPUTE "2024-03-01"

struct arm_opts {
	const char *endpoint;      /* ARM; NULL: ARM_DEFAULT_ENDPOINT */
	const char *login;         /* Entra; NULL: $AZURE_AUTHORITY_HOST or
				      ARM_DEFAULT_LOGIN */
	const char *imds;          /* managed identity; NULL: 169.254.169.254 */
	const char *subscription;  /* NULL: $AZURE_SUBSCRIPTION_ID */
	const char *resource_group;/* required */
	const char *location;      /* the region, "eastus" */
	const char *image;         /* "Publisher:Offer:Sku:Version" or an
				      image resource id */
	const char *subnet;        /* subnet resource id */
	const char *admin_user;    /* NULL: "spotrun" */
	const char *ssh_key;       /* public key text; NULL: none */
	bool public_ip;            /* a public IP with each VM */
	bool allow_remote;         /* endpoints off loopback allowed */
	long timeout_ms;           /* per request; 0: 30000 */
	int max_retries;           /* 0: 4 */
	long create_timeout_ms;    /* the create's operation; 0: 15 min */
	long sweep_every_ms;       /* the NIC/disk/IP sweep at most this
				      often; 0: 60000; < 0: at every list */
};

struct arm;

/* Open a client: the options copied, the credentials found (not yet
 * fetched).  0, -SR_ENOTFOUND when no subscription is named
 * (AZURE_SUBSCRIPTION_ID), or -EINVAL naming the missing setting or
 * variable. */
int arm_open(const struct arm_opts *o, struct arm **out, struct sr_err *e);
void arm_close(struct arm *a); /* NULL-safe */

/* FENCING (cloud/compute.h, cloud/provider.h cloud_host): the driver's
 * provision takes the epoch it is decided under from epoch(ud) (unless
 * the launch names one), and fence(ud, epoch) is asked just before a PUT
 * or a DELETE leaves: nothing is sent when it says no (CLOUD_EFENCED).
 * NULL functions: never fenced. */
void arm_set_lease(struct arm *a, int64_t (*epoch)(void *ud),
		   bool (*fence)(void *ud, int64_t epoch), void *ud);

/* Where the credentials come from, for logs and `spotrun check`
 * ("client secret (AZURE_CLIENT_SECRET, tenant ...)"); never a secret. */
const char *arm_cred_source(const struct arm *a);
const char *arm_endpoint(const struct arm *a);
/* No client credentials in the environment: the managed identity. */
bool arm_cred_is_mi(const struct arm *a);
const char *arm_location(const struct arm *a);

/* A valid token (fetched when the cache has none or it is near its
 * end) into buf; *expires_s (may be NULL) its end, epoch s.  0 or a
 * negative code with *e (-EACCES refused, -SR_EHTTP unreachable). */
int arm_token(struct arm *a, char *buf, size_t n, int64_t *expires_s,
	      struct sr_err *e);

/* Create a VM for launch l (its idem key, sanitised, is the name) and
 * wait for it: 0 with *out (id = the VM's name), or < 0 with *err. */
int arm_vm_create(struct arm *a, const struct cloud_launch *l,
		  struct cloud_instance *out, struct cloud_error *err);
/* Delete VMs by name (its NIC, disk and IP go with it); gone is not an
 * error.  Does not wait for the operations. */
int arm_vm_delete(struct arm *a, const char *const *names, size_t n,
		  struct cloud_error *err);
/* Every VM of the resource group tagged spotrun:cluster=cluster
 * (paginated): *out malloc'd (cloud_instances_free). */
int arm_vm_list(struct arm *a, const char *cluster, struct cloud_instance **out,
		size_t *n, struct cloud_error *err);

/* THE LEAK SWEEP of a VM's other resources.  A VM's NIC, OS disk and
 * public IP carry deleteOption Delete and go with it; one left behind
 * (the VM deleted by a tool that detaches them, an older driver, an ARM
 * failure part-way) bills on.  ARM does not give the resources a VM
 * makes the VM's tags, so the driver's list() (at most sweep_every_ms
 * apart) finds them by tag (spotrun:cluster, when someone tagged them)
 * or by name: <vm>-nic, <vm>-osdisk, <vm>-ip where <vm> is the VM name of
 * this cluster's idempotency key for some node and attempt.  Those no VM
 * holds (a NIC without virtualMachine, a disk without managedBy, an IP
 * without ipConfiguration or on such a NIC) and whose VM is not in the
 * VM list read after them are deleted (fenced as terminate is): NICs,
 * then disks, then IPs.  A delete ARM refuses (still in use) waits for
 * the next sweep. */
/* Is name (without its -nic/-osdisk/-ip) the VM name of cluster's
 * idempotency key for some node and attempt? */
bool arm_vm_name_of(const char *cluster, const char *name);

enum arm_res_kind { ARM_RES_NIC, ARM_RES_DISK, ARM_RES_IP, ARM_RES_KINDS };
/* A resource the sweep may delete. */
struct arm_leak {
	enum arm_res_kind kind;
	char name[96];
	char vm[80];               /* the VM its name says ("" none) */
	char on_nic[96];           /* an IP still on this NIC ("" none) */
};
/* One page of a resource list of kind: cluster's resources (arm.h THE
 * LEAK SWEEP) no VM holds, or IPs on a NIC, appended to v (*n, at most
 * cap: the rest are left to the next sweep), *next the nextLink
 * (malloc'd) or NULL.  0 or -SR_EPARSE (-ENOMEM). */
int arm_parse_res_page(const char *body, size_t len, const char *cluster,
		       enum arm_res_kind kind, struct arm_leak *v, size_t *n,
		       size_t cap, char **next, struct sr_err *e);

/* The VM's name for idempotency key key: [a-z0-9-], at most 64. */
void arm_vm_name(const char *key, char out[65]);

/* The PUT body of l's VM for client a's settings (exposed for the
 * conformance test): malloc'd JSON text, or NULL with *e. */
char *arm_vm_body(const struct arm *a, const struct cloud_launch *l,
		  struct sr_err *e);

/* Parsers, exposed for tests and the fuzzer. */
/* ARM's {"error":{"code","message"}} into *err's code and msg with the
 * class of (status, code).  Always fills *err; returns its class's code. */
int arm_parse_error(long status, const char *body, size_t len,
		    const char *op, struct cloud_error *err);
enum cloud_err_class arm_classify(long status, const char *code);
/* One page of a VM list: the VMs tagged with cluster appended to *v
 * (*n, *cap), *next the nextLink (malloc'd) or NULL.  0 or -SR_EPARSE. */
int arm_parse_vm_page(const char *body, size_t len, const char *cluster,
		      struct cloud_instance **v, size_t *n, size_t *cap,
		      char **next, struct sr_err *e);
/* An operation's status: 1 Succeeded, 0 InProgress, < 0 Failed/Canceled
 * (*err filled from its error) or -SR_EPARSE. */
int arm_parse_operation(const char *body, size_t len,
			struct cloud_error *err);

/* The compute driver (cloud/compute.h) over a; the driver takes a
 * (closed by ops->destroy). */
void arm_driver_init(struct arm *a, struct cloud_driver *out);

#endif
