/* Unit tests: lib/common/money.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "common/money.h"
#include "common/timeutil.h"

static void ok(const char *s, sr_micros want)
{
	sr_micros m = -777;
	struct sr_err e = { 0 };

	assert_int_equal(sr_money_parse(s, &m, &e), 0);
	assert_int_equal(m, want);
}

static void bad(const char *s, int code, const char *needle)
{
	sr_micros m = -777;
	struct sr_err e = { 0 };

	assert_int_equal(sr_money_parse(s, &m, &e), code);
	assert_int_equal(m, -777); /* untouched on failure */
	assert_non_null(strstr(e.msg, needle));
}

static void test_parse(void **state)
{
	(void)state;
	ok("$12.345678", 12345678);
	ok("12.34", 12340000);
	ok("-$0.5", -500000);
	ok("$1,234.50", 1234500000);
	ok("1,234,567", INT64_C(1234567000000));
	ok("0", 0);
	ok("$0.000001", 1);
	ok("-0.000001", -1);
	ok("9223372036854.775807", INT64_MAX);
	ok("-9223372036854.775808", INT64_MIN);
}

static void test_parse_bad(void **state)
{
	(void)state;
	bad("", -SR_EPARSE, "empty");
	bad("$", -SR_EPARSE, "expected digits");
	bad("-", -SR_EPARSE, "expected digits");
	bad("abc", -SR_EPARSE, "expected digits");
	bad("$1.2345678", -SR_EPARSE, "more than 6 decimals");
	bad("1.", -SR_EPARSE, "after '.'");
	bad(".5", -SR_EPARSE, "expected digits");
	bad("1,23", -SR_EPARSE, "','");
	bad("1234,567", -SR_EPARSE, "','");
	bad(",123", -SR_EPARSE, "expected digits");
	bad("1,,234", -SR_EPARSE, "','");
	bad("12.3x", -SR_EPARSE, "unexpected character");
	bad(" 1", -SR_EPARSE, "expected digits");
	bad("1 ", -SR_EPARSE, "unexpected character");
	bad("$-1", -SR_EPARSE, "expected digits");
	bad("9223372036854.775808", -ERANGE, "out of range");
	bad("99999999999999999999999", -ERANGE, "out of range");
}

static void test_format(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(sr_money_format(12345678, buf, sizeof(buf)), 10);
	assert_string_equal(buf, "$12.345678");
	sr_money_format(-500000, buf, sizeof(buf));
	assert_string_equal(buf, "-$0.500000");
	sr_money_format(0, buf, sizeof(buf));
	assert_string_equal(buf, "$0.000000");
	sr_money_format(INT64_MIN, buf, sizeof(buf));
	assert_string_equal(buf, "-$9223372036854.775808");
	assert_int_equal(sr_money_format(12345678, buf, 10), -ENOSPC);
	assert_int_equal(sr_money_format(12345678, buf, 11), 10);
}

static void test_roundtrip(void **state)
{
	const sr_micros v[] = { 0, 1, -1, 999999, 1000000, -123456789012, INT64_MAX, INT64_MIN };
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sr_micros back;

		assert_true(sr_money_format(v[i], buf, sizeof(buf)) > 0);
		assert_int_equal(sr_money_parse(buf, &back, NULL), 0);
		assert_int_equal(back, v[i]);
	}
}

static void test_usd_and_cost(void **state)
{
	(void)state;
	assert_int_equal(sr_money_from_usd(0.1), 100000);
	assert_int_equal(sr_money_from_usd(3.06), 3060000);
	assert_int_equal(sr_money_from_usd(-2.5000005), -2500001);
	assert_int_equal(sr_money_from_usd(1e30), INT64_MAX);
	assert_int_equal(sr_money_from_usd(-1e30), INT64_MIN);
	assert_int_equal(sr_money_from_usd(0.0 / 0.0), 0);
	assert_true(sr_money_to_usd(1500000) == 1.5);

	/* $3.00/h for 1 h, 30 min, 1 s */
	assert_int_equal(sr_money_cost(3000000, 3600 * SR_NS_PER_SEC), 3000000);
	assert_int_equal(sr_money_cost(3000000, 1800 * SR_NS_PER_SEC), 1500000);
	assert_int_equal(sr_money_cost(3600000, SR_NS_PER_SEC), 1000);
	/* rounding half away from zero: $1/h for 1.8 ms = 0.5 micros */
	assert_int_equal(sr_money_cost(1000000, 1800000), 1);
	assert_int_equal(sr_money_cost(-1000000, 1800000), -1);
	assert_int_equal(sr_money_cost(1000000, 1799999), 0);
	/* saturation */
	assert_int_equal(sr_money_cost(INT64_MAX, INT64_MAX), INT64_MAX);
	assert_int_equal(sr_money_cost(INT64_MIN, INT64_MAX), INT64_MIN);
}

static void test_hours(void **state)
{
	(void)state;
	/* a planned duration in hours: nearest micro, saturated */
	assert_int_equal(sr_money_hours(2.0, 3000000), 6000000);
	assert_int_equal(sr_money_hours(0.5, 3), 2);         /* 1.5 -> 2 */
	assert_int_equal(sr_money_hours(1.0 / 3.0, 3000000), 1000000);
	assert_int_equal(sr_money_hours(0.0, 3000000), 0);
	assert_int_equal(sr_money_hours(1e12, INT64_MAX / 2), INT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_usd_and_cost),
		cmocka_unit_test(test_hours),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
