/*
 * gcp_prices.c - `spotrun plan` / `spotrun gpus` live prices for GCP
 * (cloud_prov_def.live_prices): the Cloud Billing Catalog API's Compute
 * Engine SKUs (lib/gcp/gcpbill.h) of the region, each catalog machine
 * priced from its family's vCPU and memory rates and its GPUs', on demand
 * and spot.  The API wants credentials (the same as Compute's): without
 * them -SR_ENOTFOUND, no network call, and the catalog answers.
 *
 * Endpoint: providers.gcp.billing_endpoint, else
 * $CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBILLING (gcloud's override), else
 * https://cloudbilling.googleapis.com.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/gcpbill.h"
#include "providers/gcp/gcp_int.h"

int gcp__live_prices(const struct cloud_conf *conf,
		     const struct cloud_conf_region *region,
		     const struct cloud_price_ask *ask, size_t nask,
		     struct cloud_price_quote **out, size_t *n, char *feed,
		     size_t feedcap, struct sr_err *e)
{
	const char *base = conf ? cloud_conf_get(conf, region, NULL,
						 "billing_endpoint") : NULL;
	struct cloud_price_quote *q = calloc(nask + 1, sizeof *q);
	struct gcpbill_rate *v = NULL;
	struct gce *c = NULL;
	char reg[40], tok[GCPCRED_TOKEN_MAX];
	size_t nv = 0, nq = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!q)
		return sr_err_set(e, -ENOMEM, "out of memory");
	if (!base)
		base = getenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBILLING");
	if (!base || !*base)
		base = GCPBILL_DEFAULT_URL;
	rc = gcp__open_client(conf, region, 20000, &c, reg, sizeof reg, e);
	if (rc == 0)
		rc = gcpcred_token(gce_creds(c), tok, sizeof tok, NULL, e);
	if (rc == 0) {
		snprintf(feed, feedcap, "Cloud Billing Catalog API %s (services/"
			 GCPBILL_SERVICE "/skus) %s", base, reg);
		rc = gcpbill_fetch(base, tok, reg, &v, &nv, e);
	}
	explicit_bzero(tok, sizeof tok);
	for (size_t i = 0; rc == 0 && i < nask; i++) {
		const struct cloud_price_ask *a = &ask[i];
		struct cloud_price_quote *x = &q[nq];
		bool dup = false;

		if (strcmp(a->region, reg) || !a->instance_type[0])
			continue;
		for (size_t k = 0; k < nq; k++)
			dup |= !strcmp(q[k].instance_type, a->instance_type);
		if (dup)
			continue;
		x->spot_per_h = gcpbill_price(v, nv, a->instance_type, a->vcpus,
					      a->memory_gib, a->accelerator,
					      a->accel_count, true);
		x->ondemand_per_h = gcpbill_price(v, nv, a->instance_type,
						  a->vcpus, a->memory_gib,
						  a->accelerator, a->accel_count,
						  false);
		if (x->spot_per_h < 0 && x->ondemand_per_h < 0)
			continue;
		snprintf(x->region, sizeof x->region, "%s", reg);
		snprintf(x->instance_type, sizeof x->instance_type, "%s",
			 a->instance_type);
		nq++;
	}
	free(v);
	gce_close(c);
	if (rc) {
		free(q);
		return rc;
	}
	*out = q;
	*n = nq;
	return 0;
}
