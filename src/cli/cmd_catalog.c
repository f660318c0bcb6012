/*
 * cmd_catalog.c - `spotrun catalog`: list GPU offerings, cheapest first.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cliopt.h"
#include "clijob.h"
#include "market/catalog.h"

static void usage(void)
{
	printf("usage: spotrun catalog [--gpu NAME[:COUNT]] [--spot] [--cloud C]\n"
	       "                       [--region R] [--zone Z] [--limit N] [--data DIR]\n"
	       "                       [--json]\n\n"
	       "List GPU offerings from the SkyPilot catalog and data/offerings.csv,\n"
	       "cheapest first (by spot price with --spot, else by on-demand price).\n\n"
	       "  --gpu H100:8   accelerator name and per-node count (count optional)\n"
	       "  --spot         only offerings with a spot price\n"
	       "  --cloud C      aws, gcp, azure, lambda, coreweave\n"
	       "  --region R     exact region name\n"
	       "  --zone Z       zone ID (use1-az4) or AWS zone name (us-east-1a)\n"
	       "  --limit N      print at most N rows (default all)\n"
	       "  --data DIR     data directory (default $SPOTRUN_DATA or ./data)\n"
	       "  --json         one JSON document on stdout\n\n"
	       "Prices are USD per instance-hour; PREEMPT/24H is the expected number of\n"
	       "spot preemptions per node per day, with its kind (trace, table, default)\n"
	       "and RATE SOURCE the file it came from.  A GPU, count, cloud, region or\n"
	       "zone that the catalog does not have is an error (exit 2) naming the\n"
	       "nearest valid values.\n");
}

static void price_str(sr_micros m, char *buf, size_t n)
{
	if (m < 0)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.3f", sr_money_to_usd(m));
}

static json_t *offer_json(const struct catalog_offering *o)
{
	json_t *j = json_object();

	if (!j)
		return NULL;
	json_object_set_new(j, "cloud", json_string(o->cloud));
	json_object_set_new(j, "region", json_string(o->region));
	json_object_set_new(j, "zone", json_string(o->zone));
	json_object_set_new(j, "instance_type", json_string(o->instance_type));
	json_object_set_new(j, "accelerator", json_string(o->accelerator));
	json_object_set_new(j, "accel_count", json_real(o->accel_count));
	json_object_set_new(j, "ondemand_per_h_micros",
			    o->ondemand_per_h < 0 ? json_null() : json_integer(o->ondemand_per_h));
	json_object_set_new(j, "spot_per_h_micros",
			    o->spot_per_h < 0 ? json_null() : json_integer(o->spot_per_h));
	json_object_set_new(j, "reserved_per_h_micros",
			    o->reserved_per_h < 0 ? json_null() : json_integer(o->reserved_per_h));
	json_object_set_new(j, "hazard_per_h", json_real(o->hazard_per_h));
	json_object_set_new(j, "preempt_per_24h", json_real(o->hazard_per_h * 24.0));
	json_object_set_new(j, "hazard_source",
			    json_string(catalog_hazard_src_name(o->hazard_src)));
	json_object_set_new(j, "hazard_from", json_string(o->hazard_from));
	json_object_set_new(j, "network", json_string(catalog_net_name(o->net)));
	json_object_set_new(j, "source", json_string(o->source));
	return j;
}

/* Column widths follow the longest value shown, so long region and zone
 * names keep the table aligned. */
static void print_table(const struct catalog *cat, const size_t *idx, size_t n)
{
	int wr = 6, wz = 4, wi = 8, wg = 3, wp = 11;
	char pre[32], gpu[40];

	for (size_t i = 0; i < n; i++) {
		const struct catalog_offering *o = &cat->items[idx[i]];
		int k;

		k = (int)strlen(o->region);
		wr = k > wr ? k : wr;
		k = (int)strlen(o->zone);
		wz = k > wz ? k : wz;
		k = (int)strlen(o->instance_type);
		wi = k > wi ? k : wi;
		k = snprintf(gpu, sizeof gpu, "%s:%g", o->accelerator, o->accel_count);
		wg = k > wg ? k : wg;
		k = snprintf(pre, sizeof pre, "%.2f (%s)", o->hazard_per_h * 24,
			     catalog_hazard_src_name(o->hazard_src));
		wp = k > wp ? k : wp;
	}
	printf("%-9s %-*s %-*s %-*s %-*s %9s %9s %9s %-*s %-10s %s\n", "CLOUD", wr,
	       "REGION", wz, "ZONE", wi, "INSTANCE", wg, "GPU", "ONDEMAND", "SPOT",
	       "RESERVED", wp, "PREEMPT/24H", "NET", "RATE SOURCE");
	for (size_t i = 0; i < n; i++) {
		const struct catalog_offering *o = &cat->items[idx[i]];
		char od[24], sp[24], rs[24];

		price_str(o->ondemand_per_h, od, sizeof od);
		price_str(o->spot_per_h, sp, sizeof sp);
		price_str(o->reserved_per_h, rs, sizeof rs);
		snprintf(gpu, sizeof gpu, "%s:%g", o->accelerator, o->accel_count);
		if (o->hazard_src == CATALOG_HAZARD_NONE)
			snprintf(pre, sizeof pre, "-");
		else
			snprintf(pre, sizeof pre, "%.2f (%s)", o->hazard_per_h * 24,
				 catalog_hazard_src_name(o->hazard_src));
		printf("%-9s %-*s %-*s %-*s %-*s %9s %9s %9s %-*s %-10s %s\n", o->cloud,
		       wr, o->region, wz, o->zone[0] ? o->zone : "-", wi,
		       o->instance_type, wg, gpu, od, sp, rs, wp, pre,
		       catalog_net_name(o->net), o->hazard_from[0] ? o->hazard_from : "-");
	}
}

enum { OPT_SPOT = CLI_KEY_LONG, OPT_GPU, OPT_CLOUD, OPT_REGION, OPT_ZONE,
       OPT_DATA, OPT_LIMIT };

static const struct cli_optdef catalog_defs[] = {
	{ "spot", OPT_SPOT, CLI_NOARG },
	{ "gpu", OPT_GPU, CLI_ARG },
	{ "cloud", OPT_CLOUD, CLI_ARG },
	{ "region", OPT_REGION, CLI_ARG },
	{ "zone", OPT_ZONE, CLI_ARG },
	{ "data", OPT_DATA, CLI_ARG },
	{ "limit", OPT_LIMIT, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_catalog(int argc, char **argv)
{
	struct cli_opts p = {
		.cmd = "catalog", .defs = catalog_defs, .usage = usage,
		.flags = CLI_OPT_JSON,
	};
	struct catalog cat;
	struct catalog_filter f = { 0 };
	struct sr_err err = { 0 };
	char accel[24], zone_id[40];
	const char *data = NULL, *zone = NULL;
	size_t *idx = NULL, n = 0;
	long limit = 0;
	int json, c, rc = CLI_FAIL;

	catalog_init(&cat);
	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		const char *v = p.arg;
		char *end;

		switch (c) {
		case OPT_SPOT:
			f.spot_only = 1;
			break;
		case OPT_GPU:
			if (catalog_parse_accel(v, accel, sizeof accel, &f.accel_count))
				return cli_opts_error(&p, "--gpu '%s': expected NAME or NAME:COUNT", v);
			f.accelerator = accel;
			if (!strchr(v, ':'))
				f.accel_count = 0;
			break;
		case OPT_CLOUD:
			f.cloud = v;
			break;
		case OPT_REGION:
			f.region = v;
			break;
		case OPT_ZONE:
			zone = v;
			break;
		case OPT_DATA:
			data = v;
			break;
		default: /* OPT_LIMIT */
			limit = strtol(v, &end, 10);
			if (*end || end == v || limit < 0)
				return cli_opts_error(&p, "--limit '%s': expected a count", v);
			break;
		}
	}
	if (c < 0)
		return p.status;
	json = p.json;
	if (cli_load_catalog("catalog", data, &cat))
		goto out;
	if ((f.accelerator && catalog_check_gpu(&cat, f.accelerator, f.accel_count, &err)) ||
	    catalog_check_place(&cat, f.cloud, f.region, zone, zone_id, sizeof zone_id,
				&err)) {
		fprintf(stderr, "spotrun catalog: %s\n", sr_err_str(&err, err.code));
		rc = err.code == -EINVAL ? CLI_USAGE : CLI_FAIL;
		goto out;
	}
	if (zone)
		f.zone = zone_id;
	if (catalog_select(&cat, &f, &idx, &n)) {
		fprintf(stderr, "spotrun catalog: out of memory\n");
		goto out;
	}
	if (limit > 0 && (size_t)limit < n)
		n = (size_t)limit;
	if (json) {
		json_t *arr = json_array(), *doc = json_object();
		char *s;

		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, offer_json(&cat.items[idx[i]]));
		json_object_set_new(doc, "offerings", arr);
		s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
		json_decref(doc);
		if (!s)
			goto out;
		printf("%s\n", s);
		free(s);
	} else {
		print_table(&cat, idx, n);
	}
	rc = CLI_OK;
out:
	free(idx);
	catalog_free(&cat);
	return rc;
}

CLI_COMMAND("catalog", "list GPU offerings, cheapest first", cmd_catalog)
