/*
 * statelock.c - one spotrund per SQLite state (statelock.h).
 *
 * <state-dir>/spotrund.lock is opened (created 0600) and locked with
 * flock(LOCK_EX | LOCK_NB); the holder writes its pid into it.  The lock
 * lives as long as the open file description: the process's life (the
 * kernel drops it when the process dies, kill -9 included), never
 * inherited by the agents it starts (O_CLOEXEC).  A second daemon gets
 * EWOULDBLOCK and reads the holder's pid from the file for its message.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "statelock.h"

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
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = -errno;
		pid = holder_pid(fd);
		close(fd);
		if (rc != -EWOULDBLOCK)
			return sr_err_set(e, rc, "%s: lock: %s", path, strerror(-rc));
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
