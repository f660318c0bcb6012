/*
 * statelock.c - one spotrund per SQLite state (statelock.h).
 *
 * <state-dir>/spotrund.lock is opened (created 0600) and locked with
 * flock(LOCK_EX | LOCK_NB); the holder writes its pid into it.  The lock
 * lives as long as the open file description: the process's life (the
 * kernel drops it when the process dies, kill -9 included), never
 * inherited by the agents it starts (O_CLOEXEC).  A second daemon gets
 * EWOULDBLOCK and reads the holder's pid from the file for its message.
 *
 * A daemon killed a moment ago can leave its lock held for a little
 * while by a child it had forked and not yet exec'd (sr_proc_spawn drops
 * it before waiting on its gate, but the fork itself is a window): when
 * the pid in the file is gone, the lock is retried for up to
 * STATELOCK_DEAD_WAIT_MS on the monotonic clock before it is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/timeutil.h"
#include "statelock.h"

#define STATELOCK_DEAD_WAIT_MS 5000

/* The pid the holder wrote, 0 if none could be read. */
static long holder_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	return pid > 0 ? pid : 0;
}

/* Whether pid names no process (ESRCH); a pid we may not signal lives. */
static int pid_gone(long pid)
{
	return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* flock(LOCK_EX | LOCK_NB), retried while the holder written in the file
 * is a dead process, up to STATELOCK_DEAD_WAIT_MS.  0 or -errno; *pid is
 * the holder read at the last refusal. */
static int lock_waiting_for_the_dead(int fd, long *pid)
{
	int64_t end = sr_time_mono_ns() +
		      (int64_t)STATELOCK_DEAD_WAIT_MS * 1000000;
	struct timespec nap = { 0, 20 * 1000000 };

	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return -errno;
		*pid = holder_pid(fd);
		if (!pid_gone(*pid) || sr_time_mono_ns() >= end)
			return -EWOULDBLOCK;
		nanosleep(&nap, NULL);
	}
}

int statelock_take(const char *state_dir, int *out_fd, struct sr_err *e)
{
	char path[4200], buf[32];
	int fd, rc, n;
	long pid;

	*out_fd = -1;
	rc = sr_fs_mkdir_p(state_dir, 0700);
	if (rc)
		return sr_err_set(e, rc, "%s: %s", state_dir, sr_strerror(rc));
	if ((size_t)snprintf(path, sizeof path, "%s/spotrund.lock", state_dir) >=
	    sizeof path)
		return sr_err_set(e, -ENAMETOOLONG, "%s: path too long", state_dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
	pid = 0;
	rc = lock_waiting_for_the_dead(fd, &pid);
	if (rc) {
		close(fd);
		if (rc != -EWOULDBLOCK)
			return sr_err_set(e, rc, "%s: lock: %s", path, strerror(-rc));
		if (pid_gone(pid))
			return sr_err_set(e, -EBUSY, "state dir %s: %s is still "
					  "locked by a process that spotrund pid "
					  "%ld (exited) started; end it or give "
					  "another --state-dir", state_dir, path,
					  pid);
		if (pid)
			return sr_err_set(e, -EBUSY, "state dir %s is in use by "
					  "another spotrund (pid %ld); stop it first "
					  "('spotrun daemon stop') or give another "
					  "--state-dir", state_dir, pid);
		return sr_err_set(e, -EBUSY, "state dir %s is in use by another "
				  "spotrund (%s is locked); stop it first or give "
				  "another --state-dir", state_dir, path);
	}
	n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	*out_fd = fd;
	return 0;
}
