/*
 * commit_use.c - committed capacity used and idle (see commit_use.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit_use.h"
#include "common/timeutil.h"

/* Instance time (wall ns) of the Committed ledger rows of cm's offering
 * starting in [lo, hi), and their cost. */
static int committed_used(struct store *db, const struct finops_commitment *cm,
			  int64_t lo, int64_t hi, int64_t *used,
			  sr_micros *cost, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(db, "SELECT COALESCE(sum(end_ns - start_ns), 0) AS u,"
			       " COALESCE(sum(cost), 0) AS c"
			       " FROM ledger WHERE pricing = 2 AND provider = ?1"
			       " AND region = ?2 AND instance_type = ?3"
			       " AND start_ns >= ?4 AND start_ns < ?5", &st, e);

	*used = 0;
	*cost = 0;
	if (rc)
		return rc;
	store_bind_text(st, 1, cm->provider);
	store_bind_text(st, 2, cm->region);
	store_bind_text(st, 3, cm->instance_type);
	store_bind_i64(st, 4, lo);
	store_bind_i64(st, 5, hi);
	rc = store_step(st, e);
	if (rc == 1) {
		*used = store_col_i64(st, "u");
		*cost = store_col_i64(st, "c");
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "committed capacity: use") : 0;
}

int finops_commit_use_one(struct store *db, const struct finops_commitment *cm,
			  int64_t lo, int64_t hi, struct finops_commit_use *u,
			  struct sr_err *e)
{
	int64_t idle;
	int rc;

	memset(u, 0, sizeof *u);
	u->cm = cm;
	u->lo = lo > cm->start_ns ? lo : cm->start_ns;
	u->hi = hi < cm->end_ns ? hi : cm->end_ns;
	if (u->hi <= u->lo)
		return 0;
	rc = committed_used(db, cm, u->lo, u->hi, &u->used_ns, &u->used_cost, e);
	if (rc)
		return rc;
	idle = (u->hi - u->lo) * cm->count - u->used_ns;
	u->idle_ns = idle > 0 ? idle : 0;
	u->idle_cost = sr_money_cost(cm->hourly_price, u->idle_ns);
	return 1;
}

int finops_commit_use(struct store *db, const struct finops_conf *c,
		      int64_t lo, int64_t hi, struct finops_commit_use **out,
		      size_t *n, struct sr_err *e)
{
	struct finops_commit_use *v = calloc(c->ncommitments + 1, sizeof *v);
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!v)
		return sr_err_set(e, -ENOMEM, "committed capacity: out of memory");
	for (size_t i = 0; i < c->ncommitments && rc >= 0; i++) {
		rc = finops_commit_use_one(db, &c->commitments[i], lo, hi,
					   &v[*n], e);
		if (rc == 1)
			(*n)++;
	}
	if (rc < 0) {
		free(v);
		*n = 0;
		return rc;
	}
	*out = v;
	return 0;
}

json_t *finops_commit_use_json(const struct finops_commit_use *v, size_t n)
{
	json_t *pools = json_array(), *o;
	sr_micros idle = 0, used = 0;
	int64_t idle_gpu_ns = 0;

	for (size_t i = 0; pools && i < n; i++) {
		const struct finops_commitment *cm = v[i].cm;
		json_t *p = json_pack(
			"{s:s,s:s,s:s,s:s,s:i,s:i,s:I,s:f,s:I,s:f,s:f,s:I,s:f}",
			"commitment", cm->id, "provider", cm->provider,
			"region", cm->region, "instance_type", cm->instance_type,
			"count", cm->count, "gpus", cm->gpus,
			"hourly_price_micros", (json_int_t)cm->hourly_price,
			"used_hours", (double)v[i].used_ns / 3600e9,
			"used_cost_micros", (json_int_t)v[i].used_cost,
			"idle_hours", (double)v[i].idle_ns / 3600e9,
			"idle_gpu_hours", (double)v[i].idle_ns * cm->gpus / 3600e9,
			"idle_cost_micros", (json_int_t)v[i].idle_cost,
			"idle_cost_usd", sr_money_to_usd(v[i].idle_cost));

		if (!p || json_array_append_new(pools, p)) {
			json_decref(pools);
			return NULL;
		}
		idle += v[i].idle_cost;
		used += v[i].used_cost;
		idle_gpu_ns += v[i].idle_ns * cm->gpus;
	}
	if (!pools)
		return NULL;
	o = json_pack("{s:I,s:f,s:I,s:f,s:f,s:o}",
		      "idle_cost_micros", (json_int_t)idle,
		      "idle_cost_usd", sr_money_to_usd(idle),
		      "used_cost_micros", (json_int_t)used,
		      "used_cost_usd", sr_money_to_usd(used),
		      "idle_gpu_hours", (double)idle_gpu_ns / 3600e9,
		      "pools", pools);
	return o;
}
