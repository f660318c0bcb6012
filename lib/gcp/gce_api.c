/*
 * gce_api.c - the Compute Engine REST calls (gce.h): a bearer token from
 * the credentials on every attempt, JSON in and out, errors classified.
 *
 * Insert, step by step (the driver's worker thread):
 *   1. fence check; POST instances?requestId=UUID(idem key)
 *        200 -> a zone Operation; 409 alreadyExists -> the instance is
 *        there (an earlier attempt under the same name): go to 3
 *   2. POST operations/{op}/wait until status DONE (bounded: each call
 *      waits up to ~2 min on GCE, OP_WAIT_ROUNDS calls in all); an
 *      operation error is classified like an HTTP one
 *   3. GET the instance -> cloud_instance
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/http.h"
#include "common/sigv4.h"
#include "common/url.h"
#include "gcp/gce_int.h"

#define OP_WAIT_ROUNDS 20
#define LIST_PAGES_MAX 1000

struct gce {
	struct gcpcred *cred;
	char project[128];
	char endpoint[512];
	long timeout_ms;
	int max_retries;
	bool (*fence)(void *ud, int64_t epoch);
	void *fence_ud;
};


int gce_open(const struct gce_opts *o, struct gce **out, struct sr_err *e)
{
	struct gce *c = calloc(1, sizeof *c);
	const char *ep = o->endpoint;
	const char *proj;
	size_t l;
	int rc;

	*out = NULL;
	if (!c)
		return sr_err_set(e, -ENOMEM, "out of memory");
	if (!ep || !*ep)
		ep = getenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE");
	if (!ep || !*ep)
		ep = GCE_ENDPOINT;
	snprintf(c->endpoint, sizeof c->endpoint, "%s", ep);
	l = strlen(c->endpoint);
	while (l > 0 && c->endpoint[l - 1] == '/')
		c->endpoint[--l] = '\0';
	if (!sr_url_tls_or_loopback(c->endpoint)) {
		rc = sr_err_set(e, -EINVAL, "gcp endpoint '%s': expected https://"
				" (plain http only to loopback)", c->endpoint);
		goto fail;
	}
	rc = gcpcred_open(&c->cred, e);
	if (rc)
		goto fail;
	proj = o->project && *o->project ? o->project : gcpcred_project(c->cred);
	if (!proj || !*proj) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "gcp project: none set: add "
				"providers.gcp.project to the configuration, or "
				"export GOOGLE_CLOUD_PROJECT");
		goto fail;
	}
	snprintf(c->project, sizeof c->project, "%s", proj);
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
	c->max_retries = o->max_retries > 0 ? o->max_retries : 2;
	*out = c;
	return 0;
fail:
	gce_close(c);
	return rc;
}

void gce_close(struct gce *c)
{
	if (!c)
		return;
	gcpcred_close(c->cred);
	free(c);
}

const char *gce_project(const struct gce *c)
{
	return c->project;
}

const char *gce_endpoint(const struct gce *c)
{
	return c->endpoint;
}

struct gcpcred *gce_creds(struct gce *c)
{
	return c->cred;
}

void gce_set_fence(struct gce *c, bool (*fence)(void *ud, int64_t epoch),
		   void *ud)
{
	c->fence = fence;
	c->fence_ud = ud;
}

/* A fresh bearer token on every attempt (a retry after a long backoff
 * may cross the token's refresh). */
static int sign(void *ud, const struct sr_http_req *rq, struct sr_http_hdrs *h,
		struct sr_err *e)
{
	struct gce *c = ud;
	char tok[GCPCRED_TOKEN_MAX];
	int rc = gcpcred_token(c->cred, tok, sizeof tok, NULL, e);

	(void)rq;
	if (rc == 0)
		rc = sr_http_hdrs_add(h, "Authorization: Bearer %s", tok);
	memset(tok, 0, sizeof tok);
	return rc;
}

/* One call: 0 with *doc the 2xx answer (caller decrefs), or the classified
 * error.  `ok404` makes a 404 a 0 with *doc NULL. */
static int call(struct gce *c, const char *method, const char *url,
		const char *body, const char *what, bool ok404, json_t **doc,
		struct cloud_error *err)
{
	const char *hdr[] = { "Content-Type: application/json", NULL };
	struct sr_http_req rq = {
		.method = method, .url = url, .what = what,
		.headers = body ? hdr : NULL, .sign = sign, .sign_ud = c,
		.body = body, .body_len = body ? strlen(body) : 0,
	};
	struct sr_http_resp resp = { 0 };
	struct sr_http_opts o;
	struct sr_err e = { 0 };
	int rc;

	*doc = NULL;
	sr_http_opts_default(&o);
	o.timeout_ms = c->timeout_ms;
	o.max_retries = c->max_retries;
	/* every mutating call carries a requestId: GCE answers a repeat
	 * with the first one's operation */
	o.retry_unsafe = 1;
	rc = sr_http_do(&rq, &o, &resp, &e);
	if (rc) {
		bool creds = e.msg[0] && (rc == -EACCES || rc == -SR_EPARSE ||
					  rc == -SR_ENOTFOUND);

		rc = cloud_err_set(err, creds ? CLOUD_ECREDS : CLOUD_ETRANSIENT,
				   NULL, "%s: %s", what, sr_err_str(&e, rc));
		goto out;
	}
	if (resp.status == 404 && ok404) {
		rc = 0;
		goto out;
	}
	if (resp.status < 200 || resp.status > 299) {
		rc = gce_classify(resp.status, resp.body, resp.body_len, what, err);
		goto out;
	}
	*doc = json_loadb(resp.body ? resp.body : "", resp.body_len, 0, NULL);
	if (!json_is_object(*doc)) {
		json_decref(*doc);
		*doc = NULL;
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "%s: the answer is "
				   "not a JSON object", what);
	}
out:
	sr_http_resp_free(&resp);
	return rc;
}

static bool fenced(struct gce *c, int64_t epoch, const char *what,
		   struct cloud_error *err)
{
	if (epoch == 0 || !c->fence || c->fence(c->fence_ud, epoch))
		return false;
	cloud_err_set(err, CLOUD_EFENCED, NULL, "%s: not sent: the lease of "
		      "epoch %lld is no longer held", what, (long long)epoch);
	return true;
}

/* Wait for zone operation `op` to be DONE; its error classified. */
static int op_wait(struct gce *c, const char *zone, const char *op,
		   struct cloud_error *err)
{
	char url[1024];
	json_t *doc = NULL;
	int rc = 0;

	snprintf(url, sizeof url, "%s/projects/%s/zones/%s/operations/%s/wait",
		 c->endpoint, c->project, zone, op);
	for (int i = 0; i < OP_WAIT_ROUNDS; i++) {
		const char *st;

		rc = call(c, "POST", url, "", "gce operations.wait", false, &doc,
			  err);
		if (rc)
			return rc;
		st = json_string_value(json_object_get(doc, "status"));
		if (st && strcmp(st, "DONE") == 0) {
			if (json_object_get(doc, "error")) {
				char *s = json_dumps(doc, JSON_COMPACT);

				rc = gce_classify(400, s, s ? strlen(s) : 0,
						  "gce operation", err);
				free(s);
			}
			json_decref(doc);
			return rc;
		}
		json_decref(doc);
		doc = NULL;
	}
	return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "gce operation %s: "
			     "not done after %d waits", op, OP_WAIT_ROUNDS);
}

static int get_inst(struct gce *c, const char *zone, const char *name,
		    struct cloud_instance *out, struct cloud_error *err)
{
	char url[1024];
	json_t *doc = NULL;
	char *s;
	struct sr_err e = { 0 };
	int rc;

	snprintf(url, sizeof url, "%s/projects/%s/zones/%s/instances/%s",
		 c->endpoint, c->project, zone, name);
	rc = call(c, "GET", url, NULL, "gce instances.get", false, &doc, err);
	if (rc)
		return rc;
	s = json_dumps(doc, JSON_COMPACT);
	rc = s ? gce_parse_instance(s, strlen(s), out, &e) : -ENOMEM;
	if (rc)
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "gce instances.get:"
				   " %s", sr_err_str(&e, rc));
	free(s);
	json_decref(doc);
	return rc;
}

int gce_insert_wait(struct gce *c, const struct gce_insert *in,
		    struct cloud_instance *out, struct cloud_error *err)
{
	char url[1024], rid[37], name[GCE_NAME_MAX];
	char *body = NULL;
	json_t *doc = NULL;
	struct sr_err e = { 0 };
	const char *op;
	int rc;

	memset(out, 0, sizeof *out);
	rc = gce_insert_body(in, c->project, &body, &e);
	if (rc)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "%s", e.msg);
	gce_request_id(in->idem_key, rid);
	gce_instance_name(&in->tags, name);
	snprintf(url, sizeof url, "%s/projects/%s/zones/%s/instances?"
		 "requestId=%s", c->endpoint, c->project, in->zone, rid);
	if (fenced(c, in->epoch, "gce instances.insert", err)) {
		rc = -ESTALE;
		goto out;
	}
	rc = call(c, "POST", url, body, "gce instances.insert", false, &doc, err);
	if (rc == -EEXIST) { /* alreadyExists: the name is this attempt's */
		rc = 0;
		goto read;
	}
	if (rc)
		goto out;
	op = json_string_value(json_object_get(doc, "name"));
	if (!op) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "gce instances."
				   "insert: the operation has no \"name\"");
		goto out;
	}
	rc = op_wait(c, in->zone, op, err);
	if (rc)
		goto out;
read:
	rc = get_inst(c, in->zone, name, out, err);
out:
	if (body) {
		memset(body, 0, strlen(body));
		free(body);
	}
	json_decref(doc);
	return rc;
}

int gce_list(struct gce *c, const char *cluster, struct cloud_instance **out,
	     size_t *n, struct cloud_error *err)
{
	char lab[64], filt[160], page[512] = "", url[2048];
	char *f = NULL;
	struct sr_err e = { 0 };
	int rc = 0;

	*out = NULL;
	*n = 0;
	gce_label_value(cluster, lab, sizeof lab);
	snprintf(filt, sizeof filt, "labels.%s=\"%s\"", GCE_LABEL_CLUSTER, lab);
	f = sr_sigv4_uri_encode(filt, strlen(filt), 0);
	if (!f)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	for (int p = 0; p < LIST_PAGES_MAX; p++) {
		json_t *doc = NULL;
		const char *next;

		snprintf(url, sizeof url, "%s/projects/%s/aggregated/instances?"
			 "filter=%s&maxResults=500%s%s", c->endpoint, c->project,
			 f, page[0] ? "&pageToken=" : "", page);
		rc = call(c, "GET", url, NULL, "gce instances.aggregatedList",
			  false, &doc, err);
		if (rc)
			break;
		rc = gce__parse_list(doc, out, n, &e);
		next = json_string_value(json_object_get(doc, "nextPageToken"));
		if (!rc && next && *next) {
			char *enc = sr_sigv4_uri_encode(next, strlen(next), 0);

			snprintf(page, sizeof page, "%s", enc ? enc : "");
			free(enc);
		} else {
			page[0] = '\0';
		}
		json_decref(doc);
		if (rc) {
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
					   "gce instances.aggregatedList: %s",
					   sr_err_str(&e, rc));
			break;
		}
		if (!page[0])
			break;
	}
	free(f);
	if (rc) {
		cloud_instances_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int gce_delete(struct gce *c, const char *id, int64_t epoch,
	       struct cloud_error *err)
{
	char zone[64], url[1024], rid[37], key[160];
	const char *slash = strchr(id, '/');
	json_t *doc = NULL;
	int rc;

	if (!slash || (size_t)(slash - id) >= sizeof zone)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "gce delete: '%s'"
				     " is not ZONE/NAME", id);
	snprintf(zone, sizeof zone, "%.*s", (int)(slash - id), id);
	snprintf(key, sizeof key, "delete/%s", id);
	gce_request_id(key, rid);
	snprintf(url, sizeof url, "%s/projects/%s/zones/%s/instances/%s?"
		 "requestId=%s", c->endpoint, c->project, zone, slash + 1, rid);
	if (fenced(c, epoch, "gce instances.delete", err))
		return -ESTALE;
	rc = call(c, "DELETE", url, NULL, "gce instances.delete", true, &doc,
		  err);
	json_decref(doc);
	return rc;
}

int gce_region_zones(struct gce *c, const char *region, char ***zones,
		     size_t *n, struct cloud_error *err)
{
	char url[1024];
	json_t *doc = NULL, *arr, *z;
	size_t i;
	int rc;

	*zones = NULL;
	*n = 0;
	snprintf(url, sizeof url, "%s/projects/%s/regions/%s", c->endpoint,
		 c->project, region);
	rc = call(c, "GET", url, NULL, "gce regions.get", false, &doc, err);
	if (rc)
		return rc;
	arr = json_object_get(doc, "zones");
	*zones = calloc(json_array_size(arr) + 1, sizeof **zones);
	if (!*zones) {
		json_decref(doc);
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	}
	json_array_foreach(arr, i, z) {
		const char *s = json_string_value(z);
		const char *p = s ? strrchr(s, '/') : NULL;

		if (!s)
			continue;
		(*zones)[*n] = strdup(p ? p + 1 : s);
		if ((*zones)[*n])
			(*n)++;
	}
	json_decref(doc);
	return 0;
}
