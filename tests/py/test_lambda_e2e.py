"""End to end through the Lambda provider (issue 31): spotrund
--providers lambda drives the Lambda driver against the Lambda emulator
(`spotrun lambda-emulator`, on loopback, over the local market).  Lambda
has no user-data: the driver launches an instance named for its node,
waits for it to be active and runs the node's bootstrap over "ssh" (the
emulator's stand-in, <work>/ssh), whose agent registers.  Lambda sells on-demand only and
gives no notice: the host fails mid-run (the emulator ends the
instance), the control plane sees it gone and replaces it, the job
resumes from its last checkpoint and completes."""

import os
import time

from lambda_emu import KEY, LambdaEmu
from test_azure_e2e import wait_for
from test_ctl_crash import BUILD, ROOT, Daemon
from test_e2e_aws_emu import job_yaml

STEPS = 30


def lambda_setup(tmp_path, monkeypatch):
    """The emulator, its hosts' dir, the share and a daemon (not started)
    configured for it."""
    cloud = LambdaEmu(tmp_path)
    work = cloud.work
    # the first API calls are throttled: the driver backs off and goes on
    cloud.throttle(2)
    share = os.path.join(str(tmp_path), "share")
    os.makedirs(share)
    keyfile = os.path.join(str(tmp_path), "lambda.key")
    with open(keyfile, "w") as f:
        f.write(KEY + "\n")
    os.chmod(keyfile, 0o600)
    monkeypatch.delenv("LAMBDA_API_KEY", raising=False)
    cfg = os.path.join(str(tmp_path), "spotrund.yaml")
    with open(cfg, "w") as f:
        f.write("heartbeat-timeout: 5s\nboot-timeout: 60s\n"
                "providers:\n  lambda:\n    endpoint: %s\n"
                "    api_key_file: %s\n    ssh_key_name: ops\n"
                "    ssh: %s\n    poll_ms: 200\n    regions:\n      us-east-1: {}\n" % (
                    cloud.url, keyfile, cloud.ssh))
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config", cfg,
               "--providers", "lambda",
               "--agent", os.path.join(BUILD, "bin", "spotrun-agent"))
    return work, cloud, share, d


def test_job_through_lambda_driver_and_emulator(tmp_path, monkeypatch):
    work, cloud, share, d = lambda_setup(tmp_path, monkeypatch)
    try:
        d.start()
        jid = d.submit(job_yaml("lambda-e2e", "lambda/us-east-1", share,
                                STEPS, spot=False)
                       .replace("V100:1", "H100:8"))

        def past_five():
            j = d.job(jid)
            assert j["state"] not in ("FAILED", "CANCELLED"), (
                j["message"], d.log_tail())
            return j["state"] == "RUNNING" and (j.get("step") or 0) >= 5
        wait_for(past_five, 90, "the job to run past step 5")
        first = cloud.live()
        assert len(first) == 1, first
        name = first[0]["name"]
        assert name.startswith("sr-") and name.endswith("-1-1"), name
        launches = [r for r in cloud.requests()
                    if r[1] == "/instance-operations/launch"]
        assert launches[0][2]["ssh_key_names"] == ["ops"]
        assert launches[0][2]["name"] == name
        cloud.fail(first[0]["id"])          # the host dies: no notice
        j = d.wait([jid], 180)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        names = [r[2]["name"] for r in cloud.requests()
                 if r[1] == "/instance-operations/launch"]
        assert len(names) >= 2 and len(set(names)) == len(names), names
        with open(os.path.join(share, "starts")) as f:
            starts = f.read().splitlines()
        assert len(starts) >= 2 and int(starts[-1].split()[-1]) >= 5, starts
        with open(os.path.join(share, "completions")) as f:
            assert len(f.read().splitlines()) == 1
        assert j["step"] == STEPS, j
    finally:
        d.stop()
        cloud.stop()


def lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return []


def test_relaunch_after_a_crash_bootstraps_the_earlier_instance(
        tmp_path, monkeypatch):
    """spotrund dies (kill -9) while its launch waits for the instance's
    sshd: the next spotrund's launch of the same node finds the instance
    by its name (no second launch), runs the bootstrap on it once sshd is
    up, and the job completes on it."""
    work, cloud, share, d = lambda_setup(tmp_path, monkeypatch)
    down = os.path.join(work, "ssh-down")
    calls = os.path.join(work, "ssh-calls")
    open(down, "w").close()
    try:
        d.start()
        jid = d.submit(job_yaml("lambda-relaunch", "lambda/us-east-1", share,
                                STEPS, spot=False)
                       .replace("V100:1", "H100:8"))
        # launched, active, and the bootstrap step knocking on ssh
        wait_for(lambda: cloud.live() and lines(calls), 90,
                 "the first daemon's bootstrap to try ssh")
        d.kill9()
        before = len(lines(calls))
        d.start()
        # the new daemon's launch of the node is at the bootstrap too
        wait_for(lambda: len(lines(calls)) > before, 90,
                 "the second daemon's bootstrap to try ssh")
        os.unlink(down)                      # sshd is up
        j = d.wait([jid], 180)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        launches = [r for r in cloud.requests()
                    if r[1] == "/instance-operations/launch"]
        assert len(launches) == 1, launches  # found by name, not again
        inst = cloud.live() or []
        ips = [l for l in os.listdir(work)
               if os.path.isfile(os.path.join(work, l, "runs"))]
        assert len(ips) == 1, (ips, inst)
        # the node script ran once, on the instance of the first launch
        assert len(lines(os.path.join(work, ips[0], "runs"))) == 1
        assert [n["state"] for n in j["nodes"]].count("TERMINATED") == \
            len(j["nodes"]), j["nodes"]
        with open(os.path.join(share, "completions")) as f:
            assert len(f.read().splitlines()) == 1
    finally:
        d.stop()
        cloud.stop()
