/*
 * workload.h - run a user's shell snippet as its own process group.
 *
 * `setup` and `run` from the job YAML are shell snippets the user wrote;
 * running them with /bin/sh -c is the point.  Nothing else is ever put
 * into a shell command: values reach the workload as environment
 * variables (the envp given here).
 *
 * The child:
 *   - is the leader of a new process group (pgid == pid), so one kill()
 *     reaches everything it starts;
 *   - has stdin from /dev/null, stdout and stderr on two pipes whose read
 *     ends the caller polls (non-blocking, close-on-exec);
 *   - starts with an empty signal mask and default dispositions, whatever
 *     the agent's threads had blocked;
 *   - inherits no file descriptor but 0, 1 and 2;
 *   - with an isolation spec, sees the filesystem isolate.h describes.
 * It is started with fork (not posix_spawn) because the isolation must
 * run in the child before exec; a pipe tells the parent which step failed.
 *
 * Not thread-safe; the agent's main loop owns each workload.
 */
#ifndef SR_AGENT_WORKLOAD_H
#define SR_AGENT_WORKLOAD_H

#include <stdint.h>
#include <sys/types.h>

#include "agent/isolate.h"
#include "common/err.h"

struct workload {
	pid_t pid;        /* group leader; -1 when not started or reaped */
	int out_fd;       /* read end of stdout pipe, -1 once closed */
	int err_fd;       /* read end of stderr pipe, -1 once closed */
	int exited;       /* leader reaped */
	int exit_code;    /* valid when exited and !signal */
	int signal;       /* terminating signal, 0 if it exited */
	int64_t started_mono_ns;
	int iso_failed;   /* the last start failed setting up isolation */
	/* what the isolated child found hidden (isolate.h iso_fail): bit i
	 * of iso->hide_dirs / hide_files */
	unsigned iso_dirs_hidden, iso_files_hidden;
};

/* Start `/bin/sh -c script` in cwd (NULL = inherit) with environment envp
 * (NULL-terminated "K=V" strings, copied by exec), isolated as iso says
 * (NULL or ISO_NONE: not at all).  On success fills *w and returns 0; on
 * failure *w has pid -1 and no open fds, and w->iso_failed is 1 when the
 * isolation step failed (e names the step and path).  With isolation,
 * w->iso_dirs_hidden / iso_files_hidden say what the child checked was
 * hidden before it ran the script.  The start waits for the child's exec
 * at most WORKLOAD_EXEC_LIMIT_NS (monotonic): a child stuck before it (a
 * hung isolation step) is killed and the start fails with -ETIMEDOUT. */
#define WORKLOAD_EXEC_LIMIT_NS (INT64_C(30) * 1000000000)
int workload_start(struct workload *w, const char *script, const char *cwd,
		   char *const *envp, const struct workload_iso *iso,
		   struct sr_err *e);

/* The same for argv (argv[0] a path, exec'ed as is) with stdin from the
 * descriptor `in` (-1: /dev/null; the child's copy only): the agent's
 * unpacking of a job's files, in the workload's isolation. */
int workload_start_argv(struct workload *w, char *const *argv, const char *cwd,
			char *const *envp, int in, const struct workload_iso *iso,
			struct sr_err *e);

/* Send sig to the whole group.  0, or -ESRCH when the group is empty. */
int workload_signal(const struct workload *w, int sig);

/* Reap the leader without blocking.  Returns 1 when it has exited (and
 * fills exited/exit_code/signal), 0 while it runs, negative errno on
 * failure. */
int workload_poll_exit(struct workload *w);

/* Record a wait status obtained elsewhere (a waitpid(-1) loop in a
 * subreaper).  Returns 1 if pid was this workload's leader. */
int workload_note_exit(struct workload *w, pid_t pid, int wstatus);

/* 1 while any process of the group is alive (leader or stragglers). */
int workload_group_alive(const struct workload *w);

/* Close the pipe read ends that are still open. */
void workload_close_fds(struct workload *w);

/* "exit 3", "signal 15 (Terminated)" into buf.  */
const char *workload_status_str(const struct workload *w, char *buf,
				size_t n);

#endif
