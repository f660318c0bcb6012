"""The Lambda Cloud emulator (`spotrun lambda-emulator`,
lib/lambda/lambdaemu.h) for tests: started on 127.0.0.1 over the local
market, its ssh stand-in (<work>/ssh), its controls (fail, throttle) and
record (state, requests)."""
import json
import os

from emu_proc import EmuProc

KEY = "lambda-emulator-key"
TYPE = "gpu_8x_h100_sxm5"


class LambdaEmu(EmuProc):
    """Types get plenty of capacity in every region (the others as the
    traces say)."""

    def __init__(self, tmp, types=(TYPE,), boot_s=None):
        args = []
        for t in types:
            args += ["--capacity", "%s=plenty" % t]
        if boot_s is not None:
            args += ["--boot-s", str(boot_s)]
        EmuProc.__init__(self, tmp, "lambda-emulator",
                         os.path.join(str(tmp), "hosts"), args)
        self.ssh = os.path.join(self.work, "ssh")
        self.url = self.base + "/api/v1"

    def fail(self, iid):
        """The instance's host fails: terminated, no notice."""
        return self.call("POST", "fail", id=iid)["affected"]

    def throttle(self, n):
        return self.call("POST", "throttle", n=n)["affected"]

    def live(self):
        return [i for i in self.call("GET", "state")["instances"]
                if i["status"] != "terminated"]

    def requests(self):
        """(method, path, body as JSON or None) of each POST."""
        return [(r["method"], r["path"],
                 json.loads(r["body"]) if r["body"] else None)
                for r in self.call("GET", "requests")]
