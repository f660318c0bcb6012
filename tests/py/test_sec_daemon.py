"""Issue 24, the control plane's side: one daemon per SQLite state (a
second spotrund on the same state dir exits, naming the first one's pid)."""

import os
import subprocess

import pytest

from conftest import PG_MODE
from test_ctl_crash import BUILD, ROOT, Daemon


def test_second_spotrund_on_one_state_exits_naming_the_first(tmp_path):
    if PG_MODE:
        pytest.skip("the lock is for a SQLite state; daemons sharing a "
                    "PostgreSQL store share a state dir on purpose")
    d = Daemon(tmp_path, os.path.join(ROOT, "data"))
    try:
        d.start()
        with open(os.path.join(d.state, "api.url")) as f:
            url = f.read()
        r = subprocess.run([os.path.join(BUILD, "bin", "spotrund"), "--listen",
                            "127.0.0.1:0", "--state-dir", d.state,
                            "--data-dir", os.path.join(ROOT, "data")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert ("state dir %s is in use by another spotrund (pid %d)"
                % (d.state, d.proc.pid)) in r.stderr, r.stderr
        # the first one's files are untouched and it still answers
        with open(os.path.join(d.state, "api.url")) as f:
            assert f.read() == url
        assert d.proc.poll() is None
        # a daemon killed -9 leaves no lock behind: the next one starts
        d.kill9()
        d.start()
        assert d.proc.poll() is None
    finally:
        d.stop()
