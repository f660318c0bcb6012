/*
 * sync.c - a job's files on the node (issue 24; docs/jobs.md): the
 * archive `spotrun launch` read as its user and uploaded with the job
 * (lib/bundle: its workdir/ and file_mounts), put in the node's dir once,
 * before setup:
 *
 *   workdir/...  -> NODE_DIR/workdir/... (setup and run then run there)
 *   DST          -> NODE_DIR/DST (file_mounts /data/x -> NODE_DIR/data/x)
 *   ~/X          -> HOME/X, the workload's home (issue 30: SkyPilot's
 *                   ~/.ssh/id_rsa: ~/.ssh/sky-key; an owner-only file
 *                   stays 0600).  On a node that shares spotrund's disk
 *                   (the local cloud: every node is a process of this
 *                   machine) HOME is the node's own NODE_DIR/home, which
 *                   the workload then gets as $HOME: a node never writes
 *                   into the user's home.  Elsewhere it is the agent's
 *                   $HOME, which the workload inherits.
 *
 * The agent downloads the archive (GET /v1/nodes/<id>/files) into an
 * anonymous memory file and runs `spotrun-agent --unpack NODE_DIR` - this
 * binary, through /proc/self/exe - with that file on its stdin, in the
 * workload's own isolation and as the workload's user (agent__start_
 * isolated_argv): it can write nothing the workload could not, never
 * follows a link (bundle_unpack), and reads nothing but its stdin.
 * Nothing of the daemon's or the node's filesystem is read on a job's
 * behalf.  Its output goes to the job's log; a failure is reported as
 * a "file_mounts" event naming what failed (the job fails: setup never
 * ran), not as a failed setup.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "bundle/bundle.h"
#include "common/fsutil.h"
#include "common/timeutil.h"

#define FETCH_TIMEOUT_MS 120000
#define UNPACK_LIMIT_NS (120 * SR_NS_PER_SEC)

/* The job's archive in a memory file, positioned at 0: *fd. */
static int fetch(struct agent *ag, int *fd, struct sr_err *e)
{
	char path[96], *buf = NULL;
	size_t len = 0, off = 0;
	int rc;

	*fd = -1;
	snprintf(path, sizeof path, "%s/files", ag->path_prefix);
	rc = ctlc_get_raw(ag->cli, path, "application/x-tar", FETCH_TIMEOUT_MS,
			  &buf, &len, e);
	if (rc < 0)
		return rc;
	*fd = memfd_create("spotrun-files", MFD_CLOEXEC);
	if (*fd < 0) {
		rc = sr_err_set(e, -errno, "files: memfd: %s", strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t n = write(*fd, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = sr_err_set(e, -errno, "files: %s", strerror(errno));
			goto out;
		}
		off += (size_t)n;
	}
	if (lseek(*fd, 0, SEEK_SET) < 0)
		rc = sr_err_set(e, -errno, "files: %s", strerror(errno));
out:
	free(buf);
	if (rc && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

/* Lines of fd into the job's log, as "files: LINE", the last one also
 * into last[LAST_MAX]; 0 at EOF. */
#define LAST_MAX 512
static void relay_flush(struct agent *ag, char *buf, size_t *have, char *last)
{
	agent__line(ag, "files: %s", buf);
	snprintf(last, LAST_MAX, "%s", buf);
	*have = 0;
}

static int relay(struct agent *ag, int fd, char *buf, size_t *have, size_t cap,
		 char *last)
{
	ssize_t n;
	char *nl;

	if (*have == cap - 1) /* a full line without its end: it goes as is */
		relay_flush(ag, buf, have, last);
	n = read(fd, buf + *have, cap - 1 - *have);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	*have += (size_t)n;
	buf[*have] = '\0';
	while ((nl = memchr(buf, '\n', *have))) {
		*nl = '\0';
		agent__line(ag, "files: %s", buf);
		snprintf(last, LAST_MAX, "%s", buf);
		*have -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, *have + 1);
	}
	if (*have && n == 0)
		relay_flush(ag, buf, have, last);
	return n > 0;
}

/* Run the unpacker on archive `in`, in the workload's isolation, and
 * wait for it (at most UNPACK_LIMIT_NS, its exit too).  It is a workload
 * of its own, not ag->w: agent__line drains ag->w's pipes into the log
 * (so the job's log keeps its order), and the unpacker's read there would
 * reach their end behind this loop's back - the loop then waited out the
 * whole limit for an end it had missed, and lost the unpacker's reason
 * (session 24: the job stayed RUNNING 120 s under load). */
static int unpack(struct agent *ag, int in, const char *home,
		  struct sr_err *e)
{
	char *argv[] = { "/proc/self/exe", "--unpack", ag->node_dir, NULL };
	char *envp[8] = { "PATH=/usr/bin:/bin" }, vars[4][4096];
	const char *san[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS" };
	char out[4096], err[4096], last[LAST_MAX] = "";
	size_t no = 0, ne = 0, k = 1;
	int64_t until = sr_time_mono_ns() + UNPACK_LIMIT_NS;
	struct workload uw;
	int rc, r = 0, st = 0;

	for (int i = 0; i < 3; i++) { /* a sanitizer build's settings */
		const char *v = getenv(san[i]);

		if (v && (size_t)snprintf(vars[i], sizeof vars[i], "%s=%s", san[i],
					  v) < sizeof vars[i])
			envp[k++] = vars[i];
	}
	if (home && (size_t)snprintf(vars[3], sizeof vars[3], "SPOTRUN_UNPACK_HOME=%s",
				     home) < sizeof vars[3])
		envp[k++] = vars[3];
	rc = agent__start_isolated_w(ag, &uw, argv, in, ag->node_dir, envp, e);
	if (rc < 0)
		return rc;
	while ((uw.out_fd >= 0 || uw.err_fd >= 0) && sr_time_mono_ns() < until) {
		struct pollfd p[2] = { { uw.out_fd, POLLIN, 0 },
				       { uw.err_fd, POLLIN, 0 } };

		if (poll(p, 2, 500) < 0 && errno != EINTR)
			break;
		if (p[0].revents && !relay(ag, uw.out_fd, out, &no, sizeof out, last)) {
			close(uw.out_fd);
			uw.out_fd = -1;
		}
		if (p[1].revents && !relay(ag, uw.err_fd, err, &ne, sizeof err, last)) {
			close(uw.err_fd);
			uw.err_fd = -1;
		}
	}
	/* its output has ended: its exit, by the same limit */
	while (uw.out_fd < 0 && uw.err_fd < 0 &&
	       (r = workload_poll_exit(&uw)) == 0 && sr_time_mono_ns() < until)
		usleep(10000);
	workload_close_fds(&uw);
	if (r < 0)
		return sr_err_set(e, r, "unpacking the job's files: %s",
				  sr_strerror(r));
	if (!uw.exited) {
		workload_signal(&uw, SIGKILL); /* past its time */
		while (waitpid(uw.pid, &st, 0) < 0 && errno == EINTR)
			;
		return sr_err_set(e, -ETIMEDOUT, "unpacking the job's files took "
				  "more than %lld s", (long long)(UNPACK_LIMIT_NS /
								  SR_NS_PER_SEC));
	}
	if (uw.exit_code)
		return sr_err_set(e, -EIO, "unpacking the job's files failed "
				  "(exit %d): %s", uw.exit_code, last[0] ? last :
				  "no message");
	return 0;
}

/* Where file_mounts ~/X and bucket mounts ~/X go (see the top): *home,
 * NULL when the job has none; a->home is set when the workload's HOME
 * changes to it (mounts.c puts ~/ bucket mounts there too). */
static int home_dir(struct agent *ag, const char **home, struct sr_err *e)
{
	struct assignment *a = &ag->a;
	const char *k, *h = getenv("HOME");
	json_t *v;
	int want = 0, rc;

	*home = NULL;
	json_object_foreach(a->mounts, k, v)
		want |= !strcmp(k, "~") || !strncmp(k, "~/", 2);
	for (size_t i = 0; i < a->nbuckets; i++)
		want |= !strncmp(a->buckets[i].dst, "~/", 2);
	if (!want)
		return 0;
	if (a->shared_disk) {
		free(a->home);
		if (asprintf(&a->home, "%s/home", ag->node_dir) < 0) {
			a->home = NULL;
			return sr_err_set(e, -ENOMEM, "out of memory");
		}
		rc = sr_fs_mkdir_p(a->home, 0700);
		if (rc)
			return sr_err_set(e, rc, "file_mounts: %s: %s", a->home,
					  sr_strerror(rc));
		*home = a->home;
		return 0;
	}
	if (!h || h[0] != '/')
		return sr_err_set(e, -ENOENT, "file_mounts: the job mounts files "
				  "under ~/ but the workload has no home ($HOME "
				  "is not set)");
	*home = h;
	return 0;
}

int agent_sync_files(struct agent *ag, struct sr_err *e)
{
	struct assignment *a = &ag->a;
	char dir[sizeof ag->node_dir + 16];
	const char *home = NULL;
	int fd = -1, rc = 0;

	if (ag->synced)
		return 0;
	rc = home_dir(ag, &home, e);
	if (rc)
		return rc;
	if (a->files) {
		const char *was = agent__phase(ag, "files fetch");

		rc = fetch(ag, &fd, e);
		agent__phase(ag, "files unpack");
		if (!rc)
			rc = unpack(ag, fd, home, e);
		agent__phase(ag, was);
		if (fd >= 0)
			close(fd);
		if (rc)
			return rc;
		agent__line(ag, "files: unpacked into %s", ag->node_dir);
	}
	if (a->sync_workdir) {
		char *copy;

		snprintf(dir, sizeof dir, "%s/workdir", ag->node_dir);
		copy = strdup(dir);
		if (!copy)
			return sr_err_set(e, -ENOMEM, "out of memory");
		free(a->workdir);
		a->workdir = copy;
	}
	ag->synced = 1;
	return 0;
}
