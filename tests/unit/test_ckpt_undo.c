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
 * restore (spotckpt_reader_read_all_with), which the first save reuses,
 * and faulted in beforehand on a thread (spotckpt_prefault).
 * Every way of being all or nothing runs: verify first (the default:
 * nothing written until every tensor matched), placed behind the reads
 * (SPOTCKPT_RESTORE_BEHIND=1: each tensor swapped into its destination
 * once it matched, put back on failure, lib/ckpt/behind.c) and the
 * keep (SPOTCKPT_RESTORE_KEEP=1).  behind.c also alone: tensors at
 * unaligned offsets, placed or not when the restore fails; and end to
 * end, many tensors of odd sizes in one shard read as several jobs, so
 * that a job's widened reads cover its neighbours' edges.
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

/* p holds bytes [off, off + n) of what fill(.., seed) wrote. */
static int same_from(const uint8_t *p, size_t n, uint64_t off, uint8_t seed)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != (uint8_t)((off + i) * 131u + seed))
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

/* ---- behind.c alone ----------------------------------------------------- */
#define BH_T 6

/* Tensors at unaligned offsets of one shard whose image holds the new
 * bytes (seed 1): pushed, placed (or not), then finished ok or not. */
static void behind_round(int push, int idle, int ok)
{
	/* offsets in the file: an edge-only tensor, one inside one page,
	 * ones across several pages, an empty one, an aligned one */
	static const uint64_t off[BH_T] = { 4096, 4196, 5000, 20000, 20000, 65536 };
	static const uint64_t len[BH_T] = { 100, 804, 15000, 0, 45536, 3 * 4096 };
	struct ckpt_tensor t[BH_T];
	struct ckpt_shard sh = { .file_bytes = 65536 + 3 * 4096, .count = BH_T };
	struct ckpt_layout l = { .t = t, .nt = BH_T, .s = &sh, .ns = 1 };
	struct spotckpt_dest d[BH_T];
	const struct spotckpt_dest *map[BH_T];
	uint8_t *img = aligned_alloc(4096, 128 << 10), *dst[BH_T];
	struct ckpt_behind *b = NULL;

	assert_non_null(img);
	fill(img, 128 << 10, 1);
	for (int i = 0; i < BH_T; i++) {
		t[i] = (struct ckpt_tensor){ .offset = off[i], .nbytes = len[i] };
		dst[i] = malloc(len[i] + 1 + 3); /* odd addresses too */
		assert_non_null(dst[i]);
		d[i] = (struct spotckpt_dest){ .index = i, .ptr = dst[i] + (i & 3),
					       .len = len[i] };
		fill(d[i].ptr, len[i], (uint8_t)(40 + i));
		map[i] = &d[i];
	}
	assert_int_equal(ckpt__behind_start(&l, map, img, &b), 0);
	for (int i = 0; i < BH_T && push; i++)
		ckpt__behind_push(b, (uint32_t)i);
	if (idle)
		ckpt__behind_wait_idle(b);
	if (idle && push) {
		/* the interiors are in, their old bytes kept in the image */
		const uint8_t *p2 = d[2].ptr, *p4 = d[4].ptr;

		assert_int_equal(p2[8199 - 5000], (uint8_t)(8199 * 131u + 1));
		assert_int_equal(img[8199], (uint8_t)((8199 - 5000) * 131u + 42));
		assert_int_equal(p4[20487 - 20000], (uint8_t)(20487 * 131u + 1));
		assert_int_equal(img[20487], (uint8_t)((20487 - 20000) * 131u + 44));
		/* an edge waits for the finish */
		assert_int_equal(p2[7], (uint8_t)(7 * 131u + 42));
	}
	ckpt__behind_finish(b, ok, NULL);
	ckpt__behind_free(b);
	for (int i = 0; i < BH_T; i++) {
		if (ok ? !same_from(d[i].ptr, len[i], off[i], 1) :
			 !same(d[i].ptr, len[i], (uint8_t)(40 + i)))
			fail_msg("push %d idle %d ok %d: tensor %d wrong", push,
				 idle, ok, i);
		free(dst[i]);
	}
	free(img);
}

static void test_behind_alone(void **st)
{
	(void)st;
	for (int push = 0; push <= 1; push++)
		for (int idle = 0; idle <= 1; idle++)
			for (int ok = 0; ok <= 1; ok++)
				behind_round(push, idle, ok);
}

/* ---- end to end --------------------------------------------------------- */
#define E2E_T 4
#define E2E_N (5u << 20) /* bytes per tensor: more than a 4 MiB read chunk */
#define E2E_RUNS 8

struct e2e {
	char *dir;
	uint8_t *buf[E2E_T];
};

/* Register f's tensors with e as t0, t1, ... (one shard each). */
static void register_e2e(struct spotckpt *e, uint8_t *const *buf)
{
	int64_t sh[1] = { E2E_N };

	for (int i = 0; i < E2E_T; i++) {
		char name[16];

		snprintf(name, sizeof name, "t%d", i);
		assert_int_equal(spotckpt_register(e, name, buf[i], SPOTCKPT_U8,
						   1, sh, 0), 0);
	}
}

static int e2e_setup(void **st)
{
	struct e2e *f = calloc(1, sizeof *f);
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;

	assert_non_null(f);
	f->dir = ct_tmpdir();
	spotckpt_opts_init(&o);
	o.dir = f->dir;
	o.keep = 2;
	o.copy_threads = 2;
	o.shard_bytes = E2E_N; /* a shard per tensor: a read job each */
	assert_int_equal(spotckpt_open(&o, &e), 0);
	for (int i = 0; i < E2E_T; i++) {
		f->buf[i] = malloc(E2E_N);
		assert_non_null(f->buf[i]);
		fill(f->buf[i], E2E_N, (uint8_t)(10 + i));
	}
	register_e2e(e, f->buf);
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
	ct_flip_bit(p, -1); /* whole again, for the next way */
}

/* Placed behind the reads (SPOTCKPT_RESTORE_BEHIND=1, behind.c): every
 * tensor placed before the damage was found is put back, wherever the
 * other threads were stopped; then verify first, the default (nothing is
 * written: fewer runs). */
static void test_failed_read_puts_back_every_block(void **st)
{
	setenv("SPOTCKPT_RESTORE_BEHIND", "1", 1);
	failed_read_untouched(*st, check_size(E2E_RUNS, E2E_RUNS, 3));
	unsetenv("SPOTCKPT_RESTORE_BEHIND");
	failed_read_untouched(*st, check_size(3, 3, 1));
}

/* Many tensors of odd sizes in one shard, read as several jobs: a job's
 * reads, widened to the O_DIRECT alignment, cover the edges of the
 * tensors next to it, which another job may have placed already; what
 * is put back must still be the old bytes. */
#define ODD_T 20
static void test_failed_read_odd_tensors_put_back(void **st)
{
	char *dir = ct_tmpdir(), p[4400];
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	struct spotckpt_reader *r = NULL;
	struct spotckpt_dest d[ODD_T];
	uint8_t *buf[ODD_T];
	size_t n[ODD_T];

	(void)st;
	spotckpt_opts_init(&o);
	o.dir = dir;
	o.keep = 1;
	o.shard_bytes = 1ull << 30; /* one shard */
	assert_int_equal(spotckpt_open(&o, &e), 0);
	for (int i = 0; i < ODD_T; i++) {
		int64_t sh[1];
		char name[16];

		/* about 21 MiB in all: two jobs of up to 16 MiB */
		n[i] = (1u << 20) + 4096 * (size_t)i + 37 * (size_t)i + 1;
		sh[0] = (int64_t)n[i];
		buf[i] = malloc(n[i]);
		assert_non_null(buf[i]);
		fill(buf[i], n[i], (uint8_t)(10 + i));
		snprintf(name, sizeof name, "odd%d", i);
		assert_int_equal(spotckpt_register(e, name, buf[i], SPOTCKPT_U8,
						   1, sh, 0), 0);
		d[i] = (struct spotckpt_dest){ .index = i, .ptr = buf[i],
					       .len = n[i] };
	}
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_close(e), 0);
	/* a good restore fills them */
	for (int i = 0; i < ODD_T; i++)
		memset(buf[i], 0, n[i]);
	assert_int_equal(spotckpt_reader_open(dir, 1, 0, 0, &r), 0);
	assert_int_equal(spotckpt_reader_read_all(r, d, ODD_T), 0);
	spotckpt_reader_close(r);
	for (int i = 0; i < ODD_T; i++)
		assert_true(same(buf[i], n[i], (uint8_t)(10 + i)));
	/* the last byte of the shard (of the last tensor) damaged */
	snprintf(p, sizeof p, "%s/step-00000001/shard-00000.safetensors", dir);
	ct_flip_bit(p, -1);
	setenv("SPOTCKPT_RESTORE_BEHIND", "1", 1); /* placed behind the reads */
	for (int run = 0; run < check_size(E2E_RUNS, E2E_RUNS, 1); run++) {
		for (int i = 0; i < ODD_T; i++)
			fill(buf[i], n[i], (uint8_t)(100 + run + i));
		assert_int_equal(spotckpt_reader_open(dir, 1, 0, 0, &r), 0);
		assert_int_equal(spotckpt_reader_read_all(r, d, ODD_T),
				 -SPOTCKPT_ECHECKSUM);
		spotckpt_reader_close(r);
		for (int i = 0; i < ODD_T; i++) {
			if (!same(buf[i], n[i], (uint8_t)(100 + run + i)))
				fail_msg("run %d: tensor odd%d not put back", run, i);
		}
	}
	unsetenv("SPOTCKPT_RESTORE_BEHIND");
	for (int i = 0; i < ODD_T; i++)
		free(buf[i]);
	ct_rmtree(dir);
	free(dir);
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
	register_e2e(e, f->buf);
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

/* spotckpt_prefault: the staging of the coming restore mapped and faulted
 * in on a thread; the restore reads into that memory (no new one), and a
 * save, the engine's restore or close stop the thread wherever it is. */
static void test_prefault_gives_the_restore_its_staging(void **st)
{
	struct e2e *f = *st;
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	struct spotckpt_reader *r = NULL;
	struct spotckpt_dest d[E2E_T];
	struct spotckpt_stats s0, s1;
	int64_t got = -1;
	char *empty = ct_tmpdir();

	/* nothing to restore: says so, maps nothing */
	spotckpt_opts_init(&o);
	o.dir = empty;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_prefault(e, -1), -SPOTCKPT_ENOTFOUND);
	assert_int_equal(spotckpt_stats(e, &s0), 0);
	assert_int_equal(s0.staging_bytes, 0);
	assert_int_equal(spotckpt_close(e), 0);
	ct_rmtree(empty);
	free(empty);

	/* closed while it runs (or after): the thread is joined */
	o.dir = f->dir;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_prefault(e, -1), 0);
	assert_int_equal(spotckpt_close(e), 0);

	/* the restore through the engine: the prefaulted memory, filled */
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_prefault(e, 1), 0);
	assert_int_equal(spotckpt_stats(e, &s0), 0);
	assert_true(s0.staging_bytes >= (uint64_t)E2E_T * E2E_N);
	assert_int_equal(spotckpt_prefault(e, -1), 0); /* again: a no-op */
	for (int i = 0; i < E2E_T; i++) {
		memset(f->buf[i], 0, E2E_N);
		d[i] = (struct spotckpt_dest){ .index = i, .ptr = f->buf[i],
					       .len = E2E_N };
	}
	assert_int_equal(spotckpt_reader_open(f->dir, -1, -1, 0, &r), 0);
	assert_int_equal(spotckpt_reader_read_all_with(r, e, d, E2E_T), 0);
	spotckpt_reader_close(r);
	for (int i = 0; i < E2E_T; i++)
		assert_true(same(f->buf[i], E2E_N, (uint8_t)(10 + i)));
	assert_int_equal(spotckpt_stats(e, &s1), 0);
	assert_int_equal(s1.staging_bytes, s0.staging_bytes);
	assert_int_equal(spotckpt_close(e), 0);

	/* a save first (the thread stopped part-way, the rest faulted in),
	 * then the engine's own restore of what it saved */
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_prefault(e, -1), 0);
	for (int i = 0; i < E2E_T; i++)
		fill(f->buf[i], E2E_N, (uint8_t)(70 + i));
	register_e2e(e, f->buf);
	assert_int_equal(spotckpt_save(e, 2, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_stats(e, &s1), 0);
	assert_int_equal(s1.staging_bytes, s0.staging_bytes);
	for (int i = 0; i < E2E_T; i++)
		memset(f->buf[i], 0, E2E_N);
	assert_int_equal(spotckpt_restore(e, -1, &got), 0);
	assert_int_equal(got, 2);
	for (int i = 0; i < E2E_T; i++)
		assert_true(same(f->buf[i], E2E_N, (uint8_t)(70 + i)));
	assert_int_equal(spotckpt_close(e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_undo_alone),
		cmocka_unit_test(test_behind_alone),
		cmocka_unit_test(test_failed_read_odd_tensors_put_back),
		cmocka_unit_test_setup_teardown(test_failed_read_puts_back_every_block,
						e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(
			test_failed_read_keep_puts_back_every_block,
			e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(
			test_first_restore_reserves_the_engines_staging,
			e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(
			test_prefault_gives_the_restore_its_staging,
			e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
