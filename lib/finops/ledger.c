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
#include "dbutil.h"
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

int ledger_migrate(sqlite3 *db, struct sr_err *e)
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

static int insert_row(sqlite3 *db, const struct ledger_row *r,
		      sr_micros *out_cost, struct sr_err *e)
{
	static const char sql[] =
		"INSERT INTO ledger (provider, region, zone, instance_type,"
		" accelerator, gpus, pricing, unit_price, list_price,"
		" reserved_price, job_id, node_id, busy, util_permille, start_ns,"
		" end_ns, billed_ns, cost, list_cost, reserved_cost)"
		" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,"
		"?16,?17,?18,?19,?20)";
	sqlite3_stmt *st = NULL;
	sr_micros cost;
	int rc, src;

	rc = finops__prepare(db, sql, &st, e);
	if (rc)
		return rc;
	cost = sr_money_cost(r->unit_price, r->billed_ns);
	sqlite3_bind_text(st, 1, r->provider, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, r->region, -1, SQLITE_STATIC);
	finops__bind_text_or_null(st, 3, r->zone);
	sqlite3_bind_text(st, 4, r->instance_type, -1, SQLITE_STATIC);
	finops__bind_text_or_null(st, 5, r->accelerator);
	sqlite3_bind_int(st, 6, r->gpus);
	sqlite3_bind_int(st, 7, (int)r->pricing);
	sqlite3_bind_int64(st, 8, r->unit_price);
	sqlite3_bind_int64(st, 9, r->list_price);
	if (r->reserved_price >= 0)
		sqlite3_bind_int64(st, 10, r->reserved_price);
	if (r->job_id > 0)
		sqlite3_bind_int64(st, 11, r->job_id);
	sqlite3_bind_int64(st, 12, r->node_id);
	sqlite3_bind_int(st, 13, r->busy ? 1 : 0);
	if (r->util_permille >= 0)
		sqlite3_bind_int(st, 14, r->util_permille);
	sqlite3_bind_int64(st, 15, r->start_ns);
	sqlite3_bind_int64(st, 16, r->end_ns);
	sqlite3_bind_int64(st, 17, r->billed_ns);
	sqlite3_bind_int64(st, 18, cost);
	sqlite3_bind_int64(st, 19, sr_money_cost(r->list_price, r->billed_ns));
	if (r->reserved_price >= 0)
		sqlite3_bind_int64(st, 20,
				   sr_money_cost(r->reserved_price, r->billed_ns));
	src = sqlite3_step(st);
	if (src != SQLITE_DONE) {
		rc = finops__db_err(db, sqlite3_extended_errcode(db), e,
				    "ledger_append");
		if (rc == -SR_ECONFLICT)
			sr_err_set(e, rc, "ledger_append: node %lld already billed "
				   "from %lld", (long long)r->node_id,
				   (long long)r->start_ns);
		goto out;
	}
	if (out_cost)
		*out_cost = cost;
out:
	sqlite3_finalize(st);
	return rc;
}

/* First instant of the UTC month after the one containing ns. */
static int64_t next_month_ns(int64_t ns)
{
	time_t t = (time_t)(ns / SR_NS_PER_SEC);
	struct tm tm;

	gmtime_r(&t, &tm);
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_mon += 1;
	return (int64_t)timegm(&tm) * SR_NS_PER_SEC;
}

/* An interval that crosses a UTC month boundary is stored as one row per
 * month, with billed_ns split in proportion to wall-clock time, so that
 * every row - and every FOCUS row - lies inside one billing period.  The
 * parts are inserted under one savepoint: all or none. */
int ledger_append(sqlite3 *db, const struct ledger_row *r,
		  sr_micros *out_cost, struct sr_err *e)
{
	struct ledger_row part = *r;
	sr_micros total = 0, c;
	int64_t billed_left = r->billed_ns;
	int rc, nested = 0;

	if (out_cost)
		*out_cost = 0;
	rc = validate_row(r, e);
	if (rc)
		return rc;
	if (next_month_ns(r->start_ns) >= r->end_ns)
		return insert_row(db, r, out_cost, e);
	rc = sqlite3_exec(db, "SAVEPOINT ledger_split", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return finops__db_err(db, rc, e, "ledger_append");
	nested = 1;
	while (part.start_ns < r->end_ns) {
		part.end_ns = next_month_ns(part.start_ns);
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
		if (rc)
			goto out;
		total += c;
		part.start_ns = part.end_ns;
	}
	if (out_cost)
		*out_cost = total;
out:
	if (nested && rc)
		sqlite3_exec(db, "ROLLBACK TO ledger_split", NULL, NULL, NULL);
	if (nested)
		sqlite3_exec(db, "RELEASE ledger_split", NULL, NULL, NULL);
	return rc;
}

int ledger_event_append(sqlite3 *db, const struct ledger_event *ev,
			struct sr_err *e)
{
	static const char sql[] =
		"INSERT INTO ledger_event (kind, job_id, node_id, provider,"
		" region, zone, instance_type, at_ns, value_ns, unit_price,"
		" value_cost) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)";
	sqlite3_stmt *st = NULL;
	int rc, src;

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
	rc = finops__prepare(db, sql, &st, e);
	if (rc)
		return rc;
	sqlite3_bind_int(st, 1, (int)ev->kind);
	sqlite3_bind_int64(st, 2, ev->job_id);
	if (ev->node_id > 0)
		sqlite3_bind_int64(st, 3, ev->node_id);
	finops__bind_text_or_null(st, 4, ev->provider);
	finops__bind_text_or_null(st, 5, ev->region);
	finops__bind_text_or_null(st, 6, ev->zone);
	finops__bind_text_or_null(st, 7, ev->instance_type);
	sqlite3_bind_int64(st, 8, ev->at_ns);
	sqlite3_bind_int64(st, 9, ev->value_ns);
	sqlite3_bind_int64(st, 10, ev->unit_price);
	sqlite3_bind_int64(st, 11, ev->kind == LEDGER_EV_PREEMPTION ?
				   sr_money_cost(ev->unit_price, ev->value_ns) : 0);
	src = sqlite3_step(st);
	if (src != SQLITE_DONE)
		rc = finops__db_err(db, sqlite3_extended_errcode(db), e,
				    "ledger_event_append");
	sqlite3_finalize(st);
	return rc;
}

int ledger_plan_record(sqlite3 *db, const struct ledger_plan *p,
		       sr_micros *out_cost, struct sr_err *e)
{
	sqlite3_stmt *st = NULL;
	sr_micros cost;
	int rc, src;

	if (p->job_id <= 0)
		return sr_err_set(e, -EINVAL, "ledger plan: job_id: must be > 0");
	if (p->work_ns < 0 || p->nodes <= 0 || p->od_price < 0)
		return sr_err_set(e, -EINVAL, "ledger plan: job %lld: work, nodes "
				  "and price must be positive", (long long)p->job_id);
	cost = sr_money_cost(p->od_price * p->nodes, p->work_ns);
	rc = finops__prepare(db, "INSERT OR IGNORE INTO ledger_plan(job_id, at_ns,"
			     " provider, region, zone, instance_type, work_ns,"
			     " nodes, od_price, planned_cost)"
			     " VALUES (?,?,?,?,?,?,?,?,?,?)", &st, e);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, p->job_id);
	sqlite3_bind_int64(st, 2, p->at_ns);
	sqlite3_bind_text(st, 3, p->provider, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, p->region, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, p->zone, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, p->instance_type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, p->work_ns);
	sqlite3_bind_int64(st, 8, p->nodes);
	sqlite3_bind_int64(st, 9, p->od_price);
	sqlite3_bind_int64(st, 10, cost);
	src = sqlite3_step(st);
	sqlite3_finalize(st);
	if (src != SQLITE_DONE)
		return finops__db_err(db, src, e, "ledger_plan_record");
	if (out_cost)
		*out_cost = cost;
	return 0;
}
