/*
 * check_size.h - how big a pure-computation test runs in each pass of
 * `make check` (scripts/run-tests sets $SPOTRUN_CHECK_MODE).
 *
 * A sweep of the simulator or the planner checks the same figures in
 * every pass; the sanitizers only add memory and race checks, which a
 * few cells exercise as well as all of them, at 3x (ASan) to 10x (TSan)
 * the CPU.  So the plain pass runs the full size and the sanitizer passes
 * a reduced one (docs/README.md "How it is tested" lists them).
 *
 * The simulator's sweeps have a fourth size, sweep_size()'s "full": make
 * check runs a small fixed-seed sweep with a fixed window count (issue
 * 27: its result is deterministic, and each assertion is still met on
 * every trace set and setting), and `make bench` (bench/sim_sweeps.sh)
 * runs the same tests with SPOTRUN_CHECK_MODE=full, at the sizes make
 * check ran before session 18.
 */
#ifndef SPOTRUN_TESTS_CHECK_SIZE_H
#define SPOTRUN_TESTS_CHECK_SIZE_H

#include <stdlib.h>
#include <string.h>

/* plain (or no mode: a test run by hand), asan or tsan's size. */
static inline int check_size(int plain, int asan, int tsan)
{
	const char *mode = getenv("SPOTRUN_CHECK_MODE");

	if (mode && !strcmp(mode, "asan"))
		return asan;
	if (mode && !strcmp(mode, "tsan"))
		return tsan;
	return plain;
}

/* full (SPOTRUN_CHECK_MODE=full: make bench), plain, asan or tsan's size */
static inline int sweep_size(int full, int plain, int asan, int tsan)
{
	const char *mode = getenv("SPOTRUN_CHECK_MODE");

	if (mode && !strcmp(mode, "full"))
		return full;
	return check_size(plain, asan, tsan);
}

#endif
