"""`spotrun cloud preempt|outage` drive the local cloud by hand (issue 28):
a node preempted by hand goes the way of any preemption (notice, then
reclaimed, the job resumes on a replacement), a pool out by hand loses
its spot node and sells no spot until the outage ends, and every bad
request is a clear error: an unknown node or pool, a usage error, the
daemon not running."""

import json
import os
import subprocess
import tempfile

from finops_daemon import Daemon, bin_path


def cloud(d_state, *args):
    return subprocess.run([bin_path("spotrun"), "cloud"] + list(args) +
                          ["--state-dir", d_state], capture_output=True, text=True,
                          timeout=60)


def test_errors_without_a_daemon_and_usage():
    tmp = tempfile.mkdtemp(prefix="cloudcli-")
    state = os.path.join(tmp, "state")
    os.makedirs(state)
    # never started here, then started but not running
    p = cloud(state, "preempt", "3", "--api", "http://127.0.0.1:1")
    assert p.returncode == 1 and "spotrund has not been started" in p.stderr, p
    with open(os.path.join(state, "api.token"), "w") as f:
        f.write("t" * 32)
    p = cloud(state, "outage", "3", "--for", "1h", "--api", "http://127.0.0.1:1")
    assert p.returncode == 1 and "127.0.0.1:1" in p.stderr, p
    p = cloud(state, "outage", "3")
    assert p.returncode == 2 and "--for" in p.stderr, p
    p = cloud(state, "preempt", "x7")
    assert p.returncode == 2 and "'x7' is not a node id" in p.stderr, p
    p = cloud(state, "outage", "3", "--for", "soon")
    assert p.returncode == 2 and "--for" in p.stderr, p
    p = cloud(state, "explode")
    assert p.returncode == 2 and "unknown subcommand 'explode'" in p.stderr, p


def live_node(d, job):
    def ready():
        _, b = d.req("GET", "/v1/nodes?job=%d" % job)
        n = [x for x in b["nodes"] if x["state"] == "READY"]
        return d.job(job)["state"] == "RUNNING" and n and n[0]
    return d.wait(ready, 120, "job %d running" % job)


def test_preempt_and_outage_by_hand():
    tmp = tempfile.mkdtemp(prefix="cloudcli-")
    d = Daemon(tmp, "--time-scale", "60", "--notice-ms", "4000")
    try:
        d.start()
        job = d.launch("byhand", 3600)
        node = live_node(d, job)

        # unknown node, unknown pool: named, exit 1
        p = cloud(d.state, "preempt", "9999")
        assert p.returncode == 1 and "no node 9999" in p.stderr, p
        p = cloud(d.state, "outage", "99999999", "--for", "1h")
        assert p.returncode == 1 and "no pool 99999999" in p.stderr, p
        p = cloud(d.state, "outage", "aws/nowhere/p3.2xlarge", "--for", "1h")
        assert p.returncode == 1 and "no pool 'aws/nowhere/p3.2xlarge'" in p.stderr, p

        # preempt by hand: the notice with the lead asked for (not the
        # daemon's 4 s), then the node is reclaimed and replaced
        p = cloud(d.state, "preempt", str(node["id"]), "--lead", "2s", "--json")
        assert p.returncode == 0, p.stderr
        r = json.loads(p.stdout)
        assert r["node"] == node["id"] and r["provider"] == "local", r
        assert 0 < r["lead_s"] <= 2, r

        def ended():
            _, b = d.req("GET", "/v1/nodes?job=%d&all=1" % job)
            n = [x for x in b["nodes"] if x["id"] == node["id"]]
            return n and n[0]["state"] in ("TERMINATED", "LOST") and n[0]
        n = d.wait(ended, 60, "node %d reclaimed" % node["id"])
        assert n["end_reason"] == "preempted", n
        _, ev = d.req("GET", "/v1/jobs/%d/events" % job)
        assert [e for e in ev["events"] if e["type"] == "preempted"
                and e.get("node_id") == node["id"]], ev
        # a gone node cannot be preempted again
        p = cloud(d.state, "preempt", str(node["id"]))
        assert p.returncode == 1 and "is %s: only a live node" % n["state"] in p.stderr, p

        # an outage of the replacement's pool, named by its place: that
        # pool sells no spot, and the node in it is reclaimed
        repl = live_node(d, job)
        assert repl["id"] != node["id"]
        _, offs = d.req("GET", "/v1/offerings?gpu=V100:1&spot=1")
        o = [x for x in offs["offerings"] if x["pool"] == repl["pool"]][0]
        where = "/".join(x for x in (o["cloud"], o["region"], o["zone"],
                                     o["instance_type"]) if x)
        p = cloud(d.state, "outage", where, "--for", "10h")
        assert p.returncode == 0, p.stderr
        assert "pool %d (%s)" % (repl["pool"], where) in p.stdout, p.stdout
        _, offs = d.req("GET", "/v1/offerings?gpu=V100:1")
        assert [x["available"] for x in offs["offerings"]
                if x["pool"] == repl["pool"]] == [False]
        with open(os.path.join(d.state, "outages.json")) as f:
            assert json.load(f)["outages"][0]["pool"] == repl["pool"]

        def gone():
            _, b = d.req("GET", "/v1/nodes?job=%d&all=1" % job)
            n = [x for x in b["nodes"] if x["id"] == repl["id"]]
            return n and n[0]["state"] in ("TERMINATED", "LOST") and n[0]
        assert d.wait(gone, 120, "the pool's node reclaimed")["end_reason"] == \
            "preempted"
    finally:
        d.stop()
