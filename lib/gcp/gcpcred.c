/*
 * gcpcred.c - Google application default credentials (gcpcred.h): the
 * chain, the cache, the three token requests.  The JWT: gcpcred_jwt.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/http.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sigv4.h"
#include "common/url.h"
#include "gcp/gcpcred.h"

struct gcpcred {
	pthread_mutex_t mu;
	enum gcpcred_kind kind;
	char *email, *key_id, *pem;          /* service account */
	char *client_id, *client_secret, *refresh; /* authorized user */
	char *token_uri;
	char meta_url[256];                  /* metadata server */
	char source[512];
	char project[128];
	bool project_asked;
	char token[GCPCRED_TOKEN_MAX];       /* cached; "" none */
	int64_t expires_s;
};

static char *dup_secret(const char *s)
{
	char *d = s ? strdup(s) : NULL;

	if (d)
		sr_log_secret(d);
	return d;
}

static void free_secret(char *s)
{
	if (!s)
		return;
	sr_log_secret_forget(s);
	memset(s, 0, strlen(s));
	free(s);
}

void gcpcred_close(struct gcpcred *c)
{
	if (!c)
		return;
	free(c->email);
	free(c->key_id);
	free_secret(c->pem);
	free(c->client_id);
	free_secret(c->client_secret);
	free_secret(c->refresh);
	free(c->token_uri);
	if (c->token[0])
		sr_log_secret_forget(c->token);
	memset(c->token, 0, sizeof c->token);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static int need(json_t *doc, const char *file, const char *key,
		const char **out, struct sr_err *e)
{
	json_t *v = json_object_get(doc, key);

	if (!json_is_string(v) || !json_string_value(v)[0])
		return sr_err_set(e, -SR_EPARSE, "%s: \"%s\": expected a "
				  "non-empty string", file, key);
	*out = json_string_value(v);
	return 0;
}

static const char *opt_str(json_t *doc, const char *key)
{
	json_t *v = json_object_get(doc, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A key file: service_account or authorized_user.  `via` names how it
 * was found, for the source line and errors. */
static int load_file(struct gcpcred *c, const char *path, const char *via,
		     struct sr_err *e)
{
	struct sr_err le = { 0 };
	json_t *doc = sr_json_load_file(path, &le);
	const char *type = NULL, *a = NULL, *b = NULL, *k = NULL, *u;
	int rc;

	if (!doc)
		return sr_err_set(e, -SR_EPARSE, "%s (%s): %s", path, via, le.msg);
	rc = need(doc, path, "type", &type, e);
	if (rc)
		goto out;
	u = opt_str(doc, "token_uri");
	c->token_uri = strdup(u && *u ? u : GCPCRED_TOKEN_URL);
	if (!c->token_uri) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	if (!sr_url_tls_or_loopback(c->token_uri)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: \"token_uri\": expected an "
				"https:// (or loopback) URL", path);
		goto out;
	}
	if (strcmp(type, "service_account") == 0) {
		rc = need(doc, path, "client_email", &a, e);
		if (!rc)
			rc = need(doc, path, "private_key", &k, e);
		if (rc)
			goto out;
		b = opt_str(doc, "private_key_id");
		c->kind = GCPCRED_SERVICE_ACCOUNT;
		c->email = strdup(a);
		c->key_id = strdup(b ? b : "");
		c->pem = dup_secret(k);
		if (!c->email || !c->key_id || !c->pem) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		snprintf(c->source, sizeof c->source, "service account %s (%s)",
			 a, via);
		u = opt_str(doc, "project_id");
	} else if (strcmp(type, "authorized_user") == 0) {
		rc = need(doc, path, "client_id", &a, e);
		if (!rc)
			rc = need(doc, path, "client_secret", &b, e);
		if (!rc)
			rc = need(doc, path, "refresh_token", &k, e);
		if (rc)
			goto out;
		c->kind = GCPCRED_AUTHORIZED_USER;
		c->client_id = strdup(a);
		c->client_secret = dup_secret(b);
		c->refresh = dup_secret(k);
		if (!c->client_id || !c->client_secret || !c->refresh) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		snprintf(c->source, sizeof c->source, "user credentials (%s)", via);
		u = opt_str(doc, "quota_project_id");
	} else {
		rc = sr_err_set(e, -SR_EPARSE, "%s: \"type\": '%s' is not "
				"service_account or authorized_user (external "
				"accounts are not supported)", path, type);
		goto out;
	}
	if (u && !c->project[0])
		snprintf(c->project, sizeof c->project, "%s", u);
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

/* On a GCE VM: the DMI product name is "Google Compute Engine". */
static bool on_gce(void)
{
	char buf[64] = "";
	FILE *f = fopen("/sys/class/dmi/id/product_name", "r");

	if (!f)
		return false;
	if (!fgets(buf, sizeof buf, f))
		buf[0] = '\0';
	fclose(f);
	return strncmp(buf, "Google", 6) == 0;
}

int gcpcred_open(struct gcpcred **out, struct sr_err *e)
{
	struct gcpcred *c = calloc(1, sizeof *c);
	const char *env = getenv("GOOGLE_APPLICATION_CREDENTIALS");
	const char *p = getenv("GOOGLE_CLOUD_PROJECT");
	const char *meta = getenv("GCE_METADATA_HOST");
	char path[1024], via[1100];
	int rc;

	*out = NULL;
	if (!c)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&c->mu, NULL);
	if (!p || !*p)
		p = getenv("CLOUDSDK_CORE_PROJECT");
	if (p && *p)
		snprintf(c->project, sizeof c->project, "%s", p);
	if (env && *env) {
		snprintf(via, sizeof via, "GOOGLE_APPLICATION_CREDENTIALS=%s", env);
		rc = load_file(c, env, via, e);
		goto done;
	}
	if (getenv("CLOUDSDK_CONFIG") && *getenv("CLOUDSDK_CONFIG"))
		snprintf(path, sizeof path, "%s/application_default_credentials"
			 ".json", getenv("CLOUDSDK_CONFIG"));
	else
		snprintf(path, sizeof path, "%s/.config/gcloud/application_"
			 "default_credentials.json",
			 getenv("HOME") ? getenv("HOME") : "");
	if (access(path, F_OK) == 0) {
		snprintf(via, sizeof via, "gcloud application-default %s", path);
		rc = load_file(c, path, via, e);
		goto done;
	}
	if ((meta && *meta) || on_gce()) {
		c->kind = GCPCRED_METADATA;
		snprintf(c->meta_url, sizeof c->meta_url, "http://%s",
			 meta && *meta ? meta : GCPCRED_META_HOST);
		snprintf(c->source, sizeof c->source, "metadata server %s "
			 "(the VM's service account)", c->meta_url);
		rc = 0;
		goto done;
	}
	rc = sr_err_set(e, -SR_ENOTFOUND, "no Google credentials: set "
			"GOOGLE_APPLICATION_CREDENTIALS to a service-account "
			"key file, or run `gcloud auth application-default "
			"login` (%s), or run on a GCE VM", path);
done:
	if (rc) {
		gcpcred_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

int gcpcred_parse_token(const char *body, size_t len, char *out, size_t n,
			int64_t *expires_in_s, struct sr_err *e)
{
	json_t *doc = json_loadb(body, len, 0, NULL);
	json_t *t = json_object_get(doc, "access_token");
	json_t *x = json_object_get(doc, "expires_in");
	int rc = 0;

	if (!json_is_object(doc)) {
		rc = sr_err_set(e, -SR_EPARSE, "token answer: expected a JSON "
				"object");
	} else if (!json_is_string(t) || !json_string_value(t)[0] ||
		   strlen(json_string_value(t)) >= n) {
		rc = sr_err_set(e, -SR_EPARSE, "token answer: \"access_token\": "
				"expected a string of 1 to %zu bytes", n - 1);
	} else if (!json_is_integer(x) || json_integer_value(x) <= 0 ||
		   json_integer_value(x) > 86400 * 7) {
		rc = sr_err_set(e, -SR_EPARSE, "token answer: \"expires_in\": "
				"expected seconds (1 to 604800)");
	} else {
		snprintf(out, n, "%s", json_string_value(t));
		*expires_in_s = json_integer_value(x);
	}
	json_decref(doc);
	return rc;
}

/* application/x-www-form-urlencoded k=v pairs; *out malloc'd. */
static int form(char **out, const char *const *kv, struct sr_err *e)
{
	size_t cap = 1, len = 0;
	char *buf;

	for (size_t i = 0; kv[i]; i++)
		cap += strlen(kv[i]) * 3 + 2;
	buf = malloc(cap);
	if (!buf)
		return sr_err_set(e, -ENOMEM, "out of memory");
	buf[0] = '\0';
	for (size_t i = 0; kv[i]; i += 2) {
		char *v = sr_sigv4_uri_encode(kv[i + 1], strlen(kv[i + 1]), 0);

		if (!v) {
			free(buf);
			return sr_err_set(e, -ENOMEM, "out of memory");
		}
		len += (size_t)snprintf(buf + len, cap - len, "%s%s=%s",
					i ? "&" : "", kv[i], v);
		free(v);
	}
	*out = buf;
	return 0;
}

/* One token request; the answer parsed into c->token. */
static int fetch(struct gcpcred *c, struct sr_err *e)
{
	struct sr_http_resp resp = { 0 };
	struct sr_http_opts o;
	char *body = NULL, *jwt = NULL, url[512], tok[GCPCRED_TOKEN_MAX];
	const char *form_h[] = { "Content-Type: application/x-www-form-"
				 "urlencoded", NULL };
	const char *meta_h[] = { "Metadata-Flavor: Google", NULL };
	int64_t now = (int64_t)time(NULL), life = 0;
	int rc;

	sr_http_opts_default(&o);
	o.timeout_ms = 10000;
	o.max_retries = 2;
	if (c->kind == GCPCRED_SERVICE_ACCOUNT) {
		const char *kv[] = { "grant_type", "urn:ietf:params:oauth:"
				     "grant-type:jwt-bearer", "assertion", NULL,
				     NULL };

		rc = gcpcred_jwt(c->email, c->key_id, c->pem, c->token_uri,
				 GCPCRED_SCOPE, now, &jwt, e);
		if (rc)
			goto out;
		kv[3] = jwt;
		rc = form(&body, kv, e);
	} else if (c->kind == GCPCRED_AUTHORIZED_USER) {
		const char *kv[] = { "grant_type", "refresh_token",
				     "client_id", c->client_id,
				     "client_secret", c->client_secret,
				     "refresh_token", c->refresh, NULL };

		rc = form(&body, kv, e);
	} else {
		o.timeout_ms = 2000;
		snprintf(url, sizeof url, "%s/computeMetadata/v1/instance/"
			 "service-accounts/default/token", c->meta_url);
		rc = sr_http_request("GET", url, meta_h, NULL, 0, &o, &resp, e);
		goto answer;
	}
	if (rc)
		goto out;
	o.retry_unsafe = 1; /* a second token is harmless */
	rc = sr_http_request("POST", c->token_uri, form_h, body, strlen(body),
			     &o, &resp, e);
answer:
	if (rc)
		goto out;
	if (resp.status == 400 || resp.status == 401 || resp.status == 403) {
		rc = sr_err_set(e, -EACCES, "%s refused the credentials of %s "
				"(HTTP %ld)", c->kind == GCPCRED_METADATA ?
				c->meta_url : c->token_uri, c->source,
				resp.status);
		goto out;
	}
	if (resp.status != 200) {
		rc = sr_err_set(e, -SR_EHTTP, "token request to %s: HTTP %ld",
				c->kind == GCPCRED_METADATA ? c->meta_url :
				c->token_uri, resp.status);
		goto out;
	}
	rc = gcpcred_parse_token(resp.body, resp.body_len, tok, sizeof tok,
				 &life, e);
	if (rc)
		goto out;
	if (c->token[0])
		sr_log_secret_forget(c->token);
	snprintf(c->token, sizeof c->token, "%s", tok);
	sr_log_secret(c->token);
	c->expires_s = now + life;
out:
	memset(tok, 0, sizeof tok);
	if (body) {
		memset(body, 0, strlen(body));
		free(body);
	}
	free(jwt);
	sr_http_resp_free(&resp);
	return rc;
}

int gcpcred_token(struct gcpcred *c, char *out, size_t n, int64_t *expires_s,
		  struct sr_err *e)
{
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	if (!c->token[0] || (int64_t)time(NULL) >= c->expires_s - GCPCRED_EARLY_S)
		rc = fetch(c, e);
	if (rc == 0 && strlen(c->token) >= n)
		rc = sr_err_set(e, -ENOSPC, "access token longer than %zu bytes",
				n - 1);
	if (rc == 0) {
		snprintf(out, n, "%s", c->token);
		if (expires_s)
			*expires_s = c->expires_s;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

enum gcpcred_kind gcpcred_kind(const struct gcpcred *c)
{
	return c->kind;
}

const char *gcpcred_source(const struct gcpcred *c)
{
	return c->source;
}

const char *gcpcred_meta_url(const struct gcpcred *c)
{
	return c->meta_url;
}

const char *gcpcred_project(struct gcpcred *c)
{
	struct sr_http_resp resp = { 0 };
	struct sr_http_opts o;
	struct sr_err e = { 0 };
	const char *h[] = { "Metadata-Flavor: Google", NULL };
	char url[320];

	pthread_mutex_lock(&c->mu);
	if (!c->project[0] && c->kind == GCPCRED_METADATA && !c->project_asked) {
		c->project_asked = true;
		sr_http_opts_default(&o);
		o.timeout_ms = 2000;
		o.max_retries = 1;
		snprintf(url, sizeof url, "%s/computeMetadata/v1/project/"
			 "project-id", c->meta_url);
		if (sr_http_request("GET", url, h, NULL, 0, &o, &resp, &e) == 0 &&
		    resp.status == 200 && resp.body_len < sizeof c->project)
			snprintf(c->project, sizeof c->project, "%s", resp.body);
		sr_http_resp_free(&resp);
	}
	pthread_mutex_unlock(&c->mu);
	return c->project;
}
