/*
 * test_ckpt_write.c - the tier-2 writer (lib/ckpt/iowrite.c, commit.c):
 * many shard files through one queue, with io_uring and with the pwrite
 * fallback, each shard fsync'ed on the way or in the final round; the
 * write profile (spotckpt_write_profile) that `spotrun ckpt bench`
 * prints; a cancelled write leaves nothing behind.
 */
#include "ckpt_test.h"

#define NT 40

struct state {
	void *buf[NT];
	size_t n[NT];
};

static void state_init(struct state *s, uint64_t seed)
{
	for (int i = 0; i < NT; i++) {
		/* 4 KiB .. 600 KiB, odd sizes so shards end unaligned */
		s->n[i] = 4096 + (size_t)(i * 15331) % (600 << 10) + (size_t)i * 4;
		s->buf[i] = malloc(s->n[i]);
		assert_non_null(s->buf[i]);
		ct_fill(s->buf[i], s->n[i], seed * 1000 + (uint64_t)i);
	}
}

static void state_free(struct state *s)
{
	for (int i = 0; i < NT; i++)
		free(s->buf[i]);
}

static struct spotckpt *open_many(const char *dir, struct state *s,
				  uint64_t shard_bytes)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;

	spotckpt_opts_init(&o);
	o.dir = dir;
	o.keep = 2;
	o.copy_threads = 2;
	o.shard_bytes = shard_bytes;
	o.io_chunk_bytes = 64 << 10; /* many requests per shard */
	o.io_depth = 4;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	for (int i = 0; i < NT; i++) {
		int64_t shape[1] = { (int64_t)s->n[i] };
		char name[32];

		snprintf(name, sizeof name, "t%02d", i);
		assert_int_equal(spotckpt_register(e, name, s->buf[i], SPOTCKPT_U8,
						   1, shape, SPOTCKPT_DEV_CPU), 0);
	}
	return e;
}

/* Every tensor of checkpoint `step` in dir equals s's. */
static void check_step(const char *dir, int64_t step, const struct state *s)
{
	struct spotckpt_reader *r = NULL;

	assert_int_equal(spotckpt_verify(dir, step, NULL), 0);
	assert_int_equal(spotckpt_reader_open(dir, step, 0, 0, &r), 0);
	assert_int_equal(spotckpt_reader_ntensors(r), NT);
	for (int i = 0; i < NT; i++) {
		void *got = malloc(s->n[i]);
		char name[32];
		int64_t idx;

		snprintf(name, sizeof name, "t%02d", i);
		idx = spotckpt_reader_find(r, name);
		assert_true(idx >= 0);
		assert_int_equal(spotckpt_reader_read(r, idx, got, s->n[i]), 0);
		assert_memory_equal(got, s->buf[i], s->n[i]);
		free(got);
	}
	spotckpt_reader_close(r);
}

static size_t count_shards(const char *dir, int64_t step)
{
	char p[4200];
	DIR *d;
	struct dirent *de;
	size_t n = 0;

	snprintf(p, sizeof p, "%s/step-%08lld", dir, (long long)step);
	d = opendir(p);
	assert_non_null(d);
	for (de = readdir(d); de; de = readdir(d))
		n += !strncmp(de->d_name, "shard-", 6);
	closedir(d);
	return n;
}

static void many_shards(int uring)
{
	char *dir = ct_tmpdir();
	struct state s;
	struct spotckpt *e;
	struct spotckpt_write_profile p;
	size_t ns;

	if (!uring)
		setenv("SPOTCKPT_NO_URING", "1", 1);
	state_init(&s, 1);
	e = open_many(dir, &s, 700 << 10);
	for (int64_t step = 1; step <= 3; step++) {
		ct_fill(s.buf[step], s.n[step], 77 + (uint64_t)step);
		assert_int_equal(spotckpt_save(e, step, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
		check_step(dir, step, &s);
	}
	ns = count_shards(dir, 3);
	assert_true(ns > 10); /* several fsync'ed on the way, 4 at the end */
	assert_int_equal(spotckpt_write_profile(e, &p), 0);
	/* every shard, the manifest, two directories */
	assert_true(p.fsyncs >= ns + 3);
	assert_true(p.writes >= ns);
	assert_int_equal(p.lanes, 1);
	assert_true(p.bytes > 0);
	assert_true(p.commit_ns > 0);
	assert_true(p.cpu_ns[SPOTCKPT_WP_HASH] > 0);
	for (int k = 0; k < SPOTCKPT_WP_COUNT; k++) {
		assert_non_null(spotckpt_wphase_name(k));
		assert_true(p.wall_ns[k] >= 0 && p.cpu_ns[k] >= 0);
	}
	assert_null(spotckpt_wphase_name(SPOTCKPT_WP_COUNT));
	assert_true(p.fixed_buffers == 0 || uring);
	assert_int_equal(spotckpt_write_profile(NULL, &p), -EINVAL);
	assert_int_equal(spotckpt_close(e), 0);
	unsetenv("SPOTCKPT_NO_URING");
	state_free(&s);
	ct_rmtree(dir);
	free(dir);
}

static void test_many_shards_uring(void **st)
{
	(void)st;
	many_shards(1);
}

static void test_many_shards_pwrite(void **st)
{
	(void)st;
	many_shards(0);
}

/* A save_final cancels a write in progress: whatever the point, the
 * committed steps stay whole and no scratch directory is left. */
static void test_final_cancels_cleanly(void **st)
{
	char *dir = ct_tmpdir();
	struct state s;
	struct spotckpt *e;
	struct spotckpt_entry ents[8];
	size_t n;

	(void)st;
	state_init(&s, 2);
	e = open_many(dir, &s, 300 << 10);
	for (int64_t step = 1; step <= 6; step++) {
		assert_int_equal(spotckpt_save(e, step, NULL, SPOTCKPT_SAVE_LAZY,
					       NULL), 0);
		if (step % 2 == 0)
			assert_int_equal(spotckpt_save_final(e, 100 + step, NULL, 0,
							     NULL), 0);
	}
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_close(e), 0);
	assert_int_equal(spotckpt_list(dir, ents, 8, &n), 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(ents[i].state, SPOTCKPT_ENTRY_COMMITTED);
		assert_int_equal(spotckpt_verify(dir, ents[i].step, NULL), 0);
	}
	check_step(dir, ents[0].step, &s);
	state_free(&s);
	ct_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_shards_uring),
		cmocka_unit_test(test_many_shards_pwrite),
		cmocka_unit_test(test_final_cancels_cleanly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
