/*
 * catalog_trace.c - per-pool spot preemption rates fitted to the bundled
 * traces (data/traces; their provenance is in data/traces/SOURCE.md).
 *
 * Files read: DIR/traces/cbl/availability/1-node/CLOUD-DATE/ZONE_GPU_COUNT.json and
 * DIR/traces/cbl/preemption/1-node/CLOUD-DATE/ZONE_GPU_COUNT.json, named
 * ZONE_GPU_COUNT.json (us-west-2a_v100_8.json), each
 * {"metadata": {"gap_seconds": N}, "data": [0|1, ...]}.
 *
 * Reading chosen: 1 = a spot instance of the pool was up during the tick,
 * 0 = it was not (documented for the availability sets; the single-node
 * preemption sets hold the same 0/1 series and are read the same way).
 * A 1 -> 0 step is one preemption, and the rate is the maximum-likelihood
 * exponential hazard: preemptions / hours up (catalog_hazard_from_trace),
 * pooled over every trace of the same pool.  Files whose GPU is not a
 * catalog accelerator (k80, CPU-only "intel"/"c3") are skipped, as are
 * the multi-node sets and SkyNomad's gang traces (4-node gangs: one
 * series per gang, not per node).
 *
 * A pool is (cloud, zone ID, accelerator, count); AWS zone names in file
 * names become IDs through the catalog's zone table.
 *
 * With the rate, for the plan's outage runs (cost_outage.c): the down
 * spells that follow a loss and end before the trace does (their mean
 * hours and coefficient of variation), the up spells' coefficient of
 * variation (capacity back to the next loss, whole spells only: > 1
 * when losses come in bursts), and the day-to-day spread: a day
 * whose rate and outages are both x g is up a share 1 / (1 + rate x
 * outage x g^2) of its hours, so each whole day's share gives its g, and
 * hazard_disp is their variance over their mean squared.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"

struct pool {
	char cloud[16], zone[40], accel[24];
	double count;
	double up_h;
	size_t losses, files;
	/* the down spells that follow a loss (not one cut by the trace's
	 * end): count, sum and sum of squares of their hours */
	size_t spells;
	double spell_h, spell_h2;
	/* the up spells from capacity back to the next loss (not one cut
	 * by either end of the trace): the same */
	size_t uspells;
	double uspell_h, uspell_h2;
	/* each whole day's share of ticks up, over the pool's traces */
	size_t days;
	double *day_up;     /* owned */
	char set[48];     /* first trace set, e.g. "availability/1-node/aws-10-26-2022" */
};

struct pools {
	struct pool *v;
	size_t n;
};

/* "us-west-2a_v100_8.json" -> zone, GPU (upper case), count; 0 or -1. */
static int split_name(const char *file, char *zone, size_t zn, char *gpu,
		      size_t gn, double *count)
{
	const char *u2 = strrchr(file, '_'), *u1, *dot = strrchr(file, '.');
	char *end;

	if (!u2 || !dot || strcmp(dot, ".json") || u2 == file)
		return -1;
	for (u1 = u2 - 1; u1 > file && *u1 != '_'; u1--)
		;
	if (u1 == file || (size_t)(u1 - file) >= zn || (size_t)(u2 - u1 - 1) >= gn ||
	    u2 - u1 - 1 == 0)
		return -1;
	memcpy(zone, file, (size_t)(u1 - file));
	zone[u1 - file] = '\0';
	for (size_t i = 0; i < (size_t)(u2 - u1 - 1); i++)
		gpu[i] = (char)toupper((unsigned char)u1[1 + i]);
	gpu[u2 - u1 - 1] = '\0';
	*count = (double)strtol(u2 + 1, &end, 10); /* "8.json": not strtod */
	return end == dot && *count > 0 ? 0 : -1;
}

static const char *zone_id(const struct catalog *c, const char *cloud,
			   const char *name)
{
	for (size_t i = 0; i < c->n_zones; i++) {
		if (!strcasecmp(c->zones[i].cloud, cloud) &&
		    !strcmp(c->zones[i].name, name))
			return c->zones[i].id;
	}
	return name; /* already an ID, or a cloud without a table (GCP) */
}

static int gpu_known(const struct catalog *c, const char *gpu)
{
	for (size_t i = 0; i < c->n; i++) {
		if (!strcasecmp(c->items[i].accelerator, gpu))
			return 1;
	}
	return 0;
}

/* Read one trace file into its pool's totals.  Unreadable or malformed
 * files are errors naming the file. */
static int add_file(const struct catalog *c, struct pools *ps, const char *path,
		    const char *cloud, const char *set, const char *file,
		    struct sr_err *e)
{
	char zone[40], gpu[24];
	double count, gap;
	json_error_t je;
	json_t *root = NULL, *data, *gapj;
	struct pool *p = NULL;
	size_t up = 0, losses = 0, n, spells = 0, run = 0, per_day, days = 0;
	size_t today = 0, uspells = 0, urun = 0;
	double spell_h = 0, spell_h2 = 0, uspell_h = 0, uspell_h2 = 0;
	double *day_up = NULL;
	int rc = 0, after_loss = 0, seen_down = 0;

	if (split_name(file, zone, sizeof zone, gpu, sizeof gpu, &count) ||
	    !gpu_known(c, gpu))
		return 0;
	root = json_load_file(path, 0, &je);
	if (!root)
		return sr_err_set(e, -SR_EPARSE, "%s:%d: %s", path, je.line, je.text);
	data = json_object_get(root, "data");
	gapj = json_object_get(json_object_get(root, "metadata"), "gap_seconds");
	gap = json_number_value(gapj);
	if (!json_is_array(data) || !json_is_number(gapj) || !(gap > 0)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: expected {\"metadata\": {\"gap_seconds\": N}, \"data\": [...]}",
				path);
		goto out;
	}
	n = json_array_size(data);
	per_day = (size_t)(86400.0 / gap);
	day_up = malloc((per_day ? n / per_day : 0) * sizeof *day_up + 1);
	if (!day_up) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		int v = json_number_value(json_array_get(data, i)) != 0;
		int next = i + 1 < n && json_number_value(json_array_get(data, i + 1)) != 0;

		up += (size_t)v;
		losses += (size_t)(v && i + 1 < n && !next);
		today += (size_t)v;
		if (per_day && (i + 1) % per_day == 0) {
			day_up[days++] = (double)today / (double)per_day;
			today = 0;
		}
		/* a down spell after a loss, ended by capacity coming back */
		if (!v && after_loss)
			run++;
		if (v && after_loss && run) {
			double h = (double)run * gap / 3600.0;

			spells++;
			spell_h += h;
			spell_h2 += h * h;
		}
		if (v) {
			after_loss = i + 1 < n && !next;
			run = 0;
			urun++;
			if (after_loss && seen_down) { /* a whole up spell */
				double h = (double)urun * gap / 3600.0;

				uspells++;
				uspell_h += h;
				uspell_h2 += h * h;
			}
		} else {
			seen_down = 1;
			urun = 0;
		}
	}
	snprintf(zone, sizeof zone, "%s", zone_id(c, cloud, zone));
	for (size_t i = 0; i < ps->n && !p; i++) {
		struct pool *q = &ps->v[i];

		if (!strcmp(q->cloud, cloud) && !strcmp(q->zone, zone) &&
		    !strcasecmp(q->accel, gpu) && fabs(q->count - count) < 1e-9)
			p = q;
	}
	if (!p) {
		struct pool *v = realloc(ps->v, (ps->n + 1) * sizeof *v);

		if (!v) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		ps->v = v;
		p = &v[ps->n++];
		memset(p, 0, sizeof *p);
		snprintf(p->cloud, sizeof p->cloud, "%s", cloud);
		snprintf(p->zone, sizeof p->zone, "%s", zone);
		snprintf(p->accel, sizeof p->accel, "%s", gpu);
		p->count = count;
		snprintf(p->set, sizeof p->set, "%s", set);
	}
	p->up_h += (double)up * gap / 3600.0;
	p->losses += losses;
	p->spells += spells;
	{
		double *d = realloc(p->day_up, (p->days + days + 1) * sizeof *d);

		if (!d) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		p->day_up = d;
		memcpy(d + p->days, day_up, days * sizeof *d);
		p->days += days;
	}
	p->spell_h += spell_h;
	p->spell_h2 += spell_h2;
	p->uspells += uspells;
	p->uspell_h += uspell_h;
	p->uspell_h2 += uspell_h2;
	p->files++;
out:
	free(day_up);
	json_decref(root);
	return rc;
}

/* Every CLOUD-DATE folder under DIR/traces/cbl/KIND/1-node. */
static int scan_kind(const struct catalog *c, struct pools *ps, const char *dir,
		     const char *kind, struct sr_err *e)
{
	char base[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int rc = 0;

	snprintf(base, sizeof base, "%s/traces/cbl/%s/1-node", dir, kind);
	d = opendir(base);
	if (!d)
		return 0;
	while (!rc && (de = readdir(d)) != NULL) {
		char sub[PATH_MAX + 256], cloud[16], set[48];
		const char *dash = strchr(de->d_name, '-');
		DIR *f;
		struct dirent *fe;

		if (de->d_name[0] == '.' || !dash || (size_t)(dash - de->d_name) >= sizeof cloud)
			continue;
		memcpy(cloud, de->d_name, (size_t)(dash - de->d_name));
		cloud[dash - de->d_name] = '\0';
		snprintf(set, sizeof set, "cbl/%s/%.24s", kind, de->d_name);
		snprintf(sub, sizeof sub, "%s/%s", base, de->d_name);
		f = opendir(sub);
		if (!f)
			continue;
		while (!rc && (fe = readdir(f)) != NULL) {
			char path[PATH_MAX * 2];

			if (fe->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s", sub, fe->d_name);
			rc = add_file(c, ps, path, cloud, set, fe->d_name, e);
		}
		closedir(f);
	}
	closedir(d);
	return rc;
}

int catalog_load_trace_rates(struct catalog *c, const char *dir, struct sr_err *e)
{
	struct pools ps = { NULL, 0 };
	int rc = scan_kind(c, &ps, dir, "availability", e);

	if (!rc)
		rc = scan_kind(c, &ps, dir, "preemption", e);
	for (size_t i = 0; !rc && i < ps.n; i++) {
		const struct pool *p = &ps.v[i];

		if (!(p->up_h > 0))
			continue;
		for (size_t k = 0; k < c->n; k++) {
			struct catalog_offering *o = &c->items[k];

			if (o->spot_per_h < 0 || strcasecmp(o->cloud, p->cloud) ||
			    strcmp(o->zone, p->zone) || strcasecmp(o->accelerator, p->accel) ||
			    fabs(o->accel_count - p->count) > 1e-9)
				continue;
			o->hazard_per_h = (double)p->losses / p->up_h;
			if (p->spells > 1) {
				double m = p->spell_h / (double)p->spells;
				double var = p->spell_h2 / (double)p->spells - m * m;

				o->outage_h = m;
				o->outage_cv = var > 0 ? sqrt(var) / m : 0;
			}
			if (p->uspells > 1) {
				double m = p->uspell_h / (double)p->uspells;
				double var = p->uspell_h2 / (double)p->uspells - m * m;

				o->up_cv = var > 0 ? sqrt(var) / m : 0;
			}
			if (p->days > 2 && o->outage_h > 0) {
				/* a day of scale g has its rate and outages x g:
				 * up share 1 / (1 + rate outage g^2); each day's g
				 * from its up share, and their spread */
				double lm = o->hazard_per_h * o->outage_h, s = 0, s2 = 0;

				for (size_t d = 0; d < p->days; d++) {
					double u = fmin(fmax(p->day_up[d], 0.02), 0.999);
					double g = sqrt((1 / u - 1) / lm);

					s += g;
					s2 += g * g;
				}
				s /= (double)p->days;
				s2 /= (double)p->days;
				o->hazard_disp = s2 > s * s ? (s2 - s * s) / (s * s) : 0;
			}
			o->hazard_src = CATALOG_HAZARD_TRACE;
			snprintf(o->hazard_from, sizeof o->hazard_from, "%s%s: %zu in %.0fh up",
				 p->set, p->files > 1 ? "+" : "", p->losses, p->up_h);
		}
	}
	for (size_t i = 0; i < ps.n; i++)
		free(ps.v[i].day_up);
	free(ps.v);
	return rc;
}
