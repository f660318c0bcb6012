/*
 * billed.c - the bill's figures beside the estimate (see billed.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billed.h"
#include "common/timeutil.h"

#define DAY_NS (INT64_C(86400) * SR_NS_PER_SEC)

int finops_billed_add(struct store *db, const struct finops_billed *v, size_t n,
		      const char *source, int64_t now_ns, struct sr_err *e)
{
	bool own = !store_in_tx(db);
	int rc = own ? store_begin(db, e) : 0;

	for (size_t i = 0; !rc && i < n; i++) {
		struct store_stmt *st = NULL;

		if (v[i].job_id < 0 || !v[i].provider[0])
			rc = sr_err_set(e, -EINVAL, "billed: cell %zu: job_id >= 0 "
					"and a provider are required", i);
		if (!rc)
			rc = store_prepare(db, "INSERT INTO ledger_billed(job_id, day,"
					   " provider, estimate, billed, source, at_ns)"
					   " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)", &st, e);
		if (rc)
			break;
		store_bind_i64(st, 1, v[i].job_id);
		store_bind_i64(st, 2, v[i].day);
		store_bind_text(st, 3, v[i].provider);
		store_bind_i64(st, 4, v[i].estimate);
		store_bind_i64(st, 5, v[i].billed);
		store_bind_text(st, 6, source);
		store_bind_i64(st, 7, now_ns);
		rc = store_run(st, e);
		rc = rc < 0 ? rc : 0;
		store_done(st);
	}
	if (own)
		rc = store_end(db, rc, e);
	return rc;
}

int finops_billed_report(struct store *db, const struct finops_filter *f,
			 struct finops_report *r, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(db, "SELECT job_id, day, provider, estimate, billed"
			       " FROM ledger_billed b WHERE at_ns = (SELECT"
			       " max(at_ns) FROM ledger_billed c WHERE c.job_id ="
			       " b.job_id AND c.day = b.day AND c.provider ="
			       " b.provider) AND day >= ?1 AND (CAST(?2 AS BIGINT) < 0 OR day < ?2)"
			       " AND (?3 = 0 OR job_id = ?3)", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, f && f->since_ns ? f->since_ns / DAY_NS : INT64_MIN / 2);
	store_bind_i64(st, 2, f && f->until_ns ?
		       (f->until_ns + DAY_NS - 1) / DAY_NS : -1);
	store_bind_i64(st, 3, f ? f->job_id : 0);
	while ((rc = store_step(st, e)) == 1) {
		char key[64], ts[40];
		int64_t day = store_col_i64(st, "day");
		sr_micros est = store_col_i64(st, "estimate");
		sr_micros billed = store_col_i64(st, "billed");

		key[0] = '\0';
		if (r->by == FINOPS_BY_JOB) {
			int64_t j = store_col_i64(st, "job_id");

			snprintf(key, sizeof key, j ? "%lld" : "none", (long long)j);
		} else if (r->by == FINOPS_BY_DAY) {
			sr_time_format_rfc3339(day * DAY_NS, 0, ts, sizeof ts);
			snprintf(key, sizeof key, "%.10s", ts);
		} else if (r->by == FINOPS_BY_CLOUD) {
			snprintf(key, sizeof key, "%s", store_col_text(st, "provider"));
		} else if (r->by == FINOPS_BY_TOTAL) {
			snprintf(key, sizeof key, "total");
		}
		finops_report_add_billed(r, key[0] ? key : NULL, billed, est);
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "billed figures") : 0;
}

int finops_billed_map_load(struct store *db, struct finops_billed_map *m,
			   struct sr_err *e)
{
	struct store_stmt *st = NULL;
	size_t cap = 0;
	int rc = store_prepare(db, "SELECT job_id, day, provider, estimate, billed"
			       " FROM ledger_billed b WHERE at_ns = (SELECT"
			       " max(at_ns) FROM ledger_billed c WHERE c.job_id ="
			       " b.job_id AND c.day = b.day AND c.provider ="
			       " b.provider)", &st, e);

	m->v = NULL;
	m->n = 0;
	if (rc)
		return rc;
	while ((rc = store_step(st, e)) == 1) {
		struct finops_billed_cell *c;

		if (m->n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct finops_billed_cell *nv = realloc(m->v, nc * sizeof *nv);

			if (!nv) {
				rc = sr_err_set(e, -ENOMEM, "billed figures: out of memory");
				break;
			}
			m->v = nv;
			cap = nc;
		}
		c = &m->v[m->n++];
		memset(c, 0, sizeof *c);
		c->job_id = store_col_i64(st, "job_id");
		c->day = store_col_i64(st, "day");
		snprintf(c->provider, sizeof c->provider, "%s",
			 store_col_text(st, "provider"));
		c->estimate = store_col_i64(st, "estimate");
		c->billed = store_col_i64(st, "billed");
	}
	store_done(st);
	if (rc < 0) {
		finops_billed_map_free(m);
		return sr_err_prefix(e, "billed figures");
	}
	return 0;
}

void finops_billed_map_free(struct finops_billed_map *m)
{
	if (!m)
		return;
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* round(a * b / c) for c > 0, in 128 bits (no overflow for any micros). */
static sr_micros mul_div(sr_micros a, sr_micros b, sr_micros c)
{
	__int128 p = (__int128)a * b;

	return (sr_micros)(p >= 0 ? (p + c / 2) / c : -((-p + c / 2) / c));
}

sr_micros finops_billed_share(struct finops_billed_map *m, int64_t job,
			      int64_t day, const char *provider, sr_micros cost,
			      bool *billed)
{
	*billed = false;
	for (size_t i = 0; m && i < m->n; i++) {
		struct finops_billed_cell *c = &m->v[i];
		sr_micros to;

		if (c->job_id != job || c->day != day ||
		    strcmp(c->provider, provider) || c->estimate <= 0)
			continue;
		c->seen += cost;
		to = mul_div(c->billed, c->seen, c->estimate);
		cost = to - c->given;
		c->given = to;
		*billed = true;
		break;
	}
	return cost;
}
