"""aws_fleet.py - what the AWS soaks share (tests/py/test_aws_soak.py,
test_aws_failover.py): EC2 emulators that behave like EC2 where it hurts,
spotrund's config for them, and a fleet of light fake nodes.

A fake node is no agent and no workload: the daemon's `--agent` is a
two-line script that records how the instance's user-data started it
(node id, token file, control-plane URLs) and then idles as the
"machine" (a `sleep`), and one Python thread speaks the node API for
every such node - register, heartbeat, run the attempt the directive
names for the seconds its `run:` says (`sleep N`), report its exit.  A
node whose instance the emulator terminated (its disk is gone) falls
silent, as a reclaimed machine does.  So a soak of hundreds of nodes
costs a few hundred idle processes and one thread.

Everything listens on 127.0.0.1; the emulators refuse to start
elsewhere."""
import http.client
import json
import os
import random
import subprocess
import threading
import time
import urllib.parse

from test_ctl_crash import BUILD, ROOT

EAST_ZONES = ["use1-az%d" % i for i in range(1, 7)]
WEST_ZONES = ["usw2-az%d" % i for i in range(1, 5)]
TYPE = "p3.2xlarge"

FAKE_AGENT = """#!/bin/sh
# a light fake node (tests/py/aws_fleet.py): record how we were started,
# then idle as the machine until the cloud takes it
f="%s/$$"
{ printf 'root=%%s\\n' "${SPOTRUN_NODE_ROOT:-}"; for a in "$@"; do printf '%%s\\n' "$a"; done; } > "$f.tmp"
mv "$f.tmp" "$f.args"
exec sleep 1000000
"""


def write_fake_agent(tmp):
    """The --agent script and the spool directory it writes to."""
    spool = os.path.join(str(tmp), "spool")
    os.makedirs(spool, exist_ok=True)
    path = os.path.join(str(tmp), "fake-agent")
    with open(path, "w") as f:
        f.write(FAKE_AGENT % spool)
    os.chmod(path, 0o755)
    return path, spool


class Emulator:
    """`spotrun ec2-emulator` for one region, logging every request."""

    def __init__(self, tmp, region, zones, time_scale, extra=()):
        self.region = region
        self.work = os.path.join(str(tmp), "emu-" + region)
        os.makedirs(os.path.join(self.work, "interrupts"), exist_ok=True)
        self.log = os.path.join(str(tmp), "requests-%s.log" % region)
        args = [os.path.join(BUILD, "bin", "spotrun"), "ec2-emulator",
                "--work-dir", self.work, "--data", os.path.join(ROOT, "data"),
                "--region", region, "--time-scale", str(time_scale),
                "--request-log", self.log] + list(extra)
        for z in zones:
            args += ["--capacity", "%s:%s=plenty" % (z, TYPE)]
        err = open(os.path.join(str(tmp), "emulator-%s.log" % region), "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err,
                                     start_new_session=True, text=True)
        err.close()
        self.url = self.proc.stdout.readline().strip()
        if urllib.parse.urlsplit(self.url).hostname != "127.0.0.1":
            self.proc.kill()
            raise AssertionError("refusing an EC2 endpoint not on loopback: %r"
                                 % self.url)

    def interrupt(self, instance_id):
        """A spot interruption of one instance (AWS FIS style)."""
        open(os.path.join(self.work, "interrupts", instance_id), "w").close()

    def requests(self):
        """Every logged request: dicts with t (s), action, status, code,
        epoch (0 none) and the logged Key=Value words."""
        out = []
        if not os.path.exists(self.log):
            return out
        with open(self.log) as f:
            for line in f:
                w = line.split()
                if len(w) < 4:
                    continue
                r = {"t": int(w[0]) / 1e9, "action": w[1], "status": int(w[2]),
                     "code": w[3], "epoch": 0, "ids": []}
                for kv in w[4:]:
                    k, _, v = kv.partition("=")
                    if k == "epoch":
                        r["epoch"] = int(v)
                    elif k == "InstanceId":
                        r["ids"].append(v)
                    else:
                        r[k] = v
                out.append(r)
        return out

    def instances(self, cluster):
        """The cluster's instances as EC2 lists them (the conformance
        suite's ec2_tool, through the driver's own client)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ENDPOINT_URL_EC2=self.url, AWS_REGION=self.region,
                   AWS_ACCESS_KEY_ID="AKIDEMULATOR",
                   AWS_SECRET_ACCESS_KEY="emulator-secret",
                   AWS_EC2_METADATA_DISABLED="true", SPOTRUN_LOG_LEVEL="off",
                   HOME=self.work)
        tool = os.path.join(BUILD, "conformance", "ec2_tool")
        for _ in range(100):  # a throttled account answers in a while
            r = subprocess.run([tool, "describe", cluster], env=env,
                               capture_output=True, text=True, timeout=60)
            out = json.loads(r.stdout or "{}")
            if "ok" in out:
                return out["ok"]
            time.sleep(1)
        raise AssertionError("cannot list instances: %r" % out)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def aws_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEMULATOR")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "emulator-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def config(tmp, emus, time_scale, extra=""):
    """spotrund's config file: aws in each emulator's region."""
    path = os.path.join(str(tmp), "spotrund.yaml")
    with open(path, "w") as f:
        f.write("time-scale: %s\nheartbeat-timeout: 15s\nboot-timeout: 120s\n"
                "%sproviders:\n  aws:\n    regions:\n" % (time_scale, extra))
        for e in emus:
            f.write("      %s:\n        endpoint: %s\n"
                    "        image: ami-0fleet0000000000%s\n" % (
                        e.region, e.url, e.region[-1]))
    return path


def job_yaml(name, run_s, infra="aws"):
    """A one-node spot job whose fake workload runs run_s real seconds."""
    return ("name: %s\nresources:\n  accelerators: V100:1\n  use_spot: true\n"
            "  infra: %s\nrun: sleep %d\nspotrun:\n  deadline: 1000h\n"
            "  work: 1h\n" % (name, infra, run_s))


class _Node:
    def __init__(self, nid, token, urls, root, tokf):
        self.id, self.token, self.urls, self.root = nid, token, urls, root
        self.tokf = tokf         # on the instance's disk: gone with it
        self.instance = os.path.basename(os.path.dirname(root)) if root else ""
        self.secret = self.nonce = None  # a bootstrap secret to trade
        self.next_hb = 0.0
        self.hb_s = 1.0
        self.run_s = 0
        self.attempt = 0         # the attempt whose workload "runs"
        self.ends_at = 0.0
        self.done = set()        # attempts whose exit was reported
        self.gone = False
        self.registered = False


class Fleet(threading.Thread):
    """One thread speaking the node API for every fake node the spool
    names.  Stats: registered, exits, silenced (instance gone)."""

    def __init__(self, spool, hb_s=2.0, seed=1):
        super().__init__(daemon=True)
        self.spool = spool
        self.hb_s = hb_s
        self.rnd = random.Random(seed)
        self.nodes = {}
        self.seen_files = set()
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.stats = {"registered": 0, "exits": 0, "silenced": 0,
                      "api_errors": 0}
        self.conns = {}

    # ---- HTTP ----
    def _call(self, node, path, body):
        """POST body to the first control plane that answers: (status,
        json) or (0, None)."""
        data = json.dumps(body).encode()
        for url in node.urls:
            u = urllib.parse.urlsplit(url)
            try:
                c = self.conns.get(u.netloc)
                if c is None:
                    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
                    self.conns[u.netloc] = c
                c.request("POST", path, data, {
                    "Authorization": "Bearer " + node.token,
                    "Content-Type": "application/json"})
                r = c.getresponse()
                out = r.read()
                if r.status == 503:   # a standby: the next one
                    continue
                return r.status, json.loads(out or b"{}")
            except (OSError, http.client.HTTPException, ValueError):
                self.conns.pop(u.netloc, None)
                continue
        return 0, None

    def _load(self, path):
        with open(path) as f:
            lines = f.read().splitlines()
        root = lines[0].split("=", 1)[1]
        args = lines[1:]
        opt = {}
        for i, a in enumerate(args):
            if a.startswith("--") and i + 1 < len(args):
                opt[a] = args[i + 1]
        nid = int(opt["--node-id"])
        tokf = opt.get("--token-file") or opt.get("--bootstrap-file")
        with open(tokf) as f:
            token = f.read().strip()
        urls = opt["--api"].split(",")
        n = _Node(nid, token, urls, root, tokf)
        if "--bootstrap-file" in opt:   # a one-time secret: traded first
            n.secret, n.token = token, None
            n.nonce = os.urandom(16).hex()
        return n

    def _scan(self):
        for name in os.listdir(self.spool):
            if not name.endswith(".args") or name in self.seen_files:
                continue
            self.seen_files.add(name)
            try:
                n = self._load(os.path.join(self.spool, name))
            except (OSError, KeyError, ValueError, IndexError):
                continue
            if n is not None:
                with self.lock:
                    self.nodes[n.id] = n

    def _disk_gone(self, n):
        return not os.path.exists(n.tokf)

    def _step(self, n, now):
        if self._disk_gone(n):   # the cloud took the machine
            n.gone = True
            self.stats["silenced"] += 1
            return
        if n.token is None:
            # the one-time bootstrap secret for the node token; retried
            # with the same nonce when the answer is lost (a daemon killed)
            n.token = n.secret
            st, body = self._call(n, "/v1/nodes/%d/bootstrap" % n.id,
                                  {"nonce": n.nonce})
            n.token = body["token"] if st == 200 else None
            if st in (401, 409):
                n.gone = True
            if n.token is None:
                n.next_hb = now + 1
                return
        if not n.registered:
            st, body = self._call(n, "/v1/nodes/%d/register" % n.id,
                                  {"agent_version": "fleet"})
            if st == 409:
                n.gone = True
                return
            if st != 200:
                self.stats["api_errors"] += 1
                n.next_hb = now + 1
                return
            n.registered = True
            self.stats["registered"] += 1
            n.hb_s = max(self.hb_s, body.get("heartbeat_ms", 1000) / 1000.0)
            try:
                n.run_s = int(str(body.get("run") or "").split()[-1])
            except (ValueError, IndexError):
                n.run_s = 5
            directive = body.get("directive") or {}
        else:
            running = n.attempt and n.attempt not in n.done
            st, body = self._call(n, "/v1/nodes/%d/heartbeat" % n.id, {
                "workload": "running" if running else "idle",
                "attempt": n.attempt})
            if st == 409:
                n.gone = True
                return
            if st != 200:
                self.stats["api_errors"] += 1
                n.next_hb = now + n.hb_s
                return
            directive = body.get("directive") or {}
        act, att = directive.get("action"), directive.get("attempt", 0)
        if act == "run" and att and att != n.attempt and att not in n.done:
            n.attempt = att
            n.ends_at = now + n.run_s
        elif act in ("stop", "exit") and n.attempt and n.attempt not in n.done:
            self._exit(n, "stopped", 143)
            if act == "exit":
                n.gone = True
        elif act == "exit":
            n.gone = True
        if n.attempt and n.attempt not in n.done and now >= n.ends_at:
            self._exit(n, "completed", 0)
        n.next_hb = now + n.hb_s

    def _exit(self, n, cause, code):
        st, _ = self._call(n, "/v1/nodes/%d/report" % n.id, {"events": [{
            "type": "exit", "attempt": n.attempt, "exit_code": code,
            "signal": None, "cause": cause}]})
        if st == 200:
            n.done.add(n.attempt)
            self.stats["exits"] += 1

    def run(self):
        last_scan = 0.0
        while not self.stop_flag.is_set():
            now = time.time()
            if now - last_scan > 0.5:
                self._scan()
                last_scan = now
            with self.lock:
                due = [n for n in self.nodes.values()
                       if not n.gone and n.next_hb <= now]
            for n in due:
                self._step(n, time.time())
            time.sleep(0.05)

    def live(self):
        """(node id, instance id) of the nodes still up."""
        with self.lock:
            return [(n.id, n.instance) for n in self.nodes.values()
                    if not n.gone and n.registered]

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=30)


def cluster_of(daemon_log):
    """The cluster id spotrund logged ("provider ready ... cluster=")."""
    with open(daemon_log, errors="replace") as f:
        for line in f:
            if "provider ready" in line and "cluster=" in line:
                return line.split("cluster=", 1)[1].split()[0]
    raise AssertionError("no cluster id in " + daemon_log)


def request_figures(emus, since, until):
    """Per region, of the requests in [since, until) - the daemon's while
    it ran the jobs, not the test's own listings after (instances(), which
    retries a throttled call every second): minutes covered,
    DescribeInstances per minute, and the throttled (RequestLimitExceeded)
    and NotFound answers by action."""
    out = {}
    for e in emus:
        reqs = [r for r in e.requests() if since <= r["t"] < until]
        if not reqs:
            out[e.region] = {"minutes": 0, "describe_per_min": 0,
                             "throttled": {}, "not_found": 0, "mismatch": 0}
            continue
        mins = max((until - since) / 60.0, 1e-9)
        throttled = {}
        for r in reqs:
            if r["code"] == "RequestLimitExceeded":
                throttled[r["action"]] = throttled.get(r["action"], 0) + 1
        out[e.region] = {
            "minutes": mins,
            "calls": len(reqs),
            "describe": sum(r["action"] == "DescribeInstances" for r in reqs),
            "describe_per_min": sum(r["action"] == "DescribeInstances"
                                    for r in reqs) / mins,
            "throttled": throttled,
            "not_found": sum(r["code"].startswith("InvalidInstanceID.NotFound")
                             for r in reqs),
            "mismatch": sum(r["code"] == "IdempotentParameterMismatch"
                            for r in reqs),
        }
    return out


def leak_story(emus, daemon_log, running, limit=40):
    """What the emulators' request logs and the daemon's log say about the
    leaked instances' ids: the evidence a CI failure keeps once pytest's
    temporary directory is gone."""
    keys = {i["id"] for i in running}
    out = []
    for e in emus:
        if os.path.exists(e.log):
            with open(e.log, errors="replace") as f:
                out += ["%s: %s" % (e.region, l.rstrip()) for l in f
                        if any(k in l for k in keys)][-limit:]
    if daemon_log and os.path.exists(daemon_log):
        with open(daemon_log, errors="replace") as f:
            out += ["spotrund: " + l.rstrip() for l in f
                    if any(k in l for k in keys)][-limit:]
    return "\n".join(out)


def assert_no_leak_or_duplicate(emus, cluster, wait_s, poll_s, daemon_log=None):
    """Once every job is done: within wait_s (monotonic) nothing of the
    cluster runs on any emulator, and no node got two instances.  Returns
    the cluster's instances.  A leak's message carries the request-log and
    daemon-log lines that name the leaked instances (leak_story)."""
    deadline = time.monotonic() + wait_s
    while True:
        insts = [i for e in emus for i in e.instances(cluster)]
        running = [i for i in insts if i["state"] in (0, 1)]
        if not running or time.monotonic() > deadline:
            break
        time.sleep(poll_s)
    assert not running, ("leaked", running,
                         leak_story(emus, daemon_log, running))
    per_node = {}
    for i in insts:
        per_node.setdefault(i["node"], []).append(i["id"])
    dups = {n: v for n, v in per_node.items() if len(v) > 1}
    assert not dups, ("duplicates", dups)
    return insts
