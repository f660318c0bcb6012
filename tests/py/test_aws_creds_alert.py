"""Credentials that will run out are said before a job needs them
(issue 26, "Credentials as the AWS CLI finds them"): spotrund drives aws
against an EC2 emulator with credentials handed over in the environment
(a session token and AWS_CREDENTIAL_EXPIRATION, as `aws configure
export-credentials` writes them) - nothing can renew them.

  - expiring within the hour: every unfinished job gets a `credentials`
    event naming what to do, and the Slack receiver gets the alert; the
    job runs on;
  - already expired: EC2 is not called with them, the launch waits (the
    job is not refused), the event says they expired."""
import json
import os
import time

import aws_fleet as af
from test_ctl_crash import ROOT, Daemon
from test_finops_alerts import SLACK_PATH, Receiver

SECRET = "sessSECRETdonotprint"


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def run(tmp_path, monkeypatch, expires_in):
    emu = af.Emulator(tmp_path, "us-east-1", af.EAST_ZONES, 60)
    af.aws_env(monkeypatch)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SECRET)
    monkeypatch.setenv("AWS_CREDENTIAL_EXPIRATION", iso(time.time() + expires_in))
    agent, spool = af.write_fake_agent(tmp_path)
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config",
               af.config(tmp_path, [emu], 60), "--agent", agent)
    rx = Receiver()
    os.makedirs(d.state, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(d.state, "alerts.json"),
                 os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"slack": {"webhook_url": rx.url + SLACK_PATH,
                             "events": ["credentials"]}}, f)
    fleet = af.Fleet(spool)
    return emu, d, rx, fleet


def events_of(d, jid, typ):
    return [e for e in d.events(jid) if e["type"] == typ]


def test_expiring_credentials_alert(tmp_path, monkeypatch):
    emu, d, rx, fleet = run(tmp_path, monkeypatch, 1800)
    try:
        d.start()
        fleet.start()
        jid = d.submit(af.job_yaml("creds", 600, infra="aws/us-east-1"))
        deadline = time.time() + 60
        while not events_of(d, jid, "credentials") or not rx.of(SLACK_PATH):
            assert time.time() < deadline, d.log_tail()
            time.sleep(0.2)
        ev = events_of(d, jid, "credentials")
        assert len(ev) == 1, ev
        assert "aws us-east-1: aws credentials from environment" in ev[0]["message"]
        assert "cannot be renewed without you" in ev[0]["message"]
        assert "credential_process" in ev[0]["message"], ev[0]["message"]
        slack = json.dumps(rx.of(SLACK_PATH)[0][2])
        assert "cannot be renewed" in slack
        # the job is not held up by the warning
        deadline = time.time() + 60
        while d.job(jid)["state"] != "RUNNING":
            assert time.time() < deadline, d.log_tail()
            time.sleep(0.2)
        assert SECRET not in d.log_tail() + slack
    finally:
        fleet.stop()
        d.stop()
        rx.close()
        emu.stop()


def test_expired_credentials_wait(tmp_path, monkeypatch):
    emu, d, rx, fleet = run(tmp_path, monkeypatch, -60)
    try:
        d.start()
        fleet.start()
        jid = d.submit(af.job_yaml("creds", 5, infra="aws/us-east-1"))
        deadline = time.time() + 60
        while not events_of(d, jid, "credentials"):
            assert time.time() < deadline, d.log_tail()
            time.sleep(0.2)
        assert " expired at " in events_of(d, jid, "credentials")[0]["message"]
        time.sleep(3)
        j = d.job(jid)
        assert j["state"] in ("PENDING", "PROVISIONING"), j
        # nothing was signed with them: EC2 saw no call at all
        assert not [r for r in emu.requests()
                    if r["action"] in ("RunInstances", "DescribeInstances")]
    finally:
        fleet.stop()
        d.stop()
        rx.close()
        emu.stop()
