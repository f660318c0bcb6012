/*
 * test_ckpt_format.c - a save/restore round trip of every dtype, shapes
 * from scalars to empty tensors, several shards, the reader API, the
 * callback forms, listing, and the shard files' safetensors framing.
 */
#include "ckpt_test.h"

#include <jansson.h>

#define NT 15

struct state {
	const char *name[NT];
	int32_t dtype[NT], ndim[NT];
	int64_t shape[NT][3];
	size_t nbytes[NT];
	uint8_t *buf[NT];
};

static void state_init(struct state *s, uint64_t seed)
{
	static const struct { const char *n; int32_t dt, nd; int64_t sh[3]; } def[NT] = {
		{ "model.w", SPOTCKPT_F32, 2, { 64, 33 } },
		{ "model.b", SPOTCKPT_F16, 1, { 33 } },
		{ "model.bf", SPOTCKPT_BF16, 2, { 7, 5 } },
		{ "opt/state/0/exp_avg", SPOTCKPT_F64, 3, { 2, 3, 100 } },
		{ "opt/state/0/step", SPOTCKPT_I64, 0, { 0 } },
		{ "i32", SPOTCKPT_I32, 1, { 1000 } },
		{ "i16", SPOTCKPT_I16, 1, { 3 } },
		{ "i8", SPOTCKPT_I8, 1, { 5 } },
		{ "u8", SPOTCKPT_U8, 2, { 300, 300 } },
		{ "mask", SPOTCKPT_BOOL, 1, { 17 } },
		{ "empty", SPOTCKPT_F32, 2, { 0, 4 } },
		{ "rng.state", SPOTCKPT_U8, 1, { 5056 } },
		{ "u16", SPOTCKPT_U16, 1, { 9 } },
		{ "np.rng.key", SPOTCKPT_U32, 1, { 624 } },
		{ "u64", SPOTCKPT_U64, 2, { 3, 2 } },
	};

	for (int i = 0; i < NT; i++) {
		s->name[i] = def[i].n;
		s->dtype[i] = def[i].dt;
		s->ndim[i] = def[i].nd;
		memcpy(s->shape[i], def[i].sh, sizeof def[i].sh);
		s->nbytes[i] = spotckpt_dtype_size(def[i].dt);
		for (int d = 0; d < def[i].nd; d++)
			s->nbytes[i] *= (size_t)def[i].sh[d];
		s->buf[i] = malloc(s->nbytes[i] + 1);
		ct_fill(s->buf[i], s->nbytes[i], seed * 100 + (uint64_t)i);
	}
}

static void state_free(struct state *s)
{
	for (int i = 0; i < NT; i++)
		free(s->buf[i]);
}

static void reg_all(struct spotckpt *e, struct state *s)
{
	for (int i = 0; i < NT; i++)
		assert_int_equal(spotckpt_register(e, s->name[i], s->buf[i],
						   s->dtype[i], s->ndim[i],
						   s->shape[i], SPOTCKPT_DEV_CPU), 0);
}

static void round_trip_opts(uint64_t shard_bytes, int direct_io)
{
	char *dir = ct_tmpdir();
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	struct spotckpt_reader *r = NULL;
	struct state s;
	int32_t oc = -1;

	state_init(&s, 7);
	spotckpt_opts_init(&o);
	o.dir = dir;
	o.shard_bytes = shard_bytes;
	o.direct_io = direct_io;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	reg_all(e, &s);
	assert_int_equal(spotckpt_save(e, 42, "{\"lr\":0.001,\"epoch\":3}", 0, &oc), 0);
	assert_int_equal(oc, SPOTCKPT_STAGED);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_last_saved_step(e), 42);
	{
		struct spotckpt_stats stt;

		assert_int_equal(spotckpt_stats(e, &stt), 0);
		assert_int_equal(stt.uring_used, getenv("SPOTCKPT_NO_URING") == NULL);
		if (direct_io == SPOTCKPT_DIO_OFF)
			assert_int_equal(stt.direct_io_used, 0);
		assert_int_equal(stt.saves_committed, 1);
		assert_true(stt.last_write_bytes > stt.state_bytes);
	}

	assert_int_equal(spotckpt_reader_open(dir, SPOTCKPT_NEWEST, SPOTCKPT_NEWEST,
					      SPOTCKPT_OPEN_VERIFY, &r), 0);
	assert_int_equal(spotckpt_reader_step(r), 42);
	assert_string_equal(spotckpt_reader_meta(r), "{\"lr\":0.001,\"epoch\":3}");
	assert_int_equal(spotckpt_reader_ntensors(r), NT);
	for (int i = 0; i < NT; i++) {
		struct spotckpt_tensor_info ti;
		int64_t idx = spotckpt_reader_find(r, s.name[i]);
		uint8_t *back = malloc(s.nbytes[i] + 1);

		assert_true(idx >= 0);
		assert_int_equal(spotckpt_reader_tensor(r, idx, &ti), 0);
		assert_string_equal(ti.name, s.name[i]);
		assert_int_equal(ti.dtype, s.dtype[i]);
		assert_int_equal(ti.ndim, s.ndim[i]);
		assert_int_equal(ti.nbytes, s.nbytes[i]);
		for (int d = 0; d < s.ndim[i]; d++)
			assert_int_equal(ti.shape[d], s.shape[i][d]);
		assert_int_equal(spotckpt_reader_read(r, idx, back, s.nbytes[i]), 0);
		assert_memory_equal(back, s.buf[i], s.nbytes[i]);
		free(back);
	}
	assert_true(spotckpt_reader_find(r, "nope") == -SPOTCKPT_ENOTFOUND);
	spotckpt_reader_close(r);

	/* the engine restore fills the registered buffers */
	for (int i = 0; i < NT; i++)
		memset(s.buf[i], 0xAB, s.nbytes[i]);
	{
		struct state ref;
		int64_t step = -1;

		state_init(&ref, 7);
		assert_int_equal(spotckpt_restore(e, SPOTCKPT_NEWEST, &step), 0);
		assert_int_equal(step, 42);
		for (int i = 0; i < NT; i++)
			assert_memory_equal(s.buf[i], ref.buf[i], s.nbytes[i]);
		state_free(&ref);
	}
	assert_int_equal(spotckpt_close(e), 0);
	state_free(&s);
	ct_rmtree(dir);
	free(dir);
}

static void round_trip(uint64_t shard_bytes)
{
	round_trip_opts(shard_bytes, SPOTCKPT_DIO_AUTO);
}

/* The fallbacks: buffered writes, and pwrite/pread without io_uring. */
static void test_round_trip_fallbacks(void **st)
{
	(void)st;
	round_trip_opts(0, SPOTCKPT_DIO_OFF);
	setenv("SPOTCKPT_NO_URING", "1", 1);
	setenv("SPOTCKPT_NO_DIRECT", "1", 1);
	round_trip_opts(20000, SPOTCKPT_DIO_AUTO);
	round_trip_opts(0, SPOTCKPT_DIO_OFF);
	unsetenv("SPOTCKPT_NO_URING");
	unsetenv("SPOTCKPT_NO_DIRECT");
}

static void test_round_trip_one_shard(void **st)
{
	(void)st;
	round_trip(0);
}

static void test_round_trip_many_shards(void **st)
{
	(void)st;
	round_trip(10000); /* several tensors per shard, one alone */
}

struct cb_ctx { struct state *s; int seen; };

static int foreach_cb(void *ud, const struct spotckpt_tensor_info *ti,
		      const void *data)
{
	struct cb_ctx *c = ud;

	for (int i = 0; i < NT; i++) {
		if (!strcmp(ti->name, c->s->name[i])) {
			assert_int_equal(ti->nbytes, c->s->nbytes[i]);
			assert_memory_equal(data, c->s->buf[i], ti->nbytes);
			c->seen++;
			return 0;
		}
	}
	fail_msg("unexpected tensor %s", ti->name);
	return -1;
}

static int lookup_cb(void *ud, const struct spotckpt_tensor_info *ti,
		     struct spotckpt_dest *d)
{
	uint8_t **bufs = ud;

	if (!strcmp(ti->name, "i32")) {
		d->ptr = bufs[0];
		d->len = ti->nbytes;
		return 0;
	}
	return 1; /* skip the rest */
}

static void test_callbacks_and_list(void **st)
{
	char *dir = ct_tmpdir();
	struct spotckpt *e = ct_open(dir, 3);
	struct spotckpt_reader *r = NULL;
	struct spotckpt_entry ents[8];
	struct cb_ctx c;
	struct state s;
	uint8_t *bufs[1];
	size_t n = 0;
	int64_t step = -1;

	(void)st;
	state_init(&s, 9);
	reg_all(e, &s);
	for (int64_t k = 1; k <= 4; k++) {
		ct_fill(s.buf[5], s.nbytes[5], (uint64_t)k);
		assert_int_equal(spotckpt_save(e, k * 10, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
	}
	/* keep = 3: steps 40, 30, 20 */
	assert_int_equal(spotckpt_list(dir, ents, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ents[0].step, 40);
	assert_int_equal(ents[2].step, 20);
	assert_int_equal(ents[0].state, SPOTCKPT_ENTRY_COMMITTED);
	assert_int_equal(ents[0].ntensors, NT);
	assert_true(ents[0].bytes > 0);
	assert_int_equal(spotckpt_list(dir, NULL, 0, &n), 0);
	assert_int_equal(n, 3);

	assert_int_equal(spotckpt_reader_open(dir, SPOTCKPT_NEWEST, SPOTCKPT_NEWEST, 0, &r), 0);
	c.s = &s;
	c.seen = 0;
	assert_int_equal(spotckpt_reader_foreach(r, foreach_cb, &c), 0);
	assert_int_equal(c.seen, NT);
	assert_string_equal(spotckpt_reader_meta(r), "{}");
	spotckpt_reader_close(r);

	/* an older step, exactly; and max_step */
	assert_int_equal(spotckpt_reader_open(dir, 20, 0, 0, &r), 0);
	assert_int_equal(spotckpt_reader_step(r), 20);
	spotckpt_reader_close(r);
	assert_int_equal(spotckpt_reader_open(dir, SPOTCKPT_NEWEST, 35, 0, &r), 0);
	assert_int_equal(spotckpt_reader_step(r), 30);
	spotckpt_reader_close(r);
	assert_int_equal(spotckpt_reader_open(dir, 10, 0, 0, &r), -ENOENT);
	assert_null(r);

	bufs[0] = malloc(s.nbytes[5]);
	assert_int_equal(spotckpt_restore_cb(dir, 30, lookup_cb, bufs, &step), 0);
	assert_int_equal(step, 30);
	ct_fill(s.buf[5], s.nbytes[5], 3);
	assert_memory_equal(bufs[0], s.buf[5], s.nbytes[5]);
	free(bufs[0]);
	assert_int_equal(spotckpt_verify(dir, SPOTCKPT_NEWEST, &step), 0);
	assert_int_equal(step, 40);

	assert_int_equal(spotckpt_close(e), 0);
	state_free(&s);
	ct_rmtree(dir);
	free(dir);
}

/* The shard file is plain safetensors: 8-byte LE length, JSON, data. */
static void test_safetensors_framing(void **st)
{
	char *dir = ct_tmpdir(), path[4096];
	struct spotckpt *e = ct_open(dir, 2);
	float w[6] = { 1, 2, 3, 4, 5, 6 };
	int64_t shape[2] = { 2, 3 };
	uint8_t hdr8[8];
	uint64_t hlen = 0;
	char *json;
	json_t *root, *t;
	json_error_t je;
	FILE *f;
	float back[6];

	(void)st;
	assert_int_equal(spotckpt_register(e, "w", w, SPOTCKPT_F32, 2, shape, 0), 0);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_close(e), 0);
	snprintf(path, sizeof path, "%s/step-00000001/shard-00000.safetensors", dir);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(hdr8, 1, 8, f), 8);
	for (int i = 0; i < 8; i++)
		hlen |= (uint64_t)hdr8[i] << (8 * i);
	assert_int_equal((8 + hlen) % 4096, 0);
	json = calloc(1, hlen + 1);
	assert_int_equal(fread(json, 1, hlen, f), hlen);
	root = json_loads(json, 0, &je);
	assert_non_null(root);
	t = json_object_get(root, "w");
	assert_string_equal(json_string_value(json_object_get(t, "dtype")), "F32");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(t, "shape"), 1)), 3);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 1)), 24);
	assert_true(json_is_object(json_object_get(root, "__metadata__")));
	assert_int_equal(fread(back, 1, sizeof back, f), sizeof back);
	assert_memory_equal(back, w, sizeof w);
	assert_int_equal(fgetc(f), EOF);
	fclose(f);
	json_decref(root);
	free(json);
	ct_rmtree(dir);
	free(dir);
}

static void test_bad_arguments(void **st)
{
	char *dir = ct_tmpdir();
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	float x = 1;
	int64_t shape[1] = { 1 }, neg[1] = { -1 };

	(void)st;
	{ /* an empty directory: nothing to read, clearly */
		struct spotckpt_reader *r = NULL;
		size_t n = 9;

		assert_int_equal(spotckpt_reader_open(dir, SPOTCKPT_NEWEST,
						      SPOTCKPT_NEWEST, 0, &r),
				 -SPOTCKPT_ENOTFOUND);
		assert_non_null(strstr(spotckpt_errmsg(), "no valid checkpoint"));
		assert_int_equal(spotckpt_verify(dir, SPOTCKPT_NEWEST, NULL),
				 -SPOTCKPT_ENOTFOUND);
		assert_int_equal(spotckpt_list(dir, NULL, 0, &n), 0);
		assert_int_equal(n, 0);
		assert_int_equal(spotckpt_list("/nonexistent-dir", NULL, 0, &n), -ENOENT);
	}
	spotckpt_opts_init(&o);
	assert_int_equal(spotckpt_open(&o, &e), -EINVAL);
	assert_non_null(strstr(spotckpt_errmsg(), "dir"));
	o.dir = dir;
	o.keep = 0;
	assert_int_equal(spotckpt_open(&o, &e), -EINVAL);
	o.dir = "/proc/version/x";
	o.keep = 2;
	assert_true(spotckpt_open(&o, &e) < 0);
	assert_null(e);
	e = ct_open(dir, 2);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), -SPOTCKPT_ECONFLICT);
	assert_int_equal(spotckpt_register(e, "", &x, SPOTCKPT_F32, 1, shape, 0), -EINVAL);
	assert_int_equal(spotckpt_register(e, "a\"b", &x, SPOTCKPT_F32, 1, shape, 0), -EINVAL);
	assert_int_equal(spotckpt_register(e, "x", &x, 99, 1, shape, 0), -EINVAL);
	assert_int_equal(spotckpt_register(e, "x", &x, SPOTCKPT_F32, 1, neg, 0), -EINVAL);
	assert_int_equal(spotckpt_register(e, "x", NULL, SPOTCKPT_F32, 1, shape, 0), -EINVAL);
	assert_int_equal(spotckpt_register(e, "x", &x, SPOTCKPT_F32, 1, shape, 7), -EINVAL);
	assert_int_equal(spotckpt_register(e, "x", &x, SPOTCKPT_F32, 1, shape, 0), 0);
	assert_int_equal(spotckpt_register(e, "x", &x, SPOTCKPT_F32, 1, shape, 0), -EEXIST);
	assert_non_null(strstr(spotckpt_errmsg(), "x"));
	assert_int_equal(spotckpt_save(e, -1, NULL, 0, NULL), -EINVAL);
	assert_int_equal(spotckpt_save(e, 1, "[1,2]", 0, NULL), -EINVAL);
	assert_int_equal(spotckpt_save(e, 1, "{bad", 0, NULL), -EINVAL);
	assert_non_null(strstr(spotckpt_errmsg(), "metadata"));
	/* the set of tensors may change between saves */
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_clear(e), 0);
	{
		double big[100] = { 0 };
		int64_t s100[1] = { 100 };

		assert_int_equal(spotckpt_register(e, "x", &x, SPOTCKPT_F32, 1, shape, 0), 0);
		assert_int_equal(spotckpt_register(e, "opt.big", big, SPOTCKPT_F64, 1, s100, 0), 0);
		assert_int_equal(spotckpt_save(e, 2, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
	}
	assert_int_equal(spotckpt_close(e), 0);
	assert_int_equal(spotckpt_close(NULL), 0);
	spotckpt_reader_close(NULL);
	assert_string_equal(spotckpt_dtype_name(SPOTCKPT_BF16), "BF16");
	assert_int_equal(spotckpt_dtype_size(SPOTCKPT_F64), 8);
	assert_null(spotckpt_dtype_name(-1));
	assert_int_equal(spotckpt_abi_version(), SPOTCKPT_ABI_VERSION);
	assert_non_null(spotckpt_strerror(-SPOTCKPT_ECHECKSUM));
	ct_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_one_shard),
		cmocka_unit_test(test_round_trip_many_shards),
		cmocka_unit_test(test_round_trip_fallbacks),
		cmocka_unit_test(test_callbacks_and_list),
		cmocka_unit_test(test_safetensors_framing),
		cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
