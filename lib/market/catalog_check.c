/*
 * catalog_check.c - the zone table, and checking the names a user gives
 * (GPU, cloud, region, zone) against what the catalog offers, with the
 * nearest valid names when one is wrong.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "catalog_csv.h"

int catalog_load_zones_buf(struct catalog *c, const char *buf, size_t len,
			   const char *name, const char *cloud, struct sr_err *e)
{
	static const char *const cols[] = { "Region", "ZoneName", "ZoneId" };
	struct sr_csv r;
	size_t nhdr = 0, n0 = c->n_zones;
	int col[3], rc, line = 0;

	sr_csv_open(&r, buf, len, name);
	rc = sr_csv_header(&r, cols, 3, 0, col, &nhdr, e);
	while (rc == 0) {
		struct catalog_zone z, *v;

		rc = sr_csv_row(&r, nhdr, &line, e);
		if (rc <= 0)
			break;
		rc = 0;
		memset(&z, 0, sizeof z);
		if (strlen(r.fields[col[0]]) >= sizeof z.region ||
		    strlen(r.fields[col[1]]) >= sizeof z.name ||
		    strlen(r.fields[col[2]]) >= sizeof z.id || !r.fields[col[1]][0] ||
		    !r.fields[col[2]][0]) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: expected Region,ZoneName,ZoneId",
					name, line);
			break;
		}
		snprintf(z.cloud, sizeof z.cloud, "%s", cloud);
		snprintf(z.region, sizeof z.region, "%s", r.fields[col[0]]);
		snprintf(z.name, sizeof z.name, "%s", r.fields[col[1]]);
		snprintf(z.id, sizeof z.id, "%s", r.fields[col[2]]);
		v = realloc(c->zones, (c->n_zones + 1) * sizeof *v);
		if (!v) {
			rc = sr_err_set(e, -ENOMEM, "%s: out of memory", name);
			break;
		}
		c->zones = v;
		v[c->n_zones++] = z;
	}
	sr_csv_close(&r);
	if (rc < 0) {
		c->n_zones = n0; /* the rows of earlier files only */
		return rc;
	}
	return 0;
}

int catalog_load_zones(struct catalog *c, const char *path, const char *cloud,
		       struct sr_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = catalog__read_file(path, &buf, &len, e);

	if (!rc)
		rc = catalog_load_zones_buf(c, buf, len, catalog__basename(path), cloud, e);
	free(buf);
	return rc;
}

/* Distinct values, borrowed from the catalog; caller frees the array. */
struct names {
	const char **v;
	size_t n, cap;
};

static int names_add(struct names *s, const char *x)
{
	for (size_t i = 0; i < s->n; i++) {
		if (!strcasecmp(s->v[i], x))
			return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		const char **v = realloc(s->v, cap * sizeof *v);

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

static int cmp_count(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int catalog_check_gpu(const struct catalog *c, const char *name, double count,
		      struct sr_err *e)
{
	struct names all = { 0 };
	double counts[64];
	size_t nc = 0;
	char near[200], list[300];
	int rc = 0, have = 0;

	for (size_t i = 0; i < c->n && !rc; i++) {
		const struct catalog_offering *o = &c->items[i];

		rc = names_add(&all, o->accelerator);
		if (strcasecmp(o->accelerator, name))
			continue;
		have = 1;
		if (count > 0 && fabs(o->accel_count - count) <= 1e-9)
			goto out;
		for (size_t k = 0; k <= nc; k++) {
			if (k == nc) {
				if (nc < sizeof counts / sizeof counts[0])
					counts[nc++] = o->accel_count;
				break;
			}
			if (fabs(counts[k] - o->accel_count) <= 1e-9)
				break;
		}
	}
	if (rc) {
		rc = sr_err_set(e, rc, "out of memory");
		goto out;
	}
	if (!have) {
		catalog_nearest(name, all.v, all.n, near, sizeof near);
		rc = sr_err_set(e, -EINVAL, "unknown GPU '%s'; nearest: %s", name, near);
		goto out;
	}
	if (count > 0) {
		size_t len = 0;

		qsort(counts, nc, sizeof counts[0], cmp_count);
		list[0] = '\0';
		for (size_t k = 0; k < nc && len < sizeof list - 16; k++)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%g",
						k ? ", " : "", counts[k]);
		rc = sr_err_set(e, -EINVAL, "%s:%g is not offered; %s comes in counts "
				"of %s per node", name, count, name, list);
	}
out:
	free(all.v);
	return rc;
}

/* Does offering o sit in cloud / region (empty = any)? */
static int in_place(const struct catalog_offering *o, const char *cloud,
		    const char *region)
{
	return (!cloud || !*cloud || !strcasecmp(o->cloud, cloud)) &&
	       (!region || !*region || !strcmp(o->region, region));
}

static int check_zone(const struct catalog *c, const char *cloud,
		      const char *region, const char *zone, char *zone_id,
		      size_t n, struct names *seen, struct sr_err *e)
{
	char near[200];
	int rc = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct catalog_offering *o = &c->items[i];

		if (!in_place(o, cloud, region) || !o->zone[0])
			continue;
		if (!strcmp(o->zone, zone)) {
			snprintf(zone_id, n, "%s", zone);
			return 0;
		}
	}
	for (size_t i = 0; i < c->n_zones; i++) {
		const struct catalog_zone *z = &c->zones[i];

		if ((cloud && *cloud && strcasecmp(z->cloud, cloud)) ||
		    (region && *region && strcmp(z->region, region)))
			continue;
		if (!strcmp(z->name, zone)) {
			snprintf(zone_id, n, "%s", z->id);
			return 0;
		}
	}
	for (size_t i = 0; i < c->n && !rc; i++) {
		if (in_place(&c->items[i], cloud, region) && c->items[i].zone[0])
			rc = names_add(seen, c->items[i].zone);
	}
	for (size_t i = 0; i < c->n_zones && !rc; i++) {
		if ((!cloud || !*cloud || !strcasecmp(c->zones[i].cloud, cloud)) &&
		    (!region || !*region || !strcmp(c->zones[i].region, region)))
			rc = names_add(seen, c->zones[i].name);
	}
	if (rc)
		return sr_err_set(e, rc, "out of memory");
	if (!seen->n)
		return sr_err_set(e, -EINVAL, "unknown zone '%s': %s%s%s has no zones in "
				  "the catalog; leave the zone out", zone,
				  cloud && *cloud ? cloud : "", region && *region ? "/" : "",
				  region ? region : "");
	catalog_nearest(zone, seen->v, seen->n, near, sizeof near);
	return sr_err_set(e, -EINVAL, "unknown zone '%s'%s%s; nearest: %s", zone,
			  region && *region ? " in " : "", region ? region : "", near);
}

int catalog_check_place(const struct catalog *c, const char *cloud,
			const char *region, const char *zone, char *zone_id,
			size_t n, struct sr_err *e)
{
	struct names seen = { 0 };
	char near[200], idbuf[40];
	int rc = 0, found = 0;

	if (!zone_id) {
		zone_id = idbuf;
		n = sizeof idbuf;
	}
	zone_id[0] = '\0';
	if (cloud && *cloud) {
		for (size_t i = 0; i < c->n && !found && !rc; i++) {
			found = !strcasecmp(c->items[i].cloud, cloud);
			rc = names_add(&seen, c->items[i].cloud);
		}
		for (size_t i = 0; i < c->n && !found && !rc; i++)
			rc = names_add(&seen, c->items[i].cloud); /* all of them */
		if (!rc && !found) {
			size_t len = 0;

			near[0] = '\0';
			for (size_t i = 0; i < seen.n && len < sizeof near - 24; i++)
				len += (size_t)snprintf(near + len, sizeof near - len, "%s%s",
							i ? ", " : "", seen.v[i]);
			rc = sr_err_set(e, -EINVAL, "unknown cloud '%s'; the catalog has: %s",
					cloud, near);
			goto out;
		}
	}
	seen.n = 0;
	if (!rc && region && *region) {
		found = 0;
		for (size_t i = 0; i < c->n && !found && !rc; i++) {
			if (!in_place(&c->items[i], cloud, NULL))
				continue;
			found = !strcmp(c->items[i].region, region);
			rc = names_add(&seen, c->items[i].region);
		}
		if (!rc && !found) {
			catalog_nearest(region, seen.v, seen.n, near, sizeof near);
			rc = sr_err_set(e, -EINVAL, "unknown region '%s'%s%s; nearest: %s",
					region, cloud && *cloud ? " for " : "",
					cloud ? cloud : "", near);
			goto out;
		}
	}
	seen.n = 0;
	if (!rc && zone && *zone)
		rc = check_zone(c, cloud, region, zone, zone_id, n, &seen, e);
	if (rc == -ENOMEM)
		rc = sr_err_set(e, rc, "out of memory");
out:
	free(seen.v);
	return rc;
}
