/*
 * awscred_meta.c - credential documents served over HTTP by the
 * platform: the ECS / EKS container endpoint and the EC2 instance role
 * (IMDSv2).  Both answer the same JSON:
 *
 *   {"AccessKeyId": "ASIA...", "SecretAccessKey": "...",
 *    "Token": "...", "Expiration": "2026-11-30T20:00:00Z"}
 *
 * (IMDS adds "Code": "Success"; credential_process writes SessionToken.)
 *
 * Container endpoint, as the SDKs call it:
 *   AWS_CONTAINER_CREDENTIALS_RELATIVE_URI  -> http://169.254.170.2 + URI
 *   AWS_CONTAINER_CREDENTIALS_FULL_URI      -> the URL, which must be
 *       https, loopback, or ECS/EKS's link-local 169.254.170.2,
 *       169.254.170.23, [fd00:ec2::23] (the answer holds secrets: no other
 *       plain-http host)
 *   Authorization: the contents of AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
 *       (read on every call: EKS Pod Identity rotates it), else
 *       AWS_CONTAINER_AUTHORIZATION_TOKEN; no CR or LF allowed.
 *   2 s timeout, 2 retries (the endpoint is local; it may be starting).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "awscred_int.h"
#include "fsutil.h"
#include "json.h"
#include "log.h"
#include "timeutil.h"
#include "url.h"

#define IMDS_DEFAULT "http://169.254.169.254"
#define IMDS_CREDS "/latest/meta-data/iam/security-credentials/"
#define ECS_HOST "http://169.254.170.2"
#define DOC_MAX (64 << 10)

int sr_awscred__http_get(const char *url, const char *const *hdrs,
			 long timeout_ms, int retries,
			 struct sr_http_resp *resp, struct sr_err *e)
{
	struct sr_http_opts o;

	sr_http_opts_default(&o);
	o.timeout_ms = timeout_ms;
	o.connect_timeout_ms = timeout_ms;
	o.max_retries = retries;
	o.max_body = DOC_MAX;
	return sr_http_request("GET", url, hdrs, NULL, 0, &o, resp, e);
}

int sr_awscred__from_doc(json_t *doc, const char *what, struct sr_awscred *out,
			 struct sr_err *e)
{
	const char *id = NULL, *sk = NULL, *tok = NULL, *exp = NULL;
	int64_t ns = 0;
	int rc;

	if (!json_is_object(doc) ||
	    sr_json_get_str(doc, "AccessKeyId", &id, "", NULL) < 0 ||
	    sr_json_get_str(doc, "SecretAccessKey", &sk, "", NULL) < 0 ||
	    sr_json_get_str_opt(doc, "Token", &tok, "", NULL) < 0 ||
	    (tok == NULL &&
	     sr_json_get_str_opt(doc, "SessionToken", &tok, "", NULL) < 0) ||
	    sr_json_get_str_opt(doc, "Expiration", &exp, "", NULL) < 0)
		/* the message would quote the document: keep it out */
		return sr_err_set(e, -SR_EHTTP,
				  "aws credentials: %s: unusable answer (expected "
				  "AccessKeyId, SecretAccessKey, Token, "
				  "Expiration)", what);
	if (exp != NULL && sr_time_parse_rfc3339(exp, &ns, NULL) < 0)
		return sr_err_set(e, -SR_EHTTP,
				  "aws credentials: %s: Expiration '%s': expected "
				  "an RFC 3339 time", what, exp);
	rc = sr_awscred__set(out, id, sk, tok, e);
	if (rc == 0)
		out->expires_s = ns / SR_NS_PER_SEC;
	return rc;
}

/* Parse an answer's body as a credential document. */
static int from_body(const struct sr_http_resp *r, const char *what,
		     struct sr_awscred *out, struct sr_err *e)
{
	json_t *doc = sr_json_load_buf(r->body, r->body_len, what, NULL);
	int rc;

	if (doc == NULL)
		return sr_err_set(e, -SR_EHTTP,
				  "aws credentials: %s: the answer is not JSON", what);
	rc = sr_awscred__from_doc(doc, what, out, e);
	json_decref(doc);
	return rc;
}

/* ---- container -------------------------------------------------------- */

static bool container_host_ok(const char *url)
{
	static const char *const ok[] = { "169.254.170.2", "169.254.170.23",
					  "[fd00:ec2::23]", NULL };
	struct sr_url u;
	bool yes = false;

	if (sr_url_tls_or_loopback(url))
		return true;
	if (sr_url_parse(url, &u, NULL) < 0)
		return false;
	for (int i = 0; ok[i] != NULL && !yes; i++)
		yes = strcmp(u.scheme, "http") == 0 && strcmp(u.host, ok[i]) == 0;
	sr_url_free(&u);
	return yes;
}

/* The Authorization value, malloc'd into *out (NULL when none). */
static int container_auth(char **out, struct sr_err *e)
{
	const char *file = sr_awscred__env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *tok = sr_awscred__env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	struct sr_err fe = { 0 };
	size_t n;
	int rc;

	*out = NULL;
	if (file != NULL) {
		rc = sr_fs_read_file(file, 16 << 10, out, &n, &fe);
		if (rc < 0)
			return sr_err_set(e, rc, "aws credentials: "
					  "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: %s",
					  fe.msg);
		while (n > 0 && ((*out)[n - 1] == '\n' || (*out)[n - 1] == '\r'))
			(*out)[--n] = '\0';
	} else if (tok != NULL) {
		*out = strdup(tok);
		if (*out == NULL)
			return sr_err_set(e, -ENOMEM, "out of memory");
	} else {
		return 0;
	}
	sr_log_secret(*out);
	if (strpbrk(*out, "\r\n") != NULL) {
		sr_log_secret_forget(*out);
		sr_awscred__wipe(*out);
		*out = NULL;
		return sr_err_set(e, -EINVAL, "aws credentials: the container "
				  "authorization token holds a line break");
	}
	return 0;
}

int sr_awscred__from_container(struct sr_awscred *out, struct sr_err *e)
{
	const char *rel = sr_awscred__env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = sr_awscred__env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	struct sr_http_resp r = { 0 };
	struct sr_err he = { 0 };
	char *url = NULL, *auth = NULL, *hdr = NULL;
	const char *hdrs[2] = { NULL, NULL };
	int rc;

	if (rel == NULL && full == NULL)
		return -SR_ENOTFOUND;
	if (rel != NULL)
		rc = asprintf(&url, ECS_HOST "%s%s", rel[0] == '/' ? "" : "/", rel);
	else
		rc = asprintf(&url, "%s", full);
	if (rc < 0) {
		url = NULL;
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	if (rel == NULL && !container_host_ok(url)) {
		rc = sr_err_set(e, -EINVAL,
				"aws credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI"
				" '%s': must be https, loopback or the ECS/EKS "
				"metadata address", full);
		goto out;
	}
	rc = container_auth(&auth, e);
	if (rc < 0)
		goto out;
	if (auth != NULL) {
		if (asprintf(&hdr, "Authorization: %s", auth) < 0) {
			hdr = NULL;
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		hdrs[0] = hdr;
	}
	rc = sr_awscred__http_get(url, hdrs, 2000, 2, &r, &he);
	if (rc < 0) {
		rc = sr_err_set(e, -SR_EHTTP, "aws credentials: container endpoint:"
				" %s", he.msg);
		goto out;
	}
	if (r.status != 200) {
		rc = sr_err_set(e, r.status == 401 || r.status == 403 ? -EACCES
								    : -SR_EHTTP,
				"aws credentials: container endpoint %s: HTTP %ld",
				rel != NULL ? rel : full, r.status);
		goto out;
	}
	rc = from_body(&r, "container endpoint", out, e);
	if (rc < 0)
		goto out;
	out->kind = SR_AWSCRED_CONTAINER;
	snprintf(out->source, sizeof(out->source), "container endpoint %s",
		 rel != NULL ? "(ECS)" : full);
out:
	if (r.body != NULL)
		OPENSSL_cleanse(r.body, r.body_len);
	sr_http_resp_free(&r);
	if (auth != NULL)
		sr_log_secret_forget(auth);
	sr_awscred__wipe(auth);
	sr_awscred__wipe(hdr);
	free(url);
	return rc;
}

/* ---- IMDSv2 ----------------------------------------------------------- */

static int imds_call(const char *base, const char *path, const char *token,
		     struct sr_http_resp *resp)
{
	struct sr_http_opts o;
	char url[512], hdr[600];
	const char *const hdrs[] = { hdr, NULL };
	int put = token == NULL;

	sr_http_opts_default(&o);
	o.timeout_ms = 1000;
	o.connect_timeout_ms = 1000;
	o.max_retries = 0;
	o.max_body = DOC_MAX;
	snprintf(url, sizeof(url), "%s%s", base, path);
	if (put)
		snprintf(hdr, sizeof(hdr),
			 "X-aws-ec2-metadata-token-ttl-seconds: 21600");
	else
		snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s", token);
	return sr_http_request(put ? "PUT" : "GET", url, hdrs, NULL, 0, &o,
			       resp, NULL);
}

int sr_awscred__from_imds(struct sr_awscred *out, struct sr_err *e)
{
	const char *base = sr_awscred__env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	struct sr_http_resp r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
	char *token = NULL, *role = NULL, *nl;
	char path[300], b[512], what[200];
	json_t *doc = NULL;
	const char *code = NULL;
	int rc;

	if (sr_awscred__env_true("AWS_EC2_METADATA_DISABLED"))
		return -SR_ENOTFOUND;
	snprintf(b, sizeof(b), "%s", base != NULL ? base : IMDS_DEFAULT);
	while (b[0] != '\0' && b[strlen(b) - 1] == '/')
		b[strlen(b) - 1] = '\0';
	rc = imds_call(b, "/latest/api/token", NULL, &r1);
	if (rc < 0 || r1.status != 200) {
		rc = -SR_ENOTFOUND; /* no metadata service: not on EC2 */
		goto out;
	}
	token = strndup(r1.body, r1.body_len);
	if (token == NULL) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	sr_log_secret(token);
	rc = imds_call(b, IMDS_CREDS, token, &r2);
	if (rc < 0 || r2.status == 404) {
		rc = -SR_ENOTFOUND; /* on EC2, but no instance role */
		goto out;
	}
	if (r2.status != 200) {
		rc = sr_err_set(e, -SR_EHTTP,
				"aws credentials: instance metadata %s: HTTP %ld",
				IMDS_CREDS, r2.status);
		goto out;
	}
	role = strndup(r2.body, r2.body_len);
	if (role == NULL) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	nl = strchr(role, '\n');
	if (nl != NULL)
		*nl = '\0';
	if (role[0] == '\0' || strchr(role, '/') != NULL || strlen(role) > 128) {
		rc = sr_err_set(e, -SR_EHTTP,
				"aws credentials: instance metadata %s: bad role name",
				IMDS_CREDS);
		goto out;
	}
	snprintf(path, sizeof(path), IMDS_CREDS "%s", role);
	rc = imds_call(b, path, token, &r3);
	if (rc < 0 || r3.status != 200) {
		rc = sr_err_set(e, -SR_EHTTP,
				"aws credentials: instance role %s: HTTP %ld",
				role, r3.status);
		goto out;
	}
	snprintf(what, sizeof(what), "instance role %s", role);
	doc = sr_json_load_buf(r3.body, r3.body_len, what, NULL);
	if (doc != NULL &&
	    (sr_json_get_str_opt(doc, "Code", &code, "", NULL) < 0 ||
	     (code != NULL && strcmp(code, "Success") != 0))) {
		rc = sr_err_set(e, -SR_EHTTP, "aws credentials: %s: Code is not "
				"Success", what);
		goto out;
	}
	rc = doc != NULL ? sr_awscred__from_doc(doc, what, out, e)
			 : sr_err_set(e, -SR_EHTTP, "aws credentials: %s: the "
				      "answer is not JSON", what);
	if (rc < 0)
		goto out;
	out->kind = SR_AWSCRED_IMDS;
	snprintf(out->source, sizeof(out->source), "instance role %s (IMDSv2)",
		 role);
out:
	if (r3.body != NULL)
		OPENSSL_cleanse(r3.body, r3.body_len);
	json_decref(doc);
	sr_http_resp_free(&r1);
	sr_http_resp_free(&r2);
	sr_http_resp_free(&r3);
	if (token != NULL)
		sr_log_secret_forget(token);
	sr_awscred__wipe(token);
	free(role);
	return rc;
}
