#!/usr/bin/env bash
# gang_arms.sh BUILD - issue 33: a 4-node DDP gang, 512 MiB of state per
# rank, recovering from a spot notice on the local cloud with real-cloud
# timings (data/timing/aws.json, gcp.json: boots of 60-180 s, setup,
# torch import, notice leads of 120 s and 30 s, scaled x24): SkyPilot's
# rebuild (arm 1) against spotrun keeping the healthy nodes (arm 2), with
# an early signal (arm 3: a rebalance recommendation 300 cloud s before
# the notice), a warm spare (arm 4) and training through the notice
# (arm 5), 5 runs
# each, side by side, every arm with a warm start (python3 -m
# spotrun.warm); notice -> training resumed on all ranks and the
# training lost, in cloud seconds with their spread, and where the
# median recovery spent its time (bench/gang_recovery.py --timing).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for t in aws gcp; do
	/usr/bin/python3 "$ROOT/bench/gang_recovery.py" --build "$ROOT/$BUILD" \
		--timing "$t" --nodes 4 --state-mb 512 --runs "${GANG_ARMS_RUNS:-5}"
done
