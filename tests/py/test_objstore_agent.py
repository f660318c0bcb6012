"""The agent's side of tier 3, against the scripted control plane of
test_e2e_agent: the bootstrap answer's ckpt_uri reaches the workload as
SPOTRUN_CKPT_URI, and a tier-3 failure the workload writes to its status
file ("ckpt_error") is reported to spotrund once per new message, as a
ckpt_error event (spotrund turns it into a checkpoint_failed event and the
"checkpoint" alert)."""

from test_e2e_agent import Plane

URI = "s3://ckpt-bucket/jobs/3"

RUN = r"""
echo "uri=$SPOTRUN_CKPT_URI"
st() { printf '%s' "$1" > "$SPOTRUN_STATUS_FILE.t"; mv "$SPOTRUN_STATUS_FILE.t" "$SPOTRUN_STATUS_FILE"; sleep 0.6; }
st '{"seq":1,"step":5,"ckpt_step":4}'
st '{"seq":2,"step":6,"ckpt_step":4,"ckpt_error":"PutObject jobs/3/x: HTTP 403 SignatureDoesNotMatch"}'
st '{"seq":3,"step":7,"ckpt_step":4,"ckpt_error":"PutObject jobs/3/x: HTTP 403 SignatureDoesNotMatch"}'
st '{"seq":4,"step":8,"ckpt_step":4,"ckpt_error":"CreateMultipartUpload jobs/3/y: HTTP 404 NoSuchBucket"}'
echo done
while :; do sleep 0.05; done
"""


class UriPlane(Plane):
    def assignment(self, directive):
        a = super().assignment(directive)
        a["ckpt_uri"] = URI
        return a


def test_ckpt_uri_and_ckpt_error_events(tmp_path):
    p = UriPlane(tmp_path, run=RUN)
    try:
        p.start_agent()
        p.wait_for(lambda: "done" in p.lines("stdout"), what="the workload")
        p.wait_for(lambda: len([e for e in p.events
                                if e["type"] == "ckpt_error"]) >= 2,
                   what="two ckpt_error events")
        errs = [e for e in p.events if e["type"] == "ckpt_error"]
        assert [e["message"] for e in errs] == [
            "PutObject jobs/3/x: HTTP 403 SignatureDoesNotMatch",
            "CreateMultipartUpload jobs/3/y: HTTP 404 NoSuchBucket"]
        assert all(e["attempt"] == 1 for e in errs)
        assert "uri=" + URI in p.lines("stdout")
        # lost work is counted from the step in the object store
        assert any(h.get("ckpt_step") == 4 for h in p.heartbeats)
    finally:
        p.close()


# ---- the recovery point, from the engine itself (issue 23) -----------------
import json as _json  # noqa: E402
import os as _os  # noqa: E402

PYDIR = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.dirname(
    _os.path.abspath(__file__)))), "python")

TRAIN = r"""
/usr/bin/python3 - <<'PY'
import os, numpy as np, spotrun
ck = spotrun.Checkpointer(os.environ["SPOTRUN_CKPT_DIR"],
                          remote=os.environ["SPOTRUN_CKPT_URI"])
for step in (1, 2, 3):
    ck.save(step, {"w": np.full(1000, step, dtype=np.float32)})
ck.close()
print("trained", flush=True)
PY
while :; do sleep 0.05; done
"""


class StorePlane(UriPlane):
    """A real engine and a file:// store; no status file is written."""

    def __init__(self, tmp, run, uri, alert_intervals=None):
        self.uri = uri
        self.alert_intervals = alert_intervals
        super().__init__(tmp, run=run)

    def assignment(self, directive):
        a = super().assignment(directive)
        a["ckpt_uri"] = self.uri
        a["envs"] = dict(a["envs"], PYTHONPATH=PYDIR)
        if self.alert_intervals:
            a["ckpt_alert_intervals"] = self.alert_intervals
        return a


def test_heartbeats_carry_the_recovery_point(tmp_path):
    """The engine publishes its recovery point next to tier 2; the agent
    reports it in every heartbeat - the newest step on this node's disk,
    the newest in the store and when that one was saved - with no status
    file from the workload."""
    p = StorePlane(tmp_path, TRAIN, "file://%s/store" % tmp_path)
    try:
        p.start_agent()
        p.wait_for(lambda: "trained" in p.lines("stdout"), timeout=120,
                   what="the workload")
        p.wait_for(lambda: any(h.get("ckpt_local_step") == 3 and
                               h.get("ckpt_step") == 3 and
                               h.get("ckpt_store_ns", 0) > 0
                               for h in p.heartbeats),
                   what="a heartbeat with the recovery point")
        assert not [e for e in p.events if e["type"] == "ckpt_error"]
    finally:
        p.close()


def write_rp(local, store, behind=0, error=""):
    """A recovery point as the engine writes it (tier3.json)."""
    return ("printf '%%s' '%s' > \"$SPOTRUN_CKPT_DIR/t.json\"; "
            "mv \"$SPOTRUN_CKPT_DIR/t.json\" \"$SPOTRUN_CKPT_DIR/tier3.json\"\n"
            % _json.dumps({"uri": URI, "local_step": local,
                           "store_step": store, "store_time_ns": 1,
                           "behind": behind, "retries": 0,
                           "last_error": error}))


def test_store_falling_behind_raises_the_alert(tmp_path):
    """More checkpoints on the node than the job allows ahead of the
    store's newest (spotrun.checkpoint.alert_intervals): one ckpt_error
    event - the "checkpoint" alert - until the store caught up again."""
    run = (write_rp(4, 3, behind=1) + "sleep 0.6\n" +
           write_rp(9, 3, behind=6) + "sleep 0.6\n" +
           write_rp(10, 3, behind=7) + "sleep 0.6\n" +
           write_rp(10, 10, behind=0) + "echo done\n"
           "while :; do sleep 0.05; done\n")
    p = StorePlane(tmp_path, run, URI, alert_intervals=5)
    try:
        p.start_agent()
        p.wait_for(lambda: "done" in p.lines("stdout"), what="the workload")
        p.wait_for(lambda: any(h.get("ckpt_step") == 10 for h in p.heartbeats),
                   what="the store caught up")
        errs = [e["message"] for e in p.events if e["type"] == "ckpt_error"]
        assert len(errs) == 1, errs
        assert "(step 3) lags 6 behind this node's (step 9; more than 5)" \
            in errs[0]
    finally:
        p.close()


def test_job_end_with_the_newest_step_local_only(tmp_path):
    """A run that completes while its newest checkpoint is on this node's
    disk only is not a silent success: a ckpt_error event says which step
    is where, before the exit."""
    run = (write_rp(7, 5, behind=1, error="PutObject x: HTTP 503") +
           "echo done\n")
    p = StorePlane(tmp_path, run, URI)
    try:
        p.start_agent()
        p.wait_for(lambda: any(e["type"] == "exit" for e in p.events),
                   what="the exit")
        ty = p.types()
        errs = [e["message"] for e in p.events if e["type"] == "ckpt_error"]
        assert any("the run ended with checkpoint step 7 on this node's disk "
                   "only; the object store holds step 5: PutObject x: HTTP "
                   "503" in m for m in errs), errs
        assert ty.index("ckpt_error") < ty.index("exit")
    finally:
        p.close()


OWN_DIR = r"""
/usr/bin/python3 - <<'PY'
import os, time, numpy as np, spotrun
store = os.environ["SPOTRUN_CKPT_URI"][len("file://"):]
os.makedirs(store, exist_ok=True)
block = os.path.join(store, "step-00000001")
open(block, "w").close()   # where step 1 goes: its uploads fail
ck = spotrun.Checkpointer("%(own)s", remote=os.environ["SPOTRUN_CKPT_URI"])
ck.save(1, {"w": np.full(1000, 1, dtype=np.float32)})
ck.wait()
print("saved", flush=True)
while not os.path.exists("%(go)s"):
    time.sleep(0.05)
os.unlink(block)            # the store is back: step 1 goes up
ck.close()
print("trained", flush=True)
PY
while :; do sleep 0.05; done
"""


def test_progress_report_carries_the_store_step(tmp_path):
    """A trainer whose tier 2 is not $SPOTRUN_CKPT_DIR (so no tier3.json
    where the agent looks): libspotckpt's progress report says the
    store's step as ckpt_step and the failing upload as ckpt_error - a
    step on the node's disk only is never reported as the one a new node
    resumes from."""
    go = tmp_path / "go"
    run = OWN_DIR % {"own": tmp_path / "own-ckpt", "go": go}
    p = StorePlane(tmp_path, run, "file://%s/store" % tmp_path)
    try:
        p.start_agent()
        p.wait_for(lambda: "saved" in p.lines("stdout"), timeout=120,
                   what="the first save")
        p.wait_for(lambda: any(e["type"] == "ckpt_error" and
                               "step-00000001" in e["message"]
                               for e in p.events),
                   what="the failing upload as a ckpt_error event")
        p.wait_for(lambda: any("step" in h for h in p.heartbeats),
                   what="a heartbeat after the save")
        assert not any(h.get("ckpt_step") == 1 for h in p.heartbeats), \
            p.heartbeats
        go.touch()
        p.wait_for(lambda: "trained" in p.lines("stdout"), timeout=180,
                   what="close() after the store came back")
        p.wait_for(lambda: any(h.get("ckpt_step") == 1 for h in p.heartbeats),
                   what="the store's step in a heartbeat")
    finally:
        p.close()
