/*
 * statelock.h - refuse a second spotrund on the same SQLite state (issue
 * 24: two daemons on one state dir passed the lease back and forth and
 * killed each other's nodes).
 *
 * Only for a SQLite store: daemons sharing a PostgreSQL store may share
 * a state dir on purpose (the lease elects one leader; docs/store.md).
 */
#ifndef SR_SPOTRUND_STATELOCK_H
#define SR_SPOTRUND_STATELOCK_H

#include "common/err.h"

/* Create state_dir if needed and hold an exclusive lock on
 * <state_dir>/spotrund.lock for the life of the process, its pid written
 * in it.  0 with *fd the lock's descriptor (keep it open); -EBUSY with a
 * message naming the holder's pid when another process holds it; another
 * negative errno (the path, the reason) when the file cannot be used. */
int statelock_take(const char *state_dir, int *fd, struct sr_err *e);

#endif
