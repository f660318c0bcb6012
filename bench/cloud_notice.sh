#!/usr/bin/env bash
# cloud_notice.sh [BUILD] - notice -> agent acts and notice -> final
# checkpoint durable, per cloud (GCE metadata hanging GET, EC2 IMDS poll,
# Azure Scheduled Events poll), through each cloud's driver, agent and
# C emulator (spotrun gce-emulator, ec2-emulator, azure-emulator)
# (bench/cloud_notice.py; BENCH_NOTICE_ROUNDS rounds each, 3).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
cd "$ROOT"
export SPOTRUN_BUILD="$ROOT/$BUILD" SPOTRUN_LIB="$ROOT/$BUILD/lib/libspotckpt.so"
export PATH="$ROOT/$BUILD/bin:$PATH" SPOTRUN_LOG_LEVEL=warn
exec /usr/bin/python3 bench/cloud_notice.py
