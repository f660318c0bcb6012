/*
 * bench_jobspec_keys - the job file parser's cost per key (issue 24: the
 * duplicate-key check was quadratic; 24k env keys under the 256 KiB cap
 * took 2.7 s of a daemon worker).
 *
 * Parses a job file with N env keys and one with 2N (2N = 22,000, just
 * under the size cap), each REPS times, and prints the ratio of the best
 * times: about 2 when the parse is linear in the keys, about 4 when it
 * is quadratic.  The ratio is measured side by side in one run, so the
 * machine's load mostly cancels.
 *
 * Usage: bench_jobspec_keys [N (11000)] [REPS (5)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "market/joblimits.h"
#include "market/jobspec.h"

static char *make_yaml(int keys, size_t *len)
{
	char *y = malloc(SR_LIMIT_JOB_BYTES);
	size_t off;

	if (!y)
		return NULL;
	off = (size_t)snprintf(y, SR_LIMIT_JOB_BYTES, "name: k\nrun: x\nenvs:\n");
	for (int i = 0; i < keys && off + 32 < SR_LIMIT_JOB_BYTES; i++)
		off += (size_t)snprintf(y + off, SR_LIMIT_JOB_BYTES - off,
					"  K%d: v\n", i);
	*len = off;
	return y;
}

/* the best of reps parses, in ns; -1 on a parse error */
static double best_ns(const char *y, size_t len, int reps, size_t *nkeys)
{
	double best = -1;

	for (int r = 0; r < reps; r++) {
		struct jobspec js;
		struct sr_err e = { 0 };
		int64_t t0 = sr_time_mono_ns();
		int rc = jobspec_parse_buf(y, len, "bench.yaml", &js, &e);
		double t = (double)(sr_time_mono_ns() - t0);

		if (rc) {
			fprintf(stderr, "bench_jobspec_keys: %s\n", sr_err_str(&e, rc));
			return -1;
		}
		*nkeys = js.n_envs;
		jobspec_free(&js);
		if (best < 0 || t < best)
			best = t;
	}
	return best;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 11000;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	size_t l1 = 0, l2 = 0, k1 = 0, k2 = 0;
	char *y1 = make_yaml(n, &l1), *y2 = make_yaml(2 * n, &l2);
	double t1, t2;
	int rc = 1;

	if (n < 100 || reps < 1 || !y1 || !y2) {
		fprintf(stderr, "usage: bench_jobspec_keys [N >= 100] [REPS >= 1]\n");
		goto out;
	}
	t1 = best_ns(y1, l1, reps, &k1);
	t2 = best_ns(y2, l2, reps, &k2);
	if (t1 <= 0 || t2 <= 0)
		goto out;
	printf("jobspec parse: %zu keys (%zu bytes) %.1f ms, %zu keys (%zu bytes) "
	       "%.1f ms (best of %d)\n", k1, l1, t1 / 1e6, k2, l2, t2 / 1e6, reps);
	printf("ratio 2N/N: %.2f (linear ~2, quadratic ~4)\n", t2 / t1);
	rc = 0;
out:
	free(y1);
	free(y2);
	return rc;
}
