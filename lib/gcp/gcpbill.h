/*
 * gcpbill.h - Compute Engine's prices from the Cloud Billing Catalog API:
 * the per-unit rates of GPUs, vCPUs and memory in one region, on demand
 * and spot, and a machine's price from them.
 *
 *   GET {base}/v1/services/6F81-5844-456A/skus?currencyCode=USD
 *       &pageSize=5000[&pageToken=T]     (Authorization: Bearer token)
 *     -> {"skus": [{"description": "Spot Preemptible Nvidia L4 GPU running
 *                   in Americas",
 *                   "category": {"resourceFamily": "Compute",
 *                                "resourceGroup": "GPU",
 *                                "usageType": "Preemptible"},
 *                   "serviceRegions": ["us-central1", ...],
 *                   "pricingInfo": [{"pricingExpression": {
 *                       "usageUnit": "h", "tieredRates": [{
 *                         "startUsageAmount": 0, "unitPrice": {
 *                           "currencyCode": "USD", "units": "0",
 *                           "nanos": 223000000}}]}}]}, ...],
 *         "nextPageToken": "..." | ""}
 *
 * A SKU counts when its resourceFamily is Compute, its usageType is
 * OnDemand (on demand) or Preemptible (spot; commitments are skipped),
 * its serviceRegions name the region and its description, before
 * " running in ", is one of
 *   [Spot Preemptible ][Nvidia ][Tesla ]MODEL GPU      usageUnit h
 *   [Spot Preemptible ]FAMILY [Predefined ]Instance Core   h
 *   [Spot Preemptible ]FAMILY [Predefined ]Instance Ram    GiBy.h
 * (MODEL's spaces become '-': "A100 80GB" -> "A100-80GB"; FAMILY is the
 * machine family, "A2", "G2", "N1", lower-cased).  Its rate is the last
 * tier's unitPrice (units + nanos, USD).  The first SKU of each (kind,
 * name, spot) wins.  Pages are followed while nextPageToken is not empty
 * (at most 100).
 *
 * A machine's price: its family's Core rate x vCPUs + Ram rate x GiB +
 * its GPU's rate x count (catalog GPU name "H100" matches SKU "H100" or
 * "H100-80GB"), each part on demand or spot; -1 when a part has no rate.
 */
#ifndef SR_GCP_GCPBILL_H
#define SR_GCP_GCPBILL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "common/money.h"

#define GCPBILL_DEFAULT_URL "https://cloudbilling.googleapis.com"
#define GCPBILL_SERVICE "6F81-5844-456A" /* Compute Engine */

enum gcpbill_kind { GCPBILL_GPU, GCPBILL_CORE, GCPBILL_RAM };

struct gcpbill_rate {
	enum gcpbill_kind kind;
	char name[32];       /* GPU: "L4", "A100-80GB"; core, ram: "g2" */
	bool spot;
	sr_micros per_h;     /* per GPU, vCPU or GiB, an hour */
};

/* One page: its rates for region appended to *v (*n, *cap; the first of
 * each kind/name/spot kept), *next the nextPageToken (malloc'd) or NULL.
 * 0 or -SR_EPARSE naming the field (skus[i].pricingInfo...). */
int gcpbill_parse_page(const char *body, size_t len, const char *region,
		       struct gcpbill_rate **v, size_t *n, size_t *cap,
		       char **next, struct sr_err *e);

/* Every page for region: *out malloc'd.  base NULL: GCPBILL_DEFAULT_URL
 * (http only on loopback).  0, -EACCES (401/403), -SR_EHTTP, -SR_EPARSE. */
int gcpbill_fetch(const char *base, const char *token, const char *region,
		  struct gcpbill_rate **out, size_t *n, struct sr_err *e);

/* The hourly price of a machine of family ("g2-standard-4" -> "g2"), with
 * vcpus, mem_gib and count GPUs gpu (NULL or count 0: none); -1 when a
 * part has no rate. */
sr_micros gcpbill_price(const struct gcpbill_rate *v, size_t n,
			const char *machine_type, double vcpus, double mem_gib,
			const char *gpu, double count, bool spot);

#endif
