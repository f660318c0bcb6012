/*
 * awscred_sts.c - STS AssumeRole and AssumeRoleWithWebIdentity (Query
 * protocol, Version 2011-06-15), as @aws-sdk/client-sts sends them:
 *
 *   POST / HTTP/1.1
 *   Host: sts.us-east-1.amazonaws.com
 *   Content-Type: application/x-www-form-urlencoded; charset=utf-8
 *   X-Amz-Date / [X-Amz-Security-Token] / Authorization (SigV4, "sts")
 *
 *   Action=AssumeRole&Version=2011-06-15&RoleArn=..&RoleSessionName=..
 *     [&ExternalId=..][&DurationSeconds=N]
 *
 * AssumeRoleWithWebIdentity carries WebIdentityToken instead and is not
 * signed (the token is the proof).  The answer:
 *
 *   <AssumeRoleResponse><AssumeRoleResult><Credentials>
 *     <AccessKeyId/><SecretAccessKey/><SessionToken/><Expiration/>
 *   </Credentials>...</AssumeRoleResult></AssumeRoleResponse>
 *
 * errors: <ErrorResponse><Error><Code/><Message/></Error></ErrorResponse>.
 *
 * Endpoint: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, the profile's
 * (awscred.h), else the regional https://sts.REGION.amazonaws.com, or
 * https://sts.amazonaws.com (signed for us-east-1) with no region.  The
 * answer holds secrets, so a plain-http endpoint must be loopback.
 * Both calls are safe to repeat: transport errors, throttling and 5xx are
 * retried with backoff for up to 30 s (sr_http_do, retry_unsafe),
 * AssumeRole signed afresh before every attempt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "awscred_int.h"
#include "log.h"
#include "sigv4.h"
#include "timeutil.h"
#include "url.h"
#include "xml.h"

#define STS_VERSION "2011-06-15"
#define STS_GLOBAL "https://sts.amazonaws.com"

/* Append "&name=value" (value RFC 3986 encoded) to the form. */
static int form_add(FILE *f, const char *name, const char *value)
{
	char *v = sr_sigv4_uri_encode(value, strlen(value), 0);

	if (v == NULL)
		return -1;
	fprintf(f, "&%s=%s", name, v);
	OPENSSL_cleanse(v, strlen(v));
	free(v);
	return 0;
}

/* The form body; malloc'd (the caller wipes it: a web token is in it). */
static char *form(const struct sr_awssts_req *r)
{
	char *buf = NULL, dur[24];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int bad = 0;

	if (f == NULL)
		return NULL;
	fprintf(f, "Action=%s&Version=" STS_VERSION,
		r->web_identity ? "AssumeRoleWithWebIdentity" : "AssumeRole");
	bad |= form_add(f, "RoleArn", r->role_arn);
	bad |= form_add(f, "RoleSessionName", r->session_name);
	if (r->web_identity)
		bad |= form_add(f, "WebIdentityToken", r->web_token);
	else if (r->external_id != NULL)
		bad |= form_add(f, "ExternalId", r->external_id);
	if (r->duration_s > 0) {
		snprintf(dur, sizeof(dur), "%d", r->duration_s);
		bad |= form_add(f, "DurationSeconds", dur);
	}
	bad |= ferror(f);
	if (fclose(f) != 0 || bad) {
		sr_awscred__wipe(buf);
		return NULL;
	}
	return buf;
}

/* Split an endpoint URL into its authority (Host, without any
 * user:password@) and path ("/" when none); host and path are malloc'd. */
static int split_url(const char *url, char **host, char **path)
{
	struct sr_url u;
	int rc = sr_url_parse(url, &u, NULL);

	*host = NULL;
	*path = NULL;
	if (rc < 0)
		return rc;
	*host = sr_url_authority(&u);
	*path = strdup(u.path);
	sr_url_free(&u);
	if (*host == NULL || *path == NULL) {
		free(*host);
		free(*path);
		*host = *path = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int endpoint(const struct sr_awssts_req *r, char **url, struct sr_err *e)
{
	int custom = 0, rc;

	rc = sr_aws_endpoint("STS", "sts",
			     r->region != NULL ? r->region : "us-east-1", url,
			     &custom, e);
	if (rc < 0)
		return rc;
	if (!custom && r->region == NULL) {
		free(*url);
		*url = strdup(STS_GLOBAL);
		if (*url == NULL)
			return sr_err_set(e, -ENOMEM, "out of memory");
	}
	if (!sr_url_tls_or_loopback(*url)) {
		rc = sr_err_set(e, -EINVAL,
				"aws credentials: STS endpoint %s: plain http "
				"would carry credentials in the clear (https or "
				"loopback only)", *url);
		free(*url);
		*url = NULL;
	}
	return rc;
}

/* Read <X>Result/Credentials into *out. */
static int answer(const struct sr_http_resp *resp, const char *action,
		  const char *role, struct sr_awscred *out, struct sr_err *e)
{
	xmlDoc *doc = sr_xml_parse(resp->body, resp->body_len);
	xmlNode *root = doc != NULL ? xmlDocGetRootElement(doc) : NULL;
	char result[64], exp[64];
	char *id = NULL, *sk = NULL, *tok = NULL;
	xmlNode *cr;
	int64_t ns = 0;
	int rc;

	snprintf(result, sizeof(result), "%sResult", action);
	cr = sr_xml_child(sr_xml_child(root, result), "Credentials");
	id = sr_xml_strdup(sr_xml_child(cr, "AccessKeyId"));
	sk = sr_xml_strdup(sr_xml_child(cr, "SecretAccessKey"));
	tok = sr_xml_strdup(sr_xml_child(cr, "SessionToken"));
	if (id == NULL || sk == NULL || tok == NULL ||
	    sr_xml_ctext(cr, "Expiration", exp, sizeof(exp)) < 0 ||
	    sr_time_parse_rfc3339(exp, &ns, NULL) < 0) {
		rc = sr_err_set(e, -SR_EHTTP,
				"aws credentials: STS %s %s: unusable answer "
				"(expected %s/Credentials with AccessKeyId, "
				"SecretAccessKey, SessionToken, Expiration)",
				action, role, result);
		goto out;
	}
	rc = sr_awscred__set(out, id, sk, tok, e);
	if (rc == 0)
		out->expires_s = ns / SR_NS_PER_SEC;
out:
	free(id);
	sr_awscred__wipe(sk);
	sr_awscred__wipe(tok);
	if (doc != NULL)
		xmlFreeDoc(doc);
	return rc;
}

static int refused(const struct sr_http_resp *resp, const char *action,
		   const char *role, struct sr_err *e)
{
	static const char *const denied[] = {
		"AccessDenied", "InvalidIdentityToken", "ExpiredToken",
		"ExpiredTokenException", "InvalidClientTokenId",
		"SignatureDoesNotMatch", "IDPRejectedClaim",
		"RegionDisabledException", "MalformedPolicyDocument",
		"ValidationError", NULL
	};
	char code[96], msg[300];
	int rc = -SR_EHTTP;

	if (sr_xml_error(resp->body, resp->body_len, code, sizeof(code), msg,
			 sizeof(msg)) < 0) {
		snprintf(code, sizeof(code), "HTTP %ld", resp->status);
		msg[0] = '\0';
	}
	for (size_t i = 0; i < strlen(msg); i++)
		if ((unsigned char)msg[i] < 0x20)
			msg[i] = ' ';
	for (int i = 0; denied[i] != NULL; i++)
		if (strcmp(code, denied[i]) == 0)
			rc = -EACCES;
	if (resp->status == 403)
		rc = -EACCES;
	return sr_err_set(e, rc, "aws credentials: STS %s %s: %s%s%s", action,
			  role, code, msg[0] ? ": " : "", msg);
}

/* What an attempt's signer needs. */
struct attempt {
	const struct sr_awssts_req *r;
	const char *host, *path, *body;
};

#define CTYPE "Content-Type: application/x-www-form-urlencoded; charset=utf-8"

/* AssumeRole is signed afresh before every attempt (sr_http_do). */
static int sign_attempt(void *ud, const struct sr_http_req *rq,
			struct sr_http_hdrs *h, struct sr_err *e)
{
	const struct attempt *a = ud;
	const char *const sign_hdrs[] = { CTYPE, NULL };
	struct sr_sigv4_creds cr = sr_awscred_view(a->r->src);
	struct sr_sigv4_req q = {
		.method = "POST", .host = a->host, .path = a->path,
		.headers = sign_hdrs, .body = a->body,
		.body_len = strlen(a->body),
		.region = a->r->region != NULL ? a->r->region : "us-east-1",
		.service = "sts", .when = time(NULL),
	};
	char **sig = NULL;
	int rc;

	(void)rq;
	rc = sr_sigv4_sign(&q, &cr, &sig, e);
	for (size_t i = 0; rc == 0 && sig[i] != NULL; i++)
		rc = sr_http_hdrs_add(h, "%s", sig[i]);
	sr_sigv4_headers_free(sig);
	return rc;
}

int sr_awscred__sts(const struct sr_awssts_req *r, struct sr_awscred *out,
		    struct sr_err *e)
{
	const char *action = r->web_identity ? "AssumeRoleWithWebIdentity"
					     : "AssumeRole";
	const char *const hdrs[] = { CTYPE, NULL };
	char *url = NULL, *host = NULL, *path = NULL, *body = NULL;
	char full[1024], what[64];
	struct sr_http_resp resp = { 0 };
	struct sr_http_opts o;
	struct sr_err he = { 0 };
	struct attempt a = { r, NULL, NULL, NULL };
	struct sr_http_req rq = { .method = "POST", .url = full, .what = what,
				  .headers = hdrs };
	int rc;

	rc = endpoint(r, &url, e);
	if (rc < 0)
		goto out;
	rc = split_url(url, &host, &path);
	if (rc < 0) {
		rc = sr_err_set(e, rc, "aws credentials: STS endpoint '%s': %s",
				url, rc == -ENOMEM ? "out of memory" : "no host");
		goto out;
	}
	body = form(r);
	if (body == NULL) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	a.host = host;
	a.path = path;
	a.body = body;
	if (!r->web_identity) { /* the web token is the proof: unsigned */
		rq.sign = sign_attempt;
		rq.sign_ud = &a;
	}
	rq.body = body;
	rq.body_len = strlen(body);
	snprintf(full, sizeof(full), "%s%s", url, strcmp(path, "/") == 0 ? "/" : "");
	snprintf(what, sizeof(what), "STS %s", action);
	sr_http_opts_default(&o);
	o.timeout_ms = 10000;
	o.retry_unsafe = 1; /* no side effect but new credentials */
	o.max_body = 1 << 20;
	o.deadline_mono_ns = sr_time_mono_ns() + 30 * SR_NS_PER_SEC;
	rc = sr_http_do(&rq, &o, &resp, &he);
	if (rc < 0) {
		rc = sr_err_set(e, -SR_EHTTP, "aws credentials: STS %s %s: %s",
				action, r->role_arn, he.msg);
		goto out;
	}
	if (resp.status != 200) {
		rc = refused(&resp, action, r->role_arn, e);
		goto out;
	}
	rc = answer(&resp, action, r->role_arn, out, e);
out:
	if (resp.body != NULL)
		OPENSSL_cleanse(resp.body, resp.body_len);
	sr_http_resp_free(&resp);
	sr_awscred__wipe(body);
	free(url);
	free(host);
	free(path);
	return rc;
}
