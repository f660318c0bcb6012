#!/usr/bin/env bash
# failover.sh BUILD - spot failover of a 1 GiB training state, end to end:
# spotrund + local cloud + spotrun-agent + the checkpoint binding.  Prints
# the time from the preemption notice until the final checkpoint is
# durable and until training resumes on the replacement node, and each
# against a peer measured in the same run (raw write/read of the same
# bytes in the same directory).  BENCH_BYTES overrides the state size.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 "$ROOT/bench/failover.py" --build "$ROOT/$BUILD"
