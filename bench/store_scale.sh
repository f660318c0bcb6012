#!/usr/bin/env bash
# store_scale.sh [BUILD] - 10,000 simulated nodes in 2,000 active jobs
# heartbeating through spotrund's API, on SQLite and on a real PostgreSQL
# 15, in one run: heartbeat p50/p99, reconciler pass time, and the
# PostgreSQL/SQLite heartbeat p99 ratio (goal <= 2).  bench/store_scale.py
# says more.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exec /usr/bin/python3 "$ROOT/bench/store_scale.py" "${1:-build}"
