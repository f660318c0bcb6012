/*
 * lease_id.c - the holder id a daemon takes the lease under (lease.c):
 * a daemon restarted on its state dir is the same holder as the one
 * before it, once that one is provably gone.
 *
 * DESIGN.  Without it every process had a fresh random id, so on
 * PostgreSQL a daemon killed with -9 and started again at once found its
 * own lease unexpired and stood by for up to a whole lease (5 s by
 * default) before anything was reconciled, its agents' writes answered
 * 503 meanwhile; a crash loop of short lives made no progress at all
 * (tests/py/test_ctl_liveloop.py, its ASan pass on PostgreSQL).  SQLite
 * never waited: the state dir's lock (src/spotrund/statelock.c) proves
 * the last holder dead.  The same proof, for every backend:
 *
 *   <state>/lease.lock     flock(LOCK_EX | LOCK_NB) held for the life of
 *                          the process (O_CLOEXEC; a spawned child closes
 *                          it at once, lib/common/proc.c), released by
 *                          the kernel when the process dies, kill -9
 *                          included
 *   <state>/lease.holder   "<id> <dev>:<ino>\n": the id (16 hex digits)
 *                          and the lock file's device and inode, written
 *                          durably (temp + fsync + rename + fsync dir)
 *                          by the first daemon to hold the lock; a copy
 *                          of the state dir has another lock file and
 *                          so a fresh id
 *
 * The lock taken: no live process holds this state dir's identity (a
 * frozen or paused daemon still holds its lock), so the id in the file is
 * reclaimed and a lease row that names it is this daemon's own: take()
 * takes it at once with epoch + 1, which fences whatever the dead
 * process had begun, as any takeover does.  The lock busy (daemons
 * sharing a state dir on purpose, on PostgreSQL; the one holding it is
 * alive) or the files unusable: the process keeps its random id and
 * waits for the lease to expire, as before.  Bounded: one non-blocking
 * try at start, no retry.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "ctl/ctl_int.h"

#define LEASE_ID_LEN 16

/* The lock file's identity, "dev:ino": a copy of the state dir (another
 * machine, or cp -r here) has another lock file, so it never reclaims
 * the id of the daemon it was copied from (two live daemons under one
 * id would take the lease back and forth). */
static int lock_tag(int fd, char *tag, size_t n)
{
	struct stat sb;

	if (fstat(fd, &sb) != 0)
		return -errno;
	snprintf(tag, n, "%ju:%ju", (uintmax_t)sb.st_dev, (uintmax_t)sb.st_ino);
	return 0;
}

/* The id in `path` when the file is exactly "<16 lower-case hex digits>
 * <tag>\n" with this lock's tag: 1 and out set; 0 otherwise (absent,
 * damaged, or written beside another lock file). */
static int id_read(const char *path, const char *tag, char *out)
{
	struct sr_err e = { 0 };
	char *buf = NULL, want[96];
	size_t n = 0;
	int ok;

	if (sr_fs_read_file(path, 160, &buf, &n, &e))
		return 0;
	snprintf(want, sizeof want, " %s\n", tag);
	ok = n == LEASE_ID_LEN + strlen(want) &&
	     strcmp(buf + LEASE_ID_LEN, want) == 0;
	for (int i = 0; ok && i < LEASE_ID_LEN; i++)
		ok = isxdigit((unsigned char)buf[i]) &&
		     !isupper((unsigned char)buf[i]);
	if (ok) {
		memcpy(out, buf, LEASE_ID_LEN);
		out[LEASE_ID_LEN] = '\0';
	}
	free(buf);
	return ok;
}

void ctl__lease_id_claim(struct ctl *c)
{
	char lock[4200], idp[4200], tag[64], rec[LEASE_ID_LEN + 80];
	struct sr_err e = { 0 };
	int fd, rc;

	if ((size_t)snprintf(lock, sizeof lock, "%s/lease.lock", c->state_dir) >=
	    sizeof lock ||
	    (size_t)snprintf(idp, sizeof idp, "%s/lease.holder", c->state_dir) >=
	    sizeof idp)
		return;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		sr_warn("lease", "cannot open the holder lock: a fresh holder "
			"id", "path=%s err=\"%s\"", lock, strerror(errno));
		return;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 || lock_tag(fd, tag, sizeof tag)) {
		/* a live daemon on this state dir: it is that holder */
		close(fd);
		return;
	}
	if (id_read(idp, tag, rec)) {
		memcpy(c->lease.holder, rec, sizeof c->lease.holder);
	} else {
		snprintf(rec, sizeof rec, "%s %s\n", c->lease.holder, tag);
		rc = sr_fs_write_atomic(idp, rec, strlen(rec), 0600, &e);
		if (rc) {
			sr_warn("lease", "cannot record the holder id: the next "
				"daemon on this state dir waits out this one's "
				"lease", "err=\"%s\"", sr_err_str(&e, rc));
			close(fd);
			return;
		}
	}
	c->lease.id_fd = fd; /* held until ctl_stop, or the process's end */
}

void ctl__lease_id_release(struct ctl *c)
{
	if (c->lease.id_fd >= 0)
		close(c->lease.id_fd);
	c->lease.id_fd = -1;
}
