#!/usr/bin/env bash
# bench/gpu.sh [BUILD] - the checkpoint engine on an NVIDIA GPU, in one run
# of a few minutes, run as is on the first machine that has one:
#
#   bash bench/gpu.sh            # writes build/gpu-bench.json
#
#  1. builds (make build);
#  2. finds the GPU (nvidia-smi) and a CUDA-enabled torch under
#     /usr/bin/python3, and points libspotckpt at the libcudart that torch
#     itself loaded, so both use one CUDA runtime;
#  3. bench/gpu_bench.py with CUDA tensors of 1 GiB and 8 GiB:
#     stall_vs_d2h_memcpy (goal <= 1.10), stall_vs_torch_save, restore;
#  4. the training overhead of a checkpoint every 30 s (a 16-layer model
#     with Adam, 3 GiB of state, in gpu_bench.py), the bit-exact resume
#     test on CUDA tensors (in gpu_bench.py), the CUDA unit test against
#     the real runtime, and 20 kill -9 trials of a process saving CUDA
#     state every step (bench/gpu_crash.py: whole steps restored only);
#  5. the striped tier-2 write where the machine has several NVMe drives
#     (issue 29): spotrun ckpt bench --only saves with --dir once per
#     drive (bench/stripe_dirs.sh chooses them), write_vs_raw against a
#     raw write striped over the same drives; skipped, with the reason in
#     the JSON, on a machine with fewer than two (GPU or not);
#  6. writes one JSON file ($GPU_BENCH_OUT, default BUILD/gpu-bench.json).
#
# Without a GPU (or without a CUDA-enabled torch) it says so on the first
# line, then runs the same script on CPU tensors at 64 MiB and the CUDA
# path against the fake runtime (build/tests/test_ckpt_cuda), so `make
# bench` keeps it working; the JSON then has "gpu": null and the reason.
# Environment: GPU_BENCH_SIZES (1G,8G), GPU_BENCH_DIR (a directory on the
# disk to checkpoint to; default BUILD), GPU_BENCH_OUT,
# GPU_BENCH_STRIPE_DIRS (a:b:c, the directories to stripe over instead of
# one per NVMe drive), GPU_BENCH_STRIPE_SIZE (the striped state, 4G),
# GPU_BENCH_PYTHON (the interpreter whose torch has CUDA; default
# /usr/bin/python3), GPU_BENCH_PREBUILT=1 (use BUILD as it is: for a GPU
# machine without the -dev libraries, with BUILD copied from a build host).
set -uo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${GPU_BENCH_OUT:-$ROOT/$BUILD/gpu-bench.json}
PY=${GPU_BENCH_PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d "${GPU_BENCH_DIR:-$ROOT/$BUILD}/gpu-bench.XXXXXX") || exit 1
swork=() # the striped bench's directories, one per drive
trap 'rm -rf "$WORK" "${swork[@]}"' EXIT

if [[ ${GPU_BENCH_PREBUILT:-0} == 1 ]]; then
	for f in lib/libspotckpt.so bin/spotrun; do
		[[ -e $ROOT/$BUILD/$f ]] || {
			echo "gpu.sh: GPU_BENCH_PREBUILT=1 but $BUILD/$f is missing" >&2
			exit 1; }
	done
else
	make -s -j"$(nproc)" BUILD="$BUILD" build >"$WORK/build.log" 2>&1 || {
		tail -30 "$WORK/build.log"; echo "gpu.sh: build failed" >&2
		exit 1; }
fi
export SPOTRUN_LIB="$ROOT/$BUILD/lib/libspotckpt.so" PYTHONPATH="$ROOT/python"

reason=""
if ! command -v nvidia-smi >/dev/null 2>&1; then
	reason="no NVIDIA GPU found: nvidia-smi is not installed"
elif ! gpus=$(nvidia-smi -L 2>&1) || [[ -z $gpus ]]; then
	reason="no NVIDIA GPU found: nvidia-smi -L says: ${gpus:-nothing}"
elif ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	reason="GPU present ($gpus) but $PY's torch has no CUDA (Debian's python3-torch is CPU-only; install a CUDA build of torch)"
fi

if [[ -z $reason ]]; then
	# the libcudart torch loaded, so that the engine and torch share it
	cudart=$("$PY" - <<'EOF'
import torch
torch.zeros(1, device="cuda")
for line in open("/proc/self/maps"):
    p = line.split()[-1]
    if "libcudart" in p:
        print(p)
        break
EOF
)
	[[ -n $cudart ]] && export SPOTCKPT_CUDART=$cudart
	echo "gpu.sh: GPU: $gpus; libcudart: ${cudart:-default search}"
	sizes=${GPU_BENCH_SIZES:-1G,8G}
	"$PY" bench/gpu_bench.py --device cuda --sizes "$sizes" --dir "$WORK" \
		--overhead-layers "${GPU_BENCH_OVERHEAD_LAYERS:-16}" \
		--overhead-steps 60 >"$WORK/bench.json" 2>"$WORK/bench.err"
	brc=$?
	"$PY" bench/gpu_crash.py --device cuda --dir "$WORK" \
		--trials "${GPU_BENCH_CRASH_TRIALS:-20}" \
		--spotrun "$ROOT/$BUILD/bin/spotrun" >"$WORK/crash.json" \
		2>"$WORK/crash.err"
	crc=$?
	SPOTRUN_BUILD="$ROOT/$BUILD" SPOTRUN_CHECK_MODE=plain \
		PATH="$ROOT/$BUILD/bin:$PATH" timeout 120 \
		"$PY" -m pytest -q -p no:cacheprovider \
		tests/py/test_state.py -k cuda >"$WORK/pytest.log" 2>&1
	trc=$?
	unit="tests/py/test_state.py -k cuda (real runtime)"
else
	echo "gpu.sh: $reason"
	echo "gpu.sh: CPU-only fallback: the same script on CPU tensors, and the CUDA path against the fake runtime"
	"$PY" bench/gpu_bench.py --device cpu --sizes 64M --dir "$WORK" \
		--overhead-layers 2 --overhead-width 512 --overhead-steps 5 \
		>"$WORK/bench.json" 2>"$WORK/bench.err"
	brc=$?
	"$PY" bench/gpu_crash.py --device cpu --dir "$WORK" --trials 2 \
		--state-mb 32 --spotrun "$ROOT/$BUILD/bin/spotrun" \
		>"$WORK/crash.json" 2>"$WORK/crash.err"
	crc=$?
	"$ROOT/$BUILD/tests/test_ckpt_cuda" >"$WORK/pytest.log" 2>&1
	trc=$?
	unit="$BUILD/tests/test_ckpt_cuda (fake runtime)"
fi

# the striped write, where there are drives to stripe over
sdirs=$(bash bench/stripe_dirs.sh 2>"$WORK/stripe.why")
grc=$?
sreason=$(cat "$WORK/stripe.why")
if ((grc == 0)) && [[ -n $sdirs ]]; then
	sargs=()
	while read -r d; do
		w=$(mktemp -d "$d/spotrun-stripe.XXXXXX") || { grc=1; break; }
		swork+=("$w")
		sargs+=(--dir "$w")
	done <<<"$sdirs"
	if ((grc == 0)); then
		echo "gpu.sh: striped write over: $(echo $sdirs)"
		"$ROOT/$BUILD/bin/spotrun" ckpt bench \
			--size "${GPU_BENCH_STRIPE_SIZE:-4G}" "${sargs[@]}" \
			--only saves --json --no-progress \
			>"$WORK/stripe.json" 2>"$WORK/stripe.err"
		grc=$?
		sreason=$(tail -5 "$WORK/stripe.err")
	fi
	rm -rf "${swork[@]}"
	swork=()
fi

[[ -s $WORK/bench.json ]] || echo '{}' >"$WORK/bench.json"
"$PY" - "$WORK/bench.json" "$OUT" "$reason" "$brc" "$trc" "$unit" \
	"$WORK/bench.err" "$WORK/stripe.json" "$grc" "$sreason" \
	"$WORK/crash.json" "$crc" <<'EOF'
import json, os, sys
src, out, reason, brc, trc, unit, errf, sfile, grc, sreason = sys.argv[1:11]
cfile, crc = sys.argv[11:13]
try:
    crash = json.load(open(cfile))
except (OSError, ValueError):
    crash = {"error": "bench/gpu_crash.py printed no result"}
try:
    stripe = json.load(open(sfile)) if os.path.exists(sfile) else None
except ValueError:
    stripe = None
if stripe and grc == "0":
    striped = {"dirs": stripe.get("machine", {}).get("dirs"),
               "write_vs_raw": stripe.get("write_vs_raw"),
               "load": {k: stripe.get("machine", {}).get(k)
                        for k in ("loadavg_start", "loadavg_end", "cpus")}}
elif grc == "0":
    striped = {"skipped": sreason or "no directories to stripe over"}
else:
    striped = {"error": sreason or "spotrun ckpt bench failed"}
try:
    bench = json.load(open(src))
except ValueError:
    bench = {}
doc = {"gpu": None if reason else bench.get("gpu"),
       "no_gpu_reason": reason or None,
       "bench": bench, "bench_exit": int(brc),
       "cuda_unit_test": {"what": unit, "passed": trc == "0"},
       "striped_write": striped, "kill9_trials": crash}
if brc != "0":
    doc["bench_stderr"] = open(errf).read()[-2000:]
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=2)
import os
os.replace(tmp, out)
for label, r in bench.get("sizes", {}).items():
    if "stall_vs_d2h_memcpy" in r:
        print("  %-8s stall_vs_d2h_memcpy %.3f (goal <= 1.10)  "
              "stall_vs_torch_save %.4f  restore %.2f GB/s" % (
                  label, r["stall_vs_d2h_memcpy"]["ratio"],
                  r["stall_vs_torch_save"]["ratio"], r["restore_gbps"]))
    else:
        print("  %-8s %s" % (label, r.get("skipped") or r.get("error")))
rb = bench.get("resume_bit_exact", {})
print("  resume bit-exact on %s: %s" % (rb.get("device", "?"),
                                        "passed" if rb.get("passed")
                                        else "FAILED %s" % rb))
print("  %s: %s" % (unit, "passed" if trc == "0" else "FAILED"))
ov = bench.get("train_overhead", {})
if "per_30s_interval" in ov:
    print("  training overhead of a checkpoint per 30 s: %.3f%% (goal < 1%%; "
          "%.2f GiB state, stall %.3f s, step %.4f s clean / %.4f s during "
          "the %.2f s write)" % (
              100 * ov["per_30s_interval"], ov["state_bytes"] / 2**30,
              ov["stall_s"], ov["step_s_clean"], ov["step_s_during_write"],
              ov["write_s"]))
else:
    print("  training overhead: %s" % (ov.get("error") or "not measured"))
print("  kill -9 trials on %s: %s of %s passed, restored steps %s" % (
    crash.get("device", "?"), crash.get("passed", 0), crash.get("trials", "?"),
    crash.get("restored_steps", crash.get("error"))))
wr = striped.get("write_vs_raw")
if wr:
    print("  striped write over %d directories: write_vs_raw %.3f (goal >= "
          "0.90), engine %.2f GB/s, raw striped %.2f GB/s" % (
              len(striped["dirs"] or []), wr["ratio"], wr["write_gbps"],
              wr["raw_write_gbps"]))
else:
    print("  striped write: %s" % (striped.get("skipped") and
                                   "skipped: " + striped["skipped"] or
                                   "FAILED: " + str(striped.get("error"))))
print("gpu.sh: wrote %s" % out)
EOF
if [[ $brc != 0 || $trc != 0 || $grc != 0 || $crc != 0 ]]; then
	tail -n 20 "$WORK/bench.err" "$WORK/pytest.log" "$WORK/crash.err" >&2
	exit 1
fi
exit 0
