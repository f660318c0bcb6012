/*
 * catalog_sky.c - load SkyPilot catalog vms.csv files (schemas v6 and v8).
 *
 * Columns are found by header name, since their order differs per cloud:
 *
 *   used column       required  meaning
 *   InstanceType      yes       machine type; empty in GCP accelerator rows
 *   AcceleratorName   yes       empty: not a GPU row, skipped
 *   AcceleratorCount  yes       GPUs per instance (may be fractional)
 *   Price             yes       on-demand $/h; empty = not listed
 *   SpotPrice         yes       spot $/h; empty = no spot offering
 *   Region            yes
 *   AvailabilityZone  no        absent in Azure v6 and Lambda
 *   vCPUs, MemoryGiB  no        per instance (resources.cpus / memory)
 *
 * Other columns (GpuInfo, Arch, Generation, Derived)
 * are ignored, but a row must have exactly as many fields as the header.
 *
 * GCP join.  GCP lists a GPU machine's price as two rows per zone: the
 * host VM (InstanceType set) and the attached GPUs (InstanceType empty,
 * AcceleratorName/Count set).  The full price is their sum, so GCP files
 * are read in two passes: accelerator rows are collected, then each
 * machine row is joined with the accelerator row of the same zone, name
 * and count, and both prices are added (spot only when both rows have a
 * spot price).  The a3-megagpu family's GPUs are named H100-MEGA in the
 * accelerator rows.  Machine rows without a matching accelerator row, and
 * accelerator rows no machine row uses, are not offerings.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog_csv.h"

enum { C_TYPE, C_ACC, C_COUNT, C_PRICE, C_SPOT, C_REGION, C_ZONE, C_CPUS,
       C_MEM, C_NCOLS };

static const char *const col_names[C_NCOLS] = {
	"InstanceType", "AcceleratorName", "AcceleratorCount", "Price",
	"SpotPrice", "Region", "AvailabilityZone", "vCPUs", "MemoryGiB",
};

struct row {
	struct catalog_offering o;
	int line;
};

struct rows {
	struct row *v;
	size_t n, cap;
};

static int rows_push(struct rows *r, const struct row *x)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct row *v = realloc(r->v, cap * sizeof *v);

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *x;
	return 0;
}

static int copy_cell(char *dst, size_t n, const char *src, const char *name,
		     int line, const char *col, struct sr_err *e)
{
	size_t len = strlen(src);

	if (len >= n)
		return sr_err_set(e, -SR_EPARSE, "%s:%d: column %s: longer than %zu bytes",
				  name, line, col, n - 1);
	memcpy(dst, src, len + 1);
	return 0;
}

static int price_cell(const char *s, sr_micros *out, const char *name,
		      int line, const char *col, struct sr_err *e)
{
	double v;

	if (!*s) {
		*out = -1;
		return 0;
	}
	if (catalog__parse_num(s, &v) || v > 1e7)
		return sr_err_set(e, -SR_EPARSE,
				  "%s:%d: column %s: '%s' is not a price in $/h",
				  name, line, col, s);
	*out = sr_money_from_usd(v);
	return 0;
}

/* Parse one data record into r.  Returns 1 for a GPU row, 0 to skip. */
static int parse_row(char **f, const int *col, const char *name, int line,
		     const char *cloud, struct row *r, struct sr_err *e)
{
	struct catalog_offering *o = &r->o;
	int rc;

	memset(r, 0, sizeof *r);
	r->line = line;
	if (!f[col[C_ACC]][0])
		return 0;
	rc = copy_cell(o->cloud, sizeof o->cloud, cloud, name, line, "cloud", e);
	if (!rc)
		rc = copy_cell(o->instance_type, sizeof o->instance_type,
			       f[col[C_TYPE]], name, line, "InstanceType", e);
	if (!rc)
		rc = copy_cell(o->accelerator, sizeof o->accelerator,
			       f[col[C_ACC]], name, line, "AcceleratorName", e);
	if (!rc)
		rc = copy_cell(o->region, sizeof o->region, f[col[C_REGION]],
			       name, line, "Region", e);
	if (!rc && col[C_ZONE] >= 0)
		rc = copy_cell(o->zone, sizeof o->zone, f[col[C_ZONE]], name,
			       line, "AvailabilityZone", e);
	if (rc)
		return rc;
	if (!o->region[0])
		return sr_err_set(e, -SR_EPARSE, "%s:%d: column Region: empty",
				  name, line);
	if (catalog__parse_num(f[col[C_COUNT]], &o->accel_count) ||
	    o->accel_count <= 0 || o->accel_count > 1024)
		return sr_err_set(e, -SR_EPARSE,
				  "%s:%d: column AcceleratorCount: '%s' is not a positive count",
				  name, line, f[col[C_COUNT]]);
	/* optional sizes: an empty or odd cell reads as unknown (0) */
	if (col[C_CPUS] >= 0 && catalog__parse_num(f[col[C_CPUS]], &o->vcpus))
		o->vcpus = 0;
	if (col[C_MEM] >= 0 && catalog__parse_num(f[col[C_MEM]], &o->memory_gib))
		o->memory_gib = 0;
	rc = price_cell(f[col[C_PRICE]], &o->ondemand_per_h, name, line, "Price", e);
	if (!rc)
		rc = price_cell(f[col[C_SPOT]], &o->spot_per_h, name, line,
				"SpotPrice", e);
	if (rc)
		return rc;
	o->reserved_per_h = -1;
	snprintf(o->source, sizeof o->source, "%s:%d", name, line);
	return 1;
}

static const char *gcp_join_name(const struct catalog_offering *host)
{
	if (!strncmp(host->instance_type, "a3-megagpu-", 11))
		return "H100-MEGA";
	return host->accelerator;
}

static sr_micros add_price(sr_micros a, sr_micros b)
{
	return (a < 0 || b < 0) ? -1 : a + b;
}

/* Join GCP machine rows with accelerator rows (see top of file). */
static int gcp_join(struct catalog *c, const struct rows *hosts,
		    const struct rows *accs, const char *name)
{
	int rc = 0;

	for (size_t i = 0; i < hosts->n; i++) {
		const struct catalog_offering *h = &hosts->v[i].o;
		const char *want = gcp_join_name(h);

		for (size_t j = 0; j < accs->n; j++) {
			const struct catalog_offering *a = &accs->v[j].o;
			struct catalog_offering o;

			if (strcmp(a->zone, h->zone) || strcmp(a->region, h->region) ||
			    strcmp(a->accelerator, want) ||
			    fabs(a->accel_count - h->accel_count) > 1e-9)
				continue;
			o = *h;
			o.ondemand_per_h = add_price(h->ondemand_per_h, a->ondemand_per_h);
			o.spot_per_h = add_price(h->spot_per_h, a->spot_per_h);
			snprintf(o.source, sizeof o.source, "%s:%d+%d", name,
				 hosts->v[i].line, accs->v[j].line);
			rc = catalog_add(c, &o);
			if (rc)
				return rc;
			break;
		}
	}
	return 0;
}

int catalog_load_skypilot_buf(struct catalog *c, const char *buf,
			      size_t len, const char *name, const char *cloud,
			      struct sr_err *e)
{
	struct sr_csv r;
	struct rows hosts = { 0 }, accs = { 0 };
	size_t nhdr = 0, n0 = c->n;
	int col[C_NCOLS], rc, line = 0, is_gcp = !strcmp(cloud, "gcp");

	sr_csv_open(&r, buf, len, name);
	rc = sr_csv_header(&r, col_names, C_NCOLS,
			   (1u << C_ZONE) | (1u << C_CPUS) | (1u << C_MEM), col,
			   &nhdr, e);
	while (rc == 0) {
		struct row row;

		rc = sr_csv_row(&r, nhdr, &line, e);
		if (rc <= 0)
			break;
		rc = parse_row(r.fields, col, name, line, cloud, &row, e);
		if (rc <= 0)
			continue; /* 0: not a GPU row; < 0 ends the loop */
		if (!row.o.instance_type[0] && !is_gcp) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: column InstanceType: empty",
					name, line);
			break;
		}
		if (is_gcp)
			rc = rows_push(row.o.instance_type[0] ? &hosts : &accs, &row);
		else
			rc = catalog_add(c, &row.o);
	}
	if (rc == 0 && is_gcp)
		rc = gcp_join(c, &hosts, &accs, name);
	if (rc < 0)
		c->n = n0;
	else
		rc = 0;
	if (rc == -ENOMEM && e && !e->code)
		sr_err_set(e, rc, "%s: out of memory", name);
	free(hosts.v);
	free(accs.v);
	sr_csv_close(&r);
	return rc;
}

int catalog_load_skypilot(struct catalog *c, const char *path,
			  const char *cloud, struct sr_err *e)
{
	char *buf = NULL, cl[16];
	const char *base = catalog__basename(path);
	size_t len = 0;
	int rc;

	if (!cloud) {
		size_t k = strcspn(base, ".");

		if (k == 0 || k >= sizeof cl)
			return sr_err_set(e, -EINVAL, "%s: cannot tell the cloud from the file name",
					  path);
		memcpy(cl, base, k);
		cl[k] = '\0';
		cloud = cl;
	}
	rc = catalog__read_file(path, &buf, &len, e);
	if (!rc)
		rc = catalog_load_skypilot_buf(c, buf, len, base, cloud, e);
	free(buf);
	return rc;
}
