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

#endif
