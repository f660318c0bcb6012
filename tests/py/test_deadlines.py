"""A missed deadline is said everywhere (issue 28): a job forced past its
deadline ends SUCCEEDED with a deadline_missed event, and every surface
shows it - the job view and `spotrun status` (red on a terminal), the
events, `spotrun launch`'s closing report, the dashboard (headless
Chromium), the Slack and PagerDuty alerts and /metrics."""

import json
import os
import shutil
import subprocess
import tempfile

from finops_daemon import Daemon, bin_path
from test_finops_alerts import PD_KEY, SLACK_PATH, Receiver
from test_finops_daemon import chromium


def write_alerts(d, rx):
    cfg = os.path.join(d.state, "alerts.json")
    fd = os.open(cfg, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"slack": {"webhook_url": rx.url + SLACK_PATH},
                   "pagerduty": {"routing_key": PD_KEY,
                                 "url": rx.url + "/v2/enqueue"}}, f)


def cli(d, *args):
    return subprocess.run([bin_path("spotrun")] + list(args) +
                          ["--state-dir", d.state],
                          capture_output=True, text=True, timeout=120)


def test_missed_deadline_is_said_everywhere():
    tmp = tempfile.mkdtemp(prefix="deadline-missed-")
    rx = Receiver()
    # one real second is an hour of cloud time: a workload of 8 s takes
    # 8 h, against a deadline of 3 h
    d = Daemon(tmp, "--time-scale", "3600")
    try:
        write_alerts(d, rx)
        d.start()
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        with open(os.path.join(work, "job.yaml"), "w") as f:
            f.write("name: late\n"
                    "resources: {accelerators: V100:1, use_spot: true}\n"
                    "run: /usr/bin/python3 -c 'import time; time.sleep(8)'\n"
                    "spotrun: {work: 1h, deadline: 3h}\n")
        # `spotrun launch` follows the job to its end: its closing report
        out = subprocess.run([bin_path("spotrun"), "launch", "-y", "job.yaml",
                              "--no-logs", "--state-dir", d.state], cwd=work,
                             capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stdout + out.stderr
        summary = [ln for ln in out.stdout.splitlines() if ln.startswith("job ")][-1]
        assert "SUCCEEDED" in summary and "MISSED by" in summary, out.stdout
        job = d.req("GET", "/v1/jobs?limit=10")[1]["jobs"][0]["id"]

        # the job view and `spotrun status`
        j = d.job(job)
        assert j["state"] == "SUCCEEDED"
        assert j["deadline"]["state"] == "missed"
        assert j["deadline"]["late_s"] > 3600          # about 5 h late
        st = cli(d, "status", str(job))
        assert "MISSED by" in st.stdout, st.stdout
        table = cli(d, "status")
        row = [ln for ln in table.stdout.splitlines() if ln.startswith(str(job) + " ")]
        assert row and "MISSED by" in row[0], table.stdout

        # events: one deadline_missed, said while the job still ran
        _, evs = d.req("GET", "/v1/jobs/%d/events?limit=1000" % job)
        missed = [e for e in evs["events"] if e["type"] == "deadline_missed"]
        assert len(missed) == 1, evs
        assert missed[0]["data"]["state"] == "RUNNING"
        assert missed[0]["data"]["late_s"] >= 0
        ev = cli(d, "events", str(job))
        assert "deadline_missed" in ev.stdout

        # alerts: Slack "Deadline missed", PagerDuty a critical trigger of
        # its own topic that the job's end does not resolve
        d.wait(lambda: any(b["blocks"][0]["text"]["text"].startswith("Deadline missed")
                           for _, _, b in rx.of(SLACK_PATH)) and
               any(b.get("dedup_key") == "spotrun/job-%d/deadline-missed" % job
                   for _, _, b in rx.of("/v2/enqueue")), 60, "the alerts")
        pd = [b for _, _, b in rx.of("/v2/enqueue")
              if b["dedup_key"] == "spotrun/job-%d/deadline-missed" % job]
        assert [b["event_action"] for b in pd] == ["trigger"]
        assert pd[0]["payload"]["severity"] == "critical"
        assert "deadline missed" in pd[0]["payload"]["summary"]

        # /metrics
        status, text = d.req("GET", "/metrics", raw=True)
        assert status == 200
        text = text.decode()
        assert 'spotrun_job_deadline_missed{job_id="%d"} 1\n' % job in text
        assert "\nspotrun_deadlines_missed_total 1\n" in text

        # the dashboard, in a browser
        url = "%s/#token=%s" % (d.url, d.token)
        r = chromium("--virtual-time-budget=8000", "--dump-dom", url)
        dom = r.stdout
        assert 'data-loaded="true"' in dom, r.stderr[-2000:]
        assert 'class="deadline-missed" data-deadline="missed">MISSED by' in dom, dom
    finally:
        d.stop()
        rx.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_on_time_job_is_met_and_unalarmed():
    tmp = tempfile.mkdtemp(prefix="deadline-met-")
    d = Daemon(tmp)
    try:
        d.start()
        job = d.launch("ontime", 2, deadline="48h")
        j = d.wait_state(job, ("SUCCEEDED",), timeout=90)
        assert j["deadline"]["state"] == "met"
        assert j["deadline"]["late_s"] == 0
        _, evs = d.req("GET", "/v1/jobs/%d/events?limit=1000" % job)
        assert not [e for e in evs["events"] if e["type"] == "deadline_missed"]
        _, text = d.req("GET", "/metrics", raw=True)
        assert b"\nspotrun_deadlines_missed_total 0\n" in text
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
