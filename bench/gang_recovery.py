"""gang_recovery_vs_rebuild: how long a 2-node DDP gang is down after a
spot notice on one node, when spotrun keeps the healthy node, against the
same recovery when every node is rebuilt (what SkyPilot does).

Each recovery runs its own spotrund and local cloud (1 s boots, 5 s
notices) with the gang job of `make demo` (examples/demo/gang.yaml,
examples/demo/train_gang.py, small and fast here) plus a 2 s `setup`
standing for a node's own preparation (packages, data), which a kept
node does not repeat.  Once the gang trains:

  kept     one node is interrupted (the local cloud's injected notice):
           the healthy node is kept, only the lost rank gets a new node;
  rebuild  every node is interrupted at once: every rank gets a new node
           (boot, agent, setup), as a rebuilt cluster does.

The time is from the notice (spotrund's event) to training resumed on
all ranks (the last rank's "resumed step=" line of the next attempt).
The runs alternate (kept, rebuild, kept, rebuild) and the figure is the
ratio of the medians.  Goal <= 0.5 on the local cloud.

    /usr/bin/python3 bench/gang_recovery.py [--build DIR] [--runs N] [--json]
"""

import argparse
import importlib.machinery
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "examples", "demo")
DAEMON_OPTS = ["--time-scale", "600", "--notice-ms", "5000",
               "--provision-ms", "1000", "--heartbeat-ms", "250",
               "--tick-ms", "100"]
JOB = """name: gang-recovery-bench
num_nodes: 2
resources:
  accelerators: V100:1
  use_spot: true
setup: sleep 2
run: /usr/bin/python3 train_gang.py
envs:
  DEMO_STEPS: "100000"
  DEMO_HIDDEN: "32"
  DEMO_CKPT_EVERY: "20"
  DEMO_STEP_MS: "25"
spotrun:
  work: 16h
  deadline: 480h
"""


def load(name, path):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def one(gang, build, mode):
    """One recovery in `mode`; returns notice -> resumed seconds."""
    demo = gang.load_demo()
    state = tempfile.mkdtemp(prefix="spotrun-gang-bench-")
    env = dict(os.environ)
    env.update(PATH=os.path.join(build, "bin") + os.pathsep + env["PATH"],
               SPOTRUN_STATE_DIR=state,
               PYTHONPATH=os.path.join(ROOT, "python"),
               SPOTRUN_LIB=os.path.join(build, "lib", "libspotckpt.so"))
    for k in ("SPOTRUN_API", "SPOTRUN_TOKEN"):
        env.pop(k, None)
    jid = None
    try:
        market = gang.make_market(state)
        subprocess.run(["spotrun", "daemon", "start", "--listen",
                        "127.0.0.1:0", "--", "--data-dir", market,
                        *DAEMON_OPTS], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        job = os.path.join(state, "job.yaml")
        with open(job, "w") as f:
            f.write(JOB)
        out = subprocess.run(["spotrun", "launch", "-y", "-d", "--json", job,
                              "--workdir", HERE], env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        jid = json.loads(out)["job"]["id"]
        j = gang.wait_for(env, demo, jid, lambda j: j["state"] == "RUNNING"
                          and len(gang.live(j)) == 2 and
                          (j["step"] or 0) >= 20, 300)
        if j["state"] != "RUNNING":
            raise OSError("the gang did not start: %s" % j["state"])
        os.makedirs(os.path.join(state, "interrupts"))
        victims = [1] if mode == "kept" else [0, 1]
        for r in victims:
            open(os.path.join(state, "interrupts",
                              str(gang.live(j)[r]["id"])), "w").close()
        end = time.monotonic() + 300
        while time.monotonic() < end:
            lines = demo.run_json(env, "logs", str(jid))["lines"]
            res = {ln["rank"]: ts(ln["ts"]) for ln in lines
                   if ln.get("attempt") == 2 and
                   ln.get("line", "").startswith("resumed step=")}
            if len(res) == 2:
                break
            time.sleep(0.3)
        else:
            raise OSError("the gang did not resume")
        events = demo.run_json(env, "events", str(jid))["events"]
        notice = min(ts(e["ts"]) for e in events if e["type"] == "notice")
        after = gang.live(demo.run_json(env, "status", str(jid))["job"])
        kept = sum(after[r]["id"] == gang.live(j)[r]["id"] for r in after)
        if kept != (1 if mode == "kept" else 0):
            raise OSError("%s: %d node(s) kept" % (mode, kept))
        return max(res.values()) - notice
    finally:
        if jid is not None:
            subprocess.run(["spotrun", "cancel", str(jid)], env=env,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            time.sleep(1)
        subprocess.run(["spotrun", "daemon", "stop"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(state, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--runs", type=int, default=2,
                   help="recoveries per mode (default 2)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.runs < 1:
        p.error("--runs must be >= 1")
    gang = load("spotrun_demo_gang", os.path.join(ROOT, "scripts",
                                                  "demo-gang"))
    t = {"kept": [], "rebuild": []}
    for _ in range(args.runs):
        for mode in ("kept", "rebuild"):
            t[mode].append(one(gang, os.path.abspath(args.build), mode))
    k, r = statistics.median(t["kept"]), statistics.median(t["rebuild"])
    if args.json:
        print(json.dumps({"gang_recovery_vs_rebuild": round(k / r, 3),
                          "kept_s": t["kept"], "rebuild_s": t["rebuild"]}))
        return 0
    print("notice -> resumed on all ranks, healthy node kept:  %s s" %
          ", ".join("%.2f" % x for x in t["kept"]))
    print("notice -> resumed on all ranks, every node rebuilt: %s s" %
          ", ".join("%.2f" % x for x in t["rebuild"]))
    print("gang_recovery_vs_rebuild %.2f (medians %.2f / %.2f s; goal <= 0.5)"
          % (k / r, k, r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
