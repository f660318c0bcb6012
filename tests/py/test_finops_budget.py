"""Budgets and autostop enforced by spotrund: a job over spotrun.max_cost is
first alerted on, then stopped; a job whose nodes sit idle longer than
spotrun.autostop is stopped.  Alerts reach a local Slack receiver."""

import json
import os
import shutil
import tempfile

from finops_daemon import Daemon
from test_finops_alerts import SLACK_PATH, Receiver


def events(d, job, typ):
    _, body = d.req("GET", "/v1/jobs/%d/events?limit=1000" % job)
    return [e for e in body["events"] if e["type"] == typ]


def with_slack(tmp, rx):
    d = Daemon(tmp)
    fd = os.open(os.path.join(d.state, "alerts.json"),
                 os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"slack": {"webhook_url": rx.url + SLACK_PATH,
                             "events": ["budget", "job_done"]}}, f)
    return d.start()


def test_budget_alerts_then_stops():
    tmp = tempfile.mkdtemp(prefix="finops-budget-")
    rx = Receiver()
    d = None
    try:
        d = with_slack(tmp, rx)
        # at the default time scale one real second bills one cloud hour,
        # so $20 goes in seconds to a minute depending on the pool's price
        job = d.launch("budgeted", 600, extra_yaml="  max_cost: 20\n")
        d.wait_state(job, ("CANCELLED",), timeout=180)
        budget = events(d, job, "budget")
        verdicts = [e["data"]["verdict"] for e in budget]
        assert verdicts == ["alert", "stop"], budget
        assert "reached" in budget[0]["message"] and "max_cost $20" in budget[0]["message"]
        assert budget[1]["message"].endswith("stopping the job")
        assert budget[0]["data"]["spent_micros"] >= 16000000  # 80 %
        assert budget[1]["data"]["spent_micros"] >= 20000000
        assert budget[0]["seq"] < budget[1]["seq"]
        assert events(d, job, "cancel_requested")
        # alert, then the stop (critical), then the end of the job
        d.wait(lambda: len(rx.of(SLACK_PATH)) >= 3, 60, "three Slack messages")
        texts = [b["text"] for _, _, b in rx.of(SLACK_PATH)]
        ctx = [b["blocks"][3]["elements"][0]["text"] for _, _, b in rx.of(SLACK_PATH)]
        assert "budget" in texts[0] and "severity warning" in ctx[0]
        assert "stopping the job" in texts[1] and "severity critical" in ctx[1]
        assert "CANCELLED" in texts[2]
        assert len(texts) == 3
    finally:
        if d:
            d.stop()
        rx.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_autostop_stops_an_idle_job():
    tmp = tempfile.mkdtemp(prefix="finops-autostop-")
    d = Daemon(tmp).start()
    try:
        work = os.path.join(tmp, "idle")
        os.makedirs(work)
        spec = ("name: idler\n"
                "resources: {accelerators: V100:1, use_spot: true}\n"
                "run: sleep 600\n"
                "spotrun:\n  deadline: 48h\n  work: 4h\n  autostop: 2h\n")
        status, body = d.req("POST", "/v1/jobs", {"spec_yaml": spec, "workdir": work})
        assert status == 201, body
        job = body["job"]["id"]
        d.wait_state(job, ("CANCELLED",), timeout=120)
        ev = events(d, job, "autostop")
        assert len(ev) == 1 and ev[0]["message"] == \
            "autostop: every node idle for 2h: stopping the job"
        # the ledger saw the idle time that triggered it: >= 2 cloud hours
        _, cost = d.req("GET", "/v1/cost?job=%d" % job)
        assert cost["total"]["idle_hours"] >= 2.0
        assert cost["total"]["idle_cost_micros"] > 0
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
