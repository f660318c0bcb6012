/*
 * ec2_query.c - one EC2 Query API call: form body, SigV4, HTTP POST,
 * and the error classes of compute.h.
 *
 *   POST / HTTP/1.1
 *   Host: ec2.us-east-1.amazonaws.com
 *   Content-Type: application/x-www-form-urlencoded; charset=utf-8
 *   X-Amz-Date / [X-Amz-Security-Token] / Authorization (SigV4, "ec2")
 *
 *   Action=RunInstances&Version=2016-11-15&ImageId=ami-...&...
 *
 * Lists are flattened with 1-based indices (SecurityGroupId.1,
 * TagSpecification.1.Tag.2.Key, Filter.1.Value.1), as the SDKs send them.
 * HTTP-level retries (transport errors, 5xx - EC2 throttles with 503
 * RequestLimitExceeded - and 429) are sr_http_request's, with backoff and
 * full jitter.  A POST is retried only when it is safe to repeat, and every
 * action this driver sends is: the Describe* calls read, TerminateInstances
 * of an instance already going is a no-op, and RunInstances carries its
 * ClientToken (EC2 answers a repeat with the instance the first one
 * started).  So each call is marked safe (retry_unsafe), and its retries
 * are bounded by a deadline (timeout x attempts) - except a call made
 * once (ec2_params.once: the watch's listing and prices, whose own
 * backoff decides when to ask again; a round of retries there spent the
 * throttled read bucket several requests a listing).  Before every attempt
 * the fence is checked (a side effect's lease epoch) and the request is
 * signed afresh (sr_http_do's sign callback).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "common/log.h"
#include "common/sigv4.h"
#include "common/timeutil.h"
#include "ec2_int.h"

void ec2__param(struct ec2_params *p, const char *name, const char *value)
{
	char *k, *v;

	if (p->oom)
		return;
	if (p->n == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 16;
		char **t = realloc(p->kv, 2 * nc * sizeof(*t));

		if (t == NULL) {
			p->oom = 1;
			return;
		}
		p->kv = t;
		p->cap = nc;
	}
	k = strdup(name);
	v = strdup(value);
	if (k == NULL || v == NULL) {
		free(k);
		free(v);
		p->oom = 1;
		return;
	}
	p->kv[2 * p->n] = k;
	p->kv[2 * p->n + 1] = v;
	p->n++;
}

void ec2__paramf(struct ec2_params *p, const char *value, const char *namefmt,
		 ...)
{
	char name[256];
	va_list ap;

	va_start(ap, namefmt);
	vsnprintf(name, sizeof(name), namefmt, ap);
	va_end(ap);
	ec2__param(p, name, value);
}

void ec2__params_free(struct ec2_params *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < 2 * p->n; i++)
		free(p->kv[i]);
	free(p->kv);
	memset(p, 0, sizeof(*p));
}

/* Append the encoding of s; returns -1 on out-of-memory. */
static int put_enc(FILE *f, const char *s)
{
	char *e = sr_sigv4_uri_encode(s, strlen(s), 0);

	if (e == NULL)
		return -1;
	fputs(e, f);
	free(e);
	return 0;
}

char *ec2__form(const char *action, const struct ec2_params *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int bad = 0;

	if (f == NULL)
		return NULL;
	fputs("Action=", f);
	bad |= put_enc(f, action);
	fputs("&Version=" EC2_API_VERSION, f);
	for (size_t i = 0; i < p->n; i++) {
		fputc('&', f);
		bad |= put_enc(f, p->kv[2 * i]);
		fputc('=', f);
		bad |= put_enc(f, p->kv[2 * i + 1]);
	}
	bad |= ferror(f);
	if (fclose(f) != 0 || bad) {
		free(buf);
		return NULL;
	}
	return buf;
}

enum cloud_err_class ec2_err_class(const char *code, long http_status)
{
	static const struct {
		const char *code;
		enum cloud_err_class cls;
	} map[] = {
		{ "InsufficientInstanceCapacity", CLOUD_ECAPACITY },
		{ "InsufficientHostCapacity", CLOUD_ECAPACITY },
		{ "InsufficientReservedInstanceCapacity", CLOUD_ECAPACITY },
		{ "InsufficientCapacity", CLOUD_ECAPACITY },
		{ "SpotMaxPriceTooLow", CLOUD_ECAPACITY },
		{ "Unsupported", CLOUD_ECAPACITY },
		{ "InsufficientFreeAddressesInSubnet", CLOUD_ECAPACITY },
		{ "MaxSpotInstanceCountExceeded", CLOUD_EQUOTA },
		{ "InstanceLimitExceeded", CLOUD_EQUOTA },
		{ "VcpuLimitExceeded", CLOUD_EQUOTA },
		{ "ResourceLimitExceeded", CLOUD_EQUOTA },
		{ "RequestLimitExceeded", CLOUD_ETHROTTLE },
		{ "Throttling", CLOUD_ETHROTTLE },
		{ "ThrottlingException", CLOUD_ETHROTTLE },
		{ "UnauthorizedOperation", CLOUD_EAUTH },
		{ "AuthFailure", CLOUD_EAUTH },
		{ "InvalidClientTokenId", CLOUD_EAUTH },
		{ "SignatureDoesNotMatch", CLOUD_EAUTH },
		{ "ExpiredToken", CLOUD_ECREDS },
		{ "RequestExpired", CLOUD_EAUTH },
		{ "OptInRequired", CLOUD_EAUTH },
		{ "Blocked", CLOUD_EAUTH },
		{ "PendingVerification", CLOUD_EAUTH },
		{ "InternalError", CLOUD_ETRANSIENT },
		{ "InternalFailure", CLOUD_ETRANSIENT },
		{ "ServiceUnavailable", CLOUD_ETRANSIENT },
		{ "Unavailable", CLOUD_ETRANSIENT },
		{ "IdempotentParameterMismatch", CLOUD_ECONFLICT },
		{ "InvalidParameterValue", CLOUD_EINVALID },
		{ "InvalidParameterCombination", CLOUD_EINVALID },
		{ "MissingParameter", CLOUD_EINVALID },
	};

	if (code != NULL && code[0] != '\0') {
		for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (strcmp(code, map[i].code) == 0)
				return map[i].cls;
		/* InvalidAMIID.NotFound, InvalidSubnetID.Malformed, ... */
		if (strncmp(code, "Invalid", 7) == 0)
			return CLOUD_EINVALID;
	}
	if (http_status == 401 || http_status == 403)
		return CLOUD_EAUTH;
	if (http_status == 429)
		return CLOUD_ETHROTTLE;
	if (http_status == 503 && code != NULL && code[0] != '\0')
		return CLOUD_ETHROTTLE; /* EC2 answers throttling with 503 */
	if (http_status >= 400 && http_status < 500)
		return CLOUD_EINVALID;
	return CLOUD_ETRANSIENT;
}

/* Keep an error message printable and short: EC2 messages can echo a
 * parameter back, never a credential (those are not parameters). */
static void clean(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20)
			*s = ' ';
}

/* What an attempt's signer needs (sr_http_do calls it before each). */
struct attempt {
	struct ec2 *c;
	const char *action, *form;
	int64_t epoch;
};

#define CTYPE "Content-Type: application/x-www-form-urlencoded; charset=utf-8"

/* Before every attempt: the fence (compute.h, FENCING: the last thing
 * before a side effect leaves, retries included), then a fresh SigV4
 * signature - a retry after a long backoff is signed anew. */
static int sign_attempt(void *ud, const struct sr_http_req *rq,
			struct sr_http_hdrs *h, struct sr_err *e)
{
	const struct attempt *a = ud;
	const char *const sign_hdrs[] = { CTYPE, NULL };
	struct sr_sigv4_req r = {
		.method = "POST", .host = a->c->host, .path = "/",
		.headers = sign_hdrs, .body = a->form,
		.body_len = strlen(a->form), .region = a->c->region,
		.service = "ec2", .when = time(NULL),
	};
	char **sig = NULL;
	int rc;

	(void)rq;
	if (a->epoch > 0 && a->c->fence != NULL &&
	    !a->c->fence(a->c->fence_ud, a->epoch)) {
		sr_warn("aws", "fenced: side effect not sent", "action=%s epoch=%lld",
			a->action, (long long)a->epoch);
		return sr_err_set(e, -ESTALE, "not sent: lease epoch %lld is no "
				  "longer held", (long long)a->epoch);
	}
	rc = sr_awscred_cache_sign(a->c->cred, &r, &sig, e);
	for (size_t i = 0; rc == 0 && sig[i] != NULL; i++)
		rc = sr_http_hdrs_add(h, "%s", sig[i]);
	sr_sigv4_headers_free(sig);
	return rc;
}

int ec2__call(struct ec2 *c, const char *action, const struct ec2_params *p,
	      char **body, size_t *len, struct cloud_error *err)
{
	char ua[64];
	const char *const hdrs[] = { CTYPE, ua, NULL };
	char *form = NULL, code[128], msg[384], url[600], what[64];
	struct sr_http_resp resp = { 0 };
	struct sr_http_opts o;
	struct sr_err e = { 0 };
	struct attempt a = { c, action, NULL, p->epoch };
	struct sr_http_req rq = { .method = "POST", .url = url, .what = what,
				  .headers = hdrs, .sign = sign_attempt,
				  .sign_ud = &a };
	int rc;

	*body = NULL;
	*len = 0;
	form = p->oom ? NULL : ec2__form(action, p);
	if (form == NULL) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
				   "EC2 %s: out of memory", action);
		goto out;
	}
	/* a side effect names the lease epoch it was decided under (logs,
	 * the emulator's request log); EC2 ignores it */
	if (p->epoch > 0)
		snprintf(ua, sizeof(ua), "User-Agent: spotrun (lease-epoch %lld)",
			 (long long)p->epoch);
	else
		snprintf(ua, sizeof(ua), "User-Agent: spotrun");
	a.form = form;
	rq.body = form;
	rq.body_len = strlen(form);
	snprintf(url, sizeof(url), "%s/", c->endpoint);
	snprintf(what, sizeof(what), "EC2 %s", action);
	sr_http_opts_default(&o);
	o.timeout_ms = c->timeout_ms;
	o.retry_unsafe = 1;         /* every action sent is idempotent: above */
	o.backoff_base_ms = 250;    /* a throttled account needs a breath */
	o.max_body = 32u << 20;
	/* bounded in time: as many attempts as fit, each cut to what is left */
	o.deadline_mono_ns = sr_time_mono_ns() +
			     (int64_t)c->timeout_ms * (c->max_retries + 1) * 1000000;
	if (c->max_retries == 0 || p->once) {
		o.deadline_mono_ns = 0; /* exactly one attempt */
		o.max_retries = 0;
	}
	rc = sr_http_do(&rq, &o, &resp, &e);
	if (rc < 0) {
		enum cloud_err_class cls = rc == -ESTALE ? CLOUD_EFENCED
				: rc == -EKEYEXPIRED ? CLOUD_ECREDS
				: CLOUD_ETRANSIENT;

		rc = cloud_err_set(err, cls, NULL, "EC2 %s: %s", action,
				   e.msg[0] ? e.msg : sr_strerror(rc));
		goto out;
	}
	if (resp.status == 200) {
		*body = resp.body;
		*len = resp.body_len;
		resp.body = NULL;
		rc = 0;
		goto out;
	}
	if (ec2_xml_error(resp.body, resp.body_len, code, sizeof(code), msg,
			  sizeof(msg)) < 0) {
		code[0] = '\0';
		snprintf(msg, sizeof(msg), "HTTP %ld", resp.status);
	}
	clean(code);
	clean(msg);
	if (strcmp(code, "ExpiredToken") == 0)
		sr_awscred_cache_expire(c->cred); /* renew before the next call */
	rc = cloud_err_set(err, ec2_err_class(code, resp.status), code,
			   "EC2 %s: %s%s%s", action, code,
			   code[0] != '\0' ? ": " : "", msg);
	sr_warn("aws", "EC2 call failed", "action=%s code=%s status=%ld class=%s",
		action, code[0] != '\0' ? code : "-", resp.status,
		cloud_err_class_str(err != NULL ? err->cls
				    : ec2_err_class(code, resp.status)));
out:
	sr_http_resp_free(&resp);
	free(form);
	return rc;
}
