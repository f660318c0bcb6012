/*
 * stepstat.h - the workload's own progress, in steps per second: the
 * agent's idle signal where no GPU utilisation is known (NVML absent, as
 * on the local cloud).  A node is training while its steps advance;
 * CPU load says nothing about that (a data loader spins, a GPU kernel
 * waits).
 *
 * Fed with the step the workload reports (the library's reports or
 * SPOTRUN_STATUS_FILE, src/agent/workrun.c) at each heartbeat; the rate
 * is that of the latest advance (steps over the time since the one
 * before) while it is recent - within STEPSTAT_IDLE_NS, or 3 x the time
 * between the last two advances for slow steps - and 0 after: the rule
 * "busy while a training step came in the last 60 s".  -1 while no step
 * is known, or until a step advanced once since the first seen (a
 * restored checkpoint's step is a start, not progress).
 *
 * Plain data, no locks; one per agent.
 */
#ifndef SR_AGENT_STEPSTAT_H
#define SR_AGENT_STEPSTAT_H

#include <stdbool.h>
#include <stdint.h>

#define STEPSTAT_IDLE_S 60
#define STEPSTAT_IDLE_NS ((int64_t)STEPSTAT_IDLE_S * 1000000000)

struct stepstat {
	bool seen;                 /* a step has been seen */
	int64_t step, at_ns;       /* the newest step and when it came */
	int64_t gap_ns;            /* time between the last two advances, 0 none */
	double rate;               /* steps/s of the latest advance, -1 none */
};

void stepstat_reset(struct stepstat *s);

/* The step reported now (< 0: none known) at monotonic now_ns: the
 * steps per second (>= 0), or -1 when unknown (above). */
double stepstat_rate(struct stepstat *s, int64_t step, int64_t now_ns);

#endif
