/*
 * reconcile.c - the bill against the ledger (see reconcile.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/csv.h"
#include "common/timeutil.h"
#include "reconcile.h"

#define DAY_NS (INT64_C(86400) * SR_NS_PER_SEC)

static const char *const kind_names[REC_NKINDS] = {
	"price", "disk", "egress", "credit", "other",
};

const char *finops_rec_kind_name(enum rec_kind k)
{
	return (unsigned)k < REC_NKINDS ? kind_names[k] : NULL;
}

/* The node a tag names: "spotrun/node-id" (FOCUS), "spotrun:node" (the
 * clouds' tag, lib/cloud/compute.h), "user_spotrun:node" (AWS CUR 2.0's
 * resource_tags), "spotrun-node"/"spotrun_node" (GCP labels); 0 none.
 * *any: some key names spotrun. */
static int64_t tag_one(const char *k, json_t *v, int *any)
{
	if (!strncmp(k, "user_", 5))
		k += 5;
	if (strncasecmp(k, "spotrun", 7))
		return 0;
	*any = 1;
	if (strcasecmp(k, "spotrun/node-id") && strcasecmp(k, "spotrun:node") &&
	    strcasecmp(k, "spotrun-node") && strcasecmp(k, "spotrun_node"))
		return 0;
	return json_is_integer(v) ? json_integer_value(v) :
	       json_is_string(v) ? strtoll(json_string_value(v), NULL, 10) : 0;
}

/* Tags as a JSON object ({"k": v}), a GCP label list ([{"key": k,
 * "value": v}]) or Azure's unbraced '"k": "v", ...'. */
static int64_t tags_node(json_t *j, int *any)
{
	const char *k;
	json_t *v;
	size_t i;
	int64_t n = 0, m;

	json_object_foreach(j, k, v)
		if ((m = tag_one(k, v, any)))
			n = m;
	json_array_foreach(j, i, v) {
		const char *key = json_string_value(json_object_get(v, "key"));

		if (key && (m = tag_one(key, json_object_get(v, "value"), any)))
			n = m;
	}
	return n;
}

int64_t finops__tag_node(const char *tags, int *any)
{
	json_t *j = NULL;
	int64_t n;

	*any = 0;
	if (*tags == '{' || *tags == '[')
		j = json_loads(tags, 0, NULL);
	else if (*tags) {
		char *b = malloc(strlen(tags) + 3);

		if (b) {
			sprintf(b, "{%s}", tags);
			j = json_loads(b, 0, NULL);
			free(b);
		}
	}
	n = tags_node(j, any);
	json_decref(j);
	return n;
}

int finops_bill_parse_focus(const char *buf, size_t len, const char *name,
			    struct rec_line **out, size_t *n, struct sr_err *e)
{
	enum { RID, COST, START, CAT, SCAT, TAGS, SPROV, PROV, NCOLS };
	static const char *const cols[NCOLS] = {
		"ResourceId", "BilledCost", "ChargePeriodStart", "ChargeCategory",
		"ServiceCategory", "Tags", "ServiceProviderName", "ProviderName",
	};
	struct sr_csv r;
	int col[NCOLS], line, rc;
	size_t nf, cap = 0;

	*out = NULL;
	*n = 0;
	sr_csv_open(&r, buf, len, name);
	rc = sr_csv_header(&r, cols, NCOLS, 1u << TAGS | 1u << SPROV | 1u << PROV |
			   1u << SCAT, col, &nf, e);
	while (!rc && (rc = sr_csv_row(&r, nf, &line, e)) == 1) {
		struct rec_line *l;
		const char *cat = r.fields[col[CAT]];
		const char *scat = col[SCAT] >= 0 ? r.fields[col[SCAT]] : "";
		const char *prov = col[SPROV] >= 0 ? r.fields[col[SPROV]] :
				   col[PROV] >= 0 ? r.fields[col[PROV]] : "";

		rc = 0;
		if (*n == cap) {
			struct rec_line *nv = realloc(*out, (cap = cap ? 2 * cap : 64) *
						      sizeof *nv);
			if (!nv) {
				rc = sr_err_set(e, -ENOMEM, "out of memory");
				break;
			}
			*out = nv;
		}
		l = &(*out)[*n];
		memset(l, 0, sizeof *l);
		l->line = line;
		snprintf(l->resource_id, sizeof l->resource_id, "%s",
			 r.fields[col[RID]]);
		snprintf(l->provider, sizeof l->provider, "%s", prov);
		if (sr_money_parse(r.fields[col[COST]], &l->cost, NULL)) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: BilledCost: '%.40s' is "
					"not a decimal", name, line, r.fields[col[COST]]);
			break;
		}
		if (sr_time_parse_rfc3339(r.fields[col[START]], &l->start_ns, NULL)) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: ChargePeriodStart: "
					"'%.40s' is not a date/time", name, line,
					r.fields[col[START]]);
			break;
		}
		l->tag_node = col[TAGS] >= 0 ?
			      finops__tag_node(r.fields[col[TAGS]], &l->spotrun_tagged) : 0;
		if (!strcasecmp(cat, "Credit"))
			l->kind = REC_CREDIT;
		else if (!strcasecmp(scat, "Storage"))
			l->kind = REC_DISK;
		else if (!strcasecmp(scat, "Networking"))
			l->kind = REC_EGRESS;
		else if (!strcasecmp(cat, "Usage") && !strcasecmp(scat, "Compute"))
			l->kind = REC_COMPUTE;
		else
			l->kind = REC_OTHER;
		(*n)++;
	}
	sr_csv_close(&r);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return rc;
	}
	return 0;
}

static const struct rec_node *node_by_instance(const struct rec_node *v,
					       size_t n, const char *id)
{
	for (size_t i = 0; *id && i < n; i++)
		if (!strcmp(v[i].instance_id, id))
			return &v[i];
	return NULL;
}

static const struct rec_node *node_by_id(const struct rec_node *v, size_t n,
					 int64_t id)
{
	for (size_t i = 0; id && i < n; i++)
		if (v[i].id == id)
			return &v[i];
	return NULL;
}

static struct rec_cell *cell_of(struct rec_report *r, size_t *cap, int64_t job,
				int64_t day, const char *provider)
{
	struct rec_cell *c;

	for (size_t i = 0; i < r->ncells; i++)
		if (r->cells[i].job == job && r->cells[i].day == day &&
		    !strcmp(r->cells[i].provider, provider))
			return &r->cells[i];
	if (r->ncells == *cap) {
		struct rec_cell *nv = realloc(r->cells, (*cap = *cap ? 2 * *cap : 32) *
					      sizeof *nv);
		if (!nv)
			return NULL;
		r->cells = nv;
	}
	c = &r->cells[r->ncells++];
	memset(c, 0, sizeof *c);
	c->job = job;
	c->day = day;
	snprintf(c->provider, sizeof c->provider, "%s", provider);
	return c;
}

static int leak_add(struct rec_report *r, const struct rec_line *l)
{
	struct rec_leak *k = NULL;

	for (size_t i = 0; i < r->nleaks; i++)
		if (!strcmp(r->leaks[i].resource_id, l->resource_id))
			k = &r->leaks[i];
	if (!k) {
		struct rec_leak *nv = realloc(r->leaks, (r->nleaks + 1) * sizeof *nv);

		if (!nv)
			return -ENOMEM;
		r->leaks = nv;
		k = &r->leaks[r->nleaks++];
		memset(k, 0, sizeof *k);
		snprintf(k->resource_id, sizeof k->resource_id, "%s", l->resource_id);
		snprintf(k->provider, sizeof k->provider, "%s", l->provider);
		k->first_ns = l->start_ns;
	}
	if (l->start_ns < k->first_ns)
		k->first_ns = l->start_ns;
	k->cost += l->cost;
	k->lines++;
	r->leaked += l->cost;
	return 0;
}

static int cmp_cell(const void *a, const void *b)
{
	const struct rec_cell *x = a, *y = b;

	if (x->job != y->job)
		return x->job < y->job ? -1 : 1;
	if (x->day != y->day)
		return x->day < y->day ? -1 : 1;
	return strcmp(x->provider, y->provider);
}

int finops_reconcile(const struct rec_node *nodes, size_t nnodes,
		     const struct rec_ledger *ledger, size_t nledger,
		     const struct rec_line *lines, size_t nlines,
		     struct rec_report *r, struct sr_err *e)
{
	size_t cap = 0;

	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < nledger; i++) {
		const struct rec_node *nd = node_by_id(nodes, nnodes, ledger[i].node);
		struct rec_cell *c = cell_of(r, &cap, nd ? nd->job : 0, ledger[i].day,
					     nd ? nd->provider : "unknown");

		if (!c)
			goto oom;
		c->ledger += ledger[i].cost;
		/* until a bill line says otherwise, the price part is -ledger */
		c->part[REC_COMPUTE] -= ledger[i].cost;
	}
	for (size_t i = 0; i < nlines; i++) {
		const struct rec_line *l = &lines[i];
		const struct rec_node *nd = node_by_instance(nodes, nnodes,
							     l->resource_id);
		struct rec_cell *c;
		enum rec_kind k = l->kind;

		r->lines++;
		if (!nd)
			nd = node_by_id(nodes, nnodes, l->tag_node);
		else if (k == REC_OTHER)
			k = REC_COMPUTE; /* the instance's own line */
		if (!nd) {
			if (l->spotrun_tagged || strstr(l->resource_id, "spotrun")) {
				if (leak_add(r, l))
					goto oom;
			} else {
				r->foreign_lines++;
				r->foreign_cost += l->cost;
			}
			continue;
		}
		/* a line on a node's other resource is never its price */
		if (k == REC_COMPUTE && strcmp(l->resource_id, nd->instance_id))
			k = REC_OTHER;
		c = cell_of(r, &cap, nd->job, l->start_ns / DAY_NS, nd->provider);
		if (!c)
			goto oom;
		c->bill += l->cost;
		c->part[k] += l->cost;
	}
	if (r->ncells > 1)
		qsort(r->cells, r->ncells, sizeof *r->cells, cmp_cell);
	for (size_t i = 0; i < r->ncells; i++) {
		r->ledger += r->cells[i].ledger;
		r->bill += r->cells[i].bill;
		for (int k = 0; k < REC_NKINDS; k++) {
			r->part[k] += r->cells[i].part[k];
			r->explained += r->cells[i].part[k];
		}
	}
	r->bill += r->leaked;
	r->explained += r->leaked;
	r->diff = r->bill - r->ledger;
	return 0;
oom:
	finops_reconcile_free(r);
	return sr_err_set(e, -ENOMEM, "reconcile: out of memory");
}

void finops_reconcile_free(struct rec_report *r)
{
	if (!r)
		return;
	free(r->cells);
	free(r->leaks);
	memset(r, 0, sizeof *r);
}

static json_t *parts_json(const sr_micros *p)
{
	json_t *o = json_object();

	for (int k = 0; o && k < REC_NKINDS; k++)
		json_object_set_new(o, kind_names[k], json_integer(p[k]));
	return o;
}

json_t *finops_reconcile_json(const struct rec_report *r)
{
	json_t *cells = json_array(), *leaks = json_array();
	char ts[40];

	for (size_t i = 0; cells && i < r->ncells; i++) {
		const struct rec_cell *c = &r->cells[i];

		sr_time_format_rfc3339(c->day * DAY_NS, 0, ts, sizeof ts);
		ts[10] = '\0';
		json_array_append_new(cells, json_pack(
			"{s:I, s:s, s:s, s:I, s:I, s:I, s:o}", "job", (json_int_t)c->job,
			"day", ts, "provider", c->provider,
			"ledger_micros", (json_int_t)c->ledger,
			"bill_micros", (json_int_t)c->bill,
			"difference_micros", (json_int_t)(c->bill - c->ledger),
			"parts_micros", parts_json(c->part)));
	}
	for (size_t i = 0; leaks && i < r->nleaks; i++) {
		sr_time_format_rfc3339(r->leaks[i].first_ns, 0, ts, sizeof ts);
		json_array_append_new(leaks, json_pack(
			"{s:s, s:s, s:s, s:I, s:i}", "resource_id",
			r->leaks[i].resource_id, "provider", r->leaks[i].provider,
			"first_seen", ts, "cost_micros", (json_int_t)r->leaks[i].cost,
			"lines", r->leaks[i].lines));
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:o, s:o}",
			 "ledger_micros", (json_int_t)r->ledger,
			 "bill_micros", (json_int_t)r->bill,
			 "difference_micros", (json_int_t)r->diff,
			 "explained_micros", (json_int_t)r->explained,
			 "leaked_micros", (json_int_t)r->leaked,
			 "parts_micros", parts_json(r->part),
			 "lines", (json_int_t)r->lines,
			 "foreign_lines", (json_int_t)r->foreign_lines,
			 "foreign_micros", (json_int_t)r->foreign_cost,
			 "cells", cells, "leaks", leaks);
}
