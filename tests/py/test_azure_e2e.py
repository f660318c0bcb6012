"""End to end through the Azure provider (issue 31): spotrund --providers
azure drives the ARM driver against the Azure emulator (azure_cloud.py,
on loopback), and a real spotrun-agent boots from the customData the
driver sends:

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

from azure_cloud import AzureCloud
from test_ctl_crash import BUILD, ROOT, Daemon
from test_e2e_aws_emu import job_yaml

SIZE = "Standard_ND96isr_H100_v5"
STEPS = 40


def azure_env(monkeypatch, cloud):
    for k in list(os.environ):
        if k.startswith("AZURE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AZURE_TENANT_ID", "tenant-1")
    monkeypatch.setenv("AZURE_CLIENT_ID", "client-1")
    monkeypatch.setenv("AZURE_CLIENT_SECRET", "emulator-secret")
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", cloud.url)


def config(tmp_path, cloud):
    cfg = os.path.join(str(tmp_path), "spotrund.yaml")
    with open(cfg, "w") as f:
        f.write("time-scale: 60\nheartbeat-timeout: 20s\nboot-timeout: 60s\n"
                "providers:\n  azure:\n    subscription: sub\n"
                "    resource_group: rg\n"
                "    subnet: /subscriptions/sub/resourceGroups/rg/providers/"
                "Microsoft.Network/virtualNetworks/vnet/subnets/default\n"
                "    ssh_key: ssh-ed25519 AAAAC3Nza test\n"
                "    endpoint: %s\n    prices_endpoint: %s\n"
                "    regions:\n      eastus: {}\n" % (cloud.url, cloud.url))
    return cfg


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def test_job_through_azure_driver_and_emulator(tmp_path, monkeypatch):
    work = os.path.join(str(tmp_path), "vms")
    os.makedirs(work)
    cloud = AzureCloud(work, prices={SIZE: (10.0, 98.32)}, notice_s=25)
    share = os.path.join(str(tmp_path), "share")
    os.makedirs(share)
    azure_env(monkeypatch, cloud)
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config",
               config(tmp_path, cloud), "--providers", "azure",
               "--agent", os.path.join(BUILD, "bin", "spotrun-agent"))
    try:
        d.start()
        # the TERM trap stamps when the agent acted (SIGTERM after the
        # notice) and when the final checkpoint was durable (renamed)
        jid = d.submit(job_yaml("az-e2e", "azure/eastus", share, STEPS)
                       .replace("V100:1", "H100:8")
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
        body = [r for r in cloud.requests if r["method"] == "PUT"][0]
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
        # the agent acknowledged its own event (the other VM's event was
        # left alone) and the VM is gone: evicted at the acknowledgement
        # or deleted by the control plane, never left at NotBefore
        assert cloud.acks == ["preempt-" + first[0]], cloud.acks
        assert first[0] not in cloud.vms, cloud.vms.keys()
        assert (first[0], "notbefore") not in cloud.evicted, cloud.evicted
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
        noticed = cloud.noticed[first[0]]
        assert noticed <= acted <= durable, (noticed, acted, durable)
        puts = {r["path"] for r in cloud.requests if r["method"] == "PUT"}
        assert len(puts) >= 2, puts   # the replacement is another VM
        tok = [r for r in cloud.requests
               if r["path"] == "/tenant-1/oauth2/v2.0/token"]
        assert tok, "no token request"
    finally:
        d.stop()
        cloud.stop()
