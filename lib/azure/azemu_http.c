/*
 * azemu_http.c - the Azure emulator's HTTP side (cloud/emuhttp.h):
 * routing, Entra's token endpoint, ARM's authentication, api-version and
 * throttling, the Retail Prices API, each VM's IMDS, the tests' controls
 * and record, start and stop (azemu.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "azure/arm.h"
#include "cloud/emuhttp.h"
#include "common/random.h"
#include "common/sigv4.h"
#include "common/timeutil.h"
#include "azemu_int.h"

#define TOKEN_SUFFIX "/oauth2/v2.0/token"
#define ASSERTION_TYPE "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

static const char *hdr(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, k);
}

void azemu__token_new(struct azemu *m, char tok[48])
{
	char hex[33];

	sr_random_hex(hex, 16);
	snprintf(tok, 48, "azemu-%s", hex);
	snprintf(m->tokens[m->ntokens % AZ_MAX_TOKENS], sizeof m->tokens[0],
		 "%s", tok);
	m->ntokens++;
}

/* ---- Entra --------------------------------------------------------------- */

/* A client assertion as Entra checks it (but its signature: the emulator
 * holds no certificate): PS256 or RS256, aud a token endpoint, iss = sub
 * = the client, exp after now. */
static const char *assertion_bad(const char *jwt, const char *client)
{
	json_t *h = NULL, *cl = NULL;
	const char *why = NULL, *alg, *aud, *iss;
	json_int_t exp;

	if (emuhttp_jwt(jwt, &h, &cl))
		return "AADSTS50027: the client_assertion is not a JWT";
	alg = json_string_value(json_object_get(h, "alg"));
	aud = json_string_value(json_object_get(cl, "aud"));
	iss = json_string_value(json_object_get(cl, "iss"));
	exp = json_integer_value(json_object_get(cl, "exp"));
	if (!alg || (strcmp(alg, "PS256") && strcmp(alg, "RS256")))
		why = "AADSTS5002730: alg is not PS256 or RS256";
	else if (!aud || strlen(aud) < strlen(TOKEN_SUFFIX) ||
		 strcmp(aud + strlen(aud) - strlen(TOKEN_SUFFIX), TOKEN_SUFFIX))
		why = "AADSTS700212: aud is not a token endpoint";
	else if (!iss || strcmp(iss, client))
		why = "AADSTS700023: iss is not the client";
	else if (exp <= time(NULL))
		why = "AADSTS700024: the client assertion has expired";
	json_decref(h);
	json_decref(cl);
	return why;
}

static enum MHD_Result token(struct azemu *m, struct MHD_Connection *c,
			     const char *body)
{
	char *grant = emuhttp_form_get(body, "grant_type");
	char *scope = emuhttp_form_get(body, "scope");
	char *client = emuhttp_form_get(body, "client_id");
	char *secret = emuhttp_form_get(body, "client_secret");
	char *atype = emuhttp_form_get(body, "client_assertion_type");
	char *assert = emuhttp_form_get(body, "client_assertion");
	const char *why = NULL, *code = "invalid_request";
	char tok[48];

	if (!grant || strcmp(grant, "client_credentials"))
		why = "AADSTS70003: grant_type must be client_credentials";
	else if (!scope || strcmp(scope, ARM_SCOPE))
		why = "AADSTS70011: scope must be " ARM_SCOPE;
	else if (!client || !*client)
		why = "AADSTS900144: client_id is required";
	else if (!secret && !assert)
		why = "AADSTS7000216: client_secret or client_assertion is "
		      "required";
	else if (assert && (!atype || strcmp(atype, ASSERTION_TYPE)))
		why = "AADSTS700025: client_assertion_type must be "
		      ASSERTION_TYPE;
	else if (assert && (why = assertion_bad(assert, client)))
		code = "invalid_client";
	if (secret)
		explicit_bzero(secret, strlen(secret));
	free(grant);
	free(scope);
	free(client);
	free(secret);
	free(atype);
	free(assert);
	if (why)
		return emuhttp_json(c, 400, json_pack("{ss ss}", "error", code,
						      "error_description", why),
				    NULL);
	pthread_mutex_lock(&m->mu);
	azemu__token_new(m, tok);
	pthread_mutex_unlock(&m->mu);
	return emuhttp_json(c, 200, json_pack("{ss si si ss}", "token_type",
					      "Bearer", "expires_in", 3599,
					      "ext_expires_in", 3599,
					      "access_token", tok), NULL);
}

static bool bearer_ok(struct azemu *m, struct MHD_Connection *c)
{
	const char *h = hdr(c, "Authorization");
	bool ok = false;

	if (!h || strncmp(h, "Bearer ", 7))
		return false;
	for (size_t i = 0; i < AZ_MAX_TOKENS && i < m->ntokens; i++)
		ok |= strcmp(m->tokens[i], h + 7) == 0;
	return ok;
}

/* ---- the Retail Prices API ----------------------------------------------- */

static void price_items(struct azemu *m, const char *filter, json_t *items)
{
	double now = (double)(sr_time_mono_ns() - m->t0_mono_ns) / 1e9 *
		     m->time_scale;
	struct cloud_offering o;
	char q[64], short_[48], sku[80];

	for (size_t p = 0; p < localmkt_npools(m->mkt); p++) {
		const char *s;

		if (localmkt_describe(m->mkt, (int)p, now, &o) ||
		    strcmp(o.cloud, "azure") || strcmp(o.region, m->location))
			continue;
		snprintf(q, sizeof q, "'%s'", o.instance_type);
		if (!strstr(filter, q))
			continue;
		s = strncmp(o.instance_type, "Standard_", 9) ? o.instance_type :
		    o.instance_type + 9;
		snprintf(short_, sizeof short_, "%.47s", s);
		for (char *t = short_; *t; t++)
			*t = *t == '_' ? ' ' : *t;
		for (int k = 0; k < 4; k++) {
			static const char *const suffix[] = { " Spot", "",
				" Low Priority", "" };
			sr_micros mu = k == 0 ? o.spot_per_h : k == 2 ?
				       o.ondemand_per_h / 5 : k == 3 ?
				       o.ondemand_per_h * 2 : o.ondemand_per_h;
			double usd = (double)mu / 1e6;

			if (mu < 0)
				continue;
			snprintf(sku, sizeof sku, "%s%s", short_, suffix[k]);
			json_array_append_new(items, json_pack(
				"{ss sf sf ss ss ss ss ss ss ss ss ss}",
				"currencyCode", "USD", "retailPrice", usd,
				"unitPrice", usd, "armRegionName", m->location,
				"location", "US East", "armSkuName",
				o.instance_type, "skuName", sku, "meterName", sku,
				"productName", k == 3 ? "Virtual Machines Series "
				"Windows" : "Virtual Machines Series",
				"serviceName", "Virtual Machines",
				"unitOfMeasure", "1 Hour", "type", "Consumption"));
		}
	}
}

static enum MHD_Result prices(struct azemu *m, struct MHD_Connection *c)
{
	const char *filter = arg(c, "$filter"), *skip = arg(c, "$skip");
	size_t from = skip ? strtoul(skip, NULL, 10) : 0, n;
	json_t *items = json_array(), *page = json_array(), *out;
	char *enc = NULL, next[1200];

	if (!filter)
		filter = "";
	pthread_mutex_lock(&m->mu);
	price_items(m, filter, items);
	pthread_mutex_unlock(&m->mu);
	n = json_array_size(items);
	for (size_t i = from; i < n && i < from + (size_t)m->page; i++)
		json_array_append(page, json_array_get(items, i));
	out = json_pack("{ss si so}", "BillingCurrency", "USD", "Count",
			(int)json_array_size(page), "Items", page);
	if (from + (size_t)m->page < n &&
	    (enc = sr_sigv4_uri_encode(filter, strlen(filter), 0))) {
		snprintf(next, sizeof next, "%s/api/retail/prices?$filter=%s"
			 "&$skip=%zu", m->url, enc, from + (size_t)m->page);
		json_object_set_new(out, "NextPageLink", json_string(next));
	} else {
		json_object_set_new(out, "NextPageLink", json_null());
	}
	free(enc);
	json_decref(items);
	return emuhttp_json(c, 200, out, NULL);
}

/* ---- IMDS ---------------------------------------------------------------- */

static enum MHD_Result imds(struct azemu *m, struct MHD_Connection *c,
			    const char *url, const char *method,
			    const char *body)
{
	const char *rest = url + 6, *slash = strchr(rest, '/'); /* "/imds/" */
	const char *md = hdr(c, "Metadata");
	char name[64], tok[48];
	json_t *out = NULL;
	int status = 404;

	if (!md || strcmp(md, "true"))
		return emuhttp_json(c, 400, json_pack(
			"{ss ss}", "error", "bad_request", "error_description",
			"Required metadata header not specified"), NULL);
	if (!slash || (size_t)(slash - rest) >= sizeof name)
		return emuhttp_json(c, 404, json_pack("{ss}", "error",
						      "not_found"), NULL);
	snprintf(name, sizeof name, "%.*s", (int)(slash - rest), rest);
	pthread_mutex_lock(&m->mu);
	if (!azemu__vm(m, name)) {
		out = json_pack("{ss}", "error", "not_found");
	} else if (!strcmp(slash, "/metadata/instance/compute/name")) {
		pthread_mutex_unlock(&m->mu);
		return emuhttp_respond(c, 200, "text/plain; charset=utf-8", name,
				       strlen(name), NULL);
	} else if (!strcmp(slash, "/metadata/scheduledevents")) {
		azemu__schedev(m, name, method, body, &status, &out);
	} else if (!strcmp(slash, "/metadata/identity/oauth2/token")) {
		azemu__token_new(m, tok);
		status = 200;
		out = json_pack("{ss ss ss ss}", "access_token", tok, "expires_in",
				"3599", "resource", arg(c, "resource") ?
				arg(c, "resource") : "", "token_type", "Bearer");
	} else {
		out = json_pack("{ss}", "error", "not_found");
	}
	pthread_mutex_unlock(&m->mu);
	if (!out)
		return emuhttp_respond(c, status, "text/plain", "", 0, NULL);
	return emuhttp_json(c, status, out, NULL);
}

/* ---- ARM ----------------------------------------------------------------- */

static enum MHD_Result arm(struct azemu *m, struct MHD_Connection *c,
			   const char *url, const char *method,
			   const struct emuhttp_body *k)
{
	const char *api = arg(c, "api-version");
	const char *hdrs[] = { "Retry-After", "1", NULL, NULL, NULL };
	char op[40], opurl[300];
	json_t *out = NULL;
	int status;

	pthread_mutex_lock(&m->mu);
	if (!bearer_ok(m, c)) {
		pthread_mutex_unlock(&m->mu);
		return emuhttp_json(c, 401, azemu__error(
			"InvalidAuthenticationToken", "The access token is "
			"invalid."), NULL);
	}
	if (m->throttle > 0) {
		m->throttle--;
		pthread_mutex_unlock(&m->mu);
		return emuhttp_json(c, 429, azemu__error(
			"TooManyRequests", "The request is being throttled as "
			"the limit has been reached for operation type - "
			"Read_ObservationWindow_00:05:00."), hdrs);
	}
	if (!api) {
		pthread_mutex_unlock(&m->mu);
		return emuhttp_json(c, 400, azemu__error(
			"MissingApiVersionParameter", "The api-version query "
			"parameter (?api-version=) is required for all "
			"requests."), NULL);
	}
	azemu__arm(m, method, url + strlen("/subscriptions/"), api,
		   arg(c, "$skiptoken"), k->buf, k->len, &status, &out, op);
	pthread_mutex_unlock(&m->mu);
	if (op[0]) {
		snprintf(opurl, sizeof opurl, "%s/subscriptions/sub/providers/"
			 "Microsoft.Compute/locations/%s/operations/%s?"
			 "api-version=%s", m->url, m->location, op, api);
		hdrs[2] = "Azure-AsyncOperation";
		hdrs[3] = opurl;
	} else if (!out || strcmp(method, "GET") || !json_object_get(out, "status")
		   || strcmp(json_string_value(json_object_get(out, "status")),
			     "InProgress")) {
		hdrs[0] = NULL; /* Retry-After only where there is more to wait */
	}
	if (!out)
		return emuhttp_respond(c, status, "application/json", "", 0, hdrs);
	return emuhttp_json(c, status, out, hdrs);
}

/* ---- the tests' controls and record --------------------------------------- */

json_t *azemu_state(struct azemu *m)
{
	static const char *const kn[] = { "nics", "disks", "ips" };
	json_t *out;

	pthread_mutex_lock(&m->mu);
	/* copies: the document is dumped after the lock is let go */
	out = json_pack("{s[] s[] s[] s[] so so so}", "vms", "nics", "disks",
			"ips", "acks", json_deep_copy(m->acks), "evicted",
			json_deep_copy(m->evicted), "noticed",
			json_deep_copy(m->noticed));

	for (size_t i = 0; out && i < m->nvms; i++) {
		const struct az_vm *v = &m->vms[i];

		if (!v->gone)
			json_array_append_new(json_object_get(out, "vms"), json_pack(
				"{ss ss ss sb so}", "name", v->name, "state",
				v->state, "size", v->size, "spot", v->spot,
				"tags", json_deep_copy(v->tags)));
	}
	for (size_t i = 0; out && i < m->nres; i++) {
		const struct az_res *r = &m->res[i];

		if (!r->gone)
			json_array_append_new(json_object_get(out, kn[r->kind]),
					      json_pack("{ss ss ss}", "name",
							r->name, "vm", r->vm,
							"nic", r->nic));
	}
	pthread_mutex_unlock(&m->mu);
	return out;
}

int azemu_event(struct azemu *m, const char *name, const char *type)
{
	struct az_vm *v;
	int rc = -SR_ENOTFOUND;

	pthread_mutex_lock(&m->mu);
	v = name ? azemu__vm(m, name) : NULL;
	if (v)
		rc = azemu__event(m, v, type ? type : "");
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int azemu_leak(struct azemu *m, const char *name)
{
	struct az_vm *v;

	pthread_mutex_lock(&m->mu);
	v = name ? azemu__vm(m, name) : NULL;
	if (v)
		azemu__vm_delete(m, v, true);
	pthread_mutex_unlock(&m->mu);
	return v != NULL;
}

static enum MHD_Result control(struct azemu *m, struct MHD_Connection *c,
			       const char *url, const char *method)
{
	const char *name = arg(c, "name"), *size = arg(c, "size");
	const char *spot = arg(c, "spot"), *n = arg(c, "n");
	const char *keep = arg(c, "keep_capacity");
	json_t *out = NULL;
	int affected = -1;

	if (!strcmp(method, "GET") && !strcmp(url, "/emu/state"))
		return emuhttp_json(c, 200, azemu_state(m), NULL);
	if (!strcmp(method, "GET") && !strcmp(url, "/emu/requests")) {
		pthread_mutex_lock(&m->mu);
		out = json_deep_copy(m->log);
		pthread_mutex_unlock(&m->mu);
		return emuhttp_json(c, 200, out, NULL);
	}
	if (!strcmp(url, "/emu/preempt"))
		affected = azemu_preempt(m, name, !(keep && !strcmp(keep, "true")));
	else if (!strcmp(url, "/emu/leak") && name)
		affected = azemu_leak(m, name) ? 1 : -1;
	else if (!strcmp(url, "/emu/event") && name)
		affected = azemu_event(m, name, arg(c, "type")) ? -1 : 1;
	pthread_mutex_lock(&m->mu);
	if (!strcmp(url, "/emu/capacity") && size && spot)
		affected = azemu__set_capacity(m, size, spot) ? -1 : 1;
	else if (!strcmp(url, "/emu/throttle") && n)
		affected = m->throttle = atoi(n) > 0 ? atoi(n) : 0;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	if (affected < 0)
		return emuhttp_json(c, 400, azemu__error(
			"InvalidControl", "%s %s: see azemu.h for the controls",
			method, url), NULL);
	return emuhttp_json(c, 200, json_pack("{si}", "affected", affected),
			    NULL);
}

static enum MHD_Result query_kv(void *cls, enum MHD_ValueKind kind,
				const char *key, const char *value)
{
	json_t *q = cls;

	(void)kind;
	json_object_set_new(q, key, json_string(value ? value : ""));
	return MHD_YES;
}

static void record(struct azemu *m, struct MHD_Connection *c, const char *url,
		   const char *method, const struct emuhttp_body *k)
{
	json_t *q = json_object();

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_kv, q);
	pthread_mutex_lock(&m->mu);
	if (json_array_size(m->log) >= AZ_MAX_LOG)
		json_array_remove(m->log, 0);
	json_array_append_new(m->log, json_pack(
		"{ss ss so ss#}", "method", method, "path", url, "query", q,
		"body", k->buf ? k->buf : "", k->len));
	pthread_mutex_unlock(&m->mu);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct azemu *m = cls;
	struct emuhttp_body *k = NULL;
	int g = emuhttp_gather(con_cls, upload, upload_size, &k);
	size_t ul = strlen(url), sl = strlen(TOKEN_SUFFIX);

	(void)version;
	if (g <= 0)
		return g < 0 ? MHD_NO : MHD_YES;
	if (k->too_big)
		return emuhttp_respond(c, 413, "text/plain", "body too large\n",
				       15, NULL);
	if (!strncmp(url, "/emu/", 5))
		return control(m, c, url, method);
	if (!strncmp(url, "/imds/", 6)) /* polled each second: not recorded */
		return imds(m, c, url, method, k->buf);
	record(m, c, url, method, k);
	if (ul > sl && !strcmp(url + ul - sl, TOKEN_SUFFIX) &&
	    !strcmp(method, "POST"))
		return token(m, c, k->buf ? k->buf : "");
	if (!strcmp(url, "/api/retail/prices") && !strcmp(method, "GET"))
		return prices(m, c);
	if (!strncmp(url, "/subscriptions/", 15))
		return arm(m, c, url, method, k);
	return emuhttp_json(c, 404, azemu__error("NotFound", "%s %s", method,
						 url), NULL);
}

/* ---- start and stop ------------------------------------------------------ */

int azemu_preempt(struct azemu *m, const char *name, bool reclaim)
{
	int n = 0;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->nvms; i++) {
		struct az_vm *v = &m->vms[i];

		if (v->gone || !v->spot || v->noticed ||
		    strcmp(v->state, "Succeeded") || (name && strcmp(v->name, name)))
			continue;
		azemu__notice(m, v);
		if (reclaim)
			azemu__set_capacity(m, v->size, "none");
		n++;
	}
	pthread_mutex_unlock(&m->mu);
	return n;
}

const char *azemu_url(const struct azemu *m)
{
	return m->url;
}

int azemu_start(const struct azemu_opts *o, struct azemu **out,
		struct sr_err *e)
{
	struct azemu *m = calloc(1, sizeof *m);
	int rc;

	*out = NULL;
	if (!m)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&m->mu, NULL);
	emuhttp_cond_init(&m->cv);
	snprintf(m->location, sizeof m->location, "%s", o->location ?
		 o->location : "eastus");
	m->time_scale = o->conf.time_scale > 0 ? o->conf.time_scale : 1;
	m->notice_s = o->notice_s > 0 ? o->notice_s : 30;
	m->boot_s = o->boot_s > 0 ? o->boot_s : 0.2;
	m->page = o->page > 0 ? o->page : 50;
	m->quota_vms = o->quota_vms;
	m->incarnation = 1;
	m->t0_mono_ns = sr_time_mono_ns();
	m->acks = json_array();
	m->evicted = json_array();
	m->noticed = json_object();
	m->log = json_array();
	rc = emuhttp_open("azure emulator", &o->conf, &m->cap, on_request, m,
			  m->work_dir, &m->mkt, &m->daemon, m->url, e);
	if (rc)
		goto fail;
	if (pthread_create(&m->clock, NULL, azemu__clock, m)) {
		rc = sr_err_set(e, -EAGAIN, "azure emulator: cannot start a "
				"thread");
		goto fail;
	}
	m->clock_started = true;
	*out = m;
	return 0;
fail:
	azemu_stop(m);
	return rc;
}

void azemu_stop(struct azemu *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stopping = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	if (m->daemon)
		MHD_stop_daemon(m->daemon);
	if (m->clock_started)
		pthread_join(m->clock, NULL);
	for (size_t i = 0; i < m->nvms; i++) {
		json_decref(m->vms[i].tags);
		json_decref(m->vms[i].hw);
		free(m->vms[i].script);
	}
	emuhttp_cap_free(m->cap);
	json_decref(m->acks);
	json_decref(m->evicted);
	json_decref(m->noticed);
	json_decref(m->log);
	localmkt_free(m->mkt);
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
