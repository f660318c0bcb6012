"""Placement and recovery through the market/sim policy, on the local
cloud with a synthetic market (see test_ctl_crash.py for the fixture):

- a deadline too tight for spot goes to on-demand, and the job finishes;
- criticality critical / use_spot false never use spot;
- with slack and spot capacity the job runs on spot, and a reclaimed pool
  moves it to another zone, where it finishes;
- a slow job's work estimate learns its pace, and only ever moves it from
  spot to on-demand;
- a job whose checkpointed work falls behind on spot is moved by the
  deadline guard to on-demand, from the checkpoint its stop wrote.

These run on a cloud clock scaled from the real one, so whether a job
meets its deadline here depends on how loaded the machine is: the tests
assert the decisions (and that the job finishes), not the date.  That
the policy meets its deadlines is asserted on simulated time, where it is
exact (tests/unit/test_sim_policy.c, test_sim_synthetic.c)."""

import time

from test_ctl_crash import completions, daemon_factory, spot_job  # noqa: F401


def first_placement(d, jid):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for e in d.events(jid):
            if e["type"] in ("placement", "move"):
                return e
        time.sleep(0.1)
    raise AssertionError("no placement: %s" % d.log_tail())


def test_tight_deadline_goes_on_demand(daemon_factory):
    d = daemon_factory([1, 1, 0, 0], "--time-scale", "600",
                       "--restart-guess-ms", "500")
    d.start()
    # declared work 1 h, due in 65 min: one spot tick lost plus a restart
    # would miss it, so the policy (its deadline guard) buys on-demand.
    # The workload itself is 20 steps of 0.1 s.
    yaml = spot_job("tight", 20).replace("deadline: 1000h", "deadline: 65m") \
                                .replace("work: 10h", "work: 1h")
    jid = d.submit(yaml)
    p = first_placement(d, jid)
    assert p["data"]["spot"] is False, p
    ev = d.events(jid)
    assert any(e["type"] == "deadline_risk" for e in ev)
    j = d.wait([jid], 120)[0]
    assert j["state"] == "SUCCEEDED", j["message"]
    assert j["preemptions"] == 0
    assert all(not n["spot"] for n in j["nodes"]), j["nodes"]


def test_governance_on_demand_only(daemon_factory):
    d = daemon_factory([1], "--time-scale", "600")
    d.start()
    crit = spot_job("crit", 5).replace("spotrun:\n", "spotrun:\n  criticality: critical\n") \
                              .replace("use_spot: true", "use_spot: false")
    od = spot_job("od", 5).replace("use_spot: true", "use_spot: false")
    for jid in (d.submit(crit), d.submit(od)):
        p = first_placement(d, jid)
        assert p["data"]["spot"] is False, p
        assert "on-demand only" in p["data"]["why"]
        j = d.wait([jid], 60)[0]
        assert j["state"] == "SUCCEEDED", j["message"]
        assert all(not n["spot"] for n in j["nodes"])


def test_reclaimed_pool_moves_the_job(daemon_factory):
    # pools are up 5 h then down 3 h, each zone shifted by one hour, so
    # when one zone is reclaimed another has capacity
    d = daemon_factory([1, 1, 1, 1, 1, 0, 0, 0], "--time-scale", "3600",
                       "--notice-ms", "1000", "--restart-guess-ms", "500")
    d.start()
    jid = d.submit(spot_job("mover", 150))
    p = first_placement(d, jid)
    assert p["data"]["spot"] is True, p
    j = d.wait([jid], 120)[0]
    assert j["state"] == "SUCCEEDED", j["message"]
    assert j["preemptions"] >= 1
    ev = d.events(jid)
    kinds = [e["type"] for e in ev]
    assert "notice" in kinds and "preempted" in kinds and "recovered" in kinds
    # every recovery placed the job where the trace had capacity; at least
    # one of them was another zone
    assert j["moves"] >= 1
    moves = [e for e in ev if e["type"] == "move"]
    assert moves and all(m["data"]["spot"] for m in moves)
    # the node that was preempted is TERMINATED with reason preempted
    assert any(n["end_reason"] == "preempted" for n in j["nodes"])
    # nodes billed: the ledger sums to the job's cost
    assert j["cost_micros"] > 0
    assert j["list_cost_micros"] > j["cost_micros"]


def test_slow_job_on_spot_learns_its_pace_and_moves_only_to_on_demand(
        daemon_factory):
    # The job file says 10 minutes of work; the workload needs ~1.7 cloud
    # hours (100 steps of 0.1 s at 600x) against a 2 h deadline.  The work
    # estimator (lib/ctl/workest.c) starts from the declared work and
    # learns the slower pace at a bounded rate; the spot pool never
    # reclaims.  On a quiet machine the deadline holds on spot and the
    # move rule (a move must pay for itself, docs/control-plane.md) keeps
    # the node; a loaded machine slows the workload further, and then the
    # guard may move it - only ever from spot to on-demand.  How fast the
    # estimate learns is asserted on exact inputs in
    # tests/unit/test_ctl_workest.c.
    d = daemon_factory([1], "--time-scale", "600", "--restart-guess-ms", "500")
    d.start()
    yaml = spot_job("slow", 100).replace("deadline: 1000h", "deadline: 2h") \
                                .replace("work: 10h", "work: 10m")
    jid = d.submit(yaml)
    p = first_placement(d, jid)
    assert p["data"]["spot"] is True, p
    j = d.wait([jid], 120)[0]
    assert j["state"] == "SUCCEEDED", j["message"]
    assert j["preemptions"] == 0
    assert j["sim_step_s"] and j["sim_step_s"] > 0
    # the estimate moved well past the declared 600 s towards the real work
    assert j["sim_work_s"] == 600.0, j
    assert j["sim_work_estimate_s"] > 3 * 600.0, j
    ev = d.events(jid)
    kinds = [e["type"] for e in ev]
    assert "preempted" not in kinds, kinds
    if "migrated" in kinds:
        moves = [e["message"] for e in ev if e["type"] == "transition" and
                 e["message"].startswith("moving ")]
        assert moves and "to on-demand" in moves[0], moves
    else:
        assert all(n["spot"] for n in j["nodes"]), j["nodes"]
    assert len(completions(d, jid)) == 1


def test_guard_moves_a_job_whose_checkpoints_lag_to_on_demand(daemon_factory):
    # The deadline guard's spot -> on-demand migration, forced.  Work done
    # is what the checkpoints hold (recon__work_done), and this workload
    # checkpoints only when it is told to stop (SIGTERM) or at the end.
    # Declared work 1 h (60 steps of 0.1 s at 600x), deadline 2 h: spot
    # is always up and cheaper, so the job starts on spot; but while it
    # runs its checkpointed work stays at 0, the slack (time left - work
    # left) drains, and once one more spot tick lost plus a restart would
    # miss the deadline, the guard must move it.  It has to go to
    # on-demand, from the checkpoint the stop wrote, and meet the deadline.
    d = daemon_factory([1], "--time-scale", "600", "--restart-guess-ms", "500")
    d.start()
    yaml = spot_job("lagging", 60).replace("deadline: 1000h", "deadline: 2h") \
                                  .replace("work: 10h", "work: 1h") \
                                  .replace("$((s % 10))", "$((s % 1000))")
    assert "% 1000" in yaml
    jid = d.submit(yaml)
    p = first_placement(d, jid)
    assert p["data"]["spot"] is True, p
    j = d.wait([jid], 120)[0]
    assert j["state"] == "SUCCEEDED", j["message"]
    assert j["preemptions"] == 0
    ev = d.events(jid)
    kinds = [e["type"] for e in ev]
    assert "migrated" in kinds, kinds
    moves = [e["message"] for e in ev if e["type"] == "transition" and
             e["message"].startswith("moving ")]
    assert moves and "to on-demand" in moves[0], moves
    # the job ran on spot first, then on on-demand; the first node was
    # retired by the move (not preempted)
    nodes = sorted(j["nodes"], key=lambda n: n["id"])
    assert nodes[0]["spot"] and nodes[0]["end_reason"] == "migrated", nodes
    assert any(not n["spot"] for n in nodes[1:]), nodes
    # the stop's checkpoint was restored: the work ran to the end once
    assert len(completions(d, jid)) == 1
