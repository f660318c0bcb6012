/*
 * azprices.h - the Azure Retail Prices API (public, no credentials):
 * spot and pay-as-you-go prices per VM size in one region.
 *
 *   GET {base}/api/retail/prices?$filter=serviceName eq 'Virtual Machines'
 *       and armRegionName eq 'eastus' and priceType eq 'Consumption'
 *       and (armSkuName eq 'A' or armSkuName eq 'B' ...)
 *     -> {"Items": [{"armSkuName": "Standard_ND96isr_H100_v5",
 *                    "armRegionName": "eastus", "retailPrice": 98.32,
 *                    "unitOfMeasure": "1 Hour", "skuName": "ND96isr H100
 *                    v5 Spot", "meterName": "...", "productName":
 *                    "Virtual Machines NDisrH100v5 Series", "type":
 *                    "Consumption", ...}, ...],
 *         "NextPageLink": "...&$skip=100" | null}
 *
 * An item is Linux unless its productName says Windows; its skuName
 * ending in " Spot" makes it the spot price, " Low Priority" is skipped
 * (the retired Batch priority), anything else is pay-as-you-go.  Only
 * "1 Hour" units count.  Pages are followed while NextPageLink stays on
 * base (at most 100 pages).
 */
#ifndef SR_AZURE_AZPRICES_H
#define SR_AZURE_AZPRICES_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"

#define AZPRICES_DEFAULT_URL "https://prices.azure.com"

struct azprice {
	char sku[48];              /* armSkuName (cloud_offering.instance_type) */
	sr_micros spot_per_h;      /* -1 unknown */
	sr_micros ondemand_per_h;  /* -1 unknown */
};

/* One page: its Linux hourly prices of `region` merged into *v (one row
 * per sku; *n, *cap), *next the NextPageLink (malloc'd) or NULL.  0 or
 * -SR_EPARSE naming the field. */
int azprices_parse_page(const char *body, size_t len, const char *region,
			struct azprice **v, size_t *n, size_t *cap, char **next,
			struct sr_err *e);

/* Every page for region and the skus (nskus > 0): *out malloc'd. */
int azprices_fetch(const char *base, const char *region,
		   const char *const *skus, size_t nskus, struct azprice **out,
		   size_t *n, struct sr_err *e);

#endif
