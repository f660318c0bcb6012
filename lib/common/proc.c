/*
 * proc.c - exactly-once process start and session kill (see proc.h).
 *
 * Start gate: a pipe whose read end the child blocks on.  The parent
 * writes one byte only after gate() succeeded (the node's pid is then in
 * the database).  If the parent dies first, the child reads EOF and exits
 * 127 without exec - so a daemon killed at any instant never leaves an
 * agent the database does not know about, and a restart never starts a
 * second one for the same node.
 *
 * Everything the child runs between fork and execve is async-signal-safe
 * (sigaction, sigprocmask, read, setsid, chdir, dup2, close_range, execve,
 * _exit): the daemon is multi-threaded.
 */
#include "common/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/syscall.h>

/* Fields after the "(comm)" of /proc/<pid>/stat: state is field 3,
 * session field 6, starttime field 22. */
static int read_stat(int64_t pid, char *state, int64_t *sid, int64_t *start)
{
	char path[64], buf[1024];
	char *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EIO;
	p += 2;
	if (state)
		*state = *p;
	for (field = 3; *p && field < 22; p++) {
		if (*p == ' ') {
			field++;
			if (field == 6 && sid)
				*sid = strtoll(p + 1, NULL, 10);
		}
	}
	if (start)
		*start = field == 22 ? strtoll(p, NULL, 10) : -1;
	return 0;
}

int64_t sr_proc_start_time(int64_t pid)
{
	int64_t st = -1;

	if (read_stat(pid, NULL, NULL, &st))
		return -1;
	return st;
}

bool sr_proc_alive(int64_t pid, int64_t start)
{
	char state = 0;
	int64_t st = -1;

	if (pid <= 0 || read_stat(pid, &state, NULL, &st))
		return false;
	if (state == 'Z' || state == 'X')
		return false;
	return start == 0 || st == start;
}

int sr_proc_kill_session(int64_t sid, int64_t start)
{
	struct dirent *de;
	DIR *d;
	int n = 0;
	int64_t lead_start = sr_proc_start_time(sid);

	if (sid <= 1)
		return 0;
	/* The pid now belongs to someone else: nothing of ours is left with
	 * that session id (a session id is its leader's pid). */
	if (lead_start >= 0 && start > 0 && lead_start != start)
		return 0;
	d = opendir("/proc");
	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		int64_t pid, s = -1;
		char *end;

		pid = strtoll(de->d_name, &end, 10);
		if (*end || pid <= 1 || pid == getpid())
			continue;
		if (read_stat(pid, NULL, &s, NULL) == 0 && s == sid) {
			if (kill((pid_t)pid, SIGKILL) == 0)
				n++;
		}
	}
	closedir(d);
	return n;
}

void sr_proc_reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int sr_proc_spawn(char *const argv[], char *const envp[], const char *dir,
		  const char *log_path,
		  int (*gate)(void *ud, int64_t pid, int64_t start), void *ud,
		  int64_t *pid, int64_t *start, struct sr_err *e)
{
	int gatefd[2] = { -1, -1 };
	int logfd = -1, nullfd = -1;
	pid_t child;
	int64_t st;
	int rc;

	*pid = 0;
	*start = 0;
	logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (logfd < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", log_path, strerror(errno));
		goto out;
	}
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nullfd < 0 || pipe2(gatefd, O_CLOEXEC) != 0) {
		rc = sr_err_set(e, -errno, "spawn %s: %s", argv[0], strerror(errno));
		goto out;
	}
	child = fork();
	if (child < 0) {
		rc = sr_err_set(e, -errno, "fork: %s", strerror(errno));
		goto out;
	}
	if (child == 0) {
		struct sigaction dfl;
		sigset_t none;
		char c;

		/* The daemon blocks its stop signals and ignores SIGPIPE; both
		 * survive execve, so give the program a clean slate. */
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigaction(SIGPIPE, &dfl, NULL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* Keep only stdio and the gate (as fd 3) before waiting on
		 * it: a descriptor the daemon holds, its state lock above all,
		 * must not outlive a daemon killed while the child waits
		 * (O_CLOEXEC drops them only at the execve). */
		if (dup2(nullfd, 0) < 0 || dup2(logfd, 1) < 0 ||
		    dup2(logfd, 2) < 0 || dup2(gatefd[0], 3) < 0)
			_exit(126);
		syscall(SYS_close_range, 4u, ~0u, 0u);
		if (read(3, &c, 1) != 1)
			_exit(127);
		close(3);
		if (setsid() < 0 || chdir(dir) != 0)
			_exit(126);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(gatefd[0]);
	gatefd[0] = -1;
	st = sr_proc_start_time(child);
	rc = gate(ud, child, st);
	if (rc) {
		/* Closing the gate unwritten makes the child exit 127. */
		close(gatefd[1]);
		gatefd[1] = -1;
		waitpid(child, NULL, 0);
		sr_err_set(e, rc, "spawn %s: not recorded: %s", argv[0],
			   sr_strerror(rc));
		goto out;
	}
	if (write(gatefd[1], "g", 1) != 1) {
		rc = sr_err_set(e, -errno, "spawn gate: %s", strerror(errno));
		kill(child, SIGKILL);
		goto out;
	}
	*pid = child;
	*start = st;
	rc = 0;
out:
	if (gatefd[0] >= 0)
		close(gatefd[0]);
	if (gatefd[1] >= 0)
		close(gatefd[1]);
	if (logfd >= 0)
		close(logfd);
	if (nullfd >= 0)
		close(nullfd);
	return rc;
}
