"""A cloud emulator of the local spot cloud (`spotrun azure-emulator`,
`lambda-emulator`, ...) as a test's child: started on 127.0.0.1 (its URL
is its first line), its /emu/ controls, stopped with SIGTERM."""
import json
import os
import signal
import subprocess
import urllib.parse
import urllib.request

import pytest

from test_ctl_crash import BUILD, ROOT


class EmuProc:
    def __init__(self, tmp, cmd, work, args):
        """Run `spotrun CMD --work-dir WORK --data <data> ARGS...`, its
        stderr in <tmp>/CMD.log."""
        self.work = work
        os.makedirs(work)
        argv = [os.path.join(BUILD, "bin", "spotrun"), cmd, "--work-dir",
                work, "--data", os.path.join(ROOT, "data")] + list(args)
        log = open(os.path.join(str(tmp), cmd + ".log"), "wb")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=log, start_new_session=True,
                                     text=True)
        log.close()
        self.base = self.proc.stdout.readline().strip()
        if urllib.parse.urlsplit(self.base).hostname != "127.0.0.1":
            self.proc.kill()
            pytest.fail("refusing an emulator not on loopback: %r"
                        % self.base)

    def call(self, method, what, **q):
        """A control: <base>/emu/WHAT?Q, its JSON answer."""
        req = urllib.request.Request(
            "%s/emu/%s?%s" % (self.base, what, urllib.parse.urlencode(q)),
            data=b"" if method == "POST" else None, method=method)
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stdout.close()
