#!/usr/bin/env bash
# policy_folds.sh [BUILD] - spotrun on the bundled traces in-sample and on
# held-out folds (issue 27): every real trace set at the four settings,
# once with spotrun's shipped prior (fitted on every bundled trace) and
# once with the prior fitted on the other trace sets only
# (scripts/sim-policy-table --folds; docs/notes/policies.md).  Goal: on
# every held-out fold spotrun's mean cost <= 1.02 x the better of up's and
# ups's (--goal: exit 1 if not).  $POLICY_FOLDS_WINDOWS windows per set and setting (default 40;
# the tables of docs/notes/policies.md use 100).  Deterministic.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
cd "$ROOT"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exec scripts/sim-policy-table --spotrun "$BUILD/bin/spotrun" --sets real --folds --goal \
	--windows "${POLICY_FOLDS_WINDOWS:-40}" --jobs 2
