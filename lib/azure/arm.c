/*
 * arm.c - the ARM client (arm.h): options and credentials, signed
 * requests, long-running operations, error classes, and the compute
 * driver over them.
 *
 * A create, step by step (each request retried by common/http.c):
 *
 *   PUT vm --201/200 + Azure-AsyncOperation--> GET operation every
 *     Retry-After (2 s) --InProgress--> again, until create_timeout
 *                       --Succeeded---> GET vm: the instance
 *                       --Failed------> its error's class; DELETE vm (the
 *                         Failed VM and, by deleteOption, its NIC, disk,
 *                         IP), not waited for
 *   PUT vm --4xx/5xx--> the error's class (nothing was made, or the
 *     VM exists in a state ARM refuses to update: the sweep sees it)
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "arm_int.h"
#include "azure/azpage.h"
#include "cloud/asynclaunch.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/url.h"

#define POLL_DEFAULT_MS 2000
#define POLL_MAX_MS 60000

void arm__http_opts(const struct arm *a, struct sr_http_opts *o)
{
	sr_http_opts_default(o);
	o->timeout_ms = a->timeout_ms;
	o->max_retries = a->max_retries;
	o->retry_after_max_ms = 60000;
}

static char *dup_or(const char *s, const char *dflt)
{
	const char *v = s && *s ? s : dflt;

	return v ? strdup(v) : NULL;
}

static void trim_slash(char *s)
{
	size_t n = s ? strlen(s) : 0;

	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
}

void arm_close(struct arm *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->mu);
	pthread_mutex_destroy(&a->sweep_mu);
	explicit_bzero(a->token, sizeof a->token);
	if (a->secret) {
		sr_log_secret_forget(a->secret);
		explicit_bzero(a->secret, strlen(a->secret));
	}
	free(a->endpoint); free(a->login); free(a->imds); free(a->sub);
	free(a->rg); free(a->loc); free(a->image); free(a->subnet);
	free(a->admin); free(a->ssh_key); free(a->tenant);
	free(a->client_id); free(a->secret); free(a->cert_path);
	free(a);
}

static int endpoint_ok(const struct arm *a, const char *what, const char *url,
		       bool allow_remote, struct sr_err *e)
{
	struct sr_url u;

	(void)a;
	if (sr_url_parse_http(url, what, &u, e) < 0)
		return -EINVAL;
	sr_url_free(&u);
	if (!allow_remote && !sr_url_is_loopback(url))
		return sr_err_set(e, -EINVAL, "%s %s: not on loopback (the "
				  "provider is not enabled)", what, url);
	if (!sr_url_tls_or_loopback(url))
		return sr_err_set(e, -EINVAL, "%s %s: https:// expected (tokens "
				  "travel on it)", what, url);
	return 0;
}

int arm_open(const struct arm_opts *o, struct arm **out, struct sr_err *e)
{
	struct arm *a = calloc(1, sizeof *a);
	const char *tenant = getenv("AZURE_TENANT_ID");
	const char *cid = getenv("AZURE_CLIENT_ID");
	const char *secret = getenv("AZURE_CLIENT_SECRET");
	const char *cert = getenv("AZURE_CLIENT_CERTIFICATE_PATH");
	int rc = 0;

	*out = NULL;
	if (!a)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&a->mu, NULL);
	pthread_mutex_init(&a->sweep_mu, NULL);
	a->sweep_every_ms = o->sweep_every_ms < 0 ? 0 : o->sweep_every_ms > 0 ?
			    o->sweep_every_ms : 60000;
	a->endpoint = dup_or(o->endpoint, ARM_DEFAULT_ENDPOINT);
	a->login = dup_or(o->login, getenv("AZURE_AUTHORITY_HOST") ?
			  getenv("AZURE_AUTHORITY_HOST") : ARM_DEFAULT_LOGIN);
	a->imds = dup_or(o->imds, "http://169.254.169.254");
	a->sub = dup_or(o->subscription, getenv("AZURE_SUBSCRIPTION_ID"));
	a->rg = dup_or(o->resource_group, NULL);
	a->loc = dup_or(o->location, NULL);
	a->image = dup_or(o->image, NULL);
	a->subnet = dup_or(o->subnet, NULL);
	a->admin = dup_or(o->admin_user, "spotrun");
	a->ssh_key = dup_or(o->ssh_key, NULL);
	a->public_ip = o->public_ip;
	a->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
	a->max_retries = o->max_retries > 0 ? o->max_retries : 4;
	a->create_timeout_ms = o->create_timeout_ms > 0 ? o->create_timeout_ms
							: 15 * 60000;
	if (!a->endpoint || !a->login || !a->imds || !a->admin) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto fail;
	}
	trim_slash(a->endpoint);
	trim_slash(a->login);
	trim_slash(a->imds);
	if (!a->sub) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "azure: no subscription: set "
				"AZURE_SUBSCRIPTION_ID or providers.azure."
				"subscription");
		goto fail;
	}
	if (!a->rg || !a->loc) {
		rc = sr_err_set(e, -EINVAL, "azure: providers.azure.%s is "
				"required", !a->rg ? "resource_group" : "regions");
		goto fail;
	}
	rc = endpoint_ok(a, "azure endpoint", a->endpoint, o->allow_remote, e);
	if (!rc)
		rc = endpoint_ok(a, "AZURE_AUTHORITY_HOST", a->login,
				 o->allow_remote, e);
	if (rc)
		goto fail;
	if (cid && !(a->client_id = strdup(cid))) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto fail;
	}
	if (tenant && cid && (secret || cert)) {
		a->tenant = strdup(tenant);
		a->kind = secret ? ARM_CRED_SECRET : ARM_CRED_CERT;
		a->secret = secret ? strdup(secret) : NULL;
		a->cert_path = !secret ? strdup(cert) : NULL;
		if (a->secret)
			sr_log_secret(a->secret);
		snprintf(a->source, sizeof a->source, "%s (AZURE_TENANT_ID=%s, "
			 "AZURE_CLIENT_ID=%s%s%s)", secret ? "client secret "
			 "(AZURE_CLIENT_SECRET)" : "client certificate", tenant,
			 cid, secret ? "" : ", AZURE_CLIENT_CERTIFICATE_PATH=",
			 secret ? "" : cert);
	} else if ((tenant || secret || cert) && !(tenant && cid)) {
		rc = sr_err_set(e, -EINVAL, "azure credentials: %s is not set "
				"(client credentials need AZURE_TENANT_ID, "
				"AZURE_CLIENT_ID and AZURE_CLIENT_SECRET or "
				"AZURE_CLIENT_CERTIFICATE_PATH)",
				!tenant ? "AZURE_TENANT_ID" : "AZURE_CLIENT_ID");
		goto fail;
	} else {
		a->kind = ARM_CRED_MI;
		snprintf(a->source, sizeof a->source, "managed identity (IMDS %s%s%s)",
			 a->imds, cid ? ", AZURE_CLIENT_ID=" : "", cid ? cid : "");
	}
	*out = a;
	return 0;
fail:
	arm_close(a);
	return rc;
}

void arm_set_lease(struct arm *a, int64_t (*epoch)(void *ud),
		   bool (*fence)(void *ud, int64_t epoch), void *ud)
{
	a->epoch = epoch;
	a->fence = fence;
	a->fence_ud = ud;
}

const char *arm_cred_source(const struct arm *a)
{
	return a->source;
}

bool arm_cred_is_mi(const struct arm *a)
{
	return a->kind == ARM_CRED_MI;
}

const char *arm_endpoint(const struct arm *a)
{
	return a->endpoint;
}

const char *arm_location(const struct arm *a)
{
	return a->loc;
}

/* ---- errors ---------------------------------------------------------- */

enum cloud_err_class arm_classify(long status, const char *code)
{
	static const char *const capacity[] = {
		"SkuNotAvailable", "AllocationFailed", "ZonalAllocationFailed",
		"OverconstrainedAllocationRequest",
		"OverconstrainedZonalAllocationRequest", NULL
	};
	static const char *const auth[] = {
		"AuthorizationFailed", "InvalidAuthenticationToken",
		"InvalidAuthenticationTokenTenant", "AuthenticationFailed",
		"LinkedAuthorizationFailed", NULL
	};
	const char *c = code ? code : "";

	for (size_t i = 0; capacity[i]; i++)
		if (!strcmp(c, capacity[i]))
			return CLOUD_ECAPACITY;
	if (!strcmp(c, "OperationNotAllowed") || !strcmp(c, "QuotaExceeded"))
		return CLOUD_EQUOTA;
	if (status == 429 || !strcmp(c, "TooManyRequests"))
		return CLOUD_ETHROTTLE;
	if (!strcmp(c, "ExpiredAuthenticationToken"))
		return CLOUD_ECREDS;
	for (size_t i = 0; auth[i]; i++)
		if (!strcmp(c, auth[i]))
			return CLOUD_EAUTH;
	if (status == 401 || status == 403)
		return CLOUD_EAUTH;
	if (status >= 500 || status == 0 || !strcmp(c, "InternalServerError"))
		return CLOUD_ETRANSIENT;
	return CLOUD_EINVALID;
}

int arm_parse_error(long status, const char *body, size_t len,
		    const char *op, struct cloud_error *err)
{
	json_t *doc = body ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *ej = json_object_get(doc, "error");
	const char *code = json_string_value(json_object_get(ej, "code"));
	const char *msg = json_string_value(json_object_get(ej, "message"));
	int rc;

	rc = cloud_err_set(err, arm_classify(status, code), code,
			   "azure %s: HTTP %ld %s%s%.300s", op, status,
			   code ? code : "", msg ? ": " : "", msg ? msg : "");
	json_decref(doc);
	return rc;
}

int arm_parse_operation(const char *body, size_t len, struct cloud_error *err)
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
	const char *st = json_string_value(json_object_get(doc, "status"));
	int rc;

	if (!st)
		rc = -SR_EPARSE;
	else if (!strcmp(st, "Succeeded"))
		rc = 1;
	else if (!strcmp(st, "InProgress") || !strcmp(st, "Accepted") ||
		 !strcmp(st, "Running"))
		rc = 0;
	else {
		json_t *ej = json_object_get(doc, "error");
		const char *code = json_string_value(json_object_get(ej, "code"));
		const char *msg = json_string_value(json_object_get(ej, "message"));

		rc = cloud_err_set(err, code ? arm_classify(200, code) :
				   CLOUD_ETRANSIENT, code, "azure operation %s: "
				   "%s%s%.300s", st, code ? code : "",
				   msg ? ": " : "", msg ? msg : "");
	}
	if (rc == -SR_EPARSE)
		cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "azure operation: "
			      "expected {\"status\": ...}");
	json_decref(doc);
	return rc;
}

/* ---- requests ----------------------------------------------------------- */

static int sign(void *ud, const struct sr_http_req *rq, struct sr_http_hdrs *h,
		struct sr_err *e)
{
	struct arm *a = ud;
	char tok[sizeof a->token];
	int rc;

	(void)rq;
	rc = arm_token(a, tok, sizeof tok, NULL, e);
	if (rc == 0)
		rc = sr_http_hdrs_add(h, "Authorization: Bearer %s", tok);
	explicit_bzero(tok, sizeof tok);
	return rc;
}

int arm__call(struct arm *a, const char *method, const char *url,
		const char *body, const char *op, struct sr_http_resp *r,
		struct cloud_error *err)
{
	static const char *const json_hdrs[] = {
		"Content-Type: application/json", NULL
	};
	struct sr_http_req rq = {
		.method = method, .url = url, .what = op,
		.headers = body ? json_hdrs : NULL, .sign = sign, .sign_ud = a,
		.body = body, .body_len = body ? strlen(body) : 0,
	};
	struct sr_http_opts o;
	struct sr_err e;
	int rc;

	sr_err_clear(&e);
	arm__http_opts(a, &o);
	rc = sr_http_do(&rq, &o, r, &e);
	if (rc == -EACCES)
		return cloud_err_set(err, CLOUD_EAUTH, "AuthenticationFailed",
				     "azure %s: %s", op, e.msg);
	if (rc < 0)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "azure %s: %s",
				     op, sr_err_str(&e, rc));
	return 0;
}

static void vm_url(const struct arm *a, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/subscriptions/%s/resourceGroups/%s/providers/"
		 "Microsoft.Compute/virtualMachines%s%s?api-version="
		 ARM_API_COMPUTE, a->endpoint, a->sub, a->rg, name ? "/" : "",
		 name ? name : "");
}

/* Poll an Azure-AsyncOperation until it ends or deadline (monotonic):
 * 0 Succeeded, < 0 its error. */
static int wait_operation(struct arm *a, const char *url, int64_t deadline,
			  struct cloud_error *err)
{
	for (;;) {
		struct sr_http_resp r = { 0 };
		char ra[32];
		long wait_ms = POLL_DEFAULT_MS;
		int rc = arm__call(a, "GET", url, NULL, "operation", &r, err);

		if (rc == 0 && r.status != 200)
			rc = arm_parse_error(r.status, r.body, r.body_len,
					     "operation", err);
		if (rc == 0)
			rc = arm_parse_operation(r.body, r.body_len, err);
		if (rc == 0 && sr_http_resp_header(&r, "Retry-After", ra,
						   sizeof ra) == 0) {
			long v = sr_http_retry_after_ms(ra, time(NULL));

			if (v >= 0)
				wait_ms = v < POLL_MAX_MS ? v : POLL_MAX_MS;
		}
		sr_http_resp_free(&r);
		if (rc == 1)
			return 0;
		if (rc < 0)
			return rc;
		if (sr_time_mono_ns() + wait_ms * 1000000 > deadline)
			return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "azure "
					     "create: the operation did not end "
					     "within %ld s", a->create_timeout_ms
					     / 1000);
		usleep((useconds_t)wait_ms * 1000);
	}
}

/* The VM's view once created (GET vm). */
static int get_vm(struct arm *a, const char *name, const char *cluster,
		  struct cloud_instance *out, struct cloud_error *err)
{
	struct sr_http_resp r = { 0 };
	struct cloud_instance *v = NULL;
	size_t n = 0, cap = 0;
	char url[2048], *page = NULL;
	struct sr_err e;
	int rc;

	vm_url(a, name, url, sizeof url);
	rc = arm__call(a, "GET", url, NULL, "get vm", &r, err);
	if (rc == 0 && r.status != 200)
		rc = arm_parse_error(r.status, r.body, r.body_len, "get vm", err);
	if (rc == 0 && !(page = malloc(r.body_len + 16)))
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	if (rc == 0 && page) {
		/* one VM as a page of one */
		sprintf(page, "{\"value\":[%s]}", r.body);
		sr_err_clear(&e);
		rc = arm_parse_vm_page(page, strlen(page), cluster, &v, &n, &cap,
				       NULL, &e);
		if (rc == 0 && n != 1)
			rc = -SR_EPARSE;
		if (rc)
			cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "azure get vm "
				      "%s: %s", name, e.msg[0] ? e.msg :
				      "not tagged with this cluster");
	}
	if (rc == 0) {
		*out = v[0];
		n = 0;
	}
	cloud_instances_free(v, n);
	free(page);
	sr_http_resp_free(&r);
	return rc;
}

/* A create whose operation failed (or never ended) leaves the VM, in
 * state Failed, holding its NIC, OS disk and public IP: deleted at once
 * (their deleteOption Delete takes them with it) rather than left to the
 * leak sweep.  Best effort, not waited for; nothing sent when fenced. */
static void discard_failed(struct arm *a, const char *name, int64_t epoch)
{
	struct cloud_error derr = { 0 };
	const char *names[] = { name };

	if (epoch && a->fence && !a->fence(a->fence_ud, epoch))
		return;
	if (arm_vm_delete(a, names, 1, &derr))
		sr_warn("azure", "failed vm not deleted", "vm=%s err=\"%s\" "
			"(the leak sweep will)", name, derr.msg);
}

int arm_vm_create(struct arm *a, const struct cloud_launch *l,
		  struct cloud_instance *out, struct cloud_error *err)
{
	struct sr_http_resp r = { 0 };
	char name[65], url[2048], op[2048];
	struct sr_err e;
	char *body;
	int64_t deadline = sr_time_mono_ns() + a->create_timeout_ms * 1000000;
	int rc;

	memset(out, 0, sizeof *out);
	sr_err_clear(&e);
	body = arm_vm_body(a, l, &e);
	if (!body)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "azure create: %s",
				     e.msg);
	arm_vm_name(l->idem_key, name);
	vm_url(a, name, url, sizeof url);
	if (l->epoch && a->fence && !a->fence(a->fence_ud, l->epoch))
		rc = cloud_err_set(err, CLOUD_EFENCED, NULL, "azure create %s: "
				   "not sent, the lease of epoch %lld is gone",
				   name, (long long)l->epoch);
	else
		rc = arm__call(a, "PUT", url, body, "create vm", &r, err);
	explicit_bzero(body, strlen(body)); /* customData: the secret */
	free(body);
	if (rc)
		goto out;
	if (r.status != 200 && r.status != 201) {
		rc = arm_parse_error(r.status, r.body, r.body_len, "create vm", err);
		goto out;
	}
	if (sr_http_resp_header(&r, "Azure-AsyncOperation", op, sizeof op) == 0) {
		rc = wait_operation(a, op, deadline, err);
		if (rc) {
			discard_failed(a, name, l->epoch);
			goto out;
		}
	}
	rc = get_vm(a, name, l->tags.cluster, out, err);
out:
	sr_http_resp_free(&r);
	return rc;
}

int arm_vm_delete(struct arm *a, const char *const *names, size_t n,
		  struct cloud_error *err)
{
	int first = 0;

	for (size_t i = 0; i < n; i++) {
		struct sr_http_resp r = { 0 };
		char url[2048];
		int rc;

		vm_url(a, names[i], url, sizeof url);
		rc = arm__call(a, "DELETE", url, NULL, "delete vm", &r, err);
		if (rc == 0 && r.status != 200 && r.status != 202 &&
		    r.status != 204 && r.status != 404)
			rc = arm_parse_error(r.status, r.body, r.body_len,
					     "delete vm", err);
		sr_http_resp_free(&r);
		if (rc && !first)
			first = rc;
	}
	return first;
}

int arm__list_pages(struct arm *a, const char *first, const char *op,
		    int (*page)(void *ud, const char *body, size_t len,
				char **next, struct sr_err *e),
		    void *ud, struct cloud_error *err)
{
	char *next = NULL, url[4096];
	int rc = 0;

	snprintf(url, sizeof url, "%s", first);
	for (int n = 0; n < 1000; n++) {
		struct sr_http_resp r = { 0 };
		struct sr_err e;

		sr_err_clear(&e);
		rc = arm__call(a, "GET", url, NULL, op, &r, err);
		if (rc == 0 && r.status != 200)
			rc = arm_parse_error(r.status, r.body, r.body_len, op, err);
		if (rc == 0) {
			rc = page(ud, r.body, r.body_len, &next, &e);
			if (rc)
				cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "azure "
					      "%s: %s", op, e.msg);
		}
		sr_http_resp_free(&r);
		if (rc || !next)
			break;
		/* the next page only on the same ARM endpoint: the token
		 * goes with it */
		rc = azpage_follow(url, sizeof url, &next, a->endpoint);
		if (rc) {
			cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "azure %s: "
				      "nextLink off %s", op, a->endpoint);
			break;
		}
	}
	free(next);
	return rc;
}

struct vm_pages {
	const char *cluster;
	struct cloud_instance *v;
	size_t n, cap;
};

static int vm_page(void *ud, const char *body, size_t len, char **next,
		   struct sr_err *e)
{
	struct vm_pages *p = ud;

	return arm_parse_vm_page(body, len, p->cluster, &p->v, &p->n, &p->cap,
				 next, e);
}

int arm_vm_list(struct arm *a, const char *cluster, struct cloud_instance **out,
		size_t *n, struct cloud_error *err)
{
	struct vm_pages p = { .cluster = cluster };
	char url[2048];
	int rc;

	*out = NULL;
	*n = 0;
	vm_url(a, NULL, url, sizeof url);
	rc = arm__list_pages(a, url, "list vms", vm_page, &p, err);
	if (rc) {
		cloud_instances_free(p.v, p.n);
		return rc;
	}
	*out = p.v;
	*n = p.n;
	return 0;
}

/* ---- the compute driver ------------------------------------------------- */

static int launch_fn(void *ud, const struct cloud_launch *l,
		     struct cloud_instance *out, struct cloud_error *err)
{
	return arm_vm_create(ud, l, out, err);
}

static int drv_provision(void *st, const struct cloud_launch *l,
			 struct cloud_req **req, struct cloud_error *err)
{
	struct arm *a = st;
	struct cloud_launch x = *l;

	/* decided under this epoch: fenced just before the PUT leaves */
	if (!x.epoch && a->epoch)
		x.epoch = a->epoch(a->fence_ud);
	return cloud_async_start("azure", launch_fn, st, &x, req, err);
}

static int drv_terminate(void *st, const char *const *ids, size_t n,
			 struct cloud_error *err)
{
	struct arm *a = st;
	int64_t epoch = a->epoch ? a->epoch(a->fence_ud) : 0;

	if (a->fence && !a->fence(a->fence_ud, epoch))
		return cloud_err_set(err, CLOUD_EFENCED, NULL, "azure delete: not "
				     "sent, the lease of epoch %lld is gone",
				     (long long)epoch);
	return arm_vm_delete(st, ids, n, err);
}

/* The VMs, and the sweep of NICs, disks and IPs no VM holds (arm.h "THE
 * LEAK SWEEP": their list is read before the VMs'). */
static int drv_list(void *st, const char *cluster, struct cloud_instance **out,
		    size_t *n, struct cloud_error *err)
{
	struct arm *a = st;
	struct arm_sweep *sw = arm__sweep_begin(a, cluster);
	int rc = arm_vm_list(a, cluster, out, n, err);

	arm__sweep_end(a, sw, rc == 0, *out, *n);
	return rc;
}

static void drv_destroy(void *st)
{
	arm_close(st);
}

static const struct cloud_driver_ops arm_driver_ops = {
	.name = "azure",
	.provision = drv_provision,
	.poll = cloud_async_poll,
	.req_free = cloud_async_free,
	.terminate = drv_terminate,
	.list = drv_list,
	.destroy = drv_destroy,
};

void arm_driver_init(struct arm *a, struct cloud_driver *out)
{
	out->ops = &arm_driver_ops;
	out->st = a;
}
