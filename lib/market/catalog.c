/*
 * catalog.c - the offering list: storage, selection, names, hazards.
 *
 * Loading lives in catalog_sky.c (SkyPilot CSVs) and catalog_offerings.c
 * (the headline table).  Hazards are per node-hour; a gang of n nodes is
 * interrupted at n times that rate (cost.c).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_csv.h"

void catalog_init(struct catalog *c)
{
	memset(c, 0, sizeof *c);
}

void catalog_free(struct catalog *c)
{
	if (!c)
		return;
	free(c->items);
	free(c->zones);
	memset(c, 0, sizeof *c);
}

int catalog_add(struct catalog *c, const struct catalog_offering *o)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct catalog_offering *v = realloc(c->items, cap * sizeof *v);

		if (!v)
			return -ENOMEM;
		c->items = v;
		c->cap = cap;
	}
	c->items[c->n++] = *o;
	return 0;
}

int catalog_parse_accel(const char *s, char *name, size_t n, double *count)
{
	const char *colon = strchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);
	double v = 1;

	if (len == 0 || len >= n)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
			return -EINVAL;
	}
	if (colon && (catalog__parse_num(colon + 1, &v) || v <= 0))
		return -EINVAL;
	memcpy(name, s, len);
	name[len] = '\0';
	*count = v;
	return 0;
}

static const char *const net_names[] = {
	[CATALOG_NET_UNKNOWN] = "unknown",
	[CATALOG_NET_ETHERNET] = "ethernet",
	[CATALOG_NET_RDMA] = "rdma",
	[CATALOG_NET_INFINIBAND] = "infiniband",
};

const char *catalog_net_name(enum catalog_net n)
{
	if ((unsigned)n > CATALOG_NET_INFINIBAND)
		return "unknown";
	return net_names[n];
}

int catalog_net_parse(const char *s, enum catalog_net *out)
{
	/* Accepted spellings beyond the canonical names. */
	static const struct { const char *s; enum catalog_net n; } alias[] = {
		{ "any", CATALOG_NET_UNKNOWN },  { "", CATALOG_NET_UNKNOWN },
		{ "eth", CATALOG_NET_ETHERNET }, { "tcp", CATALOG_NET_ETHERNET },
		{ "roce", CATALOG_NET_RDMA },    { "efa", CATALOG_NET_RDMA },
		{ "ib", CATALOG_NET_INFINIBAND },
	};

	for (int i = 0; i <= CATALOG_NET_INFINIBAND; i++) {
		if (!strcasecmp(s, net_names[i])) {
			*out = (enum catalog_net)i;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++) {
		if (!strcasecmp(s, alias[i].s)) {
			*out = alias[i].n;
			return 0;
		}
	}
	return -EINVAL;
}

const char *catalog_hazard_src_name(enum catalog_hazard_src s)
{
	switch (s) {
	case CATALOG_HAZARD_NONE: return "none";
	case CATALOG_HAZARD_DEFAULT: return "default";
	case CATALOG_HAZARD_TABLE: return "table";
	case CATALOG_HAZARD_TRACE: return "trace";
	}
	return "none";
}

double catalog_hazard_from_per24h(double per_24h)
{
	return per_24h > 0 ? per_24h / 24.0 : 0.0;
}

int catalog_hazard_from_band(const char *band, double *hazard_per_h)
{
	static const struct { const char *band; double f; } bands[] = {
		{ "<5%", 0.025 },    { "5-10%", 0.075 },  { "10-15%", 0.125 },
		{ "15-20%", 0.175 }, { ">20%", 0.25 },
	};

	for (size_t i = 0; i < sizeof bands / sizeof bands[0]; i++) {
		if (!strcmp(band, bands[i].band)) {
			*hazard_per_h = -log1p(-bands[i].f) / (30.0 * 24.0);
			return 0;
		}
	}
	return -EINVAL;
}

int catalog_hazard_from_trace(const int *avail, size_t n, double gap_s,
			      double *hazard_per_h)
{
	size_t up = 0, losses = 0;

	if (!avail || n == 0 || !(gap_s > 0))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!avail[i])
			continue;
		up++;
		if (i + 1 < n && !avail[i + 1])
			losses++;
	}
	if (up == 0)
		return -EINVAL;
	*hazard_per_h = (double)losses / ((double)up * gap_s / 3600.0);
	return 0;
}

/* ---- selection ---------------------------------------------------------- */

struct sort_ctx {
	const struct catalog *c;
	int by_spot;
};

static sr_micros sort_price(const struct catalog_offering *o, int by_spot)
{
	sr_micros p = by_spot ? o->spot_per_h : o->ondemand_per_h;

	if (p < 0)
		p = by_spot ? o->ondemand_per_h : o->spot_per_h;
	return p < 0 ? INT64_MAX : p;
}

static int cmp_offer(const void *a, const void *b, void *ud)
{
	const struct sort_ctx *s = ud;
	const struct catalog_offering *x = &s->c->items[*(const size_t *)a];
	const struct catalog_offering *y = &s->c->items[*(const size_t *)b];
	sr_micros px = sort_price(x, s->by_spot), py = sort_price(y, s->by_spot);
	int r;

	if (px != py)
		return px < py ? -1 : 1;
	r = strcmp(x->cloud, y->cloud);
	if (!r)
		r = strcmp(x->region, y->region);
	if (!r)
		r = strcmp(x->zone, y->zone);
	if (!r)
		r = strcmp(x->instance_type, y->instance_type);
	return r;
}

static int offer_matches(const struct catalog_offering *o,
			 const struct catalog_filter *f)
{
	if (f->accelerator && strcasecmp(o->accelerator, f->accelerator))
		return 0;
	if (f->accel_count > 0 && fabs(o->accel_count - f->accel_count) > 1e-9)
		return 0;
	if (f->spot_only && o->spot_per_h < 0)
		return 0;
	if (f->cloud && strcasecmp(o->cloud, f->cloud))
		return 0;
	if (f->region && strcmp(o->region, f->region))
		return 0;
	if (f->zone && strcmp(o->zone, f->zone))
		return 0;
	if (o->net < f->min_net)
		return 0;
	return 1;
}

int catalog_select(const struct catalog *c, const struct catalog_filter *f,
		   size_t **out, size_t *n_out)
{
	struct catalog_filter none = { 0 };
	struct sort_ctx sc = { c, 0 };
	size_t *idx = NULL, k = 0;

	*out = NULL;
	*n_out = 0;
	if (!f)
		f = &none;
	sc.by_spot = f->spot_only;
	idx = malloc((c->n ? c->n : 1) * sizeof *idx);
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		if (offer_matches(&c->items[i], f))
			idx[k++] = i;
	}
	qsort_r(idx, k, sizeof *idx, cmp_offer, &sc);
	*out = idx;
	*n_out = k;
	return 0;
}

/* ---- data directory ------------------------------------------------------ */

static int is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int catalog_find_data_dir(char *buf, size_t n)
{
	const char *env = getenv("SPOTRUN_DATA");
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t k;

	if (env && *env) {
		if (snprintf(buf, n, "%s", env) >= (int)n)
			return -ENAMETOOLONG;
		return 0;
	}
	if (is_dir("data/catalog")) {
		snprintf(buf, n, "data");
		return 0;
	}
	k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k > 0) {
		char *slash;

		exe[k] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		/* build/bin/spotrun -> ../../data; prefix/bin -> ../share */
		static const char *const rel[] = { "../../data", "../../../data",
						   "../share/spotrun/data" };
		for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
			char sub[PATH_MAX + 80];

			snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
			snprintf(sub, sizeof sub, "%s/catalog", cand);
			if (is_dir(sub)) {
				if (snprintf(buf, n, "%s", cand) >= (int)n)
					return -ENAMETOOLONG;
				return 0;
			}
		}
	}
	return -SR_ENOTFOUND;
}

int catalog_load_dir(struct catalog *c, const char *dir, struct sr_err *e)
{
	static const char *const clouds[] = { "aws", "gcp", "azure", "lambda" };
	char path[PATH_MAX];
	int rc = 0, loaded = 0;

	for (size_t i = 0; i < sizeof clouds / sizeof clouds[0]; i++) {
		snprintf(path, sizeof path, "%s/catalog/%s.csv", dir, clouds[i]);
		if (access(path, R_OK))
			continue;
		rc = catalog_load_skypilot(c, path, clouds[i], e);
		if (rc)
			return rc;
		loaded++;
	}
	snprintf(path, sizeof path, "%s/catalog/aws_zones.csv", dir);
	if (!access(path, R_OK)) {
		rc = catalog_load_zones(c, path, "aws", e);
		if (rc)
			return rc;
	}
	snprintf(path, sizeof path, "%s/offerings.csv", dir);
	if (!access(path, R_OK)) {
		rc = catalog_load_offerings(c, path, e);
		if (rc)
			return rc;
		loaded++;
	}
	if (!loaded)
		return sr_err_set(e, -SR_ENOTFOUND, "%s: no catalog files", dir);
	rc = catalog_load_trace_rates(c, dir, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < c->n; i++) {
		struct catalog_offering *o = &c->items[i];

		if (o->spot_per_h >= 0 && o->hazard_src == CATALOG_HAZARD_NONE) {
			o->hazard_per_h = catalog_hazard_from_per24h(
				CATALOG_DEFAULT_PREEMPT_PER_24H);
			o->hazard_src = CATALOG_HAZARD_DEFAULT;
			snprintf(o->hazard_from, sizeof o->hazard_from,
				 "default estimate (docs/market.md)");
		}
	}
	return 0;
}
