"""Alerts end to end: spotrund reads <state-dir>/alerts.json (0600), and
when a job finishes it posts the exact Slack and PagerDuty payloads to
local receivers; the webhook URL and routing key never reach its log."""

import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from finops_daemon import Daemon

SLACK_PATH = "/services/T0001/B0001/hooksecret0123456789"
PD_KEY = "R0UTINGsecretKEY0123456789abcdef"


class Receiver:
    def __init__(self):
        self.reqs = []
        self.lock = threading.Lock()
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer.lock:
                    outer.reqs.append((self.path, self.headers.get("Content-Type"),
                                       json.loads(body)))
                if self.path == SLACK_PATH:
                    code, ctype, reply = 200, "text/plain", b"ok"
                else:
                    code, ctype, reply = 202, "application/json", \
                        b'{"status":"success","message":"Event processed"}'
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def of(self, path):
        with self.lock:
            return [r for r in self.reqs if r[0] == path]

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def test_job_done_alerts_exact_payloads():
    tmp = tempfile.mkdtemp(prefix="finops-alerts-")
    rx = Receiver()
    d = Daemon(tmp)
    try:
        cfg = os.path.join(d.state, "alerts.json")
        fd = os.open(cfg, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"slack": {"webhook_url": rx.url + SLACK_PATH},
                       "pagerduty": {"routing_key": PD_KEY,
                                     "url": rx.url + "/v2/enqueue"}}, f)
        d.start()
        job = d.launch("alerted", 3)
        d.wait_state(job, ("SUCCEEDED",), timeout=90)
        _, evs = d.req("GET", "/v1/jobs/%d/events?limit=1000" % job)
        host = socket.gethostname()
        # what the daemon recorded decides what must have been sent, in order
        want_slack, want_pd = [], []
        for ev in evs["events"]:
            if ev["type"] == "deadline_risk":
                want_slack.append(("Deadline at risk", "deadline_risk", "error",
                                   "job %d alerted: %s" % (job, ev["message"])))
                want_pd.append(("trigger", "deadline", "error", want_slack[-1][3]))
            elif ev["type"] == "preempted":
                want_slack.append(("Spot preemption", "preemption", "warning",
                                   "job %d alerted: %s" % (job, ev["message"])))
                want_pd.append(("trigger", "preemption", "warning", want_slack[-1][3]))
            elif ev["type"] == "recovered":
                want_slack.append(("Recovered", "recovery", "info",
                                   "job %d alerted: %s" % (job, ev["message"])))
                want_pd.append(("resolve", "preemption", None, None))
            elif ev["type"] == "transition" and ev["to"] == "SUCCEEDED":
                want_slack.append(("Job done", "job_done", "info", None))
                want_pd += [("resolve", t, None, None)
                            for t in ("preemption", "deadline", "budget",
                                      "checkpoint", "credentials")]
        assert want_slack and want_slack[-1][0] == "Job done"
        # the trace may reclaim the job's spot node: each preemption and
        # each recovery is an alert of its own, and the total names them
        npre = sum(1 for ev in evs["events"] if ev["type"] == "preempted")
        d.wait(lambda: len(rx.of(SLACK_PATH)) >= len(want_slack) and
               len(rx.of("/v2/enqueue")) >= len(want_pd), 60, "every alert")
        time.sleep(0.5)
        slack = rx.of(SLACK_PATH)
        assert len(slack) == len(want_slack)
        for (_, ctype, body), (title, kind, sev, summary) in zip(slack, want_slack):
            assert ctype == "application/json"
            if summary is None:  # job done: the summary carries the totals
                m = re.fullmatch(r"job %d alerted SUCCEEDED: cost \$(\d+\.\d\d), "
                                 r"saved (-?\$\d+\.\d\d) vs on-demand for the hours used, "
                                 r"%d preemption\(s\)" % (job, npre), body["text"])
                assert m, body["text"]
                summary = body["text"]
                cost = m.group(1)
                assert float(cost) > 0
            fields = body["blocks"][2]["fields"]
            c = re.fullmatch(r"\*Cost so far\*\n\$(-?\d+\.\d\d)", fields[0]["text"])
            s_ = re.fullmatch(r"\*Saved vs on-demand, hours used\*\n"
                              r"((?::red_circle: -)?\$\d+\.\d\d)",
                              fields[1]["text"])
            assert c and s_, fields
            assert body == {
                "text": summary,
                "blocks": [
                    {"type": "header", "text": {"type": "plain_text",
                                                "text": "%s: job %d alerted" % (title, job)}},
                    {"type": "section", "text": {"type": "mrkdwn", "text": summary}},
                    {"type": "section", "fields": [
                        {"type": "mrkdwn", "text": "*Cost so far*\n$" + c.group(1)},
                        {"type": "mrkdwn", "text": "*Saved vs on-demand, hours used*\n" + s_.group(1)}]},
                    {"type": "context", "elements": [
                        {"type": "mrkdwn",
                         "text": "spotrun %s \u00b7 severity %s \u00b7 spotrund@%s"
                                 % (kind, sev, host)}]},
                ]}
        # PagerDuty: triggers carry the full payload; the finished job
        # resolves every incident topic it may have opened
        pd = [b for _, _, b in rx.of("/v2/enqueue")]
        assert len(pd) == len(want_pd)
        for got, (action, topic, sev, summary) in zip(pd, want_pd):
            key = "spotrun/job-%d/%s" % (job, topic)
            if action == "resolve":
                assert got == {"routing_key": PD_KEY, "event_action": "resolve",
                               "dedup_key": key}
                continue
            det = got["payload"]["custom_details"]
            # the count so far: the n-th preemption's alert says n
            assert 0 <= det["preemptions"] <= npre, det
            assert got == {
                "routing_key": PD_KEY, "event_action": "trigger", "dedup_key": key,
                "payload": {"summary": summary, "source": "spotrund@" + host,
                            "severity": sev, "component": "spotrun",
                            "class": "deadline_risk" if topic == "deadline" else topic,
                            "custom_details": {
                                "job_id": job, "job_name": "alerted",
                                "cost_usd": det["cost_usd"], "saved_usd": det["saved_usd"],
                                "preemptions": det["preemptions"]}}}
        # the figures agree with the ledger (cost can only have grown since)
        _, c = d.req("GET", "/v1/cost?job=%d" % job)
        assert c["total"]["cost_micros"] / 1e6 >= float(cost) - 0.005
        # secrets never logged
        log = d.log_tail(10 ** 7)
        assert "alerts enabled" in log
        assert PD_KEY not in log and "hooksecret" not in log
    finally:
        d.stop()
        rx.close()
        shutil.rmtree(tmp, ignore_errors=True)
