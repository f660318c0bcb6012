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
 *   5. training-loop segments without (A) and with (B) one lazy
 *      checkpoint, alternated ABBA ABBA... in this process on the same
 *      tensors; each pair's difference B - A is what one checkpoint cost
 *      the training thread (a write that outlasts its segment is waited
 *      for outside it and counted in late_commits), reported as the median over the pairs (with
 *      quartiles and range) divided by the checkpoint interval.  The
 *      training thread is pinned to CPU 0 and the engine's writer to the
 *      other CPUs at nice 10 (spotckpt_set_background), as docs/
 *      checkpoint.md tells users to; --placement none measures without.
 *      By default a segment is one checkpoint interval (30 s) long.
 *
 * Each other measured quantity is the median of `reps` runs.  The load
 * average at the start and the end goes into the output: on a shared
 * machine it says how much the ratios can be trusted.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_bench.h"
#include "cli.h"
#include "cliopt.h"

static const char *const BUSAGE =
	"usage: spotrun ckpt bench --size SIZE --dir DIR [--dir DIR2 ...] [--json]\n"
	"                          [--threads N]\n"
	"                          [--reps N] [--train-seconds S] [--interval S]\n"
	"                          [--pairs N] [--placement pinned|none]\n"
	"                          [--copy-cpus any|others] [--nice N]\n"
	"                          [--write-cap SIZE]\n"
	"                          [--torch-script PATH] [--io-depth N]\n"
	"                          [--io-chunk SIZE] [--remote URI]\n"
	"                          [--only PHASES] [--no-progress]\n\n"
	"Measure libspotckpt against plain peers on a model-like state of SIZE\n"
	"bytes (e.g. 512M, 2G) in DIR (which must exist; the bench works in a\n"
	"subdirectory it removes afterwards).  Prints a table, or with --json one\n"
	"object whose keys are stall_vs_memcpy, lazy_stall_vs_memcpy,\n"
	"write_vs_raw, restore_vs_raw (and its phases),\n"
	"restore_behind_vs_raw (the same restore placing each tensor behind\n"
	"the reads once it matched), restore_keep_vs_raw\n"
	"(the same restore made all or nothing by keeping the old bytes),\n"
	"restore_scratch_vs_raw (the same restore, nothing kept),\n"
	"restore_unstaged_vs_raw (a job's first restore, as the Python\n"
	"binding's: the engine has no staging memory yet), restore_cb_vs_raw (spotckpt_restore_cb), stall_vs_torch_save,\n"
	"train_overhead and peak_rss_vs_state, each with a ratio and the raw\n"
	"numbers behind it;\n"
	"write_vs_raw.phases tells where the engine's and the raw write's time\n"
	"went.  --dir given several times stripes the checkpoint over the\n"
	"directories (one per disk) and the raw peers over the same ones.\n"
	"  --threads N        copy threads for engine and memcpy (default: cores)\n"
	"  --reps N           repetitions per measurement, median kept (5)\n"
	"  --train-seconds S  total length of the training segments (default\n"
	"                     2 x pairs x interval: one checkpoint per interval)\n"
	"  --pairs N          training segment pairs, with and without a\n"
	"                     checkpoint (8, at least 2)\n"
	"  --interval S       checkpoint interval the overhead is stated for (30)\n"
	"  --placement P      pinned: training thread on CPU 0, the engine's\n"
	"                     writer on the others at nice 10 (default with\n"
	"                     2+ CPUs); none: wherever the scheduler puts them\n"
	"  --copy-cpus C      with --placement pinned: the lazy copy threads on\n"
	"                     any CPU (any, default) or only on the writer's\n"
	"                     CPUs, away from the training thread (others)\n"
	"  --nice N           the writer's nice value when pinned (10)\n"
	"  --write-cap SIZE   cap tier-2 writes at SIZE bytes/s (default none)\n"
	"  --torch-script P   torch.save peer (python/spotrun/bench_torch_save.py)\n"
	"  --io-depth N       engine writes in flight (library default)\n"
	"  --io-chunk SIZE    engine bytes per write (library default)\n"
	"  --remote URI       tier 3 on during every measurement, plus\n"
	"                     upload_vs_raw and remote_restore_vs_raw against\n"
	"                     plain parallel curl PUT / ranged GET (s3://)\n"
	"  --only PHASES      run only these, comma-separated: saves (stall,\n"
	"                     lazy stall, write_vs_raw, peak RSS), restore,\n"
	"                     torch (implies saves), train; e.g. --only restore\n"
	"                     (the restore pairs after one unmeasured save)\n"
	"  --no-progress      no progress line on stderr (shown only on a TTY)\n";

enum { PH_SAVES = 1, PH_RESTORE = 2, PH_TORCH = 4, PH_TRAIN = 8,
       PH_ALL = 15 };

struct bopts {
	uint64_t size;
	const char *dirs[BENCH_MAX_DIRS], *script, *remote;
	int ndirs;
	int json, threads, reps, io_depth, pairs, pinned, progress;
	int only;          /* PH_* bits of the phases to run */
	int copy_others, nice;
	uint64_t write_cap;
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

static int parse_only(const char *v, int *out)
{
	static const struct { const char *name; int bit; } ph[] = {
		{ "saves", PH_SAVES }, { "restore", PH_RESTORE },
		{ "torch", PH_TORCH }, { "train", PH_TRAIN },
	};
	char buf[128], *save = NULL;

	*out = 0;
	if (strlen(v) >= sizeof buf)
		return -1;
	strcpy(buf, v);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t k = 0;

		while (k < sizeof ph / sizeof ph[0] && strcmp(t, ph[k].name))
			k++;
		if (k == sizeof ph / sizeof ph[0])
			return -1;
		*out |= ph[k].bit;
	}
	return *out ? 0 : -1;
}

enum { OPT_NO_PROGRESS = CLI_KEY_LONG, OPT_SIZE, OPT_DIR, OPT_REMOTE,
       OPT_COPY_CPUS, OPT_NICE, OPT_WRITE_CAP, OPT_ONLY, OPT_TORCH_SCRIPT,
       OPT_THREADS, OPT_IO_DEPTH, OPT_IO_CHUNK, OPT_PAIRS, OPT_PLACEMENT,
       OPT_REPS, OPT_TRAIN_SECONDS, OPT_INTERVAL };

static const struct cli_optdef bench_defs[] = {
	{ "no-progress", OPT_NO_PROGRESS, CLI_NOARG },
	{ "size", OPT_SIZE, CLI_ARG },
	{ "dir", OPT_DIR, CLI_REPEAT },
	{ "remote", OPT_REMOTE, CLI_ARG },
	{ "copy-cpus", OPT_COPY_CPUS, CLI_ARG },
	{ "nice", OPT_NICE, CLI_ARG },
	{ "write-cap", OPT_WRITE_CAP, CLI_ARG },
	{ "only", OPT_ONLY, CLI_ARG },
	{ "torch-script", OPT_TORCH_SCRIPT, CLI_ARG },
	{ "threads", OPT_THREADS, CLI_ARG },
	{ "io-depth", OPT_IO_DEPTH, CLI_ARG },
	{ "io-chunk", OPT_IO_CHUNK, CLI_ARG },
	{ "pairs", OPT_PAIRS, CLI_ARG },
	{ "placement", OPT_PLACEMENT, CLI_ARG },
	{ "reps", OPT_REPS, CLI_ARG },
	{ "train-seconds", OPT_TRAIN_SECONDS, CLI_ARG },
	{ "interval", OPT_INTERVAL, CLI_ARG },
	{ NULL, 0, CLI_NOARG },
};

static void busage(void)
{
	fputs(BUSAGE, stdout);
}

/* Returns -1 to go on, or the exit status (help shown, usage error). */
static int parse(int argc, char **argv, struct bopts *o)
{
	struct cli_opts p = { .cmd = "ckpt", .sub = "bench", .defs = bench_defs,
			      .usage = busage, .flags = CLI_OPT_JSON };
	int c;

	memset(o, 0, sizeof *o);
	o->reps = 5;
	o->train_s = 0; /* 2 x pairs x interval */
	o->interval_s = 30;
	o->pairs = 8;
	o->only = PH_ALL;
	o->nice = 10;
	o->pinned = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
	o->progress = isatty(2);
	o->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	o->script = "python/spotrun/bench_torch_save.py";
	while ((c = cli_opts_next(&p, argc, argv)) > 0) {
		const char *a = p.name, *v = p.arg;
		char *end = NULL;

		switch (c) {
		case OPT_NO_PROGRESS:
			o->progress = 0;
			break;
		case OPT_SIZE:
			if (parse_size(v, &o->size))
				return cli_opts_error(&p, "--size: '%s' is not a size "
						      "like 512M or 2G", v);
			break;
		case OPT_DIR:
			if (o->ndirs == BENCH_MAX_DIRS)
				return cli_opts_error(&p, "--dir: at most %d "
						      "directories", BENCH_MAX_DIRS);
			o->dirs[o->ndirs++] = v;
			break;
		case OPT_REMOTE:
			o->remote = v;
			break;
		case OPT_COPY_CPUS:
			if (strcmp(v, "any") && strcmp(v, "others"))
				return cli_opts_error(&p, "--copy-cpus: '%s' is not "
						      "any or others", v);
			o->copy_others = !strcmp(v, "others");
			break;
		case OPT_NICE:
			o->nice = (int)strtol(v, &end, 10);
			if (*end || end == v || o->nice < 0 || o->nice > 19)
				return cli_opts_error(&p, "--nice: '%s' is not 0..19", v);
			break;
		case OPT_WRITE_CAP:
			if (parse_size(v, &o->write_cap))
				return cli_opts_error(&p, "--write-cap: '%s' is not a "
						      "size like 200M", v);
			break;
		case OPT_ONLY:
			if (parse_only(v, &o->only))
				return cli_opts_error(&p, "--only: '%s' is not a "
						      "comma-separated list of saves, "
						      "restore, torch, train", v);
			break;
		case OPT_TORCH_SCRIPT:
			o->script = v;
			break;
		case OPT_THREADS:
			o->threads = (int)strtol(v, &end, 10);
			if (*end || end == v || o->threads < 1 || o->threads > 64)
				return cli_opts_error(&p, "--threads: '%s' is not 1..64", v);
			break;
		case OPT_IO_DEPTH:
			o->io_depth = (int)strtol(v, &end, 10);
			if (*end || end == v || o->io_depth < 1 || o->io_depth > 64)
				return cli_opts_error(&p, "--io-depth: '%s' is not 1..64", v);
			break;
		case OPT_IO_CHUNK: {
			uint64_t n = 0;

			if (parse_size(v, &n) || n > (1u << 30))
				return cli_opts_error(&p, "--io-chunk: '%s' is not a size", v);
			o->io_chunk = (uint32_t)n;
			break;
		}
		case OPT_PAIRS:
			o->pairs = (int)strtol(v, &end, 10);
			if (*end || end == v || o->pairs < 2 || o->pairs > 100)
				return cli_opts_error(&p, "--pairs: '%s' is not 2..100", v);
			break;
		case OPT_PLACEMENT:
			if (strcmp(v, "pinned") && strcmp(v, "none"))
				return cli_opts_error(&p, "--placement: '%s' is not "
						      "pinned or none", v);
			o->pinned = !strcmp(v, "pinned");
			break;
		case OPT_REPS:
			o->reps = (int)strtol(v, &end, 10);
			if (*end || end == v || o->reps < 1 || o->reps > 100)
				return cli_opts_error(&p, "--reps: '%s' is not 1..100", v);
			break;
		default: { /* OPT_TRAIN_SECONDS, OPT_INTERVAL */
			double d = strtod(v, &end);

			if (*end || end == v || !(d > 0))
				return cli_opts_error(&p, "%s: '%s' is not a positive "
						      "number", a, v);
			*(c == OPT_INTERVAL ? &o->interval_s : &o->train_s) = d;
			break;
		}
		}
	}
	if (c < 0)
		return p.status;
	o->json = p.json;
	if (o->only & PH_TORCH) /* stall_vs_torch_save needs the saves' stall */
		o->only |= PH_SAVES;
	if (!o->size || !o->ndirs)
		return cli_opts_error(&p, "--size and --dir are required");
	if (o->threads > 8)
		o->threads = 8;
	return -1;
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

/* ---- progress on stderr, on a TTY only -----------------------------------
 * One line, rewritten in place: the phase (k of 6, of 7 with --remote),
 * what it does, how far it is, and the time since the start.  Never on
 * stdout, so neither the table nor --json output ever contains it. */
static struct {
	int on, phase, phases;
	double t0;
	char what[96];
} g_prog;

static void prog_show(int done, int total)
{
	if (!g_prog.on)
		return;
	fprintf(stderr, "\r\033[Kckpt bench [%d/%d] %s", g_prog.phase,
		g_prog.phases, g_prog.what);
	if (total > 0)
		fprintf(stderr, " %d/%d", done, total);
	fprintf(stderr, "  %.0f s", bench_now() - g_prog.t0);
	fflush(stderr);
}

static void progress(const struct bopts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void progress(const struct bopts *o, const char *fmt, ...)
{
	va_list ap;

	g_prog.on = o->progress;
	g_prog.phases = 1 + !!(o->only & (PH_SAVES | PH_RESTORE)) +
			!!(o->only & PH_SAVES) + !!(o->only & PH_RESTORE) +
			!!(o->only & PH_TORCH) + !!(o->only & PH_TRAIN) + !!o->remote;
	if (!g_prog.t0)
		g_prog.t0 = bench_now();
	g_prog.phase++;
	va_start(ap, fmt);
	vsnprintf(g_prog.what, sizeof g_prog.what, fmt, ap);
	va_end(ap);
	prog_show(0, 0);
}

static void progress_end(void)
{
	if (g_prog.on)
		fprintf(stderr, "\r\033[K");
	g_prog.on = 0;
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

/* The bench's work directories (one per --dir) and the raw write. */
struct bwork {
	int n;
	char *wdir[BENCH_MAX_DIRS];     /* DIR/spotrun-bench-PID */
	char *raw[BENCH_MAX_DIRS];      /* WDIR/raw.bin: the raw peer's stripe */
	int raw_direct;
};

/* Index of the median of v[0..n) (the lower one for even n). */
static int median_index(const double *v, int n)
{
	for (int i = 0; i < n; i++) {
		int below = 0, same_before = 0;

		for (int j = 0; j < n; j++) {
			below += v[j] < v[i];
			same_before += j < i && v[j] == v[i];
		}
		if (below + same_before == (n - 1) / 2)
			return i;
	}
	return 0;
}

static void drop_caches(const struct bwork *w)
{
	for (int k = 0; k < w->n; k++)
		bench_drop_cache(w->wdir[k]);
}

static int open_engine(const struct bopts *o, struct bench_state *st,
		       const struct bwork *w, struct spotckpt **out)
{
	struct spotckpt_opts eo;
	int rc;

	spotckpt_opts_init(&eo);
	eo.dir = w->wdir[0];
	if (w->n > 1) { /* striped over the same disks as the raw peers */
		eo.dirs = (const char *const *)w->wdir;
		eo.ndirs = (uint32_t)w->n;
	}
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
	if (rc == 0 && o->remote)
		rc = spotckpt_set_remote(*out, o->remote); /* tier 3 on */
	return rc;
}

/* One restore arm's pairs: each restore right after a raw read of the
 * same bytes, both after dropping the page cache. */
struct rpairs {
	double rest[100], rr[100], rrat[100], rcpu[100];
	struct spotckpt_restore_profile prof[100]; /* each restore's phases */
};

/* A restore arm's row from its pairs (sorted in place for the medians). */
static void put_restore(json_t *root, const char *key, const char *what,
			uint64_t total, int reps, struct rpairs *p, int rdirect)
{
	int mi = median_index(p->rest, reps); /* before median() sorts */
	const struct spotckpt_restore_profile *pf = &p->prof[mi];
	double rs = median(p->rest, reps), raw_r_s = median(p->rr, reps);
	double rg = gbps(total, rs), rrg = gbps(total, raw_r_s);
	double rpair = median(p->rrat, reps);
	char measures[512];
	json_t *ph = json_pack("{s:s,s:f,s:f,s:f,s:f,s:s}", "mode",
			       pf->mode == SPOTCKPT_RESTORE_BEHIND ? "behind" :
			       pf->mode == SPOTCKPT_RESTORE_MAPPED ? "mapped" :
			       pf->mode == SPOTCKPT_RESTORE_VERIFY_FIRST ?
			       "verify_first" : pf->mode == SPOTCKPT_RESTORE_KEEP ?
			       "keep" : "as_read",
			       "read_s", pf->read_wall_ns * 1e-9, "read_cpu_s",
			       pf->read_cpu_ns * 1e-9, "place_s",
			       pf->place_wall_ns * 1e-9, "place_cpu_s",
			       pf->place_cpu_ns * 1e-9, "of", "the median "
			       "restore; see docs/checkpoint.md");

	snprintf(measures, sizeof measures, "median over pairs of raw read "
		 "time / restore time, %s, each pair right after dropping the "
		 "page cache; restore_cpu_s is the CPU the restore used "
		 "(hashing, copying, keeping the old bytes; a raw read uses "
		 "next to none)", what);
	put(root, key, rpair, json_pack(
		"{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:b,s:f,s:s,s:o}",
		"restore_gbps", rg, "raw_read_gbps", rrg, "restore_s", rs,
		"raw_read_s", raw_r_s, "ratio_of_medians", rg / rrg,
		"pair_ratio_min", p->rrat[0], "pair_ratio_max",
		p->rrat[reps - 1], "restore_cpu_s", median(p->rcpu, reps),
		"pairs", reps, "raw_direct_io", rdirect, "goal_min", 0.95,
		"measures", measures, "phases", ph));
}

/* spotckpt_restore_cb's lookup for the unstaged arm: every tensor into
 * the bench's own (registered, resident) tensor of that name, kept. */
static int unstaged_lookup(void *ud, const struct spotckpt_tensor_info *t,
			   struct spotckpt_dest *d)
{
	const struct bench_state *st = ud;

	for (size_t i = 0; i < st->n; i++) {
		if (strcmp(st->name[i], t->name) == 0) {
			d->ptr = st->ptr[i];
			d->len = st->nbytes[i];
			d->device = SPOTCKPT_DEV_CPU;
			return 0;
		}
	}
	return 1; /* not ours: skipped */
}

/* What the Python binding's restore() does at a job's start: the reader,
 * every tensor into the bench's own, read with `with`'s staging memory
 * (spotckpt_reader_read_all_with: a fresh engine has none yet, so the
 * read reserves it).  `flags` goes to every destination:
 * SPOTCKPT_DEST_SCRATCH measures the same read without keeping the old
 * bytes (what the all-or-nothing guarantee costs). */
static int reader_restore(const struct bench_state *st, const struct bwork *w,
			  struct spotckpt *with, uint32_t flags)
{
	struct spotckpt_reader *r = NULL;
	struct spotckpt_dest *d = NULL;
	size_t n = 0;
	int64_t nt;
	int rc = spotckpt_reader_open(w->wdir[0], SPOTCKPT_NEWEST,
				      SPOTCKPT_NEWEST, 0, &r);

	nt = rc ? 0 : spotckpt_reader_ntensors(r);
	if (rc == 0 && !(d = calloc((size_t)nt + 1, sizeof *d)))
		rc = -ENOMEM;
	for (int64_t i = 0; rc == 0 && i < nt; i++) {
		struct spotckpt_tensor_info info;

		rc = spotckpt_reader_tensor(r, i, &info);
		if (rc == 0 && unstaged_lookup((void *)st, &info, &d[n]) == 0) {
			d[n].flags = flags;
			d[n++].index = i;
		}
	}
	if (rc == 0)
		rc = spotckpt_reader_read_all_with(r, with, d, n);
	free(d);
	spotckpt_reader_close(r);
	return rc;
}

/* The restore arms, measured alternately. */
enum { ARM_ENGINE, ARM_SCRATCH, ARM_FIRST, ARM_CB, ARM_KEEP, ARM_BEHIND,
       ARMS };

/* One pair: drop the cache, raw read, then the restore of that arm
 * (ARM_ENGINE: through e, its idle staging slot borrowed; ARM_SCRATCH:
 * the same read with the destinations marked scratch, nothing kept;
 * ARM_FIRST: reader_restore with a fresh engine; ARM_CB:
 * spotckpt_restore_cb, no engine at all; ARM_KEEP: ARM_ENGINE made
 * all or nothing by the keep instead of verifying first,
 * SPOTCKPT_RESTORE_KEEP=1 around it; ARM_BEHIND: ARM_ENGINE placing each
 * tensor behind the reads once it matched,
 * SPOTCKPT_RESTORE_BEHIND=1 around it). */
static int restore_pair(const struct bench_state *st, const struct bwork *w,
			uint8_t *dst, struct spotckpt *e, int arm,
			struct rpairs *p, int r, int *rdirect)
{
	struct spotckpt *fresh = NULL;
	double t0, c0;
	int64_t got = -1;
	int rc;

	drop_caches(w);
	rc = bench_raw_read((const char *const *)w->raw, w->n, dst, st->total,
			    &p->rr[r], rdirect);
	if (rc) {
		fprintf(stderr, "spotrun ckpt: bench: raw read of %s: %s\n",
			w->raw[0], strerror(-rc));
		return rc;
	}
	if (arm == ARM_FIRST) {
		struct spotckpt_opts fo;
		char fdir[4200];

		snprintf(fdir, sizeof fdir, "%s/first-restore", w->wdir[0]);
		spotckpt_opts_init(&fo);
		fo.dir = fdir;
		rc = spotckpt_open(&fo, &fresh);
		if (rc)
			return rc;
	}
	if (arm == ARM_KEEP)
		setenv("SPOTCKPT_RESTORE_KEEP", "1", 1);
	if (arm == ARM_BEHIND)
		setenv("SPOTCKPT_RESTORE_BEHIND", "1", 1);
	t0 = bench_now();
	c0 = bench_proc_cpu(); /* the engine's threads are idle now */
	rc = arm == ARM_ENGINE || arm == ARM_KEEP || arm == ARM_BEHIND ?
		spotckpt_restore(e, SPOTCKPT_NEWEST, &got)
	   : arm == ARM_SCRATCH ? reader_restore(st, w, e,
						 SPOTCKPT_DEST_SCRATCH)
	   : arm == ARM_FIRST ? reader_restore(st, w, fresh, 0)
	   : spotckpt_restore_cb(w->wdir[0], SPOTCKPT_NEWEST, unstaged_lookup,
				 (void *)st, &got);
	p->rest[r] = bench_now() - t0;
	p->rcpu[r] = bench_proc_cpu() - c0;
	p->rrat[r] = p->rr[r] / p->rest[r];
	spotckpt_restore_profile(&p->prof[r]);
	unsetenv("SPOTCKPT_RESTORE_KEEP");
	unsetenv("SPOTCKPT_RESTORE_BEHIND");
	if (fresh)
		spotckpt_close(fresh);
	return rc;
}

/* Phase 3: the engine.  Fills stall/write/lazy/rss (--only saves) and
 * restore (--only restore: after one unmeasured save when the saves are
 * not measured). */
static int run_engine(const struct bopts *o, struct bench_state *st,
		      const struct bwork *w, json_t *root, uint8_t *dst,
		      uint64_t dst_bytes, double *stall_out, double *lazy_out)
{
	double mc[100], memcpy_s;
	struct spotckpt *e = NULL;
	struct spotckpt_stats s;
	struct spotckpt_write_profile prof[100];
	double stall[100], wr[100], lazy[100], wcpu[100];
	double rw[100], wrat[100]; /* the raw write of each save's pair */
	struct bench_raw_phases rph[100];
	struct rpairs rp[ARMS]; /* each restore arm's pairs */
	uint64_t rss0, peak, bytes = 0;
	int rc, step = 0, rdirect = 0, wdirect = 0, saves = o->only & PH_SAVES;
	int nsave = saves ? o->reps : 1;

	bench_reset_hwm();
	rss0 = bench_proc_bytes("VmRSS:");
	rc = open_engine(o, st, w, &e);
	if (saves)
		progress(o, "engine saves (each after a raw write and a "
			 "memcpy), lazy saves");
	for (int r = 0; rc == 0 && r < nsave; r++) {
		prog_show(r, 2 * o->reps);
		/* the peers run right before each save: same load, same
		 * caches, the same state of a disk shared with others (a raw
		 * write measured apart, before all the saves, put the disk's
		 * drift between the two into write_vs_raw) */
		if (saves) {
			rc = bench_raw_write((const char *const *)w->raw, w->n,
					     dst, st->total, &rw[r], &wdirect,
					     &rph[r]);
			if (rc) {
				fprintf(stderr, "spotrun ckpt: bench: raw write in "
					"%s: %s\n", w->wdir[0], strerror(-rc));
				break;
			}
		}
		mc[r] = bench_memcpy(st, dst, o->threads);
		rc = spotckpt_save(e, ++step, "{\"bench\":true}", 0, NULL);
		wcpu[r] = bench_proc_cpu(); /* the copy is done: the write's */
		if (rc == 0)
			rc = spotckpt_wait(e);
		wcpu[r] = bench_proc_cpu() - wcpu[r];
		spotckpt_stats(e, &s);
		spotckpt_write_profile(e, &prof[r]);
		stall[r] = (double)s.last_stall_ns * 1e-9;
		wr[r] = (double)s.last_write_ns * 1e-9;
		bytes = s.last_write_bytes;
		wrat[r] = gbps(bytes, wr[r]) / gbps(st->total, rw[r]);
	}
	for (int r = 0; saves && rc == 0 && r < o->reps; r++) {
		prog_show(o->reps + r, 2 * o->reps);
		rc = spotckpt_save(e, ++step, NULL, SPOTCKPT_SAVE_LAZY, NULL);
		spotckpt_stats(e, &s);
		lazy[r] = (double)s.last_stall_ns * 1e-9;
		if (rc == 0)
			rc = spotckpt_wait(e);
	}
	peak = bench_proc_bytes("VmHWM:");
	if (o->only & PH_RESTORE)
		progress(o, "restores, each after a raw read of the same bytes");
	/* the engine's restore, the same without keeping the old bytes, a
	 * job's first one (as the Python binding restores) and the C
	 * callback form, alternately */
	for (int r = 0; (o->only & PH_RESTORE) && rc == 0 && r < o->reps; r++) {
		prog_show(r, o->reps);
		/* the engine's three arms take turns first; the arm after
		 * them finds the kernel with no memory just freed (the other
		 * fresh-memory arm's, for the arm after it): the two take
		 * turns in that place */
		static const int ord[3][ARMS] = {
			{ ARM_ENGINE, ARM_BEHIND, ARM_KEEP, ARM_SCRATCH, ARM_FIRST,
			  ARM_CB },
			{ ARM_BEHIND, ARM_KEEP, ARM_ENGINE, ARM_SCRATCH, ARM_CB,
			  ARM_FIRST },
			{ ARM_KEEP, ARM_ENGINE, ARM_BEHIND, ARM_SCRATCH, ARM_FIRST,
			  ARM_CB } };

		for (int a = 0; rc == 0 && a < ARMS; a++) {
			int arm = ord[r % 3][a];

			rc = restore_pair(st, w, dst, e, arm, &rp[arm], r, &rdirect);
		}
	}
	if (rc) {
		fprintf(stderr, "spotrun ckpt: bench: engine: %s (%s)\n",
			spotckpt_strerror(rc), spotckpt_errmsg());
		spotckpt_close(e);
		return rc;
	}
	spotckpt_stats(e, &s);
	if (saves) {
		int mi = median_index(wr, o->reps), ri = median_index(rw, o->reps);
		double st_m = median(stall, o->reps), lz = median(lazy, o->reps);
		double wm = median(wr, o->reps), raw_s = median(rw, o->reps);
		double wg = gbps(bytes, wm), rwg = gbps(st->total, raw_s);
		json_t *ph = json_pack("{s:o,s:o,s:i,s:s}", "engine",
				       bench_phases_json(&prof[mi], wcpu[mi]),
				       "raw", bench_raw_phases_json(&rph[ri]),
				       "dirs", w->n, "of", "the median write of "
				       "each side; see docs/checkpoint.md");

		memcpy_s = median(mc, o->reps);
		*stall_out = st_m;
		*lazy_out = lz;
		put(root, "stall_vs_memcpy", st_m / memcpy_s, json_pack(
			"{s:f,s:f,s:I,s:i,s:f}", "stall_s", st_m, "memcpy_s",
			memcpy_s, "bytes", (json_int_t)st->total, "threads",
			o->threads, "goal_max", 1.10));
		put(root, "lazy_stall_vs_memcpy", lz / memcpy_s, json_pack(
			"{s:f,s:f,s:f}", "lazy_stall_s", lz, "memcpy_s", memcpy_s,
			"goal_max", 0.05));
		median(wrat, o->reps); /* sorted: the spread of the pairs */
		put(root, "write_vs_raw", wg / rwg, json_pack(
			"{s:f,s:f,s:f,s:f,s:I,s:I,s:b,s:b,s:b,s:f,s:f,s:i,s:f,"
			"s:o}", "write_gbps",
			wg, "raw_write_gbps", rwg, "write_s", wm, "raw_write_s",
			raw_s, "bytes", (json_int_t)bytes, "raw_bytes",
			(json_int_t)st->total, "direct_io", s.direct_io_used,
			"raw_direct_io", wdirect, "io_uring", s.uring_used,
			"pair_ratio_min", wrat[0], "pair_ratio_max",
			wrat[o->reps - 1], "pairs", o->reps,
			"goal_min", 0.90, "phases", ph));
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
	if (o->only & PH_RESTORE) {
		put_restore(root, "restore_vs_raw", "the engine's restore "
			    "(spotckpt_restore, its idle staging slot borrowed; "
			    "every tensor read and checked there, then all "
			    "placed)",
			    st->total, o->reps, &rp[0], rdirect);
		put_restore(root, "restore_behind_vs_raw", "the engine's "
			    "restore as restore_vs_raw, each tensor placed behind "
			    "the reads once it matched, its old bytes kept in the "
			    "image until the restore succeeds "
			    "(SPOTCKPT_RESTORE_BEHIND=1)", st->total,
			    o->reps, &rp[ARM_BEHIND], rdirect);
		put_restore(root, "restore_keep_vs_raw", "the engine's "
			    "restore as restore_vs_raw, made all or nothing by "
			    "keeping each destination block's old bytes aside as "
			    "it is overwritten (SPOTCKPT_RESTORE_KEEP=1) instead of "
			    "verifying first", st->total, o->reps, &rp[ARM_KEEP],
			    rdirect);
		put_restore(root, "restore_scratch_vs_raw", "the engine's "
				"restore as restore_vs_raw, the destinations marked "
				"SPOTCKPT_DEST_SCRATCH: written as read, nothing kept "
				"and nothing verified first (the cost of the "
				"all-or-nothing restore is the gap to restore_vs_raw)",
				st->total, o->reps, &rp[ARM_SCRATCH], rdirect);
		put_restore(root, "restore_unstaged_vs_raw", "a job's first "
			    "restore, as the Python binding's restore() does it: "
			    "a fresh engine with no staging memory yet, "
			    "spotckpt_reader_read_all_with (the read reserves the "
			    "engine's staging memory and verifies the step in it "
			    "before placing it), into the same resident tensors",
			    st->total,
			    o->reps, &rp[ARM_FIRST], rdirect);
		put_restore(root, "restore_cb_vs_raw", "spotckpt_restore_cb "
			    "(no engine: the checkpoint's image mapped for the "
			    "read) into the same resident tensors", st->total,
			    o->reps, &rp[ARM_CB], rdirect);
	}
	return spotckpt_close(e);
}

/* Quartile q (0..4 quarters) of n sorted values, by linear interpolation. */
static double quart(const double *v, int n, int q)
{
	double x = (double)(n - 1) * q / 4;
	int i = (int)x;

	return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * (x - i) : v[n - 1];
}

/* Pin the calling (training) thread to CPU 0 and the engine's writer to
 * the other CPUs at nice o->nice (10), as docs/checkpoint.md advises (the
 * copy threads may use every CPU: the training thread waits for them
 * before its optimizer step; --copy-cpus others keeps them off CPU 0);
 * or undo the thread's pin (all CPUs), o NULL.  The write cap applies
 * either way. */
static void place(struct spotckpt *e, const struct bopts *o, char *what,
		  size_t wn)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct spotckpt_background bg = { .nice = o ? o->nice : 0 };
	int pin = o && o->pinned;
	cpu_set_t set;

	CPU_ZERO(&set);
	for (long c = 0; c < ncpu && c < CPU_SETSIZE; c++) {
		if (!pin || c == 0)
			CPU_SET((int)c, &set);
		if (pin && c > 0 && c < 64)
			bg.writer_cpus |= 1ull << c;
	}
	sched_setaffinity(0, sizeof set, &set);
	if (!e)
		return;
	if (!pin) {
		bg.nice = 0;
		bg.writer_cpus = 0;
	}
	bg.copy_cpus = pin && o->copy_others ? bg.writer_cpus : 0;
	bg.write_bytes_per_s = o->write_cap;
	spotckpt_set_background(e, &bg);
	if (pin) {
		char others[32];

		snprintf(others, sizeof others, ncpu > 2 ? "CPUs 1-%ld" : "CPU %ld",
			 ncpu - 1);
		snprintf(what, wn, "training thread on CPU 0; writer on %s at nice "
			 "%d; copy threads on %s", others, o->nice,
			 o->copy_others ? others : "any CPU");
	} else
		snprintf(what, wn, "none (scheduler's choice)");
	if (o->write_cap) {
		size_t k = strlen(what);

		snprintf(what + k, wn - k, "; writes capped at %.0f MiB/s",
			 (double)o->write_cap / (1 << 20));
	}
}

static int run_train(const struct bopts *o, struct bench_state *st,
		     const struct bwork *w, json_t *root)
{
	struct spotckpt *e = NULL;
	double step_s = 0.1;
	double seg_s = o->train_s > 0 ? o->train_s / (2 * o->pairs) : o->interval_s;
	long iters, steps, step_no = 0;
	double d[100], dcpu[100], doff[100], eng[100], dv[100], rel[100];
	double base_s[100];
	char where[192] = "";
	int rc, late = 0;

	if (seg_s < 0.25) /* a smoke test's segments (tests/py) */
		seg_s = 0.25;
	if (seg_s < 20 * step_s)
		step_s = seg_s / 20;
	iters = bench_calibrate(step_s);
	steps = (long)(seg_s / step_s);
	rc = open_engine(o, st, w, &e);
	if (rc == 0)
		place(e, o, where, sizeof where);
	progress(o, "training segments without (A) and with (B) a checkpoint");
	/* ABBA ABBA ...: pair i runs A first when i is even, B first when
	 * odd, so a drift in the machine's load favours neither */
	for (int i = 0; rc == 0 && i < o->pairs; i++) {
		struct bench_seg a, b;

		prog_show(i, o->pairs);
		if (i % 2 == 0) {
			rc = bench_train_segment(st, NULL, steps, iters, &step_no, &a);
			if (rc == 0)
				rc = bench_train_segment(st, e, steps, iters, &step_no, &b);
		} else {
			rc = bench_train_segment(st, e, steps, iters, &step_no, &b);
			if (rc == 0)
				rc = bench_train_segment(st, NULL, steps, iters,
							 &step_no, &a);
		}
		base_s[i] = a.wall_s;
		d[i] = b.wall_s - a.wall_s;
		rel[i] = d[i] / o->interval_s;
		dcpu[i] = b.thread_cpu_s - a.thread_cpu_s;
		doff[i] = (b.wall_s - b.thread_cpu_s) - (a.wall_s - a.thread_cpu_s);
		eng[i] = (b.proc_cpu_s - b.thread_cpu_s) -
			 (a.proc_cpu_s - a.thread_cpu_s);
		dv[i] = (double)(b.nivcsw - a.nivcsw);
		late += b.late_commit;
	}
	place(NULL, NULL, NULL, 0);
	if (e)
		spotckpt_close(e);
	if (rc) {
		fprintf(stderr, "spotrun ckpt: bench: training loop: %s (%s)\n",
			spotckpt_strerror(rc), spotckpt_errmsg());
		return rc;
	}
	{
		int n = o->pairs;
		double md = median(d, n), seg = median(base_s, n);

		/* median() sorted d; quartiles and range come from it */
		median(rel, n);
		put(root, "train_overhead", md / o->interval_s, json_pack(
			"{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
			"s:f,s:f,s:s,s:i,s:s,s:f,s:s}",
			"pairs", n, "segment_s", seg, "interval_s", o->interval_s,
			"step_s", step_s,
			"delta_s_median", md, "delta_s_q1", quart(d, n, 1),
			"delta_s_q3", quart(d, n, 3), "delta_s_min", d[0],
			"delta_s_max", d[n - 1],
			"overhead_q1", quart(rel, n, 1), "overhead_q3", quart(rel, n, 3),
			"overhead_min", rel[0], "overhead_max", rel[n - 1],
			"train_cpu_delta_s", median(dcpu, n),
			"off_cpu_delta_s", median(doff, n),
			"mode", "lazy", "cpus", (int)sysconf(_SC_NPROCESSORS_ONLN),
			"placement", where, "engine_cpu_s", median(eng, n),
			"measures", "median over ABBA pairs of (segment with one "
			"checkpoint - segment without) / interval_s; "
			"train_cpu_delta_s: extra CPU the training thread needed "
			"(cache and memory contention); off_cpu_delta_s: extra time "
			"it was not running (waiting for the staging copy, or "
			"preempted); engine_cpu_s: CPU the engine's threads used per "
			"checkpoint"));
		json_object_set_new(json_object_get(root, "train_overhead"),
				    "preempted_delta", json_real(median(dv, n)));
		/* > 0: some writes outlasted their interval; the part of their
		 * contention after it is not in the differences */
		json_object_set_new(json_object_get(root, "train_overhead"),
				    "late_commits", json_integer(late));
	}
	return 0;
}

/* write_vs_raw's breakdown under the table: wall/CPU seconds by phase. */
static void print_phases(json_t *ph)
{
	static const char *const sides[] = { "engine", "raw" };

	if (!ph)
		return;
	printf("write phases, wall/CPU s (the median write of each side):\n");
	for (int k = 0; k < 2; k++) {
		json_t *side = json_object_get(ph, sides[k]), *v;
		const char *name;

		printf("  %-6s", sides[k]);
		json_object_foreach(side, name, v) {
			if (json_is_object(v))
				printf(" %s %.3f/%.3f", name,
				       json_number_value(json_object_get(v, "wall_s")),
				       json_number_value(json_object_get(v, "cpu_s")));
		}
		printf("\n");
	}
}

static void print_table(json_t *root)
{
	static const struct { const char *key, *goal; } rows[] = {
		{ "stall_vs_memcpy", "<= 1.10" },
		{ "lazy_stall_vs_memcpy", "<= 0.05" },
		{ "write_vs_raw", ">= 0.90" },
		{ "restore_vs_raw", ">= 0.95" },
		{ "restore_behind_vs_raw", "-" },
		{ "restore_keep_vs_raw", "-" },
		{ "restore_scratch_vs_raw", "-" },
		{ "restore_unstaged_vs_raw", ">= 0.95" },
		{ "restore_cb_vs_raw", "-" },
		{ "stall_vs_torch_save", "<= 0.05" },
		{ "train_overhead", "< 0.01" },
		{ "peak_rss_vs_state", "<= 1.1" },
		{ "upload_vs_raw", ">= 0.90" },
		{ "remote_restore_vs_raw", ">= 0.90" },
	};

	json_t *m = json_object_get(root, "machine");

	if (m)
		printf("load average (1/5/15 min) at start %s, at end %s; %d CPUs\n",
		       json_string_value(json_object_get(m, "loadavg_start")),
		       json_string_value(json_object_get(m, "loadavg_end")),
		       (int)json_integer_value(json_object_get(m, "cpus")));
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
			json_object_del(rest, "phases"); /* on lines of its own */
			raw = json_dumps(rest, JSON_COMPACT | JSON_REAL_PRECISION(4));
			json_decref(rest);
		}
		printf("%-22s %10s  %-8s  %s\n", rows[i].key, ratio, rows[i].goal,
		       raw ? raw : "");
		free(raw);
	}
	print_phases(json_object_get(json_object_get(root, "write_vs_raw"),
				     "phases"));
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

/* Make DIR/spotrun-bench-PID in every --dir.  0 or CLI_FAIL (printed). */
static int work_make(const struct bopts *o, struct bwork *w)
{
	memset(w, 0, sizeof *w);
	for (int k = 0; k < o->ndirs; k++) {
		if (asprintf(&w->wdir[k], "%s/spotrun-bench-%d", o->dirs[k],
			     (int)getpid()) < 0 ||
		    asprintf(&w->raw[k], "%s/raw.bin", w->wdir[k]) < 0) {
			w->wdir[k] = w->raw[k] = NULL;
			fprintf(stderr, "spotrun ckpt: bench: out of memory\n");
			return CLI_FAIL;
		}
		w->n = k + 1;
		if (mkdir(w->wdir[k], 0755) != 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				fprintf(stderr, "spotrun ckpt: bench: --dir %s: not "
					"a directory (create it first)\n",
					o->dirs[k]);
			else
				fprintf(stderr, "spotrun ckpt: bench: %s: %s\n",
					w->wdir[k], strerror(errno));
			free(w->raw[k]);
			w->raw[k] = NULL; /* not ours: nothing to remove */
			free(w->wdir[k]);
			w->wdir[k] = NULL;
			w->n = k;
			return CLI_FAIL;
		}
	}
	return 0;
}

static void work_free(struct bwork *w)
{
	for (int k = 0; k < w->n; k++) {
		nftw(w->wdir[k], rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(w->wdir[k]);
		free(w->raw[k]);
	}
	w->n = 0;
}

/* Phase 2: one raw write, unmeasured: the raw files the restores' raw
 * reads need, and a first write of the disk before the saves (each
 * measured save is paired with a raw write of its own, run_engine);
 * none when neither runs.  0 or CLI_FAIL (printed). */
static int run_raw_writes(const struct bopts *o, const struct bench_state *st,
			  const uint8_t *dst, struct bwork *w)
{
	struct bench_raw_phases ph;
	double rw = 0;
	int n = (o->only & (PH_SAVES | PH_RESTORE)) ? 1 : 0;
	int rc = 0;

	if (n) {
		progress(o, "raw write of the same bytes (peer)");
		rc = bench_raw_write((const char *const *)w->raw, w->n, dst,
				     st->total, &rw, &w->raw_direct, &ph);
	}
	if (rc) {
		fprintf(stderr, "spotrun ckpt: bench: raw I/O in %s%s: %s\n",
			w->wdir[0], w->n > 1 ? " and the other directories" : "",
			strerror(-rc));
		return CLI_FAIL;
	}
	return 0;
}

int ckpt_bench_main(int argc, char **argv)
{
	struct bopts o;
	struct bench_state st = { 0 };
	struct bwork w = { 0 };
	json_t *root = NULL, *dirs = NULL;
	char reason[256] = "", load0[64], load1[64];
	char sz[32];
	double stall = 0, lazy = 0, tsave = 0;
	uint8_t *dst = NULL;
	int rc, need_dst;

	rc = parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	root = json_object();
	dirs = json_array();
	if (!root || !dirs) {
		fprintf(stderr, "spotrun ckpt: bench: out of memory\n");
		rc = CLI_FAIL;
		goto out;
	}
	for (int k = 0; k < o.ndirs; k++)
		json_array_append_new(dirs, json_string(o.dirs[k]));
	snprintf(sz, sizeof sz, "%.0f MiB", (double)o.size / (1 << 20));
	rc = work_make(&o, &w);
	if (rc)
		goto out;
	bench_loadavg(load0, sizeof load0);
	progress(&o, "building a %s state", sz);
	rc = bench_state_build(&st, o.size);
	/* the peers' buffer; the training loop alone needs none */
	need_dst = (o.only & (PH_SAVES | PH_RESTORE)) || o.remote;
	dst = rc || !need_dst ? NULL : bench_alloc_faulted(st.total + 4096);
	if (rc || (need_dst && !dst)) {
		fprintf(stderr, "spotrun ckpt: bench: out of memory for %" PRIu64
			" bytes\n", o.size);
		rc = CLI_FAIL;
		goto out;
	}
	if (dst) /* the written bytes: the state */
		bench_memcpy(&st, dst, o.threads);
	rc = run_raw_writes(&o, &st, dst, &w);
	if (rc)
		goto out;
	/* the raw files stay for the raw reads paired with the restores */
	if (o.only & (PH_SAVES | PH_RESTORE))
		rc = run_engine(&o, &st, &w, root, dst, st.total + 4096, &stall,
				&lazy);
	for (int k = 0; k < w.n; k++)
		unlink(w.raw[k]);
	if (rc == 0 && o.remote) {
		progress(&o, "tier 3: upload and remote restore");
		rc = bench_remote(&st, o.remote, w.wdir[0], o.reps, dst,
				  st.total + 4096, root);
	}
	bench_unmap(dst, st.total + 4096);
	dst = NULL;
	if (rc) {
		rc = CLI_FAIL;
		goto out;
	}
	if (o.only & PH_TORCH)
		progress(&o, "torch.save of the same bytes (peer)");
	if (!(o.only & PH_TORCH))
		; /* not asked for */
	else if (bench_torch_save(o.script, st.total, w.wdir[0], &tsave, reason,
				  sizeof reason) == 0)
		put(root, "stall_vs_torch_save", stall / tsave, json_pack(
			"{s:f,s:f,s:I,s:f,s:f,s:f}", "stall_s", stall, "torch_save_s",
			tsave, "bytes", (json_int_t)st.total, "lazy_stall_s", lazy,
			"lazy_ratio", lazy / tsave, "goal_max", 0.05));
	else
		put(root, "stall_vs_torch_save", NAN, json_pack("{s:f,s:s}",
			"stall_s", stall, "reason", reason));
	if (o.only & PH_TRAIN)
		rc = run_train(&o, &st, &w, root) ? CLI_FAIL : CLI_OK;
	progress_end();
	bench_loadavg(load1, sizeof load1);
	json_object_set_new(root, "machine", json_pack(
		"{s:i,s:s,s:s,s:O,s:s}", "cpus", (int)sysconf(_SC_NPROCESSORS_ONLN),
		"loadavg_start", load0, "loadavg_end", load1, "dirs", dirs, "note",
		"1/5/15-minute load averages; a load above the CPU count means "
		"other work shared the machine during the run"));
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
	progress_end();
	work_free(&w);
	if (dst)
		bench_unmap(dst, st.total + 4096);
	bench_state_free(&st);
	json_decref(dirs);
	json_decref(root);
	return rc;
}
