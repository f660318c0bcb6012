#!/usr/bin/env bash
# bench/ckpt.sh BUILD - the checkpoint engine benchmark at a size that
# suits `make bench` (default 512M; override with CKPT_BENCH_SIZE, the
# directory with CKPT_BENCH_DIR, the training-loop length with
# CKPT_BENCH_TRAIN_SECONDS: 8 pairs of segments share it).  Prints the
# table of ratios; the full-size
# run for the README is:
#   spotrun ckpt bench --size 1G --dir /var/tmp --json
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZE=${CKPT_BENCH_SIZE:-512M}
DIR=${CKPT_BENCH_DIR:-${TMPDIR:-$ROOT/$BUILD}}
TRAIN=${CKPT_BENCH_TRAIN_SECONDS:-48}
mkdir -p "$DIR"
cd "$ROOT"
echo "spotrun ckpt bench --size $SIZE --dir $DIR --train-seconds $TRAIN"
exec "$ROOT/$BUILD/bin/spotrun" ckpt bench --size "$SIZE" --dir "$DIR" \
	--train-seconds "$TRAIN"
