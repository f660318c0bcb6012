"""spotrun-agent end to end against a scripted control plane.

The test plays spotrund's node API (register, heartbeat, report) and the
node's AWS IMDSv2 endpoint on one 127.0.0.1 server with an ephemeral
port, starts the real agent binary, and checks exactly what the agent
sends and does:

- preemption: the workload runs setup then run with the environment
  contract; on the IMDS notice it gets SIGTERM, takes its "final
  checkpoint", and the agent reports notice -> final checkpoint (step,
  stall, durable) -> exit (cause preempted), then exits 0 by itself;
- a malformed notice reply is reported clearly and polling goes on; an
  `exit` directive stops the workload (cause stopped) and the agent;
- a crashing workload is reported as crashed with its exit code;
- the node token never reaches the workload; an IMDS token is used.

The agent exits on its own in each case, so under the sanitizer pass its
exit path (and LeakSanitizer) runs too.
"""

import json
import os
import subprocess
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SPOTRUN_BUILD", os.path.join(ROOT, "build"))
TOKEN = "n0de" * 16
NODE = 7

WORKLOAD = r"""
trap 'mkdir -p "$SPOTRUN_CKPT_DIR/step-00000042" &&
      echo "{}" > "$SPOTRUN_CKPT_DIR/step-00000042/manifest.json" &&
      printf "{\"seq\":9,\"step\":42,\"stall_ms\":[7.5]}" > "$SPOTRUN_STATUS_FILE.t" &&
      mv "$SPOTRUN_STATUS_FILE.t" "$SPOTRUN_STATUS_FILE"; echo final-saved; exit 0' TERM
echo "A=$A job=$SPOTRUN_JOB_ID rank=$SPOTRUN_NODE_RANK/$SPOTRUN_NUM_NODES attempt=$SPOTRUN_ATTEMPT"
echo "setup=$(cat setup.txt) notice=$SPOTRUN_NOTICE_FILE signal=$SPOTRUN_PREEMPT_SIGNAL"
env | grep -c "TOKEN_VALUE" || true
echo oops >&2
printf '{"seq":1,"step":10,"total_steps":100,"ckpt_step":0,"stall_ms":[3.25]}' > "$SPOTRUN_STATUS_FILE.t"
mv "$SPOTRUN_STATUS_FILE.t" "$SPOTRUN_STATUS_FILE"
while :; do sleep 0.05; done
"""


class Plane:
    """The scripted spotrund + IMDS, recording every request."""

    def __init__(self, tmp, run=WORKLOAD):
        self.tmp = str(tmp)
        # the script greps its own environment for the node token
        self.run = run.replace("TOKEN_VALUE", TOKEN)
        self.lock = threading.Lock()
        self.events = []          # every reported event, in order
        self.heartbeats = []
        self.auth = set()         # Authorization headers seen
        self.imds_tokens = set()  # X-aws-ec2-metadata-token values seen
        self.notice = None        # None, "good" or "bad"
        self.notice_time = None
        self.notice_polls = 0     # GETs of the instance-action endpoint
        self.rebalance_time = None
        self.directive = {"action": "run", "attempt": 1}
        self.revoked = False      # answer 401 to the node from now on
        # hold: the next POST waits for release (the agent blocked in a
        # call to spotrund); held is set once one is waiting
        self.hold = False
        self.held = threading.Event()
        self.release = threading.Event()
        # down: every POST is answered 503 (spotrund failing) and kept in
        # refused as (path, body)
        self.down = False
        self.refused = []
        # files_gate: the job brings files and GET .../files waits for
        # the gate, then fails (503); files_asked counts the GETs
        self.files_gate = None
        self.files_asked = 0
        # files_archive: the job brings these archive bytes, served by GET
        # .../files after files_hook() (when set) has returned
        self.files_archive = None
        self.files_hook = None
        # refuse_type: a report carrying an event of this type is answered
        # 400 (a daemon that does not know it), counted in refused_reports
        self.refuse_type = None
        self.refused_reports = 0
        plane = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, status, body, ctype="application/json"):
                data = body if isinstance(body, bytes) else \
                    body.encode() if isinstance(body, str) else \
                    json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self):
                if self.path == "/imds/latest/api/token":
                    ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
                    if not ttl:
                        return self.reply(400, "no ttl", "text/plain")
                    return self.reply(200, "imds-tok-1", "text/plain")
                self.reply(404, {})

            def do_GET(self):
                if self.path == "/v1/nodes/%d/files" % NODE:
                    with plane.lock:
                        plane.files_asked += 1
                        gate = plane.files_gate
                    if gate is not None:
                        gate.wait(120)
                    if plane.files_archive is not None:
                        if plane.files_hook:
                            plane.files_hook()
                        return self.reply(200, plane.files_archive,
                                          "application/x-tar")
                    return self.reply(503, {"error": {
                        "code": "unavailable", "message": "no files here"}})
                if self.path == ("/imds/latest/meta-data/events/"
                                 "recommendations/rebalance"):
                    with plane.lock:
                        reb = plane.rebalance_time
                    if self.headers.get("X-aws-ec2-metadata-token") != "imds-tok-1":
                        return self.reply(401, "", "text/plain")
                    if reb is None:
                        return self.reply(404, "Not Found", "text/plain")
                    return self.reply(200, {"noticeTime": reb})
                if self.path != "/imds/latest/meta-data/spot/instance-action":
                    return self.reply(404, {})
                tok = self.headers.get("X-aws-ec2-metadata-token")
                with plane.lock:
                    plane.imds_tokens.add(tok)
                    plane.notice_polls += 1
                    state = plane.notice
                if tok != "imds-tok-1":
                    return self.reply(401, "", "text/plain")
                if state is None:
                    return self.reply(404, "Not Found", "text/plain")
                if state == "bad":
                    return self.reply(200, {"action": "explode", "time": "soon"})
                return self.reply(200, {"action": "terminate",
                                        "time": plane.notice_time})

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                with plane.lock:
                    plane.auth.add(self.headers.get("Authorization"))
                    hold, plane.hold = plane.hold, False
                    down = plane.down
                    if down:
                        plane.refused.append((self.path, body))
                if down:
                    return self.reply(503, {"error": {
                        "code": "unavailable", "message": "down"}})
                if hold:
                    plane.held.set()
                    plane.release.wait(60)
                with plane.lock:
                    d = dict(plane.directive)
                    revoked = plane.revoked
                if revoked:
                    return self.reply(401, {"error": {"code": "unauthorized",
                                                      "message": "bad token"}})
                if self.path == "/v1/nodes/%d/register" % NODE:
                    return self.reply(200, plane.assignment(d))
                if self.path == "/v1/nodes/%d/heartbeat" % NODE:
                    with plane.lock:
                        plane.heartbeats.append(body)
                    return self.reply(200, {"directive": d})
                if self.path == "/v1/nodes/%d/report" % NODE:
                    with plane.lock:
                        bad = any(e["type"] == plane.refuse_type
                                  for e in body["events"])
                        plane.refused_reports += bad
                        if not bad:
                            plane.events.extend(body["events"])
                    if bad:
                        return self.reply(400, {"error": {
                            "code": "bad_request", "message": "events: "
                            "type: unknown event type"}})
                    return self.reply(200, {"accepted": len(body["events"]),
                                            "directive": d})
                self.reply(404, {})

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.workdir = os.path.join(self.tmp, "node")
        self.ckpt = os.path.join(self.tmp, "ckpt")
        os.makedirs(self.workdir)
        os.makedirs(self.ckpt)

    def assignment(self, directive):
        return {"node_id": NODE, "job_id": 3, "rank": 0, "num_nodes": 1,
                "setup": "echo setup-ran > setup.txt", "run": self.run,
                "envs": {"A": "x y $(id)"},
                "workdir": self.workdir, "ckpt_dir": self.ckpt,
                "heartbeat_ms": 200, "imds_poll_ms": 200,
                "files": self.files_gate is not None or
                self.files_archive is not None,
                "directive": directive}

    def start_agent(self, extra=(), out=None):
        """out: where the agent's log goes (a pipe's write end); the
        agent.log file by default."""
        tokf = os.path.join(self.tmp, "node.token")
        with open(tokf, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(tokf, 0o600)
        self.log = open(os.path.join(self.tmp, "agent.log"), "wb")
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "bin", "spotrun-agent"), "--api", self.url,
             "--node-id", str(NODE), "--token-file", tokf,
             "--workdir", self.workdir, "--imds", self.url + "/imds"]
            + list(extra),
            stdout=self.log if out is None else out, stderr=subprocess.STDOUT)

    def wait_for(self, pred, timeout=60, what="condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if pred():
                    return
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s; events %s\nagent log:\n%s"
                             % (what, self.events, self.agent_log()))

    def agent_log(self):
        try:
            with open(os.path.join(self.tmp, "agent.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def types(self):
        return [e["type"] for e in self.events
                if e["type"] not in ("log", "isolation")]

    def lines(self, stream=None):
        return [e["line"] for e in self.events if e["type"] == "log"
                and (stream is None or e["stream"] == stream)]

    def close(self):
        self.release.set()
        # SIGTERM first: the agent stops its workload's process group on
        # the way out.  A bare SIGKILL left the workload (its own group,
        # reparented to init) running after the test.
        if getattr(self, "proc", None) and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def plane(tmp_path):
    p = Plane(tmp_path)
    yield p
    p.close()


def test_preemption_notice_final_checkpoint_and_exit(plane):
    plane.start_agent()
    plane.wait_for(lambda: any(h.get("step") == 10 for h in plane.heartbeats),
                   what="the workload's first status")
    plane.wait_for(lambda: any(e["type"] == "checkpoint" for e in plane.events),
                   what="the periodic checkpoint")
    t = datetime.fromtimestamp(time.time() + 4, timezone.utc)
    with plane.lock:
        plane.notice_time = t.strftime("%Y-%m-%dT%H:%M:%SZ")
        plane.notice = "good"
    # it acts on the notice and leaves on its own (the limit is only how
    # long to wait; the order of what it did is checked below, and the
    # deadline it handed the trainer further down)
    rc = plane.proc.wait(timeout=60)
    assert rc == 0, plane.agent_log()

    ty = plane.types()
    assert ty[0] == "setup_done"
    # the periodic checkpoint came from the status file, with its stall
    per = [e for e in plane.events if e["type"] == "checkpoint" and not e["final"]]
    assert per[0]["stall_ms"] == 3.25 and per[0]["step"] == 10
    assert per[0]["attempt"] == 1
    # then: notice, the final checkpoint, the exit - in that order
    tail = [x for x in ty if x in ("notice", "exit")
            or x == "checkpoint"][-3:]
    assert tail == ["notice", "checkpoint", "exit"], ty
    ev = {e["type"]: e for e in plane.events}
    assert ev["notice"]["action"] == "terminate"
    assert ev["notice"]["time"].startswith(plane.notice_time[:19])
    fin = [e for e in plane.events if e["type"] == "checkpoint" and e["final"]][0]
    assert fin["step"] == 42 and fin["durable"] is True
    assert fin["stall_ms"] == 7.5
    ex = ev["exit"]
    assert ex["cause"] == "preempted" and ex["attempt"] == 1
    assert ev["setup_done"]["exit_code"] == 0

    # heartbeats carried the workload's progress and CPU use
    hb = [h for h in plane.heartbeats if h.get("step") == 10][0]
    assert hb["workload"] == "running" and hb["total_steps"] == 100
    assert hb["attempt"] == 1 and hb["workload_pgid"] > 0
    assert "cpu_util" in hb and "gpu_util" in hb

    # the environment contract; values verbatim; no node token
    out = plane.lines("stdout")
    assert "A=x y $(id) job=3 rank=0/1 attempt=1" in out
    assert ("setup=setup-ran notice=%s/notice signal=TERM" % plane.workdir) in out
    assert "0" in out           # env | grep -c <node token>: no match
    assert "final-saved" in out
    assert "oops" in plane.lines("stderr")
    # the notice file carried the deadline for the trainer
    with open(os.path.join(plane.workdir, "notice")) as f:
        assert abs(float(f.read()) - t.timestamp()) < 1
    # credentials: the node token to spotrund, an IMDSv2 token to IMDS
    assert plane.auth == {"Bearer " + TOKEN}
    assert plane.imds_tokens == {"imds-tok-1"}
    assert TOKEN not in plane.agent_log()
    # the local copy of the workload's output
    with open(os.path.join(plane.workdir, "workload.log")) as f:
        assert "final-saved" in f.read()


PROBE = r"""
cat "T/state/api.token" 2>/dev/null && echo LEAK-admin-token
t=$(cat "T/node.token" 2>/dev/null); [ -n "$t" ] && echo LEAK-node-token
echo "ls:$(ls -A "T/state" 2>/dev/null | tr '\n' ' ')"
cat /proc/$PPID/environ >/dev/null 2>&1 && echo LEAK-agent-environ
ls /proc/$PPID/root/ >/dev/null 2>&1 && echo LEAK-agent-root
cat /proc/$PPID/cmdline >/dev/null 2>&1 && echo agent-cmdline-readable
echo saved > "$SPOTRUN_CKPT_DIR/probe" && echo ckpt-written
echo probe-done
"""


def stop_agent(p):
    with p.lock:
        p.directive = {"action": "exit", "attempt": 1}
    assert p.proc.wait(timeout=20) == 0, p.agent_log()


def isolation_event(p):
    ev = [e for e in p.events if e["type"] == "isolation"]
    assert len(ev) == 1, p.events   # said once
    return ev[0]


def test_workload_cannot_read_the_tokens(tmp_path):
    # spotrund's state dir (admin token) is --private; the node token file
    # is hidden too; the checkpoint dir stays writable
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "api.token").write_text("ADMIN-SECRET\n")
    p = Plane(tmp_path, run=PROBE.replace("T/", str(tmp_path) + "/"))
    try:
        p.start_agent(["--private", str(state)])
        p.wait_for(lambda: any(e["type"] == "exit" for e in p.events),
                   what="the probe's exit")
        out = p.lines("stdout")
        iso = isolation_event(p)
        if iso["mode"] == "unavailable":
            pytest.skip("namespaces unavailable here: " + iso["message"])
        assert iso["mode"] == ("root-partial" if os.geteuid() == 0
                               else "userns"), iso
        assert "probe-done" in out, out
        assert not [x for x in out if "LEAK" in x], out
        assert "ls:" in out          # the state dir lists as empty
        assert "ckpt-written" in out
        with open(os.path.join(p.ckpt, "probe")) as f:
            assert f.read() == "saved\n"
        ex = [e for e in p.events if e["type"] == "exit"][0]
        assert ex["cause"] == "completed" and ex["exit_code"] == 0
        # the job's log says how the workload was isolated
        assert any(x.startswith("isolation: ") for x in p.lines("agent"))
        # the host still has its files
        assert (state / "api.token").read_text() == "ADMIN-SECRET\n"
        stop_agent(p)
    finally:
        p.close()


def test_isolation_off_and_strict(tmp_path):
    # off: said once, and the workload runs unisolated (it can read the
    # node token - the documented trade-off)
    p = Plane(tmp_path / "off", run=PROBE.replace("T/", str(tmp_path / "off") + "/"))
    try:
        p.start_agent(["--isolation", "off"])
        p.wait_for(lambda: any(e["type"] == "exit" for e in p.events),
                   what="the probe's exit")
        assert isolation_event(p)["mode"] == "none"
        assert "LEAK-node-token" in p.lines("stdout")
        stop_agent(p)
    finally:
        p.close()
    # strict: a root agent can only isolate partially, so it refuses
    # to start the workload and says why
    if os.geteuid() != 0:
        pytest.skip("strict refuses only where isolation is partial (root)")
    p = Plane(tmp_path / "strict", run="echo ran")
    try:
        p.start_agent(["--isolation", "strict"])
        p.wait_for(lambda: any(e["type"] in ("exit", "setup_done")
                               and e.get("exit_code") == 127
                               for e in p.events), what="the refusal")
        iso = isolation_event(p)
        assert iso["mode"] == "refused" and "root" in iso["message"], iso
        assert "ran" not in p.lines("stdout")
        stop_agent(p)
    finally:
        p.close()


def test_bad_notice_is_reported_and_exit_directive_stops(plane):
    plane.start_agent()
    plane.wait_for(lambda: any(h.get("step") == 10 for h in plane.heartbeats),
                   what="the workload running")
    with plane.lock:
        plane.notice = "bad"
    plane.wait_for(lambda: any("preemption endpoint" in ln and "explode" in ln
                               for ln in plane.lines("agent")),
                   what="the bad notice reported")
    with plane.lock:
        polls = plane.notice_polls
    plane.wait_for(lambda: plane.notice_polls >= polls + 2,
                   what="two more polls of the notice endpoint")
    assert plane.proc.poll() is None       # still running, still polling
    assert "notice" not in plane.types()
    with plane.lock:
        plane.directive = {"action": "exit", "attempt": 1}
    assert plane.proc.wait(timeout=20) == 0, plane.agent_log()
    ex = [e for e in plane.events if e["type"] == "exit"]
    assert len(ex) == 1 and ex[0]["cause"] == "stopped"
    # a stop asks for a final checkpoint too, and got one
    fin = [e for e in plane.events if e["type"] == "checkpoint" and e["final"]]
    assert fin and fin[0]["step"] == 42


# attempt 1's final checkpoint never ends (a kept rank's write that the
# gang's next attempt no longer needs); attempt 2 stops on SIGTERM
SLOW_FINAL = """
if [ "$SPOTRUN_ATTEMPT" = 1 ]; then
  trap 'echo final-save-started; while :; do sleep 0.05; done' TERM
fi
echo "attempt=$SPOTRUN_ATTEMPT"
while :; do sleep 0.05; done
"""


def test_next_attempt_kills_a_final_save_still_under_way(tmp_path):
    """A stop, then a run of the next attempt while the old workload is
    still writing its final checkpoint: the agent kills the old one at
    once (it can no longer count) and starts the new one, rather than
    waiting the stop grace (60 s)."""
    p = Plane(tmp_path, run=SLOW_FINAL)
    try:
        p.start_agent()
        p.wait_for(lambda: "attempt=1" in p.lines("stdout"),
                   what="attempt 1 running")
        with p.lock:
            p.directive = {"action": "stop", "attempt": 1}
        p.wait_for(lambda: "final-save-started" in p.lines("stdout"),
                   what="attempt 1's final save under way")
        with p.lock:
            p.directive = {"action": "run", "attempt": 2}
        p.wait_for(lambda: "attempt=2" in p.lines("stdout"), timeout=120,
                   what="attempt 2 running")
        assert any("can no longer count" in ln for ln in p.lines("agent"))
        ex = [e for e in p.events if e["type"] == "exit"]
        assert ex[0]["attempt"] == 1 and ex[0]["signal"] == 9, ex
        assert ex[0]["cause"] == "stopped", ex
        # nothing new was committed: no final checkpoint is reported
        assert not [e for e in p.events if e["type"] == "checkpoint"
                    and e.get("final")], p.events
        with p.lock:
            p.directive = {"action": "exit", "attempt": 2}
        assert p.proc.wait(timeout=20) == 0, p.agent_log()
    finally:
        p.close()


def test_crashing_workload_is_reported_with_its_code(tmp_path):
    p = Plane(tmp_path, run="echo about to fail; exit 3")
    try:
        p.start_agent()
        p.wait_for(lambda: any(e["type"] == "exit" for e in p.events),
                   what="the exit report")
        ex = [e for e in p.events if e["type"] == "exit"][0]
        assert ex["cause"] == "crashed" and ex["exit_code"] == 3
        assert ex["signal"] is None
        assert "about to fail" in p.lines("stdout")
        # the agent stays (spotrund decides about a restart); exit on request
        with p.lock:
            p.directive = {"action": "exit", "attempt": 1}
        assert p.proc.wait(timeout=20) == 0, p.agent_log()
        assert len([e for e in p.events if e["type"] == "exit"]) == 1
    finally:
        p.close()


def test_revoked_node_stops_its_workload_and_exits(plane):
    plane.start_agent()
    plane.wait_for(lambda: any(h.get("step") == 10 for h in plane.heartbeats),
                   what="the workload running")
    pgid = [h for h in plane.heartbeats if h.get("step") == 10][0]["workload_pgid"]
    with plane.lock:
        plane.revoked = True
    assert plane.proc.wait(timeout=20) == 0, plane.agent_log()
    # the workload's process group is gone with it
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert "node is gone" in plane.agent_log()


# The workload of a scheduler's signal: once told (the file "go"), it
# sends the notice signal to the agent, commits its final checkpoint and
# exits 0, as a trainer that Slurm's SIGTERM to every process of the step
# reached too.
SIGNALLED = r"""
echo $$ > pid
while [ ! -f go ]; do sleep 0.05; done
kill -TERM $PPID
mkdir -p "$SPOTRUN_CKPT_DIR/step-00000042"
echo "{}" > "$SPOTRUN_CKPT_DIR/step-00000042/manifest.json"
exit 0
"""


def proc_state(pid):
    """A process's state letter ('Z': exited, not reaped), None if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def test_exit_after_a_notice_signal_not_yet_taken_is_preempted(tmp_path):
    """The notice signal reaches the agent and the workload together
    (Slurm signals every process of the step); the workload exits while
    the agent is still inside a call to spotrund, so its exit is there to
    reap before the agent has taken the notice.  That exit is the
    notice's stop (cause preempted, after the notice), never a run that
    completed: a job 'completed' by its final checkpoint would end as
    SUCCEEDED with its work undone."""
    p = Plane(tmp_path, run=SIGNALLED)
    try:
        p.start_agent(["--isolation", "off", "--notice", "signal",
                       "--notice-signal", "TERM", "--notice-lead", "30s"])
        pidf = os.path.join(p.workdir, "pid")
        p.wait_for(lambda: any(h.get("workload") == "running"
                               for h in p.heartbeats) and
                   os.path.exists(pidf), what="the workload running")
        with open(pidf) as f:
            pid = int(f.read())
        with p.lock:
            p.hold = True
        assert p.held.wait(60), p.agent_log()
        # the agent waits for spotrund's answer: the signal and the exit
        # both happen now
        open(os.path.join(p.workdir, "go"), "w").close()
        p.wait_for(lambda: proc_state(pid) in ("Z", None),
                   what="the workload exited")
        p.release.set()
        assert p.proc.wait(timeout=60) == 0, p.agent_log()
        ty = [x for x in p.types() if x in ("notice", "checkpoint", "exit")]
        assert ty == ["notice", "checkpoint", "exit"], (p.events,
                                                        p.agent_log())
        ev = {e["type"]: e for e in p.events}
        assert ev["notice"]["source"] == "signal", ev["notice"]
        assert ev["exit"]["cause"] == "preempted", (ev["exit"], p.agent_log())
        assert ev["exit"]["exit_code"] == 0 and ev["exit"]["attempt"] == 1
        # its final checkpoint, committed before the agent took the
        # notice, is reported as the final one
        fin = ev["checkpoint"]
        assert fin["final"] and fin["durable"] and fin["step"] == 42, fin
    finally:
        p.close()


# The run script's sh and its trainer, as a job's `run:` line makes them:
# the trainer takes its final checkpoint on SIGTERM.
SH_AND_TRAINER = r"""
echo $$ > leader
sh -c 'trap "mkdir -p \"\$SPOTRUN_CKPT_DIR/step-00000042\" &&
  echo {} > \"\$SPOTRUN_CKPT_DIR/step-00000042/manifest.json\" &&
  echo final-saved; exit 0" TERM
  echo $$ > trainer; while :; do sleep 0.05; done' &
wait
"""


def kill_the_leader(p):
    """Start the agent on SH_AND_TRAINER with Slurm's notice settings and
    SIGTERM the script's sh alone, as the scheduler's signal reaching it
    first.  (sh's pid, the trainer's pid)"""
    p.start_agent(["--isolation", "off", "--notice", "signal",
                   "--notice-signal", "TERM", "--notice-lead", "30s"])
    files = [os.path.join(p.workdir, f) for f in ("leader", "trainer")]
    p.wait_for(lambda: all(os.path.exists(f) for f in files),
               what="the script and its trainer running")
    leader, trainer = (int(open(f).read()) for f in files)
    os.kill(leader, 15)
    return leader, trainer


def test_leader_dead_of_the_notice_signal_before_the_agent_saw_it(tmp_path):
    """Slurm signals every process of the step in no set order: the run
    script's sh may die of the SIGTERM before the agent's own copy comes.
    Its trainer is taking its final checkpoint: the agent must not kill
    it as the leftover of a finished script (a gang lost a rank
    mid-collective that way, stop 42's CI), but wait for the notice and
    take the trainer's exit as the notice's stop.  Without the notice,
    leftovers are still killed."""
    p = Plane(tmp_path / "a", run=SH_AND_TRAINER)
    try:
        leader, trainer = kill_the_leader(p)
        p.wait_for(lambda: proc_state(leader) is None,
                   what="the agent reaping the script's sh")
        p.wait_for(lambda: "waiting for the scheduler's notice" in
                   "\n".join(p.lines()) or "exit" in p.types(),
                   what="the agent waiting, or the run's end")
        # the trainer lives on (before: SIGKILLed as the sh was reaped,
        # and the run ended as crashed by signal 15)
        assert "exit" not in p.types(), (p.events, p.agent_log())
        assert proc_state(trainer) not in ("Z", None), p.agent_log()
        p.proc.send_signal(15)          # the agent's copy of the signal
        assert p.proc.wait(timeout=60) == 0, p.agent_log()
        assert "final-saved" in p.lines("stdout"), p.agent_log()
        ev = {e["type"]: e for e in p.events}
        assert ev["notice"]["source"] == "signal", p.events
        assert ev["exit"]["cause"] == "preempted", (ev["exit"], p.agent_log())
        assert ev["exit"]["exit_code"] == 0, ev["exit"]
        fin = [e for e in p.events if e["type"] == "checkpoint" and e["final"]]
        assert fin and fin[0]["step"] == 42, p.events
    finally:
        p.close()
    # no notice comes: the leftovers are killed once the wait is over
    q = Plane(tmp_path / "b", run=SH_AND_TRAINER)
    try:
        leader, trainer = kill_the_leader(q)
        q.wait_for(lambda: proc_state(trainer) in ("Z", None),
                   what="the trainer killed as a leftover")
        q.wait_for(lambda: any(e["type"] == "exit" for e in q.events),
                   what="the exit reported")
        ex = [e for e in q.events if e["type"] == "exit"][0]
        assert ex["cause"] != "preempted" and "notice" not in q.types(), \
            (ex, q.agent_log())
        assert "final-saved" not in q.lines("stdout")
        stop_agent(q)
    finally:
        q.close()


@pytest.mark.parametrize("code", [0, 75])
def test_trainer_exit_status_survives_the_sh_wrapper(tmp_path, code):
    # the trainer is a child of the run script's /bin/sh: SIGTERM to the
    # group kills that sh at once, the trainer exits on its own afterwards
    # (0 = final checkpoint committed, 75 = it failed); the agent reports
    # the trainer's status, not the shell's death by signal
    run = ("sh -c 'trap \"sleep 0.3; exit %d\" TERM; echo ready; "
           "while :; do sleep 0.05; done'\necho never-reached\n" % code)
    p = Plane(tmp_path, run=run)
    try:
        p.start_agent()
        p.wait_for(lambda: "ready" in p.lines("stdout"), what="the trainer")
        # a lead that a loaded machine can't eat into: with 4 s (cut to
        # whole seconds), the agent's kill deadline could pass before the
        # trap's exit under load, and the status was the SIGKILL's
        t = datetime.fromtimestamp(time.time() + 30, timezone.utc)
        with p.lock:
            p.notice_time = t.strftime("%Y-%m-%dT%H:%M:%SZ")
            p.notice = "good"
        assert p.proc.wait(timeout=20) == 0, p.agent_log()
        ex = [e for e in p.events if e["type"] == "exit"][0]
        assert ex["cause"] == "preempted"
        assert ex["exit_code"] == code and ex["signal"] is None, ex
        assert "never-reached" not in p.lines("stdout")
    finally:
        p.close()


def test_rebalance_recommendation_is_reported_and_work_goes_on(plane):
    """IMDS events/recommendations/rebalance: reported once as a
    'rebalance' event with the cloud's noticeTime; the workload runs on."""
    plane.start_agent()
    plane.wait_for(lambda: any(h.get("step") == 10 for h in plane.heartbeats),
                   what="the workload's first status")
    with plane.lock:
        plane.rebalance_time = "2026-11-29T14:18:00Z"
    plane.wait_for(lambda: any(e["type"] == "rebalance" for e in plane.events),
                   what="the rebalance event")
    n = len(plane.heartbeats)
    plane.wait_for(lambda: len(plane.heartbeats) > n + 2,
                   what="heartbeats after the recommendation")
    reb = [e for e in plane.events if e["type"] == "rebalance"]
    assert len(reb) == 1 and reb[0]["time"].startswith("2026-11-29T14:18:00")
    assert "notice" not in plane.types()
    assert plane.heartbeats[-1]["workload"] == "running"
    stop_agent(plane)


def test_scheduler_sigterm_is_a_notice_and_sigint_still_quits(tmp_path):
    """--notice signal --notice-signal TERM: a SIGTERM from the scheduler
    is a preemption notice (reported with its time, now + --notice-lead;
    the workload takes its final checkpoint; the agent exits 0), while
    SIGINT - the agent's own quit signal - still just quits."""
    opts = ("--notice", "signal", "--notice-signal", "TERM",
            "--notice-lead", "20s")
    p = Plane(tmp_path / "a")
    try:
        p.start_agent(opts)
        p.wait_for(lambda: any(h.get("step") == 10 for h in p.heartbeats),
                   what="the workload's first status")
        t0 = time.time()
        p.proc.send_signal(15)
        assert p.proc.wait(timeout=20) == 0, p.agent_log()
        ev = {e["type"]: e for e in p.events}
        assert ev["notice"]["source"] == "signal", p.events
        t = datetime.strptime(ev["notice"]["time"][:19], "%Y-%m-%dT%H:%M:%S")
        lead = t.replace(tzinfo=timezone.utc).timestamp() - t0
        assert 15 < lead < 25, lead     # now + --notice-lead (20 s)
        fin = [e for e in p.events if e["type"] == "checkpoint" and e["final"]]
        assert fin and fin[0]["step"] == 42, p.events
        assert ev["exit"]["cause"] == "preempted"
        assert "final-saved" in p.lines("stdout")
        with open(os.path.join(p.workdir, "notice")) as f:
            assert abs(float(f.read()) - (t0 + 20)) < 5
    finally:
        p.close()
    q = Plane(tmp_path / "b")
    try:
        q.start_agent(opts)
        q.wait_for(lambda: any(h.get("step") == 10 for h in q.heartbeats),
                   what="the workload's first status")
        q.proc.send_signal(2)
        assert q.proc.wait(timeout=20) == 0, q.agent_log()
        assert "notice" not in q.types(), q.events
        assert "agent received signal 2" in "\n".join(q.lines()), q.events
    finally:
        q.close()


def test_sigterm_quits_without_a_signal_source(plane):
    """By default SIGTERM is "agent, quit": no notice is reported."""
    plane.start_agent()
    plane.wait_for(lambda: any(h.get("step") == 10 for h in plane.heartbeats),
                   what="the workload's first status")
    plane.proc.send_signal(15)
    assert plane.proc.wait(timeout=20) == 0, plane.agent_log()
    assert "notice" not in plane.types(), plane.events


NAMED_SIGNAL = r"""
trap 'mkdir -p "$SPOTRUN_CKPT_DIR/step-00000042" &&
      echo "{}" > "$SPOTRUN_CKPT_DIR/step-00000042/manifest.json" &&
      echo final-saved-on-usr1; exit 0' USR1
trap 'echo wrong-signal-term; exit 1' TERM
echo "signal=$SPOTRUN_PREEMPT_SIGNAL"
while :; do sleep 0.05; done
"""


def test_notice_delivers_the_signal_the_task_names(tmp_path):
    """spotrun.preempt_signal: USR1 reaches the agent as the register
    reply's preempt_signal; at the notice the workload gets SIGUSR1, not
    SIGTERM, and $SPOTRUN_PREEMPT_SIGNAL names it (issue 30)."""
    p = Plane(tmp_path, run=NAMED_SIGNAL)
    base = p.assignment
    p.assignment = lambda d: dict(base(d), preempt_signal="USR1")
    try:
        p.start_agent()
        p.wait_for(lambda: "signal=USR1" in p.lines("stdout"),
                   what="the workload running with its signal named")
        t = datetime.fromtimestamp(time.time() + 4, timezone.utc)
        with p.lock:
            p.notice_time = t.strftime("%Y-%m-%dT%H:%M:%SZ")
            p.notice = "good"
        assert p.proc.wait(timeout=60) == 0, p.agent_log()
        out = p.lines("stdout")
        assert "final-saved-on-usr1" in out and "wrong-signal-term" not in out
        ex = [e for e in p.events if e["type"] == "exit"]
        assert ex[0]["cause"] == "preempted" and ex[0]["exit_code"] == 0, ex
        fin = [e for e in p.events if e["type"] == "checkpoint" and e["final"]]
        assert fin and fin[0]["step"] == 42, p.events
    finally:
        p.close()


def _ticks_and_reads(pid):
    """(utime + stime in clock ticks, read syscalls) of process pid."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    fs = st[st.rindex(")") + 2:].split()
    with open("/proc/%d/io" % pid) as f:
        io = dict(ln.split(": ") for ln in f.read().splitlines())
    return int(fs[11]) + int(fs[12]), int(io["syscr"])


FINAL_3S = WORKLOAD.replace("trap '", "trap 'sleep 3; ", 1)


def test_agent_sleeps_while_the_workload_takes_its_final_checkpoint(tmp_path):
    # After a notice the agent sends no heartbeat; its poll once still
    # woke for the heartbeat's stale timer, i.e. at once, every pass: a
    # spin beside the final checkpoint (a core's worth of CPU on the
    # noticed node, bench/gang_recovery.py's spare arm) until it exited.
    # Its passes are counted by its read syscalls (each pass reads the
    # workload's progress file) and its CPU ticks over the first second
    # of a 3 s final checkpoint: at the 100 ms pace about 120 reads
    # (1380 seen once in the CI, at 0 ticks) and a tick or two;
    # spinning, about a million and ~all of it.
    p = Plane(tmp_path, run=FINAL_3S)
    try:
        p.start_agent()
        p.wait_for(lambda: any(h.get("step") == 10 for h in p.heartbeats),
                   what="the workload's first status")
        t = datetime.fromtimestamp(time.time() + 30, timezone.utc)
        with p.lock:
            p.notice_time = t.strftime("%Y-%m-%dT%H:%M:%SZ")
            p.notice = "good"
        p.wait_for(lambda: "notice" in p.types(), what="the notice report")
        t0, r0 = _ticks_and_reads(p.proc.pid)
        time.sleep(1.0)   # the window: the workload's trap sleeps 3 s
        t1, r1 = _ticks_and_reads(p.proc.pid)
        assert "exit" not in p.types(), "the final checkpoint ended early"
        hz = os.sysconf("SC_CLK_TCK")
        assert r1 - r0 < 20000 and (t1 - t0) < 0.25 * hz, (
            "agent busy after the notice: %d reads, %d ticks in the "
            "window\n%s" % (r1 - r0, t1 - t0, p.agent_log()))
        assert p.proc.wait(timeout=60) == 0, p.agent_log()
        assert "final-saved" in p.lines("stdout")
    finally:
        p.close()
