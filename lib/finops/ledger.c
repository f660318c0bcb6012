/*
 * ledger.c - the append-only billing ledger in the daemon's SQLite DB.
 *
 * Tables (all STRICT; money in micro-dollars, time in ns):
 *
 *   ledger(id, provider, region, zone, instance_type, accelerator, gpus,
 *          pricing, unit_price, list_price, reserved_price, job_id,
 *          node_id, busy, util_permille, start_ns, end_ns, billed_ns,
 *          cost, list_cost, reserved_cost)
 *          UNIQUE(node_id, start_ns); zone, accelerator, job_id,
 *          reserved_price, reserved_cost, util_permille NULL when
 *          unknown or absent
 *   ledger_event(id, kind, job_id, node_id, provider, region, zone,
 *          instance_type, at_ns, value_ns, unit_price, value_cost)
 *
 * Invariants, enforced by CHECK constraints and triggers:
 *   - rows are never updated or deleted;
 *   - cost = sr_money_cost(unit_price, billed_ns), and the same for
 *     list_cost / reserved_cost, computed once here so every report
 *     derived from the table agrees to the micro-dollar;
 *   - end_ns > start_ns, billed_ns >= 0, prices >= 0;
 *   - a row never crosses a UTC month boundary (FOCUS billing periods are
 *     calendar months): ledger_append splits such an interval.
 *
 *   ledger_plan(job_id, at_ns, provider, region, zone, instance_type,
 *          work_ns, nodes, od_price, planned_cost)
 *          one row per job: what running its declared work on on-demand
 *          would cost (the baseline of honest savings, report.h)
 *
 * The tables are created by lib/store's migrations (component 'ledger',
 * lib/store/schema.c): version 1 = ledger and ledger_event; version 2
 * adds ledger_plan.
 */
#include <string.h>
#include <strings.h>

#include <stdio.h>
#include <time.h>

#include "common/timeutil.h"
#include "ledger.h"
#include "store/store.h"

const char *ledger_pricing_name(enum ledger_pricing p)
{
	switch (p) {
	case LEDGER_STANDARD:
		return "Standard";
	case LEDGER_DYNAMIC:
		return "Dynamic";
	case LEDGER_COMMITTED:
		return "Committed";
	}
	return NULL;
}

int ledger_pricing_parse(const char *s, enum ledger_pricing *out)
{
	static const struct {
		const char *name;
		enum ledger_pricing p;
	} names[] = {
		{ "standard", LEDGER_STANDARD },   { "on-demand", LEDGER_STANDARD },
		{ "ondemand", LEDGER_STANDARD },   { "dynamic", LEDGER_DYNAMIC },
		{ "spot", LEDGER_DYNAMIC },        { "committed", LEDGER_COMMITTED },
		{ "reserved", LEDGER_COMMITTED },
	};

	for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++) {
		if (!strcasecmp(s, names[i].name)) {
			*out = names[i].p;
			return 0;
		}
	}
	return -EINVAL;
}

int ledger_migrate(struct sqlite3 *db, struct sr_err *e)
{
	struct store *s = NULL, *tmp = NULL;
	int rc = store_bridge(db, &s, &tmp, e);

	if (!rc)
		rc = store_migrate(s, e);
	store_close(tmp);
	return rc;
}

static int check_str(const char *s, const char *field, struct sr_err *e)
{
	if (!s || !*s)
		return sr_err_set(e, -EINVAL, "ledger row: %s: missing", field);
	if (strlen(s) > 256)
		return sr_err_set(e, -EINVAL, "ledger row: %s: longer than 256 bytes",
				  field);
	return 0;
}

static int validate_row(const struct ledger_row *r, struct sr_err *e)
{
	int rc;

	rc = check_str(r->provider, "provider", e);
	if (!rc)
		rc = check_str(r->region, "region", e);
	if (!rc)
		rc = check_str(r->instance_type, "instance_type", e);
	if (rc)
		return rc;
	if (r->node_id <= 0)
		return sr_err_set(e, -EINVAL, "ledger row: node_id: not positive");
	if (r->job_id < 0)
		return sr_err_set(e, -EINVAL, "ledger row: job_id: negative");
	if (!ledger_pricing_name(r->pricing))
		return sr_err_set(e, -EINVAL, "ledger row: pricing: unknown value %d",
				  (int)r->pricing);
	if (r->gpus < 0)
		return sr_err_set(e, -EINVAL, "ledger row: gpus: negative");
	if (r->unit_price < 0)
		return sr_err_set(e, -EINVAL, "ledger row: unit_price: negative");
	if (r->list_price < 0)
		return sr_err_set(e, -EINVAL, "ledger row: list_price: negative");
	if (r->reserved_price < 0 && r->reserved_price != LEDGER_PRICE_UNKNOWN)
		return sr_err_set(e, -EINVAL, "ledger row: reserved_price: negative");
	if (r->util_permille < -1 || r->util_permille > 1000)
		return sr_err_set(e, -EINVAL,
				  "ledger row: util_permille: %d not in -1..1000",
				  r->util_permille);
	if (r->end_ns <= r->start_ns)
		return sr_err_set(e, -EINVAL,
				  "ledger row: end_ns: not after start_ns");
	if (r->billed_ns < 0)
		return sr_err_set(e, -EINVAL, "ledger row: billed_ns: negative");
	return 0;
}

static int insert_row(struct store *db, const struct ledger_row *r,
		      sr_micros *out_cost, struct sr_err *e)
{
	static const char sql[] =
		"INSERT INTO ledger (provider, region, zone, instance_type,"
		" accelerator, gpus, pricing, unit_price, list_price,"
		" reserved_price, job_id, node_id, busy, util_permille, start_ns,"
		" end_ns, billed_ns, cost, list_cost, reserved_cost)"
		" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,"
		"?16,?17,?18,?19,?20)";
	struct store_stmt *st = NULL;
	sr_micros cost;
	int rc;

	rc = store_prepare(db, sql, &st, e);
	if (rc)
		return rc;
	cost = sr_money_cost(r->unit_price, r->billed_ns);
	store_bind_text(st, 1, r->provider);
	store_bind_text(st, 2, r->region);
	store_bind_text(st, 3, r->zone && *r->zone ? r->zone : NULL);
	store_bind_text(st, 4, r->instance_type);
	store_bind_text(st, 5, r->accelerator && *r->accelerator ? r->accelerator
								 : NULL);
	store_bind_i64(st, 6, r->gpus);
	store_bind_i64(st, 7, (int)r->pricing);
	store_bind_i64(st, 8, r->unit_price);
	store_bind_i64(st, 9, r->list_price);
	if (r->reserved_price >= 0)
		store_bind_i64(st, 10, r->reserved_price);
	else
		store_bind_null(st, 10);
	if (r->job_id > 0)
		store_bind_i64(st, 11, r->job_id);
	else
		store_bind_null(st, 11);
	store_bind_i64(st, 12, r->node_id);
	store_bind_i64(st, 13, r->busy ? 1 : 0);
	if (r->util_permille >= 0)
		store_bind_i64(st, 14, r->util_permille);
	else
		store_bind_null(st, 14);
	store_bind_i64(st, 15, r->start_ns);
	store_bind_i64(st, 16, r->end_ns);
	store_bind_i64(st, 17, r->billed_ns);
	store_bind_i64(st, 18, cost);
	store_bind_i64(st, 19, sr_money_cost(r->list_price, r->billed_ns));
	if (r->reserved_price >= 0)
		store_bind_i64(st, 20, sr_money_cost(r->reserved_price, r->billed_ns));
	else
		store_bind_null(st, 20);
	rc = store_run(st, e);
	store_done(st);
	if (rc == -SR_ECONFLICT)
		return sr_err_set(e, rc, "ledger_append: node %lld already billed "
				  "from %lld", (long long)r->node_id,
				  (long long)r->start_ns);
	if (rc < 0)
		return sr_err_prefix(e, "ledger_append");
	if (out_cost)
		*out_cost = cost;
	return 0;
}


/* All or none: inside the caller's transaction a savepoint, else a
 * transaction of its own.  split_end(db, mode, rc, e) finishes it. */
enum split_mode { SPLIT_SAVEPOINT, SPLIT_TX };

static int split_begin(struct store *db, enum split_mode *mode, struct sr_err *e)
{
	if (store_in_tx(db)) {
		*mode = SPLIT_SAVEPOINT;
		return store_exec_sql(db, "SAVEPOINT ledger_split", e);
	}
	*mode = SPLIT_TX;
	return store_begin(db, e);
}

static int split_end(struct store *db, enum split_mode mode, int rc,
		     struct sr_err *e)
{
	struct sr_err ignored = { 0 };

	if (mode == SPLIT_TX)
		return store_end(db, rc, e);
	if (rc)
		store_exec_sql(db, "ROLLBACK TO SAVEPOINT ledger_split", &ignored);
	store_exec_sql(db, "RELEASE SAVEPOINT ledger_split", &ignored);
	return rc;
}

/* An interval that crosses a UTC month boundary is stored as one row per
 * month, with billed_ns split in proportion to wall-clock time, so that
 * every row - and every FOCUS row - lies inside one billing period.  The
 * parts are inserted all or none. */
int ledger_row_add(struct store *db, const struct ledger_row *r,
		   sr_micros *out_cost, struct sr_err *e)
{
	struct ledger_row part = *r;
	sr_micros total = 0, c;
	int64_t billed_left = r->billed_ns;
	enum split_mode mode;
	int rc;

	if (out_cost)
		*out_cost = 0;
	rc = validate_row(r, e);
	if (rc)
		return rc;
	if (sr_time_month_start(r->start_ns, 1) >= r->end_ns)
		return insert_row(db, r, out_cost, e);
	rc = split_begin(db, &mode, e);
	if (rc)
		return sr_err_prefix(e, "ledger_append");
	while (!rc && part.start_ns < r->end_ns) {
		part.end_ns = sr_time_month_start(part.start_ns, 1);
		if (part.end_ns >= r->end_ns) {
			part.end_ns = r->end_ns;
			part.billed_ns = billed_left;
		} else {
			part.billed_ns = (int64_t)((__int128)r->billed_ns *
						   (part.end_ns - part.start_ns) /
						   (r->end_ns - r->start_ns));
		}
		billed_left -= part.billed_ns;
		rc = insert_row(db, &part, &c, e);
		total += c;
		part.start_ns = part.end_ns;
	}
	rc = split_end(db, mode, rc, e);
	if (!rc && out_cost)
		*out_cost = total;
	return rc;
}

int ledger_event_add(struct store *db, const struct ledger_event *ev,
		     struct sr_err *e)
{
	static const char sql[] =
		"INSERT INTO ledger_event (kind, job_id, node_id, provider,"
		" region, zone, instance_type, at_ns, value_ns, unit_price,"
		" value_cost) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)";
	struct store_stmt *st = NULL;
	int rc;

	if (ev->kind < LEDGER_EV_PREEMPTION || ev->kind > LEDGER_EV_CKPT_STALL)
		return sr_err_set(e, -EINVAL, "ledger event: kind: unknown value %d",
				  (int)ev->kind);
	if (ev->job_id <= 0)
		return sr_err_set(e, -EINVAL, "ledger event: job_id: not positive");
	if (ev->node_id < 0)
		return sr_err_set(e, -EINVAL, "ledger event: node_id: negative");
	if (ev->value_ns < 0)
		return sr_err_set(e, -EINVAL, "ledger event: value_ns: negative");
	if (ev->unit_price < 0)
		return sr_err_set(e, -EINVAL, "ledger event: unit_price: negative");
	rc = store_prepare(db, sql, &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, (int)ev->kind);
	store_bind_i64(st, 2, ev->job_id);
	if (ev->node_id > 0)
		store_bind_i64(st, 3, ev->node_id);
	else
		store_bind_null(st, 3);
	store_bind_text(st, 4, ev->provider && *ev->provider ? ev->provider : NULL);
	store_bind_text(st, 5, ev->region && *ev->region ? ev->region : NULL);
	store_bind_text(st, 6, ev->zone && *ev->zone ? ev->zone : NULL);
	store_bind_text(st, 7, ev->instance_type && *ev->instance_type ?
			ev->instance_type : NULL);
	store_bind_i64(st, 8, ev->at_ns);
	store_bind_i64(st, 9, ev->value_ns);
	store_bind_i64(st, 10, ev->unit_price);
	store_bind_i64(st, 11, ev->kind == LEDGER_EV_PREEMPTION ?
		       sr_money_cost(ev->unit_price, ev->value_ns) : 0);
	rc = store_run(st, e);
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "ledger_event_append") : 0;
}

static bool lost_cause_ok(const char *c)
{
	return c && (!strcmp(c, "preemption") || !strcmp(c, "lost") ||
		     !strcmp(c, "crash") || !strcmp(c, "move"));
}

int ledger_lost_add(struct store *db, const struct ledger_lost *l,
		    sr_micros *out_cost, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	sr_micros cost;
	int rc;

	if (l->job_id <= 0 || l->attempt <= 0)
		return sr_err_set(e, -EINVAL, "ledger lost work: job_id and attempt "
				  "must be > 0");
	if (!lost_cause_ok(l->cause))
		return sr_err_set(e, -EINVAL, "ledger lost work: cause: '%.32s' is "
				  "not preemption, lost, crash or move",
				  l->cause ? l->cause : "(null)");
	if (l->value_ns < 0 || l->unit_price < 0 || l->node_id < 0)
		return sr_err_set(e, -EINVAL, "ledger lost work: job %lld: value, "
				  "price and node must not be negative",
				  (long long)l->job_id);
	cost = sr_money_cost(l->unit_price, l->value_ns);
	rc = store_prepare(db, "INSERT INTO ledger_lost(job_id, attempt, cause,"
			   " node_id, provider, region, zone, instance_type, at_ns,"
			   " value_ns, unit_price, value_cost, restored_step)"
			   " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
			   &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, l->job_id);
	store_bind_i64(st, 2, l->attempt);
	store_bind_text(st, 3, l->cause);
	if (l->node_id > 0)
		store_bind_i64(st, 4, l->node_id);
	else
		store_bind_null(st, 4);
	store_bind_text(st, 5, l->provider && *l->provider ? l->provider : NULL);
	store_bind_text(st, 6, l->region && *l->region ? l->region : NULL);
	store_bind_text(st, 7, l->zone && *l->zone ? l->zone : NULL);
	store_bind_text(st, 8, l->instance_type && *l->instance_type ?
			l->instance_type : NULL);
	store_bind_i64(st, 9, l->at_ns);
	store_bind_i64(st, 10, l->value_ns);
	store_bind_i64(st, 11, l->unit_price);
	store_bind_i64(st, 12, cost);
	if (l->restored_step >= 0)
		store_bind_i64(st, 13, l->restored_step);
	else
		store_bind_null(st, 13);
	rc = store_run(st, e);
	store_done(st);
	if (rc < 0)
		return sr_err_prefix(e, "ledger_lost_add");
	if (out_cost)
		*out_cost = cost;
	return 0;
}

int ledger_plan_add(struct store *db, const struct ledger_plan *p,
		    sr_micros *out_cost, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	sr_micros cost;
	int rc;

	if (p->job_id <= 0)
		return sr_err_set(e, -EINVAL, "ledger plan: job_id: must be > 0");
	if (p->work_ns < 0 || p->nodes <= 0 || p->od_price < 0)
		return sr_err_set(e, -EINVAL, "ledger plan: job %lld: work, nodes "
				  "and price must be positive", (long long)p->job_id);
	cost = sr_money_cost(p->od_price * p->nodes, p->work_ns);
	/* a second plan for the same job is ignored */
	rc = store_prepare(db, "INSERT INTO ledger_plan(job_id, at_ns,"
			   " provider, region, zone, instance_type, work_ns,"
			   " nodes, od_price, planned_cost)"
			   " VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
			   &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, p->job_id);
	store_bind_i64(st, 2, p->at_ns);
	store_bind_text(st, 3, p->provider);
	store_bind_text(st, 4, p->region);
	store_bind_text(st, 5, p->zone);
	store_bind_text(st, 6, p->instance_type);
	store_bind_i64(st, 7, p->work_ns);
	store_bind_i64(st, 8, p->nodes);
	store_bind_i64(st, 9, p->od_price);
	store_bind_i64(st, 10, cost);
	rc = store_run(st, e);
	store_done(st);
	if (rc < 0)
		return sr_err_prefix(e, "ledger_plan_record");
	if (out_cost)
		*out_cost = cost;
	return 0;
}

/* ---- over a raw SQLite connection (the reconciler's, until it moves
 * behind lib/store; docs/store.md): the same functions through the store
 * of that connection ---- */

int ledger_append(struct sqlite3 *db, const struct ledger_row *r,
		  sr_micros *out_cost, struct sr_err *e)
{
	struct store *s = NULL, *tmp = NULL;
	int rc = store_bridge(db, &s, &tmp, e);

	if (!rc)
		rc = ledger_row_add(s, r, out_cost, e);
	store_close(tmp);
	return rc;
}

int ledger_event_append(struct sqlite3 *db, const struct ledger_event *ev,
			struct sr_err *e)
{
	struct store *s = NULL, *tmp = NULL;
	int rc = store_bridge(db, &s, &tmp, e);

	if (!rc)
		rc = ledger_event_add(s, ev, e);
	store_close(tmp);
	return rc;
}

int ledger_plan_record(struct sqlite3 *db, const struct ledger_plan *p,
		       sr_micros *out_cost, struct sr_err *e)
{
	struct store *s = NULL, *tmp = NULL;
	int rc = store_bridge(db, &s, &tmp, e);

	if (!rc)
		rc = ledger_plan_add(s, p, out_cost, e);
	store_close(tmp);
	return rc;
}
