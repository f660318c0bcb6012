/*
 * test_ckpt_write.c - the tier-2 writer (lib/ckpt/iowrite.c, commit.c):
 * many shard files through one queue, with io_uring and with the pwrite
 * fallback, each shard fsync'ed on the way or in the final round; the
 * write profile (spotckpt_write_profile) that `spotrun ckpt bench`
 * prints; a cancelled write leaves nothing behind; striping over several
 * directories: the shards are byte for byte those of an unstriped
 * checkpoint, reached through links in step-N/, and no stripe outlives
 * the steps that link to it.  (kill -9 over striped directories:
 * test_ckpt_crash.c.)
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

static struct spotckpt *open_striped(const char *dir, const char **dirs,
				     uint32_t ndirs, struct state *s,
				     uint64_t shard_bytes)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;

	spotckpt_opts_init(&o);
	o.dir = dir;
	o.dirs = dirs;
	o.ndirs = ndirs;
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

static struct spotckpt *open_many(const char *dir, struct state *s,
				  uint64_t shard_bytes)
{
	return open_striped(dir, NULL, 0, s, shard_bytes);
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

/* Entries of dir whose names start with prefix. */
static size_t count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	for (de = readdir(d); de; de = readdir(d))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static void *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	void *buf;
	long len;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return buf;
}

static char *sub(const char *dir, const char *name)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
	assert_int_equal(mkdir(p, 0755), 0);
	return p;
}

/* Three directories: the shards spread over all of them, step-N/ links
 * to the others, every shard file equal to the unstriped engine's, and
 * only the kept steps' stripes left. */
static void test_striped_like_unstriped(void **st)
{
	char *root = ct_tmpdir(), *plain = sub(root, "plain");
	char *d[3] = { sub(root, "a"), sub(root, "b"), sub(root, "c") };
	const char *dirs[3] = { d[0], d[1], d[2] };
	struct state s;
	struct spotckpt *e, *p;
	struct spotckpt_write_profile prof;
	size_t ns, links = 0;

	(void)st;
	state_init(&s, 3);
	e = open_striped(NULL, dirs, 3, &s, 2 << 20);
	p = open_many(plain, &s, 2 << 20);
	for (int64_t step = 1; step <= 4; step++) {
		ct_fill(s.buf[step], s.n[step], 500 + (uint64_t)step);
		assert_int_equal(spotckpt_save(e, step, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_save(p, step, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
		assert_int_equal(spotckpt_wait(p), 0);
		check_step(d[0], step, &s);
	}
	assert_int_equal(spotckpt_write_profile(e, &prof), 0);
	assert_int_equal(prof.lanes, 3);
	ns = count_shards(d[0], 4);
	assert_int_equal(ns, count_shards(plain, 4));
	assert_true(ns >= 3);
	for (size_t i = 0; i < ns; i++) {
		char a[4200], b[4200];
		struct stat lst;
		size_t na, nb;
		void *ba, *bb;

		snprintf(a, sizeof a, "%s/step-00000004/shard-%05zu.safetensors",
			 d[0], i);
		snprintf(b, sizeof b, "%s/step-00000004/shard-%05zu.safetensors",
			 plain, i);
		assert_int_equal(lstat(a, &lst), 0);
		links += S_ISLNK(lst.st_mode) != 0;
		ba = slurp(a, &na);
		bb = slurp(b, &nb);
		assert_int_equal(na, nb);
		assert_memory_equal(ba, bb, na); /* byte for byte */
		free(ba);
		free(bb);
	}
	assert_true(links >= 2 && links < ns); /* some in a, some elsewhere */
	/* keep 2: the stripes of steps 1 and 2 are gone */
	assert_int_equal(count_prefix(d[1], "stripe-00000001"), 0);
	assert_int_equal(count_prefix(d[2], "stripe-00000002"), 0);
	assert_int_equal(count_prefix(d[1], "stripe-") +
			 count_prefix(d[2], "stripe-"),
			 count_prefix(d[1], "stripe-00000004") +
			 count_prefix(d[2], "stripe-00000004") +
			 count_prefix(d[1], "stripe-00000003") +
			 count_prefix(d[2], "stripe-00000003"));
	/* the same step again: fresh stripes, the old ones retired with the
	 * exchanged step-4 */
	assert_int_equal(spotckpt_save(e, 4, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	check_step(d[0], 4, &s);
	assert_true(count_prefix(d[1], "stripe-00000004") +
		    count_prefix(d[2], "stripe-00000004") <= 2);
	assert_int_equal(spotckpt_close(e), 0);
	assert_int_equal(spotckpt_close(p), 0);
	/* a plain reader of the primary, and restore through it */
	{
		struct spotckpt_entry ents[4];
		size_t n;

		assert_int_equal(spotckpt_list(d[0], ents, 4, &n), 0);
		assert_int_equal(n, 2);
		assert_int_equal(ents[0].state, SPOTCKPT_ENTRY_COMMITTED);
	}
	state_free(&s);
	ct_rmtree(root);
	for (int k = 0; k < 3; k++)
		free(d[k]);
	free(plain);
	free(root);
}

/* A stripe no step links to (a writer killed before its rename) is
 * removed when an engine opens; a stripe a step links to is not, however
 * the directory is named; SPOTRUN_CKPT_DIRS stripes an engine on its
 * first entry and no other. */
static void test_stripe_gc_and_env(void **st)
{
	char *root = ct_tmpdir(), *a = sub(root, "a"), *b = sub(root, "b");
	char env[8400], orphan[4300], other[4400];
	struct state s;
	struct spotckpt *e;
	struct spotckpt_write_profile prof;
	FILE *f;

	(void)st;
	state_init(&s, 4);
	snprintf(env, sizeof env, "%s:%s", a, b);
	setenv("SPOTRUN_CKPT_DIRS", env, 1);
	e = open_many(a, &s, 1 << 20);
	assert_int_equal(spotckpt_save(e, 7, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_write_profile(e, &prof), 0);
	assert_int_equal(prof.lanes, 2);
	assert_int_equal(spotckpt_close(e), 0);
	assert_true(count_prefix(b, "stripe-00000007-") == 1);
	/* an orphan (and an unrelated file, left alone) */
	snprintf(orphan, sizeof orphan, "%s/stripe-00000008-0123456789abcdef", b);
	assert_int_equal(mkdir(orphan, 0755), 0);
	snprintf(other, sizeof other, "%s/shard-00001.safetensors", orphan);
	f = fopen(other, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(other, sizeof other, "%s/notes.txt", b);
	f = fopen(other, "w");
	assert_non_null(f);
	fclose(f);
	e = open_many(a, &s, 1 << 20);
	assert_false(ct_exists("%s", orphan));
	assert_true(ct_exists("%s", other));
	assert_true(count_prefix(b, "stripe-00000007-") == 1);
	check_step(a, 7, &s);
	assert_int_equal(spotckpt_close(e), 0);
	/* an engine on another directory is not striped by the list */
	{
		char *c = sub(root, "c");

		e = open_many(c, &s, 1 << 20);
		assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
		assert_int_equal(spotckpt_write_profile(e, &prof), 0);
		assert_int_equal(prof.lanes, 1);
		assert_int_equal(spotckpt_close(e), 0);
		free(c);
	}
	unsetenv("SPOTRUN_CKPT_DIRS");
	state_free(&s);
	ct_rmtree(root);
	free(a);
	free(b);
	free(root);
}

static void test_bad_dir_lists(void **st)
{
	char *root = ct_tmpdir(), *a = sub(root, "a"), *b = sub(root, "b");
	char alias[4200];
	const char *twice[2] = { a, a }, *notfirst[2] = { b, a };
	const char *aliased[2] = { a, alias }, *empty[2] = { a, "" };
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;

	(void)st;
	snprintf(alias, sizeof alias, "%s/b/../a", root);
	spotckpt_opts_init(&o);
	o.dir = a;
	o.ndirs = 2;
	o.dirs = twice;
	assert_int_equal(spotckpt_open(&o, &e), -EINVAL);
	assert_non_null(strstr(spotckpt_errmsg(), "same directory"));
	assert_null(e);
	o.dirs = aliased;
	assert_int_equal(spotckpt_open(&o, &e), -EINVAL);
	assert_non_null(strstr(spotckpt_errmsg(), "same directory"));
	o.dirs = notfirst;
	assert_int_equal(spotckpt_open(&o, &e), -EINVAL);
	assert_non_null(strstr(spotckpt_errmsg(), "dirs[0]"));
	o.dirs = empty;
	assert_int_equal(spotckpt_open(&o, &e), -EINVAL);
	assert_non_null(strstr(spotckpt_errmsg(), "dirs[1] is empty"));
	o.dirs = NULL;
	assert_int_equal(spotckpt_open(&o, &e), -EINVAL);
	ct_rmtree(root);
	free(a);
	free(b);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_shards_uring),
		cmocka_unit_test(test_many_shards_pwrite),
		cmocka_unit_test(test_final_cancels_cleanly),
		cmocka_unit_test(test_striped_like_unstriped),
		cmocka_unit_test(test_stripe_gc_and_env),
		cmocka_unit_test(test_bad_dir_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
