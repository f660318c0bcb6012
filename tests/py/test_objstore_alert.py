"""Tier-3 failures raise an alert: a workload whose uploads fail writes
"ckpt_error" to its status file; the agent reports it, spotrund records a
checkpoint_failed event and FinOps posts the "checkpoint" alert (here to a
local Slack receiver).  The job itself goes on (and succeeds)."""

import json
import os
import shutil
import tempfile

from finops_daemon import Daemon
from test_finops_alerts import SLACK_PATH, Receiver

RUN_SH = r"""
printf '{"seq":1,"step":3,"ckpt_step":2,"ckpt_error":"PutObject jobs/x: HTTP 404 NoSuchBucket: The specified bucket does not exist"}' > "$SPOTRUN_STATUS_FILE.t"
mv "$SPOTRUN_STATUS_FILE.t" "$SPOTRUN_STATUS_FILE"
sleep 3
"""


def test_checkpoint_failed_alert():
    tmp = tempfile.mkdtemp(prefix="objstore-alert-")
    rx = Receiver()
    d = Daemon(tmp)
    try:
        cfg = os.path.join(d.state, "alerts.json")
        fd = os.open(cfg, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"slack": {"webhook_url": rx.url + SLACK_PATH,
                                 "events": ["checkpoint"]}}, f)
        d.start()
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        with open(os.path.join(work, "run.sh"), "w") as f:
            f.write(RUN_SH)
        spec = ("name: tier3\n"
                "resources: {accelerators: V100:1, use_spot: true}\n"
                "run: sh run.sh\n"
                "spotrun:\n  deadline: 48h\n  work: 1h\n"
                "  checkpoint: {uri: s3://no-such-bucket/jobs}\n")
        status, body = d.req("POST", "/v1/jobs", {"spec_yaml": spec,
                                                  "workdir": work})
        assert status == 201, body
        job = body["job"]["id"]
        d.wait_state(job, ("SUCCEEDED",), timeout=90)

        def failed():
            _, evs = d.req("GET", "/v1/jobs/%d/events?limit=1000" % job)
            return [e for e in evs["events"] if e["type"] == "checkpoint_failed"]
        d.wait(failed, 30, "the checkpoint_failed event")
        ev = failed()[0]
        assert "not reaching the object store" in ev["message"]
        assert "NoSuchBucket" in ev["message"]
        d.wait(lambda: rx.of(SLACK_PATH), 30, "the Slack alert")
        body = rx.of(SLACK_PATH)[0][2]
        assert body["text"] == "job %d tier3: %s" % (job, ev["message"])
        assert body["blocks"][0]["text"]["text"] == \
            "Checkpoints not reaching the object store: job %d tier3" % job
        # subscribed to "checkpoint" only: every alert is one of the
        # job's checkpoint failures (the market may reclaim the node, and
        # each attempt then reports its own failure)
        n = len(failed())
        d.wait(lambda: len(rx.of(SLACK_PATH)) >= n, 30, "one alert per failure")
        texts = [m[2]["text"] for m in rx.of(SLACK_PATH)]
        assert len(texts) == n, texts
        assert all(t.startswith("job %d tier3: " % job) and
                   "not reaching the object store" in t for t in texts), texts
    finally:
        d.stop()
        rx.close()
        shutil.rmtree(tmp, ignore_errors=True)
