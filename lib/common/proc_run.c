/*
 * proc_run.c - run a program to completion and capture what it prints
 * (see proc.h, sr_proc_run): posix_spawnp with an argv, never a shell;
 * stdin /dev/null; stdout and stderr on pipes read together (poll) so a
 * chatty stderr never blocks the child; killed (SIGKILL) past its
 * deadline on the monotonic clock.  Users: credential_process
 * (awscred_proc.c), the Slurm provider's sbatch/squeue/scancel/sinfo.
 */
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/timeutil.h"

extern char **environ;

struct sink {
	char *buf;
	size_t cap, n;             /* cap: room for bytes, not the NUL */
	bool over;
};

/* Read both pipes until EOF or the deadline.  Bytes past a sink's cap
 * are read and dropped (the child is never blocked on a full pipe). */
static int drain(int fo, int fe, struct sink *s, int64_t deadline)
{
	struct pollfd p[2] = { { fo, POLLIN, 0 }, { fe, POLLIN, 0 } };
	int open = 2;

	while (open > 0) {
		int64_t left = (deadline - sr_time_mono_ns()) / 1000000;
		int rc;

		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(p, 2, (int)(left > 1000 ? 1000 : left));
		if (rc < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < 2 && rc > 0; i++) {
			char junk[512], *dst = s[i].buf + s[i].n;
			size_t room = s[i].cap - s[i].n;
			ssize_t n;

			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			if (room == 0) {
				dst = junk;
				room = sizeof(junk);
			}
			n = read(p[i].fd, dst, room);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				p[i].fd = -1;
				open--;
				continue;
			}
			if (dst == junk)
				s[i].over = true;
			else
				s[i].n += (size_t)n;
		}
	}
	return 0;
}

int sr_proc_run(char *const argv[], char *const envp[], int64_t timeout_ns,
		char *out, size_t out_cap, size_t *nout, char *err,
		size_t err_cap, int *status, struct sr_err *e)
{
	struct sink s[2] = { { out, out_cap ? out_cap - 1 : 0, 0, false },
			     { err, err_cap ? err_cap - 1 : 0, 0, false } };
	posix_spawn_file_actions_t fa;
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	pid_t pid = -1;
	int rc;

	*nout = 0;
	*status = -1;
	if (out_cap)
		out[0] = '\0';
	if (err_cap)
		err[0] = '\0';
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		rc = sr_err_set(e, -errno, "pipe: %s", strerror(errno));
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv,
			  envp ? envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		pid = -1;
		rc = sr_err_set(e, -rc, "cannot run %s: %s", argv[0], strerror(rc));
		goto out;
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	rc = drain(po[0], pe[0], s, sr_time_mono_ns() + timeout_ns);
	if (rc == 0 && s[0].over)
		rc = -EFBIG;
	if (rc < 0) {
		kill(pid, SIGKILL);
		if (rc == -ETIMEDOUT)
			sr_err_set(e, rc, "%s did not finish within %lld s: "
				   "killed", argv[0],
				   (long long)(timeout_ns / SR_NS_PER_SEC));
		else if (rc == -EFBIG)
			sr_err_set(e, rc, "%s printed more than %zu KiB",
				   argv[0], out_cap >> 10);
		else
			sr_err_set(e, rc, "%s: reading its output: %s", argv[0],
				   strerror(-rc));
	}
out:
	*nout = s[0].n;
	if (out_cap)
		out[s[0].n] = '\0';
	if (err_cap)
		err[s[1].n] = '\0';
	if (pid > 0) {
		int st = 0;
		pid_t w;

		do
			w = waitpid(pid, &st, 0);
		while (w < 0 && errno == EINTR);
		if (w == pid)
			*status = st;
	}
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return rc;
}

void sr_proc_first_line(const char *s, char *buf, size_t n)
{
	size_t k = 0;

	while (*s == '\n' || *s == ' ')
		s++;
	for (; *s != '\0' && *s != '\n' && k + 1 < n; s++)
		if ((unsigned char)*s >= 0x20)
			buf[k++] = *s;
	buf[k] = '\0';
}
