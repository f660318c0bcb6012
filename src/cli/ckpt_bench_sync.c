/*
 * ckpt_bench_sync.c - `spotrun ckpt bench-sync DIR --remote URI`: how fast
 * a bucket mount's round uploads DIR (lib/dirsync: SHA-256 of every file,
 * content objects as multipart uploads with a checksum per part, the
 * manifest, retention) against the raw peer of `ckpt bench --remote` (a
 * plain multipart upload of the same files, same part size and
 * parallelism), on the same server in the same run.  The peer runs right
 * before and right after ours (mean of the two); each round goes to a
 * fresh prefix so every byte is sent.  Ratio = peer time / ours (goal
 * >= 0.90).  Our round is gated and paced by a write watch on DIR as the
 * agent's are (nothing writes DIR meanwhile: it never holds anything back).
 * bench/dirsync.py drives it with a directory torch.save wrote.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_bench.h"
#include "cli.h"
#include "cliopt.h"
#include "common/timeutil.h"
#include "dirsync/dirsync.h"
#include "dirsync/dirsync_loop.h"

enum { OPT_REMOTE = CLI_KEY_LONG, OPT_REPS };

static const struct cli_optdef defs[] = {
	{ "remote", OPT_REMOTE, CLI_ARG },
	{ "reps", OPT_REPS, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static void usage(void)
{
	fputs("usage: spotrun ckpt bench-sync DIR --remote s3://BUCKET/PREFIX "
	      "[--reps N] [--json]\n\n"
	      "Upload DIR as one bucket-mount round (what spotrun-agent --dirsync\n"
	      "does) and as a plain parallel multipart upload of the same files,\n"
	      "to the same store, and print sync_upload_vs_raw (peer time / ours;\n"
	      "goal >= 0.90).  The store needs AWS_ENDPOINT_URL_S3 (the peer\n"
	      "speaks path-style S3).\n", stdout);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int ckpt_bench_sync_main(int argc, char **argv)
{
	struct cli_opts p = { .cmd = "ckpt", .sub = "bench-sync", .usage = usage,
			      .flags = CLI_OPT_JSON, .max_operands = 1,
			      .defs = defs };
	const char *remote = NULL, **paths = NULL;
	struct dirsync_scan sc = { 0 };
	struct dirsync_watch *w = NULL;
	double ours[20], peer[20], ratio[20];
	char why[512] = "", uri[1200], full[4300];
	uint64_t bytes = 0;
	long reps = 3;
	int c, fd = -1, rc = CLI_FAIL;
	struct sr_err e = { 0 };

	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		char *end;

		if (c == OPT_REMOTE) {
			remote = p.arg;
			continue;
		}
		reps = strtol(p.arg, &end, 10);
		if (*end || reps < 1 || reps > 20)
			return cli_opts_error(&p, "--reps: '%s' is not 1..20", p.arg);
	}
	if (c < 0)
		return p.status;
	if (!p.n_operands || !remote)
		return cli_opts_error(&p, "DIR and --remote URI are required");
	fd = open(p.operand[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || dirsync_scan(fd, &sc, &e) < 0 || !sc.n) {
		fprintf(stderr, "spotrun ckpt: bench-sync: %s: %s\n", p.operand[0],
			fd < 0 ? strerror(errno) : e.code ? e.msg : "no files");
		goto out;
	}
	/* the agent's write watch (nothing writes DIR here: it never
	 * blocks, but its checks and the paced sockets are measured) */
	if (dirsync_watch_start(fd, DIRSYNC_YIELD_QUIET_NS,
				60 * SR_NS_PER_SEC, &w, &e) < 0)
		fprintf(stderr, "spotrun ckpt: bench-sync: warning: %s: %s "
			"(measured unpaced, as the agent runs then)\n",
			p.operand[0], e.msg);
	paths = calloc(sc.n, sizeof *paths);
	for (size_t i = 0; paths && i < sc.n; i++) {
		snprintf(full, sizeof full, "%s/%s", p.operand[0], sc.v[i].path);
		paths[i] = strdup(full);
		bytes += sc.v[i].size;
	}
	for (long r = 0; paths && r < reps; r++) {
		struct dirsync *d = NULL;
		double t0, a, b;
		int64_t round;

		snprintf(uri, sizeof uri, "%s/raw-%ld", remote, r);
		a = bench_raw_put_files(uri, paths, sc.n, why, sizeof why);
		snprintf(uri, sizeof uri, "%s/sync-%ld", remote, r);
		if (a < 0 || dirsync_open(&(struct dirsync_opts){ .uri = uri,
				.dirfd = fd, .keep = 1, .workers = 4 }, &d, &e) < 0) {
			fprintf(stderr, "spotrun ckpt: bench-sync: %s\n",
				a < 0 ? why : e.msg);
			goto out;
		}
		if (w) /* as the agent uploads: gated and paced */
			dirsync_set_gate(d, dirsync_watch_gate,
					 dirsync_watch_pace, w);
		t0 = bench_now();
		rc = dirsync_sync(d, -1, &round, &e);
		ours[r] = bench_now() - t0;
		dirsync_close(d);
		if (rc < 0) {
			fprintf(stderr, "spotrun ckpt: bench-sync: %s\n", e.msg);
			rc = CLI_FAIL;
			goto out;
		}
		snprintf(uri, sizeof uri, "%s/raw2-%ld", remote, r);
		b = bench_raw_put_files(uri, paths, sc.n, why, sizeof why);
		if (b < 0) {
			fprintf(stderr, "spotrun ckpt: bench-sync: %s\n", why);
			rc = CLI_FAIL;
			goto out;
		}
		peer[r] = (a + b) / 2;
		ratio[r] = peer[r] / ours[r];
	}
	qsort(ratio, (size_t)reps, sizeof *ratio, cmp_d);
	qsort(ours, (size_t)reps, sizeof *ours, cmp_d);
	qsort(peer, (size_t)reps, sizeof *peer, cmp_d);
	if (p.json) {
		json_t *o = json_pack("{s:{s:f, s:f, s:f, s:I, s:I, s:i, s:s}}",
				      "sync_upload_vs_raw", "ratio",
				      ratio[reps / 2], "sync_s", ours[reps / 2],
				      "raw_put_s", peer[reps / 2], "bytes",
				      (json_int_t)bytes, "files", (json_int_t)sc.n,
				      "reps", (int)reps, "goal", ">= 0.90");
		char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;

		printf("%s\n", s ? s : "{}");
		free(s);
		json_decref(o);
	} else {
		printf("sync_upload_vs_raw %.3f  (round %.2f s, raw multipart "
		       "%.2f s, %" PRIu64 " bytes in %zu files, median of %ld; "
		       "goal >= 0.90)\n", ratio[reps / 2], ours[reps / 2],
		       peer[reps / 2], bytes, sc.n, reps);
	}
	rc = CLI_OK;
out:
	for (size_t i = 0; paths && i < sc.n; i++)
		free((char *)paths[i]);
	free(paths);
	dirsync_scan_free(&sc);
	dirsync_watch_stop(w);
	if (fd >= 0)
		close(fd);
	return rc;
}
