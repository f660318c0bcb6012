/*
 * fuzz_slurm_parsers - libFuzzer target for what the slurm provider reads
 * from Slurm's commands (lib/providers/slurm/slurm_cmd.c, slurm_queue.c,
 * slurm_drv.c): sinfo's lines, squeue's queue lines, the driver's squeue
 * list line and Slurm's time formats.  Invariants: at most `max`
 * partitions, each
 * with a NUL-ended name, nodes >= idle >= 0, gpus >= 0, a time limit of
 * -1 (unlimited) or >= 0; a time parses to -1 or >= 0, or fails; a
 * queue job has nodes >= 1 and time left >= -1, and its wait is >= -1;
 * a list line gives 0..max instances, each named slurm-<job>[.<i>].
 * Spot bursting's text (slurm_burst.c): every host name parsed passes
 * slurm_burst_name_ok; a comment's deadline is > 0; a job has an id > 0,
 * a limit >= -1 and NUL-ended fields; a node's need has a deadline of -1
 * or > 0 and a work >= -1; a --deadline option parsed is >= 1 s.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/slurm/slurm_burst.h"
#include "providers/slurm/slurm_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct slurm_part p[4];
	struct sr_err e = { 0 };
	char *s = malloc(size + 1);
	int64_t t;
	int n;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	n = slurm__parse_sinfo(s, p, 4, &e);
	if (n > 4)
		abort();
	for (int i = 0; i < n; i++) {
		if (memchr(p[i].name, '\0', sizeof p[i].name) == NULL ||
		    p[i].idle < 0 || p[i].gpus < 0 || p[i].max_time_s < -1)
			abort();
	}
	if (slurm__parse_time(s, &t) == 0 && t < -1)
		abort();
	{
		/* the driver's list line: bounded, each instance named */
		struct cloud_instance x[3];
		int nx = slurm__parse_squeue_line(s, NULL, x, 3);

		if (nx < 0 || nx > 3)
			abort();
		for (int i = 0; i < nx; i++)
			if (strncmp(x[i].id, "slurm-", 6) != 0)
				abort();
	}
	{
		struct slurm_qjob q[4];
		struct slurm_part pt = { .nodes = 3, .idle = 1 };
		char basis[160];
		int nq = slurm__parse_squeue_queue(s, q, 4, &e);

		if (nq > 4)
			abort();
		for (int i = 0; i < nq; i++)
			if (q[i].nodes < 1 || q[i].left_s < -1)
				abort();
		if (nq >= 0 && slurm__queue_wait(&pt, q, nq, 1, basis,
						 sizeof basis) < -1)
			abort();
	}
	{
		static char names[8][SLURM_BURST_NAME_MAX];
		struct slurm_burst_job j[4];
		struct slurm_burst_deadline d;
		struct slurm_burst_need need;
		bool up, ours;
		int nn = slurm_burst_parse_hostnames(s, names, 8, &e), nj;

		for (int i = 0; i < nn; i++)
			if (!slurm_burst_name_ok(names[i]))
				abort();
		if (slurm_burst_comment_deadline(s, &t, &e) == 1 && t <= 0)
			abort();
		nj = slurm_burst_parse_jobs(s, j, 4, &e);
		if (nj > 4)
			abort();
		for (int i = 0; i < nj; i++)
			if (j[i].id <= 0 || j[i].limit_s < -1 ||
			    !memchr(j[i].comment, '\0', sizeof j[i].comment) ||
			    !memchr(j[i].partition, '\0', sizeof j[i].partition))
				abort();
		if (nj >= 0 && slurm_burst_need_of(j, nj, NULL, 0, &need, &e) == 0 &&
		    (need.deadline_s == 0 || need.deadline_s < -1 ||
		     need.work_s < -1))
			abort();
		if (slurm_burst_parse_deadline_opt(s, &d, &e) == 0 && d.s < 1)
			abort();
		(void)slurm_burst_node_line(s, &up, &ours);
	}
	free(s);
	return 0;
}
