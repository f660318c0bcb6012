/*
 * localmkt.c - pools, trace assignment and replay (rules in localmkt.h).
 */
#include "cloud/localmkt.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/text.h"
#include "market/catalog.h"
#include "sim/trace.h"

struct pool {
	int trace;          /* index into traces, -1 = always available */
	size_t phase;
	double price_scale; /* catalog spot / trace mean price */
};

struct localmkt {
	struct catalog cat;
	struct trace **traces;
	char **trace_rel;   /* path relative to <data>/traces */
	size_t ntraces, cap;
	struct pool *pools; /* [cat.n] */
};

static int add_trace(struct localmkt *m, struct trace *t, const char *rel)
{
	if (m->ntraces == m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 32;
		struct trace **nt = realloc(m->traces, nc * sizeof *nt);
		char **nr;

		if (!nt)
			return -ENOMEM;
		m->traces = nt;
		nr = realloc(m->trace_rel, nc * sizeof *nr);
		if (!nr)
			return -ENOMEM;
		m->trace_rel = nr;
		m->cap = nc;
	}
	m->trace_rel[m->ntraces] = strdup(rel);
	if (!m->trace_rel[m->ntraces])
		return -ENOMEM;
	m->traces[m->ntraces++] = t;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Walk dir recursively, loading *.json and *.csv traces in sorted order
 * (so pool assignment is the same on every start). */
static int load_traces(struct localmkt *m, const char *root, const char *rel,
		       struct sr_err *e)
{
	char path[4096], sub[2048];
	char **names = NULL;
	size_t nn = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	d = opendir(path);
	if (!d)
		return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (nn == cap) {
			size_t nc = cap ? 2 * cap : 16;
			char **n2 = realloc(names, nc * sizeof *n2);

			if (!n2) {
				rc = -ENOMEM;
				goto out;
			}
			names = n2;
			cap = nc;
		}
		names[nn] = strdup(de->d_name);
		if (!names[nn]) {
			rc = -ENOMEM;
			goto out;
		}
		nn++;
	}
	qsort(names, nn, sizeof *names, cmp_str);
	for (size_t i = 0; i < nn && !rc; i++) {
		struct stat sb;
		size_t len = strlen(names[i]);

		snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
		snprintf(path, sizeof path, "%s/%s", root, sub);
		if (stat(path, &sb) != 0)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			rc = load_traces(m, root, sub, e);
		} else if ((len > 5 && strcmp(names[i] + len - 5, ".json") == 0) ||
			   (len > 4 && strcmp(names[i] + len - 4, ".csv") == 0)) {
			struct trace *t = NULL;

			rc = trace_load(path, TRACE_FMT_AUTO, &t, e);
			if (!rc && t->n == 0) {
				trace_free(t);
				continue;
			}
			if (!rc) {
				rc = add_trace(m, t, sub);
				if (rc)
					trace_free(t);
			}
		}
	}
out:
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

/* The trace's file name ("us-west-2c_v100_1.json", or the directory of
 * a SkyNomad "full.json"). */
static const char *trace_file(const char *rel, char *buf, size_t n)
{
	const char *base = strrchr(rel, '/');
	const char *file = base ? base + 1 : rel;

	if (strcmp(file, "full.json") == 0 && base) {
		const char *dir = base;

		while (dir > rel && dir[-1] != '/')
			dir--;
		snprintf(buf, n, "%.*s", (int)(base - dir), dir);
		return buf;
	}
	snprintf(buf, n, "%s", file);
	return buf;
}

/* Rules 1 and 2 of localmkt.h.  Candidates: traces naming the pool's
 * accelerator (all traces if none does); among them those of the pool's
 * zone, else of its region ("us-west-2" + zone letter); pick by hash. */
static int pick_trace(const struct localmkt *m, const struct catalog_offering *o,
		      uint64_t h, bool *exact)
{
	char acc[32], buf[256];
	int place_n = 0, acc_n = 0, pass;
	size_t rl = strlen(o->region);

	snprintf(acc, sizeof acc, "_%s_", o->accelerator);
	*exact = false;
	for (size_t i = 0; i < m->ntraces; i++) {
		const char *f = trace_file(m->trace_rel[i], buf, sizeof buf);

		if (!strcasestr(f, acc))
			continue;
		acc_n++;
		if ((o->zone[0] && strncmp(f, o->zone, strlen(o->zone)) == 0 &&
		     f[strlen(o->zone)] == '_') ||
		    (strncmp(f, o->region, rl) == 0 && f[rl] >= 'a' && f[rl] <= 'z' &&
		     f[rl + 1] == '_'))
			place_n++;
	}
	for (pass = 0; pass < 2; pass++) {
		int want = place_n ? place_n : acc_n ? acc_n : (int)m->ntraces;
		int k = (int)(h % (uint64_t)want), seen = 0;

		for (size_t i = 0; i < m->ntraces; i++) {
			const char *f = trace_file(m->trace_rel[i], buf, sizeof buf);
			bool ok = true;

			if (acc_n)
				ok = strcasestr(f, acc) != NULL;
			if (ok && place_n)
				ok = (o->zone[0] && strncmp(f, o->zone, strlen(o->zone)) == 0 &&
				      f[strlen(o->zone)] == '_') ||
				     (strncmp(f, o->region, rl) == 0 && f[rl] >= 'a' &&
				      f[rl] <= 'z' && f[rl + 1] == '_');
			if (ok && seen++ == k) {
				*exact = place_n > 0;
				return (int)i;
			}
		}
	}
	return (int)(h % m->ntraces);
}

static void assign_pools(struct localmkt *m)
{
	for (size_t i = 0; i < m->cat.n; i++) {
		const struct catalog_offering *o = &m->cat.items[i];
		struct pool *p = &m->pools[i];
		uint64_t h = sr_text_fnv1a(o->cloud, SR_FNV1A_BASIS);
		bool exact;
		int t;

		h = sr_text_fnv1a(o->region, h);
		h = sr_text_fnv1a(o->zone, h);
		h = sr_text_fnv1a(o->instance_type, h);
		p->trace = -1;
		p->phase = 0;
		p->price_scale = 1.0;
		if (m->ntraces == 0 || o->spot_per_h < 0)
			continue;
		t = pick_trace(m, o, h, &exact);
		if (!exact)
			p->phase = (size_t)((h >> 20) % m->traces[t]->n);
		p->trace = t;
		if (m->traces[t]->price) {
			double sum = 0;

			for (size_t k = 0; k < m->traces[t]->n; k++)
				sum += m->traces[t]->price[k];
			if (sum > 0)
				p->price_scale = sr_money_to_usd(o->spot_per_h) /
						 (sum / (double)m->traces[t]->n);
		}
	}
}

int localmkt_load(const char *data_dir, struct localmkt **out, struct sr_err *e)
{
	struct localmkt *m = calloc(1, sizeof *m);
	char tdir[4096];
	struct stat sb;
	int rc;

	*out = NULL;
	if (!m)
		return -ENOMEM;
	catalog_init(&m->cat);
	rc = catalog_load_dir(&m->cat, data_dir, e);
	if (rc)
		goto fail;
	if (m->cat.n == 0) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "%s: the catalog has no offerings",
				data_dir);
		goto fail;
	}
	snprintf(tdir, sizeof tdir, "%s/traces", data_dir);
	if (stat(tdir, &sb) == 0) {
		rc = load_traces(m, tdir, "", e);
		if (rc)
			goto fail;
	}
	m->pools = calloc(m->cat.n, sizeof *m->pools);
	if (!m->pools) {
		rc = -ENOMEM;
		goto fail;
	}
	assign_pools(m);
	*out = m;
	return 0;
fail:
	localmkt_free(m);
	return rc;
}

void localmkt_free(struct localmkt *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ntraces; i++) {
		trace_free(m->traces[i]);
		free(m->trace_rel[i]);
	}
	free(m->traces);
	free(m->trace_rel);
	free(m->pools);
	catalog_free(&m->cat);
	free(m);
}

size_t localmkt_npools(const struct localmkt *m)
{
	return m->cat.n;
}

static size_t tick_of(const struct trace *t, const struct pool *p, double sim_s)
{
	double tick = floor(sim_s / (double)t->gap_s);

	if (tick < 0)
		tick = 0;
	return (size_t)(((uint64_t)tick + p->phase) % t->n);
}

bool localmkt_available(const struct localmkt *m, int pool, double sim_s)
{
	const struct pool *p;

	if (pool < 0 || (size_t)pool >= m->cat.n)
		return false;
	p = &m->pools[pool];
	if (m->cat.items[pool].spot_per_h < 0)
		return false;
	if (p->trace < 0)
		return true;
	return m->traces[p->trace]->avail[tick_of(m->traces[p->trace], p, sim_s)] != 0;
}

int localmkt_describe(const struct localmkt *m, int pool, double sim_s,
		      struct cloud_offering *out)
{
	const struct catalog_offering *o;
	const struct pool *p;

	if (pool < 0 || (size_t)pool >= m->cat.n)
		return -SR_ENOTFOUND;
	o = &m->cat.items[pool];
	p = &m->pools[pool];
	memset(out, 0, sizeof *out);
	out->pool = pool;
	snprintf(out->cloud, sizeof out->cloud, "%s", o->cloud);
	snprintf(out->region, sizeof out->region, "%s", o->region);
	snprintf(out->zone, sizeof out->zone, "%s", o->zone);
	snprintf(out->instance_type, sizeof out->instance_type, "%s", o->instance_type);
	snprintf(out->accelerator, sizeof out->accelerator, "%s", o->accelerator);
	out->accel_count = o->accel_count;
	out->ondemand_per_h = o->ondemand_per_h;
	out->reserved_per_h = o->reserved_per_h;
	out->hazard_per_h = o->hazard_per_h;
	out->spot_per_h = o->spot_per_h;
	if (p->trace >= 0) {
		const struct trace *t = m->traces[p->trace];

		if (t->price)
			out->spot_per_h = sr_money_from_usd(
				t->price[tick_of(t, p, sim_s)] * p->price_scale);
		snprintf(out->trace, sizeof out->trace, "%s", m->trace_rel[p->trace]);
	}
	out->spot_available = localmkt_available(m, pool, sim_s);
	return 0;
}

static bool in_list(const char *const *list, const char *s)
{
	if (!list || !list[0])
		return true;
	for (; *list; list++) {
		if (strcasecmp(*list, s) == 0)
			return true;
	}
	return false;
}

int localmkt_offerings(const struct localmkt *m, const struct cloud_query *q,
		       double sim_s, struct cloud_offering **out, size_t *n,
		       struct sr_err *e)
{
	struct cloud_offering *v = NULL;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	v = calloc(m->cat.n ? m->cat.n : 1, sizeof *v);
	if (!v)
		return sr_err_set(e, -ENOMEM, "offerings: out of memory");
	for (size_t i = 0; i < m->cat.n; i++) {
		const struct catalog_offering *o = &m->cat.items[i];

		if (q->accelerator && strcasecmp(q->accelerator, o->accelerator))
			continue;
		if (q->accel_count > 0 && fabs(q->accel_count - o->accel_count) > 1e-9)
			continue;
		if (!in_list(q->clouds, o->cloud) || !in_list(q->regions, o->region))
			continue;
		localmkt_describe(m, (int)i, sim_s, &v[k++]);
	}
	qsort(v, k, sizeof *v, cloud_offering_cmp);
	*out = v;
	*n = k;
	return 0;
}

static bool at_place(const struct localmkt_place *pl,
		     const struct cloud_offering *o)
{
	return strcmp(o->cloud, pl->cloud) == 0 &&
	       strcmp(o->region, pl->region) == 0;
}

int localmkt_describe_at(const struct localmkt *m,
			 const struct localmkt_place *pl, int pool,
			 struct cloud_offering *out)
{
	int rc = localmkt_describe(m, pool, 0, out);

	if (rc)
		return rc;
	if (!at_place(pl, out))
		return -SR_ENOTFOUND;
	if (pl->view)
		pl->view(pl->ud, out);
	return 0;
}

int localmkt_offerings_at(const struct localmkt *m,
			  const struct localmkt_place *pl,
			  const struct cloud_query *q, struct cloud_offering **out,
			  size_t *n, struct sr_err *e)
{
	size_t k = 0;
	int rc = localmkt_offerings(m, q, 0, out, n, e);

	if (rc)
		return rc;
	for (size_t i = 0; i < *n; i++) {
		if (!at_place(pl, &(*out)[i]))
			continue;
		(*out)[k] = (*out)[i];
		if (pl->view)
			pl->view(pl->ud, &(*out)[k]);
		k++;
	}
	*n = k;
	qsort(*out, k, sizeof **out, cloud_offering_cmp);
	return 0;
}
