/*
 * dirsync_int.h - what round.c and restore.c share (not for other
 * libraries).
 */
#ifndef SR_DIRSYNC_INT_H
#define SR_DIRSYNC_INT_H

#include "dirsync.h"

/* A file as it was when its digest was taken. */
struct dirsync_known {
	struct dirsync_stat st;    /* st.path owned */
	char sha[65];
};

struct dirsync {
	struct dirsync_opts o;
	struct objstore *s;        /* owned */
	int64_t next_round;        /* above every manifest key ever listed */
	struct dirsync_round last; /* the last committed (or restored) round */
	char (*have)[65];          /* sorted digests the store holds (last's) */
	size_t nhave;
	struct dirsync_known *known; /* sorted by path */
	size_t nknown;
	struct dirsync_stats st;
	objstore_gate_fn gate;     /* dirsync_set_gate(); NULL none */
	void *gate_ud;
};

/* st's fields from sb (st->path untouched). */
struct stat;
void dirsync__stat_of(const struct stat *sb, struct dirsync_stat *st);
/* Room for one more element in *v (n used of *cap, elem bytes each):
 * 0 or -ENOMEM. */
int dirsync__grow(void **v, size_t *cap, size_t n, size_t elem);

int dirsync__have(const struct dirsync *d, const char *sha);
int dirsync__have_set(struct dirsync *d, const struct dirsync_round *r);
void dirsync__known_free(struct dirsync_known *v, size_t n);

#endif
