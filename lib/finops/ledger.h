/*
 * ledger.h - the billing ledger: one row per node per billing interval,
 * in the daemon's own SQLite database.
 *
 * The ledger is append-only (triggers reject UPDATE and DELETE); every
 * total - cost, savings, idle waste, FOCUS rows, Prometheus counters - is
 * derived from it by queries.  Money is int64 micro-dollars, time int64 ns.
 *
 * The daemon's part:
 *   1. call ledger_migrate(db) from its own migrations (idempotent; it
 *      keeps its own version row in `ledger_schema`);
 *   2. every billing interval, for every node that existed during it, call
 *      ledger_append() with the interval [start_ns, end_ns) in wall-clock
 *      time and the billed duration (billed_ns, which differs from
 *      end_ns - start_ns when the local cloud runs on a time scale);
 *   3. on a preemption, a recovery or a checkpoint stall call
 *      ledger_event_append() so that lost work, downtime and stalls are
 *      costed and counted.
 *
 * Neither append opens a transaction: call them inside the transaction of
 * the state change they belong to, so a kill -9 loses both or neither.
 * A row for a (node_id, start_ns) that already exists is refused with
 * -SR_ECONFLICT, so re-billing an interval after a crash is harmless.
 *
 * Thread-safety: none of its own; the caller serialises use of `db`.
 */
#ifndef SR_FINOPS_LEDGER_H
#define SR_FINOPS_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"
#include "store/store.h"

/* FOCUS PricingCategory of what the node was bought as. */
enum ledger_pricing {
	LEDGER_STANDARD = 0,  /* on-demand */
	LEDGER_DYNAMIC = 1,   /* spot */
	LEDGER_COMMITTED = 2, /* reserved / committed use */
};

/* "Standard", "Dynamic", "Committed"; NULL for an unknown value. */
const char *ledger_pricing_name(enum ledger_pricing p);
/* Inverse of ledger_pricing_name; also accepts "on-demand"/"ondemand",
 * "spot", "reserved" (case-insensitive).  -EINVAL if unknown. */
int ledger_pricing_parse(const char *s, enum ledger_pricing *out);

#define LEDGER_PRICE_UNKNOWN INT64_C(-1)

/* SQL over a row of table ledger: the row is a warm spare's time (issue
 * 33; lib/ctl/recon_spare.c) - its node was launched as a spare and had
 * taken no rank yet when the row ended (the reconciler closes a spare's
 * row at its adoption).  Spare rows are their own line of a report
 * (report.h spare_*), not idle waste. */
#define FINOPS_SPARE_ROW_SQL                                                  \
	"EXISTS (SELECT 1 FROM nodes sn WHERE sn.id = ledger.node_id AND"     \
	" sn.spare = 1 AND (sn.adopted_ns IS NULL OR"                         \
	" ledger.end_ns <= sn.adopted_ns))"

struct ledger_row {
	/* where */
	const char *provider;       /* "aws", "gcp", "azure", "lambda", "local" */
	const char *region;         /* "us-east-1" */
	const char *zone;           /* "us-east-1a"; NULL or "" if none */
	const char *instance_type;  /* "g5.12xlarge" */
	const char *accelerator;    /* "A10G"; NULL or "" for CPU-only */
	int gpus;                   /* accelerators on the node, >= 0 */

	/* price */
	enum ledger_pricing pricing;
	sr_micros unit_price;       /* $/h actually charged for this interval */
	sr_micros list_price;       /* on-demand list $/h of the same offering */
	sr_micros reserved_price;   /* reserved $/h baseline, or LEDGER_PRICE_UNKNOWN */

	/* what */
	int64_t job_id;             /* the job's id, 0 if the node served none */
	int64_t node_id;            /* the node's id, > 0 */
	bool busy;                  /* a workload ran and utilisation >= threshold */
	int util_permille;          /* mean utilisation 0..1000, -1 if unknown */

	/* when */
	int64_t start_ns;           /* interval start, Unix epoch ns (wall clock) */
	int64_t end_ns;             /* interval end, > start_ns */
	int64_t billed_ns;          /* duration billed, >= 0 (time-scaled) */
};

/* Bring db's schema (the ledger's tables and the rest of the store's) to
 * this binary's version: store_migrate() over this connection.
 * Idempotent.  Returns 0 or -SR_E* with *e naming the step. */
int ledger_migrate(struct sqlite3 *db, struct sr_err *e);

/* Append one billing row.  The cost is computed here, once, as
 * sr_money_cost(unit_price, billed_ns), and stored with the row; list and
 * reserved costs likewise.  Validates every field (-EINVAL naming it).
 * If out_cost is not NULL it receives the cost charged.
 * Returns 0, -EINVAL, -SR_ECONFLICT (row for node_id/start_ns exists) or
 * another store error with *e set.  Inside the caller's transaction when
 * there is one. */
int ledger_row_add(struct store *db, const struct ledger_row *r,
		   sr_micros *out_cost, struct sr_err *e);

/* Events the FinOps reports and metrics count, beyond billing rows. */
enum ledger_event_kind {
	LEDGER_EV_PREEMPTION = 1, /* one per preemption, value_ns 0 (the work
				     lost is a ledger_lost row; rows written
				     before it carried the lost work here) */
	LEDGER_EV_RECOVERY = 2,   /* value_ns = downtime, notice -> training resumed */
	LEDGER_EV_CKPT_STALL = 3, /* value_ns = training stalled by one checkpoint */
};

struct ledger_event {
	enum ledger_event_kind kind;
	int64_t job_id;           /* > 0 */
	int64_t node_id;          /* 0 if not about one node */
	const char *provider;     /* where it happened; may be NULL */
	const char *region;
	const char *zone;
	const char *instance_type;
	int64_t at_ns;            /* Unix epoch ns */
	int64_t value_ns;         /* see kind, >= 0 (time-scaled, like billed_ns) */
	/* $/h of the lost resource: for a preemption the (sum over the gang
	 * of) unit prices, so lost work in dollars = cost(price, value_ns).
	 * 0 for other kinds. */
	sr_micros unit_price;
};

/* Append one event; its dollar value (lost work) is computed here.
 * Same transaction rules as ledger_row_add. */
int ledger_event_add(struct store *db, const struct ledger_event *ev,
		     struct sr_err *e);

/* The work one attempt lost (lib/ctl/recon_lost.c): the cloud time it
 * ran past the point the next attempt restored, at the unit prices of
 * its nodes (the whole gang: every rank redoes it).  One row per
 * (job, attempt); a second is ignored.  The dollars are computed here,
 * once.  Same transaction rules as ledger_row_add. */
struct ledger_lost {
	int64_t job_id;           /* > 0 */
	int64_t attempt;          /* > 0: the attempt whose work was lost */
	const char *cause;        /* "preemption", "lost", "crash", "move" */
	int64_t node_id;          /* a node of the attempt, 0 if none */
	const char *provider;     /* where it ran; may be NULL */
	const char *region;
	const char *zone;
	const char *instance_type;
	int64_t at_ns;            /* when counted, Unix epoch ns */
	int64_t value_ns;         /* cloud time lost, >= 0 */
	sr_micros unit_price;     /* $/h of the attempt's nodes together */
	int64_t restored_step;    /* what the next attempt resumed from, -1 */
};

int ledger_lost_add(struct store *db, const struct ledger_lost *l,
		    sr_micros *out_cost, struct sr_err *e);

/* The job's plan: what its declared work would cost on on-demand
 * (od_price x nodes for work_ns), recorded once per job (a second record
 * for the same job is ignored) at its first placement. */
struct ledger_plan {
	int64_t job_id;           /* > 0 */
	int64_t at_ns;            /* when planned, Unix epoch ns */
	const char *provider;     /* the on-demand offering priced; may be NULL */
	const char *region;
	const char *zone;
	const char *instance_type;
	int64_t work_ns;          /* declared work (time-scaled, like billed_ns) */
	int64_t nodes;            /* > 0 */
	sr_micros od_price;       /* on-demand $/h of one node */
};

/* Record a plan; *out_cost (may be NULL) gets its planned cost. */
int ledger_plan_add(struct store *db, const struct ledger_plan *p,
		    sr_micros *out_cost, struct sr_err *e);

/* The same three over a raw SQLite connection, for the reconciler files
 * not yet moved behind lib/store (docs/store.md); remove with them. */
int ledger_append(struct sqlite3 *db, const struct ledger_row *r,
		  sr_micros *out_cost, struct sr_err *e);
int ledger_event_append(struct sqlite3 *db, const struct ledger_event *ev,
			struct sr_err *e);
int ledger_plan_record(struct sqlite3 *db, const struct ledger_plan *p,
		       sr_micros *out_cost, struct sr_err *e);

#endif
