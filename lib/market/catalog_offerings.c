/*
 * catalog_offerings.c - the headline offerings table (data/offerings.csv).
 *
 * One row per headline offering, columns by header name:
 *
 *   cloud, region, zone, instance_type, accelerator, accel_count
 *   ondemand_per_h, spot_per_h, reserved_per_h      $/h, empty = unknown
 *   preempt_per_24h   expected spot preemptions per node per 24 h, or
 *   preempt_band      an AWS Spot Advisor monthly band ("<5%" .. ">20%")
 *   network           ethernet | rdma | infiniband | unknown
 *   src_ondemand, src_spot, src_reserved, src_preempt, src_network
 *
 * Every non-empty value must name its source in the matching src_
 * column; a value without a source is an error, so the table cannot
 * silently grow unsourced numbers.
 *
 * Overlay: each row applies to every offering already loaded with the
 * same cloud and instance type - accelerator count (it corrects the
 * Azure ND96isr_H100_v5 row, which the source lists with 12 GPUs), the
 * reserved price as the same fraction of that offering's on-demand
 * price, the spot hazard (rows with a spot price only) and the network
 * tier.  A row whose instance type is not loaded becomes an offering.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog_csv.h"

enum {
	O_CLOUD, O_REGION, O_ZONE, O_TYPE, O_ACC, O_COUNT, O_OD, O_SPOT, O_RES,
	O_P24, O_BAND, O_NET, O_S_OD, O_S_SPOT, O_S_RES, O_S_PRE, O_S_NET,
	O_NCOLS
};

static const char *const ocol[O_NCOLS] = {
	"cloud", "region", "zone", "instance_type", "accelerator",
	"accel_count", "ondemand_per_h", "spot_per_h", "reserved_per_h",
	"preempt_per_24h", "preempt_band", "network", "src_ondemand",
	"src_spot", "src_reserved", "src_preempt", "src_network",
};

static int cell_copy(char *dst, size_t n, const char *s, const char *name,
		     int line, int k, struct sr_err *e)
{
	if (strlen(s) >= n)
		return sr_err_set(e, -SR_EPARSE, "%s:%d: column %s: too long",
				  name, line, ocol[k]);
	strcpy(dst, s);
	return 0;
}

static int cell_price(char **f, const int *col, int k, int src, sr_micros *out,
		      const char *name, int line, struct sr_err *e)
{
	double v;
	const char *s = f[col[k]];

	*out = -1;
	if (!*s)
		return 0;
	if (catalog__parse_num(s, &v) || v > 1e7)
		return sr_err_set(e, -SR_EPARSE, "%s:%d: column %s: '%s' is not a price in $/h",
				  name, line, ocol[k], s);
	if (!f[col[src]][0])
		return sr_err_set(e, -SR_EPARSE, "%s:%d: column %s: value has no source",
				  name, line, ocol[src]);
	*out = sr_money_from_usd(v);
	return 0;
}

static int parse_orow(char **f, const int *col, const char *name, int line,
		      struct catalog_offering *o, struct sr_err *e)
{
	const char *p24 = f[col[O_P24]], *band = f[col[O_BAND]];
	int rc;

	memset(o, 0, sizeof *o);
	rc = cell_copy(o->cloud, sizeof o->cloud, f[col[O_CLOUD]], name, line, O_CLOUD, e);
	if (!rc)
		rc = cell_copy(o->region, sizeof o->region, f[col[O_REGION]], name,
			       line, O_REGION, e);
	if (!rc)
		rc = cell_copy(o->zone, sizeof o->zone, f[col[O_ZONE]], name, line,
			       O_ZONE, e);
	if (!rc)
		rc = cell_copy(o->instance_type, sizeof o->instance_type,
			       f[col[O_TYPE]], name, line, O_TYPE, e);
	if (!rc)
		rc = cell_copy(o->accelerator, sizeof o->accelerator,
			       f[col[O_ACC]], name, line, O_ACC, e);
	if (rc)
		return rc;
	if (!o->cloud[0] || !o->instance_type[0] || !o->accelerator[0] ||
	    !o->region[0])
		return sr_err_set(e, -SR_EPARSE,
				  "%s:%d: cloud, region, instance_type and accelerator are required",
				  name, line);
	if (catalog__parse_num(f[col[O_COUNT]], &o->accel_count) ||
	    o->accel_count <= 0)
		return sr_err_set(e, -SR_EPARSE, "%s:%d: column accel_count: '%s' is not a positive count",
				  name, line, f[col[O_COUNT]]);
	rc = cell_price(f, col, O_OD, O_S_OD, &o->ondemand_per_h, name, line, e);
	if (!rc)
		rc = cell_price(f, col, O_SPOT, O_S_SPOT, &o->spot_per_h, name, line, e);
	if (!rc)
		rc = cell_price(f, col, O_RES, O_S_RES, &o->reserved_per_h, name, line, e);
	if (rc)
		return rc;
	if (*p24 && *band)
		return sr_err_set(e, -SR_EPARSE, "%s:%d: give preempt_per_24h or preempt_band, not both",
				  name, line);
	if (*p24 || *band) {
		double v;

		if (!f[col[O_S_PRE]][0])
			return sr_err_set(e, -SR_EPARSE, "%s:%d: column src_preempt: value has no source",
					  name, line);
		if (*p24) {
			if (catalog__parse_num(p24, &v))
				return sr_err_set(e, -SR_EPARSE, "%s:%d: column preempt_per_24h: '%s' is not a rate",
						  name, line, p24);
			o->hazard_per_h = catalog_hazard_from_per24h(v);
		} else if (catalog_hazard_from_band(band, &o->hazard_per_h)) {
			return sr_err_set(e, -SR_EPARSE,
					  "%s:%d: column preempt_band: '%s' is not one of <5%% 5-10%% 10-15%% 15-20%% >20%%",
					  name, line, band);
		}
		o->hazard_src = CATALOG_HAZARD_TABLE;
		snprintf(o->hazard_from, sizeof o->hazard_from, "%s:%d (%.40s)", name,
			 line, f[col[O_S_PRE]]);
	}
	if (catalog_net_parse(f[col[O_NET]], &o->net))
		return sr_err_set(e, -SR_EPARSE, "%s:%d: column network: '%s' is not ethernet, rdma, infiniband or unknown",
				  name, line, f[col[O_NET]]);
	if (o->net != CATALOG_NET_UNKNOWN && !f[col[O_S_NET]][0])
		return sr_err_set(e, -SR_EPARSE, "%s:%d: column src_network: value has no source",
				  name, line);
	snprintf(o->source, sizeof o->source, "%s:%d", name, line);
	return 0;
}

/* Apply table row t to the loaded offerings of its type; 1 if any. */
static int overlay(struct catalog *c, size_t n_before,
		   const struct catalog_offering *t)
{
	int hit = 0;

	for (size_t i = 0; i < n_before; i++) {
		struct catalog_offering *o = &c->items[i];

		if (strcmp(o->cloud, t->cloud) ||
		    strcmp(o->instance_type, t->instance_type))
			continue;
		hit = 1;
		o->accel_count = t->accel_count;
		if (t->reserved_per_h >= 0 && t->ondemand_per_h > 0 &&
		    o->ondemand_per_h >= 0)
			o->reserved_per_h = (sr_micros)llround(
				(double)o->ondemand_per_h *
				((double)t->reserved_per_h / (double)t->ondemand_per_h));
		if (o->spot_per_h >= 0 && t->hazard_src != CATALOG_HAZARD_NONE) {
			o->hazard_per_h = t->hazard_per_h;
			o->hazard_src = t->hazard_src;
			memcpy(o->hazard_from, t->hazard_from, sizeof o->hazard_from);
		}
		if (t->net != CATALOG_NET_UNKNOWN)
			o->net = t->net;
	}
	return hit;
}

int catalog_load_offerings_buf(struct catalog *c, const char *buf,
			       size_t len, const char *name, struct sr_err *e)
{
	struct sr_csv r;
	struct catalog_offering *pending = NULL;
	size_t npend = 0, cap = 0, nhdr = 0, n_before = c->n;
	int col[O_NCOLS], rc, line = 0;

	sr_csv_open(&r, buf, len, name);
	rc = sr_csv_header(&r, ocol, O_NCOLS, 0, col, &nhdr, e);
	while (rc == 0) {
		struct catalog_offering o;

		rc = sr_csv_row(&r, nhdr, &line, e);
		if (rc <= 0)
			break;
		rc = parse_orow(r.fields, col, name, line, &o, e);
		if (rc)
			break;
		if (npend == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			struct catalog_offering *p = realloc(pending, ncap * sizeof *p);

			if (!p) {
				rc = -ENOMEM;
				break;
			}
			pending = p;
			cap = ncap;
		}
		pending[npend++] = o;
	}
	if (rc < 0)
		goto out;
	/* All rows parsed: only now touch c, so an error leaves it as it was. */
	for (size_t i = 0; i < npend && rc >= 0; i++) {
		if (!overlay(c, n_before, &pending[i]))
			rc = catalog_add(c, &pending[i]);
	}
out:
	if (rc == -ENOMEM && e && !e->code)
		sr_err_set(e, rc, "%s: out of memory", name);
	free(pending);
	sr_csv_close(&r);
	return rc < 0 ? rc : 0;
}

int catalog_load_offerings(struct catalog *c, const char *path,
			   struct sr_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = catalog__read_file(path, &buf, &len, e);
	if (!rc)
		rc = catalog_load_offerings_buf(c, buf, len,
						catalog__basename(path), e);
	free(buf);
	return rc;
}
