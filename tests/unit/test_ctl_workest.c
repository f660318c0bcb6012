/* Unit tests: the live loop's bounded work estimator (lib/ctl/workest.c)
 * with an injected clock - the declared work is the basis, CPU noise of
 * +-50 % on the pace cannot swing it, stalls and restores are not timed,
 * its change per policy interval is bounded, and a pace that really
 * differs from the declared one is learned as steps accumulate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/workest.h"

#define MS INT64_C(1000000)

/* The demo job: 1,200 steps of 50 ms at 1,800 cloud s per real s is 30
 * cloud hours, as declared; the policy interval (600 cloud s) is 1/3 s. */
static const struct workest_job demo = {
	.declared_s = 30 * 3600.0, .total_steps = 1200, .scale = 1800,
	.interval_ns = 600 * INT64_C(1000000000) / 1800,
};

/* Deterministic jitter in [-1, 1). */
static double jit(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*s >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

static void test_declared_is_the_basis(void **state)
{
	struct workest w = { 0 };

	(void)state;
	assert_true(workest_total(&w, &demo) == demo.declared_s);
	/* the first report of an attempt only anchors the window */
	assert_int_equal(workest_sample(&w, &demo, 1, 0, 1000 * MS), 0);
	assert_true(workest_total(&w, &demo) == demo.declared_s);
}

/* Reports every 200 ms; each step takes 50 ms +-50 % (uniform); the
 * estimate never leaves [0.8, 1.25] x the declared work, for any seed. */
static void test_jitter_cannot_swing_it(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct workest w = { 0 };
		uint64_t s = seed;
		int64_t t = 0, next = 0, step = 0;
		double lo = INFINITY, hi = 0;

		while (step < demo.total_steps) {
			t += (int64_t)(50 * MS * (1.0 + 0.5 * jit(&s)));
			step++;
			if (t >= next) {
				double est;

				workest_sample(&w, &demo, 1, step, t);
				est = workest_total(&w, &demo);
				lo = fmin(lo, est);
				hi = fmax(hi, est);
				next = t + 200 * MS;
			}
		}
		assert_true(lo >= 0.8 * demo.declared_s);
		assert_true(hi <= 1.25 * demo.declared_s);
	}
}

/* A workload 10x slower than declared: the estimate moves toward the
 * measured work, by at most WORKEST_RATE per interval, and ends within
 * 25 % of it. */
static void test_real_pace_is_learned_at_a_bounded_rate(void **state)
{
	struct workest w = { 0 };
	int64_t t = 0;
	double prev = demo.declared_s, prev_t = 0;

	(void)state;
	for (int64_t step = 0; step <= demo.total_steps; step += 4) {
		double est;

		workest_sample(&w, &demo, 1, step, t);
		est = workest_total(&w, &demo);
		if (est != prev) {
			double intervals = (double)(t - prev_t) /
					   (double)demo.interval_ns;
			double bound = pow(WORKEST_RATE, fmax(1.0, intervals)) * 1.0001;

			assert_true(est / prev <= bound && prev / est <= bound);
			prev = est;
			prev_t = (double)t;
		}
		t += 4 * 500 * MS; /* 500 ms a step */
	}
	assert_true(prev >= 0.75 * 10 * demo.declared_s);
	assert_true(prev <= 10 * demo.declared_s);
}

/* A long stall (a checkpoint, a suspended workload) and the restore of a
 * new attempt are pauses: the pace does not count them. */
static void test_pauses_are_excluded(void **state)
{
	struct workest w = { 0 };
	int64_t t = 0, step = 0;
	double pace;

	(void)state;
	for (; step < 300; step += 4, t += 200 * MS)
		workest_sample(&w, &demo, 1, step, t);
	pace = w.pace_ns;
	assert_true(fabs(pace - 50 * MS) < 2 * MS);
	/* 60 s without a step, reported every 200 ms, then on at 50 ms */
	for (int k = 0; k < 300; k++, t += 200 * MS)
		workest_sample(&w, &demo, 1, step, t);
	for (int k = 0; k < 20; k++, step += 4, t += 200 * MS)
		workest_sample(&w, &demo, 1, step, t);
	assert_true(fabs(w.pace_ns - pace) < 0.1 * pace);
	/* attempt 2 restores step 200 after 30 s of start-up */
	t += 30000 * MS;
	step = 200;
	for (int k = 0; k < 20; k++, step += 4, t += 200 * MS)
		workest_sample(&w, &demo, 2, step, t);
	assert_true(fabs(w.pace_ns - pace) < 0.1 * pace);
	assert_true(fabs(workest_total(&w, &demo) - demo.declared_s) <
		    0.1 * demo.declared_s);
}

/* The restart overhead rises at once to a slower restart and decays
 * slowly toward faster ones. */
static void test_restart_estimate(void **state)
{
	double est = 0;

	(void)state;
	est = workest_restart(est, 7200);
	assert_true(est == 7200);
	est = workest_restart(est, 20000);
	assert_true(est == 20000);
	est = workest_restart(est, 10000);
	assert_true(est < 20000 && est > 10000);
	assert_true(fabs(est - (20000 - WORKEST_RESTART_DECAY * 10000)) < 1e-6);
	assert_true(workest_restart(est, 0) == est);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_declared_is_the_basis),
		cmocka_unit_test(test_jitter_cannot_swing_it),
		cmocka_unit_test(test_real_pace_is_learned_at_a_bounded_rate),
		cmocka_unit_test(test_pauses_are_excluded),
		cmocka_unit_test(test_restart_estimate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
