/*
 * test_ckpt_parse.c - the manifest and safetensors-header parsers reject
 * bad input with an error that names the file and the field or tensor.
 */
#include "ckpt_test.h"

#include "ckpt/internal.h"

/* ---- manifest -------------------------------------------------------------- */
static char *good_manifest(size_t *len)
{
	struct ckpt_tensor t[2] = {
		{ .name = "a", .dtype = SPOTCKPT_F32, .ndim = 2, .shape = { 2, 3 },
		  .nbytes = 24 },
		{ .name = "b", .dtype = SPOTCKPT_I64, .ndim = 0, .nbytes = 8 },
	};
	struct ckpt_layout *l = ckpt__layout_build(t, 2, 0);
	char *buf = NULL;

	assert_non_null(l);
	assert_int_equal(ckpt__manifest_render(77, 123456789, l, "{\"k\":[1,2]}",
					       &buf, len, NULL), 0);
	ckpt__layout_unref(l);
	return buf;
}

/* Replace the first `from` with `to`, re-checksum unless raw. */
static char *edit(const char *src, const char *from, const char *to, int raw,
		  size_t *len)
{
	const char *p = strstr(src, from);
	char *out;

	assert_non_null(p);
	out = malloc(strlen(src) + strlen(to) + 1);
	memcpy(out, src, (size_t)(p - src));
	strcpy(out + (p - src), to);
	strcat(out, p + strlen(from));
	*len = strlen(out);
	if (!raw)
		ckpt__manifest_fix_checksum(out, *len);
	return out;
}

static void expect_bad(const char *buf, size_t len, int code, const char *needle)
{
	struct ckpt_manifest m;
	struct sr_err e = { 0 };
	int rc = ckpt__manifest_parse(buf, len, "step-1/manifest.json", &m, &e);

	if (rc != code || !strstr(e.msg, needle))
		fail_msg("got %d '%s', want %d containing '%s'", rc, e.msg, code,
			 needle);
	assert_non_null(strstr(e.msg, "manifest.json"));
	assert_null(m.l);
}

static void test_manifest_good(void **st)
{
	size_t len;
	char *buf = good_manifest(&len);
	struct ckpt_manifest m;
	struct sr_err e = { 0 };

	(void)st;
	assert_int_equal(ckpt__manifest_parse(buf, len, "m", &m, &e), 0);
	assert_int_equal(m.step, 77);
	assert_int_equal(m.time_ns, 123456789);
	assert_string_equal(m.meta, "{\"k\":[1,2]}");
	assert_int_equal(m.l->nt, 2);
	assert_string_equal(m.l->t[1].name, "b");
	assert_int_equal(m.l->t[0].shape[1], 3);
	assert_int_equal(m.l->ns, 1);
	ckpt__manifest_free(&m);
	free(buf);
}

static void test_manifest_bad(void **st)
{
	size_t len, n;
	char *g = good_manifest(&len), *b;
	static const struct { const char *from, *to; int code; const char *needle; } cases[] = {
		{ "\"format\":\"spotrun-ckpt\"", "\"format\":\"other\"", -SR_EPARSE, "format" },
		{ "\"version\":1", "\"version\":2", -SR_EPARSE, "version" },
		{ "\"step\":77", "\"step\":-1", -SR_EPARSE, "step" },
		{ "\"step\":77", "\"step\":77,\"extra\":1", -SR_EPARSE, "extra" },
		{ "\"dtype\":\"F32\"", "\"dtype\":\"F99\"", -SR_EPARSE, "tensor a: dtype" },
		{ "\"nbytes\":24", "\"nbytes\":25", -SR_ECORRUPT, "tensor a: nbytes" },
		{ "\"shape\":[2,3]", "\"shape\":[2,-3]", -SR_EPARSE, "tensor a: shape[1]" },
		{ "\"shard\":0", "\"shard\":4", -SR_EPARSE, "tensor a: shard" },
		{ "\"name\":\"b\"", "\"name\":\"\"", -SR_EPARSE, "tensors[1].name" },
		{ "\"xxh3\"", "\"xxh4\"", -SR_EPARSE, "xxh3" },
		{ "\"meta\":{", "\"meta\":[{", -SR_EPARSE, "manifest.json:1:" },
		{ "\"tensors\":[", "\"tensors\":7,\"x\":[", -SR_EPARSE, "x" },
		{ "\"file\":\"shard-00000.safetensors\"", "\"file\":\"../etc/passwd\"",
		  -SR_EPARSE, "shards[0].file" },
	};

	(void)st;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		b = edit(g, cases[i].from, cases[i].to, 0, &n);
		expect_bad(b, n, cases[i].code, cases[i].needle);
		free(b);
	}
	/* offsets that leave a gap */
	b = edit(g, "\"offset\":4120", "\"offset\":4121", 0, &n);
	expect_bad(b, n, -SR_ECORRUPT, "tensor b: offset");
	free(b);
	/* any change without re-summing is a checksum failure */
	b = edit(g, "\"step\":77", "\"step\":78", 1, &n);
	expect_bad(b, n, -SR_ECHECKSUM, "checksum");
	free(b);
	expect_bad("{\"step\":1}", 10, -SR_ECORRUPT, "checksum");
	expect_bad("", 0, -SR_ECORRUPT, "checksum");
	/* truncated (torn) manifest */
	expect_bad(g, len / 2, -SR_ECHECKSUM, "torn");
	free(g);
}

/* ---- safetensors header ---------------------------------------------------- */
static uint8_t *st_make(const char *json, size_t data, size_t *flen)
{
	size_t n = strlen(json);
	uint8_t *b = calloc(1, 8 + n + data);

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)n >> (8 * i));
	memcpy(b + 8, json, n);
	*flen = 8 + n + data;
	return b;
}

static void st_expect(const char *json, size_t data, int code, const char *needle)
{
	size_t flen, n = 0;
	uint8_t *b = st_make(json, data, &flen);
	struct ckpt_st_entry *ents = NULL;
	struct sr_err e = { 0 };
	uint64_t ds = 0;
	int rc = ckpt__st_header_parse(b, flen, flen, "x.safetensors", &ents, &n,
				       &ds, &e);

	if (rc != code || (needle && !strstr(e.msg, needle)))
		fail_msg("%s: got %d '%s', want %d containing '%s'", json, rc,
			 e.msg, code, needle ? needle : "");
	if (rc == 0) {
		assert_int_equal(ds, 8 + strlen(json));
		free(ents);
	} else {
		assert_null(ents);
		assert_non_null(strstr(e.msg, "x.safetensors"));
	}
	free(b);
}

static void test_header(void **st)
{
	size_t n = 0;
	struct ckpt_st_entry *ents = NULL;
	struct sr_err e = { 0 };
	uint64_t ds;
	uint8_t tiny[4] = { 0 }, huge[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };

	(void)st;
	/* valid: other writers' style, unsorted keys, padding, no metadata */
	st_expect("{\"b\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[8,10]},"
		  "\"a\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}   ",
		  10, 0, NULL);
	st_expect("{\"__metadata__\":{\"format\":\"pt\"}}", 0, 0, NULL);
	st_expect("{\"e\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[0,0]}}",
		  0, 0, NULL);
	/* invalid */
	assert_int_equal(ckpt__st_header_parse(tiny, 4, 4, "x.safetensors", &ents,
					       &n, &ds, &e), -SR_ECORRUPT);
	assert_int_equal(ckpt__st_header_parse(huge, 16, 16, "x.safetensors", &ents,
					       &n, &ds, &e), -SR_ECORRUPT);
	assert_non_null(strstr(e.msg, "header length"));
	st_expect("[1,2]", 0, -SR_EPARSE, "JSON object");
	st_expect("{\"a\":", 0, -SR_EPARSE, "header:1:");
	st_expect("{\"a\":{\"dtype\":\"Q8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
		  1, -SR_EPARSE, "a.dtype");
	st_expect("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
		  4, -SR_ECORRUPT, "dtype x shape");
	st_expect("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}",
		  3, -SR_ECORRUPT, "contiguous");
	st_expect("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
		  5, -SR_ECORRUPT, "cover");
	st_expect("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
		  "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
		  4, -SR_EPARSE, NULL);
	st_expect("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2],"
		  "\"x\":1}}", 2, -SR_EPARSE, "exactly");
	st_expect("{\"a\":{\"dtype\":\"U8\",\"shape\":[-2],\"data_offsets\":[0,2]}}",
		  2, -SR_EPARSE, "a.shape[0]");
	st_expect("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,0]}}",
		  2, -SR_EPARSE, "data_offsets");
	st_expect("{\"__metadata__\":{\"k\":1}}", 0, -SR_EPARSE, "__metadata__.k");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manifest_good),
		cmocka_unit_test(test_manifest_bad),
		cmocka_unit_test(test_header),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
