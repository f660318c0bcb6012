/*
 * workload.c - process-group runner for setup/run snippets (workload.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/workload.h"
#include "common/timeutil.h"

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/* Child side of workload_start, between fork and exec: only
 * async-signal-safe calls.  On failure it writes *f to errfd and exits. */
static void child(char *const *argv, const char *cwd, char *const *envp,
		  int in, const struct workload_iso *iso, uid_t uid, gid_t gid,
		  int outw, int errw, int errfd)
{
	struct iso_fail f;
	struct sigaction sa;
	sigset_t none;
	int fd;

	memset(&f, 0, sizeof f);
	setpgid(0, 0);
	/* an empty mask and default dispositions, whatever the agent's
	 * threads had blocked or ignored (SIGPIPE) */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++) {
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &sa, NULL);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	fd = in >= 0 ? in : open("/dev/null", O_RDONLY);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(outw, 1) < 0 || dup2(errw, 2) < 0) {
		f.err = errno;
		memcpy(f.step, "stdio", 6);
		goto fail;
	}
	/* nothing of the agent's (sockets, logs) reaches the workload */
	if (errfd > 3)
		close_range(3, (unsigned)errfd - 1, 0);
	close_range((unsigned)errfd + 1, ~0U, 0);
	if (iso && iso->mode != ISO_NONE) {
		if (iso__enter(iso, uid, gid, &f) < 0)
			goto fail;
		/* what was set up and checked: the parent reports it */
		if (write(errfd, &f, sizeof f) < 0)
			(void)0;
	}
	if (cwd && chdir(cwd) < 0) {
		f.err = errno;
		memcpy(f.step, "chdir", 6);
		goto fail;
	}
	execve(argv[0], argv, envp);
	f.err = errno;
	memcpy(f.step, "exec", 5);
fail:
	if (write(errfd, &f, sizeof f) < 0)
		(void)0; /* the parent sees EOF and the exit status */
	_exit(127);
}

/* 1 when fd can be read (data or EOF), 0 at the deadline (monotonic),
 * -1 on a poll error. */
static int wait_readable(int fd, int64_t until)
{
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = until - sr_time_mono_ns();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, (int)(left / 1000000 + 1));
		if (r < 0 && errno == EINTR)
			continue;
		return r < 0 ? -1 : r > 0;
	}
}

int workload_start(struct workload *w, const char *script, const char *cwd,
		   char *const *envp, const struct workload_iso *iso,
		   struct sr_err *e)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };

	return workload_start_argv(w, argv, cwd, envp, -1, iso, e);
}

int workload_start_argv(struct workload *w, char *const *argv, const char *cwd,
			char *const *envp, int in, const struct workload_iso *iso,
			struct sr_err *e)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, rep[2] = { -1, -1 };
	struct iso_fail f;
	uid_t uid = getuid();
	gid_t gid = getgid();
	int64_t until = sr_time_mono_ns() + WORKLOAD_EXEC_LIMIT_NS;
	pid_t pid = -1;
	ssize_t n;
	int rc;

	memset(w, 0, sizeof *w);
	memset(&f, 0, sizeof f);
	w->pid = -1;
	w->out_fd = w->err_fd = -1;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(rep, O_CLOEXEC) < 0) {
		rc = sr_err_set(e, -errno, "workload: pipe: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = sr_err_set(e, -errno, "workload: fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(argv, cwd, envp, in, iso, uid, gid, outp[1], errp[1], rep[1]);
	setpgid(pid, pid); /* also here: no window where kill(-pid) misses */
	close(rep[1]);
	rep[1] = -1;
	/* EOF: exec happened (the pipe is close-on-exec); before it, the
	 * isolation's report (err 0), then a failure's (err set), if any;
	 * nothing by the deadline: the child is stuck before its exec */
	for (;;) {
		if (wait_readable(rep[0], until) <= 0) {
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			rc = sr_err_set(e, -ETIMEDOUT, "workload: %s did not start "
					"within %lld s (stuck before its exec)",
					argv[0], (long long)(WORKLOAD_EXEC_LIMIT_NS /
							     1000000000));
			goto out;
		}
		do {
			n = read(rep[0], &f, sizeof f);
		} while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof f || f.err)
			break;
		w->iso_dirs_hidden = f.dirs_hidden;
		w->iso_files_hidden = f.files_hidden;
	}
	if (n > 0) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		f.step[sizeof f.step - 1] = '\0';
		f.path[sizeof f.path - 1] = '\0';
		rc = -(f.err ? f.err : EIO);
		w->iso_failed = strcmp(f.step, "exec") && strcmp(f.step, "chdir") &&
				strcmp(f.step, "stdio");
		if (!strcmp(f.step, "chdir"))
			sr_err_set(e, rc, "workload: spawn %s in %s: %s",
				   argv[0], cwd, strerror(-rc));
		else
			sr_err_set(e, rc, "workload: %s%s%s%s: %s",
				   w->iso_failed ? "isolation: " : "", f.step,
				   f.path[0] ? " " : "", f.path, strerror(-rc));
		goto out;
	}
	close(outp[1]);
	close(errp[1]);
	outp[1] = errp[1] = -1;
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	w->pid = pid;
	w->out_fd = outp[0];
	w->err_fd = errp[0];
	w->started_mono_ns = sr_time_mono_ns();
	outp[0] = errp[0] = -1;
	rc = 0;
out:
	close_pair(outp);
	close_pair(errp);
	close_pair(rep);
	return rc;
}

int workload_signal(const struct workload *w, int sig)
{
	if (w->pid <= 0)
		return -ESRCH;
	if (kill(-w->pid, sig) < 0)
		return -errno;
	return 0;
}

int workload_poll_exit(struct workload *w)
{
	int st = 0;
	pid_t r;

	if (w->exited)
		return 1;
	if (w->pid <= 0)
		return -ECHILD;
	r = waitpid(w->pid, &st, WNOHANG);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	return workload_note_exit(w, r, st);
}

int workload_note_exit(struct workload *w, pid_t pid, int wstatus)
{
	if (w->pid <= 0 || pid != w->pid || w->exited)
		return 0;
	w->exited = 1;
	if (WIFSIGNALED(wstatus)) {
		w->signal = WTERMSIG(wstatus);
		w->exit_code = 128 + w->signal;
	} else {
		w->signal = 0;
		w->exit_code = WEXITSTATUS(wstatus);
	}
	return 1;
}

int workload_group_alive(const struct workload *w)
{
	if (w->pid <= 0)
		return 0;
	return kill(-w->pid, 0) == 0 || errno == EPERM;
}

void workload_close_fds(struct workload *w)
{
	if (w->out_fd >= 0)
		close(w->out_fd);
	if (w->err_fd >= 0)
		close(w->err_fd);
	w->out_fd = w->err_fd = -1;
}

const char *workload_status_str(const struct workload *w, char *buf, size_t n)
{
	if (!w->exited)
		snprintf(buf, n, "running");
	else if (w->signal)
		snprintf(buf, n, "signal %d (%s)", w->signal, strsignal(w->signal));
	else
		snprintf(buf, n, "exit %d", w->exit_code);
	return buf;
}
