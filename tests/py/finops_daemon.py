"""Helpers for the FinOps integration tests: run spotrund on an ephemeral
127.0.0.1 port with a temporary state dir, launch small jobs through the
REST API, and stop everything that was started."""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

from conftest import leader_write

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SPOTRUN_BUILD", os.path.join(ROOT, "build"))
ASAN = os.environ.get("SPOTRUN_CHECK_MODE") == "asan"
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")

# A workload that keeps one CPU about half busy (so the node counts as
# busy: utilisation over the 10 % idle threshold) for SECONDS seconds.
BURN_PY = """import os, sys, time
end = time.time() + float(sys.argv[1])
while time.time() < end:
    t = time.time() + 0.05
    while time.time() < t:
        pass
    time.sleep(0.05)
"""


def tool_env():
    """Environment for third-party tools (chromium, prometheus, promtool):
    without the sanitizer runtime the asan test pass preloads into the
    interpreter, which is meant for our binaries only."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        env.pop(k, None)
    return env


def bin_path(name):
    return os.path.join(BUILD, "bin", name)


class Daemon:
    def __init__(self, tmp, *extra_args):
        self.tmp = str(tmp)
        self.state = os.path.join(self.tmp, "state")
        os.makedirs(self.state, mode=0o700, exist_ok=True)
        self.extra = list(extra_args)
        self.proc = None
        self.url = self.token = None

    def start(self, timeout=30):
        log = open(os.path.join(self.tmp, "spotrund.log"), "wb")
        env = dict(os.environ, SPOTRUN_LOG_LEVEL="info")
        self.proc = subprocess.Popen(
            [bin_path("spotrund"), "--listen", "127.0.0.1:0",
             "--state-dir", self.state, "--data-dir", os.path.join(ROOT, "data"),
             "--provision-ms", "200"] + self.extra,
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        log.close()
        url_file = os.path.join(self.state, "api.url")
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("spotrund exited: " + self.log_tail())
            if os.path.exists(url_file):
                with open(url_file) as f:
                    self.url = f.read().strip()
                if self.url:
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("spotrund did not start: " + self.log_tail())
        with open(os.path.join(self.state, "api.token")) as f:
            self.token = f.read().strip()
        return self

    def log_tail(self, n=4000):
        try:
            with open(os.path.join(self.tmp, "spotrund.log"), "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def req(self, method, path, body=None, auth=True, raw=False):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        if auth:
            headers["Authorization"] = "Bearer " + self.token
        r = urllib.request.Request(self.url + path, method=method, data=data,
                                   headers=headers)
        try:
            with urllib.request.urlopen(r, timeout=30) as f:
                text = f.read()
                status = f.status
        except urllib.error.HTTPError as e:
            text, status = e.read(), e.code
        if raw:
            return status, text
        return status, json.loads(text) if text else None

    def write(self, method, path, body=None, timeout=60):
        """A write that tries a 503 not_leader again (conftest)."""
        return leader_write(lambda: self.req(method, path, body), timeout)

    def launch(self, name, seconds, extra_yaml="", deadline="48h"):
        work = os.path.join(self.tmp, "work-" + name)
        os.makedirs(work, exist_ok=True)
        with open(os.path.join(work, "burn.py"), "w") as f:
            f.write(BURN_PY)
        spec = ("name: %s\n"
                "resources: {accelerators: V100:1, use_spot: true}\n"
                "run: /usr/bin/python3 burn.py %s\n"
                "spotrun:\n  deadline: %s\n  work: 4h\n%s"
                % (name, seconds, deadline, extra_yaml))
        status, body = self.write("POST", "/v1/jobs", {"spec_yaml": spec,
                                                       "workdir": work})
        assert status == 201, body
        return body["job"]["id"]

    def job(self, job_id):
        status, body = self.req("GET", "/v1/jobs/%d" % job_id)
        assert status == 200, body
        return body["job"]

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.2)
        raise AssertionError("timed out waiting for " + what + "\n" + self.log_tail())

    def wait_state(self, job_id, states, timeout=60):
        return self.wait(lambda: self.job(job_id)["state"] in states and self.job(job_id),
                         timeout, "job %d in %s" % (job_id, states))

    def wait_rows(self, job_id, n, timeout=60):
        def enough():
            _, c = self.req("GET", "/v1/cost?job=%d" % job_id)
            return c["total"]["rows"] >= n
        return self.wait(enough, timeout, "%d ledger rows of job %d" % (n, job_id))

    def stop(self):
        if not self.proc:
            return
        try:
            if self.proc.poll() is None:
                _, body = self.req("GET", "/v1/jobs?limit=1000")
                for j in body.get("jobs", []):
                    if j["state"] not in TERMINAL:
                        self.req("POST", "/v1/jobs/%d/cancel" % j["id"], {})
                # wait until every node the daemon started is gone
                self.wait(lambda: not self.req("GET", "/v1/nodes")[1]["nodes"], 60,
                          "nodes to terminate")
        finally:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
            self.kill_leftover_nodes()

    def kill_leftover_nodes(self):
        """If the daemon died before it could stop its nodes, kill the
        agents it started (their command line names our private state dir)
        and every process in their sessions."""
        agents = set()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if self.state.encode() + b"/nodes/" in cmd and b"spotrun-agent" in cmd:
                agents.add(int(pid))
        victims = set(agents)
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    sid = int(f.read().rsplit(")", 1)[1].split()[4])
            except (OSError, ValueError, IndexError):
                continue
            if sid in agents:
                victims.add(int(pid))
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
