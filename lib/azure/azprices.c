/*
 * azprices.c - the Retail Prices API's pages (azprices.h).
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure/azpage.h"
#include "azure/azprices.h"
#include "common/http.h"

#define MAX_PAGES 100

static int suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

static struct azprice *row(struct azprice **v, size_t *n, size_t *cap,
			   const char *sku)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].sku, sku))
			return &(*v)[i];
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct azprice *g = realloc(*v, nc * sizeof *g);

		if (!g)
			return NULL;
		*v = g;
		*cap = nc;
	}
	memset(&(*v)[*n], 0, sizeof **v);
	snprintf((*v)[*n].sku, sizeof (*v)[*n].sku, "%s", sku);
	(*v)[*n].spot_per_h = (*v)[*n].ondemand_per_h = -1;
	return &(*v)[(*n)++];
}

int azprices_parse_page(const char *body, size_t len, const char *region,
			struct azprice **v, size_t *n, size_t *cap, char **next,
			struct sr_err *e)
{
	json_error_t je;
	json_t *doc = json_loadb(body ? body : "", len, 0, &je);
	json_t *items = json_object_get(doc, "Items"), *it;
	const char *nl = json_string_value(json_object_get(doc, "NextPageLink"));
	size_t i;
	int rc = 0;

	*next = NULL;
	if (!doc)
		return sr_err_set(e, -SR_EPARSE, "azure prices: line %d: %s",
				  je.line, je.text);
	if (!json_is_array(items)) {
		rc = sr_err_set(e, -SR_EPARSE, "azure prices: Items: expected an "
				"array");
		goto out;
	}
	json_array_foreach(items, i, it) {
		const char *sku = json_string_value(json_object_get(it, "armSkuName"));
		const char *reg = json_string_value(json_object_get(it,
							"armRegionName"));
		const char *unit = json_string_value(json_object_get(it,
							"unitOfMeasure"));
		const char *skun = json_string_value(json_object_get(it, "skuName"));
		const char *prod = json_string_value(json_object_get(it,
							"productName"));
		json_t *price = json_object_get(it, "retailPrice");
		struct azprice *p;

		if (!sku || !reg || !unit || !skun || !json_is_number(price) ||
		    strlen(sku) >= sizeof p->sku) {
			rc = sr_err_set(e, -SR_EPARSE, "azure prices: Items[%zu]: "
					"expected armSkuName, armRegionName, "
					"unitOfMeasure, skuName and retailPrice", i);
			goto out;
		}
		if (json_number_value(price) < 0 || json_number_value(price) > 1e6) {
			rc = sr_err_set(e, -SR_EPARSE, "azure prices: Items[%zu]."
					"retailPrice: expected 0 to 1e6", i);
			goto out;
		}
		if (strcmp(reg, region) || strcmp(unit, "1 Hour") ||
		    (prod && strstr(prod, "Windows")) ||
		    suffix(skun, " Low Priority"))
			continue;
		p = row(v, n, cap, sku);
		if (!p) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		if (suffix(skun, " Spot"))
			p->spot_per_h = sr_money_from_usd(json_number_value(price));
		else
			p->ondemand_per_h = sr_money_from_usd(json_number_value(price));
	}
	if (nl && *nl && !(*next = strdup(nl)))
		rc = sr_err_set(e, -ENOMEM, "out of memory");
out:
	json_decref(doc);
	return rc;
}

/* The first page's URL: the filter, url-encoded, into buf. */
static int first_url(const char *base, const char *region,
		     const char *const *skus, size_t nskus, char *buf, size_t cap,
		     struct sr_err *e)
{
	char filter[8192];
	char *enc;
	size_t k;
	int n;

	n = snprintf(filter, sizeof filter, "serviceName eq 'Virtual Machines' "
		     "and armRegionName eq '%s' and priceType eq 'Consumption' "
		     "and (", region);
	for (size_t i = 0; i < nskus && n > 0 && (size_t)n < sizeof filter; i++) {
		if (strchr(skus[i], '\''))
			return sr_err_set(e, -EINVAL, "azure prices: size '%s'",
					  skus[i]);
		k = (size_t)n;
		n += snprintf(filter + k, sizeof filter - k, "%sarmSkuName eq '%s'",
			      i ? " or " : "", skus[i]);
	}
	if (n < 0 || (size_t)n + 2 >= sizeof filter)
		return sr_err_set(e, -ENOSPC, "azure prices: too many sizes");
	strcat(filter, ")");
	enc = curl_easy_escape(NULL, filter, 0);
	if (!enc)
		return sr_err_set(e, -ENOMEM, "out of memory");
	n = snprintf(buf, cap, "%s/api/retail/prices?$filter=%s", base, enc);
	curl_free(enc);
	return n < 0 || (size_t)n >= cap ? sr_err_set(e, -ENOSPC, "azure prices: "
						      "URL too long") : 0;
}

int azprices_fetch(const char *base, const char *region,
		   const char *const *skus, size_t nskus, struct azprice **out,
		   size_t *n, struct sr_err *e)
{
	struct azprice *v = NULL;
	size_t nv = 0, cap = 0;
	char url[16384], *next = NULL;
	const char *b = base ? base : AZPRICES_DEFAULT_URL;
	int rc;

	*out = NULL;
	*n = 0;
	rc = first_url(b, region, skus, nskus, url, sizeof url, e);
	for (int page = 0; rc == 0 && page < MAX_PAGES; page++) {
		struct sr_http_resp r = { 0 };

		rc = sr_http_request("GET", url, NULL, NULL, 0, NULL, &r, e);
		if (rc == 0 && r.status != 200)
			rc = sr_err_set(e, -SR_EHTTP, "azure prices: HTTP %ld",
					r.status);
		if (rc == 0)
			rc = azprices_parse_page(r.body, r.body_len, region, &v, &nv,
						 &cap, &next, e);
		sr_http_resp_free(&r);
		if (rc || !next)
			break;
		rc = azpage_follow(url, sizeof url, &next, b);
		if (rc) {
			rc = sr_err_set(e, -SR_EPARSE, "azure prices: NextPageLink "
					"off %s", b);
			break;
		}
	}
	free(next);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = nv;
	return 0;
}
