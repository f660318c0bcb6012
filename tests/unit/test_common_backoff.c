/* Unit tests: lib/common/backoff - exponential backoff with equal jitter
 * (never zero, doubling, capped), the log rate limiter and the AIMD pacer
 * (free until throttled, one halving per burst, back to free above max,
 * and at about the rate a token bucket it cannot see grants). */
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

static void test_pacer_states(void **state)
{
	struct sr_pacer p;
	int64_t t = 1000 * MS_NS;
	int went = 0;

	(void)state;
	sr_pacer_init(&p, 2, 0.5, 10, 0.25);
	/* free until the peer throttles: any number of calls at once */
	for (int i = 0; i < 1000; i++)
		went += sr_pacer_take(&p, t);
	assert_int_equal(went, 1000);
	/* the first throttle: `start` calls a second, none at once */
	sr_pacer_throttled(&p, t);
	assert_true(p.rate == 2);
	assert_false(sr_pacer_take(&p, t));
	assert_false(sr_pacer_take(&p, t + 499 * MS_NS));
	assert_true(sr_pacer_take(&p, t + 500 * MS_NS));
	assert_false(sr_pacer_take(&p, t + 501 * MS_NS));
	/* more refusals of the same burst (within a second): no more cuts */
	for (int i = 1; i <= 9; i++)
		sr_pacer_throttled(&p, t + i * 100 * MS_NS);
	assert_true(p.rate == 2);
	/* a throttle a second later halves it, down to min and no lower */
	sr_pacer_throttled(&p, t + 1000 * MS_NS);
	assert_true(p.rate == 1);
	sr_pacer_throttled(&p, t + 2000 * MS_NS);
	assert_true(p.rate == 0.5);
	sr_pacer_throttled(&p, t + 3000 * MS_NS);
	assert_true(p.rate == 0.5);
	/* an idle pacer does not save up a burst: at most 1 + rate tokens */
	t += 3600 * 1000 * MS_NS;
	went = 0;
	for (int i = 0; i < 10; i++)
		went += sr_pacer_take(&p, t);
	assert_int_equal(went, 1);
	/* successes add `step` each; past max the pacer is free again */
	for (int i = 0; i < 38; i++)
		sr_pacer_ok(&p);
	assert_true(p.rate == 10);
	sr_pacer_ok(&p);
	assert_true(p.rate == 0);
	went = 0;
	for (int i = 0; i < 100; i++)
		went += sr_pacer_take(&p, t);
	assert_int_equal(went, 100);
	/* and a new throttle starts over at `start` */
	sr_pacer_throttled(&p, t + 5000 * MS_NS);
	assert_true(p.rate == 2);
}

/* A peer with a token bucket of 5 refilling at 2 a second (hidden from the
 * pacer) and a caller that wants a call every 10 ms for ten simulated
 * minutes: the pacer's calls settle near what the bucket grants, and most
 * of them go through (a caller that ignored the refusals would see 98% of
 * its calls refused). */
static void test_pacer_follows_a_hidden_bucket(void **state)
{
	struct sr_pacer p;
	double bucket = 5, fill = 2;
	int64_t at = 0;
	long sent = 0, ok = 0;

	(void)state;
	sr_pacer_init(&p, 2, 0.05, 10, 0.25);
	for (int64_t t = 10 * MS_NS; t <= 600000 * MS_NS; t += 10 * MS_NS) {
		bucket += fill * (double)(t - at) / 1e9;
		if (bucket > 5)
			bucket = 5;
		at = t;
		if (!sr_pacer_take(&p, t))
			continue;
		sent++;
		if (bucket >= 1) {
			bucket -= 1;
			ok++;
			sr_pacer_ok(&p);
		} else {
			sr_pacer_throttled(&p, t);
		}
	}
	print_message("pacer: sent %ld, granted %ld (the bucket grants at most"
		      " %d)\n", sent, ok, 5 + 2 * 600);
	/* nearly all the bucket grants is used ... */
	assert_true(ok >= (5 + 2 * 600) * 8 / 10);
	/* ... and refusals stay a minority of what was sent */
	assert_true(sent - ok <= sent / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff_doubles_with_jitter_and_cap),
		cmocka_unit_test(test_backoff_jitter_spreads),
		cmocka_unit_test(test_ratelimit),
		cmocka_unit_test(test_pacer_states),
		cmocka_unit_test(test_pacer_follows_a_hidden_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
