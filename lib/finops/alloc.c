/*
 * alloc.c - shared costs and their split over jobs (see alloc.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "commit_use.h"
#include "common/timeutil.h"
#include "ledger.h"
#include "store/store.h"

struct recip {
	int64_t job, w;                      /* weight: gpu_ns (or billed_ns) */
	char team[64], project[64], cc[64], name[128];
	double ratio;
};

static int push_item(struct finops_alloc *a, const struct finops_shared_item *it)
{
	struct finops_shared_item *n = realloc(a->items,
					       (a->nitems + 1) * sizeof *n);

	if (!n)
		return -ENOMEM;
	a->items = n;
	a->items[a->nitems++] = *it;
	return 0;
}

/* The jobs that ran in [lo, hi) with their weights, *out malloc'd. */
static int recipients(struct store *db, int64_t lo, int64_t hi,
		      struct recip **out, size_t *n, struct sr_err *e)
{
	static const char sql[] =
		"SELECT job_id AS j, sum(billed_ns * gpus) AS g, sum(billed_ns) AS b,"
		" (SELECT team FROM jobs WHERE id = job_id) AS team,"
		" (SELECT project FROM jobs WHERE id = job_id) AS project,"
		" (SELECT cost_center FROM jobs WHERE id = job_id) AS cc,"
		" (SELECT name FROM jobs WHERE id = job_id) AS name"
		" FROM ledger WHERE start_ns >= ?1 AND start_ns < ?2"
		" AND job_id IS NOT NULL GROUP BY job_id ORDER BY job_id";
	struct store_stmt *st = NULL;
	int64_t gsum = 0;
	size_t cap = 0;
	int rc = store_prepare(db, sql, &st, e);

	*out = NULL;
	*n = 0;
	if (rc)
		return rc;
	store_bind_i64(st, 1, lo);
	store_bind_i64(st, 2, hi);
	while ((rc = store_step(st, e)) == 1) {
		struct recip *r;

		if (*n == cap) {
			struct recip *nv = realloc(*out, (cap = cap ? 2 * cap : 16) *
						   sizeof *nv);
			if (!nv) {
				rc = sr_err_set(e, -ENOMEM, "out of memory");
				break;
			}
			*out = nv;
		}
		r = &(*out)[(*n)++];
		memset(r, 0, sizeof *r);
		r->job = store_col_i64(st, "j");
		r->w = store_col_i64(st, "g");
		gsum += r->w;
		/* kept in w's place when nobody used a GPU (below) */
		r->ratio = (double)store_col_i64(st, "b");
		snprintf(r->team, sizeof r->team, "%s", store_col_text(st, "team"));
		snprintf(r->project, sizeof r->project, "%s",
			 store_col_text(st, "project"));
		snprintf(r->cc, sizeof r->cc, "%s", store_col_text(st, "cc"));
		snprintf(r->name, sizeof r->name, "%s", store_col_text(st, "name"));
	}
	store_done(st);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
		return sr_err_prefix(e, "shared costs: jobs");
	}
	if (gsum == 0) /* CPU-only month: node-hours */
		for (size_t i = 0; i < *n; i++)
			(*out)[i].w = (int64_t)(*out)[i].ratio;
	return 0;
}

/* Ratios: by weight, or each team alike and by weight within it. */
static void ratios(struct recip *r, size_t n, enum finops_split split)
{
	double total = 0;
	size_t nteams = 0;

	for (size_t i = 0; i < n; i++)
		total += (double)r[i].w;
	if (split == FINOPS_SPLIT_GPU_HOURS || n == 0) {
		for (size_t i = 0; i < n; i++)
			r[i].ratio = total > 0 ? (double)r[i].w / total : 1.0 / (double)n;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < i && strcmp(r[k].team, r[i].team); k++)
			;
		nteams += k == i;
	}
	for (size_t i = 0; i < n; i++) {
		double tw = 0;
		size_t members = 0;

		for (size_t k = 0; k < n; k++) {
			if (!strcmp(r[k].team, r[i].team)) {
				tw += (double)r[k].w;
				members++;
			}
		}
		r[i].ratio = (tw > 0 ? (double)r[i].w / tw : 1.0 / (double)members) /
			     (double)nteams;
	}
}

/* item's shares over r: micro-dollars by largest remainder, so they sum
 * to the item's cost exactly. */
static int split_item(struct finops_alloc *a, size_t item, const struct recip *r,
		      size_t n)
{
	const struct finops_shared_item *it = &a->items[item];
	struct finops_share *nv = realloc(a->shares, (a->nshares + (n ? n : 1)) *
					  sizeof *nv);
	sr_micros given = 0;
	size_t base = a->nshares;

	if (!nv)
		return -ENOMEM;
	a->shares = nv;
	if (n == 0) {
		memset(&nv[base], 0, sizeof nv[base]);
		nv[base].item = item;
		nv[base].ratio = 1;
		nv[base].cost = it->cost;
		a->nshares++;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct finops_share *s = &nv[base + i];

		memset(s, 0, sizeof *s);
		s->item = item;
		s->job_id = r[i].job;
		s->gpu_ns = r[i].w;
		s->ratio = r[i].ratio;
		s->cost = (sr_micros)floor((double)it->cost * r[i].ratio);
		given += s->cost;
		memcpy(s->team, r[i].team, sizeof s->team);
		memcpy(s->project, r[i].project, sizeof s->project);
		memcpy(s->cost_center, r[i].cc, sizeof s->cost_center);
		memcpy(s->job_name, r[i].name, sizeof s->job_name);
	}
	/* the rest, one micro-dollar at a time, to the largest remainders */
	while (given < it->cost) {
		size_t best = 0;
		double bestf = -1;

		for (size_t i = 0; i < n; i++) {
			double f = (double)it->cost * r[i].ratio -
				   (double)nv[base + i].cost;

			if (f > bestf) {
				bestf = f;
				best = i;
			}
		}
		nv[base + best].cost++;
		given++;
	}
	a->nshares += n;
	return 0;
}

static int first_row(struct store *db, int64_t *lo, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(db, "SELECT min(start_ns) AS m FROM ledger", &st, e);

	if (rc)
		return rc;
	rc = store_step(st, e);
	if (rc == 1 && !store_col_null(st, "m"))
		*lo = store_col_i64(st, "m");
	store_done(st);
	return rc < 0 ? rc : 0;
}

/* The shared charges of one month's part [lo, hi), split. */
static int month(struct store *db, const struct finops_conf *c, int64_t lo,
		 int64_t hi, struct finops_alloc *a, struct sr_err *e)
{
	struct recip *r = NULL;
	size_t n = 0, first = a->nitems;
	int rc = recipients(db, lo, hi, &r, &n, e);

	if (rc)
		return rc;
	ratios(r, n, c->split);
	if (c->has_control_plane && c->cp_hourly_price > 0) {
		struct finops_shared_item it = {
			.kind = FINOPS_SHARED_CONTROL_PLANE, .start_ns = lo,
			.end_ns = hi, .qty_ns = hi - lo,
			.unit_price = c->cp_hourly_price,
			.cost = sr_money_cost(c->cp_hourly_price, hi - lo),
		};

		rc = push_item(a, &it);
	}
	for (size_t i = 0; !rc && i < c->ncommitments; i++) {
		struct finops_commit_use u;

		rc = finops_commit_use_one(db, &c->commitments[i], lo, hi, &u, e);
		if (rc < 0)
			break;
		rc = 0;
		if (u.idle_ns <= 0)
			continue;
		rc = push_item(a, &(struct finops_shared_item){
			.kind = FINOPS_SHARED_IDLE_RESERVED, .cm = u.cm,
			.start_ns = u.lo, .end_ns = u.hi, .qty_ns = u.idle_ns,
			.unit_price = u.cm->hourly_price, .cost = u.idle_cost });
	}
	for (size_t i = first; !rc && i < a->nitems; i++)
		rc = split_item(a, i, r, n);
	free(r);
	if (rc == -ENOMEM)
		sr_err_set(e, rc, "shared costs: out of memory");
	return rc;
}

int finops_window(struct store *db, const struct finops_filter *f,
		  int64_t now_ns, int64_t *lo, int64_t *hi, struct sr_err *e)
{
	int rc;

	*lo = f && f->since_ns ? f->since_ns : 0;
	*hi = f && f->until_ns ? f->until_ns : now_ns;
	if (!*lo) {
		*lo = *hi;
		rc = first_row(db, lo, e);
		if (rc)
			return sr_err_prefix(e, "shared costs");
	}
	/* whole seconds, as the FOCUS periods */
	*lo -= *lo % SR_NS_PER_SEC;
	*hi -= *hi % SR_NS_PER_SEC;
	return 0;
}

int finops_alloc_build(struct store *db, const struct finops_conf *c,
		       const struct finops_filter *f, int64_t now_ns,
		       struct finops_alloc *out, struct sr_err *e)
{
	int64_t lo, hi;
	int rc = 0;

	memset(out, 0, sizeof *out);
	out->split = c->split;
	if (!c->has_control_plane && !c->ncommitments)
		return 0;
	rc = finops_window(db, f, now_ns, &lo, &hi, e);
	if (rc)
		return rc;
	for (int64_t m = lo; !rc && m < hi;) {
		int64_t next = sr_time_month_start(m, 1);

		if (next > hi)
			next = hi;
		rc = month(db, c, m, next, out, e);
		m = next;
	}
	if (rc)
		finops_alloc_free(out);
	return rc;
}

void finops_alloc_free(struct finops_alloc *a)
{
	if (!a)
		return;
	free(a->items);
	free(a->shares);
	a->items = NULL;
	a->shares = NULL;
	a->nitems = a->nshares = 0;
}

int finops_report_add_shared(struct finops_report *r,
			     const struct finops_alloc *a, int64_t job_id)
{
	for (size_t i = 0; i < a->nshares; i++) {
		const struct finops_share *s = &a->shares[i];
		const char *key = NULL;
		char jk[24];

		if (job_id && s->job_id != job_id)
			continue;
		switch (r->by) {
		case FINOPS_BY_TOTAL:
			key = "total";
			break;
		case FINOPS_BY_JOB:
			snprintf(jk, sizeof jk, "%lld", (long long)s->job_id);
			key = s->job_id ? jk : "none";
			break;
		case FINOPS_BY_TEAM:
			key = *s->team ? s->team : FINOPS_UNASSIGNED;
			break;
		case FINOPS_BY_PROJECT:
			key = *s->project ? s->project : FINOPS_UNASSIGNED;
			break;
		case FINOPS_BY_COST_CENTER:
			key = *s->cost_center ? s->cost_center : FINOPS_UNASSIGNED;
			break;
		default:
			break;
		}
		if (finops_report_add_shared_to(r, key, s->cost))
			return -ENOMEM;
	}
	return 0;
}
