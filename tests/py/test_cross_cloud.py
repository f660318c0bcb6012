"""A job moves between clouds (issue 31): spotrund --providers gcp,aws,
the GCE emulator (`spotrun gce-emulator`) with one zone and the EC2
emulator (`spotrun ec2-emulator`), real spotrun-agents booted from each
driver's bootstrap, the job's checkpoint directory a bucket mount in an
S3 server (s3rver): tier 3, the only thing the two clouds share.

  the job (L4:1, any_of gcp/us-central1, aws/us-east-1) starts on a GCP
  spot VM (the cheaper) -> the GCE emulator's zones lose their spot
  capacity: instance/preempted answers the agent's hanging GET, the
  workload saves its step and exits, the agent's final round goes to the
  bucket -> the replacement on GCP fails (ZONE_RESOURCE_POOL_EXHAUSTED)
  -> the job moves to AWS: a `move` event names aws and why -> the EC2
  instance's agent restores the bucket's newest round, exactly the final
  one, and the workload resumes at the step it saved on GCP -> done.

Waits on the job's states and events, never on timings (generous limits
for a loaded machine)."""
import os
import time

from objstore_servers import S3rver
from test_ctl_crash import BUILD, ROOT, Daemon
from test_e2e_aws_emu import aws_env, start_emulator
import gce_emu

STEPS = 60
LIMIT = 240
# One step every 0.1 s: the step counter saved into the bucket mount at
# each step, and on SIGTERM (the notice) once more; a line per attempt in
# the test's own record (CKPT_LOG) says where it started and ended.
WORKLOAD = r"""
d=$SPOTRUN_NODE_DIR/ckpt; s=0; [ -f $d/step ] && s=$(cat $d/step)
echo "start $SPOTRUN_ATTEMPT $s" >> $CKPT_LOG
save() { echo $s > $d/step.tmp && mv $d/step.tmp $d/step; }
trap 'save; echo "final $SPOTRUN_ATTEMPT $s" >> $CKPT_LOG; exit 0' TERM
while [ $s -lt STEPS ]; do
  s=$((s+1)); sleep 0.1 & wait $!
  save
  printf '{"step":%d,"total_steps":STEPS,"ckpt_step":%d}' $s $s > $SPOTRUN_STATUS_FILE.tmp
  mv $SPOTRUN_STATUS_FILE.tmp $SPOTRUN_STATUS_FILE
done
echo "done $SPOTRUN_ATTEMPT $s" >> $CKPT_LOG
"""


def job_yaml(uri, creds, log):
    run = WORKLOAD.replace("STEPS", str(STEPS))
    envs = dict(creds, CKPT_LOG=log)
    return ("name: cross-cloud\nresources:\n  use_spot: true\n  any_of:\n"
            "    - {infra: gcp/us-central1, accelerators: L4:1}\n"
            "    - {infra: aws/us-east-1, accelerators: L4:1}\n"
            "envs:\n%s"
            "file_mounts:\n  /ckpt:\n    source: %s\n    mode: MOUNT\n"
            "run: |\n%s\nspotrun:\n  deadline: 1000h\n  work: 1h\n" % (
                "".join("  %s: %s\n" % kv for kv in sorted(envs.items())),
                uri, "".join("  " + l + "\n"
                             for l in run.strip().splitlines())))


def wait_for(d, jid, what, pred):
    end = time.time() + LIMIT
    while time.time() < end:
        j = d.job(jid)
        assert j["state"] not in ("FAILED", "CANCELLED", "SUCCEEDED"), (
            what, j["message"], d.log_tail())
        if pred(j):
            return j
        time.sleep(0.1)
    raise AssertionError("%s: never: %s" % (what, d.log_tail()))


def test_job_moves_from_gcp_to_aws_through_the_bucket(tmp_path, monkeypatch):
    srv = S3rver()
    gce = ec2 = d = None
    try:
        gce, gurl = gce_emu.start(tmp_path)
        ec2, eurl = start_emulator(tmp_path, itype="g6.xlarge")
        gce_emu.gcp_env(monkeypatch, tmp_path, gurl)
        aws_env(monkeypatch, eurl)
        cfg = tmp_path / "spotrund.yaml"
        cfg.write_text("providers:\n  gcp:\n    image: projects/debian-cloud/"
                       "global/images/family/debian-12\n    regions:\n"
                       "      us-central1: {}\n")
        d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--config", str(cfg),
                   "--providers", "gcp,aws",
                   "--aws-image", "ami-0123456789abcdef0",
                   "--time-scale", "60",
                   "--agent", os.path.join(BUILD, "bin", "spotrun-agent"),
                   "--heartbeat-timeout", "20s", "--boot-timeout", "60s")
        d.start()
        log = str(tmp_path / "ckpt.log")
        uri = "s3://ckpt/cross/ckpt"
        jid = d.submit(job_yaml(uri, srv.env(), log))
        j = wait_for(d, jid, "running on GCP past a few steps", lambda j: (
            j["state"] == "RUNNING" and (j.get("step") or 0) >= 5))
        first = [n for n in j["nodes"] if n["state"] == "READY"][0]
        assert first["cloud"] == "gcp", first
        # GCP reclaims its spot capacity in the whole region: the VM gets
        # its notice, and no GCP zone takes the replacement
        for z in gce_emu.ZONES:
            assert gce_emu.capacity(gurl, z, "none") == 1
        j = d.wait([jid], LIMIT)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        nodes = j["nodes"]
        old = [n for n in nodes if n["id"] == first["id"]][0]
        assert old["end_reason"] == "preempted", old
        last = max(nodes, key=lambda n: n["id"])
        assert last["cloud"] == "aws", nodes
        ev = d.events(jid)
        kinds = [e["type"] for e in ev]
        assert "preempted" in kinds and "notice_ack" in kinds, kinds
        moves = [e for e in ev if e["type"] == "move"]
        # where it moved (the event's placement and message), and why:
        # after GCP reclaimed the node (and, when the market view still
        # offered GCP zones, their launches failed for capacity)
        to_aws = [i for i, e in enumerate(ev) if e["type"] == "move" and
                  e["data"]["cloud"] == "aws"]
        assert to_aws, [(e["type"], e["message"]) for e in moves]
        assert "aws/us-east-1" in ev[to_aws[0]]["message"], ev[to_aws[0]]
        reclaimed = [i for i, e in enumerate(ev) if e["type"] == "preempted"
                     and e.get("node_id") == first["id"]]
        assert reclaimed and reclaimed[0] < to_aws[0], kinds
        refused = [e for e in ev[:to_aws[0]] if e["type"] == "node_terminated"
                   and e.get("node_id") != first["id"]]
        assert all("capacity" in e["message"] for e in refused), refused
        # tier 3 carried the state: the GCP node's final round is the one
        # the AWS node restored, and the workload resumed at its step
        fin = [e for e in ev if e["type"] == "sync_final" and
               e.get("node_id") == first["id"]]
        res = [e for e in ev if e["type"] == "sync_restored" and
               e.get("node_id") == last["id"]]
        assert fin and res, kinds
        assert res[0]["data"]["round"] == fin[0]["data"]["round"], (res, fin)
        with open(log) as f:
            lines = [l.split() for l in f.read().splitlines()]
        finals = [int(w[2]) for w in lines if w[0] == "final"]
        starts = [int(w[2]) for w in lines if w[0] == "start"]
        assert finals and finals[0] >= 5, lines
        assert starts[-1] == finals[-1], lines
        assert [w for w in lines if w[0] == "done"], lines
    finally:
        if d:
            d.stop()
        for p in (gce, ec2):
            if p:
                p.terminate()
                p.wait(timeout=20)
        srv.close()
