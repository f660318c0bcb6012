/* Unit tests: lib/common/fsutil.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fsutil.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sr-fs-XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_fs(void **state)
{
	struct sr_err e = { 0 };
	char path[256], sub[128], *s = NULL;
	size_t n = 0;
	struct stat st;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
	assert_int_equal(sr_fs_mkdir_p(sub, 0755), 0);
	assert_int_equal(sr_fs_mkdir_p(sub, 0755), 0); /* idempotent */
	assert_int_equal(stat(sub, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(sr_fs_fsync_dir(sub), 0);
	assert_int_equal(sr_fs_fsync_dir("/nonexistent/dir"), -ENOENT);

	snprintf(path, sizeof(path), "%s/secret.bin", sub);
	assert_int_equal(sr_fs_write_atomic(path, "abc\0def", 7, 0600, &e), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 7);
	/* replace, different mode */
	assert_int_equal(sr_fs_write_atomic(path, "xy", 2, 0640, &e), 0);
	assert_int_equal(sr_fs_read_file(path, 100, &s, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_string_equal(s, "xy");
	free(s);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(sr_fs_fsync_parent(path), 0);
	assert_int_equal(sr_fs_fsync_parent("relative-name"), 0);

	/* no temp files left behind */
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "ls '%s' | grep -q tmp", sub);
		assert_int_not_equal(system(cmd), 0);
	}
	/* errors */
	assert_int_equal(sr_fs_read_file(path, 1, &s, &n, &e), -EFBIG);
	assert_null(s);
	assert_int_equal(sr_fs_read_file("/nonexistent/x", 10, &s, &n, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "/nonexistent/x"));
	assert_int_equal(sr_fs_mkdir_p(path, 0755), -ENOTDIR);
	assert_int_equal(sr_fs_mkdir_p("", 0755), -EINVAL);
	assert_true(sr_fs_write_atomic("/nonexistent/dir/f", "x", 1, 0644, &e) < 0);
	assert_non_null(strstr(e.msg, "/nonexistent/dir/f: create temp file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
