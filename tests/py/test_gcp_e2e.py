"""End to end through the GCP provider (issue 31): spotrund --providers
gcp drives Compute Engine's REST API on the GCE emulator (`spotrun
gce-emulator`, on loopback), with a service account whose RS256 JWT the
emulator's token endpoint checks, and a real spotrun-agent boots from the
startup-script the driver sends:

  instances.insert (SPOT, labels, startup-script, requestId) -> the agent
  registers with its one-time bootstrap secret -> the VM is preempted:
  its metadata server's instance/preempted turns TRUE and answers the
  agent's hanging GET; the agent reports the notice, the workload takes
  its final checkpoint and exits -> 30 s (cloud) later GCE deletes the
  VM -> the replacement lands in another zone (the reclaimed one answers
  ZONE_RESOURCE_POOL_EXHAUSTED) -> the job resumes and completes."""
import os
import time

from test_ctl_crash import BUILD, ROOT, Daemon
from test_e2e_aws_emu import job_yaml
import gce_emu

STEPS = 40


def test_job_through_gcp_driver_and_emulator(tmp_path, monkeypatch):
    log = os.path.join(str(tmp_path), "requests.log")
    emu, url = gce_emu.start(tmp_path, request_log=log)
    share = os.path.join(str(tmp_path), "share")
    os.makedirs(share)
    gce_emu.gcp_env(monkeypatch, tmp_path, url)
    cfg = os.path.join(str(tmp_path), "spotrund.yaml")
    with open(cfg, "w") as f:
        f.write("providers:\n  gcp:\n    image: projects/debian-cloud/global/"
                "images/family/debian-12\n    regions:\n      us-central1: {}\n")
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config", cfg,
               "--providers", "gcp", "--time-scale", "60",
               "--agent", os.path.join(BUILD, "bin", "spotrun-agent"),
               "--heartbeat-timeout", "20s", "--boot-timeout", "60s")
    try:
        d.start()
        jid = d.submit(job_yaml("gcp-e2e", "gcp/us-central1", share, STEPS)
                       .replace("V100:1", "A100:1"))
        deadline = time.time() + 60
        while time.time() < deadline:
            j = d.job(jid)
            if j["state"] == "RUNNING" and (j.get("step") or 0) >= 5:
                break
            assert j["state"] not in ("FAILED", "CANCELLED"), j["message"]
            time.sleep(0.1)
        else:
            raise AssertionError("never ran: %s\n%s" % (j["message"], d.log_tail()))
        first = [n for n in j["nodes"] if n["state"] == "READY"][0]
        assert gce_emu.preempt(url) == 1
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
        assert finals and int(finals[0].split()[-1]) >= 5, finals
        with open(os.path.join(share, "completions")) as f:
            assert len(f.read().splitlines()) == 1
        with open(os.path.join(share, "starts")) as f:
            starts = f.read().splitlines()
        assert int(starts[-1].split()[-1]) == int(finals[-1].split()[-1]), (
            starts, finals)
        with open(log) as f:
            calls = f.read()
        # the token exchange, the inserts with their requestId, the
        # agent's hanging GET with the ETag it held
        assert "POST /token" in calls
        assert "instances?requestId=" not in calls  # the log drops queries
        assert "POST /compute/v1/projects/spotrun-emu/zones/" in calls
        assert "computeMetadata/v1/instance/preempted" in calls
    finally:
        d.stop()
        emu.terminate()
        emu.wait(timeout=20)
