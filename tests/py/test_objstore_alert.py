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


def start_job(d, tmp, name, script):
    """A tier-3 job running `script`: (job id, its workdir)."""
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    with open(os.path.join(work, "run.sh"), "w") as f:
        f.write(script)
    spec = ("name: %s\n"
            "resources: {accelerators: V100:1, use_spot: true}\n"
            "run: sh run.sh\n"
            "spotrun:\n  deadline: 48h\n  work: 1h\n"
            "  checkpoint: {uri: s3://no-such-bucket/jobs}\n" % name)
    status, body = d.write("POST", "/v1/jobs", {"spec_yaml": spec,
                                                "workdir": work})
    assert status == 201, body
    return body["job"]["id"], work


def checkpoint_failed(d, job):
    _, evs = d.req("GET", "/v1/jobs/%d/events?limit=1000" % job)
    return [e for e in evs["events"] if e["type"] == "checkpoint_failed"]


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
        job, _ = start_job(d, tmp, "tier3", RUN_SH)
        d.wait_state(job, ("SUCCEEDED",), timeout=90)
        failed = lambda: checkpoint_failed(d, job)  # noqa: E731
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


# The engine's recovery point (tier3.json beside tier 2, as the uploader
# writes it): local step 4, the store's newest 2.  Then the run ends.
RP_SH = r"""
printf '{"uri":"s3://no-such-bucket/jobs","local_step":4,"store_step":2,"store_time_ns":%s,"behind":2,"retries":0,"last_error":""}' "$(($(date +%s) - 30))000000000" > "$SPOTRUN_CKPT_DIR/t.json"
mv "$SPOTRUN_CKPT_DIR/t.json" "$SPOTRUN_CKPT_DIR/tier3.json"
printf '{"seq":1,"step":5}' > "$SPOTRUN_STATUS_FILE.t"
mv "$SPOTRUN_STATUS_FILE.t" "$SPOTRUN_STATUS_FILE"
touch started
while [ ! -e stop ]; do sleep 0.1; done
"""


def test_recovery_point_on_every_surface():
    """The recovery point reaches the job (GET /v1/jobs/ID), `spotrun
    status JOB`, /metrics; and a run that ends with its newest
    checkpoint on the node's disk only is a checkpoint_failed event
    saying which step is where (issue 23)."""
    import subprocess
    import time
    from finops_daemon import bin_path
    tmp = tempfile.mkdtemp(prefix="objstore-rp-")
    d = Daemon(tmp)
    try:
        d.start()
        job, work = start_job(d, tmp, "rp", RP_SH)
        d.wait(lambda: d.job(job).get("ckpt_local_step") == 4, 90,
               "the recovery point in the job")
        j = d.job(job)
        assert j["ckpt_step"] == 2
        assert 25 <= j["ckpt_store_age_s"] < 600
        out = subprocess.run([bin_path("spotrun"), "status", str(job),
                              "--state-dir", d.state], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "node disk: step 4" in out.stdout, out.stdout
        assert "object store: step 2 (saved" in out.stdout, out.stdout
        assert "BEHIND" in out.stdout
        status, text = d.req("GET", "/metrics", raw=True)
        assert status == 200
        text = text.decode() if isinstance(text, bytes) else text
        assert 'spotrun_job_checkpoint_local_step{job_id="%d"} 4' % job in text
        assert 'spotrun_job_checkpoint_store_step{job_id="%d"} 2' % job in text
        assert 'spotrun_job_checkpoint_store_age_seconds{job_id="%d"}' % job \
            in text
        # the run ends: its newest checkpoint is not in the store
        open(os.path.join(work, "stop"), "w").close()
        d.wait_state(job, ("SUCCEEDED",), timeout=90)

        failed = lambda: checkpoint_failed(d, job)  # noqa: E731
        d.wait(failed, 30, "the checkpoint_failed event")
        assert any("the run ended with checkpoint step 4 on this node's disk "
                   "only; the object store holds step 2" in e["message"]
                   for e in failed()), failed()
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
