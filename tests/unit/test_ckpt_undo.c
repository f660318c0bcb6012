/*
 * test_ckpt_undo.c - a failed restore puts back exactly what it overwrote
 * (lib/ckpt/undo.c, the block-wise keep of host destinations).
 *
 * On its own: ranges kept in order, one kept twice, one out of order, a
 * scratch destination and an empty tensor; rollback restores each
 * tensor's kept prefix and nothing past it (bytes past it were never
 * written, and may be the caller's new ones in a test).
 *
 * End to end: tensors larger than a read chunk (so each reaches the sink
 * in several pieces and is kept block by block), in four shards read by
 * several threads; the last byte of one tensor is damaged, so every
 * other thread is stopped part-way through its tensor at a point that
 * varies from run to run.  Every destination must hold its old bytes
 * afterwards, run after run, and a good restore must still fill them.
 * The same through an engine's staging memory reserved by a job's first
 * restore (spotckpt_reader_read_all_with), which the first save reuses.
 * Both ways of being all or nothing run: verify first (nothing written
 * until every tensor matched, lib/ckpt/placeall.c) and the keep
 * (SPOTCKPT_RESTORE_KEEP=1).
 */
#include "ckpt_test.h"
#include "check_size.h"

#include "../../lib/ckpt/internal.h"

#define NT 3

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131u + seed);
}

static int same(const uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != (uint8_t)(i * 131u + seed))
			return 0;
	}
	return 1;
}

/* "Write" [off, off+n) of tensor t as a restore does: keep, then clobber. */
static void overwrite(struct ckpt_undo *u, uint32_t t, uint8_t *dst,
		      uint64_t off, uint64_t n)
{
	uint8_t *keep = ckpt__undo_keep_at(u, t, off, n);

	if (keep)
		memcpy(keep, dst + off, n);
	memset(dst + off, 0xEE, n);
}

static void test_undo_alone(void **st)
{
	enum { A = 300000, B = 70001, C = 0 };
	struct ckpt_tensor t[NT] = { { .nbytes = A }, { .nbytes = B },
				     { .nbytes = C } };
	struct ckpt_layout l = { .t = t, .nt = NT };
	uint8_t *a = malloc(A), *b = malloc(B), c = 0;
	struct spotckpt_dest d[NT] = {
		{ .index = 0, .ptr = a, .len = A },
		{ .index = 1, .ptr = b, .len = B, .flags = SPOTCKPT_DEST_SCRATCH },
		{ .index = 2, .ptr = &c, .len = 0 },
	};
	const struct spotckpt_dest *map[NT] = { &d[0], &d[1], &d[2] };
	struct ckpt_undo *u = NULL;

	(void)st;
	assert_non_null(a);
	assert_non_null(b);
	fill(a, A, 1);
	fill(b, B, 2);
	assert_int_equal(ckpt__undo_new(&l, map, NULL, 0, &u), 0);
	/* scratch and empty destinations are not kept */
	assert_null(ckpt__undo_keep_at(u, 1, 0, B));
	assert_null(ckpt__undo_keep_at(u, 2, 0, 0));
	/* in order, one range again (a no-op), then a gap: the gap's old
	 * bytes are kept too and the caller is told not to keep */
	overwrite(u, 0, a, 0, 65536);
	overwrite(u, 0, a, 65536, 1000);
	assert_null(ckpt__undo_keep_at(u, 0, 0, 65536));
	assert_null(ckpt__undo_keep_at(u, 0, 70000, 5000));
	memset(a + 70000, 0xEE, 5000);
	/* the bytes past the kept prefix are the caller's: rollback must
	 * leave them alone */
	memset(a + 75000, 0x55, A - 75000);
	ckpt__undo_rollback(u);
	assert_true(same(a, 75000, 1));
	for (size_t i = 75000; i < A; i++)
		assert_int_equal(a[i], 0x55);
	/* a second rollback finds nothing kept */
	memset(a, 0x33, 10);
	ckpt__undo_rollback(u);
	assert_int_equal(a[0], 0x33);
	ckpt__undo_free(u);

	/* the borrowed buffer serves when it is large enough */
	{
		uint8_t *borrow = malloc(A + 64);

		fill(a, A, 3);
		assert_int_equal(ckpt__undo_new(&l, map, borrow, A + 64, &u), 0);
		assert_true(ckpt__undo_borrowed(u));
		for (uint64_t off = 0; off < A; off += 4096)
			overwrite(u, 0, a, off, off + 4096 <= A ? 4096 : A - off);
		ckpt__undo_rollback(u);
		assert_true(same(a, A, 3));
		ckpt__undo_free(u);
		free(borrow);
	}
	free(a);
	free(b);
}

/* ---- end to end --------------------------------------------------------- */
#define E2E_T 4
#define E2E_N (5u << 20) /* bytes per tensor: more than a 4 MiB read chunk */
#define E2E_RUNS 8

struct e2e {
	char *dir;
	uint8_t *buf[E2E_T];
};

static int e2e_setup(void **st)
{
	struct e2e *f = calloc(1, sizeof *f);
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	int64_t sh[1] = { E2E_N };

	assert_non_null(f);
	f->dir = ct_tmpdir();
	spotckpt_opts_init(&o);
	o.dir = f->dir;
	o.keep = 2;
	o.copy_threads = 2;
	o.shard_bytes = E2E_N; /* a shard per tensor: a read job each */
	assert_int_equal(spotckpt_open(&o, &e), 0);
	for (int i = 0; i < E2E_T; i++) {
		char name[16];

		f->buf[i] = malloc(E2E_N);
		assert_non_null(f->buf[i]);
		fill(f->buf[i], E2E_N, (uint8_t)(10 + i));
		snprintf(name, sizeof name, "t%d", i);
		assert_int_equal(spotckpt_register(e, name, f->buf[i], SPOTCKPT_U8,
						   1, sh, 0), 0);
	}
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_close(e), 0);
	*st = f;
	return 0;
}

static int e2e_teardown(void **st)
{
	struct e2e *f = *st;

	ct_rmtree(f->dir);
	free(f->dir);
	for (int i = 0; i < E2E_T; i++)
		free(f->buf[i]);
	free(f);
	return 0;
}

static void read_into(const char *dir, uint8_t **buf, int expect,
		      int64_t step)
{
	struct spotckpt_reader *r = NULL;
	struct spotckpt_dest d[E2E_T];

	for (int i = 0; i < E2E_T; i++)
		d[i] = (struct spotckpt_dest){ .index = i, .ptr = buf[i],
					       .len = E2E_N };
	assert_int_equal(spotckpt_reader_open(dir, step, 0, 0, &r), 0);
	assert_int_equal(spotckpt_reader_read_all(r, d, E2E_T), expect);
	spotckpt_reader_close(r);
}

static void failed_read_untouched(struct e2e *f, int runs)
{
	char p[4400];
	int shard;

	/* a good restore first: fills every destination */
	for (int i = 0; i < E2E_T; i++)
		memset(f->buf[i], 0, E2E_N);
	read_into(f->dir, f->buf, 0, 1);
	for (int i = 0; i < E2E_T; i++)
		assert_true(same(f->buf[i], E2E_N, (uint8_t)(10 + i)));

	/* damage the last byte of the tensor of one shard (which one is
	 * read last varies: jobs are claimed largest first, then in order) */
	shard = E2E_T - 1;
	snprintf(p, sizeof p, "%s/step-00000001/shard-%05d.safetensors", f->dir,
		 shard);
	ct_flip_bit(p, -1);
	for (int run = 0; run < runs; run++) {
		for (int i = 0; i < E2E_T; i++)
			fill(f->buf[i], E2E_N, (uint8_t)(100 + run + i));
		read_into(f->dir, f->buf, -SPOTCKPT_ECHECKSUM, 1);
		for (int i = 0; i < E2E_T; i++) {
			if (!same(f->buf[i], E2E_N, (uint8_t)(100 + run + i)))
				fail_msg("run %d: tensor t%d not put back", run, i);
		}
	}
}

/* Verify first (placeall.c, the default): nothing is written, wherever
 * the other threads were stopped (fewer runs: no point it stops at can
 * leave anything to put back). */
static void test_failed_read_puts_back_every_block(void **st)
{
	failed_read_untouched(*st, 3);
}

/* The keep (SPOTCKPT_RESTORE_KEEP=1): every block written is put back. */
static void test_failed_read_keep_puts_back_every_block(void **st)
{
	setenv("SPOTCKPT_RESTORE_KEEP", "1", 1);
	/* the same stops in fewer runs under TSan (10x the CPU) */
	failed_read_untouched(*st, check_size(E2E_RUNS, E2E_RUNS, 3));
	unsetenv("SPOTCKPT_RESTORE_KEEP");
}

/* A job's first restore (spotckpt_reader_read_all_with, an engine with no
 * staging memory yet): the engine gets its staging memory, sized to the
 * checkpoint; the old bytes kept in it are put back on failure as with
 * memory of the reader's own; the engine's first save then uses that
 * memory as it is. */
static void test_first_restore_reserves_the_engines_staging(void **st)
{
	struct e2e *f = *st;
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	struct spotckpt_reader *r = NULL;
	struct spotckpt_dest d[E2E_T];
	struct spotckpt_stats s0, s1;
	int64_t sh[1] = { E2E_N };
	char *dir2 = ct_tmpdir(), p[4400];

	spotckpt_opts_init(&o);
	o.dir = dir2;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	for (int i = 0; i < E2E_T; i++) {
		memset(f->buf[i], 0, E2E_N);
		d[i] = (struct spotckpt_dest){ .index = i, .ptr = f->buf[i],
					       .len = E2E_N };
	}
	assert_int_equal(spotckpt_reader_open(f->dir, 1, 0, 0, &r), 0);
	assert_int_equal(spotckpt_reader_read_all_with(r, e, d, E2E_T), 0);
	spotckpt_reader_close(r);
	for (int i = 0; i < E2E_T; i++)
		assert_true(same(f->buf[i], E2E_N, (uint8_t)(10 + i)));
	assert_int_equal(spotckpt_stats(e, &s0), 0);
	assert_true(s0.staging_bytes >= (uint64_t)E2E_T * E2E_N);

	/* a failed one puts back every block, from the engine's memory */
	snprintf(p, sizeof p, "%s/step-00000001/shard-%05d.safetensors", f->dir,
		 E2E_T - 1);
	ct_flip_bit(p, -1);
	for (int run = 0; run < 3; run++) {
		for (int i = 0; i < E2E_T; i++)
			fill(f->buf[i], E2E_N, (uint8_t)(50 + run + i));
		assert_int_equal(spotckpt_reader_open(f->dir, 1, 0, 0, &r), 0);
		assert_int_equal(spotckpt_reader_read_all_with(r, e, d, E2E_T),
				 -SPOTCKPT_ECHECKSUM);
		spotckpt_reader_close(r);
		for (int i = 0; i < E2E_T; i++) {
			if (!same(f->buf[i], E2E_N, (uint8_t)(50 + run + i)))
				fail_msg("run %d: tensor t%d not put back", run, i);
		}
	}

	/* the first save of the same state: the same memory, no new one */
	for (int i = 0; i < E2E_T; i++) {
		char name[16];

		snprintf(name, sizeof name, "t%d", i);
		assert_int_equal(spotckpt_register(e, name, f->buf[i], SPOTCKPT_U8,
						   1, sh, 0), 0);
	}
	assert_int_equal(spotckpt_save(e, 7, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_stats(e, &s1), 0);
	assert_int_equal(s1.staging_bytes, s0.staging_bytes);
	assert_int_equal(spotckpt_close(e), 0);
	for (int i = 0; i < E2E_T; i++)
		memset(f->buf[i], 0, E2E_N);
	read_into(dir2, f->buf, 0, 7);
	for (int i = 0; i < E2E_T; i++)
		assert_true(same(f->buf[i], E2E_N, (uint8_t)(52 + i)));
	ct_rmtree(dir2);
	free(dir2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_undo_alone),
		cmocka_unit_test_setup_teardown(test_failed_read_puts_back_every_block,
						e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(
			test_failed_read_keep_puts_back_every_block,
			e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(
			test_first_restore_reserves_the_engines_staging,
			e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
