/*
 * proc.h - process helpers (the local provider, the EC2 emulator, the
 * daemon's pid file): start a program exactly once (fork + execve with a
 * start gate), identify a process across pid reuse, and kill a whole
 * session.
 */
#ifndef SR_COMMON_PROC_H
#define SR_COMMON_PROC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

/* Start argv[0] (an absolute path) with envp, in a new session, cwd
 * `dir`, stdin /dev/null, stdout+stderr appended to `log_path`.  No
 * shell is involved.  The child waits at a gate before execve: after the
 * fork, gate(ud, pid, start) runs in the parent; the child execs only if
 * it returns 0, and otherwise exits without running anything.  So if the
 * caller records (pid, start) durably inside gate() and the parent dies
 * before that, the program never runs.  On success *pid and *start are
 * set (start = /proc starttime, for sr_proc_alive). */
int sr_proc_spawn(char *const argv[], char *const envp[], const char *dir,
		  const char *log_path,
		  int (*gate)(void *ud, int64_t pid, int64_t start), void *ud,
		  int64_t *pid, int64_t *start, struct sr_err *e);

/* /proc/<pid>/stat starttime (clock ticks since boot); -1 if gone. */
int64_t sr_proc_start_time(int64_t pid);

/* Is pid alive (not a zombie) and the same process (start matches; a
 * start of 0 skips that check)? */
bool sr_proc_alive(int64_t pid, int64_t start);

/* SIGKILL every process of the session led by pid `sid` - unless a
 * different process now holds that pid (start mismatch).  Returns the
 * number of processes signalled. */
int sr_proc_kill_session(int64_t sid, int64_t start);

/* Reap exited children without blocking. */
void sr_proc_reap(void);

/* Run argv[0] (searched on PATH) with envp (NULL: this process's
 * environment) to completion, no shell, stdin /dev/null (proc_run.c).
 * Its stdout goes to out (at most out_cap - 1 bytes, NUL-ended; *nout the
 * length), its stderr to err (cut at err_cap - 1, NUL-ended).  *status
 * is the wait status, or -1 when something else reaped it.  Returns 0
 * (whatever the exit status), or -ETIMEDOUT (still running after
 * timeout_ns: killed), -EFBIG (stdout over out_cap: killed) or -errno
 * (could not start it), with *e naming argv[0]. */
int sr_proc_run(char *const argv[], char *const envp[], int64_t timeout_ns,
		char *out, size_t out_cap, size_t *nout, char *err,
		size_t err_cap, int *status, struct sr_err *e);

/* The first non-empty line of s, control characters dropped, into buf
 * (n bytes, NUL-ended): the line an error message quotes. */
void sr_proc_first_line(const char *s, char *buf, size_t n);

#endif
