#!/usr/bin/env bash
# dist.sh BUILD - multi-rank checkpoints (docs/distributed.md):
# dist_stall_vs_memcpy, the per-rank stall of a DistCheckpointer save
# against a memcpy of that rank's bytes, measured side by side.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 "$ROOT/bench/dist_stall.py"
