/*
 * test_agent_stepstat.c - the workload's steps per second, the idle
 * signal where no GPU utilisation is known (lib/agent/stepstat.h): a start
 * (the first step, a restore) is not progress, a step within the window
 * is, a stall past it is idle, and slow steps widen the window.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/stepstat.h"
#include "finops/policy.h"

#define S INT64_C(1000000000)

_Static_assert(STEPSTAT_IDLE_S == FINOPS_IDLE_PROGRESS_S,
	       "the agent's window is the rule spotrun prints");

static void test_progress_then_stall(void **state)
{
	struct stepstat s;

	(void)state;
	stepstat_reset(&s);
	assert_true(stepstat_rate(&s, -1, 1 * S) < 0);   /* nothing reported */
	assert_true(stepstat_rate(&s, 100, 2 * S) < 0);  /* a start (restored) */
	assert_true(stepstat_rate(&s, 100, 3 * S) < 0);  /* no advance yet */
	/* 10 steps in 2 s */
	assert_true(stepstat_rate(&s, 110, 4 * S) == 5.0);
	/* no new step, still within the window: the same rate */
	assert_true(stepstat_rate(&s, 110, 30 * S) == 5.0);
	assert_true(stepstat_rate(&s, -1, 30 * S) == 5.0); /* step unknown now */
	/* a stall past STEPSTAT_IDLE_S: idle */
	assert_true(stepstat_rate(&s, 110, 4 * S + STEPSTAT_IDLE_NS + 1) == 0);
	/* training again */
	assert_true(stepstat_rate(&s, 111, 70 * S) > 0);
	/* a new attempt restores an older step: a start again */
	assert_true(stepstat_rate(&s, 50, 71 * S) < 0);
}

static void test_slow_steps_widen_the_window(void **state)
{
	struct stepstat s;

	(void)state;
	stepstat_reset(&s);
	stepstat_rate(&s, 0, 0);
	/* one step every 100 s: busy for 3 x 100 s after each */
	assert_true(stepstat_rate(&s, 1, 100 * S) == 0.01);
	assert_true(stepstat_rate(&s, 1, 350 * S) == 0.01);
	assert_true(stepstat_rate(&s, 1, 401 * S) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_progress_then_stall),
		cmocka_unit_test(test_slow_steps_widen_the_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
