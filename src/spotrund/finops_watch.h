/*
 * finops_watch.h - budgets and autostop, run on the reconciler thread.
 */
#ifndef SR_SPOTRUND_FINOPS_WATCH_H
#define SR_SPOTRUND_FINOPS_WATCH_H

#include <sqlite3.h>

struct ctl;

/* At most once a second: enforce every live job's budget and autostop
 * (see finops_watch.c).  Must run outside a transaction. */
void finops_watch_tick(struct ctl *c, sqlite3 *db);

#endif
