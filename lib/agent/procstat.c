/*
 * procstat.c - process-group CPU and memory from /proc (see procstat.h).
 *
 * /proc/PID/stat fields used (proc(5), 1-based):
 *   2 comm (in parentheses, may contain spaces and ')')
 *   5 pgrp   14 utime  15 stime  16 cutime  17 cstime  24 rss (pages)
 * comm is skipped by searching for the LAST ')' in the line.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/procstat.h"
#include "common/timeutil.h"

int procstat_parse_stat(const char *line, pid_t *pgrp, uint64_t *ticks,
			uint64_t *rss_pages)
{
	const char *p = strrchr(line, ')');
	unsigned long long v[22]; /* fields 3..24 */
	char state;
	int n;

	if (!p)
		return -EINVAL;
	p++;
	/* field 3 is the state character, then 4..24 are integers */
	n = sscanf(p, " %c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		      "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &state, &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
		   &v[11], &v[12], &v[13], &v[14], &v[15], &v[16], &v[17],
		   &v[18], &v[19], &v[20], &v[21], &v[0], &v[1], &v[2]);
	if (n != 22)
		return -EINVAL;
	/* v[4..21] are fields 4..21; v[0..2] are fields 22..24 */
	*pgrp = (pid_t)v[5];
	*ticks = v[14] + v[15] + v[16] + v[17];
	*rss_pages = v[2];
	return 0;
}

static int read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -errno;
	got = read(fd, buf, n - 1);
	close(fd);
	if (got < 0)
		return -errno;
	buf[got] = '\0';
	return 0;
}

int procstat_sample(const char *proc_root, pid_t pgid,
		    struct procstat_sample *out)
{
	const char *root = proc_root ? proc_root : "/proc";
	long page = sysconf(_SC_PAGESIZE);
	struct dirent *d;
	DIR *dir;

	memset(out, 0, sizeof *out);
	out->mono_ns = sr_time_mono_ns();
	dir = opendir(root);
	if (!dir)
		return -errno;
	while ((d = readdir(dir)) != NULL) {
		char path[512], line[1024];
		uint64_t ticks, rss;
		pid_t pg;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof path, "%s/%s/stat", root, d->d_name);
		if (read_small(path, line, sizeof line) < 0)
			continue; /* exited meanwhile */
		if (procstat_parse_stat(line, &pg, &ticks, &rss) < 0 ||
		    pg != pgid)
			continue;
		out->cpu_ticks += ticks;
		out->rss_bytes += rss * (uint64_t)(page > 0 ? page : 4096);
		out->nproc++;
	}
	closedir(dir);
	return 0;
}

int procstat_cpu_permille(const struct procstat_sample *a,
			  const struct procstat_sample *b)
{
	long hz = sysconf(_SC_CLK_TCK);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t dt = b->mono_ns - a->mono_ns;
	double used_s, pm;

	if (dt <= 0 || hz <= 0)
		return -1;
	if (ncpu < 1)
		ncpu = 1;
	if (b->cpu_ticks < a->cpu_ticks) /* a member left the group */
		return 0;
	used_s = (double)(b->cpu_ticks - a->cpu_ticks) / (double)hz;
	pm = used_s / ((double)dt / 1e9 * (double)ncpu) * 1000.0;
	if (pm > 1000.0)
		pm = 1000.0;
	return (int)(pm + 0.5);
}
