/*
 * liveprice.c - the catalog repriced from the providers' live feeds (see
 * liveprice.h).  A provider is asked only for the catalog rows of the
 * cloud named like it; quotes are laid on the rows of their region and
 * instance type (and zone, when the quote names one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "providers/liveprice.h"
#include "providers/registry.h"

int prov_prices_mode_parse(const char *s, enum prov_prices_mode *out)
{
	if (strcmp(s, "auto") == 0)
		*out = PROV_PRICES_AUTO;
	else if (strcmp(s, "live") == 0)
		*out = PROV_PRICES_LIVE;
	else if (strcmp(s, "catalog") == 0)
		*out = PROV_PRICES_CATALOG;
	else
		return -EINVAL;
	return 0;
}

static struct prov_price_src *src_of(struct prov_price_report *rep,
				     const char *cloud)
{
	for (size_t i = 0; i < rep->n; i++) {
		if (strcmp(rep->v[i].cloud, cloud) == 0)
			return &rep->v[i];
	}
	return NULL;
}

/* One source per cloud of the catalog, in the catalog's order. */
static int sources_init(const struct catalog *cat,
			struct prov_price_report *rep)
{
	for (size_t i = 0; i < cat->n; i++) {
		struct prov_price_src *s = src_of(rep, cat->items[i].cloud);

		if (!s) {
			s = realloc(rep->v, (rep->n + 1) * sizeof *s);
			if (!s)
				return -ENOMEM;
			rep->v = s;
			s = &rep->v[rep->n++];
			memset(s, 0, sizeof *s);
			snprintf(s->cloud, sizeof s->cloud, "%s",
				 cat->items[i].cloud);
			snprintf(s->why, sizeof s->why, "no live feed");
		}
		s->rows++;
	}
	return 0;
}

/* Lay quotes q[0..nq) on cat's rows of `cloud`; repriced[] marks rows. */
static void lay(struct catalog *cat, const char *cloud,
		const struct cloud_price_quote *q, size_t nq, bool *repriced)
{
	for (size_t k = 0; k < nq; k++) {
		for (size_t i = 0; i < cat->n; i++) {
			struct catalog_offering *o = &cat->items[i];

			if (strcmp(o->cloud, cloud) || strcmp(o->region, q[k].region) ||
			    strcmp(o->instance_type, q[k].instance_type) ||
			    (q[k].zone[0] && strcmp(o->zone, q[k].zone)))
				continue;
			if (q[k].spot_per_h >= 0)
				o->spot_per_h = q[k].spot_per_h;
			if (q[k].ondemand_per_h >= 0)
				o->ondemand_per_h = q[k].ondemand_per_h;
			repriced[i] = true;
		}
	}
}

/* Ask one provider, in each configured region (or once). */
static int ask_provider(const struct cloud_prov_def *d,
			const struct cloud_conf *conf, struct catalog *cat,
			struct prov_price_src *s, struct sr_err *e)
{
	struct cloud_price_ask *ask = calloc(s->rows + 1, sizeof *ask);
	bool *repriced = calloc(cat->n + 1, sizeof *repriced);
	size_t nask = 0, nreg = conf && conf->nregions ? conf->nregions : 1;
	int rc = 0;

	if (!ask || !repriced) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < cat->n; i++) {
		const struct catalog_offering *o = &cat->items[i];

		if (strcmp(o->cloud, d->name) == 0)
			ask[nask++] = (struct cloud_price_ask){
				o->region, o->zone, o->instance_type,
				o->accelerator, o->accel_count, o->vcpus,
				o->memory_gib };
	}
	for (size_t r = 0; r < nreg && rc == 0; r++) {
		struct cloud_price_quote *q = NULL;
		size_t nq = 0;
		char feed[sizeof s->feed] = "";

		rc = d->live_prices(conf, conf && conf->nregions ?
				    &conf->regions[r] : NULL, ask, nask, &q,
				    &nq, feed, sizeof feed, e);
		if (rc == 0) {
			lay(cat, d->name, q, nq, repriced);
			snprintf(s->feed, sizeof s->feed, "%s", feed);
		}
		free(q);
	}
	for (size_t i = 0; i < cat->n; i++)
		s->quoted += repriced[i];
out:
	free(ask);
	free(repriced);
	return rc;
}

int prov_prices_apply(const struct cloud_prov_def *const *reg,
		      struct cloud_confs *cs, enum prov_prices_mode mode,
		      const char *only, struct catalog *cat, struct prov_price_report *rep,
		      struct sr_err *e)
{
	const struct cloud_prov_def *const *t = reg ? reg : prov_registry();
	int rc;

	memset(rep, 0, sizeof *rep);
	rc = sources_init(cat, rep);
	if (rc)
		return sr_err_set(e, rc, "out of memory");
	for (size_t k = 0; t[k]; k++) {
		const struct cloud_prov_def *d = t[k];
		struct prov_price_src *s = src_of(rep, d->name);
		struct sr_err pe = { 0 };

		if (s && d->own_offerings && !d->live_prices) {
			/* its rows came from the cluster itself just now
			 * (prov_own_offerings_add) */
			s->live = true;
			s->quoted = s->rows;
			snprintf(s->feed, sizeof s->feed, "its own pools, read now");
			s->why[0] = '\0';
			continue;
		}
		if (!s || !d->live_prices)
			continue;
		if (mode == PROV_PRICES_CATALOG || (only && strcmp(only, d->name))) {
			snprintf(s->why, sizeof s->why, "%s", only && strcmp(only,
				 d->name) ? "not asked" : "--prices catalog");
			continue;
		}
		rc = ask_provider(d, cs ? cloud_confs_find(cs, d->name, 0) : NULL,
				  cat, s, &pe);
		if (rc == -ENOMEM)
			return sr_err_set(e, rc, "out of memory");
		if (rc == 0 && s->quoted) {
			s->live = true;
			s->why[0] = '\0';
			continue;
		}
		if (rc == 0)
			snprintf(s->why, sizeof s->why, "%s quoted none of its "
				 "%zu rows", s->feed, s->rows);
		else
			snprintf(s->why, sizeof s->why, "%s: %s",
				 rc == -SR_ENOTFOUND ? "credentials missing"
				 : "live feed failed", sr_err_str(&pe, rc));
		if (mode == PROV_PRICES_LIVE)
			return sr_err_set(e, rc ? rc : -SR_ENOTFOUND,
					  "%s: no live prices (%s)", d->name,
					  s->why);
	}
	return 0;
}

int prov_own_offerings_add(const struct cloud_prov_def *const *reg,
			   struct cloud_confs *cs, int nodes,
			   struct catalog *cat, struct sr_err *e)
{
	const struct cloud_prov_def *const *t = reg ? reg : prov_registry();
	int rc = 0;

	for (size_t k = 0; t[k] && !rc; k++) {
		const struct cloud_conf *conf = cs ? cloud_confs_find(cs, t[k]->name,
								      0) : NULL;
		struct cloud_offering *v = NULL;
		size_t n = 0;

		if (!t[k]->own_offerings || !conf)
			continue;
		rc = t[k]->own_offerings(conf, nodes, &v, &n, e);
		if (rc) {
			rc = sr_err_prefix(e, "%s", t[k]->name);
			break;
		}
		for (size_t i = 0; i < n && !rc; i++) {
			struct catalog_offering o = { 0 };

			snprintf(o.cloud, sizeof o.cloud, "%s", v[i].cloud);
			snprintf(o.region, sizeof o.region, "%s", v[i].region);
			snprintf(o.zone, sizeof o.zone, "%s", v[i].zone);
			snprintf(o.instance_type, sizeof o.instance_type, "%s",
				 v[i].instance_type);
			snprintf(o.accelerator, sizeof o.accelerator, "%s",
				 v[i].accelerator);
			o.accel_count = v[i].accel_count;
			o.ondemand_per_h = v[i].ondemand_per_h;
			o.reserved_per_h = v[i].reserved_per_h;
			o.spot_per_h = v[i].spot_per_h;
			o.committed = v[i].committed;
			o.queue_wait_s = v[i].queue_wait_s;
			snprintf(o.queue_basis, sizeof o.queue_basis, "%s",
				 v[i].queue_basis);
			snprintf(o.source, sizeof o.source, "%s (read now)",
				 t[k]->name);
			if (catalog_add(cat, &o))
				rc = sr_err_set(e, -ENOMEM, "out of memory");
		}
		free(v);
	}
	return rc;
}

void prov_price_report_print(const struct prov_price_report *rep, FILE *f)
{
	fprintf(f, "prices:");
	for (size_t i = 0; i < rep->n; i++) {
		const struct prov_price_src *s = &rep->v[i];

		if (s->live)
			fprintf(f, "%s %s live (%s, %zu of %zu rows)",
				i ? "," : "", s->cloud, s->feed, s->quoted,
				s->rows);
		else
			fprintf(f, "%s %s catalog (%s)", i ? "," : "", s->cloud,
				s->why);
	}
	fputc('\n', f);
}

json_t *prov_price_report_json(const struct prov_price_report *rep)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < rep->n; i++) {
		const struct prov_price_src *s = &rep->v[i];
		json_t *o = json_pack("{ss ss sI sI}", "cloud", s->cloud,
				      "source", s->live ? "live" : "catalog",
				      "rows", (json_int_t)s->rows,
				      "quoted", (json_int_t)s->quoted);

		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
		json_object_set_new(o, s->live ? "feed" : "why",
				    json_string(s->live ? s->feed : s->why));
	}
	return a;
}

void prov_price_report_free(struct prov_price_report *rep)
{
	if (!rep)
		return;
	free(rep->v);
	memset(rep, 0, sizeof *rep);
}
