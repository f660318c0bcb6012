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
The phases on the way: the final checkpoint, the replacement asked of
the cloud, the gang stopped, the next attempt started, then for the
last rank of that attempt its agent's "started setup" / "setup ended" /
"started run" lines and train_gang.py's "joining the rendezvous"
(interpreter and imports done) and "rendezvous joined" lines.
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


PHASES = ("final_ckpt", "replacement_created", "gang_stopped",
          "attempt_started", "setup_started", "setup_done", "run_started",
          "imports_done", "rendezvous_joined", "resumed")
# the next attempt's lines that mark a rank's way back (agent lines, then
# train_gang.py's own); each phase is the last rank's time
RANK_LINES = (("setup_started", "started setup of attempt"),
              ("setup_done", "setup ended"),
              ("run_started", "started run of attempt"),
              ("imports_done", "joining the rendezvous"),
              ("rendezvous_joined", "rendezvous joined"))


def phases(notice, events, lines, job, before, resumed):
    """Seconds from the notice to each phase of the recovery (the first
    time it happened; `resumed` is the last rank's)."""
    def first(ev_type):
        t = [ts(e["ts"]) for e in events if e["type"] == ev_type and
             ts(e["ts"]) >= notice]
        return min(t) - notice if t else None
    final = [ts(ln["ts"]) for ln in lines if ln.get("attempt") == 1 and
             ln.get("line", "").startswith("preempted: final checkpoint")]
    new = [ts(n["created_at"]) for n in job["nodes"] if n["id"] not in before]
    ranks = {}
    for name, prefix in RANK_LINES:
        t = {}
        for ln in lines:
            if ln.get("attempt") == 2 and \
                    ln.get("line", "").startswith(prefix):
                t.setdefault(ln["rank"], ts(ln["ts"]))
        ranks[name] = max(t.values()) - notice if t else None
    return dict(ranks, **{
        # every rank wrote its final checkpoint (the last rank's line)
        "final_ckpt": max(final) - notice if final else None,
        # the first replacement node was asked of the cloud
        "replacement_created": min(new) - notice if new else None,
        # every rank of the attempt exited; the noticed nodes are let go
        "gang_stopped": first("preempted"),
        # every rank has a READY node: the next attempt starts
        "attempt_started": first("recovered"),
        # every rank restored and met its peers: training resumed
        "resumed": max(resumed.values()) - notice,
    })


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
        job = demo.run_json(env, "status", str(jid))["job"]
        after = gang.live(job)
        before = {n["id"] for n in gang.live(j).values()}
        kept = sum(after[r]["id"] == gang.live(j)[r]["id"] for r in after)
        if kept != (1 if mode == "kept" else 0):
            raise OSError("%s: %d node(s) kept" % (mode, kept))
        return phases(notice, events, lines, job, before, res)
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
    ph = {"kept": [], "rebuild": []}
    for _ in range(args.runs):
        for mode in ("kept", "rebuild"):
            ph[mode].append(one(gang, os.path.abspath(args.build), mode))
    t = {m: [x["resumed"] for x in v] for m, v in ph.items()}
    k, r = statistics.median(t["kept"]), statistics.median(t["rebuild"])
    if args.json:
        print(json.dumps({"gang_recovery_vs_rebuild": round(k / r, 3),
                          "kept_s": t["kept"], "rebuild_s": t["rebuild"],
                          "phases_s": ph}))
        return 0
    print("seconds after the notice (median of each phase):")
    print("  %-20s %8s %8s" % ("phase", "kept", "rebuild"))
    for name in PHASES:
        row = []
        for mode in ("kept", "rebuild"):
            v = [x[name] for x in ph[mode] if x[name] is not None]
            row.append("%8.2f" % statistics.median(v) if v else "%8s" % "-")
        print("  %-20s %s" % (name, " ".join(row)))
    print("notice -> resumed on all ranks, healthy node kept:  %s s" %
          ", ".join("%.2f" % x for x in t["kept"]))
    print("notice -> resumed on all ranks, every node rebuilt: %s s" %
          ", ".join("%.2f" % x for x in t["rebuild"]))
    print("gang_recovery_vs_rebuild %.2f (medians %.2f / %.2f s; goal <= 0.5)"
          % (k / r, k, r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
