#!/usr/bin/env bash
# bench/dirsync.sh BUILD - a bucket mount with a checkpoint directory that
# torch.save wrote (issue 30; bench/dirsync.py): sync_upload_vs_raw,
# sync_stall_pct, notice_to_durable_s against s3rver on loopback (size
# with DIRSYNC_BENCH_SIZE, default 1G).  Skipped when node, the npm test
# servers or PyTorch (/usr/bin/python3) are missing.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v node >/dev/null ||
	[[ ! -d $ROOT/tests/objstore/node_modules/@20minutes/s3rver ]]; then
	echo "bench/dirsync.sh: skipped: node or s3rver not installed (scripts/install-npm)"
	exit 0
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "bench/dirsync.sh: skipped: PyTorch not importable by /usr/bin/python3 (scripts/install-deps)"
	exit 0
fi
exec /usr/bin/python3 "$ROOT/bench/dirsync.py" --build "$ROOT/$BUILD" \
	--size "${DIRSYNC_BENCH_SIZE:-1G}"
