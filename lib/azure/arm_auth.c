/*
 * arm_auth.c - Azure credentials for ARM (arm.h, CREDENTIALS): the
 * Entra client-credentials grant (secret or certificate) and the managed
 * identity's IMDS token, cached until near their end.
 *
 * Cache states (under a->mu, one fetch at a time):
 *   EMPTY --fetch ok--> VALID(end) --now > end - 300 s--> fetch again
 *                         (a failed fetch leaves EMPTY and says why)
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arm_int.h"
#include "common/log.h"

#define MARGIN_S 300
#define MI_API "api-version=2018-02-01"
#define MI_RESOURCE "https%3A%2F%2Fmanagement.azure.com%2F"

/* expires_in: a number (Entra) or a string of digits (IMDS). */
static int64_t expires_in(json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return -1;
}

static int parse_token(struct arm *a, const struct sr_http_resp *r,
		       const char *what, struct sr_err *e)
{
	json_t *doc = json_loadb(r->body ? r->body : "", r->body_len, 0, NULL);
	json_t *tok = json_object_get(doc, "access_token");
	int64_t in = expires_in(json_object_get(doc, "expires_in"));
	int rc = 0;

	if (r->status != 200) {
		const char *code = json_string_value(json_object_get(doc, "error"));
		const char *desc = json_string_value(json_object_get(doc,
							"error_description"));

		rc = sr_err_set(e, r->status == 400 || r->status == 401 ||
				r->status == 403 ? -EACCES : -SR_EHTTP,
				"%s: HTTP %ld %s%s%.200s", what, r->status,
				code ? code : "", desc ? ": " : "",
				desc ? desc : "");
		goto out;
	}
	if (!json_is_string(tok) || json_string_length(tok) == 0 ||
	    json_string_length(tok) >= sizeof a->token || in <= 0) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: expected access_token and "
				"expires_in > 0", what);
		goto out;
	}
	snprintf(a->token, sizeof a->token, "%s", json_string_value(tok));
	sr_log_secret(a->token);
	a->token_end_s = (int64_t)time(NULL) + in;
out:
	json_decref(doc);
	return rc;
}

/* url-encoded `k=v` appended to buf; -ENOMEM or -ENOSPC. */
static int form_add(char *buf, size_t cap, const char *k, const char *v)
{
	char *x = curl_easy_escape(NULL, v, 0);
	size_t l = strlen(buf);
	int n;

	if (!x)
		return -ENOMEM;
	n = snprintf(buf + l, cap - l, "%s%s=%s", l ? "&" : "", k, x);
	explicit_bzero(x, strlen(x));
	curl_free(x);
	return n < 0 || (size_t)n >= cap - l ? -ENOSPC : 0;
}

static int fetch_entra(struct arm *a, struct sr_err *e)
{
	static const char *const hdrs[] = {
		"Content-Type: application/x-www-form-urlencoded", NULL
	};
	char url[1024], form[12288] = "";
	char *assertion = NULL;
	struct sr_http_resp r = { 0 };
	struct sr_http_opts o;
	int rc;

	snprintf(url, sizeof url, "%s/%s/oauth2/v2.0/token", a->login,
		 a->tenant);
	rc = form_add(form, sizeof form, "client_id", a->client_id);
	if (!rc)
		rc = form_add(form, sizeof form, "scope", ARM_SCOPE);
	if (!rc && a->kind == ARM_CRED_SECRET)
		rc = form_add(form, sizeof form, "client_secret", a->secret);
	if (!rc && a->kind == ARM_CRED_CERT) {
		rc = arm__cert_assertion(a, url, &assertion, e);
		if (rc)
			goto out;
		rc = form_add(form, sizeof form, "client_assertion_type",
			      "urn:ietf:params:oauth:client-assertion-type:"
			      "jwt-bearer");
		if (!rc)
			rc = form_add(form, sizeof form, "client_assertion",
				      assertion);
	}
	if (!rc)
		rc = form_add(form, sizeof form, "grant_type",
			      "client_credentials");
	if (rc) {
		rc = sr_err_set(e, rc, "azure token request: %s", sr_strerror(rc));
		goto out;
	}
	arm__http_opts(a, &o);
	o.retry_unsafe = 1; /* a second token request is harmless */
	rc = sr_http_request("POST", url, hdrs, form, strlen(form), &o, &r, e);
	if (rc == 0)
		rc = parse_token(a, &r, "azure token (client credentials)", e);
out:
	explicit_bzero(form, sizeof form);
	if (assertion) {
		explicit_bzero(assertion, strlen(assertion));
		free(assertion);
	}
	sr_http_resp_free(&r);
	return rc;
}

static int fetch_mi(struct arm *a, struct sr_err *e)
{
	static const char *const hdrs[] = { "Metadata: true", NULL };
	char url[1024];
	struct sr_http_resp r = { 0 };
	struct sr_http_opts o;
	int rc;

	snprintf(url, sizeof url, "%s/metadata/identity/oauth2/token?" MI_API
		 "&resource=%s%s%s", a->imds, MI_RESOURCE,
		 a->client_id ? "&client_id=" : "",
		 a->client_id ? a->client_id : "");
	arm__http_opts(a, &o);
	o.connect_timeout_ms = 1000; /* link-local: there at once, or not */
	o.max_retries = 1;
	rc = sr_http_request("GET", url, hdrs, NULL, 0, &o, &r, e);
	if (rc == 0)
		rc = parse_token(a, &r, "azure token (managed identity)", e);
	sr_http_resp_free(&r);
	return rc;
}

int arm_token(struct arm *a, char *buf, size_t n, int64_t *expires_s,
	      struct sr_err *e)
{
	int rc = 0;

	pthread_mutex_lock(&a->mu);
	if (!a->token_end_s || (int64_t)time(NULL) > a->token_end_s - MARGIN_S) {
		a->token_end_s = 0;
		rc = a->kind == ARM_CRED_MI ? fetch_mi(a, e) : fetch_entra(a, e);
	}
	if (rc == 0) {
		if (strlen(a->token) >= n)
			rc = sr_err_set(e, -ENOSPC, "azure token: longer than %zu "
					"bytes", n - 1);
		else
			snprintf(buf, n, "%s", a->token);
		if (expires_s)
			*expires_s = a->token_end_s;
	}
	pthread_mutex_unlock(&a->mu);
	return rc;
}
