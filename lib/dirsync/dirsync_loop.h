/*
 * dirsync_loop.h - the syncer process's loop (loop.c has its diagram):
 * what `spotrun-agent --dirsync` runs in the workload's isolation.
 */
#ifndef SR_DIRSYNC_LOOP_H
#define SR_DIRSYNC_LOOP_H

#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

struct dirsync_loop_opts {
	const char *uri;        /* the bucket mount's source */
	const char *dir;        /* its local directory (made if missing) */
	int64_t quiet_ns;       /* a file is stable this long after its
				   last change */
	int64_t poll_ns;        /* scan period (500 ms when 0) */
	int keep, workers;      /* dirsync_opts' */
	int copy;               /* COPY mode: download, then exit */
	int upload;             /* 0: restore only (ranks other than 0) */
	int cmd_fd;             /* "sync" / "final" lines; EOF = final; -1 */
	FILE *events;           /* JSON lines */
	const char *request;    /* sync_now request file, NULL none */
	const char *answer;     /* its answer, written durably */
	int background;         /* 1: lower our CPU (nice +10) and I/O
				   (best effort, lowest level) priority, so
				   the training beside us is served first */
	int64_t yield_max_ns;   /* > 0: hold uploads back while the
				   workload writes into dir (watch.c), at
				   most this long at a stretch; 0 never */
};

/* A write this recent holds the uploads back (watch.c). */
#define DIRSYNC_YIELD_QUIET_NS (250 * 1000000LL)

/* Run until the final round is committed (0), or a start failure (the
 * store refused, the directory cannot be opened): < 0 with *e. */
int dirsync_loop(const struct dirsync_loop_opts *o, struct sr_err *e);

#endif
