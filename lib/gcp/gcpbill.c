/*
 * gcpbill.c - the Cloud Billing Catalog API's Compute Engine SKUs as
 * per-unit rates, and a machine's price from them (gcpbill.h).
 */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/http.h"
#include "common/url.h"
#include "gcp/gcpbill.h"

#define MAX_PAGES 100
#define SPOT_PREFIX "Spot Preemptible "
#define RUNNING_IN " running in "

static bool ends_with(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);

	return n >= k && memcmp(s + n - k, suf, k) == 0;
}

/* The description's kind and name (before " running in "): 0, or 1 when
 * it is none of ours. */
static int classify(const char *desc, enum gcpbill_kind *kind, char *name,
		    size_t cap)
{
	const char *end = strstr(desc, RUNNING_IN);
	const char *p = desc;
	size_t n, w;

	if (!strncmp(p, SPOT_PREFIX, strlen(SPOT_PREFIX)))
		p += strlen(SPOT_PREFIX);
	if (!end || end < p)
		return 1;
	n = (size_t)(end - p);
	if (ends_with(p, n, " GPU")) {
		*kind = GCPBILL_GPU;
		n -= 4;
		if (n > 7 && !strncmp(p, "Nvidia ", 7)) {
			p += 7;
			n -= 7;
		}
		if (n > 6 && !strncmp(p, "Tesla ", 6)) {
			p += 6;
			n -= 6;
		}
		if (n == 0 || n >= cap)
			return 1;
		for (size_t i = 0; i < n; i++)
			name[i] = p[i] == ' ' ? '-' : p[i];
		name[n] = '\0';
		return 0;
	}
	if (ends_with(p, n, " Instance Core"))
		*kind = GCPBILL_CORE;
	else if (ends_with(p, n, " Instance Ram"))
		*kind = GCPBILL_RAM;
	else
		return 1;
	/* FAMILY: one word of a letter and digits ("A2", "N1", "C3D") */
	w = strcspn(p, " ");
	if (w < 2 || w >= cap || !isalpha((unsigned char)p[0]) ||
	    !isdigit((unsigned char)p[1]))
		return 1;
	for (size_t i = 0; i < w; i++) {
		if (!isalnum((unsigned char)p[i]))
			return 1;
		name[i] = (char)tolower((unsigned char)p[i]);
	}
	name[w] = '\0';
	return 0;
}

static bool in_region(json_t *regions, const char *region)
{
	size_t i;
	json_t *r;

	json_array_foreach(regions, i, r) {
		if (json_is_string(r) && !strcmp(json_string_value(r), region))
			return true;
	}
	return false;
}

/* The last tier's unitPrice of sku i in micro-dollars into *out, its
 * usageUnit checked against unit.  0 or -SR_EPARSE naming the field. */
static int unit_price(json_t *sku, size_t i, const char *unit, sr_micros *out,
		      struct sr_err *e)
{
	json_t *pe = json_object_get(json_array_get(json_object_get(
		sku, "pricingInfo"), 0), "pricingExpression");
	json_t *tiers = json_object_get(pe, "tieredRates");
	json_t *up = json_object_get(json_array_get(tiers, json_array_size(
		tiers) ? json_array_size(tiers) - 1 : 0), "unitPrice");
	const char *u = json_string_value(json_object_get(pe, "usageUnit"));
	const char *units = json_string_value(json_object_get(up, "units"));
	const char *cur = json_string_value(json_object_get(up, "currencyCode"));
	json_t *nanos = json_object_get(up, "nanos");
	char *endp = NULL;
	long long whole;

	if (!u || !up)
		return sr_err_set(e, -SR_EPARSE, "gcp billing: skus[%zu].pricingInfo"
				  "[0].pricingExpression: expected usageUnit and "
				  "tieredRates[].unitPrice", i);
	if (strcmp(u, unit))
		return sr_err_set(e, -SR_EPARSE, "gcp billing: skus[%zu]."
				  "pricingInfo[0].pricingExpression.usageUnit "
				  "'%s': expected '%s'", i, u, unit);
	if (cur && strcmp(cur, "USD"))
		return sr_err_set(e, -SR_EPARSE, "gcp billing: skus[%zu] unitPrice."
				  "currencyCode '%s': expected USD", i, cur);
	whole = units ? strtoll(units, &endp, 10) : 0;
	if ((units && (!*units || *endp)) || whole < 0 || whole > 1000000 ||
	    (nanos && !json_is_integer(nanos)) ||
	    json_integer_value(nanos) < 0 ||
	    json_integer_value(nanos) > 999999999)
		return sr_err_set(e, -SR_EPARSE, "gcp billing: skus[%zu] unitPrice:"
				  " expected units 0..1e6 and nanos 0..999999999",
				  i);
	*out = (sr_micros)whole * SR_MICROS_PER_USD +
	       (sr_micros)((json_integer_value(nanos) + 500) / 1000);
	return 0;
}

static bool have(const struct gcpbill_rate *v, size_t n, enum gcpbill_kind k,
		 const char *name, bool spot)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind == k && v[i].spot == spot && !strcmp(v[i].name, name))
			return true;
	}
	return false;
}

int gcpbill_parse_page(const char *body, size_t len, const char *region,
		       struct gcpbill_rate **v, size_t *n, size_t *cap,
		       char **next, struct sr_err *e)
{
	json_error_t je;
	json_t *doc = json_loadb(body, len, 0, &je), *skus, *sku;
	const char *tok;
	size_t i;
	int rc = 0;

	*next = NULL;
	if (!json_is_object(doc)) {
		json_decref(doc);
		return sr_err_set(e, -SR_EPARSE, "gcp billing: line %d: %s",
				  je.line, doc ? "expected an object" : je.text);
	}
	skus = json_object_get(doc, "skus");
	if (skus && !json_is_array(skus)) {
		rc = sr_err_set(e, -SR_EPARSE, "gcp billing: skus: expected an "
				"array");
		goto out;
	}
	json_array_foreach(skus, i, sku) {
		json_t *cat = json_object_get(sku, "category");
		const char *fam = json_string_value(json_object_get(
			cat, "resourceFamily"));
		const char *use = json_string_value(json_object_get(cat,
								    "usageType"));
		const char *desc = json_string_value(json_object_get(
			sku, "description"));
		struct gcpbill_rate r = { 0 };

		if (!desc || !fam || !use) {
			rc = sr_err_set(e, -SR_EPARSE, "gcp billing: skus[%zu]: "
					"expected description and category."
					"resourceFamily, usageType", i);
			goto out;
		}
		if (strcmp(fam, "Compute") || (strcmp(use, "OnDemand") &&
					       strcmp(use, "Preemptible")) ||
		    !in_region(json_object_get(sku, "serviceRegions"), region) ||
		    classify(desc, &r.kind, r.name, sizeof r.name))
			continue;
		r.spot = !strcmp(use, "Preemptible");
		rc = unit_price(sku, i, r.kind == GCPBILL_RAM ? "GiBy.h" : "h",
				&r.per_h, e);
		if (rc)
			goto out;
		if (have(*v, *n, r.kind, r.name, r.spot))
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 32;
			struct gcpbill_rate *nv = realloc(*v, nc * sizeof *nv);

			if (!nv) {
				rc = sr_err_set(e, -ENOMEM, "out of memory");
				goto out;
			}
			*v = nv;
			*cap = nc;
		}
		(*v)[(*n)++] = r;
	}
	tok = json_string_value(json_object_get(doc, "nextPageToken"));
	if (tok && *tok && !(*next = strdup(tok)))
		rc = sr_err_set(e, -ENOMEM, "out of memory");
out:
	json_decref(doc);
	return rc;
}

int gcpbill_fetch(const char *base, const char *token, const char *region,
		  struct gcpbill_rate **out, size_t *n, struct sr_err *e)
{
	const char *b = base && *base ? base : GCPBILL_DEFAULT_URL;
	struct gcpbill_rate *v = NULL;
	size_t nv = 0, cap = 0, bl = strlen(b);
	char url[2048], auth[4200], *next = NULL;
	const char *hdrs[] = { auth, NULL };
	int rc = 0;

	*out = NULL;
	*n = 0;
	while (bl > 0 && b[bl - 1] == '/')
		bl--;
	if (!sr_url_tls_or_loopback(b))
		return sr_err_set(e, -EINVAL, "gcp billing endpoint %s: https:// "
				  "expected (a token travels on it)", b);
	if ((size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s",
			     token) >= sizeof auth)
		return sr_err_set(e, -EINVAL, "gcp billing: token too long");
	for (int page = 0; rc == 0 && page < MAX_PAGES; page++) {
		struct sr_http_resp r = { 0 };
		char *enc = next ? curl_easy_escape(NULL, next, 0) : NULL;
		int k = snprintf(url, sizeof url, "%.*s/v1/services/" GCPBILL_SERVICE
				 "/skus?currencyCode=USD&pageSize=5000%s%s",
				 (int)bl, b, enc ? "&pageToken=" : "",
				 enc ? enc : "");

		curl_free(enc);
		free(next);
		next = NULL;
		if (k < 0 || (size_t)k >= sizeof url) {
			rc = sr_err_set(e, -ENOSPC, "gcp billing: URL too long");
			break;
		}
		rc = sr_http_request("GET", url, hdrs, NULL, 0, NULL, &r, e);
		if (rc == 0 && (r.status == 401 || r.status == 403))
			rc = sr_err_set(e, -EACCES, "gcp billing %s: HTTP %ld (the "
					"credentials may not read the Billing "
					"Catalog)", b, r.status);
		else if (rc == 0 && r.status != 200)
			rc = sr_err_set(e, -SR_EHTTP, "gcp billing %s: HTTP %ld", b,
					r.status);
		if (rc == 0)
			rc = gcpbill_parse_page(r.body, r.body_len, region, &v, &nv,
						&cap, &next, e);
		sr_http_resp_free(&r);
		if (!next)
			break;
	}
	explicit_bzero(auth, sizeof auth);
	free(next);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = nv;
	return 0;
}

static sr_micros rate(const struct gcpbill_rate *v, size_t n,
		      enum gcpbill_kind k, const char *name, bool spot)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind == k && v[i].spot == spot &&
		    !strcasecmp(v[i].name, name))
			return v[i].per_h;
	}
	return -1;
}

sr_micros gcpbill_price(const struct gcpbill_rate *v, size_t n,
			const char *machine_type, double vcpus, double mem_gib,
			const char *gpu, double count, bool spot)
{
	char fam[16];
	size_t w = machine_type ? strcspn(machine_type, "-") : 0;
	sr_micros core, ram, g = 0;

	if (w == 0 || w >= sizeof fam || !machine_type[w] || vcpus <= 0 ||
	    mem_gib <= 0)
		return -1;
	memcpy(fam, machine_type, w);
	fam[w] = '\0';
	core = rate(v, n, GCPBILL_CORE, fam, spot);
	ram = rate(v, n, GCPBILL_RAM, fam, spot);
	if (gpu && *gpu && count > 0) {
		char alt[40];

		g = rate(v, n, GCPBILL_GPU, gpu, spot);
		snprintf(alt, sizeof alt, "%s-80GB", gpu);
		if (g < 0)
			g = rate(v, n, GCPBILL_GPU, alt, spot);
		if (g < 0)
			return -1;
	}
	if (core < 0 || ram < 0)
		return -1;
	return (sr_micros)((double)core * vcpus + (double)ram * mem_gib +
			   (double)g * count + 0.5);
}
