/*
 * procstat.h - CPU utilisation and memory of one process group, from /proc.
 *
 * The agent runs the workload as a process group; its CPU use is the sum of
 * utime+stime+cutime+cstime over the group's live members (a reaped child's
 * time moves into its parent's cutime, so the sum only grows while the
 * group leader lives).  Utilisation between two samples is
 *     delta_cpu_ticks / (delta_wall_s * ticks_per_s * ncpu)
 * in permille of the whole machine (1000 = every CPU busy).
 */
#ifndef SR_AGENT_PROCSTAT_H
#define SR_AGENT_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

struct procstat_sample {
	int64_t mono_ns;     /* when it was taken */
	uint64_t cpu_ticks;  /* summed clock ticks of the group */
	uint64_t rss_bytes;  /* summed resident set size */
	int nproc;           /* live members found */
};

/* Sample the group `pgid` by scanning /proc (proc_root, NULL = "/proc",
 * for tests).  Returns 0, or a negative errno if /proc cannot be read.
 * A group with no live member gives nproc 0 and zero sums. */
int procstat_sample(const char *proc_root, pid_t pgid,
		    struct procstat_sample *out);

/* Parse one /proc/PID/stat line: process group, ticks (the four time
 * fields) and rss pages.  Returns 0 or -EINVAL.  Exposed for tests. */
int procstat_parse_stat(const char *line, pid_t *pgrp, uint64_t *ticks,
			uint64_t *rss_pages);

/* CPU utilisation in permille of the machine between samples a and b
 * (b later); -1 if it cannot be computed (no time passed). */
int procstat_cpu_permille(const struct procstat_sample *a,
			  const struct procstat_sample *b);

#endif
