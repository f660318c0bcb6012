/*
 * finops_watch.h - budgets and autostop, run on the reconciler thread.
 */
#ifndef SR_SPOTRUND_FINOPS_WATCH_H
#define SR_SPOTRUND_FINOPS_WATCH_H

#include <stdint.h>

struct ctl;
struct store;

/* At most once a second: enforce every live job's budget and autostop
 * (see finops_watch.c).  Must run outside a transaction. */
void finops_watch_tick(struct ctl *c, struct store *db);

/* Every BUDGET_EVERY_NS: each team/project budget of <state-dir>/
 * finops.json, its month-end forecast (lib/finops/budget.h), and one
 * team_budget alert per level (80, 100) crossed per month. */
void finops_watch_budgets(struct ctl *c, struct store *db, int64_t now_ns);

struct finops_alert;
/* Queue an alert to the channels of alerts.json (finops_hooks.c); no
 * channel: nothing. */
void finops_hooks_alert(struct ctl *c, struct finops_alert *a);

#endif
