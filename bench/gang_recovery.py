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
  spare      spotrun with a warm spare (issue 33, arm 4): the job keeps
             one (spotrun: {spares: 1}), booted and set up beside the
             gang before the notice; the noticed rank goes to it, so
             the recovery waits for no boot and no setup.
  early      spotrun with an early signal (issue 33, arm 3): the job keeps
             no spare (spotrun: {spares: 0}); --rebalance-s cloud seconds
             before the notice (default 300) rank 1's node gets a
             rebalance recommendation (the local cloud's
             <state>/rebalance/<node>), spotrund launches its replacement
             then (event early_replacement), and at the notice the rank
             goes to it, booted and set up if the lead was long enough.
  through    spotrun training through the notice with its replacement
             started early (issue 33, arm 5): the job has spotrun:
             {train_through_notice: true, spares: 0} and gets arm 3's
             rebalance recommendation --rebalance-s before the notice;
             the gang trains on after the notice until the replacement
             is READY and set up, or the last safe moment (deadline
             less a quarter of the lead), then switches to it.  (With
             its replacement asked for only at the notice, as
             --arm through_late runs it, a 60-180 s boot plus a 90 s
             setup is longer than AWS's 120 s lead: the gang stops at
             the last safe moment and waits for the boot anyway.)
  peer       spotrun restoring from a peer (issue 33, arm 6): the job
             has spotrun: {peer_replicas: 1}; each rank's node holds the
             previous rank's part of the newest step, and the noticed
             rank's replacement reads its parts from the kept nodes
             (python/spotrun/dist_peer.py) instead of the bucket; its
             run prints where each part came from, and the arm fails
             unless the replacement's came from a peer.
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
             restored step, t(S) when step S was trained: for a final
             checkpoint's step, when its save began (the last rank's
             "preempted: final checkpoint step=S in X ms" line less its
             X ms), else the time its global commit record reached the
             bucket (an upper bound on when a periodic step S was
             trained, so `down` is then if anything short).  In the
             rebuild arm the gang trains through the notice lead and
             keeps the steps up to its last periodic checkpoint; the
             kept arms stop at the notice (their `down` is `resumed`
             less about one step), or, training through it, at the
             switch (their `down` counts from there).

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

Real-cloud timings (issue 33): --timing aws|gcp|azure runs the same arms
with the local cloud's real-cloud timing profile (data/timing/NAME.json,
spotrund --timing): every node's boot drawn from the profile's
distribution (60-180 s), the job's `setup:` the profile's setup_s,
train_gang.py's DEMO_IMPORT_MS its import_s, the notice lead its notice_s
(120 s AWS, 30 s GCP), SkyPilot's poll its 15 s - all in cloud seconds
divided by --time-scale (default 24: AWS's 120 s lead is 5 s here, as
above).  --nodes sets the gang (default 2), --state-mb each rank's state
(a rank-local Shard, train_gang.py's DEMO_STATE_MB), --ckpt-min the
periodic checkpoint interval in cloud minutes (default 10).  Arms 1
(`rebuild`), 2 (`kept`), 3 (`early`), 4 (`spare`), 5 (`through`) and
6 (`peer`) run side by side (--arms to choose), and every figure is also
given in cloud seconds (x time scale), with the spread (min-max) of each
arm.  Each run's JSON (phases_s) has its "breakdown": the stretches
from the notice in the order they ended, each in this machine's real
seconds and in cloud seconds, and what it waits for - "profile: ..."
(a boot, setup_s, import_s, the notice lead, SkyPilot's poll: simulated,
exact in cloud seconds) or "machine (xS)" (this machine's own work: a
write, a process start, an import, a restore, spotrund's passes, which
read as cloud seconds only multiplied by the scale), with the CPU
seconds and the disk MiB written/read that the run's processes (its
spotrund and every node's processes: bench/run_cpu.py) used in it, so
the machine's share can be told from the design's; the text report
prints the median run's, and each run records the machine's load (1
min) at its start and end.  "final_phases" (rank -> phase -> [wall s,
CPU s of its process]: part, marker, keep, commit) and "restore_took"
say where each rank's final checkpoint and next restore went
(train_gang.py's "final phases:" and "restore took:" lines).  `resumed_x1` / `down_x1` (text: "the same
recoveries with this machine's own stretches in its real seconds") read
the same stretches with the machine's in real seconds, not x scale:
what the recovery takes if the nodes' own work is as fast as this
machine does it for all of them at once - a reading of the measured
run, not a run at x1.  --start warm (the default) gives the job a
warm start (python/spotrun/warm.py: its setup leaves a process with
train_gang.py's imports done, gang_imports.py, and each attempt's run
forks it, so neither a warm spare nor a kept node imports torch again);
--start cold runs train_gang.py anew every attempt.  `make bench` runs

    bench/gang_arms.sh   --timing aws and gcp, 4 nodes, 512 MiB, x4,
                         --ckpt-min 2, 5 runs of the six arms; then
                         arm 5 alone at x1 (--time-scale 1: this
                         machine's own work counted once), 5 runs

    /usr/bin/python3 bench/gang_recovery.py [--build DIR] [--runs N]
                                            [--poll-s S] [--seed N]
                                            [--arm ARM] [--json]
                                            [--timing NAME] [--nodes N]
                                            [--state-mb MB] [--time-scale X]
                                            [--ckpt-min M]
                                            [--rebalance-s S]
                                            [--start warm|cold]
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cpu import RunCpu  # noqa: E402

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
num_nodes: %(nodes)d
resources:
  accelerators: V100:1
  use_spot: true
setup: sleep %(setup_s)s%(warm_setup)s
run: /usr/bin/python3 %(run)s
envs:
  DEMO_STEPS: "1000000"
  DEMO_HIDDEN: "32"
  DEMO_CKPT_EVERY: "%(every)d"
  DEMO_STEP_MS: "%(step_ms)d"
  DEMO_STATE_MB: "%(state_mb)d"
  DEMO_IMPORT_MS: "%(import_ms)d"
spotrun:
  checkpoint:
    uri: file://%(bucket)s
  work: 16h
  deadline: 480h
%(spares)s"""
WARM_JOB = {"warm_setup": " && /usr/bin/python3 -m spotrun.warm start "
            "--preload gang_imports",
            "run": "-m spotrun.warm run train_gang.py"}
COLD_JOB = {"warm_setup": "", "run": "train_gang.py"}
ARMS = ("kept", "rebuild", "rebuild_at_notice")
# the arms a --timing run compares (the arms 1-6)
TIMED_ARMS = ("rebuild", "kept", "early", "spare", "through", "peer")


class Setup:
    """One bench configuration: the daemon's options, the job's values,
    the notice lead and SkyPilot's poll, in real seconds."""

    def __init__(self, args):
        self.nodes = args.nodes
        self.scale = 1.0
        self.job = {"nodes": args.nodes, "setup_s": "2", "every": 20,
                    "step_ms": 25, "state_mb": args.state_mb,
                    "import_ms": 0, "spares": ""}
        # a warm start (python/spotrun/warm.py): setup leaves a process
        # with train_gang.py's imports done, every attempt's run forks it
        self.warm = args.start == "warm"
        self.job.update(WARM_JOB if self.warm else COLD_JOB)
        self.timing = None
        self.rebalance_s = args.rebalance_s
        if not args.timing:
            self.daemon = list(DAEMON_OPTS)
            self.notice_s = NOTICE_S
            self.poll_s = args.poll_s or POLL_S
            return
        path = args.timing if "/" in args.timing else \
            os.path.join(ROOT, "data", "timing", args.timing + ".json")
        with open(path) as f:
            self.timing = json.load(f)
        t, sc = self.timing, args.time_scale
        self.scale = sc
        self.daemon = ["--time-scale", repr(sc), "--timing", path,
                       "--heartbeat-ms", "250", "--tick-ms", "100"]
        self.notice_s = t["notice_s"] / sc
        self.poll_s = args.poll_s or 15.0 / sc
        step_ms = 100
        self.job.update(setup_s="%.3f" % (t["setup_s"] / sc),
                        import_ms=int(t["import_s"] / sc * 1000),
                        step_ms=step_ms,
                        every=max(1, int(args.ckpt_min * 60 / sc * 1000 /
                                         step_ms)))

    def daemon_opts(self, run):
        """The daemon's options for run number `run` (its own boots)."""
        if self.timing is None:
            return self.daemon
        return self.daemon + ["--timing-seed", str(run + 1)]


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


def wait_resumed(demo, env, jid, attempt, nodes, timeout=300):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        lines = demo.run_json(env, "logs", str(jid))["lines"]
        if len(rank_phases(lines, attempt, 0)[1]) == nodes:
            return lines
        if any(ln.get("attempt") == attempt and
               ln.get("line", "").startswith("start step=0")
               for ln in lines):
            raise OSError("job %d: attempt %d restored nothing" %
                          (jid, attempt))
        time.sleep(0.3)
    raise OSError("job %d: the gang did not resume" % jid)


FINAL = re.compile(r"preempted: final checkpoint step=(\d+) in ([\d.]+) ms")


def final_saves(lines, attempt):
    """step -> when the attempt's final checkpoint of it began (the last
    rank's line time less the save's duration it prints)."""
    out = {}
    for ln in lines:
        m = FINAL.match(ln.get("line", ""))
        if m and ln.get("attempt") == attempt:
            t = ts(ln["ts"]) - float(m.group(2)) / 1000.0
            out[int(m.group(1))] = max(t, out.get(int(m.group(1)), t))
    return out


def finish_phases(ph, res, notice, records, trained=None):
    """`resumed` and `down` from the ranks' resumed lines (trained: step
    -> when it was trained, where known better than its record)."""
    steps = {s for _, s in res.values()}
    if len(steps) != 1:
        raise OSError("the ranks restored different steps: %s" % res)
    step = steps.pop()
    ph["resumed"] = max(t for t, _ in res.values()) - notice
    rec = records.seen.get(step)
    if rec is None:
        raise OSError("no commit record of the restored step %d seen" % step)
    rec = min(rec, (trained or {}).get(step, rec))
    ph["down"] = ph["resumed"] - max(0.0, rec - notice)
    ph["restored_step"] = step
    ph["notice_at"] = notice
    return ph


# What a stretch of a recovery waits for, by the phase that ends it: the
# profile's simulated time (cloud seconds / the time scale, so exact in
# cloud seconds), or else this machine's own work (a write, a process
# start, an import, a restore, spotrund's passes), which reads as cloud
# seconds only multiplied by the time scale.
SIMULATED = {"node_lost": "the notice lead", "loss_detected": "SkyPilot's poll",
             "setup_started": "a boot", "setup_done": "setup_s"}


def breakdown(ph, mode, warm, scale, cpu):
    """One recovery's stretches from the notice, in the order their
    phases ended: [{"from", "to", "real_s", "cloud_s", "cpu_s",
    "disk_mib", "what"}], "what" "machine (x scale)" or "profile: ...",
    cpu_s the CPU seconds the run's processes used in it, disk_mib the
    MiB they wrote and read on storage (bench/run_cpu.py: all nodes
    together, on this machine's os.cpu_count() CPUs and one disk, which
    everything it runs shares)."""
    t0 = ph["notice_at"]
    pts = sorted((v, k) for k, v in ph.items()
                 if k in PHASES and k != "down" and v is not None)
    out, prev_t, prev = [], 0.0, "notice"
    for t, k in pts:
        what = SIMULATED.get(k)
        if k == "imports_done" and not warm:
            what = "import_s (a cold start)"
        if k == "setup_done" and warm:
            what = "setup_s + import_s (the warm server's imports)"
        if k == "setup_started" and prev == "attempt_started":
            what = None           # the boot was the stretch before
        if k == "final_ckpt" and mode == "through_late":
            # mostly the training up to the last safe moment
            what = "the last safe moment, then the final checkpoint"
        if k == "attempt_started" and mode == "rebuild":
            what = "a boot"       # the new cluster's nodes
        if k in ("attempt_started", "run_started") and \
                mode not in ("rebuild", "spare", "early", "through"):
            # the replacement was asked for at the notice
            what = "the replacement's boot and setup_s, if it waited"
        sim = what is not None
        out.append({"from": prev, "to": k, "real_s": round(t - prev_t, 3),
                    "cloud_s": round((t - prev_t) * scale, 1),
                    # the machine's work not multiplied by the scale
                    "x1_s": round((t - prev_t) * (scale if sim else 1), 1),
                    "cpu_s": round(cpu.at(t0 + t) - cpu.at(t0 + prev_t), 2),
                    "disk_mib": [round(cpu.at(t0 + t, w) -
                                       cpu.at(t0 + prev_t, w)) for w in (1, 2)],
                    "what": "profile: " + what if what else
                    "machine (x%g)" % scale})
        prev_t, prev = t, k
    return out


def x1_at(stretches, t):
    """Cloud seconds from the notice to t real seconds after it, with
    the machine's stretches read in real seconds (x1_s)."""
    out, at = 0.0, 0.0
    for b in stretches:
        part = min(b["real_s"], max(0.0, t - at))
        if b["real_s"] > 0:
            out += b["x1_s"] * part / b["real_s"]
        at += b["real_s"]
    return out


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


def spare_ready(j):
    """The job's warm spare booted and set up (spare arm), or None."""
    s = [n for n in j["nodes"] if n.get("spare") and n["state"] == "READY"
         and n.get("setup_exit_code") == 0]
    return s[0] if s else None


def early_signal(demo, env, gang, jid, j, lead_s):
    """early: a rebalance recommendation on rank 1's node, lead_s real
    seconds before the notice; its replacement must be launched (event
    early_replacement) before the notice.  The replacement's node id."""
    state = env["SPOTRUN_STATE_DIR"]
    node = gang.live(j)[1]["id"]
    os.makedirs(os.path.join(state, "rebalance"), exist_ok=True)
    t0 = time.monotonic()
    open(os.path.join(state, "rebalance", str(node)), "w").close()
    end = t0 + max(60.0, lead_s)
    while True:
        ev = [e for e in demo.run_json(env, "events", str(jid))["events"]
              if e["type"] == "early_replacement"]
        if ev:
            break
        if time.monotonic() > end:
            raise OSError("early: no replacement launched for node %s" %
                          node)
        time.sleep(0.1)
    if ev[0]["data"]["for_node"] != node:
        raise OSError("early: the replacement stands by for %s, not %s" %
                      (ev[0]["data"]["for_node"], node))
    time.sleep(max(0.0, t0 + lead_s - time.monotonic()))
    job = demo.run_json(env, "status", str(jid))["job"]
    s = [n for n in job["nodes"] if n.get("spare") and
         n["state"] in ("REQUESTED", "BOOTING", "READY")]
    if not s:
        raise OSError("early: the replacement is gone before the notice")
    return s[0]


def spotrun_arm(demo, env, gang, jid, j, mode, records, nodes, setup):
    """kept / early / spare / rebuild_at_notice: spotrun's own recovery
    from the local cloud's injected notice (spare: the noticed rank goes
    to the job's warm spare; early: to the replacement launched at a
    rebalance recommendation)."""
    state = env["SPOTRUN_STATE_DIR"]
    os.makedirs(os.path.join(state, "interrupts"), exist_ok=True)
    victims = list(range(nodes)) if mode == "rebuild_at_notice" else [1]
    spare = spare_ready(j) if mode == "spare" else \
        early_signal(demo, env, gang, jid, j, setup.rebalance_s /
                     (setup.scale if setup.timing else 120.0 / NOTICE_S)) \
        if mode in ("early", "through") else None
    for r in victims:
        open(os.path.join(state, "interrupts",
                          str(gang.live(j)[r]["id"])), "w").close()
    lines = wait_resumed(demo, env, jid, 2, nodes)
    events = demo.run_json(env, "events", str(jid))["events"]
    notice = min(ts(e["ts"]) for e in events if e["type"] == "notice")
    job = demo.run_json(env, "status", str(jid))["job"]
    after = gang.live(job)
    before = {n["id"] for n in gang.live(j).values()}
    kept = sum(after[r]["id"] == gang.live(j)[r]["id"] for r in after)
    if kept != (0 if mode == "rebuild_at_notice" else nodes - 1):
        raise OSError("%s: %d node(s) kept" % (mode, kept))
    if spare and after[1]["id"] != spare["id"]:
        raise OSError("%s: rank 1 went to node %s, not the spare %s" %
                      (mode, after[1]["id"], spare["id"]))
    if mode == "peer":
        # the replaced rank 1 read every part from a peer, not the bucket
        # (its line follows its "resumed step=" one: a few looks)
        for _ in range(100):
            src = [ln["line"] for ln in lines if ln.get("attempt") == 2 and
                   ln.get("rank") == 1 and
                   ln.get("line", "").startswith("restored from: ")]
            if src:
                break
            time.sleep(0.3)
            lines = demo.run_json(env, "logs", str(jid))["lines"]
        if not src or "=store" in src[0] or "peer rank" not in src[0]:
            raise OSError("peer: rank 1 restored %s" % (src,))

    # where each rank's restore read each part (examples/demo/
    # train_gang.py's "restored from:" line, after its "resumed" one)
    sources = {}
    for _ in range(20):
        sources = {ln["rank"]: ln["line"][len("restored from: "):]
                   for ln in lines if ln.get("attempt") == 2 and
                   ln.get("line", "").startswith("restored from: ")}
        if len(sources) == nodes:
            break
        time.sleep(0.3)
        lines = demo.run_json(env, "logs", str(jid))["lines"]

    def first(ev_type):
        t = [ts(e["ts"]) for e in events if e["type"] == ev_type and
             ts(e["ts"]) >= notice]
        return min(t) - notice if t else None
    final = [ts(ln["ts"]) for ln in lines if ln.get("attempt") == 1 and
             ln.get("line", "").startswith("preempted: final checkpoint")]
    # the replacement: a new node, or the spare's adoption
    new = [ts(n["adopted_at"] if n.get("adopted_at") else n["created_at"])
           for n in job["nodes"] if n["id"] not in before and
           (n.get("adopted_at") or not n.get("spare"))]
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
        "restore_sources": {str(r): v for r, v in sorted(sources.items())},
        "copy_notes": ["%s/%s: %s" % (ln.get("attempt"), ln.get("rank"),
                                      ln["line"][:200]) for ln in lines
                       if "copy" in ln.get("line", "")],
        # each rank's final checkpoint by phase, [wall s, CPU s] (its
        # "final phases:" line), and its restore ("restore took:")
        "final_phases": {str(ln["rank"]): json.loads(
            ln["line"][len("final phases: "):]) for ln in lines
            if ln.get("attempt") == 1 and
            ln.get("line", "").startswith("final phases: ")},
        "restore_took": {str(ln["rank"]): ln["line"][len("restore took: "):]
                         for ln in lines if ln.get("attempt") == 2 and
                         ln.get("line", "").startswith("restore took: ")},
    })
    return finish_phases(ph, res, notice, records, final_saves(lines, 1))


def rebuild_arm(demo, env, gang, jids, j, job_file, setup, phase,
                records):
    """rebuild: SkyPilot's managed-job recovery of a multi-node job (the
    module docstring's steps 1-5)."""
    jid = jids[0]
    poll_s = setup.poll_s
    live = gang.live(j)
    sids = [instance_sid(live[1])] + [instance_sid(n) for r, n in
                                       sorted(live.items()) if r != 1]
    notice = time.time()                          # 1. nothing reacts
    time.sleep(max(0.0, notice + setup.notice_s - time.time()))
    reclaim(sids[0])                              # 2. the node is taken
    lost = time.time()
    # a process in the middle of a large write dies when the write
    # returns: the loss is seen once every process of the node is gone
    end = time.monotonic() + 60
    while session_pids(sids[0]):
        if time.monotonic() > end:
            raise OSError("rebuild: the reclaimed node is still running")
        time.sleep(0.02)
    # 3. the controller's next check after the loss: its checks fall at
    # notice + phase + k * poll_s
    k = math.ceil((time.time() - notice - phase) / poll_s)
    time.sleep(max(0.0, notice + phase + k * poll_s - time.time()))
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
    lines = wait_resumed(demo, env, jid2, 1, setup.nodes)
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


def one(gang, build, mode, setup, phase, run):
    """One recovery in `mode` (run number `run`); returns its phases
    (seconds after the notice)."""
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
    cpu = None
    try:
        market = gang.make_market(state)
        subprocess.run(["spotrun", "daemon", "start", "--listen",
                        "127.0.0.1:0", "--", "--data-dir", market,
                        *setup.daemon_opts(run)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(state, "spotrund.pid")) as f:
            cpu = RunCpu(int(f.read().split()[0]))
        job_file = os.path.join(state, "job.yaml")
        with open(job_file, "w") as f:
            f.write(JOB % dict(setup.job, bucket=bucket,
                               spares="  spares: 1\n" if mode == "spare"
                               else "  spares: 0\n" if mode == "early"
                               else "  train_through_notice: true\n"
                               if mode == "through_late" else
                               "  spares: 0\n  train_through_notice: true\n"
                               if mode == "through" else
                               "  peer_replicas: 1\n" if mode == "peer"
                               else ""))
        out = subprocess.run(["spotrun", "launch", "-y", "-d", "--json",
                              job_file, "--workdir", HERE], env=env,
                             check=True, stdout=subprocess.PIPE,
                             text=True).stdout
        jids.append(json.loads(out)["job"]["id"])
        every = setup.job["every"]
        j = gang.wait_for(env, demo, jids[0], lambda j: j["state"] ==
                          "RUNNING" and len(gang.live(j)) == setup.nodes and
                          (j["step"] or 0) >= every and
                          min(records.seen, default=-1) >= every and
                          (mode != "spare" or spare_ready(j)), 600)
        if j["state"] != "RUNNING":
            raise OSError("the gang did not start: %s" % j["state"])
        load0 = os.getloadavg()[0]
        if mode == "rebuild":
            ph = rebuild_arm(demo, env, gang, jids, j, job_file, setup,
                             phase, records)
        else:
            ph = spotrun_arm(demo, env, gang, jids[0], j, mode, records,
                             setup.nodes, setup)
        cpu.close()
        ph["breakdown"] = breakdown(ph, mode, setup.warm, setup.scale, cpu)
        # the machine's load (1 min) at the notice and at the end: other
        # work shares its CPUs with the run's
        ph["load"] = [round(x, 1) for x in (load0, os.getloadavg()[0])]
        ph["cpu_s"] = round(cpu.at(ph["notice_at"] + ph["resumed"]) -
                            cpu.at(ph["notice_at"]), 2)
        # the same recovery with this machine's own stretches read in
        # real seconds (the profile's in cloud seconds): what it would
        # take were the machine's work as fast as it is here - four
        # nodes on this machine's CPUs and one disk - and not x scale
        # (in real seconds x scale, as `resumed`)
        x1 = x1_at(ph["breakdown"], ph["resumed"])
        ph["resumed_x1"] = round(x1 / setup.scale, 3)
        ph["down_x1"] = round((x1 - x1_at(ph["breakdown"], ph["resumed"] -
                                          ph["down"])) / setup.scale, 3)
        return ph
    finally:
        if cpu:
            cpu.close()
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


def spread(runs, name, scale):
    """'median (min-max)' of `name` over the runs, in cloud seconds."""
    v = [x[name] * scale for x in runs if x.get(name) is not None]
    if not v:
        return "-"
    return "%.0f (%.0f-%.0f)" % (statistics.median(v), min(v), max(v))


GOALS = {"kept": "", "early": "", "peer": "", "spare": "; goal <= 0.25 and <= 60 s",
         "through": "; goal: training lost <= 10 s",
         "through_late": ""}
LABELS = {"rebuild": "arm 1 SkyPilot rebuild",
          "kept": "arm 2 spotrun (kept)",
          "early": "arm 3 early signal",
          "spare": "arm 4 warm spare",
          "through": "arm 5 train through",
          "through_late": "arm 5, replaced at notice",
          "peer": "arm 6 peer restore"}


def timed_report(args, setup, ph, med):
    """The --timing run's table: both measures per arm in cloud seconds
    with their spread, and the ratios of medians against the rebuild."""
    sc = setup.scale
    name = setup.timing["name"]
    arms = list(ph)
    others = [m for m in arms if m != "rebuild"]
    for m in arms:
        for w in ("resumed_x1", "down_x1"):
            med[m][w] = median_of(ph[m], w)
    ratio = {(m, w): med[m][w] / med["rebuild"][w]
             for m in others for w in ("resumed", "down", "resumed_x1",
                                       "down_x1")}
    if args.json:
        out = {"timing": name, "time_scale": sc, "nodes": setup.nodes,
               "state_mb": args.state_mb, "runs": args.runs,
               "start": args.start,
               "resumed_cloud_s": {m: [round(x["resumed"] * sc, 1)
                                       for x in v] for m, v in ph.items()},
               "down_cloud_s": {m: [round(x["down"] * sc, 1) for x in v]
                                for m, v in ph.items()},
               "resumed_x1_cloud_s": {m: [round(x["resumed_x1"] * sc, 1)
                                          for x in v] for m, v in ph.items()},
               "down_x1_cloud_s": {m: [round(x["down_x1"] * sc, 1)
                                       for x in v] for m, v in ph.items()},
               "phases_s": ph}
        for m in others:
            for w in ("resumed", "down", "resumed_x1", "down_x1"):
                out["%s_vs_rebuild_%s" % (m, w)] = round(ratio[m, w], 3)
        print(json.dumps(out))
        return 0
    print("timing profile %s (x%g: cloud seconds), %d nodes, %d MiB/rank, "
          "%d runs per arm, %s start; notice lead %.0f s, SkyPilot poll "
          "%.0f s" % (name, sc, setup.nodes, args.state_mb, args.runs,
                      args.start, setup.notice_s * sc, setup.poll_s * sc))
    print("  median cloud seconds after the notice of each phase:")
    print("  %-20s %s" % ("phase", " ".join("%10s" % m for m in arms)))
    for ph_name in PHASES:
        row = ["%10.0f" % (med[m][ph_name] * sc)
               if med[m][ph_name] is not None else "%10s" % "-"
               for m in arms]
        print("  %-20s %s" % (ph_name, " ".join(row)))
    print("  where the median recovery of each arm spent its time "
          "(cloud s, this machine's real s, the CPU-s the run's processes "
          "used in it on this machine's %d CPUs and the MiB they wrote/read "
          "on its disk, what it waits for):" %
          os.cpu_count())
    for m in arms:
        by = sorted(ph[m], key=lambda x: x["resumed"])[(len(ph[m]) - 1) // 2]
        print("  %s (load %s): %s" % (m, "-".join(
            "%.1f" % x for x in by["load"]), "; ".join(
            "%s %.0f (%.2f, %.2f CPU-s, %d/%d MiB w/r, %s)" % (
                b["to"], b["cloud_s"], b["real_s"], b["cpu_s"],
                b["disk_mib"][0], b["disk_mib"][1], b["what"])
            for b in by["breakdown"])))
    for m in arms:
        print("%-24s notice -> resumed %s s; training lost %s s "
              "(median (min-max), cloud s); %s CPU-s notice -> resumed, "
              "load %.1f-%.1f" % (
                  LABELS[m], spread(ph[m], "resumed", sc),
                  spread(ph[m], "down", sc), spread(ph[m], "cpu_s", 1),
                  min(x for r in ph[m] for x in r["load"]),
                  max(x for r in ph[m] for x in r["load"])))
    for m in others:
        print("gang_recovery_%s_%s_vs_rebuild %.2f (notice -> resumed, %.0f "
              "cloud s); training lost %.2f (%.0f cloud s)%s" % (
                  name, m, ratio[m, "resumed"], med[m]["resumed"] * sc,
                  ratio[m, "down"], med[m]["down"] * sc, GOALS[m]))
    print("the same recoveries with this machine's own stretches in its "
          "real seconds instead of x%g (the profile's in cloud seconds): a "
          "reading of the measured stretches, not a run at x1" % sc)
    for m in arms:
        print("%-24s notice -> resumed %s s; training lost %s s" % (
            LABELS[m], spread(ph[m], "resumed_x1", sc),
            spread(ph[m], "down_x1", sc)))
    for m in others:
        print("gang_recovery_%s_%s_vs_rebuild_x1 %.2f (%.0f cloud s); "
              "training lost %.2f (%.0f cloud s)" % (
                  name, m, ratio[m, "resumed_x1"], med[m]["resumed_x1"] * sc,
                  ratio[m, "down_x1"], med[m]["down_x1"] * sc))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--runs", type=int, default=2,
                   help="recoveries per arm (default 2)")
    p.add_argument("--poll-s", type=float, default=None,
                   help="the rebuild arm's loss-detection poll period "
                   "(default %.3f s: SkyPilot's 15 s, scaled as the notice "
                   "lead is; with --timing 15 s / --time-scale)" % POLL_S)
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the rebuild arm's poll phases (default 1)")
    p.add_argument("--arms", default=None,
                   help="with --timing: the arms, comma-separated (default "
                   "%s; rebuild always runs)" % ",".join(TIMED_ARMS))
    p.add_argument("--arm", choices=ARMS + ("early", "spare", "through",
                                           "through_late",
                                           "peer"),
                   default=None,
                   help="run only this arm and print its phases (no ratio)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--timing", default=None,
                   help="a real-cloud timing profile (aws, gcp, azure or a "
                   "file; data/timing/): arms rebuild and kept")
    p.add_argument("--nodes", type=int, default=2,
                   help="nodes of the gang (default 2)")
    p.add_argument("--state-mb", type=int, default=0,
                   help="MiB of state per rank (default 0)")
    p.add_argument("--time-scale", type=float, default=24.0,
                   help="with --timing: cloud seconds per real second "
                   "(default 24)")
    p.add_argument("--ckpt-min", type=float, default=10.0,
                   help="with --timing: the periodic checkpoint interval, "
                   "cloud minutes (default 10)")
    p.add_argument("--start", choices=("warm", "cold"), default="warm",
                   help="warm (default): the job's setup leaves a process "
                   "with train_gang.py's imports done (python3 -m "
                   "spotrun.warm), every attempt's run forks it; cold: "
                   "every run imports torch anew")
    p.add_argument("--rebalance-s", type=float, default=300.0,
                   help="arm early: cloud seconds from the rebalance "
                   "recommendation to the notice (default 300)")
    args = p.parse_args()
    # a timeout's SIGTERM still stops this run's daemon (finally blocks)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.runs < 1:
        p.error("--runs must be >= 1")
    if args.poll_s is not None and args.poll_s <= 0:
        p.error("--poll-s must be > 0")
    if args.nodes < 2 or args.state_mb < 0 or args.time_scale <= 0 or \
            args.ckpt_min <= 0 or args.rebalance_s < 0:
        p.error("--nodes must be >= 2, --state-mb >= 0, --rebalance-s >= 0, "
                "--time-scale and --ckpt-min > 0")
    try:
        setup = Setup(args)
    except (OSError, ValueError, KeyError) as exc:
        p.error("--timing %s: %s" % (args.timing, exc))
    gang = load("spotrun_demo_gang", os.path.join(ROOT, "scripts",
                                                  "demo-gang"))
    arms = (args.arm,) if args.arm else \
        TIMED_ARMS if args.timing else ARMS
    if args.arms and args.timing and not args.arm:
        want = args.arms.split(",")
        bad = [a for a in want if a not in TIMED_ARMS + ("through_late",)]
        if bad:
            p.error("--arms: %s not among %s" % (
                bad, TIMED_ARMS + ("through_late",)))
        arms = ("rebuild",) + tuple(a for a in want if a != "rebuild")
    rnd = random.Random(args.seed)
    ph = {m: [] for m in arms}
    for run in range(args.runs):
        for mode in arms:
            ph[mode].append(one(gang, os.path.abspath(args.build), mode,
                                setup, rnd.uniform(0, setup.poll_s), run))
            # each recovery as it ends (a long run's partial figures)
            print(json.dumps({"run": run, "arm": mode,
                              "phases_s": ph[mode][-1]}),
                  file=sys.stderr, flush=True)
    med = {m: {k: median_of(v, k) for k in PHASES} for m, v in ph.items()}
    if args.arm:
        print(json.dumps({"phases_s": ph, "median_s": med}, indent=1))
        return 0
    if args.timing:
        return timed_report(args, setup, ph, med)
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
            "poll_s": setup.poll_s, "notice_s": NOTICE_S,
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
