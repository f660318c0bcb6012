/*
 * liveprice.h - the catalog repriced from each provider's live feed, for
 * `spotrun plan` and `spotrun gpus` (cloud_prov_def.live_prices).
 *
 * For every provider of the table with a live feed, the catalog's rows of
 * the cloud named like it are asked of the feed, in each region its
 * configuration names (or once, where its environment points); a quote
 * replaces the row's spot and on-demand price.  A provider without
 * credentials (-SR_ENOTFOUND) or whose feed fails leaves its rows at the
 * bundled catalog's prices, and the report says which and why: every
 * cloud of the catalog gets one source line.
 *
 * Modes: PROV_PRICES_AUTO (live where credentials exist), _CATALOG (no
 * feed asked), _LIVE (as auto, but a provider that cannot answer is an
 * error).
 */
#ifndef SR_PROVIDERS_LIVEPRICE_H
#define SR_PROVIDERS_LIVEPRICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "cloud/provider.h"
#include "market/catalog.h"

enum prov_prices_mode {
	PROV_PRICES_AUTO = 0,
	PROV_PRICES_CATALOG,
	PROV_PRICES_LIVE,
};

/* Where one cloud's prices came from. */
struct prov_price_src {
	char cloud[16];
	bool live;                 /* at least one row took a live quote */
	char feed[96];             /* the feed's name, "" catalog */
	size_t rows, quoted;       /* the cloud's rows; rows repriced */
	char why[SR_ERR_MSG_MAX];  /* why the catalog answers ("" live) */
};

struct prov_price_report {
	struct prov_price_src *v;  /* one per cloud of the catalog */
	size_t n;
};

/* "auto", "live", "catalog" -> *out; -EINVAL otherwise. */
int prov_prices_mode_parse(const char *s, enum prov_prices_mode *out);

/* Reprice cat's rows from the live feeds of table reg (NULL: the
 * registry) under cs's configuration (may be NULL or empty); only the
 * cloud `only` when not NULL (the others keep the catalog's prices).  Fills *rep
 * (prov_price_report_free).  0; in PROV_PRICES_LIVE mode -SR_ENOTFOUND
 * (or the feed's code) with *e naming the cloud that could not answer;
 * -ENOMEM. */
int prov_prices_apply(const struct cloud_prov_def *const *reg,
		      struct cloud_confs *cs, enum prov_prices_mode mode,
		      const char *only, struct catalog *cat, struct prov_price_report *rep,
		      struct sr_err *e);

/* Add to cat the offerings of every provider of reg (NULL: the
 * registry) that has its own pools (cloud_prov_def.own_offerings) and a
 * configuration in cs, read now, with their queue estimates for a job of
 * `nodes` nodes: committed rows (catalog_offering.committed) priced at
 * their committed price, reserved and on-demand alike.  0 or < 0 with
 * *e naming the provider. */
int prov_own_offerings_add(const struct cloud_prov_def *const *reg,
			   struct cloud_confs *cs, int nodes,
			   struct catalog *cat, struct sr_err *e);

/* "prices: aws live (EC2 DescribeSpotPriceHistory, 40 of 1118 rows),
 * gcp catalog (credentials missing: ...)" lines to f. */
void prov_price_report_print(const struct prov_price_report *rep, FILE *f);

/* [{"cloud","source":"live"|"catalog","feed","rows","quoted","why"}];
 * NULL on out of memory.  New reference. */
json_t *prov_price_report_json(const struct prov_price_report *rep);

void prov_price_report_free(struct prov_price_report *rep); /* NULL-safe */

#endif
