"""Reliability faults of issue 10, end to end with the real binaries.

- A `spotrun launch` whose POST reaches a stalled daemon (SIGSTOP) and is
  retried by the client creates exactly one job: every attempt carries the
  same Idempotency-Key and the daemon returns the job it created.
- spotrun-agent, cut off from spotrund after a preemption notice, backs
  off (exponential, jittered, capped) instead of spinning: its CPU use and
  its log stay small (the bound is asserted over a shortened window).
- A job's workload cannot read the admin token, its node token or the
  state dir (item 5), and still trains and checkpoints.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from test_e2e_cli import Cli, job_yaml, submitted_id, ROOT, SPOTRUN


@pytest.fixture
def cli(tmp_path):
    c = Cli(tmp_path)
    yield c
    c.stop()


def daemon_pid(cli):
    with open(os.path.join(cli.state, "spotrund.pid")) as f:
        return int(f.read().split()[0])


def test_launch_against_a_stalled_daemon_creates_one_job(cli, tmp_path):
    cli.start()
    path = job_yaml(tmp_path, "sleep 30", name="once")
    pid = daemon_pid(cli)
    env = dict(cli.env, SPOTRUN_API_TIMEOUT="700ms")
    os.kill(pid, signal.SIGSTOP)
    try:
        p = subprocess.run([SPOTRUN, "launch", "-d", "--json", path], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)
    # the client gave up (every attempt timed out) after several tries
    assert p.returncode != 0, p.stdout
    assert "attempts" in p.stderr, p.stderr
    # the daemon now works through every queued attempt: one job only
    deadline = time.time() + 20
    jobs = []
    while time.time() < deadline:
        jobs = cli.json("status")["jobs"]
        if jobs:
            break
        time.sleep(0.1)
    time.sleep(1.5)             # any later duplicate would show up now
    jobs = cli.json("status")["jobs"]
    assert len(jobs) == 1, (jobs, cli.log_tail())
    assert "replayed" in cli.log_tail()


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])     # utime + stime


def test_agent_backs_off_when_spotrund_is_gone_after_a_notice(tmp_path):
    from datetime import datetime, timezone
    from test_e2e_agent import Plane
    run = ("trap 'sleep 0.3; exit 0' TERM\n"
           "printf '{\"seq\":1,\"step\":5,\"total_steps\":100}' > "
           "\"$SPOTRUN_STATUS_FILE.t\"; mv \"$SPOTRUN_STATUS_FILE.t\" "
           "\"$SPOTRUN_STATUS_FILE\"\n"
           "while :; do sleep 0.05; done\n")
    p = Plane(tmp_path, run=run)
    try:
        p.start_agent()
        p.wait_for(lambda: any(h.get("step") == 5 for h in p.heartbeats),
                   what="the workload running")
        t = datetime.fromtimestamp(time.time() + 3, timezone.utc)
        with p.lock:
            p.notice_time = t.strftime("%Y-%m-%dT%H:%M:%SZ")
            p.notice = "good"
        p.wait_for(lambda: "notice" in p.types(), what="the notice report")
        # spotrund goes away: every connection is refused from now on
        p.srv.shutdown()
        p.srv.server_close()
        time.sleep(1.0)          # the workload's final checkpoint and exit
        log = os.path.join(p.tmp, "agent.log")
        lines0 = sum(1 for _ in open(log, "rb"))
        hz = os.sysconf("SC_CLK_TCK")
        c0, t0 = cpu_ticks(p.proc.pid), time.monotonic()
        time.sleep(8.0)
        c1, t1 = cpu_ticks(p.proc.pid), time.monotonic()
        lines1 = sum(1 for _ in open(log, "rb"))
        assert p.proc.poll() is None      # still trying to report
        cpu = (c1 - c0) / hz / (t1 - t0)
        assert cpu < 0.05, "agent CPU %.1f%% while spotrund is down" % (cpu * 100)
        assert lines1 - lines0 < 100, p.agent_log()
        # it says what fails, how often, and when it tries again
        assert "request failed" in p.agent_log()
        assert "retry_in_ms" in p.agent_log()
    finally:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


def test_daemon_start_over_a_zombie_pid(cli):
    # a kill -9'ed daemon whose parent has not reaped it yet is a zombie:
    # kill(pid, 0) still succeeds, but it is not a running daemon
    z = subprocess.Popen(["/bin/true"])
    deadline = time.time() + 10
    while time.time() < deadline:
        with open("/proc/%d/stat" % z.pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.02)
    os.makedirs(cli.state, mode=0o700, exist_ok=True)
    with open(os.path.join(cli.state, "spotrund.pid"), "w") as f:
        f.write("%d\n" % z.pid)
    try:
        assert cli.run("daemon", "status").returncode == 3
        p = cli.start()
        assert "spotrund started" in p.stdout, (p.stdout, p.stderr)
        assert daemon_pid(cli) != z.pid
    finally:
        z.wait()


def test_tls_listen_end_to_end(cli, tmp_path):
    # a self-signed certificate for 127.0.0.1; the CLI and the agents
    # trust it through $SPOTRUN_CA_CERT
    crt, key = str(tmp_path / "api.crt"), str(tmp_path / "api.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", key, "-out", crt, "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    os.chmod(key, 0o600)
    cli.env["SPOTRUN_CA_CERT"] = crt
    from test_e2e_cli import DAEMON_OPTS
    p = cli.run("daemon", "start", "--listen", "127.0.0.1:0", "--",
                *DAEMON_OPTS, "--tls-cert", crt, "--tls-key", key, timeout=60)
    cli.started = True
    assert p.returncode == 0, (p.stdout, p.stderr, cli.log_tail())
    url = open(os.path.join(cli.state, "api.url")).read().strip()
    assert url.startswith("https://127.0.0.1:")
    # a job runs end to end: its agent reached the daemon over TLS
    path = job_yaml(tmp_path, "echo over-tls", name="tls")
    p = cli.run("launch", path, timeout=120)
    assert p.returncode == 0, (p.stdout, p.stderr, cli.log_tail())
    assert "SUCCEEDED" in p.stdout + p.stderr
    # without the certificate the client refuses the connection
    env = dict(cli.env)
    env.pop("SPOTRUN_CA_CERT")
    p = cli.run("status", env=env)
    assert p.returncode != 0 and "certificate" in p.stderr.lower(), p.stderr


def test_workload_cannot_read_the_control_planes_files(cli, tmp_path):
    cli.start()
    st = cli.state
    run = """
cat %(st)s/api.token 2>/dev/null && echo LEAK-admin-token
cat %(st)s/spotrun.db 2>/dev/null | head -c 1 | grep -q . && echo LEAK-db
t=$(cat "$SPOTRUN_NODE_DIR/node.token" 2>/dev/null); [ -n "$t" ] && echo LEAK-node-token
env | grep -i token | grep -v _FILE= && echo LEAK-env
echo "state-dir-lists: $(ls -A %(st)s | tr '\\n' ' ')"
PYTHONPATH=%(root)s/python /usr/bin/python3 %(root)s/examples/train.py \\
  --steps 40 --ckpt-every 10 && echo trained
""" % {"st": st, "root": ROOT}
    path = job_yaml(tmp_path, run, name="probe")
    p = cli.run("launch", path, timeout=180)
    jid = submitted_id(p.stdout)
    logs = cli.run("logs", str(jid), check=0).stdout
    assert "SUCCEEDED" in p.stdout, (p.stdout, logs, cli.log_tail())
    assert "LEAK" not in logs, logs
    assert "trained" in logs, logs
    # the state dir reads as a skeleton: none of its files
    line = [x for x in logs.splitlines() if x.startswith("state-dir-lists:")][0]
    assert "api.token" not in line and "spotrun.db" not in line, line
    ev = cli.json("events", str(jid))["events"]
    iso = [e for e in ev if e["type"] == "isolation"]
    assert len(iso) == 1, ev
    if "unavailable" in iso[0]["message"]:
        pytest.skip("namespaces unavailable here: " + iso[0]["message"])
    assert ("root" in iso[0]["message"]) == (os.geteuid() == 0), iso
    # it checkpointed into the job's real checkpoint dir
    ck = os.path.join(st, "jobs", str(jid), "ckpt")
    assert any(n.startswith("step-") for n in os.listdir(ck)), os.listdir(ck)
    # the admin token is still there, for the admin
    assert os.path.getsize(os.path.join(st, "api.token")) > 0
