/*
 * ckpt_bench_peers.c - what `spotrun ckpt bench` measures the engine
 * against, each done the plain way: a threaded memcpy into faulted memory,
 * a raw sequential write and read of the same bytes, torch.save, and a
 * training loop without checkpoints.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_bench.h"

extern char **environ;

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fill(float *p, uint64_t nbytes, uint64_t seed)
{
	uint32_t *w = (uint32_t *)p;
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;

	for (uint64_t i = 0; i < nbytes / 4; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* finite floats in [1, 2): real-looking, incompressible */
		w[i] = 0x3f800000u | (uint32_t)(x & 0x7fffff);
	}
}

static int add(struct bench_state *s, const char *name, uint64_t nbytes)
{
	size_t i = s->n;

	s->name = realloc(s->name, (i + 1) * sizeof *s->name);
	s->ptr = realloc(s->ptr, (i + 1) * sizeof *s->ptr);
	s->nbytes = realloc(s->nbytes, (i + 1) * sizeof *s->nbytes);
	if (!s->name || !s->ptr || !s->nbytes)
		return -ENOMEM;
	s->name[i] = strdup(name);
	s->ptr[i] = malloc(nbytes ? nbytes : 4);
	s->nbytes[i] = nbytes;
	if (!s->name[i] || !s->ptr[i])
		return -ENOMEM;
	fill(s->ptr[i], nbytes, i + 1);
	s->total += nbytes;
	s->n++;
	return 0;
}

/* A parameter and its two Adam moments. */
static int add3(struct bench_state *s, const char *param, uint64_t nbytes)
{
	char n[160];
	int rc = add(s, param, nbytes);

	snprintf(n, sizeof n, "optim.%s.exp_avg", param);
	rc = rc ? rc : add(s, n, nbytes);
	snprintf(n, sizeof n, "optim.%s.exp_avg_sq", param);
	return rc ? rc : add(s, n, nbytes);
}

int bench_state_build(struct bench_state *s, uint64_t size)
{
	static const struct { const char *n; uint64_t mul_dd, mul_d; } blk[] = {
		{ "attn.qkv.weight", 3, 0 }, { "attn.qkv.bias", 0, 3 },
		{ "attn.proj.weight", 1, 0 }, { "attn.proj.bias", 0, 1 },
		{ "ln1.weight", 0, 1 }, { "ln1.bias", 0, 1 },
		{ "mlp.up.weight", 4, 0 }, { "mlp.up.bias", 0, 4 },
		{ "mlp.down.weight", 4, 0 }, { "mlp.down.bias", 0, 1 },
		{ "ln2.weight", 0, 1 }, { "ln2.bias", 0, 1 },
	};
	uint64_t d = size >= (1ull << 30) ? 1024 : size >= (256ull << 20) ? 512 : 256;
	uint64_t layer = 0, budget = size / 4 * 4;
	int rc = 0;

	memset(s, 0, sizeof *s);
	for (size_t k = 0; k < sizeof blk / sizeof blk[0]; k++)
		layer += 3 * 4 * (blk[k].mul_dd * d * d + blk[k].mul_d * d);
	/* embedding takes about 1/8; blocks the rest; the head the remainder */
	{
		uint64_t emb = budget / 8 / 12 * 4;
		char n[64];

		rc = add3(s, "embed.weight", emb);
		for (int l = 0; rc == 0 && s->total + layer <= budget - budget / 32; l++) {
			for (size_t k = 0; rc == 0 && k < sizeof blk / sizeof blk[0]; k++) {
				snprintf(n, sizeof n, "blocks.%d.%s", l, blk[k].n);
				rc = add3(s, n, 4 * (blk[k].mul_dd * d * d +
						     blk[k].mul_d * d));
			}
		}
		if (rc == 0 && budget > s->total)
			rc = add3(s, "head.weight", (budget - s->total) / 12 * 4);
	}
	return rc;
}

void bench_state_free(struct bench_state *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->name[i]);
		free(s->ptr[i]);
	}
	free(s->name);
	free(s->ptr);
	free(s->nbytes);
	memset(s, 0, sizeof *s);
}

void *bench_alloc_faulted(uint64_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, n, MADV_HUGEPAGE);
	if (madvise(p, n, MADV_POPULATE_WRITE) != 0)
		memset(p, 0, n);
	return p;
}

void bench_unmap(void *p, uint64_t n)
{
	if (p)
		munmap(p, n);
}

struct mc_arg {
	const struct bench_state *s;
	uint8_t *dst;
	uint64_t lo, hi;
};

static void *mc_thread(void *p)
{
	struct mc_arg *a = p;
	uint64_t base = 0;

	for (size_t i = 0; i < a->s->n && base < a->hi; i++) {
		uint64_t sb = base, se = base + a->s->nbytes[i];

		base = se;
		if (se <= a->lo)
			continue;
		uint64_t x = sb > a->lo ? sb : a->lo, y = se < a->hi ? se : a->hi;

		memcpy(a->dst + x, (const uint8_t *)a->s->ptr[i] + (x - sb), y - x);
	}
	return NULL;
}

double bench_memcpy(const struct bench_state *s, uint8_t *dst, int threads)
{
	pthread_t th[64];
	struct mc_arg a[64];
	double t0;
	int n = threads < 1 ? 1 : threads > 64 ? 64 : threads;

	t0 = bench_now();
	for (int i = 0; i < n; i++) {
		a[i].s = s;
		a[i].dst = dst;
		a[i].lo = s->total / (uint64_t)n * (uint64_t)i;
		a[i].hi = i == n - 1 ? s->total : a[i].lo + s->total / (uint64_t)n;
		pthread_create(&th[i], NULL, mc_thread, &a[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return bench_now() - t0;
}

static int drop_entry(const char *path, const struct stat *sb, int flag,
		      struct FTW *ftw)
{
	int fd;

	(void)sb;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	return 0;
}

void bench_drop_cache(const char *dir)
{
	nftw(dir, drop_entry, 16, FTW_PHYS);
}

int bench_torch_save(const char *script, uint64_t bytes, const char *dir,
		     double *secs, char *reason, size_t rn)
{
	char nb[32], out[4096];
	char *argv[] = { "python3", (char *)script, "--bytes", nb, "--dir",
			 (char *)dir, NULL };
	posix_spawn_file_actions_t fa;
	json_error_t je;
	json_t *j = NULL;
	size_t len = 0;
	int p[2], st = 0, rc;
	pid_t pid;

	if (access(script, R_OK) != 0) {
		snprintf(reason, rn, "peer script %s not found", script);
		return -ENOENT;
	}
	if (access("/usr/bin/python3", X_OK) != 0) {
		snprintf(reason, rn, "/usr/bin/python3 not found");
		return -ENOENT;
	}
	snprintf(nb, sizeof nb, "%llu", (unsigned long long)bytes);
	if (pipe(p) != 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	rc = posix_spawn(&pid, "/usr/bin/python3", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc) {
		close(p[0]);
		snprintf(reason, rn, "posix_spawn: %s", strerror(rc));
		return -rc;
	}
	for (;;) {
		ssize_t r = read(p[0], out + len, sizeof out - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == sizeof out - 1)
			break;
	}
	out[len] = '\0';
	close(p[0]);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(reason, rn, "peer script exited with status %d",
			 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		return -EIO;
	}
	j = json_loads(out, JSON_DISABLE_EOF_CHECK, &je);
	if (!j || !json_is_number(json_object_get(j, "seconds"))) {
		snprintf(reason, rn, "peer script printed no {\"seconds\": ...}");
		json_decref(j);
		return -EIO;
	}
	*secs = json_number_value(json_object_get(j, "seconds"));
	json_decref(j);
	return 0;
}

uint64_t bench_proc_bytes(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, field, strlen(field))) {
			sscanf(line + strlen(field), "%llu", &kb);
			break;
		}
	}
	fclose(f);
	return (uint64_t)kb * 1024;
}

void bench_reset_hwm(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, "5", 1) != 1) {
			/* older kernels: the peak then includes earlier phases */
		}
		close(fd);
	}
}

/* ---- the synthetic training loop -------------------------------------------- */
static volatile double g_sink;

static void compute(long iters)
{
	double a[512];

	for (int i = 0; i < 512; i++)
		a[i] = i * 1e-3;
	for (long it = 0; it < iters; it++) {
		for (int i = 0; i < 512; i++)
			a[i] = a[i] * 0.9999999 + 1e-7;
	}
	g_sink = a[17];
}

static double thread_cpu(void);

/* Iterations for step_s seconds of the thread's own CPU time: wall time
 * would count the time other work held the CPU during the calibration,
 * and on a busy machine made a "30 s" segment 3 s long. */
long bench_calibrate(double step_s)
{
	long iters = 1000;
	double t;

	for (;;) {
		double t0 = thread_cpu();

		compute(iters);
		t = thread_cpu() - t0;
		if (t > 0.05)
			break;
		iters *= 2;
	}
	return (long)((double)iters * step_s / t);
}

/* "Optimizer step": touch every 1024th float of 1/16 of the tensors. */
static void update(struct bench_state *s, long step)
{
	for (size_t i = (size_t)(step % 16); i < s->n; i += 16) {
		for (uint64_t k = 0; k < s->nbytes[i] / 4; k += 1024)
			s->ptr[i][k] += 1.0f;
	}
}

double bench_proc_cpu(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long thread_nivcsw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

void bench_loadavg(char *buf, size_t n)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double a = 0, b = 0, c = 0;

	buf[0] = '\0';
	if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
		snprintf(buf, n, "%.2f %.2f %.2f", a, b, c);
	if (f)
		fclose(f);
}

int bench_train_segment(struct bench_state *s, struct spotckpt *e, long steps,
			long iters, long *step_no, struct bench_seg *out)
{
	double t0 = bench_now(), c0 = thread_cpu(), p0 = bench_proc_cpu();
	long v0 = thread_nivcsw();
	int rc = 0;

	if (e)
		rc = spotckpt_save(e, *step_no, NULL, SPOTCKPT_SAVE_LAZY, NULL);
	for (long k = 0; k < steps && rc == 0; k++) {
		compute(iters);            /* forward/backward */
		if (e)
			rc = spotckpt_wait_staged(e); /* before modifying */
		update(s, (*step_no)++);   /* optimizer step */
	}
	out->wall_s = bench_now() - t0;
	out->thread_cpu_s = thread_cpu() - c0;
	out->proc_cpu_s = bench_proc_cpu() - p0;
	out->nivcsw = thread_nivcsw() - v0;
	out->late_commit = 0;
	if (e && rc == 0) {
		struct spotckpt_stats st;

		/* a write still running when the interval is over: waited for
		 * outside the segment (training would go on), and counted */
		spotckpt_stats(e, &st);
		out->late_commit = st.saves_committed + st.saves_failed <
				   st.saves_requested;
		rc = spotckpt_wait(e);
		out->proc_cpu_s = bench_proc_cpu() - p0;
	}
	return rc;
}
