/*
 * ckpt_bench.c - `spotrun ckpt bench`: one run measures the engine against
 * its peers on the same bytes, in the same directory, with the same
 * thread count, and prints each comparison as a ratio with its raw
 * numbers.  Phases:
 *
 *   1. build a model-like state (transformer blocks + Adam moments)
 *   2. peer: raw sequential write (O_DIRECT where possible) + fsync of the
 *      same bytes
 *   3. engine (peak RSS tracked from here): sync saves, each right after
 *      the memcpy peer (threaded memcpy of the same tensors into faulted
 *      memory) so both see the same load (stall, tier-2 write
 *      throughput), lazy saves (stall), restores into the tensors, each
 *      right after the raw-read peer (O_DIRECT sequential read of the
 *      raw file); before each such pair every file of the work directory
 *      is dropped from the page cache, so neither reads cached pages even
 *      where O_DIRECT is refused
 *   4. torch.save + fsync of the same bytes (/usr/bin/python3 peer)
 *   5. a training loop with and without a lazy checkpoint every interval
 *
 * Each measured quantity is the median of `reps` runs.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_bench.h"
#include "cli.h"

static const char *const BUSAGE =
	"usage: spotrun ckpt bench --size SIZE --dir DIR [--json] [--threads N]\n"
	"                          [--reps N] [--train-seconds S] [--interval S]\n"
	"                          [--torch-script PATH] [--io-depth N]\n"
	"                          [--io-chunk SIZE]\n\n"
	"Measure libspotckpt against plain peers on a model-like state of SIZE\n"
	"bytes (e.g. 512M, 2G) in DIR (which must exist; the bench works in a\n"
	"subdirectory it removes afterwards).  Prints a table, or with --json one\n"
	"object whose keys are stall_vs_memcpy, lazy_stall_vs_memcpy,\n"
	"write_vs_raw, restore_vs_raw, stall_vs_torch_save, train_overhead and\n"
	"peak_rss_vs_state, each with a ratio and the raw numbers behind it.\n"
	"  --threads N        copy threads for engine and memcpy (default: cores)\n"
	"  --reps N           repetitions per measurement, median kept (3)\n"
	"  --train-seconds S  length of each training-loop run (default 90)\n"
	"  --interval S       checkpoint interval in the loop (default 30)\n"
	"  --torch-script P   torch.save peer (python/spotrun/bench_torch_save.py)\n"
	"  --io-depth N       engine writes in flight (library default)\n"
	"  --io-chunk SIZE    engine bytes per write (library default)\n";

struct bopts {
	uint64_t size;
	const char *dir, *script;
	int json, threads, reps, io_depth;
	uint32_t io_chunk;
	double train_s, interval_s;
};

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	uint64_t mul = 1;

	if (end == s || v <= 0)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = (uint64_t)(v * (double)mul);
	return *out >= 4096 ? 0 : -1;
}

static int parse(int argc, char **argv, struct bopts *o)
{
	memset(o, 0, sizeof *o);
	o->reps = 3;
	o->train_s = 90;
	o->interval_s = 30;
	o->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	o->script = "python/spotrun/bench_torch_save.py";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(BUSAGE, stdout);
			return 1;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
			continue;
		}
		if (!v)
			return cli_usage_error("ckpt", "bench: %s needs a value", a);
		i++;
		if (!strcmp(a, "--size")) {
			if (parse_size(v, &o->size))
				return cli_usage_error("ckpt", "bench: --size: '%s' is "
						       "not a size like 512M or 2G", v);
		} else if (!strcmp(a, "--dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--torch-script")) {
			o->script = v;
		} else if (!strcmp(a, "--threads")) {
			o->threads = (int)strtol(v, &end, 10);
			if (*end || o->threads < 1 || o->threads > 64)
				return cli_usage_error("ckpt", "bench: --threads: '%s'"
						       " is not 1..64", v);
		} else if (!strcmp(a, "--io-depth")) {
			o->io_depth = (int)strtol(v, &end, 10);
			if (*end || o->io_depth < 1 || o->io_depth > 64)
				return cli_usage_error("ckpt", "bench: --io-depth: "
						       "'%s' is not 1..64", v);
		} else if (!strcmp(a, "--io-chunk")) {
			uint64_t c = 0;

			if (parse_size(v, &c) || c > (1u << 30))
				return cli_usage_error("ckpt", "bench: --io-chunk: "
						       "'%s' is not a size", v);
			o->io_chunk = (uint32_t)c;
		} else if (!strcmp(a, "--reps")) {
			o->reps = (int)strtol(v, &end, 10);
			if (*end || o->reps < 1 || o->reps > 100)
				return cli_usage_error("ckpt", "bench: --reps: '%s' "
						       "is not 1..100", v);
		} else if (!strcmp(a, "--train-seconds") || !strcmp(a, "--interval")) {
			double d = strtod(v, &end);

			if (*end || d <= 0)
				return cli_usage_error("ckpt", "bench: %s: '%s' is "
						       "not a positive number", a, v);
			*(!strcmp(a, "--interval") ? &o->interval_s : &o->train_s) = d;
		} else {
			return cli_usage_error("ckpt", "bench: unknown argument '%s'", a);
		}
	}
	if (!o->size || !o->dir)
		return cli_usage_error("ckpt", "bench: --size and --dir are required");
	if (o->threads > 8)
		o->threads = 8;
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void progress(const struct bopts *o, const char *what)
{
	if (isatty(2))
		fprintf(stderr, "ckpt bench: %s...\n", what);
	(void)o;
}

static void put(json_t *root, const char *key, double ratio, json_t *raw)
{
	json_object_set_new(raw, "ratio", isnan(ratio) ? json_null() : json_real(ratio));
	json_object_set_new(root, key, raw);
}

static double gbps(uint64_t bytes, double s)
{
	return s > 0 ? (double)bytes / s / 1e9 : 0;
}

static int open_engine(const struct bopts *o, struct bench_state *st,
		       const char *wdir, struct spotckpt **out)
{
	struct spotckpt_opts eo;
	int rc;

	spotckpt_opts_init(&eo);
	eo.dir = wdir;
	eo.copy_threads = o->threads;
	eo.io_depth = o->io_depth;
	eo.io_chunk_bytes = o->io_chunk;
	rc = spotckpt_open(&eo, out);
	for (size_t i = 0; rc == 0 && i < st->n; i++) {
		int64_t shape[1] = { (int64_t)(st->nbytes[i] / 4) };

		rc = spotckpt_register(*out, st->name[i], st->ptr[i], SPOTCKPT_F32,
				       1, shape, SPOTCKPT_DEV_CPU);
	}
	if (rc == 0)
		rc = spotckpt_prepare(*out);
	return rc;
}

/* Phase 3: the engine.  Fills stall/write/lazy/restore/rss. */
static int run_engine(const struct bopts *o, struct bench_state *st,
		      const char *wdir, json_t *root, uint8_t *dst,
		      uint64_t dst_bytes, double raw_w_s, const char *raw,
		      int raw_direct, double *stall_out, double *lazy_out)
{
	double mc[100], memcpy_s;
	struct spotckpt *e = NULL;
	struct spotckpt_stats s;
	double stall[100], wr[100], lazy[100], rest[100], rr[100], rrat[100];
	uint64_t rss0, peak, bytes = 0;
	int rc, step = 0, rdirect = 0;

	bench_reset_hwm();
	rss0 = bench_proc_bytes("VmRSS:");
	rc = open_engine(o, st, wdir, &e);
	progress(o, "engine: sync saves, each after a memcpy of the same bytes");
	for (int r = 0; rc == 0 && r < o->reps; r++) {
		/* the peer runs right before each save: same load, same caches */
		mc[r] = bench_memcpy(st, dst, o->threads);
		rc = spotckpt_save(e, ++step, "{\"bench\":true}", 0, NULL);
		if (rc == 0)
			rc = spotckpt_wait(e);
		spotckpt_stats(e, &s);
		stall[r] = (double)s.last_stall_ns * 1e-9;
		wr[r] = (double)s.last_write_ns * 1e-9;
		bytes = s.last_write_bytes;
	}
	progress(o, "engine: lazy saves");
	for (int r = 0; rc == 0 && r < o->reps; r++) {
		rc = spotckpt_save(e, ++step, NULL, SPOTCKPT_SAVE_LAZY, NULL);
		spotckpt_stats(e, &s);
		lazy[r] = (double)s.last_stall_ns * 1e-9;
		if (rc == 0)
			rc = spotckpt_wait(e);
	}
	peak = bench_proc_bytes("VmHWM:");
	progress(o, "engine: restores, each after a raw read of the same bytes");
	for (int r = 0; rc == 0 && r < o->reps; r++) {
		double t0;
		int64_t got = -1;

		bench_drop_cache(wdir);
		rc = bench_raw_read(raw, dst, st->total, &rr[r], &rdirect);
		if (rc) {
			fprintf(stderr, "spotrun ckpt: bench: raw read of %s: %s\n",
				raw, strerror(-rc));
			spotckpt_close(e);
			return rc;
		}
		t0 = bench_now();
		rc = spotckpt_restore(e, SPOTCKPT_NEWEST, &got);
		rest[r] = bench_now() - t0;
		rrat[r] = rr[r] / rest[r];
	}
	if (rc) {
		fprintf(stderr, "spotrun ckpt: bench: engine: %s (%s)\n",
			spotckpt_strerror(rc), spotckpt_errmsg());
		spotckpt_close(e);
		return rc;
	}
	spotckpt_stats(e, &s);
	memcpy_s = median(mc, o->reps);
	{
		double st_m = median(stall, o->reps), lz = median(lazy, o->reps);
		double w = median(wr, o->reps), rs = median(rest, o->reps);
		double raw_r_s = median(rr, o->reps);
		double wg = gbps(bytes, w), rwg = gbps(st->total, raw_w_s);
		double rg = gbps(st->total, rs), rrg = gbps(st->total, raw_r_s);
		double rmin = 0, rmax = 0;

		for (int r = 0; r < o->reps; r++) {
			rmin = r == 0 || rrat[r] < rmin ? rrat[r] : rmin;
			rmax = rrat[r] > rmax ? rrat[r] : rmax;
		}

		*stall_out = st_m;
		*lazy_out = lz;
		put(root, "stall_vs_memcpy", st_m / memcpy_s, json_pack(
			"{s:f,s:f,s:I,s:i,s:f}", "stall_s", st_m, "memcpy_s",
			memcpy_s, "bytes", (json_int_t)st->total, "threads",
			o->threads, "goal_max", 1.10));
		put(root, "lazy_stall_vs_memcpy", lz / memcpy_s, json_pack(
			"{s:f,s:f,s:f}", "lazy_stall_s", lz, "memcpy_s", memcpy_s,
			"goal_max", 0.05));
		put(root, "write_vs_raw", wg / rwg, json_pack(
			"{s:f,s:f,s:f,s:f,s:I,s:I,s:b,s:b,s:b,s:f}", "write_gbps", wg,
			"raw_write_gbps", rwg, "write_s", w, "raw_write_s", raw_w_s,
			"bytes", (json_int_t)bytes, "raw_bytes",
			(json_int_t)st->total, "direct_io", s.direct_io_used,
			"raw_direct_io", raw_direct, "io_uring", s.uring_used,
			"goal_min", 0.90));
		put(root, "restore_vs_raw", rg / rrg, json_pack(
			"{s:f,s:f,s:f,s:f,s:f,s:f,s:b,s:f}", "restore_gbps", rg,
			"raw_read_gbps", rrg, "restore_s", rs, "raw_read_s", raw_r_s,
			"pair_ratio_min", rmin, "pair_ratio_max", rmax,
			"raw_direct_io", rdirect, "goal_min", 0.90));
		put(root, "peak_rss_vs_state",
		    (double)(peak > rss0 ? peak - rss0 : 0) / (double)st->total,
		    json_pack("{s:I,s:I,s:I,s:I,s:f,s:s}", "state_bytes",
			      (json_int_t)st->total, "rss_before_engine",
			      (json_int_t)rss0, "peak_rss", (json_int_t)peak,
			      "staging_bytes", (json_int_t)s.staging_bytes,
			      "peak_rss_total_vs_state",
			      (double)(peak - dst_bytes) / (double)st->total,
			      "measures", "peak RSS added by the engine (saves, lazy "
			      "saves) / state; the tensors (and the memcpy peer's "
			      "buffer, not in the total) are in rss_before"));
	}
	return spotckpt_close(e);
}

#define TRAIN_SEGMENTS 6

static int run_train(const struct bopts *o, struct bench_state *st,
		     const char *wdir, json_t *root)
{
	struct spotckpt *e = NULL;
	struct bench_train base, ck;
	double step_s = 0.1, interval = o->interval_s;
	long iters = bench_calibrate(step_s);
	long steps = (long)(o->train_s / step_s);
	int rc;

	if (interval > o->train_s / 2)
		interval = o->train_s / 2; /* at least two checkpoints */
	memset(&base, 0, sizeof base);
	memset(&ck, 0, sizeof ck);
	rc = open_engine(o, st, wdir, &e);
	/* Segments alternate ABBA-wise so that both loops see the same
	 * background load and drift; the checkpoint clock only runs in the
	 * checkpointing loop. */
	progress(o, "training loops with and without checkpoints");
	for (int r = 0; rc == 0 && r < TRAIN_SEGMENTS; r++) {
		long n = steps / TRAIN_SEGMENTS;

		/* a write still running at the end of a checkpointing
		 * segment finishes before the next plain one starts (in
		 * neither loop's time), so the plain loop is never slowed */
		if (r % 2 == 0) {
			rc = bench_train_run(st, NULL, n, iters, interval, &base);
			if (rc == 0)
				rc = bench_train_run(st, e, n, iters, interval, &ck);
			if (rc == 0)
				rc = spotckpt_wait(e);
		} else {
			rc = bench_train_run(st, e, n, iters, interval, &ck);
			if (rc == 0)
				rc = spotckpt_wait(e);
			if (rc == 0)
				rc = bench_train_run(st, NULL, n, iters, interval,
						     &base);
		}
	}
	if (rc == 0)
		rc = spotckpt_wait(e);
	if (e)
		spotckpt_close(e);
	if (rc) {
		fprintf(stderr, "spotrun ckpt: bench: training loop: %s (%s)\n",
			spotckpt_strerror(rc), spotckpt_errmsg());
		return rc;
	}
	put(root, "train_overhead", ck.seconds / base.seconds - 1, json_pack(
		"{s:f,s:f,s:I,s:i,s:f,s:f,s:s,s:f}", "base_s", base.seconds,
		"ckpt_s", ck.seconds, "steps", (json_int_t)ck.steps, "saves", ck.saves,
		"interval_s", interval, "step_s", step_s, "mode", "lazy",
		"goal_max", 0.01));
	return 0;
}

static void print_table(json_t *root)
{
	static const struct { const char *key, *goal; } rows[] = {
		{ "stall_vs_memcpy", "<= 1.10" },
		{ "lazy_stall_vs_memcpy", "<= 0.05" },
		{ "write_vs_raw", ">= 0.90" },
		{ "restore_vs_raw", ">= 0.90" },
		{ "stall_vs_torch_save", "<= 0.05" },
		{ "train_overhead", "< 0.01" },
		{ "peak_rss_vs_state", "<= 1.1" },
	};

	printf("%-22s %10s  %-8s  %s\n", "key", "ratio", "goal", "raw");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		json_t *o = json_object_get(root, rows[i].key), *r, *rest;
		char *raw = NULL;
		char ratio[32] = "n/a";

		if (!o)
			continue;
		r = json_object_get(o, "ratio");
		if (json_is_number(r))
			snprintf(ratio, sizeof ratio, "%.4f", json_number_value(r));
		/* the raw numbers without the ratio, from a shallow copy: the
		 * row itself (and its "ratio", which deleting would free)
		 * stays untouched */
		rest = json_copy(o);
		if (rest) {
			json_object_del(rest, "ratio");
			raw = json_dumps(rest, JSON_COMPACT | JSON_REAL_PRECISION(4));
			json_decref(rest);
		}
		printf("%-22s %10s  %-8s  %s\n", rows[i].key, ratio, rows[i].goal,
		       raw ? raw : "");
		free(raw);
	}
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

int ckpt_bench_main(int argc, char **argv)
{
	struct bopts o;
	struct bench_state st = { 0 };
	json_t *root = json_object();
	char wdir[4096], raw[4200], reason[256] = "";
	double rw[100], stall = 0, lazy = 0, tsave = 0;
	uint8_t *dst = NULL;
	int rc, direct = 0;

	rc = parse(argc, argv, &o);
	if (rc)
		return rc == 1 ? CLI_OK : rc;
	snprintf(wdir, sizeof wdir, "%s/spotrun-bench-%d", o.dir, (int)getpid());
	snprintf(raw, sizeof raw, "%s/raw.bin", wdir);
	if (mkdir(wdir, 0755) != 0) {
		fprintf(stderr, "spotrun ckpt: bench: %s: %s\n", wdir, strerror(errno));
		return CLI_FAIL;
	}
	progress(&o, "building the state");
	rc = bench_state_build(&st, o.size);
	dst = rc ? NULL : bench_alloc_faulted(st.total + 4096);
	if (!dst) {
		fprintf(stderr, "spotrun ckpt: bench: out of memory for %" PRIu64
			" bytes\n", o.size);
		rc = CLI_FAIL;
		goto out;
	}
	progress(&o, "peer: raw write");
	bench_memcpy(&st, dst, o.threads); /* the written bytes: the state */
	for (int r = 0; rc == 0 && r < o.reps; r++) {
		unlink(raw);
		rc = bench_raw_write(raw, dst, st.total, &rw[r], &direct);
	}
	if (rc) {
		unlink(raw);
		fprintf(stderr, "spotrun ckpt: bench: raw I/O in %s: %s\n", wdir,
			strerror(-rc));
		rc = CLI_FAIL;
		goto out;
	}
	/* raw.bin stays for the raw reads paired with the restores */
	rc = run_engine(&o, &st, wdir, root, dst, st.total + 4096,
			median(rw, o.reps), raw, direct, &stall, &lazy);
	unlink(raw);
	bench_unmap(dst, st.total + 4096);
	dst = NULL;
	if (rc) {
		rc = CLI_FAIL;
		goto out;
	}
	progress(&o, "peer: torch.save");
	if (bench_torch_save(o.script, st.total, wdir, &tsave, reason,
			     sizeof reason) == 0)
		put(root, "stall_vs_torch_save", stall / tsave, json_pack(
			"{s:f,s:f,s:I,s:f,s:f,s:f}", "stall_s", stall, "torch_save_s",
			tsave, "bytes", (json_int_t)st.total, "lazy_stall_s", lazy,
			"lazy_ratio", lazy / tsave, "goal_max", 0.05));
	else
		put(root, "stall_vs_torch_save", NAN, json_pack("{s:f,s:s}",
			"stall_s", stall, "reason", reason));
	rc = run_train(&o, &st, wdir, root) ? CLI_FAIL : CLI_OK;
	if (rc == CLI_OK) {
		if (o.json) {
			char *s = json_dumps(root, JSON_INDENT(2) |
					     JSON_REAL_PRECISION(6));

			printf("%s\n", s);
			free(s);
		} else {
			print_table(root);
		}
	}
out:
	nftw(wdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (dst)
		bench_unmap(dst, st.total + 4096);
	bench_state_free(&st);
	json_decref(root);
	return rc;
}
