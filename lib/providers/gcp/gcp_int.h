/*
 * gcp_int.h - what the files of the gcp provider share.
 */
#ifndef SR_PROVIDERS_GCP_INT_H
#define SR_PROVIDERS_GCP_INT_H

#include <stddef.h>

#include "cloud/provider.h"
#include "gcp/gce.h"

/* A Compute client for region r (NULL: $CLOUDSDK_COMPUTE_REGION), its
 * name into region[0..rcap).  timeout_ms 0: the client's default. */
int gcp__open_client(const struct cloud_conf *conf,
		     const struct cloud_conf_region *r, long timeout_ms,
		     struct gce **out, char *region, size_t rcap,
		     struct sr_err *e);

/* The GCE acceleratorType of a catalog GPU name ("V100" ->
 * "nvidia-tesla-v100"), NULL when unknown. */
const char *gcp__accel_type(const char *gpu);

/* cloud_prov_def.check (gcp_check.c). */
int gcp__check(const struct cloud_conf *conf,
	       const struct cloud_conf_region *region, struct cloud_check *out,
	       struct sr_err *e);

/* cloud_prov_def.live_prices (gcp_prices.c): the Cloud Billing Catalog. */
int gcp__live_prices(const struct cloud_conf *conf,
		     const struct cloud_conf_region *region,
		     const struct cloud_price_ask *ask, size_t nask,
		     struct cloud_price_quote **out, size_t *n, char *feed,
		     size_t feedcap, struct sr_err *e);

#endif
