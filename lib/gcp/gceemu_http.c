/*
 * gceemu_http.c - the GCE emulator's HTTP side (libmicrohttpd on
 * 127.0.0.1, a thread per connection): routing, the token endpoint, each
 * VM's metadata server with its hanging GETs, the test controls, start
 * and stop (gceemu.h).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>


#include "cloud/emuhttp.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "gceemu_int.h"
#include "gcp/gcpbill.h"

#define EMU_SKU_PAGE 3

static enum MHD_Result respond(struct MHD_Connection *c, int status,
			       const char *ctype, const char *body,
			       const char *etag, bool flavor)
{
	const char *hdrs[5] = { NULL };
	size_t h = 0;

	if (etag) {
		hdrs[h++] = "ETag";
		hdrs[h++] = etag;
	}
	if (flavor) {
		hdrs[h++] = "Metadata-Flavor";
		hdrs[h++] = "Google";
	}
	return emuhttp_respond(c, status, ctype, body, strlen(body), hdrs);
}

static enum MHD_Result json_answer(struct MHD_Connection *c, int status,
				   json_t *doc)
{
	return emuhttp_json(c, status, doc, NULL);
}

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

/* ---- the token endpoint -------------------------------------------------- */

/* A jwt-bearer assertion as Google checks it (but its signature: the
 * emulator holds no public key): RS256, iss, scope, aud = our /token,
 * iat <= exp <= iat + 3600. */
static const char *jwt_bad(struct gceemu *m, const char *jwt)
{
	json_t *h = NULL, *cl = NULL;
	const char *why = NULL;
	char aud[96];
	json_int_t iat, exp;

	snprintf(aud, sizeof aud, "%s/token", m->url);
	emuhttp_jwt(jwt, &h, &cl);
	iat = json_integer_value(json_object_get(cl, "iat"));
	exp = json_integer_value(json_object_get(cl, "exp"));
	if (!h || !cl)
		why = "not a three-part JWT";
	else if (!json_string_value(json_object_get(h, "alg")) ||
		 strcmp(json_string_value(json_object_get(h, "alg")), "RS256"))
		why = "alg is not RS256";
	else if (!json_string_value(json_object_get(cl, "iss")))
		why = "no iss";
	else if (!json_string_value(json_object_get(cl, "scope")))
		why = "no scope";
	else if (!json_string_value(json_object_get(cl, "aud")) ||
		 strcmp(json_string_value(json_object_get(cl, "aud")), aud))
		why = "aud is not the token endpoint";
	else if (iat <= 0 || exp < iat || exp > iat + 3600)
		why = "iat/exp";
	json_decref(h);
	json_decref(cl);
	return why;
}

static enum MHD_Result token(struct gceemu *m, struct MHD_Connection *c,
			     const char *body)
{
	char *grant = emuhttp_form_get(body, "grant_type");
	char *a = NULL, *b = NULL, *d = NULL, tok[48] = "emu-", hex[33];
	const char *why = NULL;
	enum MHD_Result ret;

	if (grant && !strcmp(grant, "urn:ietf:params:oauth:grant-type:jwt-bearer")) {
		a = emuhttp_form_get(body, "assertion");
		why = a ? jwt_bad(m, a) : "no assertion";
	} else if (grant && !strcmp(grant, "refresh_token")) {
		a = emuhttp_form_get(body, "client_id");
		b = emuhttp_form_get(body, "client_secret");
		d = emuhttp_form_get(body, "refresh_token");
		why = !a || !b || !d ? "client_id, client_secret and "
		      "refresh_token are required" : NULL;
	} else {
		why = "unsupported grant_type";
	}
	free(grant);
	free(a);
	free(b);
	free(d);
	if (why)
		return json_answer(c, 400, json_pack("{ss ss}", "error",
						     "invalid_grant",
						     "error_description", why));
	sr_random_hex(hex, (sizeof hex - 1) / 2);
	strncat(tok, hex, sizeof tok - strlen(tok) - 1);
	pthread_mutex_lock(&m->mu);
	snprintf(m->tokens[m->ntokens % EMU_MAX_TOKENS], sizeof m->tokens[0],
		 "%s", tok);
	m->ntokens++;
	pthread_mutex_unlock(&m->mu);
	ret = json_answer(c, 200, json_pack("{ss si ss}", "access_token", tok,
					    "expires_in", 3600, "token_type",
					    "Bearer"));
	return ret;
}

static bool bearer_ok(struct gceemu *m, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "Authorization");
	bool ok = false;

	if (!h || strncmp(h, "Bearer ", 7))
		return false;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < EMU_MAX_TOKENS && i < m->ntokens; i++)
		ok |= strcmp(m->tokens[i], h + 7) == 0;
	pthread_mutex_unlock(&m->mu);
	return ok;
}

/* ---- the metadata server -------------------------------------------------- */

/* A watched key's value and ETag (under m->mu). */
static void watched(struct emu_vm *v, bool pre, char *val, size_t n,
		    char *etag, size_t en)
{
	snprintf(val, n, "%s", pre ? (v->preempted ? "TRUE" : "FALSE") : v->maint);
	snprintf(etag, en, "%016llx", (unsigned long long)(pre ? v->etag_pre
							   : v->etag_mnt));
}

static enum MHD_Result meta(struct gceemu *m, struct MHD_Connection *c,
			    const char *url)
{
	const char *rest = url + 6, *slash = strchr(rest, '/'); /* "/meta/" */
	const char *fl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     "Metadata-Flavor");
	const char *key, *wait = arg(c, "wait_for_change");
	const char *last = arg(c, "last_etag"), *tmo = arg(c, "timeout_sec");
	char name[64], val[160], etag[20];
	struct emu_vm *v;
	bool pre;

	if (!fl || strcmp(fl, "Google"))
		return respond(c, 403, "text/html", "Missing Metadata-Flavor:"
			       "Google header.\n", NULL, true);
	if (!slash || (size_t)(slash - rest) >= sizeof name ||
	    strncmp(slash, "/computeMetadata/v1/", 20))
		return respond(c, 404, "text/html", "not found\n", NULL, true);
	snprintf(name, sizeof name, "%.*s", (int)(slash - rest), rest);
	key = slash + 20;
	pthread_mutex_lock(&m->mu);
	v = gceemu__vm(m, name);
	if (!v) {
		pthread_mutex_unlock(&m->mu);
		return respond(c, 404, "text/html", "not found\n", NULL, true);
	}
	if (!strcmp(key, "instance/name") || !strcmp(key, "instance/zone") ||
	    !strcmp(key, "project/project-id")) {
		if (!strcmp(key, "instance/name"))
			snprintf(val, sizeof val, "%s", v->name);
		else if (!strcmp(key, "instance/zone"))
			snprintf(val, sizeof val, "projects/0/zones/%s", v->zone);
		else
			snprintf(val, sizeof val, "%s", m->project);
		pthread_mutex_unlock(&m->mu);
		return respond(c, 200, "application/text", val, NULL, true);
	}
	if (!strcmp(key, "instance/service-accounts/default/token")) {
		char tok[48] = "emu-", hex[33];

		sr_random_hex(hex, (sizeof hex - 1) / 2);
		strncat(tok, hex, sizeof tok - strlen(tok) - 1);
		snprintf(m->tokens[m->ntokens % EMU_MAX_TOKENS],
			 sizeof m->tokens[0], "%s", tok);
		m->ntokens++;
		pthread_mutex_unlock(&m->mu);
		snprintf(val, sizeof val, "{\"access_token\":\"%s\",\"expires_in\""
			 ":3599,\"token_type\":\"Bearer\"}", tok);
		return respond(c, 200, "application/json", val, NULL, true);
	}
	pre = !strcmp(key, "instance/preempted");
	if (!pre && strcmp(key, "instance/maintenance-event")) {
		pthread_mutex_unlock(&m->mu);
		return respond(c, 404, "text/html", "not found\n", NULL, true);
	}
	watched(v, pre, val, sizeof val, etag, sizeof etag);
	if (wait && !strcmp(wait, "true")) {
		/* hang until the ETag differs from last_etag (the current
		 * one without it), timeout_sec, or the VM goes */
		int64_t end = sr_time_mono_ns() + (int64_t)(tmo ? atoi(tmo) : 60)
			* SR_NS_PER_SEC;
		char want[20];

		snprintf(want, sizeof want, "%s", last ? last : etag);
		while (!m->stopping && !v->gone && !strcmp(etag, want) &&
		       sr_time_mono_ns() < end) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&m->cv, &m->mu, &ts);
			if (!v->gone)
				watched(v, pre, val, sizeof val, etag, sizeof etag);
		}
	}
	pthread_mutex_unlock(&m->mu);
	return respond(c, 200, "application/text", val, etag, true);
}

/* ---- routing ------------------------------------------------------------- */

/* GET the Billing Catalog's SKUs: a page of m->skus from pageToken (an
 * offset), pageSize of them but at most EMU_SKU_PAGE (the API may answer
 * fewer than asked: a client must follow nextPageToken, and does here). */
static enum MHD_Result billing(struct gceemu *m, struct MHD_Connection *c)
{
	const char *ps = arg(c, "pageSize"), *pt = arg(c, "pageToken");
	long size = ps ? strtol(ps, NULL, 10) : 5000;
	long from = pt ? strtol(pt, NULL, 10) : 0;
	size_t total = json_array_size(m->skus);
	json_t *page = json_array(), *out;
	char next[24] = "";

	if (!m->skus) {
		json_decref(page);
		return json_answer(c, 404, gceemu__error(
			404, "notFound", "no SKUs (gce-emulator --billing-skus)"));
	}
	if (size < 1 || size > EMU_SKU_PAGE)
		size = EMU_SKU_PAGE;
	if (from < 0 || (size_t)from > total)
		from = (long)total;
	for (size_t i = (size_t)from; i < total && i < (size_t)(from + size); i++)
		json_array_append(page, json_array_get(m->skus, i));
	if ((size_t)(from + size) < total)
		snprintf(next, sizeof next, "%ld", from + size);
	out = json_pack("{so ss}", "skus", page, "nextPageToken", next);
	return json_answer(c, 200, out);
}

static enum MHD_Result control(struct gceemu *m, struct MHD_Connection *c,
			       const char *url)
{
	const char *name = arg(c, "name"), *ev = arg(c, "event");
	const char *zone = arg(c, "zone"), *spot = arg(c, "spot");
	char buf[64];
	int n = 0;

	if (!strcmp(url, "/emu/preempt")) {
		const char *keep = arg(c, "keep_capacity");

		n = gceemu__preempt(m, name, !(keep && !strcmp(keep, "true")));
	} else if (!strcmp(url, "/emu/capacity") && zone && spot) {
		if (gceemu__set_capacity(m, zone, spot))
			return json_answer(c, 400, gceemu__error(
				400, "invalid", "/emu/capacity: spot=none|plenty"));
		n = 1;
	} else if (!strcmp(url, "/emu/maintenance") && name && ev) {
		pthread_mutex_lock(&m->mu);
		struct emu_vm *v = gceemu__vm(m, name);

		if (v) {
			snprintf(v->maint, sizeof v->maint, "%s", ev);
			v->etag_mnt = ++m->etag_seq;
			pthread_cond_broadcast(&m->cv);
			n = 1;
		}
		pthread_mutex_unlock(&m->mu);
	}
	snprintf(buf, sizeof buf, "{\"affected\":%d}", n);
	return respond(c, 200, "application/json", buf, NULL, false);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct gceemu *m = cls;
	struct emuhttp_body *k = NULL;
	char prefix[128];
	size_t pl;
	int g = emuhttp_gather(con_cls, upload, upload_size, &k);

	(void)version;
	if (g <= 0)
		return g < 0 ? MHD_NO : MHD_YES;
	if (m->log) {
		fprintf(m->log, "%lld %s %s\n", (long long)sr_time_real_ns(),
			method, url);
		fflush(m->log);
	}
	if (k->too_big)
		return respond(c, 413, "text/plain", "body too large\n", NULL, false);
	if (!strncmp(url, "/meta/", 6))
		return meta(m, c, url);
	if (!strcmp(url, "/token") && !strcmp(method, "POST"))
		return token(m, c, k->buf ? k->buf : "");
	if (!strncmp(url, "/emu/", 5) && !strcmp(method, "POST"))
		return control(m, c, url);
	if (!strcmp(url, "/v1/services/" GCPBILL_SERVICE "/skus") &&
	    !strcmp(method, "GET")) {
		if (!bearer_ok(m, c))
			return json_answer(c, 401, gceemu__error(
				401, "authError", "Request had invalid "
				"authentication credentials."));
		return billing(m, c);
	}
	snprintf(prefix, sizeof prefix, "/compute/v1/projects/%s/", m->project);
	pl = strlen(prefix);
	if (!strncmp(url, prefix, pl)) {
		struct emu_query q = {
			.request_id = arg(c, "requestId"),
			.filter = arg(c, "filter"),
			.page_token = arg(c, "pageToken"),
			.max_results = arg(c, "maxResults"),
		};
		json_t *out = NULL;
		int status = 500;

		if (!bearer_ok(m, c))
			return json_answer(c, 401, gceemu__error(
				401, "authError", "Request had invalid "
				"authentication credentials."));
		gceemu__compute(m, method, url + pl, &q, k->buf, k->len, &status,
				&out);
		return json_answer(c, status, out);
	}
	return json_answer(c, 404, gceemu__error(404, "notFound", "%s %s",
						 method, url));
}

/* ---- start, stop, controls ----------------------------------------------- */

int gceemu__set_capacity(struct gceemu *m, const char *zone, const char *val)
{
	int rc;

	if (strcmp(val, "none") && strcmp(val, "plenty"))
		return -EINVAL;
	pthread_mutex_lock(&m->mu);
	rc = emuhttp_cap_set(&m->no_cap, zone, val);
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int gceemu_preempt(struct gceemu *m, const char *name)
{
	return gceemu__preempt(m, name, true);
}

int gceemu__preempt(struct gceemu *m, const char *name, bool reclaim)
{
	int n = 0;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->nvms; i++) {
		struct emu_vm *v = &m->vms[i];

		if (v->gone || !v->spot || v->preempted ||
		    (name && strcmp(v->name, name)))
			continue;
		gceemu__preempt_vm(m, v);
		if (reclaim)
			emuhttp_cap_set(&m->no_cap, v->zone, "none");
		n++;
	}
	pthread_mutex_unlock(&m->mu);
	return n;
}

const char *gceemu_url(const struct gceemu *m)
{
	return m->url;
}

int gceemu_start(const struct gceemu_opts *o, struct gceemu **out,
		 struct sr_err *e)
{
	struct gceemu *m = calloc(1, sizeof *m);
	int rc;

	*out = NULL;
	if (!m)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&m->mu, NULL);
	emuhttp_cond_init(&m->cv);
	snprintf(m->project, sizeof m->project, "%s", o->project ? o->project
		 : "spotrun-emu");
	snprintf(m->region, sizeof m->region, "%s", o->region ? o->region
		 : "us-central1");
	m->time_scale = o->conf.time_scale > 0 ? o->conf.time_scale : 1;
	m->notice_s = o->notice_s > 0 ? o->notice_s : 30;
	m->t0_mono_ns = sr_time_mono_ns();
	if (o->request_log) {
		m->log = fopen(o->request_log, "ae");
		if (!m->log) {
			rc = sr_err_set(e, -errno, "gce emulator: request log %s: %s",
					o->request_log, strerror(errno));
			goto fail;
		}
	}
	if (o->billing_skus) {
		json_error_t je;
		json_t *doc = json_load_file(o->billing_skus, 0, &je);

		m->skus = json_incref(json_object_get(doc, "skus"));
		json_decref(doc);
		if (!json_is_array(m->skus)) {
			rc = sr_err_set(e, -SR_EPARSE, "gce emulator: billing SKUs "
					"%s: line %d: %s", o->billing_skus,
					je.line, doc ? "expected {\"skus\": "
					"[...]}" : je.text);
			goto fail;
		}
	}
	rc = emuhttp_open("gce emulator", &o->conf, &m->no_cap, on_request, m,
			  m->work_dir, &m->mkt, &m->daemon, m->url, e);
	if (rc)
		goto fail;
	if (pthread_create(&m->clock, NULL, gceemu__clock, m)) {
		rc = sr_err_set(e, -EAGAIN, "gce emulator: cannot start a thread");
		goto fail;
	}
	m->clock_started = true;
	*out = m;
	return 0;
fail:
	gceemu_stop(m);
	return rc;
}

void gceemu_stop(struct gceemu *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stopping = true; /* hanging GETs answer */
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	if (m->daemon)
		MHD_stop_daemon(m->daemon);
	if (m->clock_started)
		pthread_join(m->clock, NULL);
	for (size_t i = 0; i < m->nvms; i++)
		json_decref(m->vms[i].labels);
	emuhttp_cap_free(m->no_cap);
	localmkt_free(m->mkt);
	json_decref(m->skus);
	if (m->log)
		fclose(m->log);
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
