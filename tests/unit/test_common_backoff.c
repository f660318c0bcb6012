/* Unit tests: lib/common/backoff - exponential backoff with equal jitter
 * (never zero, doubling, capped) and the log rate limiter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/backoff.h"

#define MS_NS INT64_C(1000000)

static void test_backoff_doubles_with_jitter_and_cap(void **state)
{
	struct sr_backoff b;
	int64_t now = 1000 * MS_NS;

	(void)state;
	sr_backoff_init(&b, 100 * MS_NS, 2000 * MS_NS);
	assert_true(sr_backoff_ready(&b, now));
	for (int round = 0; round < 200; round++) {
		sr_backoff_ok(&b);
		for (int k = 1; k <= 10; k++) {
			int64_t c = 100 * MS_NS << (k - 1), d;

			if (c > 2000 * MS_NS)
				c = 2000 * MS_NS;
			d = sr_backoff_fail(&b, now);
			assert_int_equal(b.fails, k);
			/* in [c/2, c]: never zero, never past the cap */
			assert_true(d >= c / 2 && d <= c);
			assert_int_equal(b.next_ns, now + d);
			assert_false(sr_backoff_ready(&b, now + d - 1));
			assert_true(sr_backoff_ready(&b, now + d));
		}
	}
	sr_backoff_ok(&b);
	assert_int_equal(b.fails, 0);
	assert_true(sr_backoff_ready(&b, now));
	/* a long outage: the count saturates, the delay stays capped */
	for (int k = 0; k < 1000; k++)
		assert_true(sr_backoff_fail(&b, now) <= 2000 * MS_NS);
}

static void test_backoff_jitter_spreads(void **state)
{
	struct sr_backoff a, b;
	int differ = 0;

	(void)state;
	sr_backoff_init(&a, 1000 * MS_NS, 60000 * MS_NS);
	sr_backoff_init(&b, 1000 * MS_NS, 60000 * MS_NS);
	a.seed = 1;
	b.seed = 2;
	for (int k = 0; k < 5; k++)
		differ += sr_backoff_fail(&a, 0) != sr_backoff_fail(&b, 0);
	assert_true(differ >= 4); /* two agents do not retry in lock-step */
}

static void test_ratelimit(void **state)
{
	struct sr_ratelimit r;
	long held = -1;
	int passed = 0;

	(void)state;
	sr_ratelimit_init(&r, 1000 * MS_NS);
	assert_true(sr_ratelimit_allow(&r, 5 * MS_NS, &held));
	assert_int_equal(held, 0);
	/* 5,000 failures within the second: none logged */
	for (int i = 0; i < 5000; i++)
		passed += sr_ratelimit_allow(&r, 5 * MS_NS + i * 100000, NULL);
	assert_int_equal(passed, 0);
	/* the next one after the interval says how many were held back */
	assert_true(sr_ratelimit_allow(&r, 1006 * MS_NS, &held));
	assert_int_equal(held, 5000);
	assert_false(sr_ratelimit_allow(&r, 1007 * MS_NS, &held));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff_doubles_with_jitter_and_cap),
		cmocka_unit_test(test_backoff_jitter_spreads),
		cmocka_unit_test(test_ratelimit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
