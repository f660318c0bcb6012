"""End to end through the AWS provider (issue 11): spotrund --providers aws
drives the EC2 driver against the EC2 emulator (`spotrun ec2-emulator`,
on loopback), and a real spotrun-agent boots from the user-data the
driver sends:

  provision (RunInstances with the bootstrap script) -> the agent
  registers with the token it got through user-data -> the pool is
  reclaimed (the emulator's SIGUSR1): the instance's own IMDSv2 serves
  the notice, the agent reports it, the workload takes its final
  checkpoint and exits -> the instance is terminated -> the replacement
  lands in another zone (the reclaimed one answers
  InsufficientInstanceCapacity, which marks it) -> the job resumes from
  the checkpoint and completes.

The workload keeps its checkpoint in a directory given through the job's
envs: the stand-in for object storage, since a cloud node shares no disk
with the control plane.  The test refuses an EC2 endpoint that is not on
loopback."""

import json
import os
import signal
import subprocess
import time
import urllib.parse

import pytest

from test_ctl_crash import BUILD, ROOT, Daemon

ZONES = ["use1-az1", "use1-az2", "use1-az3", "use1-az4", "use1-az5", "use1-az6"]

STEPS = 40
# 40 steps of 0.1 s, a checkpoint at every step (the step file), the
# final one on SIGTERM (the agent's stop at the notice).
WORKLOAD = r"""
d=$CKPT_SHARE; s=0; [ -f $d/step ] && s=$(cat $d/step)
echo "attempt $SPOTRUN_ATTEMPT starts at $s" >> $d/starts
save() { echo $s > $d/step.tmp && mv $d/step.tmp $d/step; }
trap 'save; echo "final checkpoint at $s" >> $d/finals; exit 0' TERM
while [ $s -lt STEPS ]; do
  s=$((s+1)); sleep 0.1 & wait $!
  save
  printf '{"step":%d,"total_steps":STEPS,"ckpt_step":%d}' $s $s > $SPOTRUN_STATUS_FILE.tmp
  mv $SPOTRUN_STATUS_FILE.tmp $SPOTRUN_STATUS_FILE
done
echo "attempt $SPOTRUN_ATTEMPT zone $SPOTRUN_ZONE" >> $d/completions
"""


def start_emulator(tmp, region=None, request_log=None, itype="p3.2xlarge"):
    work = os.path.join(str(tmp), "emu" + (("-" + region) if region else ""))
    os.makedirs(work)
    args = [os.path.join(BUILD, "bin", "spotrun"), "ec2-emulator",
            "--work-dir", work, "--data", os.path.join(ROOT, "data"),
            "--time-scale", "60", "--notice-s", "300"]
    if region:
        args += ["--region", region]
    if request_log:
        args += ["--request-log", request_log]
    for z in ZONES:
        args += ["--capacity", "%s:%s=plenty" % (z, itype)]
    log = open(os.path.join(str(tmp), "emulator%s.log" % (
        ("-" + region) if region else "")), "wb")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log,
                            start_new_session=True, text=True)
    log.close()
    url = proc.stdout.readline().strip()
    host = urllib.parse.urlsplit(url).hostname
    if host != "127.0.0.1":
        proc.kill()
        pytest.fail("refusing an EC2 endpoint not on loopback: %r" % url)
    return proc, url


def aws_env(monkeypatch, url):
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", url)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEMULATOR")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "emulator-secret")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def daemon(tmp_path, providers):
    return Daemon(tmp_path, os.path.join(ROOT, "data"), "--providers", providers,
                  "--aws-image", "ami-0123456789abcdef0", "--time-scale", "60",
                  "--agent", os.path.join(BUILD, "bin", "spotrun-agent"),
                  "--heartbeat-timeout", "20s", "--boot-timeout", "60s")


def job_yaml(name, infra, share, steps, spot=True):
    run = WORKLOAD.replace("STEPS", str(steps))
    return ("name: %s\nresources:\n  accelerators: V100:1\n"
            "  use_spot: %s\n  infra: %s\n"
            "envs:\n  CKPT_SHARE: %s\n"
            "run: |\n%s\nspotrun:\n  deadline: 1000h\n  work: 1h\n" % (
                name, "true" if spot else "false", infra, share,
                "".join("  " + l + "\n" for l in run.strip().splitlines())))


def wait_running(d, jid, step, timeout=60):
    """The job's view once it runs past `step`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = d.job(jid)
        if j["state"] == "RUNNING" and (j.get("step") or 0) >= step:
            return j
        assert j["state"] not in ("FAILED", "CANCELLED"), j["message"]
        time.sleep(0.1)
    raise AssertionError("never ran: %s\n%s" % (j["message"], d.log_tail()))


def test_job_through_aws_driver_and_emulator(tmp_path, monkeypatch):
    emu, url = start_emulator(tmp_path)
    share = os.path.join(str(tmp_path), "share")
    os.makedirs(share)
    aws_env(monkeypatch, url)
    d = daemon(tmp_path, "aws")
    try:
        d.start()
        jid = d.submit(job_yaml("aws-e2e", "aws/us-east-1", share, STEPS))
        # running on an instance, past a few checkpoints
        j = wait_running(d, jid, 5)
        first = [n for n in j["nodes"] if n["state"] == "READY"][0]
        emu.send_signal(signal.SIGUSR1)   # the cloud reclaims the pool
        j = d.wait([jid], 120)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        assert j["preemptions"] >= 1, j
        types = [e["type"] for e in d.events(jid)]
        assert "notice" in types or "notice_ack" in types, types
        nodes = j["nodes"]
        old = [n for n in nodes if n["id"] == first["id"]][0]
        assert old["state"] == "TERMINATED" and old["end_reason"] == "preempted", old
        last = max(nodes, key=lambda n: n["id"])
        assert last["zone"] != first["zone"], nodes
        with open(os.path.join(share, "finals")) as f:
            finals = f.read().splitlines()
        # the final checkpoint came after the notice, past the steps seen
        assert finals and int(finals[0].split()[-1]) >= 5, finals
        with open(os.path.join(share, "completions")) as f:
            done = f.read().splitlines()
        assert len(done) == 1, done
        assert j["step"] == STEPS, j
        # resumed, not restarted: the last attempt began at the final
        # checkpoint the preempted one took
        with open(os.path.join(share, "starts")) as f:
            starts = f.read().splitlines()
        assert len(starts) >= 2, starts
        assert int(starts[-1].split()[-1]) == int(finals[-1].split()[-1]), (
            starts, finals)
    finally:
        d.stop()
        emu.terminate()
        emu.wait(timeout=20)


def ec2_tool(url, *args):
    """The EC2 driver's own client against the emulator (as a user's
    AWS CLI would be): its parsed {"ok": ...} answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ENDPOINT_URL_EC2=url, AWS_REGION="us-east-1",
               AWS_ACCESS_KEY_ID="AKIDEMULATOR",
               AWS_SECRET_ACCESS_KEY="emulator-secret",
               AWS_EC2_METADATA_DISABLED="true", SPOTRUN_LOG_LEVEL="off")
    r = subprocess.run([os.path.join(BUILD, "conformance", "ec2_tool")] +
                       list(args), env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return json.loads(r.stdout)["ok"]


def test_instance_terminated_outside_spotrun(tmp_path, monkeypatch):
    """An instance terminated by someone else (no notice: the AWS console,
    another tool) is ended as soon as EC2 lists it terminated - not after
    the heartbeat timeout (120 s here, longer than the test waits) - and
    the job recovers on a new instance and completes (session 24)."""
    emu, url = start_emulator(tmp_path)
    share = os.path.join(str(tmp_path), "share")
    os.makedirs(share)
    aws_env(monkeypatch, url)
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--providers", "aws",
               "--aws-image", "ami-0123456789abcdef0", "--time-scale", "60",
               "--agent", os.path.join(BUILD, "bin", "spotrun-agent"),
               "--heartbeat-timeout", "120s", "--boot-timeout", "60s")
    try:
        d.start()
        jid = d.submit(job_yaml("outside", "aws/us-east-1", share, STEPS,
                                spot=False))
        j = wait_running(d, jid, 3)
        first = [n for n in j["nodes"] if n["state"] == "READY"][0]
        ec2_tool(url, "terminate", first["instance_id"])
        t0 = time.time()
        deadline = t0 + 100  # the heartbeat timeout is 120 s
        while time.time() < deadline:
            old = [n for n in d.job(jid)["nodes"] if n["id"] == first["id"]][0]
            if old["state"] != "READY":
                break
            time.sleep(0.2)
        print("node ended %.1f s after its instance was terminated" %
              (time.time() - t0))
        assert old["state"] == "LOST" and \
            old["end_reason"] == "instance terminated", (old, d.log_tail())
        j = d.wait([jid], 120)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        assert j["preemptions"] == 0 and j["recoveries"] >= 1, j
        lost = [e for e in d.events(jid) if e["type"] == "node_lost"]
        assert [e["node_id"] for e in lost] == [first["id"]], lost
    finally:
        d.stop()
        emu.terminate()
        emu.wait(timeout=20)


def test_local_and_aws_in_one_daemon(tmp_path, monkeypatch):
    """--providers local,aws: a job kept to aws/us-east-1 runs on EC2 (the
    emulator), one kept to aws/us-west-2 on the local cloud's simulation
    of it (aws is enabled for us-east-1 only)."""
    emu, url = start_emulator(tmp_path)
    shares = [os.path.join(str(tmp_path), s) for s in ("east", "west")]
    for s in shares:
        os.makedirs(s)
    aws_env(monkeypatch, url)
    d = daemon(tmp_path, "local,aws")
    try:
        d.start()
        east = d.submit(job_yaml("east", "aws/us-east-1", shares[0], 5))
        west = d.submit(job_yaml("west", "aws/us-west-2", shares[1], 5,
                                 spot=False))
        jobs = d.wait([east, west], 120)
        for j in jobs:
            assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        assert {n["provider"] for n in jobs[0]["nodes"]} == {"aws"}, jobs[0]
        assert {n["provider"] for n in jobs[1]["nodes"]} == {"local"}, jobs[1]
        assert all(n["region"] == "us-west-2" for n in jobs[1]["nodes"])
    finally:
        d.stop()
        emu.terminate()
        emu.wait(timeout=20)


def run_lines(path):
    """The RunInstances lines of an emulator's request log ("<ns>
    RunInstances <status> <code> Key=Value..."), their keys as dicts."""
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                words = line.split()
                if len(words) > 4 and words[1] == "RunInstances":
                    out.append(dict(w.split("=", 1) for w in words[4:]))
    return out


def test_config_file_regions_and_task_image(tmp_path, monkeypatch):
    """The daemon's config file enables aws in two regions, each with its
    own endpoint (an emulator per region), image and subnet; no --providers
    or --aws-* flag.  A job kept to us-east-1 boots the region's
    configured image in its configured subnet; a job kept to us-west-2
    whose resources.image_id names an image per region boots that one
    (the task's image overrides the configured one).  The emulators log
    what RunInstances carried."""
    logs = {r: os.path.join(str(tmp_path), "requests-%s.log" % r)
            for r in ("us-east-1", "us-west-2")}
    emus = {r: start_emulator(tmp_path, r, logs[r]) for r in logs}
    aws_env(monkeypatch, "http://127.0.0.1:9")    # overridden per region
    monkeypatch.delenv("AWS_ENDPOINT_URL_EC2")
    cfg = os.path.join(str(tmp_path), "spotrund.yaml")
    with open(cfg, "w") as f:
        f.write("time-scale: 60\nheartbeat-timeout: 20s\nboot-timeout: 60s\n"
                "providers:\n  aws:\n    regions:\n"
                "      us-east-1:\n        endpoint: %s\n"
                "        image: ami-0east000000000000\n"
                "        subnet: subnet-east\n"
                "      us-west-2:\n        endpoint: %s\n"
                "        image: ami-0west000000000000\n" % (
                    emus["us-east-1"][1], emus["us-west-2"][1]))
    shares = [os.path.join(str(tmp_path), s) for s in ("east", "west")]
    for s in shares:
        os.makedirs(s)
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config", cfg,
               "--agent", os.path.join(BUILD, "bin", "spotrun-agent"))
    try:
        d.start()
        east = d.submit(job_yaml("east", "aws/us-east-1", shares[0], 3,
                                 spot=False))
        west_yaml = job_yaml("west", "aws/us-west-2", shares[1], 3,
                             spot=False).replace(
            "  infra: aws/us-west-2\n",
            "  infra: aws/us-west-2\n  image_id:\n"
            "    us-west-2: ami-0task000000000000\n"
            "    us-east-1: ami-0other00000000000\n")
        west = d.submit(west_yaml)
        jobs = d.wait([east, west], 120)
        for j in jobs:
            assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
            assert {n["provider"] for n in j["nodes"]} == {"aws"}, j
        e_runs, w_runs = run_lines(logs["us-east-1"]), run_lines(logs["us-west-2"])
        assert e_runs and w_runs, (e_runs, w_runs)
        assert {r["ImageId"] for r in e_runs} == {"ami-0east000000000000"}, e_runs
        assert {r.get("SubnetId") for r in e_runs} == {"subnet-east"}, e_runs
        assert {r["ImageId"] for r in w_runs} == {"ami-0task000000000000"}, w_runs
        assert all("SubnetId" not in r for r in w_runs), w_runs
    finally:
        d.stop()
        for proc, _ in emus.values():
            proc.terminate()
            proc.wait(timeout=20)
