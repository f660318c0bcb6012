"""End to end through the Azure provider (issue 31): spotrund --providers
azure drives the ARM driver against the Azure emulator (`spotrun
azure-emulator`, on loopback, over the local market), and a real
spotrun-agent boots from the customData the driver sends:

  token (client credentials) -> PUT the spot VM, its Azure-AsyncOperation
  followed -> the agent registers with the bootstrap secret from
  customData and polls its VM's Scheduled Events -> a Preempt for its VM
  (and a Freeze for another VM, ignored) -> the workload takes its final
  checkpoint and exits, the agent reports it, then acknowledges the
  event (StartRequests), which evicts the VM before NotBefore -> the
  replacement VM -> the job resumes from the checkpoint and completes.

The workload keeps its checkpoint in a directory given through the job's
envs (the stand-in for object storage)."""

import json
import os
import time

from azure_emu import AzureEmu, azure_env, config
from test_ctl_crash import BUILD, ROOT, Daemon
from test_e2e_aws_emu import job_yaml

STEPS = 40


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def test_job_through_azure_driver_and_emulator(tmp_path, monkeypatch):
    cloud = AzureEmu(tmp_path, notice_s=25)
    share = os.path.join(str(tmp_path), "share")
    os.makedirs(share)
    azure_env(monkeypatch, cloud.url)
    # the first ARM calls are throttled: the driver backs off, honouring
    # Retry-After, and goes on
    cloud.throttle(2)
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config",
               config(tmp_path, cloud.url), "--providers", "azure",
               "--agent", os.path.join(BUILD, "bin", "spotrun-agent"))
    try:
        d.start()
        # the TERM trap stamps when the agent acted (SIGTERM after the
        # notice) and when the final checkpoint was durable (renamed)
        jid = d.submit(job_yaml("az-e2e", "azure/eastus", share, STEPS)
                       .replace("trap 'save;", "trap 'date +%s.%N >> "
                                "$d/acted; save; date +%s.%N >> $d/durable;"))

        def past_five():
            j = d.job(jid)
            assert j["state"] not in ("FAILED", "CANCELLED"), (
                j["message"], d.log_tail())
            return j["state"] == "RUNNING" and (j.get("step") or 0) >= 5
        wait_for(past_five, 60, "the job to run past step 5")
        first = cloud.running()
        assert len(first) == 1, first
        reqs = cloud.requests()
        body = [r for r in reqs if r["method"] == "PUT"][0]
        doc = json.loads(body["body"])
        p = doc["properties"]
        assert p["priority"] == "Spot" and p["evictionPolicy"] == "Delete"
        assert p["billingProfile"] == {"maxPrice": -1}
        assert p["storageProfile"]["osDisk"]["deleteOption"] == "Delete"
        nic = p["networkProfile"]["networkInterfaceConfigurations"][0]
        assert nic["properties"]["deleteOption"] == "Delete"
        assert doc["tags"]["spotrun:cluster"] and doc["tags"]["spotrun:node"]
        cloud.preempt(first[0])
        j = d.wait([jid], 120)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        assert j["preemptions"] >= 1, j
        # the agent acknowledged its own event once its exit was reported
        # (the other VM's event was left alone), or the control plane,
        # which had the exit, deleted the VM first (its event went with
        # it); either way the VM is gone, never left at NotBefore; its
        # NIC and disk went with it (deleteOption Delete)
        st = cloud.state()
        ev = st["noticed"][first[0]]["event"]
        deleted = [r for r in cloud.requests() if r["method"] == "DELETE"
                   and r["path"].endswith("/virtualMachines/" + first[0])]
        assert st["acks"] == [{"event": ev, "by": first[0]}] or (
            not st["acks"] and deleted), (st["acks"], deleted)
        assert first[0] not in [v["name"] for v in st["vms"]], st["vms"]
        assert {"name": first[0], "how": "notbefore"} not in st["evicted"], (
            st["evicted"])
        assert not [r for k in ("nics", "disks", "ips") for r in st[k]
                    if r["name"].startswith(first[0] + "-")], st
        types = [e["type"] for e in d.events(jid)]
        assert "preempted" in types, " ".join(types)
        with open(os.path.join(share, "finals")) as f:
            finals = f.read().splitlines()
        assert finals and int(finals[0].split()[-1]) >= 5, finals
        with open(os.path.join(share, "starts")) as f:
            starts = f.read().splitlines()
        assert len(starts) >= 2, starts
        assert int(starts[-1].split()[-1]) == int(finals[-1].split()[-1]), (
            starts, finals)
        with open(os.path.join(share, "completions")) as f:
            assert len(f.read().splitlines()) == 1
        assert j["step"] == STEPS, j
        with open(os.path.join(share, "acted")) as f:
            acted = float(f.read().split()[0])
        with open(os.path.join(share, "durable")) as f:
            durable = float(f.read().split()[0])
        # the agent acted after the notice, the checkpoint after that
        # (bench/cloud_notice.py measures how long each took)
        noticed = st["noticed"][first[0]]["at"]
        assert noticed <= acted <= durable, (noticed, acted, durable)
        reqs = cloud.requests()
        puts = {r["path"] for r in reqs if r["method"] == "PUT"}
        assert len(puts) >= 2, puts   # the replacement is another VM
        tok = [r for r in reqs if r["path"] == "/tenant-1/oauth2/v2.0/token"]
        assert tok, "no token request"
    finally:
        d.stop()
        cloud.stop()
