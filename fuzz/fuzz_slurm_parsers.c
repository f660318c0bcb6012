/*
 * fuzz_slurm_parsers - libFuzzer target for what the slurm provider reads
 * from Slurm's commands (lib/providers/slurm/slurm_cmd.c, slurm_queue.c):
 * sinfo's lines, squeue's queue lines and Slurm's time formats.  Invariants: at most `max` partitions, each
 * with a NUL-ended name, nodes >= idle >= 0, gpus >= 0, a time limit of
 * -1 (unlimited) or >= 0; a time parses to -1 or >= 0, or fails; a
 * queue job has nodes >= 1 and time left >= -1, and its wait is >= -1.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
	free(s);
	return 0;
}
