"""The slurm provider when Slurm says no, against a REAL Slurm
(slurm_cluster.py; one cluster for this module, whose partitions it
changes): every refusal is a clear error naming what is wrong, and no
job is lost or doubled.

- The controller down (sbatch, squeue fail): a job launched then waits
  (a transient error, retried under the same key), and a job already
  running keeps its node - the control plane cannot see it end, so it
  ends nothing - and both complete once the controller is back, each in
  one Slurm job.
- sbatch refusing a launch for good, a partition the controller no longer
  has: the job fails with Slurm's words, and no Slurm job was made.
- A time limit above the partition's MaxTime fails the job before any
  sbatch (Slurm would queue it for ever); `spotrun check` names an
  unknown partition, a time limit too short, a bad price.
"""
import os
import subprocess

from conftest import store_rows
from test_ctl_crash import BUILD
from test_slurm_provider import (config, daemon, no_preload, shell_job,  # noqa: F401
                                 slurm, squeue, wait)

LOW = ("PartitionName=low Nodes=n1,n2 Default=YES PriorityTier=1 "
       "PreemptMode=REQUEUE GraceTime=60 MaxTime=60 State=UP")


def of_cluster(slurm, d):
    """This daemon's Slurm jobs (the module's cluster runs others')."""
    cluster = store_rows(d.state, "select value from settings "
                         "where key='cluster_id'")[0][0]
    return [r for r in squeue(slurm) if r[3].startswith("spotrun:%s:" % cluster)]


def test_controller_down_no_job_lost(tmp_path, slurm, no_preload):
    d = daemon(tmp_path, slurm)
    gate = tmp_path / "go"
    try:
        d.start()
        # runs until the test lets it end (a file), so the controller is
        # down while it runs, whatever the load
        running = d.submit(shell_job("ctl-down-running").replace(
            "run: 'true'", "run: 'while [ ! -e %s ]; do sleep 0.2; done'" % gate))
        wait("the job running on Slurm", lambda: d.job(running)["state"] ==
             "RUNNING", 120, d)
        slurm.stop_controller()
        launched = d.submit(shell_job("ctl-down-launched"))
        # sbatch cannot reach slurmctld: a transient error, retried; squeue
        # neither: no node is seen to end
        wait("the launch failing on the controller", lambda: "Unable to "
             "contact slurm controller" in d.log_tail(), 120, d)
        wait("the cluster's listing failing", lambda: "cannot list instances"
             in d.log_tail(), 120, d)
        j = d.job(running)
        assert j["state"] == "RUNNING", (j, d.log_tail())
        assert [n["state"] for n in j["nodes"]] == ["READY"], j["nodes"]
        assert d.job(launched)["state"] not in ("FAILED", "CANCELLED"), \
            d.job(launched)
        slurm.start_controller()
        gate.write_text("")
        done = d.wait([running, launched], 180)
        ours = of_cluster(slurm, d)
        for j in done:
            assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
            assert j["preemptions"] == 0 and len(j["nodes"]) == 1, j
            mine = [r for r in ours if "slurm-" + r[0] ==
                    j["nodes"][0]["instance_id"]]
            assert len(mine) == 1, (ours, j["nodes"])
        assert len(ours) == 2, ours
    finally:
        d.stop()


def test_sbatch_refusal_fails_the_job_clearly(tmp_path, slurm, no_preload):
    d = daemon(tmp_path, slurm)
    try:
        d.start()
        # the partition gone from the controller (the daemon still sells
        # it: its market view is a minute old at most)
        slurm.run("scontrol", "delete", "PartitionName=low")
        jid = d.submit(shell_job("no-partition"))
        j = d.wait([jid], 120)[0]
        assert j["state"] == "FAILED", j
        assert j["message"].endswith("start node %d: sbatch: error: invalid "
                                     "partition specified: low (invalid)" %
                                     j["nodes"][0]["id"]), j["message"]
        assert of_cluster(slurm, d) == []
    finally:
        if "low" not in slurm.run("sinfo", "-h", "-o", "%R").stdout.split():
            slurm.run("scontrol", "create", *LOW.split())
        d.stop()


def test_time_limit_above_partition_max_fails_clearly(tmp_path, slurm, no_preload):
    d = daemon(tmp_path, slurm, time="30m")   # low's MaxTime is 60 min
    try:
        d.start()
        # lowered while spotrund runs: its market view still says 60 min,
        # the launch reads MaxTime anew (Slurm would queue the job for
        # ever, reason PartitionTimeLimit)
        slurm.run("scontrol", "update", "PartitionName=low", "MaxTime=10")
        jid = d.submit(shell_job("too-long"))
        j = d.wait([jid], 60)[0]
        assert j["state"] == "FAILED", j
        assert ("providers.slurm.time: 1800 s is more than partition low's "
                "MaxTime (600 s)") in j["message"], j["message"]
        assert of_cluster(slurm, d) == []
    finally:
        slurm.run("scontrol", "update", "PartitionName=low", "MaxTime=60")
        d.stop()


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
