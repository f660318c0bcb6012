/* Unit tests: lib/objstore without a network - checkpoint URIs (good and
 * bad, with their messages), the file backend (atomic objects, listing,
 * ranges, deletion), XML answers, and the whole tier-3 path on a file://
 * store: upload, manifest-last commit, retention, restore and the reader
 * on the URI, a missing shard skipped; the public object calls
 * (spotckpt_store_*: bad keys refused by name) and spotckpt_set_remote_ex
 * (no backfill, every committed step kept); the pace of a body streamed
 * from a file (against lib/common/testsrv on loopback). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objstore/os_int.h"
#include "common/testsrv.h"
#include "objstore/tier3.h"
#include "ckpt/backend.h"
#include "spotrun/ckpt.h"

static char g_dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof g_dir, "/tmp/spotrun-objstore-XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[400];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_uri_good(void **state)
{
	struct objstore_uri u;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(objstore_uri_parse("s3://my-bucket/a/b/", &u, &e), 0);
	assert_int_equal(u.kind, OBJSTORE_S3);
	assert_string_equal(u.bucket, "my-bucket");
	assert_string_equal(u.prefix, "a/b");
	objstore_uri_free(&u);
	assert_int_equal(objstore_uri_parse("gs://bkt", &u, &e), 0);
	assert_int_equal(u.kind, OBJSTORE_GCS);
	assert_string_equal(u.prefix, "");
	objstore_uri_free(&u);
	assert_int_equal(objstore_uri_parse("az://acct1/cont-1/x", &u, &e), 0);
	assert_int_equal(u.kind, OBJSTORE_AZURE);
	assert_string_equal(u.account, "acct1");
	assert_string_equal(u.bucket, "cont-1");
	assert_string_equal(u.prefix, "x");
	objstore_uri_free(&u);
	assert_int_equal(objstore_uri_parse("file:///tmp/ck", &u, &e), 0);
	assert_int_equal(u.kind, OBJSTORE_FILE);
	assert_string_equal(u.prefix, "/tmp/ck");
	objstore_uri_free(&u);
	assert_true(ckpt__uri_is_remote("az://a/b"));
	assert_false(ckpt__uri_is_remote("/tmp/x"));
	assert_string_equal(ckpt__uri_local_path("file:///x/y"), "/x/y");
	/* split by curl: the scheme in any case, file://localhost/, a
	 * malformed URL is still a remote one (its error comes on parsing),
	 * a path with a colon or "://" inside is a path */
	assert_int_equal(objstore_uri_parse("S3://my-bucket", &u, &e), 0);
	assert_int_equal(u.kind, OBJSTORE_S3);
	assert_string_equal(u.prefix, "");
	objstore_uri_free(&u);
	assert_int_equal(objstore_uri_parse("file://localhost/tmp/ck/", &u, &e), 0);
	assert_string_equal(u.prefix, "/tmp/ck/");
	objstore_uri_free(&u);
	assert_string_equal(ckpt__uri_local_path("file://localhost/x"), "/x");
	assert_true(ckpt__uri_is_remote("s3://bad bucket/x"));
	assert_false(ckpt__uri_is_remote("s3:bucket"));
	assert_int_equal(objstore_uri_parse("/data/run:1/a://b", &u, &e), 0);
	assert_int_equal(u.kind, OBJSTORE_FILE);
	assert_string_equal(u.prefix, "/data/run:1/a://b");
	objstore_uri_free(&u);
}

static void test_uri_bad(void **state)
{
	static const struct { const char *uri, *msg; } bad[] = {
		{ "s3://B/x", "bad bucket name 'B'" },
		{ "s3://ab", "bad bucket name" },
		{ "s3://bucket/a/../b", "bad prefix" },
		{ "s3://bucket/a//b", "bad prefix" },
		{ "ftp://x/y", "unknown scheme" },
		{ "az://Acct/c", "expected az://ACCOUNT/CONTAINER" },
		{ "az://acct/con.tainer", "bad container name" },
		{ "file://relative", "absolute path" },
		{ "file:relative", "absolute path" },
		{ "", "empty" },
		/* what splitting at "://" and '/' by hand let through */
		{ "s3://user:s3cret@bucket/x", "user:password@ has no place" },
		{ "s3://bucket:9000/x", "a port has no place" },
		{ "s3://[::1]/x", "bad bucket name '[::1]'" },
		{ "az://acct:1/c", "a port has no place" },
		{ "s3://bucket/a?b", "'?' and '#'" },
		{ "gs://bucket/a#b", "'?' and '#'" },
		{ "s3://bad bucket/x", "bad host name" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct objstore_uri u;
		struct sr_err e = { 0 };

		assert_int_equal(objstore_uri_parse(bad[i].uri, &u, &e), -EINVAL);
		if (!strstr(e.msg, bad[i].msg))
			fail_msg("%s: message '%s' lacks '%s'", bad[i].uri, e.msg,
				 bad[i].msg);
		assert_null(strstr(e.msg, "s3cret"));
		assert_null(u.bucket);
	}
}

static void test_file_backend(void **state)
{
	struct objstore *s = NULL;
	struct objstore_list l = { 0 };
	struct sr_err e = { 0 };
	char uri[300], path[300], buf[8], *got = NULL;
	const char *keys[] = { "d/one", "d/two", "d/three" };
	size_t len = 0;
	uint64_t sent = 0;
	int fd;

	(void)state;
	snprintf(uri, sizeof uri, "file://%s/store", g_dir);
	assert_int_equal(objstore_open(uri, NULL, &s, &e), 0);
	assert_int_equal(objstore_put(s, "d/two", "0123456789", 10, &e), 0);
	snprintf(path, sizeof path, "%s/src", g_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abcdef", 6), 6);
	assert_int_equal(objstore_put_fd(s, "d/one", fd, 6, &sent, &e), 0);
	close(fd);
	assert_int_equal(sent, 6);
	/* from memory (a final checkpoint's image) */
	assert_int_equal(objstore_put_mem(s, "d/three", "ghijklm", 7, &sent,
					  &e), 0);
	assert_int_equal(sent, 13);
	assert_int_equal(objstore_list(s, "d/", &l, &e), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[0].key, "d/one");
	assert_int_equal(l.v[0].size, 6);
	assert_string_equal(l.v[1].key, "d/three");
	assert_int_equal(l.v[1].size, 7);
	assert_string_equal(l.v[2].key, "d/two");
	objstore_list_free(&l);
	assert_int_equal(objstore_get_range(s, "d/three", 2, 4, buf, &e), 0);
	assert_memory_equal(buf, "ijkl", 4);
	assert_int_equal(objstore_get_range(s, "d/two", 3, 4, buf, &e), 0);
	assert_memory_equal(buf, "3456", 4);
	assert_int_equal(objstore_get_range(s, "d/two", 8, 4, buf, &e),
			 -SR_ECORRUPT);
	assert_int_equal(objstore_get_range(s, "nope", 0, 1, buf, &e),
			 -SR_ENOTFOUND);
	assert_int_equal(objstore_get(s, "d/one", 100, &got, &len, &e), 0);
	assert_int_equal(len, 6);
	assert_string_equal(got, "abcdef");
	free(got);
	assert_int_equal(objstore_del(s, keys, 3, &e), 0);
	assert_int_equal(objstore_list(s, "", &l, &e), 0);
	assert_int_equal(l.n, 0);
	objstore_list_free(&l);
	objstore_close(s);
}

static int each(void *ud, const char *a, const char *b)
{
	char *out = ud;

	strcat(out, a ? a : "-");
	strcat(out, "=");
	strcat(out, b ? b : "-");
	strcat(out, ";");
	return 0;
}

static void test_xml(void **state)
{
	static const char list[] =
		"<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3."
		"amazonaws.com/doc/2006-03-01/\"><Contents><Key>a/b</Key><Size>"
		"12</Size></Contents><Contents><Key>c</Key></Contents>"
		"<IsTruncated>false</IsTruncated></ListBucketResult>";
	char out[256] = "", *t;

	(void)state;
	assert_int_equal(os_xml_each(list, strlen(list), "Contents", "Key",
				     "Size", each, out), 0);
	assert_string_equal(out, "a/b=12;c=-;");
	t = os_xml_text(list, strlen(list), "IsTruncated");
	assert_string_equal(t, "false");
	free(t);
	assert_null(os_xml_text("<a>", 3, "a") ? (void *)1 : NULL);
	assert_int_equal(os_xml_each("not xml", 7, "x", "a", "b", each, out),
			 -SR_EPARSE);
}

/* CRC32C against published check values (the "123456789" check value
 * and RFC 3720 appendix B.4), split anywhere, on the hardware path and
 * the table alike (the split puts the tail on the byte loop), and the
 * x-amz-checksum-crc32c form; the fd variant reads a file. */
static void test_crc32c(void **state)
{
	unsigned char zeros[32] = { 0 }, ones[32], inc[32];
	char b64[9], path[300];
	const char *nine = "123456789";
	int fd;

	(void)state;
	memset(ones, 0xff, sizeof ones);
	for (int i = 0; i < 32; i++)
		inc[i] = (unsigned char)i;
	assert_int_equal(os_crc32c(0, nine, 9), 0xE3069283u);
	assert_int_equal(os_crc32c(0, zeros, 32), 0x8A9136AAu);
	assert_int_equal(os_crc32c(0, ones, 32), 0x62A8AB43u);
	assert_int_equal(os_crc32c(0, inc, 32), 0x46DD794Eu);
	for (size_t k = 0; k <= 9; k++)
		assert_int_equal(os_crc32c(os_crc32c(0, nine, k), nine + k, 9 - k),
				 0xE3069283u);
	os_crc32c_b64(0xE3069283u, b64);
	assert_string_equal(b64, "4waSgw==");
	snprintf(path, sizeof path, "%s/crc", g_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "xx123456789", 11), 11);
	assert_int_equal(os_crc32c_b64_fd(fd, 2, 9, b64), 0);
	assert_string_equal(b64, "4waSgw==");
	assert_int_equal(os_crc32c_b64_fd(fd, 2, 10, b64), -EIO);
	close(fd);
}

/* The tier-3 path end to end on a file:// store. */
static void test_tier3_file(void **state)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	struct spotckpt_remote_stats rs;
	struct spotckpt_reader *r = NULL;
	struct spotckpt_entry ents[8];
	float w[4096], back[4096];
	int64_t shape[1] = { 4096 }, step = -1;
	char dir[300], uri[300], shard[400], msg[256];
	size_t n = 0;
	int32_t met = 0;

	(void)state;
	snprintf(dir, sizeof dir, "%s/tier2", g_dir);
	snprintf(uri, sizeof uri, "file://%s/tier3", g_dir);
	spotckpt_opts_init(&o);
	o.dir = dir;
	o.keep = 2;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_register(e, "w", w, SPOTCKPT_F32, 1, shape,
					   SPOTCKPT_DEV_CPU), 0);
	assert_int_equal(spotckpt_remote_wait(e, -1, 0, NULL),
			 -SPOTCKPT_ECONFLICT);
	assert_int_equal(spotckpt_set_remote(e, uri), 0);
	assert_int_equal(spotckpt_set_remote(e, uri), -SPOTCKPT_ECONFLICT);
	for (int s = 1; s <= 3; s++) {
		for (int i = 0; i < 4096; i++)
			w[i] = (float)(s * 10000 + i);
		assert_int_equal(spotckpt_save(e, s, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
		assert_int_equal(spotckpt_remote_wait(e, s, 0, &met), 0);
		assert_int_equal(met, 1);
	}
	assert_int_equal(spotckpt_remote_stats(e, &rs, msg, sizeof msg), 0);
	assert_int_equal(rs.enabled, 1);
	assert_int_equal(rs.uploaded_step, 3);
	assert_int_equal(rs.uploads_failed, 0);
	assert_int_equal(spotckpt_close(e), 0);
	/* retention in the store: 3 and 2 */
	assert_int_equal(spotckpt_list(uri, ents, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ents[0].step, 3);
	assert_int_equal(ents[1].step, 2);
	assert_int_equal(ents[0].state, SPOTCKPT_ENTRY_COMMITTED);
	assert_int_equal(spotckpt_verify(uri, SPOTCKPT_NEWEST, &step), 0);
	assert_int_equal(step, 3);
	/* a missing shard: the reader falls back to step 2 */
	snprintf(shard, sizeof shard, "%s/tier3/step-00000003/"
		 "shard-00000.safetensors", g_dir);
	assert_int_equal(unlink(shard), 0);
	assert_int_equal(spotckpt_reader_open(uri, SPOTCKPT_NEWEST,
					      SPOTCKPT_NEWEST, 0, &r), 0);
	assert_int_equal(spotckpt_reader_step(r), 2);
	assert_int_equal(spotckpt_reader_read(r, 0, back, sizeof back), 0);
	assert_true(back[7] == 20007.0f);
	spotckpt_reader_close(r);
	assert_int_not_equal(spotckpt_verify(uri, 3, NULL), 0);
	assert_non_null(strstr(spotckpt_errmsg(), "shard-00000"));
}

/* spotckpt_store_*: put/get/list/delete, bad keys refused by name. */
static void test_store_api(void **state)
{
	static const char *bad[] = { "", "/abs", "a//b", "..", "../x", "a/../b",
				     "a/..", "a\nb" };
	struct spotckpt_store *st = NULL;
	const char *del[2] = { "global/step-00000001.commit", "nothere" };
	char uri[300], *out = NULL;
	size_t len = 0;

	(void)state;
	snprintf(uri, sizeof uri, "file://%s/objects", g_dir);
	assert_int_equal(spotckpt_store_open("s3://", &st), -EINVAL);
	assert_null(st);
	assert_int_equal(spotckpt_store_open(uri, &st), 0);
	assert_int_equal(spotckpt_store_put(st, "global/step-00000001.commit",
					    "{\"a\":1}", 7), 0);
	assert_int_equal(spotckpt_store_put(st, "global/step-00000001/r.json",
					    "x", 1), 0);
	assert_int_equal(spotckpt_store_get(st, "global/step-00000001.commit",
					    1024, &out, &len), 0);
	assert_int_equal(len, 7);
	assert_string_equal(out, "{\"a\":1}");
	spotckpt_free(out);
	assert_int_equal(spotckpt_store_get(st, "global/none", 1024, &out, &len),
			 -SPOTCKPT_ENOTFOUND);
	assert_null(out);
	assert_int_equal(spotckpt_store_list(st, "global/", &out, &len), 0);
	assert_string_equal(out, "global/step-00000001.commit\n"
			    "global/step-00000001/r.json\n");
	assert_int_equal(len, strlen(out));
	spotckpt_free(out);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(spotckpt_store_put(st, bad[i], "x", 1), -EINVAL);
		assert_non_null(strstr(spotckpt_errmsg(), "store_put"));
	}
	assert_int_equal(spotckpt_store_del(st, del, 2), 0);
	assert_int_equal(spotckpt_store_list(st, "", &out, &len), 0);
	assert_string_equal(out, "global/step-00000001/r.json\n");
	spotckpt_free(out);
	spotckpt_store_close(st);
	spotckpt_store_close(NULL);
}

/* set_remote_ex: KEEP_ALL leaves every committed step in the store (the
 * caller prunes); NO_BACKFILL does not upload what the dir held. */
static void test_set_remote_ex(void **state)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;
	struct spotckpt_entry ents[8];
	float w[256];
	int64_t shape[1] = { 256 };
	char dir[300], uri[300];
	size_t n = 0;
	int32_t met = 0;

	(void)state;
	memset(w, 0, sizeof w);
	snprintf(dir, sizeof dir, "%s/ex2", g_dir);
	snprintf(uri, sizeof uri, "file://%s/ex3", g_dir);
	spotckpt_opts_init(&o);
	o.dir = dir;
	o.keep = 1;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	assert_int_equal(spotckpt_register(e, "w", w, SPOTCKPT_F32, 1, shape,
					   SPOTCKPT_DEV_CPU), 0);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_set_remote_ex(e, uri, -2, 0), -EINVAL);
	assert_int_equal(spotckpt_set_remote_ex(e, uri, 0, 0x80), -EINVAL);
	assert_int_equal(spotckpt_set_remote_ex(e, uri, SPOTCKPT_REMOTE_KEEP_ALL,
						SPOTCKPT_REMOTE_NO_BACKFILL), 0);
	for (int s = 2; s <= 4; s++) {
		assert_int_equal(spotckpt_save(e, s, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
		assert_int_equal(spotckpt_remote_wait(e, s, 0, &met), 0);
	}
	assert_int_equal(spotckpt_close(e), 0);
	/* 2, 3, 4 kept although keep is 1; step 1 never offered */
	assert_int_equal(spotckpt_list(uri, ents, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ents[0].step, 4);
	assert_int_equal(ents[2].step, 2);
}

/* The pace (objstore_set_pace) runs before the reads of a body streamed
 * from a file, not for a body in memory; the object arrives whole. */
static void count_pace(void *ud)
{
	(*(int *)ud)++;
}

static void test_pace_of_file_bodies(void **state)
{
	enum { LEN = 300 << 10 };
	struct sr_testsrv *srv = sr_testsrv_start(0);
	struct objstore *s = NULL;
	struct sr_err e = { 0 };
	const struct sr_testsrv_req *q;
	char path[300], *data = malloc(LEN);
	int fd, calls = 0;
	uint64_t sent = 0;

	(void)state;
	assert_non_null(srv);
	assert_non_null(data);
	for (size_t i = 0; i < LEN; i++)
		data[i] = (char)(i % 251);
	snprintf(path, sizeof path, "%s/paced", g_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, LEN), LEN);
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	setenv("AWS_ENDPOINT_URL_S3", sr_testsrv_url(srv), 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	assert_int_equal(objstore_open("s3://bucket/p", NULL, &s, &e), 0);
	objstore_set_pace(s, count_pace, &calls);
	sr_testsrv_reply_hdrs(srv, "PUT", "/bucket/p/obj", 200, NULL,
			      "ETag: \"e\"", "", 0);
	assert_int_equal(objstore_put_fd(s, "obj", fd, LEN, &sent, &e), 0);
	assert_int_equal(sent, LEN);
	assert_true(calls >= 1);
	q = sr_testsrv_req(srv, sr_testsrv_nreq(srv) - 1);
	assert_string_equal(q->path, "/bucket/p/obj");
	assert_int_equal(q->body_len, LEN);
	assert_memory_equal(q->body, data, LEN);
	calls = 0;
	sr_testsrv_reply_hdrs(srv, "PUT", "/bucket/p/mem", 200, NULL,
			      "ETag: \"e\"", "", 0);
	assert_int_equal(objstore_put(s, "mem", data, LEN, &e), 0);
	assert_int_equal(calls, 0);
	/* a large object from memory: its checksum and body from there */
	sr_testsrv_reply_hdrs(srv, "PUT", "/bucket/p/img", 200, NULL,
			      "ETag: \"e\"", "", 0);
	sent = 0;
	assert_int_equal(objstore_put_mem(s, "img", data, LEN, &sent, &e), 0);
	assert_int_equal(sent, LEN);
	q = sr_testsrv_req(srv, sr_testsrv_nreq(srv) - 1);
	assert_string_equal(q->path, "/bucket/p/img");
	assert_int_equal(q->body_len, LEN);
	assert_memory_equal(q->body, data, LEN);
	objstore_close(s);
	unsetenv("AWS_ENDPOINT_URL_S3");
	sr_testsrv_stop(srv);
	close(fd);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uri_good),
		cmocka_unit_test(test_uri_bad),
		cmocka_unit_test(test_file_backend),
		cmocka_unit_test(test_xml),
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_tier3_file),
		cmocka_unit_test(test_store_api),
		cmocka_unit_test(test_set_remote_ex),
		cmocka_unit_test(test_pace_of_file_bodies),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
