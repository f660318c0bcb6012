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
