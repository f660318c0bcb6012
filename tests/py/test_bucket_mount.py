"""A SkyPilot-style spot task with a bucket mount, unchanged (issue 30):
examples/plain_torch_train.py (never imports spotrun) saves into the
mount's directory; spotrund, the local cloud and real agents run it with
the bucket in s3rver, and the cloud preempts it twice.

  * it completes, and its final model is bit for bit the one an
    uninterrupted run of the same script produces;
  * each preempted node was told by SIGTERM (the exit cause is
    "preempted"), its final round was durable before its exit was
    reported (a sync_final event before the attempt's exit), and the next
    node restored exactly that round (sync_restored names it): no
    committed byte was lost;
  * the script resumed from the newest checkpoint of that round;
  * it was launched as a user launches it, `spotrun launch` with its
    workdir (the script runs from there) and a COPY mount of data (its
    seed), beside the MOUNT; `spotrun events` names each restored round.

test_copy_mount_and_mount_in_one_task: a COPY mount (SkyPilot's short
form) is in place before the run, a MOUNT beside it gets the run's output.

test_a_run_that_ends_at_once_ends_its_job: runs that exit at once (0 and
3) end their jobs once the final round is durable (the agent once reaped
a syncer only while a workload ran, so the exit was held for 600 s).

In the attempts the test preempts, the script holds after the save
that follows the step the test waits for (HOLD below: the unmodified
script, run with os.replace wrapped), until the notice's SIGTERM ends
it: the test waits on that step's checkpoint - an event - and the run
cannot end before the interruption, however slowly the test is
scheduled.  The daemon's
heartbeat timeout is 60 s, not 10: this test is not about liveness, and
an ASan agent on a loaded machine must not be declared lost (the same
run lost node 2 without a notice 11 s after it registered).  A failure
prints the job's events and each node's agent log (story()).

PyTorch runs under /usr/bin/python3 (the only interpreter with torch).
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from objstore_servers import S3rver
from test_ctl_crash import BUILD, ROOT, Daemon, make_market
from test_e2e_cli import submitted_id

PY = "/usr/bin/python3"
SCRIPT = os.path.join(ROOT, "examples", "plain_torch_train.py")
STEPS, EVERY = 400, 50
LIMIT = 600  # generous: events, never timings


def torch_ok():
    """PyTorch is installed for PY: found, not imported (an import costs
    seconds of CPU, minutes of them under ASan's preload; a torch that is
    installed but broken fails the test, with the reference's stderr)."""
    return subprocess.run([PY, "-c", "import importlib.util, sys\n"
                           "sys.exit(importlib.util.find_spec('torch') is None)"],
                          capture_output=True).returncode == 0


# The unmodified script, holding (at most LIMIT s) after its first
# checkpoint at or past a step in the attempt the test preempts
# (SPOTRUN_ATTEMPT:STEP,...): one save past the step the test waits for,
# so the notice normally comes while it trains on (nothing is lost) and
# the run still cannot end first.  Holding changes no training state.
HOLD = r'''
import os, re, runpy, sys, time
at = dict(map(int, x.split(":")) for x in sys.argv[1].split(","))
hold = at.get(int(os.environ.get("SPOTRUN_ATTEMPT", "0")))
replace = os.replace

def held(src, dst):
    replace(src, dst)
    m = re.match(r"ckpt-(\d+)\.pt$", os.path.basename(dst))
    if hold is not None and m and int(m.group(1)) >= hold:
        print("holding after step", m.group(1), "until the notice",
              flush=True)
        end = time.monotonic() + LIMIT
        while time.monotonic() < end:
            time.sleep(0.05)

os.replace = held
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''.replace("LIMIT", str(LIMIT))
PREEMPT_AT = (150, 300)  # two preemptions, each after some saves
HOLD_AT = "1:%d,2:%d" % (PREEMPT_AT[0] + EVERY, PREEMPT_AT[1] + EVERY)


def job_project(tmp_path, uri, data_uri, creds):
    """The task in a project directory of its own, as a user has it: the
    script in the workdir (run from there, by its relative name), its
    seed in a data bucket mounted with COPY, the checkpoints in a MOUNT."""
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(SCRIPT, str(proj))
    (proj / "hold.py").write_text(HOLD)
    run = ("test -s $SPOTRUN_NODE_DIR/data/seed.txt && %s hold.py %s "
           "plain_torch_train.py "
           "--out $SPOTRUN_NODE_DIR/checkpoint --steps %d --save-every %d "
           "--seed $(cat $SPOTRUN_NODE_DIR/data/seed.txt) --step-sleep 0.02" % (
               PY, HOLD_AT, STEPS, EVERY))
    (proj / "task.yaml").write_text(
        "name: plain-torch\n"
        "resources:\n  accelerators: V100:1\n  use_spot: true\n"
        "envs:\n%s"
        "workdir: .\n"
        "file_mounts:\n  /checkpoint:\n    source: %s\n    mode: MOUNT\n"
        "  /data:\n    source: %s\n    mode: COPY\n"
        "run: |\n  %s\n"
        "spotrun:\n  deadline: 1000h\n  work: 10h\n" % (
            "".join("  %s: %s\n" % kv for kv in sorted(creds.items())),
            uri, data_uri, run))
    return str(proj / "task.yaml")


def saved_steps(d, node_id):
    p = os.path.join(d.state, "nodes", str(node_id), "checkpoint")
    try:
        names = os.listdir(p)
    except OSError:
        return []
    return [int(m.group(1)) for m in
            (re.match(r"ckpt-(\d+)\.pt$", n) for n in names) if m]


def story(d, jid):
    """What a failure needs: the job's events and each node's agent log."""
    out = [d.log_tail()]
    try:
        out += ["%s node %s: %s" % (e["type"], e.get("node_id"), e["message"])
                for e in d.events(jid)]
    except Exception as ex:  # the daemon may be what failed
        out.append("events: %r" % ex)
    nodes = os.path.join(d.state, "nodes")
    for n in sorted(os.listdir(nodes)) if os.path.isdir(nodes) else []:
        try:
            with open(os.path.join(nodes, n, "agent.log")) as f:
                out.append("== node %s agent.log\n%s" % (n, f.read()[-6000:]))
        except OSError:
            pass
    return "\n".join(out)


def running_node(d, jid, seen):
    end = time.time() + LIMIT
    while time.time() < end:
        j = d.job(jid)
        assert j["state"] not in ("FAILED", "CANCELLED", "SUCCEEDED"), (
            j["message"], story(d, jid))
        for n in j["nodes"]:
            if n["state"] == "READY" and n["id"] not in seen:
                return n["id"]
        time.sleep(0.1)
    raise AssertionError("no new node: %s" % story(d, jid))


def interrupt_after(d, jid, node_id, step):
    end = time.time() + LIMIT
    while time.time() < end:
        if max(saved_steps(d, node_id) or [0]) >= step:
            os.makedirs(os.path.join(d.state, "interrupts"), exist_ok=True)
            open(os.path.join(d.state, "interrupts", str(node_id)),
                 "w").close()
            return
        assert d.job(jid)["state"] not in ("FAILED", "CANCELLED",
                                           "SUCCEEDED"), story(d, jid)
        time.sleep(0.05)
    raise AssertionError("node %d never saved step %d: %s" % (
        node_id, step, story(d, jid)))


def load(*paths):
    """Each state dict's tensors, one "name sha256" line each, per path:
    one interpreter (one import of torch) for them all."""
    out = subprocess.run(
        [PY, "-c", "import sys, torch, hashlib\n"
         "for p in sys.argv[1:]:\n"
         "    sd = torch.load(p)\n"
         "    for k in sorted(sd):\n"
         "        print(k, hashlib.sha256(sd[k].numpy().tobytes()).hexdigest())\n"
         "    print('--')",
         *paths], capture_output=True, text=True, timeout=LIMIT)
    assert out.returncode == 0, out.stderr
    got = out.stdout.split("--\n")[:-1]
    assert len(got) == len(paths), out.stdout
    return got


def restore_bucket(uri, got):
    """The bucket's newest committed round, restored into got (a path)."""
    out = subprocess.run([os.path.join(BUILD, "bin", "spotrun-agent"),
                          "--dirsync", str(got), "--uri", uri,
                          "--restore-only"], capture_output=True, text=True,
                         timeout=LIMIT)
    assert out.returncode == 0, out.stderr
    return got


# (a string: evaluated when the test runs, in its worker alone, not at
# every worker's collection - an interpreter importing torch costs seconds)
@pytest.mark.skipif("not torch_ok()", reason="PyTorch is not importable by "
                    "/usr/bin/python3 (scripts/install-deps installs it)")
def test_plain_torch_script_survives_two_preemptions(tmp_path, monkeypatch):
    import spotrun
    srv = S3rver()
    d = refp = None
    try:
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)  # spotrun ckpt ls, the restore below
        # the reference: the same script, never interrupted, trained
        # beside the job (its result is read at the end)
        ref = tmp_path / "ref"
        with open(str(tmp_path / "ref.err"), "w") as err:
            refp = subprocess.Popen([PY, SCRIPT, "--out", str(ref), "--steps",
                                     str(STEPS), "--save-every", str(EVERY),
                                     "--seed", "3"], stdout=subprocess.DEVNULL,
                                    stderr=err)
        cfg = tmp_path / "spotrund.yaml"
        cfg.write_text("stop-grace-ms: 500\nproviders:\n  local:\n"
                       "    notice_ms: 20000\n")
        # spot capacity never fails by itself: the test's two interrupts
        # are the only preemptions
        d = Daemon(tmp_path, make_market(tmp_path, [1]), "--config",
                   str(cfg), "--heartbeat-timeout", "60s", "--agent",
                   os.path.join(BUILD, "bin", "spotrun-agent"))
        d.start()
        uri = "s3://ckpt/plain/checkpoint"
        with spotrun.objects.ObjectStore("s3://ckpt/plain-data") as st:
            st.put("seed.txt", b"3\n")
        # launched as a user does, with its workdir; the buckets'
        # credentials travel with the task, as its envs
        task = job_project(tmp_path, uri, "s3://ckpt/plain-data", srv.env())
        p = subprocess.run([os.path.join(BUILD, "bin", "spotrun"), "launch",
                            task, "-d", "-y", "--state-dir", d.state],
                           cwd=os.path.dirname(task), capture_output=True,
                           text=True, timeout=LIMIT)
        assert p.returncode == 0, (p.stdout, p.stderr, d.log_tail())
        jid = submitted_id(p.stdout)
        seen = []
        for step in PREEMPT_AT:
            node = running_node(d, jid, seen)
            seen.append(node)
            interrupt_after(d, jid, node, step)
        j = d.wait([jid], LIMIT)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], story(d, jid))
        ev = d.events(jid)
        restored = [e for e in ev if e["type"] == "sync_restored"]
        finals = [e for e in ev if e["type"] == "sync_final"]
        exits = [e for e in ev if e["type"] == "workload_exit"]
        assert len(restored) == 3, [e["message"] for e in ev]
        assert restored[0]["data"]["round"] == -1
        by_node = {}
        for e in ev:
            by_node.setdefault(e.get("node_id"), []).append(e)
        for i, node in enumerate(seen):
            evs = by_node[node]
            kinds = [e["type"] for e in evs]
            fin = [e for e in evs if e["type"] == "sync_final"]
            assert fin, kinds
            # durable before the node's run was reported over
            assert kinds.index("sync_final") < kinds.index("workload_exit"), kinds
            ex = [e for e in evs if e["type"] == "workload_exit"][0]
            assert ex["data"].get("cause") in ("preempted", None), ex
            # the next node restored exactly that round
            nxt = restored[i + 1]
            assert nxt["data"]["round"] == fin[0]["data"]["round"], (
                nxt, fin[0])
        assert len(finals) == 3 and len(exits) >= 3
        # `spotrun events JOB` says which round each resumed node restored
        evs = subprocess.run([os.path.join(BUILD, "bin", "spotrun"), "events",
                              str(jid), "--state-dir", d.state],
                             capture_output=True, text=True, timeout=LIMIT)
        assert evs.returncode == 0, evs.stderr
        for e in restored[1:]:
            assert "/checkpoint: restored round %d (" % e["data"]["round"] \
                in evs.stdout, evs.stdout[-3000:]
        # the final model, from the bucket, is the uninterrupted run's
        got = restore_bucket(uri, tmp_path / "got")
        assert refp.wait(timeout=LIMIT) == 0, \
            (tmp_path / "ref.err").read_text()[-3000:]
        mine, theirs = load(str(got / "final.pt"), str(ref / "final.pt"))
        assert mine and mine == theirs
        ls = subprocess.run([os.path.join(BUILD, "bin", "spotrun"), "ckpt",
                             "ls", uri, "--json"], capture_output=True,
                            text=True, timeout=LIMIT)
        rounds = json.loads(ls.stdout)
        assert rounds[0]["round"] == finals[-1]["data"]["round"]
        files = {f["path"]: f["sha256"] for f in rounds[0]["files"]}
        with open(got / "final.pt", "rb") as f:
            assert files["final.pt"] == hashlib.sha256(f.read()).hexdigest()
    finally:
        if refp and refp.poll() is None:
            refp.kill()
            refp.wait()
        if d:
            d.stop()
        srv.close()


def test_copy_mount_and_mount_in_one_task(tmp_path, monkeypatch):
    """COPY (SkyPilot's short form) beside a MOUNT, no PyTorch: the data
    bucket's objects are in DST before the run, the run's output reaches
    the other bucket in a final round before the job ends."""
    import spotrun
    srv = S3rver()
    d = None
    try:
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)
        data = b"a,b\n1,2\n" * 1000
        with spotrun.objects.ObjectStore("s3://ckpt/dataset") as st:
            st.put("train/part-0.csv", data)
        d = Daemon(tmp_path, make_market(tmp_path, [1]), "--agent",
                   os.path.join(BUILD, "bin", "spotrun-agent"))
        d.start()
        yaml = ("name: copy-and-mount\nresources:\n  accelerators: V100:1\n"
                "envs:\n%sfile_mounts:\n  /data: s3://ckpt/dataset\n"
                "  /out:\n    source: s3://ckpt/out\n    mode: MOUNT\n"
                "run: |\n  cp $SPOTRUN_NODE_DIR/data/train/part-0.csv "
                "$SPOTRUN_NODE_DIR/out/seen.csv\n"
                "spotrun:\n  deadline: 1000h\n  work: 1h\n" % "".join(
                    "  %s: %s\n" % kv for kv in sorted(srv.env().items())))
        jid = d.submit(yaml)
        j = d.wait([jid], LIMIT)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        kinds = [e["type"] for e in d.events(jid)]
        assert "sync_copied" in kinds and "sync_final" in kinds, kinds
        got = restore_bucket("s3://ckpt/out", tmp_path / "got")
        assert (got / "seen.csv").read_bytes() == data
    finally:
        if d:
            d.stop()
        srv.close()


def test_a_run_that_ends_at_once_ends_its_job(tmp_path, monkeypatch):
    """A run that exits at once - with 0, and with 3 - after writing into
    a MOUNT: each job ends (SUCCEEDED, FAILED) once its final round is
    durable, the exit reported after the sync_final event (the agent used
    to count the final round's deadline down for 600 s instead).  Then
    a cancelled run: its job ends once the final round is in the bucket
    (cancel_waits_for_the_final_round)."""
    srv = S3rver()
    d = None
    try:
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)
        d = Daemon(tmp_path, make_market(tmp_path, [1]), "--agent",
                   os.path.join(BUILD, "bin", "spotrun-agent"),
                   "--time-scale", "600")
        d.start()
        jids = {}
        for code, want in ((0, "SUCCEEDED"), (3, "FAILED")):
            yaml = ("name: at-once-%d\nresources:\n  accelerators: V100:1\n"
                    "  use_spot: false\n"
                    "  job_recovery: {max_restarts_on_errors: 0}\n"
                    "envs:\n%sfile_mounts:\n  /ckpt: {source: "
                    "s3://ckpt/at-once-%d, mode: MOUNT}\n"
                    "run: |\n  echo saved-%d > $SPOTRUN_NODE_DIR/ckpt/"
                    "model.txt; exit %d\n"
                    "spotrun:\n  deadline: 1000h\n  work: 1h\n" % (
                        code, "".join("  %s: %s\n" % kv for kv in
                                      sorted(srv.env().items())),
                        code, code, code))
            jids[d.submit(yaml)] = (code, want)
        for j in d.wait(list(jids), LIMIT):
            code, want = jids[j["id"]]
            assert j["state"] == want, (j["message"], d.log_tail())
            kinds = [e["type"] for e in d.events(j["id"])]
            assert "sync_final" in kinds and "workload_exit" in kinds, kinds
            assert kinds.index("sync_final") < kinds.index("workload_exit"), \
                kinds
            got = restore_bucket("s3://ckpt/at-once-%d" % code,
                           tmp_path / ("got-%d" % code))
            assert (got / "model.txt").read_text() == "saved-%d\n" % code
        cancel_waits_for_the_final_round(d, srv, tmp_path)
    finally:
        if d:
            d.stop()
        srv.close()


CANCELLED_RUN = r"""
trap 'echo at-term > $SPOTRUN_NODE_DIR/out/last.txt; exit 0' TERM
echo first > $SPOTRUN_NODE_DIR/out/first.txt
while :; do sleep 0.1; done
"""


def cancel_waits_for_the_final_round(d, srv, tmp_path):
    """spotrun cancel of a running job with a MOUNT: the node is ended only
    after its agent stopped the run (SIGTERM: the script writes one more
    file) and committed the final round with that file (before, the
    cancel terminated the node at once and the round was lost)."""
    yaml = ("name: cancelled\nresources:\n  accelerators: V100:1\n"
            "  use_spot: false\nenvs:\n%sfile_mounts:\n  /out: {source: "
            "s3://ckpt/cancelled, mode: MOUNT}\nrun: |\n%s"
            "spotrun:\n  deadline: 1000h\n  work: 1h\n" % (
                "".join("  %s: %s\n" % kv for kv in sorted(srv.env().items())),
                "".join("  %s\n" % ln for ln in CANCELLED_RUN.strip().split("\n"))))
    jid = d.submit(yaml)
    end = time.time() + LIMIT
    while not any(os.path.exists(os.path.join(d.state, "nodes", str(n["id"]),
                                              "out", "first.txt"))
                  for n in d.job(jid)["nodes"]):
        assert time.time() < end, d.log_tail()
        assert d.job(jid)["state"] not in ("FAILED", "SUCCEEDED"), d.log_tail()
        time.sleep(0.05)
    st, body = d.api("POST", "/v1/jobs/%d/cancel" % jid, {})
    assert st == 202, body
    j = d.wait([jid], LIMIT)[0]
    assert j["state"] == "CANCELLED", (j["message"], d.log_tail())
    kinds = [e["type"] for e in d.events(jid)]
    assert "sync_final" in kinds and "workload_exit" in kinds, kinds
    got = restore_bucket("s3://ckpt/cancelled", tmp_path / "got-cancelled")
    assert (got / "first.txt").read_text() == "first\n"
    assert (got / "last.txt").read_text() == "at-term\n"
