"""The slurm provider (lib/providers/slurm, docs/slurm.md) against a REAL
Slurm: slurmctld, two slurmd and munged from Debian, started once for
this module by slurm_cluster.py (it fails, never skips, when they cannot
start).

- A 2-node PyTorch gang (DDP) placed on the Slurm pool (partition `low`)
  is ONE Slurm batch job of both nodes, an agent as its step on each.  A
  job of the `high` partition preempts it: each agent gets Slurm's
  SIGTERM as a notice, both ranks commit their final checkpoint for one
  step before the Slurm job ends, the control plane queues the whole gang
  again on Slurm as one job (pending while `high` runs: QUEUED, no boot
  timeout), which resumes from that checkpoint, and the final weights are
  bit-identical to an uninterrupted run's.
- Idempotency: one Slurm job per launch key, found again by its name.
- A node PENDING while the cluster is full; `critical` on the committed
  pool.  (Errors: test_slurm_errors.py.)
"""
import json
import os
import subprocess
import time

import pytest

from conftest import store_rows
from slurm_cluster import SlurmCluster
from test_ctl_crash import BUILD, ROOT, Daemon

PY = "/usr/bin/python3"
# the ASan pass: our Python processes load the ASan-built libspotckpt, so
# they need the runtime preloaded, which no_preload keeps from Slurm's
# commands (and so from the job, whose environment sbatch exports)
ASAN_PRELOAD = os.environ.get("SPOTRUN_ASAN_PRELOAD", "")
PY_RUN = ('env "LD_PRELOAD=%s" ASAN_OPTIONS=detect_leaks=0 %s' % (
    ASAN_PRELOAD, PY) if ASAN_PRELOAD else PY)


@pytest.fixture(scope="module")
def slurm():
    c = SlurmCluster(nodes=2)
    try:
        c.start()
    except Exception:
        c.stop()
        raise
    print("slurm cluster up in %.1f s" % c.start_s)
    yield c
    c.stop()


@pytest.fixture
def no_preload(monkeypatch):
    # the ASan pass preloads the runtime into this interpreter; Slurm's
    # commands (which spotrund runs) are not ours and must not get it
    for k in ("LD_PRELOAD",):
        monkeypatch.delenv(k, raising=False)


def config(tmp, slurm, **extra):
    path = os.path.join(str(tmp), "spotrund.yaml")
    kv = {"slurm_conf": slurm.path("slurm.conf"), "price_per_gpu_h": "1.85",
          "accelerator": "V100", "partitions": "low", "notice_lead": "30s"}
    kv.update(extra)
    with open(path, "w") as f:
        f.write("time-scale: 1\nstop-grace-ms: 2000\nproviders:\n  slurm:\n")
        for k, v in kv.items():
            f.write("    %s: %s\n" % (k, json.dumps(v)))
    return path


def daemon(tmp, slurm, **extra):
    return Daemon(tmp, os.path.join(ROOT, "data"), "--config",
                  config(tmp, slurm, **extra), "--agent",
                  os.path.join(BUILD, "bin", "spotrun-agent"),
                  "--heartbeat-timeout", "30s")


def squeue(slurm):
    out = slurm.run("squeue", "-h", "--states=all", "-o", "%i|%j|%T|%k|%P").stdout
    return [l.split("|") for l in out.splitlines() if l]


def wait(what, fn, timeout, d=None):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("%s: not within %d s\n%s" % (
        what, timeout, d.log_tail() if d else ""))


def preempt_by_high(slurm, d, jid):
    """A job of the high partition needing both nodes: Slurm preempts
    ours, which then succeeds.  The high job's id, and the job's view."""
    hi = slurm.run("sbatch", "--parsable", "-p", "high", "-N", "2",
                   "--exclusive", "-o", "/dev/null", "--time=1",
                   "--wrap", "sleep 3").stdout.strip()
    j = d.wait([jid], 600)[0]
    assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
    assert j["preemptions"] >= 1, j
    return hi, j


def shell_job(name, extra_res=""):
    return ("name: %s\nresources:\n  accelerators: V100:2\n  use_spot: false\n"
            "  infra: slurm\n%srun: 'true'\nspotrun:\n  deadline: 1000h\n"
            "  work: 1h\n" % (name, extra_res))


def node_of(d, jid):
    j = d.job(jid)
    return j["nodes"][0] if j["nodes"] else None


def test_launch_finds_its_earlier_submission(tmp_path, slurm, no_preload):
    """sbatch has no token: the launch looks for a job named by its key
    first.  A job submitted under node 1's key before the launch (as a
    crash between sbatch and the commit leaves it; ended already, so the
    leak sweep leaves it be) is node 1's instance: never a second job.
    The same for a gang's one allocation: a 2-node job named by the
    group's key (its first node's), its comment naming both nodes, holds
    both nodes' instances.  (A node holding a job that has ended is then
    lost at once and replaced: the gang's node ids come after job 1's.)"""
    d = daemon(tmp_path, slurm)
    try:
        d.start()
        # SQLite, or PostgreSQL in the ASan and pg passes
        rows = store_rows(d.state, "select value from settings "
                          "where key='cluster_id'")
        assert rows and rows[0][0], "no cluster id"
        cluster = rows[0][0]
        key = "sr-%s-1-1" % cluster
        first = slurm.run("sbatch", "--parsable", "-p", "low", "-J", key,
                          "--comment", "spotrun:%s:1:1:1" % cluster,
                          "-o", "/dev/null", "--wrap", "true").stdout.strip()
        # (the leak sweep may end it first: it carries our tags)
        wait("the earlier job ended", lambda: [
            r for r in squeue(slurm) if r[0] == first and r[2] in (
                "COMPLETED", "CANCELLED")], 60)
        jid = d.submit(shell_job("adopt"))
        n = wait("the node holding the earlier job", lambda: (
            node_of(d, jid) or {}).get("instance_id"), 60, d)
        assert n == "slurm-" + first, n
        assert [r[0] for r in squeue(slurm) if r[1] == key] == [first]
        d.api("POST", "/v1/jobs/%d/cancel" % jid)
        j1 = d.wait([jid], 60)[0]
        # job 2, a gang: the next two nodes, one allocation under the
        # first one's key
        g = max(x["id"] for x in j1["nodes"]) + 1
        key = "sr-%s-%d-1" % (cluster, g)
        first = slurm.run("sbatch", "--parsable", "-p", "low", "-N", "2",
                          "-J", key, "--comment", "spotrun:%s:2:%d,%d:1" %
                          (cluster, g, g + 1), "-o", "/dev/null", "--wrap",
                          "true").stdout.strip()
        wait("the earlier allocation ended", lambda: [
            r for r in squeue(slurm) if r[0] == first and r[2] in (
                "COMPLETED", "CANCELLED")], 60)
        jid = d.submit(shell_job("adopt-gang").replace(
            "name: adopt-gang\n", "name: adopt-gang\nnum_nodes: 2\n"))

        def both():
            j = d.job(jid)
            ids = sorted(x["instance_id"] or "" for x in j["nodes"]
                         if x["id"] in (g, g + 1))
            return ids if len(ids) == 2 and all(ids) else None
        ids = wait("both nodes holding the earlier allocation", both, 60, d)
        assert ids == ["slurm-%s.0" % first, "slurm-%s.1" % first], ids
        assert [r[0] for r in squeue(slurm) if r[1] == key] == [first]
        d.api("POST", "/v1/jobs/%d/cancel" % jid)
    finally:
        d.stop()


def test_queued_while_the_cluster_is_full(tmp_path, slurm, no_preload):
    """A job of the high partition holds both nodes: ours waits in Slurm's
    queue as a PENDING node (no boot timeout: CLOUD_CAP_QUEUES) and runs
    once they are free."""
    d = daemon(tmp_path, slurm)
    hi = None
    try:
        d.start()
        hi = slurm.run("sbatch", "--parsable", "-p", "high", "-N", "2",
                       "--exclusive", "-o", "/dev/null", "--wrap",
                       "sleep 600").stdout.strip()
        wait("the high job running", lambda: [
            r for r in squeue(slurm) if r[0] == hi and r[2] == "RUNNING"], 60)
        jid = d.submit(shell_job("queued"))
        wait("the node PENDING while Slurm queues it", lambda: (
            node_of(d, jid) or {}).get("state") == "PENDING", 60, d)
        slurm.run("scancel", hi)
        j = d.wait([jid], 120)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
    finally:
        d.stop()
        if hi:
            slurm.run("scancel", hi, check=False)


def test_critical_prefers_the_committed_pool(tmp_path, slurm, no_preload):
    """criticality: critical places on the Slurm pool (committed capacity)
    even when a cloud's on-demand price is lower; standard goes to spot."""
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config",
               config(tmp_path, slurm, price_per_gpu_h="9.99"), "--providers",
               "local,slurm", "--agent",
               os.path.join(BUILD, "bin", "spotrun-agent"))
    try:
        d.start()

        def placed(crit, spot):
            jid = d.submit("name: %s\nresources:\n  accelerators: V100:2\n"
                           "  use_spot: %s\nrun: 'true'\nspotrun:\n"
                           "  criticality: %s\n  deadline: 1000h\n"
                           "  work: 1h\n" % (crit, spot, crit))
            ev = wait("placed", lambda: [e for e in d.events(jid)
                                         if e["type"] == "placement"], 60, d)
            d.api("POST", "/v1/jobs/%d/cancel" % jid)
            return ev[0]["data"]
        crit = placed("critical", "false")
        assert crit["provider"] == "slurm" and crit["cloud"] == "slurm", crit
        # 2 x 9.99 $/h: dearer than a cloud's V100:2 on demand
        assert crit["price_micros_per_hour"] == 19980000, crit
        std = placed("standard", "true")
        assert std["provider"] != "slurm", std
    finally:
        d.stop()


GANG_ENVS = {"DEMO_STEPS": "80", "DEMO_HIDDEN": "32", "DEMO_STEP_MS": "25",
             "DEMO_CKPT_EVERY": "20"}


def gang_reference():
    """An uninterrupted 2-rank run of train_gang.py (same seed, same
    steps): the final weights' hash."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               WORLD_SIZE="2", **GANG_ENVS)
    if ASAN_PRELOAD:
        env["LD_PRELOAD"] = ASAN_PRELOAD
    return [subprocess.Popen(
        [PY, os.path.join(ROOT, "examples", "demo", "train_gang.py"),
         "--reference"], env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True) for r in (0, 1)]


def test_gang_is_one_allocation_preempted_and_resumed(tmp_path, slurm,
                                                      no_preload):
    """A 2-node gang is ONE Slurm job of 2 nodes (the reconciler's launch
    group, cloud/compute.h), an agent on each node.  A 2-node job of the
    high partition preempts it: both ranks take their final checkpoint
    for one step, the gang is queued again on Slurm and resumes from it,
    and the final weights are bit-identical to an uninterrupted run."""
    d = daemon(tmp_path, slurm)
    ref = gang_reference()
    hi = None
    try:
        d.start()
        envs = "".join("  %s: \"%s\"\n" % kv for kv in GANG_ENVS.items())
        jid = d.submit(
            "name: slurm-gang\nnum_nodes: 2\nresources:\n"
            "  accelerators: V100:2\n  use_spot: false\n  infra: slurm\n"
            "run: %s %s\nenvs:\n%sspotrun:\n  deadline: 1000h\n"
            "  work: 1h\n" % (PY_RUN, os.path.join(ROOT, "tests", "py",
                                                    "hold_train.py"), envs))

        def training():
            j = d.job(jid)
            assert j["state"] not in ("FAILED", "CANCELLED", "SUCCEEDED"), (
                "ended before it could be preempted", j, d.log_tail())
            return j if (j.get("ckpt_step") or 0) >= 20 else None
        j = wait("the gang training past a checkpoint on Slurm", training,
                 300, d)
        # this daemon's Slurm jobs (the module's cluster ran others')
        cluster = store_rows(d.state, "select value from settings "
                             "where key='cluster_id'")[0][0]

        def of_ours():
            return [r for r in squeue(slurm) if r[3].startswith(
                "spotrun:%s:" % cluster)]
        ours = of_ours()
        # one Slurm job holds both nodes: its comment names both
        nodes = sorted(n["id"] for n in j["nodes"])
        assert len(ours) == 1 and ours[0][2] == "RUNNING", (
            ours, j, d.log_tail())
        assert ours[0][3].split(":")[3] == "%d,%d" % tuple(nodes), ours
        assert sorted(n["instance_id"] for n in j["nodes"]) == [
            "slurm-%s.0" % ours[0][0], "slurm-%s.1" % ours[0][0]], j["nodes"]
        first = ours[0][0]
        hi, j = preempt_by_high(slurm, d, jid)
        # each node of the preempted allocation, by the order of events
        # (never their times): Slurm's SIGTERM reached its agent as a
        # notice (source "signal"), its workload exited as preempted, and
        # only then did the node end
        ev = d.events(jid)
        types = [(e["type"], e["node_id"]) for e in ev]
        for node in nodes:
            of = [(i, e) for i, e in enumerate(ev) if e["node_id"] == node]
            notice = [i for i, e in of if e["type"] == "notice_ack"]
            exits = [i for i, e in of if e["type"] == "workload_exit"]
            ended = [i for i, e in of if e["type"] == "node_terminated"]
            assert notice and exits and ended, (
                "node %d: notice %s, workload exit %s, ended %s in\n%s\n%s"
                % (node, notice, exits, ended, "\n".join(
                    "%d %s node=%s %s" % (i, e["type"], e["node_id"],
                                          json.dumps(e.get("data")))
                    for i, e in enumerate(ev)), d.log_tail()))
            assert ev[notice[0]]["data"]["source"] == "signal", ev[notice[0]]
            assert notice[0] < exits[0] < ended[0], types
            assert ev[exits[0]]["data"]["cause"] == "preempted", ev[exits[0]]
        st, body = d.api("GET", "/v1/jobs/%d/logs?limit=5000" % jid)
        assert st == 200, body
        lines = body["lines"]
        text = "\n".join("%s %s %s" % (ln["attempt"], ln["rank"], ln["line"])
                         for ln in lines if ln["stream"] != "agent")
        # both ranks took their final checkpoint for one step, and both
        # ranks of the next attempt restored exactly that step
        finals = {ln["rank"]: int(ln["line"].split("step=")[1].split()[0])
                  for ln in lines if ln["attempt"] == 1 and
                  ln["line"].startswith("preempted: final checkpoint")}
        resumed = {ln["rank"]: int(ln["line"].split("step=")[1].split()[0])
                   for ln in lines if ln["attempt"] == 2 and
                   ln["line"].startswith("resumed step=")}
        assert sorted(finals) == [0, 1] and len(set(finals.values())) == 1, \
            text[-4000:]
        assert resumed == finals, (finals, resumed, text[-4000:])
        # Slurm's records: the first allocation preempted, the high job
        # done, and the gang's every attempt one job of both its nodes
        rows = {r[0]: r for r in squeue(slurm)}
        assert rows[first][2] in ("PREEMPTED", "COMPLETED", "CANCELLED"), rows
        assert rows[hi][2] == "COMPLETED", rows
        ours = of_ours()
        assert len(ours) == 2, ours
        assert all(len(r[3].split(":")[3].split(",")) == 2 for r in ours), ours
        result = [ln["line"] for ln in lines if ln["line"].startswith("RESULT ")]
        assert len(result) == 1, text[-4000:]
        got = json.loads(result[0][len("RESULT "):])
        outs = [p.communicate(timeout=300)[0] for p in ref]
        assert [p.returncode for p in ref] == [0, 0], outs
        want = [ln for ln in outs[0].splitlines() if ln.startswith("RESULT ")]
        assert got["hash"] == json.loads(want[0][len("RESULT "):])["hash"]
        assert got["steps"] == 80 and got["world_size"] == 2, got
    finally:
        d.stop()
        for p in ref:
            if p.poll() is None:
                p.kill()
                p.wait()
        for r in squeue(slurm):
            if r[2] in ("RUNNING", "PENDING"):
                slurm.run("scancel", r[0], check=False)
