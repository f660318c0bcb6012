"""The Azure emulator (`spotrun azure-emulator`, lib/azure/azemu.h) for
tests and benches: started on 127.0.0.1 over the local market, with the
environment that points the azure provider at it, and its controls
(preempt, capacity, throttle, leak) and record (state, requests)."""
import os

from emu_proc import EmuProc

SIZE = "Standard_NC6s_v3"   # V100:1, spot in the catalog


class AzureEmu(EmuProc):
    """Sizes get plenty of spot capacity (the others as the traces
    say)."""

    def __init__(self, tmp, sizes=(SIZE,), no_capacity=(), notice_s=30,
                 time_scale=1, page=None, boot_s=None, quota_vms=None):
        args = ["--time-scale", str(time_scale), "--notice-s", str(notice_s)]
        for s in sizes:
            args += ["--capacity", "%s=plenty" % s]
        for s in no_capacity:
            args += ["--capacity", "%s=none" % s]
        for k, v in (("--page", page), ("--boot-s", boot_s),
                     ("--quota-vms", quota_vms)):
            if v is not None:
                args += [k, str(v)]
        EmuProc.__init__(self, tmp, "azure-emulator",
                         os.path.join(str(tmp), "azure"), args)
        self.url = self.base

    def preempt(self, name, keep_capacity=True):
        """A Preempt event for VM name (and a Freeze for another VM)."""
        q = {"name": name}
        if keep_capacity:
            q["keep_capacity"] = "true"
        return self.call("POST", "preempt", **q)["affected"]

    def capacity(self, size, spot):
        return self.call("POST", "capacity", size=size, spot=spot)["affected"]

    def throttle(self, n):
        """The next n ARM calls answer 429 (Retry-After: 1)."""
        return self.call("POST", "throttle", n=n)["affected"]

    def leak(self, name):
        """VM name goes; its NIC, disk and IP stay, detached."""
        return self.call("POST", "leak", name=name)["affected"]

    def state(self):
        return self.call("GET", "state")

    def requests(self):
        return self.call("GET", "requests")

    def running(self):
        return [v["name"] for v in self.state()["vms"]
                if v["state"] == "Succeeded"]


def azure_env(monkeypatch, url):
    for k in list(os.environ):
        if k.startswith("AZURE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AZURE_TENANT_ID", "tenant-1")
    monkeypatch.setenv("AZURE_CLIENT_ID", "client-1")
    monkeypatch.setenv("AZURE_CLIENT_SECRET", "emulator-secret")
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", url)


def config(tmp_path, url, extra=""):
    cfg = os.path.join(str(tmp_path), "spotrund.yaml")
    with open(cfg, "w") as f:
        f.write("time-scale: 60\nheartbeat-timeout: 20s\nboot-timeout: 60s\n"
                "providers:\n  azure:\n    subscription: sub\n"
                "    resource_group: rg\n"
                "    subnet: /subscriptions/sub/resourceGroups/rg/providers/"
                "Microsoft.Network/virtualNetworks/vnet/subnets/default\n"
                "    ssh_key: ssh-ed25519 AAAAC3Nza test\n"
                "    endpoint: %s\n    prices_endpoint: %s\n%s"
                "    regions:\n      eastus: {}\n" % (url, url, extra))
    return cfg
