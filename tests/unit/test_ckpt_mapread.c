/*
 * test_ckpt_mapread.c - a verified restore of a checkpoint on a tmpfs
 * reads it through its files mapped (lib/ckpt/mapread.c).
 *
 * A checkpoint of tensors of odd sizes in several shards, written under
 * /dev/shm (skipped where that is not a tmpfs): a restore into the
 * caller's buffers is bit for bit and says mode MAPPED; a subset of the
 * tensors too; one byte of one tensor flipped: -SPOTCKPT_ECHECKSUM and
 * no destination written (the damage in each shard in turn); the engine's
 * restore then falls back to the previous step, bit for bit.  The same
 * checkpoint on the disk's $TMPDIR is read the usual way (VERIFY_FIRST).
 */
#include "ckpt_test.h"

#include "../../lib/ckpt/internal.h"

#define NT 5
#define SHM "/dev/shm"

static size_t tsize(int i)
{
	return (256u << 10) * (size_t)(i + 1) + 4096u * (size_t)i + 13u * (size_t)i + 1;
}

struct mr {
	char *dir;
	uint8_t *buf[NT];
	struct spotckpt_dest d[NT];
};

static void fill_all(struct mr *f, uint64_t seed)
{
	for (int i = 0; i < NT; i++)
		ct_fill(f->buf[i], tsize(i), seed * 100 + (uint64_t)i);
}

static int same_all(struct mr *f, uint64_t seed)
{
	for (int i = 0; i < NT; i++) {
		uint8_t *want = malloc(tsize(i));
		int ok;

		assert_non_null(want);
		ct_fill(want, tsize(i), seed * 100 + (uint64_t)i);
		ok = memcmp(want, f->buf[i], tsize(i)) == 0;
		free(want);
		if (!ok)
			return 0;
	}
	return 1;
}

/* Steps 1 and 2 of the tensors in f->dir (seed = step). */
static struct spotckpt *save_two(struct mr *f)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;

	spotckpt_opts_init(&o);
	o.dir = f->dir;
	o.keep = 2;
	o.shard_bytes = 1u << 20; /* several shards */
	assert_int_equal(spotckpt_open(&o, &e), 0);
	for (int i = 0; i < NT; i++) {
		int64_t sh[1] = { (int64_t)tsize(i) };
		char name[16];

		snprintf(name, sizeof name, "t%d", i);
		assert_int_equal(spotckpt_register(e, name, f->buf[i],
						   SPOTCKPT_U8, 1, sh, 0), 0);
		f->d[i] = (struct spotckpt_dest){ .index = i, .ptr = f->buf[i],
						  .len = tsize(i) };
	}
	for (int64_t s = 1; s <= 2; s++) {
		fill_all(f, (uint64_t)s);
		assert_int_equal(spotckpt_save(e, s, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
	}
	return e;
}

static int read_step(struct mr *f, int64_t step, size_t n)
{
	struct spotckpt_reader *r = NULL;
	int rc;

	assert_int_equal(spotckpt_reader_open(f->dir, step, 0, 0, &r), 0);
	rc = spotckpt_reader_read_all(r, f->d, n);
	spotckpt_reader_close(r);
	return rc;
}

static int last_mode(void)
{
	struct spotckpt_restore_profile p;

	spotckpt_restore_profile(&p);
	return p.mode;
}

static void test_tmpfs_checkpoint_reads_mapped(void **st)
{
	struct mr f = { 0 };
	struct spotckpt *e;
	struct spotckpt_reader *r = NULL;
	char p[4400];
	int64_t got = -1;
	int nshards;

	(void)st;
	if (!ckpt__on_tmpfs(SHM))
		skip();
	f.dir = strdup(SHM "/ckpt-mapread-XXXXXX");
	assert_non_null(f.dir);
	assert_non_null(mkdtemp(f.dir));
	for (int i = 0; i < NT; i++) {
		f.buf[i] = malloc(tsize(i));
		assert_non_null(f.buf[i]);
	}
	e = save_two(&f);
	assert_int_equal(spotckpt_reader_open(f.dir, 2, 0, 0, &r), 0);
	nshards = 0;
	for (int i = 0; i < NT; i++) {
		struct spotckpt_tensor_info ti;

		assert_int_equal(spotckpt_reader_tensor(r, i, &ti), 0);
		nshards = (int)ti.shard + 1 > nshards ? (int)ti.shard + 1
						      : nshards;
	}
	spotckpt_reader_close(r);
	assert_true(nshards >= 2);

	/* the whole step, then the first three tensors alone */
	fill_all(&f, 77);
	assert_int_equal(read_step(&f, 2, NT), 0);
	assert_int_equal(last_mode(), SPOTCKPT_RESTORE_MAPPED);
	assert_true(same_all(&f, 2));
	fill_all(&f, 77);
	assert_int_equal(read_step(&f, 1, 3), 0);
	for (int i = 0; i < NT; i++) {
		uint8_t *want = malloc(tsize(i));

		assert_non_null(want);
		ct_fill(want, tsize(i), (i < 3 ? 1 : 77) * 100 + (uint64_t)i);
		assert_memory_equal(want, f.buf[i], tsize(i));
		free(want);
	}

	/* one byte flipped in each shard in turn: nothing written */
	for (int s = 0; s < nshards; s++) {
		snprintf(p, sizeof p, "%s/step-00000002/shard-%05d.safetensors",
			 f.dir, s);
		ct_flip_bit(p, -1); /* its last tensor's last byte */
		fill_all(&f, 50 + (uint64_t)s);
		assert_int_equal(read_step(&f, 2, NT), -SPOTCKPT_ECHECKSUM);
		assert_int_equal(last_mode(), SPOTCKPT_RESTORE_MAPPED);
		assert_true(same_all(&f, 50 + (uint64_t)s));
		ct_flip_bit(p, -1);
	}
	/* damaged step 2: the engine's restore takes step 1 */
	snprintf(p, sizeof p, "%s/step-00000002/shard-%05d.safetensors", f.dir,
		 nshards - 1);
	ct_flip_bit(p, -1);
	fill_all(&f, 60);
	assert_int_equal(spotckpt_restore(e, SPOTCKPT_NEWEST, &got), 0);
	assert_int_equal(got, 1);
	assert_true(same_all(&f, 1));
	assert_int_equal(spotckpt_close(e), 0);
	ct_rmtree(f.dir);
	free(f.dir);

	/* on the disk: read, not mapped */
	f.dir = ct_tmpdir();
	e = save_two(&f);
	assert_int_equal(spotckpt_close(e), 0);
	fill_all(&f, 77);
	assert_int_equal(read_step(&f, 2, NT), 0);
	assert_true(same_all(&f, 2));
	if (!ckpt__on_tmpfs(f.dir))
		assert_int_equal(last_mode(), SPOTCKPT_RESTORE_VERIFY_FIRST);
	ct_rmtree(f.dir);
	free(f.dir);
	for (int i = 0; i < NT; i++)
		free(f.buf[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tmpfs_checkpoint_reads_mapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
