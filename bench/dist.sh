#!/usr/bin/env bash
# dist.sh BUILD - distributed training (docs/distributed.md):
# dist_stall_vs_memcpy, the per-rank stall of a DistCheckpointer save
# against a memcpy of that rank's bytes, measured side by side (also with
# tier 3 on: --remote, s3rver); and
# gang_recovery_vs_rebuild, a 2-node DDP gang's notice -> resumed with the
# healthy node kept against the whole cluster rebuilt as SkyPilot does it,
# and against a rebuild with spotrun's notice handling, alternating runs.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
/usr/bin/python3 "$ROOT/bench/dist_stall.py"
/usr/bin/python3 "$ROOT/bench/dist_stall.py" --remote
/usr/bin/python3 "$ROOT/bench/gang_recovery.py" --build "$ROOT/$BUILD"
