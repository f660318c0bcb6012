"""Failover with the AWS provider (issue 26, "Fencing beyond the database"):
two spotrund share one PostgreSQL store and drive aws against an EC2
emulator (eventual consistency on: a new instance unseen for up to 3 s;
RunInstances answering 0.7 s late, so leaders die with launches in flight)
through a fleet of light fake nodes (tests/py/aws_fleet.py), while one-
node spot jobs launch, finish and are swept.  The leader is killed with
-9 at random moments SPOTRUN_AWS_FAILOVER_KILLS times (8 in make check,
20 in make soak), each time during launches and leak sweeps; then a
leader is frozen with SIGSTOP, the standby takes over and works, and the
frozen one is resumed.

Required, from the emulator's request log (every RunInstances and
TerminateInstances names the lease epoch it was decided under) and the
daemons' logs (when each epoch was taken):
  - 0 IdempotentParameterMismatch: a launch sent again after a failover
    carries exactly what the first attempt sent;
  - 0 side effects from a stale leader: no request of epoch E after
    epoch E+1 was taken - in particular nothing from the resumed one;
  - 0 duplicates: no node ever had two instances;
  - every job succeeds and nothing is left running.

Runs in the PostgreSQL pass (scripts/run-tests BUILD pg)."""
import os
import random
import re
import signal
import time
from datetime import datetime

import pytest

import aws_fleet as af
import test_store_failover as tsf
from test_ctl_crash import ROOT

PG = os.environ.get("SPOTRUN_CHECK_STORE") == "postgresql"
KILLS = int(os.environ.get("SPOTRUN_AWS_FAILOVER_KILLS", "8"))
SCALE = 600  # the pair's --time-scale

TAKE = re.compile(r'^ts=(\S+) .*msg="this spotrund is the leader".*epoch=(\d+)')


def takes(members):
    """epoch -> wall-clock time it was taken, from the daemons' logs."""
    out = {}
    for m in members:
        with open(m.log, errors="replace") as f:
            for line in f:
                g = TAKE.match(line)
                if g:
                    t = datetime.fromisoformat(g.group(1).replace("Z", "+00:00"))
                    out[int(g.group(2))] = t.timestamp()
    return out


@pytest.mark.skipif(not PG, reason="needs PostgreSQL: runs"
                    " in the PostgreSQL pass (scripts/run-tests BUILD pg)")
def test_aws_leader_killed_and_frozen(tmp_path, monkeypatch):
    seed = int(os.environ.get("SPOTRUN_AWS_FAILOVER_SEED", "26"))
    rnd = random.Random(seed)
    emu = af.Emulator(tmp_path, "us-east-1", af.EAST_ZONES, SCALE,
                      ["--consistency-s", "3", "--notice-s", "600",
                       "--run-latency-ms", "700", "--seed", str(seed)])
    af.aws_env(monkeypatch)
    agent, spool = af.write_fake_agent(tmp_path)
    cfg = af.config(tmp_path, [emu], SCALE)
    p = tsf.Pair(tmp_path, os.path.join(ROOT, "data"),
                 ["--config", cfg, "--agent", agent])
    fleet = af.Fleet(spool, hb_s=1.0, seed=seed)
    jobs = []
    print("aws failover: seed %d, %d kills" % (seed, KILLS))

    def submit(i, run_s):
        st, body = p.call("POST", "/v1/jobs", {
            "spec_yaml": af.job_yaml("fo-%d" % i, run_s), "spec_name": "t.yaml"})
        assert st == 201, body
        jobs.append(body["job"]["id"])

    try:
        p.m[0].start()
        p.m[1].start()
        fleet.start()
        for i in range(KILLS):
            # launches in flight when the leader dies: a job or two each
            for _ in range(rnd.randint(1, 2)):
                submit(len(jobs), rnd.randint(2, 6))
            time.sleep(rnd.uniform(0.1, 2.5))
            lead, epoch = p.wait_leader()
            assert lead is not None, [m.tail() for m in p.m]
            other = p.m[1] if lead is p.m[0] else p.m[0]
            t0 = time.monotonic()
            lead.kill9()
            while time.monotonic() - t0 < 15:
                new, e2 = p.leader()
                if new is other and e2 > epoch:
                    break
                time.sleep(0.02)
            assert new is other, ("no takeover", i, other.tail())
            lead.start()
        # a leader frozen in the middle of its work (jobs finishing: their
        # instances being terminated, sweeps), resumed after a failover
        for _ in range(3):
            submit(len(jobs), 2)
        time.sleep(2.5)   # some finishing (terminations), some launching
        lead, epoch = p.wait_leader()
        other = p.m[1] if lead is p.m[0] else p.m[0]
        lead.proc.send_signal(signal.SIGSTOP)
        frozen_at = time.time()
        # ask the standby alone: the frozen leader would hold each poll
        # for the client's 10 s timeout (in CI two polls filled the window)
        t0 = time.monotonic()
        e2 = 0
        while time.monotonic() - t0 < 60:
            e2 = p.leads(other)
            if e2 > epoch:
                break
            time.sleep(0.02)
        assert e2 > epoch, ("no takeover from the frozen leader", other.tail())
        for _ in range(3):
            submit(len(jobs), 2)
        time.sleep(3)
        lead.proc.send_signal(signal.SIGCONT)
        resumed_at = time.time()
        time.sleep(3)
        deadline = time.time() + 300
        done = []
        while time.time() < deadline:
            done = [p.call("GET", "/v1/jobs/%d" % j)[1]["job"] for j in jobs]
            if all(j["state"] in tsf.TERMINAL for j in done):
                break
            time.sleep(0.5)
        failed = [(j["id"], j["state"], j["message"]) for j in done
                  if j["state"] != "SUCCEEDED"]
        assert not failed, (failed, [m.tail() for m in p.m])

        cluster = af.cluster_of(p.m[0].log)
        insts = af.assert_no_leak_or_duplicate([emu], cluster, 60, 1)

        took = takes(p.m)
        reqs = emu.requests()
        mismatch = [r for r in reqs if r["code"] == "IdempotentParameterMismatch"]
        assert not mismatch, mismatch
        stale = [r for r in reqs
                 if r["action"] in ("RunInstances", "TerminateInstances") and
                 r["epoch"] and r["epoch"] + 1 in took and
                 r["t"] > took[r["epoch"] + 1]]
        assert not stale, ("side effects from a stale leader", stale, took)
        from_frozen = [r for r in reqs if r["epoch"] == epoch and
                       r["t"] >= resumed_at]
        assert not from_frozen, ("the resumed leader sent", from_frozen)
        sent = [r for r in reqs if r["action"] in ("RunInstances",
                                                   "TerminateInstances")]
        with open(lead.log, errors="replace") as f:
            held = sum(("not sent" in l or "fenced" in l) and
                       "epoch=%d" % epoch in l for l in f)
        print("aws failover: %d kills + 1 freeze, %d epochs, %d jobs "
              "succeeded, %d instances, %d launches and terminations sent "
              "(%d re-sent launches answered with the same instance), "
              "0 IdempotentParameterMismatch, 0 from a stale leader, "
              "0 duplicates, 0 leaked; frozen for %.1f s, then held back "
              "%d side effect(s) of its epoch" % (
                  KILLS, len(took), len(done), len(insts), len(sent),
                  sum(r["action"] == "RunInstances" for r in sent) - len(insts),
                  resumed_at - frozen_at, held))
    finally:
        fleet.stop()
        for m in p.m:
            if m.alive():
                try:
                    m.proc.send_signal(signal.SIGCONT)
                except OSError:
                    pass
        p.stop()
        emu.stop()
