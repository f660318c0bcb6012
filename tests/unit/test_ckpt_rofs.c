/*
 * test_ckpt_rofs.c - a save into a checkpoint dir on a read-only
 * filesystem that holds a leftover step-N.tmp from a crash.
 *
 * The save must fail with the removal's error (EROFS, "Read-only file
 * system"), not the "File exists" of the mkdir that follows it, and the
 * committed checkpoint must still verify.  A tmpfs is mounted and then
 * remounted read-only (we run as root in CI; without permission to mount
 * the test is skipped with a message).
 */
#include "ckpt_test.h"

#include <sys/mount.h>

#include "common/log.h"

static char g_mnt[4096];

static int teardown(void **st)
{
	(void)st;
	if (g_mnt[0] && umount(g_mnt) == 0)
		rmdir(g_mnt);
	g_mnt[0] = '\0';
	return 0;
}

static void test_readonly_with_leftover_tmp(void **st)
{
	char *dir = ct_tmpdir(), path[4200], msg[512];
	struct spotckpt *e;
	uint8_t buf[4096];
	int64_t shape[1] = { (int64_t)sizeof buf };
	FILE *f;

	(void)st;
	if (mount("spotckpt-rofs", dir, "tmpfs", 0, "size=4m") != 0) {
		print_message("SKIP: cannot mount a tmpfs (%s); read-only test "
			      "not run\n", strerror(errno));
		rmdir(dir);
		free(dir);
		skip();
	}
	snprintf(g_mnt, sizeof g_mnt, "%s", dir);
	sr_log_set_level(SR_LOG_OFF);
	e = ct_open(dir, 5);
	ct_fill(buf, sizeof buf, 1);
	assert_int_equal(spotckpt_register(e, "w", buf, SPOTCKPT_U8, 1, shape, 0), 0);
	assert_int_equal(spotckpt_save(e, 1, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	/* a crash left step 2 half-written */
	snprintf(path, sizeof path, "%s/step-00000002.tmp", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/step-00000002.tmp/shard-00000.safetensors",
		 dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("partial", f);
	fclose(f);
	assert_int_equal(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);

	assert_int_equal(spotckpt_save(e, 2, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), -EROFS);
	assert_int_equal(spotckpt_last_error(e, msg, sizeof msg), -EROFS);
	assert_non_null(strstr(msg, "Read-only file system"));
	assert_non_null(strstr(msg, "step-00000002.tmp"));
	assert_null(strstr(msg, "File exists"));
	assert_int_equal(spotckpt_verify(dir, 1, NULL), 0);
	spotckpt_close(e);
	sr_log_set_level(SR_LOG_INFO);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_readonly_with_leftover_tmp, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
