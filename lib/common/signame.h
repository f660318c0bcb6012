/*
 * signame.h - the signals a workload can be asked to stop with, by name.
 *
 * A job file names the signal its workload takes as "checkpoint and
 * exit" (`spotrun.preempt_signal`, docs/jobs.md); the agent sends it at a
 * preemption notice or a stop, and tells the workload which one it is in
 * $SPOTRUN_PREEMPT_SIGNAL.  Only signals a program can catch and whose
 * default action ends it are accepted: a KILL or STOP leaves no time to
 * save, and CHLD, CONT, WINCH or URG would be ignored by a workload that
 * installed no handler.
 */
#ifndef SR_COMMON_SIGNAME_H
#define SR_COMMON_SIGNAME_H

/* The accepted names, as an error message lists them. */
#define SR_STOP_SIGNALS "TERM, INT, HUP, QUIT, USR1, USR2"

/* "TERM", "SIGTERM", "sigterm", ... -> SIGTERM; -1 for anything else
 * (a number too: the numbers differ between platforms, names do not). */
int sr_stop_signal_parse(const char *name);

/* SIGTERM -> "TERM" (the form $SPOTRUN_PREEMPT_SIGNAL carries); NULL for
 * a signal sr_stop_signal_parse does not accept. */
const char *sr_stop_signal_name(int sig);

#endif
