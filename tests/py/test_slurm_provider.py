"""The slurm provider (lib/providers/slurm, docs/slurm.md) against a REAL
Slurm: slurmctld, two slurmd and munged from Debian, started once for
this module by slurm_cluster.py (it fails, never skips, when they cannot
start).

- A PyTorch job placed on the Slurm pool (partition `low`) is a Slurm
  batch job running spotrun-agent as its step.  A job of the `high`
  partition preempts it: the agent gets Slurm's signal (USR1, the job's
  --signal, sent at preemption) as a notice, the workload's final
  checkpoint is committed and reported before the Slurm job ends, the
  control plane queues a replacement on Slurm (pending while `high` runs:
  QUEUED, no boot timeout), which resumes from that checkpoint, and the
  final weights are bit-identical to an uninterrupted run's.
- Idempotency: one Slurm job per launch key, found again by its name.
- Errors: the controller down (transient: the launch waits, no job lost
  or doubled), a partition that does not exist, a time limit too short
  or above the partition's MaxTime - each a clear message.
"""
import json
import os
import re
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
STEPS = 160
EVERY = 40


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


def train_job(share, steps=STEPS, sleep_ms=25):
    """examples/train.py through hold_train.py: its first attempt holds
    one step after its first checkpoint until a notice comes, so the job
    cannot end before the test preempts it, however slowly that
    checkpoint reaches the control plane (under ASan, at load 20, a
    whole 16 s run once went by without one)."""
    return ("name: slurm-train\nresources:\n  accelerators: V100:2\n"
            "  use_spot: false\n  infra: slurm\n"
            "envs:\n  SPOTRUN_STEPS: '%d'\n  SPOTRUN_CKPT_EVERY: '%d'\n"
            "  SPOTRUN_STEP_SLEEP_MS: '%d'\n  SPOTRUN_RESULT_FILE: %s\n"
            "run: %s %s\nspotrun:\n  deadline: 1000h\n  work: 1h\n" % (
                steps, EVERY, sleep_ms, os.path.join(share, "result.json"),
                PY_RUN, os.path.join(ROOT, "tests", "py", "hold_train.py")))


def start_reference(tmp, steps=STEPS):
    """The uninterrupted run (same seed, same steps), started at once so
    it trains while the Slurm job does; reference_hash() reads it."""
    ck = os.path.join(str(tmp), "ref-ckpt")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               SPOTRUN_CKPT_DIR=ck, SPOTRUN_STEPS=str(steps),
               SPOTRUN_CKPT_EVERY=str(EVERY))
    if ASAN_PRELOAD:
        env["LD_PRELOAD"] = ASAN_PRELOAD
    env.pop("SPOTRUN_NOTICE_FILE", None)
    return subprocess.Popen([PY, os.path.join(ROOT, "examples", "train.py")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def reference_hash(ref):
    out, err = ref.communicate(timeout=600)
    assert ref.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])["hash"]


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


def test_preempted_by_slurm_resumes_bit_identical(tmp_path, slurm, no_preload):
    share = os.path.join(str(tmp_path), "share")
    os.makedirs(share)
    d = daemon(tmp_path, slurm)
    ref = start_reference(tmp_path)
    try:
        d.start()
        # the job holds after its first checkpoint until preempted
        # (hold_train.py): the test acts on the checkpoint it sees
        # reported, an event, not on the job still running by chance
        jid = d.submit(train_job(share))

        def training():
            j = d.job(jid)
            assert j["state"] not in ("FAILED", "CANCELLED", "SUCCEEDED"), (
                "ended before it could be preempted", j, d.log_tail())
            return j if (j.get("ckpt_step") or 0) >= EVERY else None
        wait("the job training past a checkpoint on Slurm", training, 300, d)
        ours = [r for r in squeue(slurm) if r[3].startswith("spotrun:")]
        assert len(ours) == 1 and ours[0][2] == "RUNNING" and ours[0][4] == "low", ours
        first = ours[0]
        # a job of the high partition needs both nodes: Slurm preempts ours
        hi = slurm.run("sbatch", "--parsable", "-p", "high", "-N", "2",
                       "--exclusive", "-o", "/dev/null", "--time=1",
                       "--wrap", "sleep 3").stdout.strip()
        j = d.wait([jid], 600)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        assert j["preemptions"] >= 1, j
        ev = d.events(jid)
        types = [e["type"] for e in ev]
        # the order of events, not their times: Slurm's SIGTERM reached
        # the agent as a notice (source "signal"), the workload's final
        # checkpoint was committed and reported, then the workload exited
        # as preempted, and only then did the node end
        n0 = [i for i, e in enumerate(ev) if e["type"] == "notice_ack"]
        assert n0 and ev[n0[0]]["data"]["source"] == "signal", types
        node0 = ev[n0[0]]["node_id"]
        of0 = [(i, e) for i, e in enumerate(ev) if e["node_id"] == node0]
        pre = [e for i, e in of0 if e["type"] == "preempted"]
        final = [i for i, e in of0 if e["type"] == "checkpoint" and
                 e["data"].get("final")]
        exits = [i for i, e in of0 if e["type"] == "workload_exit"]
        ended = [i for i, e in of0 if e["type"] == "node_terminated"]
        assert pre and exits and ended, types
        assert n0[0] < exits[0] < ended[0], types
        # the next attempt resumed from a checkpoint attempt 1 committed at
        # or after the step it was at when the notice came: nothing the
        # notice allowed to save was lost
        lost = [e for e in ev if e["type"] == "lost_work" and
                e["data"].get("attempt") == 1]
        m = re.search(r"resumed from step (\d+)", lost[0]["message"] if lost
                      else "")
        assert m and int(m.group(1)) >= pre[0]["data"]["step"], (lost, pre)
        if final:
            # the agent saw the trainer's final checkpoint: notice, final
            # checkpoint, preempted exit, node end, in that order, and
            # the resume took that checkpoint.  (Slurm's SIGTERM reaches
            # the trainer too: when it saves and exits before the agent
            # acts on the notice, the checkpoint is there - asserted
            # above - but reported as a periodic one; docs/slurm.md.)
            assert n0[0] < final[0] < exits[0], types
            assert ev[exits[0]]["data"]["cause"] == "preempted", ev[exits[0]]
            assert int(m.group(1)) == ev[final[0]]["data"]["step"], lost
        # Slurm's records: ours was preempted (not requeued by Slurm), the
        # replacement ran on Slurm again after the high job, one job each
        rows = {r[0]: r for r in squeue(slurm)}
        assert rows[first[0]][2] in ("PREEMPTED", "COMPLETED", "CANCELLED"), rows
        assert rows[hi][2] == "COMPLETED", rows
        ours = [r for r in rows.values() if r[3].startswith("spotrun:")]
        assert len(ours) == 2 and len({r[1] for r in ours}) == 2, ours
        with open(os.path.join(share, "result.json")) as f:
            got = json.loads(f.read().strip().splitlines()[-1])
        assert got["steps"] == STEPS, got
        assert got["hash"] == reference_hash(ref), got
    finally:
        d.stop()
        if ref.poll() is None:
            ref.kill()
            ref.wait()
        for r in squeue(slurm):
            if r[2] in ("RUNNING", "PENDING"):
                slurm.run("scancel", r[0], check=False)


def check(tmp, slurm, **extra):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([os.path.join(BUILD, "bin", "spotrun"), "check",
                           "--config", config(tmp, slurm, **extra), "slurm"],
                          capture_output=True, text=True, env=env, timeout=120)


def test_check_and_configuration_errors(tmp_path, slurm):
    r = check(tmp_path, slurm)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "partitions: low (2 nodes" in r.stdout, r.stdout
    r = check(tmp_path, slurm, partitions="low,nosuch")
    assert r.returncode != 0
    assert ("providers.slurm.partitions: 'nosuch' is not a partition of the "
            "cluster") in r.stdout + r.stderr, r.stdout + r.stderr
    r = check(tmp_path, slurm, time="20s")
    assert r.returncode != 0
    assert "providers.slurm.time: 20s is too short" in r.stdout + r.stderr, r.stdout
    r = check(tmp_path, slurm, price_per_gpu_h="cheap")
    assert r.returncode != 0
    assert "providers.slurm.price_per_gpu_h: 'cheap' is not a price" in \
        r.stdout + r.stderr, r.stdout


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
    leak sweep leaves it be) is node 1's instance: never a second job."""
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


def test_controller_down_then_back_no_job_lost(tmp_path, slurm, no_preload):
    d = daemon(tmp_path, slurm)
    try:
        d.start()
        slurm.stop_controller()
        jid = d.submit(shell_job("ctl-down"))
        # sbatch cannot reach slurmctld: a transient error, retried
        wait("the launch failing on the controller", lambda: "Unable to contact "
             "slurm controller" in d.log_tail(), 60, d)
        assert d.job(jid)["state"] not in ("FAILED", "CANCELLED"), d.job(jid)
        slurm.start_controller()
        j = d.wait([jid], 120)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        names = [r[1] for r in squeue(slurm) if r[3].startswith("spotrun:") and
                 r[3].split(":")[1] in d.log_tail() + "".join(
                     x["instance_id"] or "" for x in j["nodes"])]
        ours = [r for r in squeue(slurm) if "slurm-" + r[0] in
                [x["instance_id"] for x in j["nodes"]]]
        assert len(ours) == len(j["nodes"]) == 1, (ours, names, j["nodes"])
    finally:
        d.stop()


def test_time_limit_above_partition_max_fails_clearly(tmp_path, slurm, no_preload):
    d = daemon(tmp_path, slurm, time="2h")   # low's MaxTime is 60 min
    try:
        d.start()
        jid = d.submit(shell_job("too-long"))
        j = d.wait([jid], 60)[0]
        assert j["state"] == "FAILED", j
        assert ("providers.slurm.time: 7200 s is more than partition low's "
                "MaxTime (3600 s)") in j["message"], j["message"]
        assert not [r for r in squeue(slurm) if r[1].endswith("-1-1") and
                    r[2] in ("PENDING", "RUNNING")]
    finally:
        d.stop()


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
