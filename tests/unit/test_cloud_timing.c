/* Unit tests: lib/cloud/timing.c (real-cloud timing profiles). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cloud/timing.h"

#define GOOD "{\"name\":\"t\",\"notice_s\":120,\"boot_s\":{\"min\":60," \
	     "\"mode\":90,\"max\":180},\"setup_s\":90,\"import_s\":20}"

static void bad(const char *text, const char *needle)
{
	struct cloud_timing t;
	struct sr_err e = { 0 };

	assert_int_equal(cloud_timing_parse(text, strlen(text), "p.json", &t, &e),
			 -EINVAL);
	if (!strstr(e.msg, needle))
		fail_msg("'%s': message '%s' lacks '%s'", text, e.msg, needle);
	assert_non_null(strstr(e.msg, "p.json"));
	assert_int_equal(t.name[0], 0);
}

static void test_parse(void **state)
{
	struct cloud_timing t;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(cloud_timing_parse(GOOD, strlen(GOOD), "p", &t, &e), 0);
	assert_string_equal(t.name, "t");
	assert_true(t.notice_s == 120 && t.boot_min_s == 60 &&
		    t.boot_mode_s == 90 && t.boot_max_s == 180 &&
		    t.setup_s == 90 && t.import_s == 20);
	assert_true(cloud_timing_boot_mean_s(&t) == 110);
	bad("[1]", "expected a JSON object");
	bad("{", "p.json:1");
	bad("{\"notice_s\":1}", "name");
	bad("{\"name\":\"t\",\"notice_s\":0,\"boot_s\":{\"min\":1,\"mode\":1,"
	    "\"max\":1},\"setup_s\":0,\"import_s\":0}", "notice_s");
	bad("{\"name\":\"t\",\"notice_s\":1,\"setup_s\":0,\"import_s\":0}",
	    "boot_s");
	bad("{\"name\":\"t\",\"notice_s\":1,\"boot_s\":{\"min\":1,\"max\":1},"
	    "\"setup_s\":0,\"import_s\":0}", "boot_s.mode");
	bad("{\"name\":\"t\",\"notice_s\":1,\"boot_s\":{\"min\":5,\"mode\":2,"
	    "\"max\":9},\"setup_s\":0,\"import_s\":0}", "min <= mode <= max");
	bad("{\"name\":\"t\",\"notice_s\":1,\"boot_s\":{\"min\":1,\"mode\":1,"
	    "\"max\":1},\"setup_s\":-1,\"import_s\":0}", "setup_s");
	bad("{\"name\":\"t\",\"notice_s\":1,\"boot_s\":{\"min\":1,\"mode\":1,"
	    "\"max\":1},\"setup_s\":1}", "import_s");
}

/* Draws stay in [min, max], repeat for a key, and follow the triangle:
 * the share below the mode is (mode - min) / (max - min) = 1/4. */
static void test_draws(void **state)
{
	struct cloud_timing t;
	struct sr_err e = { 0 };
	int below = 0, n = 20000;
	double sum = 0;

	(void)state;
	assert_int_equal(cloud_timing_parse(GOOD, strlen(GOOD), "p", &t, &e), 0);
	for (int i = 0; i < n; i++) {
		double b = cloud_timing_boot_s(&t, (uint64_t)i);

		assert_true(b >= 60 && b <= 180);
		assert_true(b == cloud_timing_boot_s(&t, (uint64_t)i));
		below += b < 90;
		sum += b;
	}
	assert_true(below > n / 4 - n / 50 && below < n / 4 + n / 50);
	assert_true(sum / n > 108 && sum / n < 112);
	t.boot_min_s = t.boot_mode_s = t.boot_max_s = 7;
	assert_true(cloud_timing_boot_s(&t, 42) == 7);
}

/* The bundled profiles load, by name from the data dir. */
static void test_bundled(void **state)
{
	static const char *const names[] = { "aws", "gcp", "azure" };
	struct cloud_timing t;
	struct sr_err e = { 0 };

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cloud_timing_load("data", names[i], &t, &e), 0);
		assert_string_equal(t.name, names[i]);
	}
	assert_true(t.notice_s == 30);
	assert_int_equal(cloud_timing_load("data", "nope", &t, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "data/timing/nope.json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_draws),
		cmocka_unit_test(test_bundled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
