/*
 * check_size.h - how big a pure-computation test runs in each pass of
 * `make check` (scripts/run-tests sets $SPOTRUN_CHECK_MODE).
 *
 * A sweep of the simulator or the planner checks the same figures in
 * every pass; the sanitizers only add memory and race checks, which a
 * few cells exercise as well as all of them, at 3x (ASan) to 10x (TSan)
 * the CPU.  So the plain pass runs the full size and the sanitizer passes
 * a reduced one (docs/README.md "How it is tested" lists them).
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

#endif
