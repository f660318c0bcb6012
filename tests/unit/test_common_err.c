/* Unit tests: lib/common/err.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "common/err.h"

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(sr_strerror(0), "success");
	assert_string_equal(sr_strerror(-SR_EPARSE), "malformed input");
	assert_string_equal(sr_strerror(-SR_ETIMEOUT), "timed out");
	assert_string_equal(sr_strerror(-ENOENT), "No such file or directory");
	assert_non_null(sr_strerror(-SR_E_LAST));
	assert_non_null(sr_strerror(-99999));
	assert_non_null(sr_strerror(5));
	for (int c = SR_E_BASE + 1; c < SR_E_LAST; c++)
		assert_true(strlen(sr_strerror(-c)) > 0);
}

static void test_set_and_prefix(void **state)
{
	struct sr_err e;

	(void)state;
	sr_err_clear(&e);
	assert_int_equal(e.code, 0);
	assert_string_equal(e.msg, "");
	assert_int_equal(sr_err_set(&e, -EINVAL, "%d: %s: expected NAME:COUNT",
				    12, "resources.accelerators"), -EINVAL);
	assert_int_equal(sr_err_prefix(&e, "%s", "job.yaml"), -EINVAL);
	assert_string_equal(e.msg, "job.yaml: 12: resources.accelerators: expected NAME:COUNT");
	assert_string_equal(sr_err_str(&e, -EINVAL), e.msg);
	sr_err_clear(&e);
	assert_string_equal(sr_err_str(&e, -SR_ENOTFOUND), "not found");
	assert_string_equal(sr_err_str(NULL, -SR_ENOTFOUND), "not found");
}

static void test_null_safe_and_truncation(void **state)
{
	struct sr_err e;
	char big[2000];

	(void)state;
	assert_int_equal(sr_err_set(NULL, -EIO, "x"), -EIO);
	assert_int_equal(sr_err_prefix(NULL, "x"), 0);
	sr_err_clear(NULL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sr_err_set(&e, -EIO, "%s", big);
	assert_int_equal(strlen(e.msg), SR_ERR_MSG_MAX - 1);
	sr_err_prefix(&e, "%s", big);
	assert_int_equal(strlen(e.msg), SR_ERR_MSG_MAX - 1);
	/* prefix with no message uses the code's words */
	sr_err_clear(&e);
	e.code = -SR_ECORRUPT;
	sr_err_prefix(&e, "ckpt.bin");
	assert_string_equal(e.msg, "ckpt.bin: corrupt file or object");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_set_and_prefix),
		cmocka_unit_test(test_null_safe_and_truncation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
