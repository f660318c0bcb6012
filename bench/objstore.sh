#!/usr/bin/env bash
# bench/objstore.sh BUILD - the tier-3 ratios of `spotrun ckpt bench
# --remote` against s3rver on loopback (bench/objstore.py; size with
# OBJSTORE_BENCH_SIZE, default 256M).  Skipped when node or the npm test
# servers are missing (scripts/install-npm).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v node >/dev/null ||
	[[ ! -d $ROOT/tests/objstore/node_modules/@20minutes/s3rver ]]; then
	echo "bench/objstore.sh: skipped: node or s3rver not installed (scripts/install-npm)"
	exit 0
fi
exec /usr/bin/python3 "$ROOT/bench/objstore.py" --build "$ROOT/$BUILD" \
	--size "${OBJSTORE_BENCH_SIZE:-256M}"
