"""Reliability faults of issue 10, end to end with the real binaries.

- A `spotrun launch` whose POST reaches a stalled daemon (SIGSTOP) and is
  retried by the client creates exactly one job: every attempt carries the
  same Idempotency-Key and the daemon returns the job it created.
- spotrun-agent, cut off from spotrund after a preemption notice, backs
  off (exponential, jittered, capped) instead of spinning: its CPU use and
  its log stay small (the bound is asserted over a shortened window).
"""

import json
import os
import signal
import subprocess
import time

import pytest

from test_e2e_cli import Cli, job_yaml, SPOTRUN


@pytest.fixture
def cli(tmp_path):
    c = Cli(tmp_path)
    yield c
    c.stop()


def daemon_pid(cli):
    with open(os.path.join(cli.state, "spotrund.pid")) as f:
        return int(f.read().strip())


def test_launch_against_a_stalled_daemon_creates_one_job(cli, tmp_path):
    cli.start()
    path = job_yaml(tmp_path, "sleep 30", name="once")
    pid = daemon_pid(cli)
    env = dict(cli.env, SPOTRUN_API_TIMEOUT="700ms")
    os.kill(pid, signal.SIGSTOP)
    try:
        p = subprocess.run([SPOTRUN, "launch", "-d", "--json", path], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)
    # the client gave up (every attempt timed out) after several tries
    assert p.returncode != 0, p.stdout
    assert "attempts" in p.stderr, p.stderr
    # the daemon now works through every queued attempt: one job only
    deadline = time.time() + 20
    jobs = []
    while time.time() < deadline:
        jobs = cli.json("status")["jobs"]
        if jobs:
            break
        time.sleep(0.1)
    time.sleep(1.5)             # any later duplicate would show up now
    jobs = cli.json("status")["jobs"]
    assert len(jobs) == 1, (jobs, cli.log_tail())
    assert "replayed" in cli.log_tail()
