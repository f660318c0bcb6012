/*
 * cmd_gpus.c - `spotrun gpus [NAME[:COUNT]]`: for each GPU, count per node
 * and cloud, the cheapest on-demand and the cheapest spot price in the
 * catalog, each with its region and instance type (like `sky show-gpus`).
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "cliopt.h"
#include "clijob.h"
#include "market/catalog.h"

struct best {
	const struct catalog_offering *o; /* borrowed from the catalog */
	sr_micros price;
};

struct row {
	char gpu[24];
	double count;
	char cloud[16];
	struct best od, spot;
};

static void usage(void)
{
	printf("usage: spotrun gpus [NAME[:COUNT]] [--cloud C] [--region R] [--data DIR]\n"
	       "                    [--prices MODE] [--config FILE] [--json]\n\n"
	       "For each GPU, per-node count and cloud: the cheapest on-demand and the\n"
	       "cheapest spot price in the catalog, with the region and instance type\n"
	       "that offer it.  Prices are USD per instance-hour.\n\n"
	       "  NAME[:COUNT]   only this GPU (H100), or this GPU and count (H100:8)\n"
	       "  --cloud C      only this cloud (aws, gcp, azure, lambda, coreweave)\n"
	       "  --region R     only this region\n"
	       "  --data DIR     data directory (default $SPOTRUN_DATA or ./data)\n"
	       "  --prices MODE  auto (default): each cloud's live price feed where its\n"
	       "                 credentials are found (spotrun check), the bundled\n"
	       "                 catalog otherwise; live: fail without a feed;\n"
	       "                 catalog: never ask a feed.  The output says which\n"
	       "  --config FILE  the daemon's configuration (default $SPOTRUN_CONFIG):\n"
	       "                 the regions of its providers: section are priced\n"
	       "  --json         one JSON document on stdout\n\n"
	       "An unknown GPU, count, cloud or region is an error (exit 2) naming the\n"
	       "nearest valid values.  `spotrun catalog` lists every offering.\n");
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int r = strcasecmp(x->gpu, y->gpu);
	sr_micros px, py;

	if (r)
		return r;
	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	px = x->spot.o ? x->spot.price : x->od.o ? x->od.price : INT64_MAX;
	py = y->spot.o ? y->spot.price : y->od.o ? y->od.price : INT64_MAX;
	if (px != py)
		return px < py ? -1 : 1;
	return strcmp(x->cloud, y->cloud);
}

static void take(struct best *b, const struct catalog_offering *o, sr_micros p)
{
	if (p < 0)
		return;
	if (!b->o || p < b->price) {
		b->o = o;
		b->price = p;
	}
}

/* Group the matching offerings into rows; *out is malloc'd. */
static int group(const struct catalog *cat, const size_t *idx, size_t n,
		 struct row **out, size_t *nout)
{
	struct row *rows = calloc(n ? n : 1, sizeof *rows);
	size_t k = 0;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct catalog_offering *o = &cat->items[idx[i]];
		struct row *r = NULL;

		for (size_t j = 0; j < k && !r; j++) {
			if (!strcasecmp(rows[j].gpu, o->accelerator) &&
			    fabs(rows[j].count - o->accel_count) < 1e-9 &&
			    !strcmp(rows[j].cloud, o->cloud))
				r = &rows[j];
		}
		if (!r) {
			r = &rows[k++];
			snprintf(r->gpu, sizeof r->gpu, "%s", o->accelerator);
			snprintf(r->cloud, sizeof r->cloud, "%s", o->cloud);
			r->count = o->accel_count;
		}
		take(&r->od, o, o->ondemand_per_h);
		take(&r->spot, o, o->spot_per_h);
	}
	qsort(rows, k, sizeof *rows, cmp_row);
	*out = rows;
	*nout = k;
	return 0;
}

static json_t *best_json(const struct best *b)
{
	json_t *j;

	if (!b->o)
		return json_null();
	j = json_object();
	json_object_set_new(j, "price_per_h_micros", json_integer(b->price));
	json_object_set_new(j, "region", json_string(b->o->region));
	json_object_set_new(j, "zone", json_string(b->o->zone));
	json_object_set_new(j, "instance_type", json_string(b->o->instance_type));
	return j;
}

static void best_str(const struct best *b, char *buf, size_t n)
{
	if (!b->o)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.3f  %s", sr_money_to_usd(b->price), b->o->region);
}

/* The table; column widths follow the longest region shown. */
static void print_text(const struct row *rows, size_t n)
{
	int wo = 21, ws = 16;
	char od[64], sp[64];

	for (size_t i = 0; i < n; i++) {
		best_str(&rows[i].od, od, sizeof od);
		best_str(&rows[i].spot, sp, sizeof sp);
		wo = (int)strlen(od) > wo ? (int)strlen(od) : wo;
		ws = (int)strlen(sp) > ws ? (int)strlen(sp) : ws;
	}
	printf("%-10s %5s  %-9s  %-*s  %-*s  %s\n", "GPU", "QTY", "CLOUD", wo,
	       "ON-DEMAND $/H  REGION", ws, "SPOT $/H  REGION",
	       "INSTANCE (SPOT, ELSE ON-DEMAND)");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		best_str(&r->od, od, sizeof od);
		best_str(&r->spot, sp, sizeof sp);
		printf("%-10s %5g  %-9s  %-*s  %-*s  %s\n", r->gpu, r->count, r->cloud,
		       wo, od, ws, sp,
		       r->spot.o ? r->spot.o->instance_type : r->od.o->instance_type);
	}
}

static int print_rows(const struct row *rows, size_t n, int json,
		      const struct prov_price_report *rep)
{
	if (json) {
		json_t *arr = json_array(), *doc = json_object();
		char *s;

		json_object_set_new(doc, "price_sources",
				    prov_price_report_json(rep));
		for (size_t i = 0; i < n; i++) {
			json_t *j = json_object();

			json_object_set_new(j, "gpu", json_string(rows[i].gpu));
			json_object_set_new(j, "count", json_real(rows[i].count));
			json_object_set_new(j, "cloud", json_string(rows[i].cloud));
			json_object_set_new(j, "ondemand", best_json(&rows[i].od));
			json_object_set_new(j, "spot", best_json(&rows[i].spot));
			json_array_append_new(arr, j);
		}
		json_object_set_new(doc, "gpus", arr);
		s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
		json_decref(doc);
		if (!s)
			return -ENOMEM;
		printf("%s\n", s);
		free(s);
		return 0;
	}
	prov_price_report_print(rep, stdout);
	print_text(rows, n);
	return 0;
}

enum { OPT_CLOUD = CLI_KEY_LONG, OPT_REGION, OPT_DATA, OPT_PRICES,
       OPT_CONFIG };

static const struct cli_optdef gpus_defs[] = {
	{ "cloud", OPT_CLOUD, CLI_ARG },
	{ "region", OPT_REGION, CLI_ARG },
	{ "data", OPT_DATA, CLI_ARG },
	{ "prices", OPT_PRICES, CLI_ARG },
	{ "config", OPT_CONFIG, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static int cmd_gpus(int argc, char **argv)
{
	struct cli_opts p = {
		.cmd = "gpus", .defs = gpus_defs, .usage = usage,
		.flags = CLI_OPT_JSON, .max_operands = 1,
	};
	struct catalog cat;
	struct catalog_filter f = { 0 };
	struct sr_err err = { 0 };
	struct row *rows = NULL;
	char accel[24];
	const char *data = NULL, *prices = NULL, *config = NULL;
	struct prov_price_report rep = { 0 };
	size_t *idx = NULL, n = 0, nrows = 0;
	int json, c, rc = CLI_FAIL;

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		if (c == OPT_CLOUD)
			f.cloud = p.arg;
		else if (c == OPT_REGION)
			f.region = p.arg;
		else if (c == OPT_PRICES)
			prices = p.arg;
		else if (c == OPT_CONFIG)
			config = p.arg;
		else
			data = p.arg;
	}
	if (c < 0)
		return p.status;
	json = p.json;
	if (p.n_operands) {
		const char *a = p.operand[0];

		if (catalog_parse_accel(a, accel, sizeof accel, &f.accel_count))
			return cli_usage_error("gpus", "'%s': expected NAME or NAME:COUNT", a);
		f.accelerator = accel;
		if (!strchr(a, ':'))
			f.accel_count = 0;
	}
	if (cli_load_catalog("gpus", data, &cat))
		goto out;
	if ((f.accelerator && catalog_check_gpu(&cat, f.accelerator, f.accel_count, &err)) ||
	    catalog_check_place(&cat, f.cloud, f.region, NULL, NULL, 0, &err)) {
		fprintf(stderr, "spotrun gpus: %s\n", sr_err_str(&err, err.code));
		rc = err.code == -EINVAL ? CLI_USAGE : CLI_FAIL;
		goto out;
	}
	c = cli_live_prices("gpus", prices, config, f.cloud, 1, &cat,
			    &rep);
	if (c) {
		rc = c == 2 ? CLI_USAGE : CLI_FAIL;
		goto out;
	}
	if (catalog_select(&cat, &f, &idx, &n) || group(&cat, idx, n, &rows, &nrows) ||
	    print_rows(rows, nrows, json, &rep)) {
		fprintf(stderr, "spotrun gpus: out of memory\n");
		goto out;
	}
	if (!nrows && !json)
		printf("no offering matches\n");
	rc = CLI_OK;
out:
	prov_price_report_free(&rep);
	free(rows);
	free(idx);
	catalog_free(&cat);
	return rc;
}

CLI_COMMAND("gpus", "cheapest on-demand and spot price per GPU, count and cloud", cmd_gpus)
