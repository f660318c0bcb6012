#!/usr/bin/env bash
# sim_sweeps.sh [BUILD] - the simulator test sweeps at their full size
# (issue 27): make check runs a small fixed-seed sweep of each, and this
# runs the same tests with the same assertions on more of it
# (SPOTRUN_CHECK_MODE=full, tests/unit/check_size.h's sweep_size):
# test_sim_policy's offline-optimum bound and no-miss check on 12 windows
# of every bundled trace set and setting (make check: 4), 40 random
# markets (12) and every look-ahead cut (4 of 7).  Deterministic (fixed
# seeds); exits non-zero if any assertion fails.  Not a benchmark: it
# prints the tests' results and its wall and CPU seconds.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
cd "$ROOT" || exit 1
bin=$BUILD/tests/test_sim_policy
if [[ ! -x $bin ]]; then
	echo "sim_sweeps: $bin is missing (make build)" >&2
	exit 1
fi
TIMEFORMAT="  test_sim_policy (full): %R s wall, %U s user, %S s sys"
time SPOTRUN_CHECK_MODE=full CMOCKA_MESSAGE_OUTPUT=stdout "$bin"
