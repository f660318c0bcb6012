#!/usr/bin/env bash
# aws_ec2.sh [BUILD] - what one running job costs in DescribeInstances,
# over a full minute against an EC2 emulator that logs every request
# (tests/py/test_aws_soak.py::test_describe_budget; goal <= 30 a minute;
# it was 553 when every reconciler pass listed).  The count is set by
# the listing period (providers.aws.describe_interval, 5 s), not by load.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
cd "$ROOT"
export SPOTRUN_BUILD="$ROOT/$BUILD" SPOTRUN_LIB="$ROOT/$BUILD/lib/libspotckpt.so"
export SPOTRUN_CHECK_MODE=plain PATH="$ROOT/$BUILD/bin:$PATH"
SPOTRUN_AWS_BUDGET_S=60 /usr/bin/python3 -m pytest -q -s -p no:cacheprovider \
	tests/py/test_aws_soak.py -k describe_budget | grep -E '^describe budget|passed|failed|error'
