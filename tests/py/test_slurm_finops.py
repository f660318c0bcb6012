"""The Slurm pool in `spotrun plan` and in FinOps (docs/slurm.md "In the
plan", "In the bill"), against a REAL Slurm started once for this module
by slurm_cluster.py (it fails, never skips, when it cannot start).

- plan: the partitions appear beside the catalog's cloud pools, at their
  committed price, with a queue estimate read from sinfo/squeue (0 while
  the partition is idle; the running jobs' time left while a job of
  Slurm's own holds every node); a critical job ranks the Slurm pool
  first, a standard one does not get it.
- cost: a job run on the Slurm pool is billed as Committed; the FOCUS
  1.3 export applies its rows to the partition's commitment, the
  commitment dataset lists the partition, and the partition's nodes
  spotrun did not use are idle reserved capacity (waste) in the cost
  report, the FOCUS allocated rows and /metrics.
"""
import csv
import json
import os
import subprocess
import time

from test_ctl_crash import BUILD, ROOT, Daemon
# the fixtures too: one real Slurm for this module, no sanitizer preload
# for Slurm's commands
from test_slurm_provider import (config, daemon, no_preload, shell_job,  # noqa: F401
                                 slurm, squeue, wait)

SPOTRUN = os.path.join(BUILD, "bin", "spotrun")


def plan(tmp, slurm, crit, use_spot, *extra):
    # 9.99 $/GPU-h: dearer than the clouds' V100:2 on demand
    job = os.path.join(str(tmp), "job-%s.yaml" % crit)
    with open(job, "w") as f:
        f.write("name: p\nresources:\n  accelerators: V100:2\n"
                "  use_spot: %s\nspotrun:\n  criticality: %s\n"
                "  deadline: 100h\n  work: 2h\n" % (use_spot, crit))
    r = subprocess.run([SPOTRUN, "plan", job, "--config",
                        config(tmp, slurm, price_per_gpu_h="9.99"), "--data",
                        os.path.join(ROOT, "data")] + list(extra),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_plan_shows_the_slurm_pool_and_its_queue(tmp_path, slurm, no_preload):
    doc = json.loads(plan(tmp_path, slurm, "critical", "false", "--json"))
    first = doc["placements"][0]
    # the committed pool first for a critical job, though clouds sell
    # V100:2 on demand for less than 2 x 9.99 $/h
    assert first["cloud"] == "slurm" and first["committed"], first
    assert first["instance_type"] == "low" and first["feasible"], first
    assert first["price_per_h_micros"] == 19980000, first
    assert first["queue_wait_s"] == 0, first
    assert "2 of 2 nodes idle" in first["queue_basis"], first
    src = [s for s in doc["price_sources"] if s["cloud"] == "slurm"]
    assert src and src[0]["source"] == "live", doc["price_sources"]
    text = plan(tmp_path, slurm, "critical", "false")
    assert "committed pools" in text and "slurm slurm/low: $19.98/h" in text, text
    # standard on spot: never the committed pool
    doc = json.loads(plan(tmp_path, slurm, "standard", "true", "--json"))
    assert not [p for p in doc["placements"] if p["committed"]], doc
    # a job of Slurm's own, in the partition sharing low's nodes, holds
    # both for its time limit (60 min): the wait is its time left, an
    # upper bound
    hi = slurm.run("sbatch", "--parsable", "-p", "high", "-N", "2",
                   "--exclusive", "-t", "60", "-o", "/dev/null", "--wrap",
                   "sleep 600").stdout.strip()
    try:
        wait("the Slurm job running", lambda: [
            r for r in squeue(slurm) if r[0] == hi and r[2] == "RUNNING"], 60)
        doc = json.loads(plan(tmp_path, slurm, "critical", "false", "--json"))
        p = [p for p in doc["placements"] if p["committed"]][0]
        assert 3000 < p["queue_wait_s"] <= 3600, p
        assert "0 of 2 nodes idle, 1 running" in p["queue_basis"], p
        assert "time limits" in p["queue_basis"], p
    finally:
        slurm.run("scancel", hi, check=False)


def metrics(d):
    import urllib.request
    req = urllib.request.Request(d.url + "/metrics")
    req.add_header("Authorization", "Bearer " + d.token)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


def test_slurm_time_is_committed_and_idle_nodes_are_waste(tmp_path, slurm,
                                                           no_preload):
    """A job on the `low` partition (2 nodes x 2 GPUs, 1.85 $/GPU-h): its
    node's time is Committed and applied to the partition's commitment;
    the other node, and this one before and after, are idle reserved
    capacity: waste in the cost report, the FOCUS allocated rows and
    /metrics.  The FOCUS export passes the checker."""
    d = daemon(tmp_path, slurm)
    try:
        d.start()
        jid = d.submit(shell_job("committed").replace("run: 'true'",
                                                      "run: 'sleep 2'"))
        j = d.wait([jid], 120)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        # a window that holds every row billed (the node's last interval
        # is billed when it ends): the whole ledger's cost is Committed
        # time of this partition
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                              time.gmtime(time.time() + 60))

        def billed():
            st, r = d.api("GET", "/v1/cost?until=" + until)
            assert st == 200, r
            used = sum(x["used_cost_micros"] for x in r["committed"]["pools"])
            return r if r["total"]["rows"] > 0 and \
                used == r["total"]["cost_micros"] else None
        rep = wait("the node's time billed as Committed", billed, 60, d)
        c = rep["committed"]
        assert len(c["pools"]) == 1, c
        p = c["pools"][0]
        assert (p["commitment"], p["provider"], p["region"],
                p["instance_type"], p["count"], p["gpus"],
                p["hourly_price_micros"]) == ("slurm-slurm-low", "slurm",
                                              "slurm", "low", 2, 2, 3700000), p
        assert p["idle_hours"] > 0 and p["idle_cost_micros"] > 0, p
        # two nodes were paid for the whole window, one was used part of it
        assert p["idle_hours"] > p["used_hours"], p
        assert rep["total"]["shared_cost_micros"] > 0, rep["total"]
        # the CLI: the committed block
        r = subprocess.run([SPOTRUN, "cost", "--state-dir", d.state],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "COMMITTED capacity" in r.stdout, r.stdout
        assert "slurm-slurm-low (slurm slurm/low, 2 node(s)): used" in \
            r.stdout, r.stdout
        # FOCUS 1.3: Committed rows applied to the partition's commitment,
        # the commitment dataset, the idle capacity allocated as waste
        out = os.path.join(str(tmp_path), "focus.csv")
        r = subprocess.run([SPOTRUN, "cost", "--focus", out, "--state-dir",
                            d.state], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        cc = os.path.join(str(tmp_path), "focus-contract-commitment.csv")
        chk = subprocess.run([os.path.join(BUILD, "tests", "helpers",
                                           "focus_check"), out, cc],
                             capture_output=True, text=True, timeout=60)
        assert chk.returncode == 0, chk.stderr
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
        with open(cc, newline="") as f:
            ccrows = list(csv.DictReader(f))
        assert [(x["ContractCommitmentId"], x["x_ProviderName"],
                 x["x_InstanceType"], x["x_InstanceCount"], x["x_HourlyPrice"])
                for x in ccrows] == [("slurm-slurm-low", "slurm", "low", "2",
                                      "3.7")], ccrows
        usage = [x for x in rows if not x["AllocatedMethodId"]]
        assert usage and all(x["PricingCategory"] == "Committed" and
                             x["ChargeCategory"] == "Usage" for x in usage), usage
        for x in usage:
            applied = json.loads(x["ContractApplied"])
            assert applied[0]["ContractCommitmentId"] == "slurm-slurm-low", x
        idle = [x for x in rows if x["AllocatedMethodId"]]
        assert idle and all(x["ResourceId"] == "slurm-slurm-low" and
                            x["x_UsageState"] == "Idle" and
                            x["PricingCategory"] == "Committed"
                            for x in idle), idle
        assert {x["AllocatedResourceId"] for x in idle} == {"job-%d" % jid}
        # /metrics: the same partition's idle capacity and Committed use
        # (its window ends at the last whole second: equal to the report
        # once the ledger has no row in the current second)
        lab = ('{provider="slurm",region="slurm",instance_type="low",'
               'commitment="slurm-slurm-low"} ')

        def gauges():
            m = metrics(d)
            v = {k: float(m.split("\n%s%s" % (k, lab))[1].split("\n")[0])
                 for k in ("spotrun_idle_reserved_cost_dollars",
                           "spotrun_idle_reserved_gpu_seconds",
                           "spotrun_committed_used_cost_dollars")}
            r = billed()
            return v if r and round(v["spotrun_committed_used_cost_dollars"] *
                                    1e6) == r["committed"]["pools"][0][
                                        "used_cost_micros"] else None
        vals = wait("/metrics matching the report", gauges, 60, d)
        r = subprocess.run(["promtool", "check", "metrics"], input=metrics(d),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout + r.stderr == "", \
            r.stdout + r.stderr
        assert vals["spotrun_idle_reserved_cost_dollars"] > 0, vals
        assert vals["spotrun_idle_reserved_gpu_seconds"] > 0, vals
    finally:
        d.stop()


def test_critical_waits_or_falls_back_by_its_deadline(tmp_path, slurm,
                                                      no_preload):
    """The committed pool is full: a job of Slurm's own holds both nodes
    for its 60-minute limit, so the market view's queue estimate is up to
    an hour.  A critical job whose deadline that wait would miss goes to
    on-demand elsewhere; one with time to spare waits in Slurm's queue."""
    hi = slurm.run("sbatch", "--parsable", "-p", "low", "-N", "2",
                   "--exclusive", "-t", "60", "-o", "/dev/null", "--wrap",
                   "sleep 600").stdout.strip()
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config",
               config(tmp_path, slurm, price_per_gpu_h="0.10"), "--providers",
               "local,slurm", "--agent",
               os.path.join(BUILD, "bin", "spotrun-agent"))
    try:
        wait("the Slurm job running", lambda: [
            r for r in squeue(slurm) if r[0] == hi and r[2] == "RUNNING"], 60)
        d.start()  # the view reads the queue at start (then each minute)

        def placed(deadline):
            jid = d.submit("name: crit\nresources:\n  accelerators: V100:2\n"
                           "  use_spot: false\nrun: 'true'\nspotrun:\n"
                           "  criticality: critical\n  deadline: %s\n"
                           "  work: 6m\n" % deadline)
            ev = wait("placed", lambda: [e for e in d.events(jid)
                                         if e["type"] == "placement"], 60, d)
            # its node's price gauge says how it is bought
            m = wait("its node in /metrics", lambda: [
                l for l in metrics(d).splitlines() if l.startswith(
                    "spotrun_node_hourly_price_dollars{") and
                'job_id="%d"' % jid in l], 60, d)
            d.api("POST", "/v1/jobs/%d/cancel" % jid)
            return ev[0]["data"], m[0]
        # the cluster is the cheapest on-demand too (0.10 $/GPU-h): only
        # the deadline keeps the job off it
        ev, m = placed("30m")
        assert ev["provider"] != "slurm" and 'pricing="on_demand"' in m, (ev, m)
        ev, m = placed("10h")
        assert ev["provider"] == "slurm" and 'pricing="committed"' in m, (ev, m)
    finally:
        d.stop()
        slurm.run("scancel", hi, check=False)
