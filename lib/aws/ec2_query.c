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
 * started).  So each call is marked safe (retry_unsafe).  The signature
 * is made once per call: EC2 accepts it for 5 minutes, longer than the
 * retries of one call take.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "common/log.h"
#include "common/sigv4.h"
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

int ec2__call(struct ec2 *c, const char *action, const struct ec2_params *p,
	      char **body, size_t *len, struct cloud_error *err)
{
	static const char ctype[] =
		"Content-Type: application/x-www-form-urlencoded; charset=utf-8";
	const char *const sign_hdrs[] = { ctype, NULL };
	const char **hdrs = NULL;
	char *form = NULL, **sig = NULL, code[128], msg[384];
	struct sr_http_resp resp = { 0 };
	struct sr_http_opts o;
	struct sr_err e = { 0 };
	char url[600];
	size_t nsig = 0;
	int rc;

	*body = NULL;
	*len = 0;
	form = p->oom ? NULL : ec2__form(action, p);
	if (form == NULL) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
				   "EC2 %s: out of memory", action);
		goto out;
	}
	{
		struct sr_sigv4_req r = {
			.method = "POST", .host = c->host, .path = "/",
			.headers = sign_hdrs, .body = form,
			.body_len = strlen(form), .region = c->region,
			.service = "ec2", .when = time(NULL),
		};

		rc = sr_awscred_cache_sign(c->cred, &r, &sig, &e);
	}
	if (rc < 0) {
		rc = cloud_err_set(err, rc == -EKEYEXPIRED ? CLOUD_ECREDS
				   : rc == -ENOMEM ? CLOUD_ETRANSIENT
				   : CLOUD_EAUTH, NULL, "EC2 %s: %s", action, e.msg);
		goto out;
	}
	while (sig[nsig] != NULL)
		nsig++;
	hdrs = calloc(nsig + 2, sizeof(*hdrs));
	if (hdrs == NULL) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
				   "EC2 %s: out of memory", action);
		goto out;
	}
	hdrs[0] = ctype;
	for (size_t i = 0; i < nsig; i++)
		hdrs[i + 1] = sig[i];

	sr_http_opts_default(&o);
	o.timeout_ms = c->timeout_ms;
	o.max_retries = c->max_retries;
	o.retry_unsafe = 1;         /* every action sent is idempotent: above */
	o.backoff_base_ms = 250;    /* a throttled account needs a breath */
	o.max_body = 32u << 20;
	snprintf(url, sizeof(url), "%s/", c->endpoint);
	/* fencing: the last thing before the request leaves (compute.h) */
	if (p->epoch > 0 && c->fence != NULL && !c->fence(c->fence_ud, p->epoch)) {
		rc = cloud_err_set(err, CLOUD_EFENCED, NULL, "EC2 %s: not sent: "
				   "lease epoch %lld is no longer held", action,
				   (long long)p->epoch);
		sr_warn("aws", "fenced: side effect not sent", "action=%s epoch=%lld",
			action, (long long)p->epoch);
		goto out;
	}
	rc = sr_http_request("POST", url, hdrs, form, strlen(form), &o, &resp, &e);
	if (rc < 0) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "EC2 %s: %s",
				   action, e.msg);
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
	sr_sigv4_headers_free(sig);
	free(hdrs);
	free(form);
	return rc;
}
