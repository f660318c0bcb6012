"""gang_recovery_vs_rebuild: how long a 2-node DDP gang takes to recover
from a spot notice on one node when spotrun keeps the healthy node,
against the same preemption when the whole cluster is rebuilt, as
SkyPilot's managed jobs do it (skypilot#3907).

Each recovery runs its own spotrund and local cloud (1 s boots, 5 s
notices) with the gang job of `make demo` (examples/demo/train_gang.py,
small and fast here) plus a 2 s `setup` standing for a node's own
preparation (packages, data), which a kept node does not repeat.  The
checkpoints go to a directory standing for a bucket
(spotrun.checkpoint.uri file:///tmp/..., tier 3): each node keeps
its tier 2 on its own disk, a new node restores from the bucket.  Once
the gang trains, one of three recoveries:

  kept       spotrun: one node gets the local cloud's injected notice;
             every rank takes its final checkpoint for one step, the
             healthy node is kept, only the lost rank gets a new node
             (placed at the notice), both ranks meet on a fresh
             rendezvous and restore.
  rebuild    the whole cluster rebuilt, as SkyPilot's managed jobs do
             it by default (strategy EAGER_NEXT_REGION), emulated by
             this bench on the same local cloud, spotrund and job
             (FAILOVER, the other strategy, first relaunches under the
             same name in the same region, reusing live nodes per
             skypilot#1774; the default is modelled):
             1. the notice changes nothing: SkyPilot's jobs controller
                does not watch the clouds' notices (an open request,
                skypilot#5371; #5041 for passing the signal on), so the
                notice is not delivered and the gang trains on;
             2. at the notice's deadline (5 s) the cloud takes the node:
                this bench SIGKILLs every process of that instance's
                session, as the local cloud's reclaim does - no final
                checkpoint;
             3. the loss is seen at the controller's next check: it
                polls its job every JOB_STATUS_CHECK_GAP_SECONDS (15 s
                in sky/jobs/utils.py, 20 s in earlier releases) and, for
                a multi-node job, asks the cloud whether the cluster is
                still UP; scaled as the bench scales the notice lead
                (5 s for AWS's 120 s) that is every 0.625 s (--poll-s),
                at a phase drawn at random for each run (--seed), as a
                notice comes at no particular point of the controller's
                loop;
             4. the cluster is torn down (recovery_strategy.py,
                EagerFailoverStrategyExecutor.recover: terminate the
                cluster, then launch a new one): `spotrun cancel`, which
                terminates every node, waited for until every instance
                is gone;
             5. a new cluster is launched and the job started on it:
                `spotrun launch` of the same job, every node boots and
                runs `setup`, every rank restores from the bucket the
                newest step committed before the loss (a SkyPilot job
                resumes from its own periodic checkpoint in a bucket).
             Left out, each in SkyPilot's favour: the 5 s grace its
             controller sleeps when the job already reads failed, the
             cloud API calls of the status refresh, the runtime set-up
             (Ray, SkyPilot's own packages) of every new node, and the
             cost of spotrund's own recovery, which starts in the
             background when the node dies and is cancelled at step 4.
  rebuild_at_notice  last session's rebuild arm, kept as a second
             figure: spotrun with every node noticed at once - every
             rank takes its final checkpoint and gets a new node placed
             at the notice: a rebuild with spotrun's notice handling.

Two measures per recovery, both from the notice:

  resumed    notice -> training resumed on all ranks (the last rank's
             "resumed step=" line of the next attempt), the issue's
             definition;
  down       `resumed` less the training after the notice that the
             restored step keeps: resumed - max(0, t(S) - notice), S the
             restored step, t(S) the time its global commit record
             reached the bucket (an upper bound on when step S was
             trained, so `down` is if anything short).  In the rebuild
             arm the gang trains through the notice lead and keeps the
             steps up to its last periodic checkpoint; the kept arms
             stop at the notice.

The phases on the way (seconds after the notice, the last rank's or
the first event's): the final checkpoint, the node lost / the loss
detected / the cluster torn down (rebuild), the replacement(s) asked of
the cloud, the gang stopped, the next attempt started, then for its
last rank the agent's "started setup" / "setup ended" / "started run"
lines and train_gang.py's "joining the rendezvous" (interpreter and
imports done) and "rendezvous joined".  The arms alternate (kept,
rebuild, rebuild_at_notice, ...) and each figure is a ratio of medians:

  gang_recovery_vs_rebuild            kept / rebuild, `resumed`
  gang_recovery_vs_rebuild_at_notice  kept / rebuild_at_notice, `resumed`
  and the same two ratios of `down`.

Goal <= 0.5 on the local cloud (issue 13).

    /usr/bin/python3 bench/gang_recovery.py [--build DIR] [--runs N]
                                            [--poll-s S] [--seed N]
                                            [--arm ARM] [--json]
"""

import argparse
import importlib.machinery
import importlib.util
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "examples", "demo")
NOTICE_S = 5.0
DAEMON_OPTS = ["--time-scale", "600", "--notice-ms", str(int(NOTICE_S * 1000)),
               "--provision-ms", "1000", "--heartbeat-ms", "250",
               "--tick-ms", "100"]
# SkyPilot's controller checks its job every 15 s; the bench's notice lead
# stands for AWS's 120 s
POLL_S = 15.0 * NOTICE_S / 120.0
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
  checkpoint:
    uri: file://%s
  work: 16h
  deadline: 480h
"""
ARMS = ("kept", "rebuild", "rebuild_at_notice")


def load(name, path):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


PHASES = ("final_ckpt", "node_lost", "loss_detected", "torn_down",
          "replacement_created", "gang_stopped", "attempt_started",
          "setup_started", "setup_done", "run_started", "imports_done",
          "rendezvous_joined", "resumed", "down")
# the next attempt's lines that mark a rank's way back (agent lines, then
# train_gang.py's own); each phase is the last rank's time
RANK_LINES = (("setup_started", "started setup of attempt"),
              ("setup_done", "setup ended"),
              ("run_started", "started run of attempt"),
              ("imports_done", "joining the rendezvous"),
              ("rendezvous_joined", "rendezvous joined"))
RESUMED = re.compile(r"resumed step=(\d+)")


class Records:
    """Watches the bucket's global commit records: step -> the record's
    mtime (the moment it was written), kept even after retention deletes
    the record."""

    def __init__(self, bucket):
        self.dir = os.path.join(bucket, "global")
        self.seen = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def scan(self):
        try:
            ents = list(os.scandir(self.dir))
        except OSError:
            return
        for e in ents:
            m = re.fullmatch(r"step-(\d+)\.commit", e.name)
            if m and int(m.group(1)) not in self.seen:
                try:
                    self.seen[int(m.group(1))] = e.stat().st_mtime
                except OSError:
                    pass

    def run(self):
        while not self.stop.wait(0.02):
            self.scan()

    def close(self):
        self.stop.set()
        self.thread.join()


def rank_phases(lines, attempt, notice):
    """The next attempt's rank lines: phase -> seconds after the notice
    (the last rank's), and rank -> (resumed time, restored step)."""
    out = {}
    for name, prefix in RANK_LINES:
        t = {}
        for ln in lines:
            if ln.get("attempt") == attempt and \
                    ln.get("line", "").startswith(prefix):
                t.setdefault(ln["rank"], ts(ln["ts"]))
        out[name] = max(t.values()) - notice if t else None
    res = {}
    for ln in lines:
        m = RESUMED.match(ln.get("line", ""))
        if m and ln.get("attempt") == attempt:
            res.setdefault(ln["rank"], (ts(ln["ts"]), int(m.group(1))))
    return out, res


def wait_resumed(demo, env, jid, attempt, timeout=300):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        lines = demo.run_json(env, "logs", str(jid))["lines"]
        if len(rank_phases(lines, attempt, 0)[1]) == 2:
            return lines
        if any(ln.get("attempt") == attempt and
               ln.get("line", "").startswith("start step=0")
               for ln in lines):
            raise OSError("job %d: attempt %d restored nothing" %
                          (jid, attempt))
        time.sleep(0.3)
    raise OSError("job %d: the gang did not resume" % jid)


def finish_phases(ph, res, notice, records):
    """`resumed` and `down` from the ranks' resumed lines."""
    steps = {s for _, s in res.values()}
    if len(steps) != 1:
        raise OSError("the ranks restored different steps: %s" % res)
    step = steps.pop()
    ph["resumed"] = max(t for t, _ in res.values()) - notice
    rec = records.seen.get(step)
    if rec is None:
        raise OSError("no commit record of the restored step %d seen" % step)
    ph["down"] = ph["resumed"] - max(0.0, rec - notice)
    ph["restored_step"] = step
    return ph


def session_pids(sid):
    """Every process of session `sid` (a local-cloud instance)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(int(d))
    return out


def instance_sid(node):
    """The session of a local-cloud node: its instance id is
    local-<pid>-<start>, the agent leading its own session."""
    m = re.fullmatch(r"local-(\d+)-\d+", node.get("instance_id") or "")
    if not m:
        raise OSError("node %s: no local instance id" % node["id"])
    return int(m.group(1))


def reclaim(sid):
    """The local cloud's reclaim at a notice's deadline: SIGKILL every
    process of the instance's session (lib/ctl/proc.c)."""
    for pid in session_pids(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def spotrun_arm(demo, env, gang, jid, j, mode, records):
    """kept / rebuild_at_notice: spotrun's own recovery from the local
    cloud's injected notice."""
    state = env["SPOTRUN_STATE_DIR"]
    os.makedirs(os.path.join(state, "interrupts"), exist_ok=True)
    victims = [1] if mode == "kept" else [0, 1]
    for r in victims:
        open(os.path.join(state, "interrupts",
                          str(gang.live(j)[r]["id"])), "w").close()
    lines = wait_resumed(demo, env, jid, 2)
    events = demo.run_json(env, "events", str(jid))["events"]
    notice = min(ts(e["ts"]) for e in events if e["type"] == "notice")
    job = demo.run_json(env, "status", str(jid))["job"]
    after = gang.live(job)
    before = {n["id"] for n in gang.live(j).values()}
    kept = sum(after[r]["id"] == gang.live(j)[r]["id"] for r in after)
    if kept != (1 if mode == "kept" else 0):
        raise OSError("%s: %d node(s) kept" % (mode, kept))

    def first(ev_type):
        t = [ts(e["ts"]) for e in events if e["type"] == ev_type and
             ts(e["ts"]) >= notice]
        return min(t) - notice if t else None
    final = [ts(ln["ts"]) for ln in lines if ln.get("attempt") == 1 and
             ln.get("line", "").startswith("preempted: final checkpoint")]
    new = [ts(n["created_at"]) for n in job["nodes"] if n["id"] not in before]
    ph, res = rank_phases(lines, 2, notice)
    ph.update({
        # every rank wrote its final checkpoint (the last rank's line)
        "final_ckpt": max(final) - notice if final else None,
        # the first replacement node was asked of the cloud
        "replacement_created": min(new) - notice if new else None,
        # every rank of the attempt exited; the noticed nodes are let go
        "gang_stopped": first("stopped"),
        # every rank has a READY node: the next attempt starts
        "attempt_started": first("recovered"),
    })
    return finish_phases(ph, res, notice, records)


def rebuild_arm(demo, env, gang, jids, j, job_file, poll_s, phase,
                records):
    """rebuild: SkyPilot's managed-job recovery of a multi-node job (the
    module docstring's steps 1-5)."""
    jid = jids[0]
    victim = gang.live(j)[1]
    healthy = gang.live(j)[0]
    sids = [instance_sid(victim), instance_sid(healthy)]
    notice = time.time()                          # 1. nothing reacts
    time.sleep(max(0.0, notice + NOTICE_S - time.time()))
    reclaim(sids[0])                              # 2. the node is taken
    lost = time.time()
    # 3. the controller's next check after the loss: its checks fall at
    # notice + phase + k * poll_s
    k = math.ceil((lost - notice - phase) / poll_s)
    time.sleep(max(0.0, notice + phase + k * poll_s - time.time()))
    if session_pids(sids[0]):
        raise OSError("rebuild: the reclaimed node is still running")
    detected = time.time()
    # 4. tear down (the job may already have ended: its healthy rank
    # fails once its peer is gone, and spotrund may give up on it)
    subprocess.run(["spotrun", "cancel", str(jid)], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 120
    while any(session_pids(s) for s in sids):
        if time.monotonic() > end:
            raise OSError("rebuild: the cluster was not torn down")
        time.sleep(0.02)
    torn = time.time()
    out = subprocess.run(["spotrun", "launch", "-y", "-d", "--json",
                          job_file, "--workdir", HERE], env=env, check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    jid2 = json.loads(out)["job"]["id"]           # 5. a new cluster
    jids.append(jid2)
    lines = wait_resumed(demo, env, jid2, 1)
    events = demo.run_json(env, "events", str(jid2))["events"]
    job = demo.run_json(env, "status", str(jid2))["job"]
    running = [ts(e["ts"]) for e in events if e["type"] == "transition"
               and e.get("to") == "RUNNING"]
    ph, res = rank_phases(lines, 1, notice)
    ph.update({
        "node_lost": lost - notice,
        "loss_detected": detected - notice,
        "torn_down": torn - notice,
        "replacement_created": min(ts(n["created_at"])
                                   for n in job["nodes"]) - notice,
        "attempt_started": min(running) - notice if running else None,
    })
    return finish_phases(ph, res, notice, records)


def one(gang, build, mode, poll_s, phase):
    """One recovery in `mode`; returns its phases (seconds after the
    notice)."""
    demo = gang.load_demo()
    state = tempfile.mkdtemp(prefix="spotrun-gang-bench-")
    env = dict(os.environ)
    env.update(PATH=os.path.join(build, "bin") + os.pathsep + env["PATH"],
               SPOTRUN_STATE_DIR=state,
               PYTHONPATH=os.path.join(ROOT, "python"),
               SPOTRUN_LIB=os.path.join(build, "lib", "libspotckpt.so"))
    for k in ("SPOTRUN_API", "SPOTRUN_TOKEN"):
        env.pop(k, None)
    jids = []
    # beside the state dir, not in it: a node's workload cannot see the
    # state dir (docs/security.md)
    bucket = tempfile.mkdtemp(prefix="spotrun-gang-bench-bucket-")
    records = Records(bucket)
    try:
        market = gang.make_market(state)
        subprocess.run(["spotrun", "daemon", "start", "--listen",
                        "127.0.0.1:0", "--", "--data-dir", market,
                        *DAEMON_OPTS], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        job_file = os.path.join(state, "job.yaml")
        with open(job_file, "w") as f:
            f.write(JOB % bucket)
        out = subprocess.run(["spotrun", "launch", "-y", "-d", "--json",
                              job_file, "--workdir", HERE], env=env,
                             check=True, stdout=subprocess.PIPE,
                             text=True).stdout
        jids.append(json.loads(out)["job"]["id"])
        j = gang.wait_for(env, demo, jids[0], lambda j: j["state"] ==
                          "RUNNING" and len(gang.live(j)) == 2 and
                          (j["step"] or 0) >= 20, 300)
        if j["state"] != "RUNNING":
            raise OSError("the gang did not start: %s" % j["state"])
        if mode == "rebuild":
            return rebuild_arm(demo, env, gang, jids, j, job_file, poll_s,
                               phase, records)
        return spotrun_arm(demo, env, gang, jids[0], j, mode, records)
    finally:
        records.close()
        for jid in jids:
            subprocess.run(["spotrun", "cancel", str(jid)], env=env,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if jids:
            time.sleep(1)
        subprocess.run(["spotrun", "daemon", "stop"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(bucket, ignore_errors=True)


def median_of(runs, name):
    v = [x[name] for x in runs if x.get(name) is not None]
    return statistics.median(v) if v else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--runs", type=int, default=2,
                   help="recoveries per arm (default 2)")
    p.add_argument("--poll-s", type=float, default=POLL_S,
                   help="the rebuild arm's loss-detection poll period "
                   "(default %.3f s: SkyPilot's 15 s, scaled as the notice "
                   "lead is)" % POLL_S)
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the rebuild arm's poll phases (default 1)")
    p.add_argument("--arm", choices=ARMS, default=None,
                   help="run only this arm and print its phases (no ratio)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    # a timeout's SIGTERM still stops this run's daemon (finally blocks)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.runs < 1:
        p.error("--runs must be >= 1")
    if args.poll_s <= 0:
        p.error("--poll-s must be > 0")
    gang = load("spotrun_demo_gang", os.path.join(ROOT, "scripts",
                                                  "demo-gang"))
    arms = (args.arm,) if args.arm else ARMS
    rnd = random.Random(args.seed)
    ph = {m: [] for m in arms}
    for _ in range(args.runs):
        for mode in arms:
            ph[mode].append(one(gang, os.path.abspath(args.build), mode,
                                args.poll_s, rnd.uniform(0, args.poll_s)))
    med = {m: {k: median_of(v, k) for k in PHASES} for m, v in ph.items()}
    if args.arm:
        print(json.dumps({"phases_s": ph, "median_s": med}, indent=1))
        return 0
    ratio = {}
    for what in ("resumed", "down"):
        for base in ("rebuild", "rebuild_at_notice"):
            ratio["%s/%s" % (what, base)] = \
                med["kept"][what] / med[base][what]
    head = ratio["resumed/rebuild"]
    if args.json:
        print(json.dumps({
            "gang_recovery_vs_rebuild": round(head, 3),
            "gang_recovery_vs_rebuild_at_notice":
                round(ratio["resumed/rebuild_at_notice"], 3),
            "down_vs_rebuild": round(ratio["down/rebuild"], 3),
            "down_vs_rebuild_at_notice":
                round(ratio["down/rebuild_at_notice"], 3),
            "poll_s": args.poll_s, "notice_s": NOTICE_S,
            "resumed_s": {m: [x["resumed"] for x in v]
                          for m, v in ph.items()},
            "down_s": {m: [x["down"] for x in v] for m, v in ph.items()},
            "phases_s": ph}))
        return 0
    print("seconds after the notice (median of each phase):")
    print("  %-20s %8s %8s %18s" % ("phase", "kept", "rebuild",
                                    "rebuild_at_notice"))
    for name in PHASES:
        row = ["%8.2f" % med[m][name] if med[m][name] is not None
               else "%8s" % "-" for m in ARMS]
        row[2] = "%18s" % row[2].strip()
        print("  %-20s %s" % (name, " ".join(row)))
    for m in ARMS:
        print("%-17s resumed %s s; down %s s" % (
            m, ", ".join("%.2f" % x["resumed"] for x in ph[m]),
            ", ".join("%.2f" % x["down"] for x in ph[m])))
    print("gang_recovery_vs_rebuild %.2f (notice -> resumed, medians "
          "%.2f / %.2f s; goal <= 0.5)" % (head, med["kept"]["resumed"],
                                           med["rebuild"]["resumed"]))
    print("  against a rebuild with spotrun's notice handling: %.2f "
          "(%.2f / %.2f s)" % (ratio["resumed/rebuild_at_notice"],
                               med["kept"]["resumed"],
                               med["rebuild_at_notice"]["resumed"]))
    print("down (resumed less the training kept after the notice): "
          "%.2f against the rebuild, %.2f against the rebuild at the notice"
          " (%.2f / %.2f / %.2f s)" % (
              ratio["down/rebuild"], ratio["down/rebuild_at_notice"],
              med["kept"]["down"], med["rebuild"]["down"],
              med["rebuild_at_notice"]["down"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
