/*
 * gcemeta.c - hanging GETs on the GCE metadata server (gcemeta.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gcemeta.h"
#include "common/http.h"

struct gcemeta {
	char url[512];             /* base + "/computeMetadata/v1/" + key */
	char key[48];
	char etag[128];            /* "" before the first answer */
	char last[40];
	int hang_s;
	atomic_int *cancel;
};

struct gcemeta *gcemeta_create(const char *base_url, const char *key,
			       int hang_s, atomic_int *cancel)
{
	struct gcemeta *c = calloc(1, sizeof *c);

	if (!c)
		return NULL;
	snprintf(c->url, sizeof c->url, "%s/computeMetadata/v1/%s", base_url,
		 key);
	snprintf(c->key, sizeof c->key, "%s", key);
	c->hang_s = hang_s > 0 && hang_s <= 300 ? hang_s : GCEMETA_HANG_S;
	c->cancel = cancel;
	return c;
}

void gcemeta_destroy(struct gcemeta *c)
{
	free(c);
}

const char *gcemeta_etag(const struct gcemeta *c)
{
	return c->etag;
}

int gcemeta_parse(const char *key, const char *body, size_t len, char *value,
		  size_t n, struct sr_err *e)
{
	static const char *const pre[] = { "TRUE", "FALSE", NULL };
	static const char *const mnt[] = {
		"NONE", "MIGRATE_ON_HOST_MAINTENANCE",
		"TERMINATE_ON_HOST_MAINTENANCE", NULL };
	const char *const *ok = strcmp(key, GCEMETA_PREEMPTED) == 0 ? pre : mnt;

	while (len > 0 && isspace((unsigned char)body[len - 1]))
		len--;
	for (size_t i = 0; ok[i]; i++) {
		if (strlen(ok[i]) == len && memcmp(ok[i], body, len) == 0 &&
		    len < n) {
			memcpy(value, body, len);
			value[len] = '\0';
			return 0;
		}
	}
	return sr_err_set(e, -SR_EPARSE, "metadata %s: '%.*s' is not one of "
			  "its values", key, (int)(len > 40 ? 40 : len), body);
}

int gcemeta_next(struct gcemeta *c, char *value, size_t n, bool *changed,
		 struct sr_err *e)
{
	const char *hdr[] = { "Metadata-Flavor: Google", NULL };
	struct sr_http_resp resp = { 0 };
	struct sr_http_opts o;
	char url[768], flavor[32], etag[sizeof c->etag];
	int rc;

	*changed = false;
	if (c->etag[0])
		snprintf(url, sizeof url, "%s?wait_for_change=true&last_etag=%s"
			 "&timeout_sec=%d", c->url, c->etag, c->hang_s);
	else
		snprintf(url, sizeof url, "%s", c->url);
	sr_http_opts_default(&o);
	o.timeout_ms = (c->hang_s + 5) * 1000L;
	o.connect_timeout_ms = 1000;
	o.max_retries = 0; /* the caller asks again, with the same etag */
	o.cancel = c->cancel;
	rc = sr_http_request("GET", url, hdr, NULL, 0, &o, &resp, e);
	if (rc)
		goto out;
	if (sr_http_resp_header(&resp, "Metadata-Flavor", flavor,
				sizeof flavor) || strcmp(flavor, "Google")) {
		rc = sr_err_set(e, -SR_EHTTP, "metadata %s: the answer has no "
				"Metadata-Flavor: Google (HTTP %ld): not the "
				"metadata server", c->key, resp.status);
		goto out;
	}
	if (resp.status != 200) {
		rc = sr_err_set(e, -SR_EHTTP, "metadata %s: HTTP %ld", c->key,
				resp.status);
		goto out;
	}
	rc = gcemeta_parse(c->key, resp.body ? resp.body : "", resp.body_len,
			   value, n, e);
	if (rc)
		goto out;
	if (sr_http_resp_header(&resp, "ETag", etag, sizeof etag) || !etag[0] ||
	    strspn(etag, "0123456789abcdefghijklmnopqrstuvwxyz"
		   "ABCDEFGHIJKLMNOPQRSTUVWXYZ-_") != strlen(etag)) {
		rc = sr_err_set(e, -SR_EPARSE, "metadata %s: expected an ETag "
				"of letters and digits", c->key);
		goto out;
	}
	snprintf(c->etag, sizeof c->etag, "%s", etag);
	*changed = strcmp(c->last, value) != 0;
	snprintf(c->last, sizeof c->last, "%s", value);
out:
	sr_http_resp_free(&resp);
	return rc;
}
