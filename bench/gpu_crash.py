#!/usr/bin/python3
"""kill -9 trials of a training process whose state lives on the GPU.

    /usr/bin/python3 bench/gpu_crash.py --device cuda --trials 20 --dir D
    /usr/bin/python3 bench/gpu_crash.py --device cpu --trials 3 --dir D

Each trial starts a child interpreter (this file, --child) that keeps a
state of --state-mb MiB on the device, in tensors of mixed sizes, and at
every step adds 1 to every element on the device and calls
Checkpointer.save(step, state) (keep=2: the copy to host RAM, then the
disk in the background, older steps deleted).  The parent kills it with
SIGKILL at a random moment (uniform in --kill-after, after the child's
first save), then, in its own process, restores the newest checkpoint
into fresh tensors on the device and checks:

  - restore() returns a step the child had started to save (<= the last
    step it printed + 1) and >= 1 once one save had been waited for;
  - every tensor equals its initial value + that step, bit for bit, and
    is on the device;
  - `spotrun ckpt verify` passes on every step left in the directory.

The child's initial values are exact in float32 (integers < 2^24), so the
expected state of step k is known without the child.  Prints one JSON
object; exit status 0 when every trial passed, 1 otherwise.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

SIZES = (8 << 20, 1 << 20, 64 << 10, 4 << 10)  # bytes per tensor, cycled


def initial(torch, nbytes, device):
    """The state at step 0: tensor i holds (j % 4096) + 8192 * (i % 64)."""
    out, i, left = {}, 0, nbytes
    while left > 0:
        n = min(SIZES[i % len(SIZES)], left) // 4
        t = torch.arange(n, dtype=torch.float32, device=device)
        t.remainder_(4096).add_(8192 * (i % 64))
        out["t%04d" % i] = t
        left -= n * 4
        i += 1
    return out


def child(a):
    import torch
    import spotrun
    state = initial(torch, a.state_mb << 20, a.device)
    step = 0
    with spotrun.Checkpointer(a.dir, keep=2) as ck:
        ck.save(0, state)
        ck.wait()
        print("ready", flush=True)
        while True:
            step += 1
            for t in state.values():
                t.add_(1)
            print("step", step, flush=True)
            ck.save(step, state)


def trial(torch, spotrun, a, k, rng):
    d = os.path.join(a.dir, "trial-%03d" % k)
    shutil.rmtree(d, ignore_errors=True)
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--child",
         "--device", a.device, "--dir", d, "--state-mb", str(a.state_mb)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        return {"trial": k, "passed": False,
                "error": "child did not start: %r %s" % (
                    line, proc.stderr.read()[-800:])}
    lo, hi = a.kill_after
    time.sleep(rng.uniform(lo, hi))
    os.kill(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate()
    printed = [int(x.split()[1]) for x in out.splitlines()
               if x.startswith("step ")]
    last = printed[-1] if printed else 0
    want = initial(torch, a.state_mb << 20, a.device)
    fresh = {name: torch.zeros_like(t) for name, t in want.items()}
    got = spotrun.restore(d, fresh)
    res = {"trial": k, "last_step_printed": last, "restored_step": got}
    bad = []
    if got is None or got > last:
        bad.append("restored step %r, last printed %d" % (got, last))
    else:
        for name, t in want.items():
            if fresh[name].device.type != a.device:
                bad.append("%s on %s" % (name, fresh[name].device))
            elif not torch.equal(fresh[name], t.add_(got)):
                bad.append("%s differs from step %d" % (name, got))
                if len(bad) > 5:
                    break
    steps = []
    for e in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if e.startswith("step-") and not e.endswith(".tmp"):
            steps.append(e)
    for e in steps:
        s = e[len("step-"):].lstrip("0") or "0"
        if not s.isdigit():
            continue
        v = subprocess.run([a.spotrun, "ckpt", "verify", d, "--step", s],
                           capture_output=True, text=True)
        if v.returncode != 0:
            bad.append("ckpt verify --step %s: %s" % (s, v.stdout[-300:]))
    res.update({"steps_left": steps, "passed": not bad, "problems": bad})
    shutil.rmtree(d, ignore_errors=True)
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cuda", "cpu"), required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--state-mb", type=int, default=256)
    p.add_argument("--kill-after", default="0.05,2.0",
                   help="LO,HI seconds after the child's first save")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--spotrun", default="spotrun",
                   help="the CLI used for `ckpt verify`")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    try:
        a.kill_after = tuple(float(x) for x in a.kill_after.split(","))
        if len(a.kill_after) != 2 or not 0 <= a.kill_after[0] <= \
                a.kill_after[1]:
            raise ValueError
    except ValueError:
        p.error("--kill-after: want LO,HI seconds with 0 <= LO <= HI")
    if a.child:
        return child(a)
    if not os.path.isdir(a.dir):
        p.error("--dir %s is not a directory" % a.dir)
    import torch
    import spotrun
    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: this torch sees no CUDA device")
    rng = random.Random(a.seed)
    trials = [trial(torch, spotrun, a, k, rng) for k in range(a.trials)]
    ok = all(t["passed"] for t in trials)
    print(json.dumps({"device": a.device, "state_mb": a.state_mb,
                      "trials": len(trials),
                      "passed": sum(t["passed"] for t in trials),
                      "restored_steps": [t.get("restored_step")
                                         for t in trials],
                      "steps_verified": sum(len(t.get("steps_left", ()))
                                            for t in trials),
                      "failures": [t for t in trials if not t["passed"]]},
                     indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
