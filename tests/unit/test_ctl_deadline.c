/* Unit tests: a job's deadline verdict (lib/ctl/deadline.c) - met,
 * missed (while it runs, or by ending late), at risk with the projected
 * finish, and not met for a job that ended undone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "ctl/deadline.h"

static struct ctl_deadline eval(struct ctl_deadline_in in)
{
	struct ctl_deadline d;

	ctl_deadline_eval(&in, &d);
	return d;
}

static void test_verdicts(void **state)
{
	/* 10 h of work due 20 h after a start at cloud second 1000 */
	struct ctl_deadline_in in = { .now_s = 1000 + 3600, .start_s = 1000,
				      .deadline_s = 20 * 3600, .work_total_s = 36000,
				      .work_done_s = 3600, .restart_s = 600,
				      .running = true };
	struct ctl_deadline d;

	(void)state;
	d = eval(in);
	assert_int_equal(d.state, CTL_DEADLINE_ON_TRACK);
	assert_true(fabs(d.projected_s - (1000 + 3600 + 32400)) < 1e-6);
	/* 19 h in, 9 h of work left: projected 9 h past */
	in.now_s = 1000 + 19 * 3600;
	d = eval(in);
	assert_int_equal(d.state, CTL_DEADLINE_AT_RISK);
	assert_true(d.projected_s > 1000 + 20 * 3600);
	/* not running: the restart is part of the projection */
	in.now_s = 1000 + 3600;
	in.work_done_s = 36000 - 19 * 3600 + 300; /* 18h55m left at 1 h */
	in.running = false;
	assert_int_equal(eval(in).state, CTL_DEADLINE_AT_RISK);
	in.running = true;
	assert_int_equal(eval(in).state, CTL_DEADLINE_ON_TRACK);
	/* the clock passed the deadline with the job not done: missed */
	in.now_s = 1000 + 21 * 3600;
	d = eval(in);
	assert_int_equal(d.state, CTL_DEADLINE_MISSED);
	assert_true(fabs(d.late_s - 3600) < 1e-6);
	/* ended: SUCCEEDED in time is met, late is missed, FAILED in time
	 * is not met (never "met") */
	in.ended = true;
	in.succeeded = true;
	assert_int_equal(eval(in).state, CTL_DEADLINE_MISSED);
	in.now_s = 1000 + 19 * 3600;
	assert_int_equal(eval(in).state, CTL_DEADLINE_MET);
	assert_true(eval(in).late_s == 0);
	in.succeeded = false;
	assert_int_equal(eval(in).state, CTL_DEADLINE_NOT_MET);
	/* no deadline: nothing to say */
	in.deadline_s = INFINITY;
	assert_int_equal(eval(in).state, CTL_DEADLINE_NONE);
	in.deadline_s = NAN;
	assert_int_equal(eval(in).state, CTL_DEADLINE_NONE);
	assert_null(ctl_deadline_name(CTL_DEADLINE_NONE));
	assert_string_equal(ctl_deadline_name(CTL_DEADLINE_MISSED), "missed");
}

static void test_work_done(void **state)
{
	(void)state;
	/* steps known: their share */
	assert_true(fabs(ctl_deadline_work_done(1000, 25, 100, 999) - 250) < 1e-9);
	assert_true(fabs(ctl_deadline_work_done(1000, 200, 100, 0) - 1000) < 1e-9);
	/* not known: time run, never all of the work */
	assert_true(fabs(ctl_deadline_work_done(1000, -1, -1, 300) - 300) < 1e-9);
	assert_true(fabs(ctl_deadline_work_done(1000, 50, -1, 5000) - 990) < 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_work_done),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
