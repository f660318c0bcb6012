/*
 * test_ckpt_engine.c - retention, back-pressure (skip / coalesce / block),
 * the staging budget, lazy mode, save_final's priority, deadline and
 * abandon, and a restore that reads through an idle staging slot while the
 * writer holds the other one.
 *
 * Tier 2 is held still with the writer's test hook, which blocks before
 * each commit until the test releases it, so every back-pressure case is
 * reached deterministically (no sleeps, no timing assertions).
 */
#include "ckpt_test.h"

#include <dirent.h>

#include <pthread.h>
#include <time.h>

#include "ckpt/internal.h"

#define N 1024

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_hold, g_waiting, g_released;
static int64_t g_order[64];
static int g_norder;

static void hook(int64_t step)
{
	pthread_mutex_lock(&g_mu);
	g_order[g_norder++ % 64] = step;
	g_waiting++;
	pthread_cond_broadcast(&g_cv);
	while (g_hold && !g_released)
		pthread_cond_wait(&g_cv, &g_mu);
	g_waiting--;
	pthread_mutex_unlock(&g_mu);
}

static void hold(void)
{
	pthread_mutex_lock(&g_mu);
	g_hold = 1;
	g_released = 0;
	g_norder = 0;
	pthread_mutex_unlock(&g_mu);
}

static void wait_writer_held(void)
{
	pthread_mutex_lock(&g_mu);
	while (g_waiting == 0)
		pthread_cond_wait(&g_cv, &g_mu);
	pthread_mutex_unlock(&g_mu);
}

static void release(void)
{
	pthread_mutex_lock(&g_mu);
	g_released = 1;
	g_hold = 0;
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_mu);
}

static struct spotckpt *open_bp(const char *dir, int bp, uint64_t budget,
				float *x)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	int64_t sh[1] = { N };

	spotckpt_opts_init(&o);
	o.dir = dir;
	o.keep = 10;
	o.backpressure = bp;
	o.staging_bytes = budget;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_register(e, "x", x, SPOTCKPT_F32, 1, sh, 0), 0);
	return e;
}

static float step_value(const char *dir, int64_t step)
{
	struct spotckpt_reader *r = NULL;
	float v[N];

	assert_int_equal(spotckpt_reader_open(dir, step, 0, 0, &r), 0);
	assert_int_equal(spotckpt_reader_read(r, 0, v, sizeof v), 0);
	spotckpt_reader_close(r);
	return v[N - 1];
}

/* Tensor 0 of checkpoint `step` into buf. */
static void read_step(const char *dir, int64_t step, void *buf, size_t n)
{
	struct spotckpt_reader *r = NULL;

	assert_int_equal(spotckpt_reader_open(dir, step, 0, 0, &r), 0);
	assert_int_equal(spotckpt_reader_read(r, 0, buf, n), 0);
	spotckpt_reader_close(r);
}

static void test_retention(void **st)
{
	char *dir = ct_tmpdir();
	struct spotckpt *e = ct_open(dir, 2);
	float x[N] = { 0 };
	int64_t sh[1] = { N };
	struct spotckpt_entry ents[8];
	size_t n;

	(void)st;
	assert_int_equal(spotckpt_register(e, "x", x, SPOTCKPT_F32, 1, sh, 0), 0);
	for (int s = 1; s <= 5; s++) {
		assert_int_equal(spotckpt_save(e, s, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
		assert_int_equal(spotckpt_list(dir, ents, 8, &n), 0);
		assert_int_equal(n, s < 2 ? (size_t)s : 2);
		assert_int_equal(ents[0].step, s);
	}
	/* a step lower than those on disk is still never deleted itself */
	assert_int_equal(spotckpt_save(e, 3, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_true(ct_exists("%s/step-00000003", dir));
	assert_true(ct_exists("%s/step-00000005", dir));
	assert_int_equal(spotckpt_close(e), 0);

	/* leftovers of a crashed writer are removed at open */
	{
		char p[4200];

		snprintf(p, sizeof p, "%s/step-00000009.tmp", dir);
		assert_int_equal(mkdir(p, 0755), 0);
		snprintf(p, sizeof p, "%s/step-00000002.del.tmp", dir);
		assert_int_equal(mkdir(p, 0755), 0);
		assert_int_equal(spotckpt_list(dir, ents, 8, &n), 0);
		assert_int_equal(n, 5); /* 5, 4, 3 (protected) + two scratch */
		assert_int_equal(ents[0].state, SPOTCKPT_ENTRY_INCOMPLETE);
		e = ct_open(dir, 2);
		assert_false(ct_exists("%s/step-00000009.tmp", dir));
		assert_false(ct_exists("%s/step-00000002.del.tmp", dir));
		assert_int_equal(spotckpt_close(e), 0);
	}
	ct_rmtree(dir);
	free(dir);
}

static void test_skip(void **st)
{
	char *dir = ct_tmpdir();
	static float x[N];
	struct spotckpt *e = open_bp(dir, SPOTCKPT_BP_SKIP, 0, x);
	struct spotckpt_stats s;
	int32_t oc;

	(void)st;
	hold();
	x[N - 1] = 1;
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, &oc), 0);
	assert_int_equal(oc, SPOTCKPT_STAGED);
	wait_writer_held();
	x[N - 1] = 2;
	assert_int_equal(spotckpt_save(e, 2, NULL, 0, &oc), 0);
	assert_int_equal(oc, SPOTCKPT_SKIPPED);
	release();
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_stats(e, &s), 0);
	assert_int_equal(s.saves_skipped, 1);
	assert_int_equal(s.saves_committed, 1);
	assert_int_equal(s.staging_bytes, 8192); /* one slot */
	assert_true(s.state_bytes == N * 4);
	assert_int_equal(spotckpt_last_saved_step(e), 1);
	assert_true(step_value(dir, 1) == 1);
	assert_false(ct_exists("%s/step-00000002", dir));
	assert_int_equal(spotckpt_close(e), 0);
	ct_rmtree(dir);
	free(dir);
}

static void *releaser(void *arg);

static void test_coalesce(void **st)
{
	char *dir = ct_tmpdir();
	static float x[N];
	/* budget for two slots (the image is 8 KiB: header page + data) */
	struct spotckpt *e = open_bp(dir, SPOTCKPT_BP_COALESCE, 2 * 8192, x);
	struct spotckpt_stats s;
	int32_t oc;

	(void)st;
	hold();
	x[N - 1] = 1;
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, &oc), 0);
	wait_writer_held();            /* step 1 is being written */
	x[N - 1] = 2;
	assert_int_equal(spotckpt_save(e, 2, NULL, 0, &oc), 0);
	assert_int_equal(oc, SPOTCKPT_STAGED); /* second slot */
	x[N - 1] = 3;
	assert_int_equal(spotckpt_save(e, 3, NULL, 0, &oc), 0);
	assert_int_equal(oc, SPOTCKPT_COALESCED); /* replaces step 2 */
	x[N - 1] = 4;
	assert_int_equal(spotckpt_save(e, 4, NULL, SPOTCKPT_SAVE_LAZY, &oc), 0);
	assert_int_equal(oc, SPOTCKPT_COALESCED); /* replaces step 3 */
	assert_int_equal(spotckpt_wait_staged(e), 0);
	release();
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_stats(e, &s), 0);
	assert_int_equal(s.saves_coalesced, 2);
	assert_int_equal(s.saves_committed, 2);
	assert_true(s.staging_bytes <= 2 * 8192); /* budget respected */
	assert_true(step_value(dir, 1) == 1);
	assert_true(step_value(dir, 4) == 4);
	assert_false(ct_exists("%s/step-00000002", dir));
	assert_false(ct_exists("%s/step-00000003", dir));
	/* with one slot, being written, the newest save waits for that
	 * write instead of being dropped (issue 23: a save(10); save(20);
	 * close() left 10) */
	assert_int_equal(spotckpt_close(e), 0);
	e = open_bp(dir, SPOTCKPT_BP_COALESCE, 0, x);
	hold();
	x[N - 1] = 5;
	assert_int_equal(spotckpt_save(e, 5, NULL, 0, &oc), 0);
	wait_writer_held();
	{
		pthread_t th;

		assert_int_equal(pthread_create(&th, NULL, releaser, NULL), 0);
		x[N - 1] = 6;
		assert_int_equal(spotckpt_save(e, 6, NULL, 0, &oc), 0);
		pthread_join(th, NULL);
	}
	assert_int_equal(oc, SPOTCKPT_STAGED);
	assert_int_equal(spotckpt_close(e), 0);
	assert_true(step_value(dir, 6) == 6);
	ct_rmtree(dir);
	free(dir);
}

static int g_released_before_return;

static void *releaser(void *arg)
{
	(void)arg;
	wait_writer_held();
	usleep(20000); /* give save(2) the chance to (wrongly) return */
	__atomic_store_n(&g_released_before_return, 1, __ATOMIC_SEQ_CST);
	release();
	return NULL;
}

static void test_block_and_budget(void **st)
{
	char *dir = ct_tmpdir();
	static float x[N];
	struct spotckpt *e = open_bp(dir, SPOTCKPT_BP_BLOCK, 0, x);
	pthread_t th;
	int32_t oc;

	(void)st;
	hold();
	g_released_before_return = 0;
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, &oc), 0);
	pthread_create(&th, NULL, releaser, NULL);
	assert_int_equal(spotckpt_save(e, 2, NULL, 0, &oc), 0);
	/* save(2) could only have got a slot once step 1 was released */
	assert_int_equal(__atomic_load_n(&g_released_before_return,
					 __ATOMIC_SEQ_CST), 1);
	assert_int_equal(oc, SPOTCKPT_STAGED);
	pthread_join(th, NULL);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_true(ct_exists("%s/step-00000002", dir));
	assert_int_equal(spotckpt_close(e), 0);

	/* a budget smaller than the state is refused, clearly */
	e = open_bp(dir, SPOTCKPT_BP_BLOCK, 4096, x);
	assert_int_equal(spotckpt_save(e, 3, NULL, 0, NULL), -ENOBUFS);
	assert_non_null(strstr(spotckpt_errmsg(), "budget"));
	assert_int_equal(spotckpt_prepare(e), -ENOBUFS);
	assert_int_equal(spotckpt_close(e), 0);
	ct_rmtree(dir);
	free(dir);
}

/* Count the process's threads with nice value `nice` and those allowed
 * only CPU 0 ("Cpus_allowed_list:\t0"). */
static void thread_census(int nice, int *n_nice, int *n_cpu0)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	*n_nice = *n_cpu0 = 0;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[300], buf[4096];
		FILE *f;
		size_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (f) {
			len = fread(buf, 1, sizeof buf - 1, f);
			buf[len] = 0;
			fclose(f);
			/* field 19 (nice) counts from after the ")" of the name */
			char *p = strrchr(buf, ')');
			int field = 2;
			long v = 0;

			for (; p && *p && field < 19; p++)
				field += *p == ' ';
			if (p && sscanf(p, "%ld", &v) == 1 && v == nice)
				(*n_nice)++;
		}
		snprintf(path, sizeof path, "/proc/self/task/%s/status", de->d_name);
		f = fopen(path, "r");
		if (f) {
			len = fread(buf, 1, sizeof buf - 1, f);
			buf[len] = 0;
			fclose(f);
			if (strstr(buf, "Cpus_allowed_list:\t0\n"))
				(*n_cpu0)++;
		}
	}
	closedir(d);
}

static void test_background(void **st)
{
	char *dir = ct_tmpdir();
	struct spotckpt *e = ct_open(dir, 2);
	size_t n = 4 << 20;
	uint8_t *buf = malloc(n), *back = malloc(n);
	int64_t sh[1] = { (int64_t)n };
	struct spotckpt_background bg = { .nice = 20 };
	int n_nice, n_cpu0;

	(void)st;
	assert_int_equal(spotckpt_set_background(e, &bg), -EINVAL);
	assert_non_null(strstr(spotckpt_errmsg(), "nice 20"));
	assert_int_equal(spotckpt_set_background(e, NULL), -EINVAL);
	bg.nice = 7;
	bg.writer_cpus = 1;               /* CPU 0 */
	bg.copy_cpus = 1;
	bg.write_bytes_per_s = 64 << 20;  /* a 4 MiB write takes ~1/16 s */
	assert_int_equal(spotckpt_set_background(e, &bg), 0);
	ct_fill(buf, n, 5);
	assert_int_equal(spotckpt_register(e, "x", buf, SPOTCKPT_U8, 1, sh, 0), 0);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	/* the writer runs at nice 7 (and io_uring's workers, which it
	 * starts, inherit that); it and every copy thread on CPU 0 */
	thread_census(7, &n_nice, &n_cpu0);
	assert_true(n_nice >= 1);
	assert_true(n_cpu0 >= 2);
	read_step(dir, 1, back, n);
	assert_memory_equal(back, buf, n);
	assert_int_equal(spotckpt_close(e), 0);
	free(buf);
	free(back);
	ct_rmtree(dir);
	free(dir);
}

static void test_lazy(void **st)
{
	char *dir = ct_tmpdir();
	struct spotckpt *e = ct_open(dir, 3);
	size_t n = 8 << 20;
	uint8_t *big = malloc(n), *back = malloc(n);
	int64_t sh[1] = { (int64_t)n };
	struct spotckpt_stats s;
	int32_t oc;

	(void)st;
	ct_fill(big, n, 1);
	assert_int_equal(spotckpt_wait_staged(e), 0); /* nothing pending */
	assert_int_equal(spotckpt_register(e, "big", big, SPOTCKPT_U8, 1, sh, 0), 0);
	assert_int_equal(spotckpt_prepare(e), 0);
	assert_int_equal(spotckpt_save(e, 1, NULL, SPOTCKPT_SAVE_LAZY, &oc), 0);
	assert_int_equal(oc, SPOTCKPT_STAGED);
	assert_int_equal(spotckpt_wait_staged(e), 0);
	/* after wait_staged the caller may modify: the save keeps step-1 data */
	ct_fill(big, n, 2);
	assert_int_equal(spotckpt_wait(e), 0);
	read_step(dir, 1, back, n);
	ct_fill(big, n, 1);
	assert_memory_equal(back, big, n);
	/* a lazy save followed directly by another save or close is safe */
	assert_int_equal(spotckpt_save(e, 2, NULL, SPOTCKPT_SAVE_LAZY, NULL), 0);
	assert_int_equal(spotckpt_save(e, 3, NULL, SPOTCKPT_SAVE_LAZY, NULL), 0);
	assert_int_equal(spotckpt_stats(e, &s), 0);
	assert_true(s.saves_requested == 3);
	assert_int_equal(spotckpt_close(e), 0);
	assert_true(ct_exists("%s/step-00000003", dir) ||
		    ct_exists("%s/step-00000002", dir));
	free(big);
	free(back);
	ct_rmtree(dir);
	free(dir);
}

/* spotckpt_restore reads through an idle staging slot (resident memory,
 * no fresh pages to fault in).  While the writer is held inside a commit
 * of slot A, a restore must use slot B only: the in-flight checkpoint
 * still commits what was saved, and the restore fills the tensor. */
static void test_restore_through_staging(void **st)
{
	char *dir = ct_tmpdir();
	size_t n = 9 << 20;  /* one tensor, one reading thread: its share
			      * of a slot (2 MiB multiples) fits two 4 MiB
			      * reads */
	uint8_t *x = malloc(n), *want = malloc(n), *back = malloc(n);
	int64_t sh[1] = { (int64_t)n }, step = -1;
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;

	(void)st;
	assert_non_null(x);
	assert_non_null(want);
	assert_non_null(back);
	spotckpt_opts_init(&o);
	o.dir = dir;
	o.keep = 10;
	o.staging_bytes = 2 * (n + (1 << 20)); /* two slots */
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_register(e, "x", x, SPOTCKPT_U8, 1, sh, 0), 0);
	ct_fill(x, n, 11);
	memcpy(want, x, n);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	hold();
	ct_fill(x, n, 12);
	assert_int_equal(spotckpt_save(e, 2, NULL, 0, NULL), 0);
	wait_writer_held();            /* step 2's slot is being written */
	ct_fill(x, n, 13);
	assert_int_equal(spotckpt_restore(e, 1, &step), 0);
	assert_int_equal(step, 1);
	assert_memory_equal(x, want, n);
	release();
	assert_int_equal(spotckpt_wait(e), 0);
	read_step(dir, 2, back, n);
	ct_fill(want, n, 12);
	assert_memory_equal(back, want, n);
	/* and again with the writer idle: both slots free */
	ct_fill(x, n, 14);
	assert_int_equal(spotckpt_restore(e, SPOTCKPT_NEWEST, &step), 0);
	assert_int_equal(step, 2);
	assert_memory_equal(x, want, n);
	assert_int_equal(spotckpt_close(e), 0);
	free(x);
	free(want);
	free(back);
	ct_rmtree(dir);
	free(dir);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void test_save_final(void **st)
{
	char *dir = ct_tmpdir();
	static float x[N];
	struct spotckpt *e = open_bp(dir, SPOTCKPT_BP_COALESCE, 3 * 8192, x);
	struct spotckpt_stats s;
	int32_t met = -1;

	(void)st;
	hold();
	x[N - 1] = 1;
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	wait_writer_held();
	x[N - 1] = 2;
	assert_int_equal(spotckpt_save(e, 2, NULL, 0, NULL), 0); /* staged */
	x[N - 1] = 3;
	release(); /* the writer resumes with step 1, sees the cancel */
	assert_int_equal(spotckpt_save_final(e, 3, "{\"final\":true}",
					     mono_ns() + 60 * 1000000000ll, &met), 0);
	assert_int_equal(met, 1);
	assert_int_equal(spotckpt_last_saved_step(e), 3);
	assert_true(step_value(dir, 3) == 3);
	/* the staged step 2 was dropped in favour of the final one */
	assert_false(ct_exists("%s/step-00000002", dir));
	assert_int_equal(spotckpt_stats(e, &s), 0);
	assert_true(s.saves_coalesced >= 1);
	/* a deadline already past is reported as missed, data still saved */
	x[N - 1] = 4;
	assert_int_equal(spotckpt_save_final(e, 4, NULL, mono_ns() - 1, &met), 0);
	assert_int_equal(met, 0);
	assert_true(step_value(dir, 4) == 4);
	/* an abandoned final step (a gang's that cannot commit) writes
	 * nothing and leaves the committed ones; the next step saves */
	assert_int_equal(spotckpt_abandon_final(NULL, 5), -EINVAL);
	assert_int_equal(spotckpt_abandon_final(e, 5), 0);
	x[N - 1] = 5;
	assert_int_equal(spotckpt_save_final(e, 5, NULL, 0, &met), -ECANCELED);
	assert_int_equal(met, 0);
	assert_false(ct_exists("%s/step-00000005", dir));
	assert_false(ct_exists("%s/step-00000005.tmp", dir));
	assert_int_equal(spotckpt_last_saved_step(e), 4);
	assert_true(step_value(dir, 4) == 4);
	x[N - 1] = 6;
	assert_int_equal(spotckpt_save_final(e, 6, NULL, 0, &met), 0);
	assert_true(step_value(dir, 6) == 6);
	/* a background write given up while the writer holds it: not
	 * committed; the writer's cancel was for it alone */
	hold();
	x[N - 1] = 7;
	assert_int_equal(spotckpt_save(e, 7, NULL, 0, NULL), 0);
	wait_writer_held();
	assert_int_equal(spotckpt_abandon_final(e, 7), 0);
	release();
	assert_int_equal(spotckpt_wait(e), 0);
	assert_false(ct_exists("%s/step-00000007", dir));
	assert_false(ct_exists("%s/step-00000007.tmp", dir));
	assert_int_equal(spotckpt_last_saved_step(e), 6);
	x[N - 1] = 8;
	assert_int_equal(spotckpt_save(e, 8, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_true(step_value(dir, 8) == 8);
	assert_int_equal(spotckpt_verify(dir, SPOTCKPT_NEWEST, NULL), 0);
	assert_int_equal(spotckpt_close(e), 0);
	ct_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_skip),
		cmocka_unit_test(test_coalesce),
		cmocka_unit_test(test_block_and_budget),
		cmocka_unit_test(test_lazy),
		cmocka_unit_test(test_background),
		cmocka_unit_test(test_save_final),
		cmocka_unit_test(test_restore_through_staging),
	};

	ckpt__test_before_commit = hook;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
