/* Unit tests: lib/dirsync (issue 30) on the file backend (the same
 * objstore calls as S3; tests/py/test_dirsync.py runs the engine against
 * s3rver and kills it) - a round and its restore into another dir; the
 * manifest's digest refuses a torn one; a file still being written is not
 * taken until quiet; a symlink in the dir is never followed; a restore
 * never writes through a planted link; a damaged object makes the restore
 * take the previous round; retention keeps `keep` rounds and the objects
 * they name; COPY mode; paths a manifest may not name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirsync/dirsync.h"
#include "common/fsutil.h"

static char root[64], src[128], dst[128], store[128], uri[160];

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "/tmp/sr-dirsync-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(src, sizeof src, "%s/src", root);
	snprintf(dst, sizeof dst, "%s/dst", root);
	snprintf(store, sizeof store, "%s/store", root);
	snprintf(uri, sizeof uri, "file://%s", store);
	return mkdir(src, 0755) || mkdir(dst, 0755) || mkdir(store, 0755);
}

static int teardown(void **state)
{
	(void)state;
	sr_fs_rm_tree(root);
	return 0;
}

static void put(const char *dir, const char *rel, const char *text)
{
	char p[512];
	struct sr_err e = { 0 };

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	sr_fs_mkdir_p(p, 0755); /* parents, then the file replaces the leaf */
	rmdir(p);
	assert_int_equal(sr_fs_write_atomic(p, text, strlen(text), 0644, &e), 0);
}

/* Set rel's mtime `ago` seconds in the past. */
static void age(const char *dir, const char *rel, int ago)
{
	char p[512];
	struct timespec ts[2];

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= ago;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static char *slurp(const char *dir, const char *rel)
{
	char p[512], *buf = NULL;

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	if (sr_fs_read_file(p, 1 << 20, &buf, NULL, NULL) < 0)
		return NULL;
	return buf;
}

static struct dirsync *open_on(const char *dir, int *fd)
{
	struct dirsync *d = NULL;
	struct sr_err e = { 0 };

	*fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(*fd >= 0);
	assert_int_equal(dirsync_open(&(struct dirsync_opts){
		.uri = uri, .dirfd = *fd, .keep = 2, .workers = 2 }, &d, &e), 0);
	return d;
}

static int64_t sync_round(struct dirsync *d, int64_t quiet_ns)
{
	struct sr_err e = { 0 };
	int64_t r = -7;

	assert_int_equal(dirsync_sync(d, quiet_ns, &r, &e), 0);
	return r;
}

static int64_t restore_into(const char *dir)
{
	struct dirsync *d;
	struct sr_err e = { 0 };
	int64_t round = -7;
	int fd;

	d = open_on(dir, &fd);
	assert_int_equal(dirsync_restore(d, &round, &e), 0);
	dirsync_close(d);
	close(fd);
	return round;
}

static void test_round_and_restore(void **state)
{
	struct dirsync *d;
	struct dirsync_stats st;
	char *s;
	int fd;

	(void)state;
	put(src, "ckpt/step-10.pt", "ten");
	put(src, "log.txt", "hello");
	{
		char p[256];

		snprintf(p, sizeof p, "%s/passwd", src);
		assert_int_equal(symlink("/etc/passwd", p), 0); /* never followed */
		snprintf(p, sizeof p, "%s/.spotrun-tmp-1", src);
		assert_int_equal(mkfifo(p, 0600), 0); /* never opened */
	}
	d = open_on(src, &fd);
	assert_int_equal(sync_round(d, -1), 1);
	assert_int_equal(sync_round(d, -1), 0); /* nothing changed */
	dirsync_stats(d, &st);
	assert_int_equal(st.files, 2);
	assert_int_equal(st.bytes, 8);
	put(src, "ckpt/step-20.pt", "twenty");
	assert_int_equal(sync_round(d, -1), 2);
	dirsync_stats(d, &st);
	assert_int_equal(st.uploaded_bytes, 14); /* unchanged files not resent */
	dirsync_close(d);
	close(fd);

	assert_int_equal(restore_into(dst), 2);
	assert_non_null(s = slurp(dst, "ckpt/step-20.pt"));
	assert_string_equal(s, "twenty");
	free(s);
	assert_non_null(s = slurp(dst, "log.txt"));
	assert_string_equal(s, "hello");
	free(s);
	assert_null(slurp(dst, "passwd"));
}

static void test_quiet_and_pending(void **state)
{
	struct dirsync *d;
	struct dirsync_stats st;
	int fd;

	(void)state;
	put(src, "a.pt", "old");
	age(src, "a.pt", 60);
	d = open_on(src, &fd);
	assert_int_equal(sync_round(d, 5 * 1000000000LL), 1);
	/* rewritten just now: not stable, the round keeps the old version */
	put(src, "a.pt", "new!");
	put(src, "b.pt", "fresh");
	assert_int_equal(sync_round(d, 5 * 1000000000LL), 0);
	dirsync_stats(d, &st);
	assert_int_equal(st.pending_files, 2);
	/* rotation: the old file deleted while the new one is pending stays
	 * in the store's round until the new one is taken */
	{
		char p[256];

		put(src, "old.pt", "keep me");
		age(src, "old.pt", 60);
		assert_int_equal(sync_round(d, 5 * 1000000000LL), 2);
		snprintf(p, sizeof p, "%s/old.pt", src);
		assert_int_equal(unlink(p), 0);
		assert_int_equal(sync_round(d, 5 * 1000000000LL), 0);
		dirsync_stats(d, &st);
		assert_int_equal(st.files, 2); /* a.pt (old) + old.pt */
	}
	age(src, "a.pt", 60);
	age(src, "b.pt", 60);
	assert_int_equal(sync_round(d, 5 * 1000000000LL), 3);
	dirsync_stats(d, &st);
	assert_int_equal(st.pending_files, 0);
	assert_int_equal(st.files, 2);
	dirsync_close(d);
	close(fd);
}

static void test_torn_manifest_and_paths(void **state)
{
	struct dirsync_round r = { .round = 3 }, back;
	struct dirsync_file f = { .path = "x/y.bin", .size = 4, .mode = 0644 };
	struct sr_err e = { 0 };
	char *buf;
	size_t len;

	(void)state;
	memset(f.sha256, 'a', 64);
	r.files = &f;
	r.n = 1;
	r.bytes = 4;
	assert_int_equal(dirsync_manifest_encode(&r, &buf, &len, &e), 0);
	assert_int_equal(dirsync_manifest_decode(buf, len, "m", &back, &e), 0);
	assert_int_equal(back.round, 3);
	assert_string_equal(back.files[0].path, "x/y.bin");
	dirsync_round_free(&back);
	for (size_t cut = 1; cut < len; cut += 7)
		assert_int_equal(dirsync_manifest_decode(buf, len - cut, "m",
							 &back, &e), -SR_ECORRUPT);
	buf[10] ^= 1;
	assert_int_equal(dirsync_manifest_decode(buf, len, "m", &back, &e),
			 -SR_ECORRUPT);
	assert_non_null(strstr(e.msg, "digest"));
	free(buf);
	assert_int_equal(dirsync_path_check("a/b", &e), 0);
	assert_int_equal(dirsync_path_check("../etc/passwd", &e), -EINVAL);
	assert_int_equal(dirsync_path_check("/abs", &e), -EINVAL);
	assert_int_equal(dirsync_path_check("a//b", &e), -EINVAL);
	assert_int_equal(dirsync_path_check("a/./b", &e), -EINVAL);
	assert_int_equal(dirsync_path_check(".spotrun-tmp-1", &e), -EINVAL);
	assert_int_equal(dirsync_path_check("a\nb", &e), -EINVAL);
}

/* A planted link where a restored file or dir goes: never written through. */
static void test_restore_no_link_follow(void **state)
{
	struct dirsync *d;
	struct sr_err e = { 0 };
	char p[256], outside[256], *s;
	int64_t round;
	int fd;

	(void)state;
	put(src, "sub/f.txt", "data");
	d = open_on(src, &fd);
	assert_int_equal(sync_round(d, -1), 1);
	dirsync_close(d);
	close(fd);
	snprintf(outside, sizeof outside, "%s/outside", root);
	assert_int_equal(mkdir(outside, 0755), 0);
	snprintf(p, sizeof p, "%s/sub", dst);
	assert_int_equal(symlink(outside, p), 0);
	d = open_on(dst, &fd);
	assert_true(dirsync_restore(d, &round, &e) < 0);
	assert_non_null(strstr(e.msg, "link"));
	dirsync_close(d);
	close(fd);
	assert_null(s = slurp(outside, "f.txt"));
}

static void damage_object_of(const char *rel_in_src)
{
	char *s = slurp(src, rel_in_src), p[512], hex[65];
	struct sr_err e = { 0 };
	int fd;

	assert_non_null(s);
	snprintf(p, sizeof p, "%s/%s", src, rel_in_src);
	fd = open(p, O_RDONLY);
	assert_int_equal(dirsync_sha256_fd(fd, strlen(s), hex, &e), 0);
	close(fd);
	free(s);
	snprintf(p, sizeof p, "%s/" DIRSYNC_META "/objects/%s", store, hex);
	assert_int_equal(sr_fs_write_atomic(p, "XXXX", 4, 0644, &e), 0);
}

static void test_damaged_round_falls_back(void **state)
{
	struct dirsync *d;
	char *s;
	int fd;

	(void)state;
	put(src, "m.pt", "one");
	d = open_on(src, &fd);
	assert_int_equal(sync_round(d, -1), 1);
	put(src, "m.pt", "two");
	assert_int_equal(sync_round(d, -1), 2);
	dirsync_close(d);
	close(fd);
	damage_object_of("m.pt");
	assert_int_equal(restore_into(dst), 1);
	assert_non_null(s = slurp(dst, "m.pt"));
	assert_string_equal(s, "one");
	free(s);
	/* nothing of the damaged round was left behind */
	{
		struct dirsync_scan sc;
		struct sr_err e = { 0 };

		fd = open(dst, O_RDONLY | O_DIRECTORY);
		assert_int_equal(dirsync_scan(fd, &sc, &e), 0);
		assert_int_equal(sc.n, 1);
		dirsync_scan_free(&sc);
		close(fd);
	}
}

static void test_retention_and_list(void **state)
{
	struct dirsync *d;
	struct dirsync_listed *v;
	struct sr_err e = { 0 };
	size_t n, nobj = 0;
	char p[256], text[32];
	int fd;

	(void)state;
	d = open_on(src, &fd);
	for (int i = 1; i <= 5; i++) {
		snprintf(text, sizeof text, "v%d", i);
		put(src, "w.pt", text);
		assert_int_equal(sync_round(d, -1), i);
	}
	dirsync_close(d);
	close(fd);
	assert_int_equal(dirsync_list(uri, &v, &n, &e), 0);
	assert_int_equal(n, 2); /* keep = 2 */
	assert_int_equal(v[0].r.round, 5);
	assert_int_equal(v[1].r.round, 4);
	assert_null(v[0].error);
	assert_int_equal(v[0].r.n, 1);
	assert_int_equal(v[0].r.files[0].size, 2);
	dirsync_listed_free(v, n);
	{
		struct dirsync_scan sc;

		snprintf(p, sizeof p, "%s/" DIRSYNC_META "/objects", store);
		fd = open(p, O_RDONLY | O_DIRECTORY);
		assert_int_equal(dirsync_scan(fd, &sc, &e), 0);
		nobj = sc.n;
		dirsync_scan_free(&sc);
		close(fd);
	}
	assert_int_equal(nobj, 2); /* v4 and v5 */
	/* a new engine continues the numbering */
	d = open_on(src, &fd);
	put(src, "w.pt", "v6");
	assert_int_equal(sync_round(d, -1), 6);
	dirsync_close(d);
	close(fd);
}

static void test_copy_mode(void **state)
{
	struct objstore *s = NULL;
	struct objstore_cfg cfg;
	struct sr_err e = { 0 };
	uint64_t files = 0, bytes = 0;
	char *t;
	int fd;

	(void)state;
	put(store, "data/train.csv", "1,2,3\n");
	put(store, "README", "hi");
	objstore_cfg_default(&cfg);
	assert_int_equal(objstore_open(uri, &cfg, &s, &e), 0);
	fd = open(dst, O_RDONLY | O_DIRECTORY);
	assert_int_equal(dirsync_copy(s, fd, &files, &bytes, &e), 0);
	close(fd);
	objstore_close(s);
	assert_int_equal(files, 2);
	assert_int_equal(bytes, 8);
	assert_non_null(t = slurp(dst, "data/train.csv"));
	assert_string_equal(t, "1,2,3\n");
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_and_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quiet_and_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_manifest_and_paths, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_restore_no_link_follow, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_damaged_round_falls_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_retention_and_list, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_copy_mode, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
