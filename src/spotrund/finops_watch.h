/*
 * finops_watch.h - budgets and autostop, run on the reconciler thread.
 */
#ifndef SR_SPOTRUND_FINOPS_WATCH_H
#define SR_SPOTRUND_FINOPS_WATCH_H

struct ctl;
struct store;

/* At most once a second: enforce every live job's budget and autostop
 * (see finops_watch.c).  Must run outside a transaction. */
void finops_watch_tick(struct ctl *c, struct store *db);

#endif
