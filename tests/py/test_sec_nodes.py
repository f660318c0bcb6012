"""Issue 24, the nodes' side: no token a workload can reach or compute.

- Node tokens are random and stored hashed: HMAC(imds.key, "spotrun node
  token:J:N") - what the daemon used to derive them with, from a key on
  its disk - opens nothing.
- A node boots with a one-time bootstrap secret, not its token: the
  secret in an EC2 instance's user-data (which IMDS serves to every
  process of the instance, for its whole life) is refused once its agent
  has traded it for the token, and it never opened the node routes.
- On the AWS provider (the driver's own user-data, on the EC2 emulator)
  the agent isolates the workload as on the local cloud: a job's
  workload reads neither spotrund's admin token, nor its instance's
  user-data, nor another instance's disk, and the job's isolation event
  says what was hidden.
- The agent reads files the workload writes (its status file, the
  library's progress report): a link planted there, to spotrund's
  api.token, is not followed - no byte of the token reaches the job's
  log - and a FIFO does not hold the agent up.
"""

import glob
import hashlib
import hmac
import json
import os
import re
import time

from test_ctl_crash import ROOT, Daemon, api_request
from test_e2e_aws_emu import aws_env, daemon, start_emulator


def post(d, path, token, body):
    return api_request(d.url, token, "POST", path, body)


def wait_running(d, jid, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        j = d.job(jid)
        if j["state"] == "RUNNING" and any(n["state"] == "READY"
                                           for n in j["nodes"]):
            return j
        assert j["state"] not in ("FAILED", "CANCELLED", "SUCCEEDED"), j
        time.sleep(0.1)
    raise AssertionError("never ran: %s\n%s" % (d.job(jid), d.log_tail()))


def test_node_tokens_are_not_derivable_from_the_daemons_key(tmp_path):
    d = Daemon(tmp_path, os.path.join(ROOT, "data"))
    try:
        d.start()
        jid = d.submit("name: t\nresources:\n  accelerators: V100:1\n"
                       "  use_spot: false\nrun: sleep 300\nspotrun:\n"
                       "  deadline: 1000h\n  work: 10h\n")
        node = [n for n in wait_running(d, jid)["nodes"]
                if n["state"] == "READY"][0]["id"]
        with open(os.path.join(d.state, "imds.key")) as f:
            key = bytes.fromhex(f.read().strip())   # as spotrund loads it
        derived = hmac.new(key, b"spotrun node token:%d:%d" % (jid, node),
                           hashlib.sha256).hexdigest()
        st, body = post(d, "/v1/nodes/%d/heartbeat" % node, derived,
                        {"workload": "running"})
        assert st == 401, (st, body)
        # the local cloud's node dir holds no token, and the bootstrap
        # secret was removed by the agent that used it
        ndir = os.path.join(d.state, "nodes", str(node))
        assert sorted(os.listdir(ndir)) == sorted(
            x for x in os.listdir(ndir) if "token" not in x
            and x != "bootstrap"), os.listdir(ndir)
        st, _ = api_request(d.url, d.token, "POST", "/v1/jobs/%d/cancel" % jid)
        assert st in (200, 202)
    finally:
        d.stop()


def test_agent_reads_no_link_or_fifo_the_workload_plants(tmp_path):
    d = Daemon(tmp_path, os.path.join(ROOT, "data"))
    try:
        d.start()
        run = ('S=$(dirname $(dirname $SPOTRUN_NODE_DIR))\n'
               'ln -s $S/api.token $SPOTRUN_STATUS_FILE\n'
               'mkfifo $SPOTRUN_PROGRESS_FILE\n'
               'sleep 2\n'
               'rm $SPOTRUN_STATUS_FILE\n'
               "echo '{\"step\": 42}' > $SPOTRUN_STATUS_FILE\n"
               'sleep 300\n')
        jid = d.submit("name: t\nresources:\n  accelerators: V100:1\n"
                       "  use_spot: false\nrun: |\n%sspotrun:\n"
                       "  deadline: 1000h\n  work: 10h\n"
                       % "".join("  " + l + "\n" for l in run.splitlines()))
        # the agent went on past the FIFO and read the workload's own file
        deadline = time.time() + 90
        while time.time() < deadline:
            j = d.job(jid)
            if j.get("step") == 42:
                break
            assert j["state"] not in ("FAILED", "CANCELLED", "SUCCEEDED"), j
            time.sleep(0.1)
        assert j.get("step") == 42, (j, d.log_tail())
        st, body = api_request(d.url, d.token, "GET",
                               "/v1/jobs/%d/logs?limit=1000" % jid)
        lines = [l["line"] for l in body["lines"]]
        assert [l for l in lines if "status.json: a symbolic link, not read"
                in l], lines
        # jansson's error used to quote the token's first characters
        assert not [l for l in lines if d.token[:6] in l], lines
        assert not [l for l in lines if "invalid token" in l], lines
        st, _ = api_request(d.url, d.token, "POST", "/v1/jobs/%d/cancel" % jid)
        assert st in (200, 202)
        assert d.wait([jid], 60)[0]["state"] == "CANCELLED"
    finally:
        d.stop()


PROBE = r"""
S=STATE; E=EMU
cat "$S/api.token" 2>/dev/null && echo LEAK-admin-token
cat "$S/imds.key" 2>/dev/null | head -c1 | grep -q . && echo LEAK-imds-key
for f in "$E"/*/user-data; do
  grep -q bootstrap "$f" 2>/dev/null && echo "LEAK-user-data $f"
done
for f in "$E"/*/root/node-*/bootstrap "$E"/*/root/node-*/token; do
  [ -s "$f" ] 2>/dev/null && echo "LEAK-node-secret $f"
done
echo "emu-lists: $(ls -A "$E" 2>/dev/null | tr '\n' ' ')"
echo "node-dir: $SPOTRUN_NODE_DIR"
[ -w "$SPOTRUN_NODE_DIR" ] && echo node-dir-writable
echo probe-done
"""


def test_ec2_workload_reads_no_secret_and_user_data_opens_nothing(
        tmp_path, monkeypatch):
    emu, url = start_emulator(tmp_path)
    emudir = os.path.join(str(tmp_path), "emu")
    aws_env(monkeypatch, url)
    d = daemon(tmp_path, "aws")
    try:
        d.start()
        run = PROBE.replace("STATE", d.state).replace("EMU", emudir)
        yaml = ("name: %%s\nresources:\n  accelerators: V100:1\n"
                "  use_spot: false\n  infra: aws/us-east-1\nrun: |\n%s"
                "spotrun:\n  deadline: 1000h\n  work: 1h\n"
                % "".join("  " + l + "\n" for l in run.strip().splitlines()))
        # job 1 keeps its instance; job 2's workload probes everything
        first = d.submit(yaml.replace("%s", "first").replace(
            "echo probe-done", "echo probe-done; sleep 300"))
        wait_running(d, first)
        second = d.submit(yaml.replace("%s", "second"))
        j = d.wait([second], 120)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        st, body = api_request(d.url, d.token, "GET",
                               "/v1/jobs/%d/logs?limit=1000" % second)
        out = [l["line"] for l in body["lines"]]
        assert any("probe-done" in l for l in out), out
        assert not [l for l in out if "LEAK" in l], out
        assert any("node-dir-writable" in l for l in out), out
        # of the emulator's disks only the path to its own node dir is
        # there (bound back into the emptied dir); the other instance's
        # is not
        lists = [l for l in out if l.startswith("emu-lists:")][0].split()[1:]
        ndir = [l for l in out if l.startswith("node-dir:")][0].split()[1]
        own = os.path.relpath(ndir, emudir).split("/")[0]
        assert lists == [own], (lists, own)
        ev = [e for e in d.events(second) if e["type"] == "isolation"]
        assert len(ev) == 1, ev
        assert ev[0]["data"]["mode"] in ("userns", "root-partial"), ev
        hidden = ev[0]["data"]["hidden"]
        assert d.state in hidden and emudir in hidden, ev
        # the secret in the user-data: refused once used, never a token
        udata = glob.glob(os.path.join(emudir, "*", "user-data"))
        assert len(udata) == 2, udata
        for u in udata:
            with open(u) as f:
                text = f.read()
            node = int(re.search(r"user-data\), node (\d+)\n", text).group(1))
            secret = text.split("printf '%s\\n' '")[1].split("'")[0]
            assert "token" not in text, text
            st, body = post(d, "/v1/nodes/%d/bootstrap" % node, secret,
                            {"nonce": "ab" * 16})
            assert st == 401 and "already used" in body["error"]["message"], \
                (st, body)
            st, body = post(d, "/v1/nodes/%d/heartbeat" % node, secret,
                            {"workload": "running"})
            assert st == 401, (st, body)
        api_request(d.url, d.token, "POST", "/v1/jobs/%d/cancel" % first)
        d.wait([first], 60)
    finally:
        d.stop()
        emu.terminate()
        emu.wait(timeout=20)
