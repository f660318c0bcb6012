/*
 * test_ckpt_cuda.c - the CUDA path without a GPU.
 *
 * Absent runtime: a CUDA tensor is refused with -SPOTCKPT_EUNSUPPORTED and
 * a message saying what failed to load, while CPU tensors keep working.
 * A library without the CUDA symbols is refused the same way.  A fake
 * runtime (host memcpy behind the cudart entry points) then drives the
 * real control flow: pinned staging, event on the legacy stream, async
 * copies on the engine's stream, synchronisation, and restore into a
 * "device" destination.
 */
#include "ckpt_test.h"

#include "ckpt/internal.h"

static struct {
	int host_alloc, host_free, stream_create, stream_destroy, async,
	    h2d, d2h, sync, ev_create, ev_destroy, ev_record, wait_event;
} g_calls;
static int g_fail_async;

static int f_malloc_host(void **p, size_t n, unsigned fl)
{
	(void)fl;
	g_calls.host_alloc++;
	return posix_memalign(p, 4096, n) ? 2 : 0;
}
static int f_free_host(void *p) { g_calls.host_free++; free(p); return 0; }
static int f_stream_create(void **s, unsigned fl)
{
	assert_int_equal(fl, 1); /* cudaStreamNonBlocking: a dedicated stream */
	g_calls.stream_create++;
	*s = (void *)0x5;
	return 0;
}
static int f_stream_destroy(void *s) { (void)s; g_calls.stream_destroy++; return 0; }
static int f_memcpy_async(void *d, const void *s, size_t n, int kind, void *st)
{
	assert_int_equal(kind, CKPT_CUDA_D2H);
	assert_ptr_equal(st, (void *)0x5);
	if (g_fail_async)
		return 700;
	memcpy(d, s, n);
	g_calls.async++;
	return 0;
}
static int f_memcpy(void *d, const void *s, size_t n, int kind)
{
	/* H2D: a restore's data; D2H: a restore keeping the old contents */
	assert_true(kind == CKPT_CUDA_H2D || kind == CKPT_CUDA_D2H);
	memcpy(d, s, n);
	if (kind == CKPT_CUDA_H2D)
		g_calls.h2d++;
	else
		g_calls.d2h++;
	return 0;
}
static int f_sync(void *s) { (void)s; g_calls.sync++; return 0; }
static int f_ev_create(void **e, unsigned fl) { (void)fl; *e = (void *)0x9; g_calls.ev_create++; return 0; }
static int f_ev_destroy(void *e) { (void)e; g_calls.ev_destroy++; return 0; }
static int f_ev_record(void *e, void *s)
{
	assert_ptr_equal(e, (void *)0x9);
	assert_null(s); /* recorded on the legacy default stream */
	g_calls.ev_record++;
	return 0;
}
static int f_wait_event(void *s, void *e, unsigned fl)
{
	(void)s; (void)e; (void)fl;
	g_calls.wait_event++;
	return 0;
}
static const char *f_errstr(int e) { return e == 700 ? "illegal address" : "error"; }

static const struct ckpt_cuda_ops g_fake = {
	f_malloc_host, f_free_host, f_stream_create, f_stream_destroy,
	f_memcpy_async, f_memcpy, f_sync, f_ev_create, f_ev_destroy,
	f_ev_record, f_wait_event, f_errstr,
};

static void test_absent(void **st)
{
	char *dir = ct_tmpdir();
	struct spotckpt *e;
	float x[4] = { 1, 2, 3, 4 };
	int64_t sh[1] = { 4 };

	(void)st;
	setenv("SPOTCKPT_CUDART", "/nonexistent/libcudart.so", 1);
	ckpt__cuda_reload();
	assert_int_equal(spotckpt_cuda_available(), 0);
	e = ct_open(dir, 2);
	assert_int_equal(spotckpt_register(e, "gpu", x, SPOTCKPT_F32, 1, sh,
					   SPOTCKPT_DEV_CUDA), -SPOTCKPT_EUNSUPPORTED);
	assert_non_null(strstr(spotckpt_errmsg(), "CUDA"));
	assert_non_null(strstr(spotckpt_errmsg(), "/nonexistent"));
	/* CPU tensors are unaffected */
	assert_int_equal(spotckpt_register(e, "cpu", x, SPOTCKPT_F32, 1, sh, 0), 0);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	{
		struct spotckpt_reader *r = NULL;
		struct spotckpt_dest d = { .index = 0, .ptr = x, .len = 16,
					   .device = SPOTCKPT_DEV_CUDA };

		assert_int_equal(spotckpt_reader_open(dir, 1, 0, 0, &r), 0);
		assert_int_equal(spotckpt_reader_read_all(r, &d, 1),
				 -SPOTCKPT_EUNSUPPORTED);
		spotckpt_reader_close(r);
	}
	assert_int_equal(spotckpt_close(e), 0);

	/* a library that loads but is not cudart */
	setenv("SPOTCKPT_CUDART", "libm.so.6", 1);
	ckpt__cuda_reload();
	assert_int_equal(spotckpt_cuda_available(), 0);
	assert_non_null(strstr(ckpt__cuda_error(), "cudaHostAlloc"));
	unsetenv("SPOTCKPT_CUDART");
	ckpt__cuda_reload();
	ct_rmtree(dir);
	free(dir);
}

static void test_fake_runtime(void **st)
{
	char *dir = ct_tmpdir();
	struct spotckpt *e;
	struct spotckpt_stats s;
	static float dev[1000], host[500], back[1000];
	int64_t sd[1] = { 1000 }, shh[1] = { 500 };
	int64_t step = -1;

	(void)st;
	memset(&g_calls, 0, sizeof g_calls);
	ckpt__cuda_set_ops(&g_fake);
	assert_int_equal(spotckpt_cuda_available(), 1);
	for (int i = 0; i < 1000; i++)
		dev[i] = (float)i * 0.5f;
	for (int i = 0; i < 500; i++)
		host[i] = (float)-i;
	e = ct_open(dir, 2);
	assert_int_equal(spotckpt_register(e, "dev", dev, SPOTCKPT_F32, 1, sd,
					   SPOTCKPT_DEV_CUDA), 0);
	assert_int_equal(spotckpt_register(e, "host", host, SPOTCKPT_F32, 1, shh, 0), 0);
	assert_int_equal(g_calls.stream_create, 1);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(g_calls.host_alloc, 1); /* pinned staging */
	assert_int_equal(g_calls.ev_record, 1);
	assert_int_equal(g_calls.wait_event, 1);
	assert_int_equal(g_calls.async, 1);
	assert_true(g_calls.sync >= 1);
	assert_int_equal(spotckpt_wait(e), 0); /* one slot: no overlap */
	assert_int_equal(spotckpt_save(e, 2, NULL, SPOTCKPT_SAVE_LAZY, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(g_calls.async, 2);
	assert_int_equal(g_calls.host_alloc, 1); /* allocated once */
	assert_int_equal(spotckpt_stats(e, &s), 0);
	assert_int_equal(s.cuda_loaded, 1);
	assert_int_equal(s.saves_committed, 2);

	/* restore: the device tensor goes through cudaMemcpy H2D */
	memset(dev, 0, sizeof dev);
	memset(host, 0, sizeof host);
	assert_int_equal(spotckpt_restore(e, SPOTCKPT_NEWEST, &step), 0);
	assert_int_equal(step, 2);
	assert_true(g_calls.h2d >= 1);
	for (int i = 0; i < 1000; i++)
		back[i] = (float)i * 0.5f;
	assert_memory_equal(dev, back, sizeof dev);
	assert_true(host[499] == -499.0f);
	/* its old contents were kept aside first (device to host) */
	assert_true(g_calls.d2h >= 1);

	/* a failing async copy fails the save cleanly */
	g_fail_async = 1;
	assert_int_equal(spotckpt_save(e, 3, NULL, 0, NULL), -SPOTCKPT_EUNSUPPORTED);
	assert_non_null(strstr(spotckpt_errmsg(), "illegal address"));
	g_fail_async = 0;
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_save(e, 4, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_close(e), 0);
	assert_int_equal(g_calls.host_free, 1);
	assert_int_equal(g_calls.stream_destroy, 1);
	assert_int_equal(g_calls.ev_destroy, 1);
	assert_int_equal(spotckpt_verify(dir, 4, NULL), 0);
	assert_false(ct_exists("%s/step-00000003", dir));
	ckpt__cuda_set_ops(NULL);
	ct_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_fake_runtime),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
