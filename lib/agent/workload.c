/*
 * workload.c - process-group runner for setup/run snippets (workload.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
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

int workload_start(struct workload *w, const char *script, const char *cwd,
		   char *const *envp, struct sr_err *e)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int fa_ok = 0, at_ok = 0;
	sigset_t none, dflt;
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	pid_t pid = -1;
	int rc;

	memset(w, 0, sizeof *w);
	w->pid = -1;
	w->out_fd = w->err_fd = -1;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = sr_err_set(e, -errno, "workload: pipe: %s", strerror(errno));
		goto out;
	}
	rc = -posix_spawn_file_actions_init(&fa);
	if (rc < 0)
		goto spawn_err;
	fa_ok = 1;
	rc = -posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (rc == 0)
		rc = -posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	if (rc == 0)
		rc = -posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	if (rc == 0 && cwd)
		rc = -posix_spawn_file_actions_addchdir_np(&fa, cwd);
	if (rc < 0)
		goto spawn_err;
	rc = -posix_spawnattr_init(&at);
	if (rc < 0)
		goto spawn_err;
	at_ok = 1;
	sigemptyset(&none);
	sigfillset(&dflt);
	sigdelset(&dflt, SIGKILL);
	sigdelset(&dflt, SIGSTOP);
	rc = -posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP |
					       POSIX_SPAWN_SETSIGMASK |
					       POSIX_SPAWN_SETSIGDEF);
	if (rc == 0)
		rc = -posix_spawnattr_setpgroup(&at, 0);
	if (rc == 0)
		rc = -posix_spawnattr_setsigmask(&at, &none);
	if (rc == 0)
		rc = -posix_spawnattr_setsigdefault(&at, &dflt);
	if (rc < 0)
		goto spawn_err;
	rc = -posix_spawn(&pid, "/bin/sh", &fa, &at, argv, envp);
	if (rc < 0)
		goto spawn_err;
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
	goto out;
spawn_err:
	sr_err_set(e, rc, "workload: spawn /bin/sh%s%s: %s", cwd ? " in " : "",
		   cwd ? cwd : "", strerror(-rc));
out:
	close_pair(outp);
	close_pair(errp);
	if (at_ok)
		posix_spawnattr_destroy(&at);
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
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
