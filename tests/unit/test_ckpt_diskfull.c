/*
 * test_ckpt_diskfull.c - a save that runs out of disk space.
 *
 * A 6 MiB tmpfs is mounted for the test (we run as root in CI; without
 * permission to mount the test is skipped with a message).  Two 2 MiB
 * checkpoints fit; the third does not.  The failed save must report
 * -ENOSPC with a message naming the file, leave no partial directory,
 * leave both older checkpoints verifying, and the engine must keep
 * working: a smaller state saves fine afterwards.
 */
#include "ckpt_test.h"

#include <sys/mount.h>

#include "common/log.h"

static char g_mnt[4096];

/* Unmount even when an assertion failed half-way. */
static int teardown(void **st)
{
	(void)st;
	if (g_mnt[0] && umount(g_mnt) == 0)
		rmdir(g_mnt);
	g_mnt[0] = '\0';
	return 0;
}

static void test_disk_full(void **st)
{
	char *dir = ct_tmpdir();
	struct spotckpt *e;
	struct spotckpt_stats s;
	size_t n = 2 << 20;
	uint8_t *big = malloc(n), small[1000];
	int64_t shape[1] = { (int64_t)n }, sh2[1] = { 1000 };
	char msg[512];
	size_t cnt = 0;
	struct spotckpt_entry ents[8];

	(void)st;
	if (mount("spotckpt-test", dir, "tmpfs", 0, "size=6m") != 0) {
		print_message("SKIP: cannot mount a tmpfs (%s); disk-full test "
			      "not run\n", strerror(errno));
		rmdir(dir);
		free(dir);
		skip();
	}
	snprintf(g_mnt, sizeof g_mnt, "%s", dir);
	sr_log_set_level(SR_LOG_OFF);
	e = ct_open(dir, 5);
	ct_fill(big, n, 3);
	assert_int_equal(spotckpt_register(e, "w", big, SPOTCKPT_U8, 1, shape, 0), 0);
	for (int k = 1; k <= 2; k++) {
		assert_int_equal(spotckpt_save(e, k, NULL, 0, NULL), 0);
		assert_int_equal(spotckpt_wait(e), 0);
	}
	assert_int_equal(spotckpt_save(e, 3, NULL, 0, NULL), 0); /* staged */
	assert_int_equal(spotckpt_wait(e), -ENOSPC);
	assert_non_null(strstr(spotckpt_errmsg(), "shard-00000.safetensors"));
	assert_int_equal(spotckpt_last_error(e, msg, sizeof msg), -ENOSPC);
	assert_non_null(strstr(msg, "step 3"));
	assert_int_equal(spotckpt_stats(e, &s), 0);
	assert_int_equal(s.saves_failed, 1);
	assert_int_equal(s.last_saved_step, 2);
	/* nothing half-written is left, the older ones are intact */
	assert_int_equal(spotckpt_list(dir, ents, 8, &cnt), 0);
	assert_int_equal(cnt, 2);
	assert_int_equal(spotckpt_verify(dir, 1, NULL), 0);
	assert_int_equal(spotckpt_verify(dir, 2, NULL), 0);
	/* training goes on; a smaller state still fits */
	memset(small, 7, sizeof small);
	assert_int_equal(spotckpt_clear(e), 0);
	assert_int_equal(spotckpt_register(e, "w", small, SPOTCKPT_U8, 1, sh2, 0), 0);
	assert_int_equal(spotckpt_save(e, 4, NULL, 0, NULL), 0);
	assert_int_equal(spotckpt_wait(e), 0);
	assert_int_equal(spotckpt_verify(dir, 4, NULL), 0);
	/* save_final on a full disk fails cleanly too */
	assert_int_equal(spotckpt_clear(e), 0);
	assert_int_equal(spotckpt_register(e, "w", big, SPOTCKPT_U8, 1, shape, 0), 0);
	assert_int_equal(spotckpt_save_final(e, 5, NULL, 0, NULL), -ENOSPC);
	assert_int_equal(spotckpt_verify(dir, 4, NULL), 0);
	assert_int_equal(spotckpt_close(e), -ENOSPC);
	sr_log_set_level(SR_LOG_INFO);
	free(dir);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_disk_full, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
