/* Unit tests: lib/common/timeutil.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "common/timeutil.h"

static int64_t parse_ok(const char *s)
{
	int64_t ns = -1;
	struct sr_err e = { 0 };

	assert_int_equal(sr_time_parse_rfc3339(s, &ns, &e), 0);
	return ns;
}

static void parse_bad(const char *s, const char *needle)
{
	int64_t ns = 42;
	struct sr_err e = { 0 };

	assert_true(sr_time_parse_rfc3339(s, &ns, &e) < 0);
	assert_int_equal(ns, 42);
	assert_non_null(strstr(e.msg, needle));
}

static void test_clocks(void **state)
{
	int64_t a = sr_time_mono_ns(), b = sr_time_mono_ns();

	(void)state;
	assert_true(b >= a);
	/* after 2020-01-01 */
	assert_true(sr_time_real_ns() > INT64_C(1577836800) * SR_NS_PER_SEC);
}

static void test_rfc3339_parse(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(parse_ok("2026-11-29T14:14:28Z"),
			 INT64_C(1795961668) * SR_NS_PER_SEC);
	assert_int_equal(parse_ok("2026-11-29t14:14:28z"),
			 INT64_C(1795961668) * SR_NS_PER_SEC);
	assert_int_equal(parse_ok("2026-11-29T15:14:28.5+01:00"),
			 INT64_C(1795961668) * SR_NS_PER_SEC + 500000000);
	assert_int_equal(parse_ok("2026-11-29T09:44:28-04:30"),
			 INT64_C(1795961668) * SR_NS_PER_SEC);
	assert_int_equal(parse_ok("1969-12-31T23:59:59.999999999Z"), -1);
	assert_int_equal(parse_ok("2000-02-29T00:00:00.1234567891Z"),
			 INT64_C(951782400) * SR_NS_PER_SEC + 123456789);
}

static void test_rfc3339_bad(void **state)
{
	(void)state;
	parse_bad("", "expected");
	parse_bad("2026-11-29", "expected");
	parse_bad("2026-11-29T14:14:28", "time zone");
	parse_bad("2026-11-29 14:14:28Z", "expected");
	parse_bad("2026-13-01T00:00:00Z", "out of range");
	parse_bad("2026-02-29T00:00:00Z", "out of range");
	parse_bad("1900-02-29T00:00:00Z", "out of range");
	parse_bad("2026-11-31T00:00:00Z", "out of range");
	parse_bad("2026-11-29T24:00:00Z", "out of range");
	parse_bad("2026-11-29T14:60:00Z", "out of range");
	parse_bad("2026-11-29T14:14:60Z", "out of range");
	parse_bad("2026-11-29T14:14:28.Z", "expected");
	parse_bad("2026-11-29T14:14:28+0100", "expected");
	parse_bad("2026-11-29T14:14:28+24:00", "out of range");
	parse_bad("2026-11-29T14:14:28Zjunk", "trailing");
	parse_bad("2026-1-29T14:14:28Z", "expected");
	parse_bad("9999-12-31T23:59:59Z", "range");
	parse_bad("1000-01-01T00:00:00Z", "range");
	assert_true(sr_time_parse_rfc3339(NULL, &(int64_t){ 0 }, NULL) < 0);
}

static int64_t at(const char *s)
{
	int64_t ns = 0;

	assert_int_equal(sr_time_parse_rfc3339(s, &ns, NULL), 0);
	return ns;
}

/* Month starts for the ledger's and FOCUS's monthly splits (no timegm). */
static void test_month_start(void **state)
{
	(void)state;
	assert_int_equal(sr_time_month_start(at("2026-11-29T14:14:28.5Z"), 0),
			 at("2026-11-01T00:00:00Z"));
	assert_int_equal(sr_time_month_start(at("2026-12-31T23:59:59.999Z"), 1),
			 at("2027-01-01T00:00:00Z"));
	assert_int_equal(sr_time_month_start(at("2024-01-31T00:00:00Z"), 1),
			 at("2024-02-01T00:00:00Z"));
	assert_int_equal(sr_time_month_start(at("2024-03-01T00:00:00Z"), -1),
			 at("2024-02-01T00:00:00Z"));
	assert_int_equal(sr_time_month_start(at("2026-05-01T00:00:00Z"), 25),
			 at("2028-06-01T00:00:00Z"));
	assert_int_equal(sr_time_month_start(-1, 0), at("1969-12-01T00:00:00Z"));
	assert_int_equal(sr_time_month_start(-1, 1), 0);
}

/* The looser forms data files write, by flag only. */
static void test_parse_flags(void **state)
{
	struct sr_err e = { 0 };
	int64_t ns = 0;

	(void)state;
	assert_int_equal(sr_time_parse("2026-11-29 14:14:28Z", SR_TIME_SPACE, &ns, &e), 0);
	assert_int_equal(ns, INT64_C(1795961668) * SR_NS_PER_SEC);
	assert_int_equal(sr_time_parse("2026-11-29T14:14:28.5", SR_TIME_UTC, &ns, &e), 0);
	assert_int_equal(ns, INT64_C(1795961668) * SR_NS_PER_SEC + 500000000);
	assert_int_equal(sr_time_parse("2026-11-29 15:14:28+01:00",
				       SR_TIME_SPACE | SR_TIME_UTC, &ns, &e), 0);
	assert_int_equal(ns, INT64_C(1795961668) * SR_NS_PER_SEC);
	assert_true(sr_time_parse("2026-11-29 14:14:28", SR_TIME_UTC, &ns, &e) < 0);
	assert_true(sr_time_parse("2026-11-29T14:14:28", SR_TIME_SPACE, &ns, &e) < 0);
	assert_non_null(strstr(e.msg, "time zone"));
	assert_true(sr_time_parse("2026-11-29  14:14:28", SR_TIME_SPACE | SR_TIME_UTC,
				  &ns, &e) < 0);
}

/* Dates alone, as bills write them: that day's midnight UTC; only with
 * their flag, and whole (the sscanf these replaced took "2026-11-29x"
 * and "1/2/20261" as dates). */
static void test_dates(void **state)
{
	const int64_t day = INT64_C(1795910400) * SR_NS_PER_SEC; /* 2026-11-29 */
	const unsigned both = SR_TIME_DATE | SR_TIME_US_DATE;
	struct sr_err e = { 0 };
	int64_t ns = 0;

	(void)state;
	assert_int_equal(sr_time_parse("2026-11-29", SR_TIME_DATE, &ns, &e), 0);
	assert_int_equal(ns, day);
	assert_int_equal(sr_time_parse("11/29/2026", SR_TIME_US_DATE, &ns, &e), 0);
	assert_int_equal(ns, day);
	assert_int_equal(sr_time_parse("3/1/2024", SR_TIME_US_DATE, &ns, &e), 0);
	assert_int_equal(ns, INT64_C(1709251200) * SR_NS_PER_SEC);
	assert_int_equal(sr_time_parse("02/29/2024", both, &ns, &e), 0);
	/* the full forms still parse with the flags */
	assert_int_equal(sr_time_parse("2026-11-29T14:14:28Z", both, &ns, &e), 0);
	assert_int_equal(ns, INT64_C(1795961668) * SR_NS_PER_SEC);
	/* not without the flag */
	assert_true(sr_time_parse("2026-11-29", 0, &ns, &e) < 0);
	assert_true(sr_time_parse("11/29/2026", SR_TIME_DATE, &ns, &e) < 0);
	/* trailing characters, wrong widths, out of range */
	assert_true(sr_time_parse("2026-11-29x", both, &ns, &e) < 0);
	assert_true(sr_time_parse("1/2/20261", both, &ns, &e) < 0);
	assert_non_null(strstr(e.msg, "MM/DD/YYYY"));
	assert_true(sr_time_parse("123/1/2026", both, &ns, &e) < 0);
	assert_true(sr_time_parse("1/2/26", both, &ns, &e) < 0);
	assert_true(sr_time_parse("11/29/2026 10:00", both, &ns, &e) < 0);
	assert_true(sr_time_parse("02/29/2023", both, &ns, &e) < 0);
	assert_non_null(strstr(e.msg, "out of range"));
	assert_true(sr_time_parse("13/01/2026", both, &ns, &e) < 0);
	assert_true(sr_time_parse("2026-02-30", both, &ns, &e) < 0);
	assert_true(sr_time_parse("//", both, &ns, &e) < 0);
}

static void test_rfc3339_format(void **state)
{
	char buf[64];
	int64_t t = INT64_C(1795961668) * SR_NS_PER_SEC + 123456789;

	(void)state;
	assert_int_equal(sr_time_format_rfc3339(t, 0, buf, sizeof(buf)), 20);
	assert_string_equal(buf, "2026-11-29T14:14:28Z");
	sr_time_format_rfc3339(t, 3, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T14:14:28.123Z");
	sr_time_format_rfc3339(t, 6, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T14:14:28.123456Z");
	sr_time_format_rfc3339(t, 9, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T14:14:28.123456789Z");
	sr_time_format_rfc3339(-1, 9, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31T23:59:59.999999999Z");
	assert_int_equal(sr_time_format_rfc3339(t, 2, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(sr_time_format_rfc3339(t, 0, buf, 20), -ENOSPC);
	/* round trip over extremes and leap days */
	{
		const int64_t v[] = { 0, t, -t, INT64_MAX, INT64_MIN,
				      INT64_C(951782400) * SR_NS_PER_SEC };
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			int64_t back;

			sr_time_format_rfc3339(v[i], 9, buf, sizeof(buf));
			assert_int_equal(sr_time_parse_rfc3339(buf, &back, NULL), 0);
			assert_int_equal(back, v[i]);
		}
	}
}

static int64_t dur_ok(const char *s)
{
	int64_t ns = -1;
	struct sr_err e = { 0 };

	assert_int_equal(sr_dur_parse(s, &ns, &e), 0);
	return ns;
}

static void dur_bad(const char *s, int code, const char *needle)
{
	int64_t ns = 42;
	struct sr_err e = { 0 };

	assert_int_equal(sr_dur_parse(s, &ns, &e), code);
	assert_int_equal(ns, 42);
	assert_non_null(strstr(e.msg, needle));
}

static void test_dur_parse(void **state)
{
	(void)state;
	assert_int_equal(dur_ok("90s"), 90 * SR_NS_PER_SEC);
	assert_int_equal(dur_ok("2h"), 7200 * SR_NS_PER_SEC);
	assert_int_equal(dur_ok("1d"), 86400 * SR_NS_PER_SEC);
	assert_int_equal(dur_ok("1h30m"), 5400 * SR_NS_PER_SEC);
	assert_int_equal(dur_ok("500ms"), 500000000);
	assert_int_equal(dur_ok("1.5h"), 5400 * SR_NS_PER_SEC);
	assert_int_equal(dur_ok("0"), 0);
	assert_int_equal(dur_ok("0s"), 0);
	assert_int_equal(dur_ok("7ns"), 7);
	assert_int_equal(dur_ok("3us"), 3000);
	assert_int_equal(dur_ok("1m1ms"), 60 * SR_NS_PER_SEC + 1000000);
	assert_int_equal(dur_ok("0.000000001s"), 1);
}

static void test_dur_bad(void **state)
{
	(void)state;
	dur_bad("", -SR_EPARSE, "empty");
	dur_bad("90", -SR_EPARSE, "missing unit");
	dur_bad("-5s", -SR_EPARSE, "negative");
	dur_bad("5x", -SR_EPARSE, "unknown unit");
	dur_bad("5 s", -SR_EPARSE, "unknown unit");
	dur_bad("h", -SR_EPARSE, "expected a number");
	dur_bad("1.h", -SR_EPARSE, "after '.'");
	dur_bad(".5h", -SR_EPARSE, "expected a number");
	dur_bad("1h30", -SR_EPARSE, "missing unit");
	dur_bad("1hh", -SR_EPARSE, "unknown unit");
	dur_bad("5mx", -SR_EPARSE, "unknown unit");
	dur_bad("200000d", -ERANGE, "too large");
	dur_bad("99999999999999999999s", -ERANGE, "too large");
	assert_true(sr_dur_parse(NULL, &(int64_t){ 0 }, NULL) < 0);
}

static void test_dur_format(void **state)
{
	char buf[64];
	const int64_t v[] = { 1, 999, 1000000, 90 * SR_NS_PER_SEC,
			      86400 * SR_NS_PER_SEC + 1, INT64_MAX };

	(void)state;
	sr_dur_format(90 * SR_NS_PER_SEC, buf, sizeof(buf));
	assert_string_equal(buf, "1m30s");
	sr_dur_format(7200 * SR_NS_PER_SEC, buf, sizeof(buf));
	assert_string_equal(buf, "2h");
	sr_dur_format(86400 * SR_NS_PER_SEC, buf, sizeof(buf));
	assert_string_equal(buf, "1d");
	assert_int_equal(sr_dur_format(250000000, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "250ms");
	sr_dur_format(0, buf, sizeof(buf));
	assert_string_equal(buf, "0s");
	sr_dur_format(-1500000000, buf, sizeof(buf));
	assert_string_equal(buf, "-1s500ms");
	assert_int_equal(sr_dur_format(7200 * SR_NS_PER_SEC, buf, 2), -ENOSPC);
	assert_int_equal(sr_dur_format(0, buf, 2), -ENOSPC);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int64_t back;

		assert_true(sr_dur_format(v[i], buf, sizeof(buf)) > 0);
		assert_int_equal(sr_dur_parse(buf, &back, NULL), 0);
		assert_int_equal(back, v[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clocks),
		cmocka_unit_test(test_rfc3339_parse),
		cmocka_unit_test(test_rfc3339_bad),
		cmocka_unit_test(test_parse_flags),
		cmocka_unit_test(test_month_start),
		cmocka_unit_test(test_rfc3339_format),
		cmocka_unit_test(test_dates),
		cmocka_unit_test(test_dur_parse),
		cmocka_unit_test(test_dur_bad),
		cmocka_unit_test(test_dur_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
