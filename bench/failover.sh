#!/usr/bin/env bash
# failover.sh [BUILD] - two spotrund on one real PostgreSQL 15, the leader
# killed with -9 $SPOTRUN_FAILOVER_KILLS times (default 20) during a job
# with preemptions (tests/py/test_store_failover.py, docs/store.md), and
# print the takeover times: leader killed -> the other daemon leads.
# Then the failover time to the new leader's first reconciler pass at
# the default lease (5 s) and at 1 s, $BENCH_FAILOVER_KILLS (10) kills
# each (bench/store_failover.py; goal <= 2 x lease).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
cd "$ROOT"
export SPOTRUN_BUILD="$ROOT/$BUILD" SPOTRUN_LIB="$ROOT/$BUILD/lib/libspotckpt.so"
export SPOTRUN_CHECK_MODE=plain SPOTRUN_CHECK_STORE=postgresql
export PATH="$ROOT/$BUILD/bin:$PATH"
export SPOTRUN_FAILOVER_KILLS=${SPOTRUN_FAILOVER_KILLS:-20}
/usr/bin/python3 tests/py/pg_server.py
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 -m pytest -q -s -p no:cacheprovider tests/py/test_store_failover.py \
	| grep -E '^failover:|passed|failed|error'
/usr/bin/python3 bench/store_failover.py
