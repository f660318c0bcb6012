"""End-to-end tests of the `spotrun` CLI against a real spotrund.

Each test starts its own daemon with `spotrun daemon start` on 127.0.0.1
with an ephemeral port and a temporary state dir (the bundled catalog and
traces, a fast local cloud), drives it only through the CLI, as a user
would, and stops it (and any node it left) at the end.

Covered: daemon start/status/stop (and a stale pid file), launch (follow
to the end, -d, --json, Ctrl-C detaches without cancelling), status,
logs, events, nodes, cancel, every read command's --json, --help
everywhere, and clear errors for bad input: malformed job YAML, unknown
fields, a missing file, bad ids, a wrong token, no daemon running.
"""

import json
import os
import re
import signal
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SPOTRUN_BUILD", os.path.join(ROOT, "build"))
SPOTRUN = os.path.join(BUILD, "bin", "spotrun")
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
DAEMON_OPTS = ["--data-dir", os.path.join(ROOT, "data"), "--provision-ms", "200",
               "--heartbeat-ms", "200", "--tick-ms", "50", "--time-scale", "600"]


class Cli:
    """`spotrun` with its own state dir; remembers to stop the daemon."""

    def __init__(self, tmp):
        self.state = os.path.join(str(tmp), "state")
        self.env = dict(os.environ, SPOTRUN_STATE_DIR=self.state)
        for k in ("SPOTRUN_API", "SPOTRUN_TOKEN"):
            self.env.pop(k, None)
        self.started = False

    def run(self, *args, check=None, timeout=120, env=None, inp=None):
        p = subprocess.run([SPOTRUN, *args], env=env or self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout, input=inp)
        if check is not None:
            assert p.returncode == check, (args, p.returncode, p.stdout, p.stderr,
                                           self.log_tail())
        return p

    def json(self, *args):
        p = self.run(*args, "--json", check=0)
        return json.loads(p.stdout)

    def start(self):
        p = self.run("daemon", "start", "--listen", "127.0.0.1:0", "--",
                     *DAEMON_OPTS, check=0, timeout=60)
        self.started = True
        return p

    def wait(self, jid, states=TERMINAL, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            j = self.json("status", str(jid))["job"]
            if j["state"] in states:
                return j
            time.sleep(0.2)
        try:
            ev = [(e["type"], e["message"]) for e in
                  self.json("events", str(jid))["events"]][-20:]
        except (ValueError, KeyError, subprocess.SubprocessError):
            ev = "(no events)"
        raise AssertionError("job %s still %s\nevents %s\n%s" % (
            jid, j["state"], ev, self.log_tail()))

    def log_tail(self, n=3000):
        """spotrund's log's tail, then each node's agent.log's (the last
        4 nodes): a job that hangs on a node is told by its agent."""
        out = [_tail(os.path.join(self.state, "spotrund.log"), n)]
        nodes = os.path.join(self.state, "nodes")
        try:
            ids = sorted((d for d in os.listdir(nodes) if d.isdigit()), key=int)
        except OSError:
            ids = []
        for d in ids[-4:]:
            out.append("== node %s agent.log\n%s" % (
                d, _tail(os.path.join(nodes, d, "agent.log"), n)))
        return "\n".join(out)

    def stop(self):
        if self.started:
            try:
                for j in self.json("status")["jobs"]:
                    if j["state"] not in TERMINAL:
                        self.run("cancel", str(j["id"]))
                        self.wait(j["id"], timeout=30)
            except (AssertionError, ValueError, subprocess.SubprocessError):
                pass
            self.run("daemon", "stop", timeout=60)
        kill_nodes(self.state)


def _tail(path, n):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def kill_nodes(state):
    """Nodes outlive the daemon by design; end any this test left."""
    nodes = os.path.join(state, "nodes")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cwd = os.readlink("/proc/%s/cwd" % pid)
        except OSError:
            continue
        if cwd.startswith(nodes + "/"):
            try:
                os.killpg(int(pid), signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def cli(tmp_path):
    c = Cli(tmp_path)
    yield c
    c.stop()


def submitted_id(out):
    """The id in launch's "job N submitted" line."""
    for line in out.splitlines():
        if line.startswith("job ") and "submitted" in line:
            return int(line.split()[1])
    raise AssertionError("no 'job N submitted' line in:\n" + out)


def job_yaml(tmp_path, run, name="cli", extra=""):
    lines = "".join("  " + ln + "\n" for ln in run.strip().splitlines())
    path = os.path.join(str(tmp_path), name + ".yaml")
    with open(path, "w") as f:
        f.write("name: %s\nresources:\n  accelerators: V100:1\n"
                "  use_spot: false\nrun: |\n%sspotrun:\n  work: 1h\n"
                "  deadline: 1000h\n%s" % (name, lines, extra))
    return path


# ---- the daemon command -------------------------------------------------

def test_daemon_start_status_stop(cli):
    p = cli.run("daemon", "status")
    assert p.returncode == 3
    assert "not running" in p.stdout and "spotrun daemon start" in p.stdout
    p = cli.start()
    assert "spotrund started" in p.stdout and cli.state in p.stdout
    url = open(os.path.join(cli.state, "api.url")).read().strip()
    assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
    # the token is private to the user
    assert os.stat(os.path.join(cli.state, "api.token")).st_mode & 0o077 == 0
    p = cli.run("daemon", "start", check=0)
    assert "already running" in p.stdout
    st = cli.json("daemon", "status")
    assert st["running"] is True and st["url"] == url
    assert st["pid"] > 0 and st["healthz"]["ok"] is True
    p = cli.run("daemon", "stop", check=0)
    assert "stopped" in p.stdout
    cli.started = False
    assert cli.run("daemon", "status").returncode == 3
    # a stale pid file (a process that is gone) is not a running daemon
    with open(os.path.join(cli.state, "spotrund.pid"), "w") as f:
        f.write("999999\n")
    p = cli.run("daemon", "status")
    assert p.returncode == 3 and "not running" in p.stdout
    assert "not running" in cli.run("daemon", "stop", check=0).stdout


def test_no_daemon_says_how_to_start_it(cli, tmp_path):
    # never started: no token
    p = cli.run("status", check=1)
    assert "spotrun daemon start" in p.stderr
    # started once, now stopped: the token is there, nobody answers
    cli.start()
    cli.run("daemon", "stop", check=0)
    cli.started = False
    p = cli.run("status", check=1)
    assert "cannot reach spotrund" in p.stderr
    assert "spotrun daemon start" in p.stderr


def test_wrong_token_is_refused_clearly(cli):
    cli.start()
    env = dict(cli.env, SPOTRUN_TOKEN="0" * 64)
    p = cli.run("status", env=env, check=1)
    assert "401" in p.stderr and "token" in p.stderr


# ---- launch and the read commands ----------------------------------------

def test_launch_follows_to_the_end_and_read_commands(cli, tmp_path):
    cli.start()
    path = job_yaml(tmp_path, """
echo "hello from rank $SPOTRUN_NODE_RANK of $SPOTRUN_NUM_NODES, job $SPOTRUN_JOB_ID"
echo "value: $VALUE"
echo "oops" >&2
""", extra="", name="reader")
    p = cli.run("launch", path, "--env", "VALUE=$(id) `x` 'q'", check=0)
    jid = submitted_id(p.stdout)
    assert "SUCCEEDED" in p.stdout
    assert "RUNNING -> SUCCEEDED" in p.stdout
    # status: table, detail, json
    assert "reader" in cli.run("status", check=0).stdout
    detail = cli.run("status", str(jid), check=0).stdout
    assert "SUCCEEDED" in detail and "exit code    0" in detail
    job = cli.json("status", str(jid))["job"]
    assert job["state"] == "SUCCEEDED" and job["exit_code"] == 0
    jobs = cli.json("status")["jobs"]
    assert [j["id"] for j in jobs] == [jid]
    # logs: stdout lines, stderr lines, env values arrive verbatim
    logs = cli.run("logs", str(jid), check=0)
    assert "hello from rank 0 of 1, job %d" % jid in logs.stdout
    assert "value: $(id) `x` 'q'" in logs.stdout
    assert "oops" in logs.stderr
    lines = cli.json("logs", str(jid))["lines"]
    assert {"stdout", "stderr"} <= {ln["stream"] for ln in lines}
    assert all(ln["attempt"] == 1 for ln in lines)
    # -f on a finished job prints and returns
    assert "hello from rank" in cli.run("logs", str(jid), "-f", check=0,
                                        timeout=30).stdout
    # its one rank; a rank outside the gang is an error, not an empty log
    assert "hello from rank 0" in cli.run("logs", str(jid), "--rank", "0",
                                          check=0).stdout
    p = cli.run("logs", str(jid), "--rank", "1", check=1)
    assert p.stdout == "" and "has one node (rank 0)" in p.stderr, p.stderr
    # events
    ev = cli.json("events", str(jid))["events"]
    assert any(e["type"] == "transition" and e["to"] == "SUCCEEDED" for e in ev)
    assert "PENDING" in cli.run("events", str(jid), check=0).stdout
    # nodes
    nodes = cli.json("nodes", "--all")["nodes"]
    assert [n["job_id"] for n in nodes] == [jid]
    assert nodes[0]["state"] == "TERMINATED"
    assert cli.json("nodes")["nodes"] == []   # none live
    assert "no nodes" in cli.run("nodes", check=0).stdout


def test_launch_detach_json_and_cancel(cli, tmp_path):
    cli.start()
    path = job_yaml(tmp_path, "sleep 300", name="sleeper")
    p = cli.run("launch", path, "-d", "--json", check=0)
    job = json.loads(p.stdout)["job"]
    jid = job["id"]
    assert job["name"] == "sleeper"
    cli.wait(jid, states=("RUNNING",))
    p = cli.run("cancel", str(jid), check=0)
    assert "cancel requested" in p.stdout
    assert cli.wait(jid)["state"] == "CANCELLED"
    p = cli.run("cancel", str(jid), check=1)
    assert "spotrun cancel:" in p.stderr


def test_ctrl_c_detaches_and_does_not_cancel(cli, tmp_path):
    cli.start()
    path = job_yaml(tmp_path, "sleep 300", name="detach")
    proc = subprocess.Popen([SPOTRUN, "launch", path], env=cli.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    first = proc.stdout.readline()
    while first and "submitted" not in first:  # the plan preview comes first
        first = proc.stdout.readline()
    assert "submitted" in first, first
    jid = int(first.split()[1])
    cli.wait(jid, states=("RUNNING",))
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (out, err)
    assert "detached" in err and "spotrun status %d" % jid in err
    time.sleep(0.5)
    assert cli.json("status", str(jid))["job"]["state"] == "RUNNING"


def test_skypilot_task_runs_with_its_files_env_and_names(cli, tmp_path):
    """A SkyPilot task file: workdir and file_mounts copied into the node's
    directory, setup once before run, secrets from the environment,
    SKYPILOT_* variables; then the job is reached by its name."""
    cli.start()
    src = tmp_path / "proj"
    (src / "data").mkdir(parents=True)
    (src / "code.txt").write_text("code-in-workdir\n")
    (src / "data" / "vocab.txt").write_text("vocab-mounted\n")
    path = src / "task.yaml"
    path.write_text(
        "name: sky-names\n"
        "num_nodes: 2\n"
        "workdir: .\n"
        "resources: {accelerators: V100:1, use_spot: false}\n"
        "secrets: {MY_TOKEN: null, INLINE_KEY: inline-s3cr3t}\n"
        "file_mounts: {/mnt/vocab.txt: ./data/vocab.txt}\n"
        "setup: echo setup-ran > setup.marker\n"
        "run: |\n"
        "  echo rank=$SKYPILOT_NODE_RANK nodes=$SKYPILOT_NUM_NODES "
        "gpus=$SKYPILOT_NUM_GPUS_PER_NODE ips=$(echo \"$SKYPILOT_NODE_IPS\" | wc -l)\n"
        "  cat code.txt setup.marker \"$SPOTRUN_NODE_DIR/mnt/vocab.txt\"\n"
        "  echo token=$MY_TOKEN inline=$INLINE_KEY cwd=$(pwd)\n"
        "spotrun: {work: 1h, deadline: 1000h}\n")
    # a secret without a value must come from the environment
    p = cli.run("launch", str(path), "-d", check=1)
    assert "secrets.MY_TOKEN has no value" in p.stderr
    env = dict(cli.env, MY_TOKEN="s3cr3t")
    p = subprocess.run([SPOTRUN, "launch", str(path)], env=env, cwd=str(src),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.stdout, p.stderr, cli.log_tail())
    out = p.stdout
    # the preview says what is bought before it is
    assert "pool:" in out and "expected:" in out and "p95" in out
    assert out.index("pool:") < out.index("submitted")
    # the workload's output is streamed by launch
    for rank in (0, 1):
        assert "rank=%d nodes=2 gpus=1 ips=2" % rank in out, out
    assert "code-in-workdir" in out and "setup-ran" in out
    assert "vocab-mounted" in out and "token=s3cr3t inline=inline-s3cr3t" in out
    assert "/workdir" in out.split("cwd=")[1].split()[0]  # the node's copy
    # names work wherever an id does
    jid = submitted_id(out)
    raw = cli.run("status", "sky-names", "--json", check=0).stdout
    assert '"p_target": 0.99,' in raw  # not 0.98999999999999999
    job = json.loads(raw)["job"]
    assert job["id"] == jid
    # secrets reach the workload but are never served back
    assert job["spec"]["secrets"]["INLINE_KEY"] == "<redacted>"
    assert "inline-s3cr3t" not in json.dumps(job)
    table = cli.run("status", check=0).stdout
    assert "sky-names" in table
    money = re.findall(r"\$[0-9.]+", table + cli.run("status", str(jid), check=0).stdout)
    assert money and all(re.fullmatch(r"\$\d+\.\d\d", m) for m in money), money
    assert cli.run("logs", "sky-names", check=0).stdout.count("code-in-workdir") == 2
    assert cli.run("events", "sky-names", check=0).returncode == 0
    nodes = cli.json("nodes", "--job", "sky-names", "--all")["nodes"]
    assert nodes and all(n["job_id"] == jid for n in nodes)
    by_job = cli.run("cost", "--by", "job", check=0).stdout
    assert "%d sky-names" % jid in by_job, by_job
    assert cli.run("cost", "--job", "sky-names", "--json", check=0).returncode == 0
    p = cli.run("status", "no-such-job", check=1)
    assert "no job named 'no-such-job'" in p.stderr
    # a second job of the same name: the newest one is meant
    p = cli.run("launch", job_yaml(tmp_path, "sleep 300", name="sky-names"),
                "-d", "--json", check=0)
    jid2 = json.loads(p.stdout)["job"]["id"]
    p = cli.run("cancel", "sky-names", check=0)
    assert "2 jobs are named 'sky-names'" in p.stderr
    assert cli.wait(jid2)["state"] == "CANCELLED"


def test_job_recovery_restarts_on_errors(cli, tmp_path):
    """SkyPilot's job_recovery.max_restarts_on_errors is the number of
    times a failing workload is restarted."""
    cli.start()
    path = tmp_path / "failing.yaml"
    path.write_text("name: failing\n"
                    "resources:\n  accelerators: V100:1\n  use_spot: false\n"
                    "  job_recovery: {strategy: FAILOVER, max_restarts_on_errors: 1}\n"
                    "run: exit 3\n")
    p = cli.run("launch", str(path), "-d", "--json", check=0)
    jid = json.loads(p.stdout)["job"]["id"]
    job = cli.wait(jid)
    assert job["state"] == "FAILED" and job["max_restarts"] == 1
    assert job["restarts"] == 1, job


def test_launch_on_a_terminal_shows_live_progress(cli, tmp_path):
    """On a terminal, launch redraws a status line with the time spent in
    the current state (provisioning included) until the job ends."""
    from conftest import run_on_pty
    cli.start()
    path = job_yaml(tmp_path, "sleep 2; echo done-sleeping", name="tty")
    rc, text = run_on_pty([SPOTRUN, "launch", "-y", path], env=cli.env)
    assert rc == 0, text
    assert re.search(r"\r\x1b\[K(PENDING|PROVISIONING|RUNNING) +\d+s", text), text
    assert "done-sleeping" in text and "SUCCEEDED" in text


# ---- bad input -------------------------------------------------------------

def test_bad_job_files_get_clear_errors(cli, tmp_path):
    cli.start()
    bad = os.path.join(str(tmp_path), "job.yaml")
    with open(bad, "w") as f:
        f.write("name: x\nresources:\n  accelerators: V100:1\n"
                "run: [unclosed\n")
    p = cli.run("launch", bad, check=1)
    assert "job.yaml:" in p.stderr, p.stderr
    with open(bad, "w") as f:
        f.write("name: x\nresources:\n  accelerators: V100:1\n  gpus: 4\n"
                "run: echo hi\n")
    p = cli.run("launch", bad, check=1)
    assert "job.yaml:4" in p.stderr and "gpus" in p.stderr, p.stderr
    assert "unknown" in p.stderr
    with open(bad, "w") as f:
        f.write("name: x\nresources:\n  accelerators: V100:many\nrun: echo\n")
    p = cli.run("launch", bad, check=1)
    assert "job.yaml:3" in p.stderr and "accelerators" in p.stderr, p.stderr
    p = cli.run("launch", os.path.join(str(tmp_path), "missing.yaml"), check=1)
    assert "missing.yaml" in p.stderr
    with open(bad, "wb") as f:
        f.write(b"name: x\x00\n")
    p = cli.run("launch", bad, check=1)
    assert "NUL" in p.stderr
    # nothing was created by any of these
    assert cli.json("status")["jobs"] == []


def test_usage_errors_and_unknown_ids(cli):
    cli.start()
    for args, needle in [(("launch",), "JOB.yaml"),
                         (("status", "0"), "not a job id"),
                         (("logs",), "which job"),
                         (("logs", "1", "-f", "--json"), "--json"),
                         (("events", "0"), "not a job id"),
                         (("cancel",), "which job"),
                         (("nodes", "--frobnicate"), "--frobnicate"),
                         (("daemon",), "start, stop or status"),
                         (("daemon", "reboot"), "reboot"),
                         (("launch", "a.yaml", "--max-restarts", "x"), "max-restarts"),
                         (("status", "--api"), "--api")]:
        p = cli.run(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert needle in p.stderr, (args, p.stderr)
        assert "--help" in p.stderr
    p = cli.run("status", "999", check=1)
    assert "999" in p.stderr or "not found" in p.stderr
    p = cli.run("logs", "999", check=1)
    assert "spotrun logs:" in p.stderr


def test_help_everywhere(cli):
    for cmd in ("launch", "status", "logs", "events", "cancel", "nodes", "daemon"):
        p = cli.run(cmd, "--help", check=0)
        assert p.stdout.startswith("usage: spotrun " + cmd), p.stdout
    p = cli.run("--help", check=0)
    for cmd in ("launch", "status", "logs", "events", "cancel", "nodes", "daemon"):
        assert "\n  %s " % cmd in p.stdout
