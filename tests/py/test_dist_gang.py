"""Gang recovery with real PyTorch DDP through the control plane: a 2-node
job (examples/demo/train_gang.py: DDP over gloo on CPU, one rank per
node, spotrun's multi-rank checkpoints) on the local cloud, with one spot
interruption injected on one node at a time (rank 1's, then rank 0's:
the replaced rank 0 moves the rendezvous, MASTER_ADDR/MASTER_PORT).

At each recovery:
  * both ranks take their final checkpoint for the same step (the notice
    reached one rank; spotrun.dist.should_checkpoint told the other);
  * the healthy node is kept (same node id before and after), only the
    noticed rank gets a new node;
  * both ranks restore the same globally committed step - the final one -
    on a fresh rendezvous port, and training continues;
and the finished model is bitwise identical to an uninterrupted 2-rank
run of the same script (--reference).

The job keeps a warm spare (spotrun: {spares: 1}, issue 33): a third
node, booted and set up beside the gang, bound to no rank.  At each
notice the noticed rank goes to the spare (no new node is booted for
it), and the next pass launches the next spare; the spare's time is its
own line of the job's cost.

The job's checkpoints go to a file:// object store with peer copies on
(spotrun: {peer_replicas: 1}, issue 33 "restore from a peer"): at each
recovery the replaced rank restores every part from the kept rank - its
own part from the copy the kept node held, rank 0's replicated part from
rank 0's disk or rank 1's copy - never from the store, and the kept
rank from its own disk and held copy (tests/py/test_dist_peer.py has the
fallbacks: copy missing, stale or corrupt).  Plain pass only (a minute of
PyTorch; test_dist_env.py takes spotrund's master_addr path under ASan
too)."""

import csv
import functools
import json
import os
import socket
import subprocess
import time
import urllib.request

import pytest

from test_ctl_crash import ROOT, Daemon, make_market, ts

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    os.environ.get("SPOTRUN_CHECK_MODE") == "asan",
    reason="a minute of PyTorch; run in the plain pass")

TRAIN = os.path.join(ROOT, "examples", "demo", "train_gang.py")
HOLD = os.path.join(ROOT, "tests", "py", "hold_train.py")
ENVS = {"DEMO_STEPS": "240", "DEMO_HIDDEN": "32", "DEMO_STEP_MS": "25",
        "DEMO_CKPT_EVERY": "20"}


# restore sources (DistCheckpointer.restore_sources) of each rank when
# it was kept and when it was the replaced one
WHERE = {
    0: {"kept": "rank-00000=tier 2, replicated=tier 2",
        "new": "rank-00000=peer rank 1, replicated=peer rank 1"},
    1: {"kept": "rank-00001=tier 2, replicated=held",
        "new": "rank-00001=peer rank 0, replicated=peer rank 0"},
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@functools.lru_cache(maxsize=None)
def reference(world=2):
    """The uninterrupted run's RESULT hash (once per module run)."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), WORLD_SIZE=str(world), **ENVS)
    ps = [subprocess.Popen(["/usr/bin/python3", TRAIN, "--reference"],
                           env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
          for r in range(world)]
    outs = [p.communicate(timeout=300)[0] for p in ps]
    assert [p.returncode for p in ps] == [0] * world, outs
    line = [ln for ln in outs[0].splitlines() if ln.startswith("RESULT ")]
    return json.loads(line[0][len("RESULT "):])["hash"]


def logs(d, jid):
    st, body = d.api("GET", "/v1/jobs/%d/logs?limit=5000" % jid)
    assert st == 200, body
    return body["lines"]


def live_nodes(j):
    return {n["rank"]: n for n in j["nodes"]
            if n["state"] == "READY" and not n["spare"]}


def spare_ready(j):
    """The job's READY warm spare whose setup ran, or None."""
    s = [n for n in j["nodes"] if n["state"] == "READY" and n["spare"]]
    return s[0] if s else None


def finished(d, jid):
    """The job once SUCCEEDED, its log lines and their text."""
    j = d.wait([jid], 240)[0]
    lines = logs(d, jid)
    text = "\n".join("%s %s %s" % (ln["attempt"], ln["rank"], ln["line"])
                     for ln in lines if ln["stream"] != "agent")
    assert j["state"] == "SUCCEEDED", (j["message"], text[-4000:])
    return j, lines, text


def wait_running(d, jid, attempt, step, timeout=180, spare=False, nodes=2):
    end = time.time() + timeout
    while time.time() < end:
        j = d.job(jid)
        assert j["state"] not in ("FAILED", "CANCELLED"), j["message"]
        if j["state"] == "RUNNING" and j["attempt"] >= attempt and \
                (j["step"] or 0) >= step and len(live_nodes(j)) == nodes and \
                (not spare or spare_ready(j)):
            return j
        time.sleep(0.2)
    raise AssertionError("job %d not RUNNING past step %d in attempt %d: %s"
                         "\n%s" % (jid, step, attempt, d.job(jid),
                                   d.log_tail()))


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, make_market(tmp_path, [1]), "--time-scale", "600",
               "--notice-ms", "4000", "--heartbeat-timeout", "20s")
    yield d
    d.stop()


def test_gang_keeps_healthy_node_and_ends_bitwise_identical(daemon, tmp_path):
    d = daemon
    want = reference()
    d.start()
    envs = "".join("  %s: \"%s\"\n" % kv for kv in ENVS.items())
    # one region, one pool: the policy may move a gang between zones
    # after a preemption (a whole-gang restart, test_ctl_fakecloud's
    # move tests); this test counts the attempts of two recoveries
    jid = d.submit("name: gang-ddp\nnum_nodes: 2\nresources:\n"
                   "  accelerators: V100:1\n  use_spot: true\n"
                   "  infra: azure/westus3\n"
                   "setup: echo set up\n"
                   "run: /usr/bin/python3 %s\nenvs:\n%sspotrun:\n"
                   "  deadline: 1000h\n  work: 10h\n  spares: 1\n"
                   "  peer_replicas: 1\n"
                   "  checkpoint: {uri: \"file://%s/store\"}\n"
                   % (TRAIN, envs, tmp_path))
    os.makedirs(os.path.join(d.state, "interrupts"), exist_ok=True)
    attempt, step = 1, 40
    recoveries = []
    for victim in (1, 0):
        j = wait_running(d, jid, attempt, step, spare=True)
        before = live_nodes(j)
        spare = spare_ready(j)
        # the local cloud reclaims that one node (the injected interruption)
        open(os.path.join(d.state, "interrupts",
                          str(before[victim]["id"])), "w").close()
        j = wait_running(d, jid, j["attempt"] + 1, 0)
        after = live_nodes(j)
        recoveries.append((victim, before, after, j["attempt"], spare))
        attempt, step = j["attempt"], (j["step"] or 0) + 40
    j, lines, text = finished(d, jid)
    events = d.events(jid)
    adopted = [e for e in events if e["type"] == "spare_adopted"]
    launched = [e for e in events if e["type"] == "spare"]
    for victim, before, after, att, spare in recoveries:
        healthy = 1 - victim
        # the healthy node was kept, the noticed rank went to the spare
        # (booted and set up before the notice), no node was booted for it
        assert after[healthy]["id"] == before[healthy]["id"], (before, after)
        assert after[victim]["id"] == spare["id"], (before, spare, after)
        assert any(e["node_id"] == spare["id"] and e["data"]["rank"] ==
                   victim and e["data"]["setup_done"] for e in adopted), \
            adopted
        final = {n["id"]: n for n in j["nodes"]}
        gone, new = final[before[victim]["id"]], final[after[victim]["id"]]
        assert ts(new["adopted_at"]) <= ts(gone["terminated_at"]), \
            (gone, new)
        assert new["rank"] == victim and not new["spare"], new
        # every rank took its final checkpoint for one step, and both
        # ranks of the next attempt restored exactly that step
        finals = {ln["rank"]: int(ln["line"].split("step=")[1].split()[0])
                  for ln in lines if ln["attempt"] == att - 1 and
                  ln["line"].startswith("preempted: final checkpoint")}
        resumed = {ln["rank"]: int(ln["line"].split("step=")[1].split()[0])
                   for ln in lines if ln["attempt"] == att and
                   ln["line"].startswith("resumed step=")}
        assert sorted(finals) == [0, 1] and len(set(finals.values())) == 1, \
            (att, text[-4000:])
        assert resumed == finals, (att, finals, resumed)
        # where each rank read each part: the replaced rank from its peer
        src = {ln["rank"]: ln["line"][len("restored from: "):]
               for ln in lines if ln["attempt"] == att and
               ln["line"].startswith("restored from: ")}
        assert src == {healthy: WHERE[healthy]["kept"],
                       victim: WHERE[victim]["new"]}, (att, src, text[-3000:])
        # and the same as the job's `restored` events, one per rank
        got = {e["data"]["rank"]: e["data"]["from"] for e in events
               if e["type"] == "restored" and e["data"]["attempt"] == att}
        assert got == src, (att, got, src)
    # a fresh rendezvous each attempt, shared by its ranks: 3 attempts,
    # 3 ports, at the master address spotrund sent (rank 0's node)
    meet = {(ln["attempt"], ln["rank"]): ln["line"].rsplit(" ", 1)[1][:-1]
            for ln in lines if ln["line"].startswith(("start step=",
                                                      "resumed step="))}
    assert j["attempt"] == 3 and len(meet) == 6, meet
    for a in (1, 2, 3):
        assert meet[(a, 0)] == meet[(a, 1)], meet
        assert meet[(a, 0)].startswith("127.0.0.1:")
    assert len({meet[(a, 0)] for a in (1, 2, 3)}) == 3, meet
    # a spare per recovery plus the one kept at the end (ended with the
    # job), all in the gang's region, none a rank's replacement placement
    assert len(launched) >= 3, launched
    assert len(adopted) == 2, adopted
    assert not [n for n in j["nodes"] if n["state"] == "READY"], j["nodes"]
    assert not [e for e in events if e["type"] == "placement" and
                e["ts"] > launched[0]["ts"]], events
    # the spares' time is their own line of the job's cost, in the
    # report and in FOCUS (x_UsageState Spare), and no idle waste
    st, cost = d.api("GET", "/v1/cost?job=%d" % jid)
    assert st == 200, cost
    tot = cost["total"]
    assert 0 < tot["spare_cost_micros"] < tot["cost_micros"], tot
    assert tot["spare_hours"] > 0, tot
    req = urllib.request.Request(d.url + "/v1/cost/focus?job=%d" % jid)
    req.add_header("Authorization", "Bearer " + d.token)
    with urllib.request.urlopen(req, timeout=10) as r:
        rows = list(csv.DictReader(r.read().decode().splitlines()))
    spare_ids = {str(n["id"]) for n in j["nodes"]
                 if n["spare"] or n["adopted_at"]}
    spare_rows = [r for r in rows if r["x_UsageState"] == "Spare"]
    assert spare_rows and {r["x_NodeId"] for r in spare_rows} <= spare_ids, \
        (spare_ids, spare_rows[:3])
    assert all(r["x_IdleCost"] in ("", "0", "0.000000") for r in spare_rows), \
        spare_rows[:3]
    result = [ln["line"] for ln in lines if ln["line"].startswith("RESULT ")]
    assert len(result) == 1, text[-4000:]
    got = json.loads(result[0][len("RESULT "):])
    assert got["hash"] == want and got["steps"] == 240 and \
        got["world_size"] == 2


def test_rebalance_starts_the_replacement_before_the_notice(daemon):
    """Early signals (issue 33, arm 3): a 2-node spot gang that keeps no
    spare gets a rebalance recommendation on rank 1's node (the local
    cloud's <state>/rebalance/<node>, served on the node's IMDS and
    reported by its agent).  spotrund launches the replacement before any
    notice (event early_replacement): it boots and runs the setup as a
    spare.  The notice then moves rank 1 onto it - no node is placed at
    the notice, rank 0's node is kept - and the job ends bitwise identical
    to an uninterrupted run.  $1000/h of delay keeps the replacement's
    horizon (its bill against the 480 s of boot and setup it saves) far
    beyond the test.

    The job starts warm (python/spotrun/warm.py): each node's setup
    leaves a process with train_gang.py's imports done, and every run -
    on the kept node and on the replacement too - is a child of it.  The
    replacement's setup imports torch, so the first attempt holds after
    its first checkpoint until the notice (hold_train.py)."""
    d = daemon
    want = reference()
    d.start()
    jid = d.submit("name: early\nnum_nodes: 2\nresources:\n"
                   "  accelerators: V100:1\n  use_spot: true\n"
                   "setup: cd %s && /usr/bin/python3 -m spotrun.warm start "
                   "--preload gang_imports\n"
                   "run: /usr/bin/python3 -m spotrun.warm run %s\n"
                   "envs:\n%sspotrun:\n"
                   "  deadline: 1000h\n  work: 10h\n  spares: 0\n"
                   "  delay_cost_per_hour: 1000\n"
                   % (os.path.dirname(TRAIN), HOLD,
                      "".join("  %s: \"%s\"\n" % kv
                              for kv in ENVS.items())))
    j = wait_running(d, jid, 1, 20)
    before = live_nodes(j)
    n1 = before[1]["id"]
    assert not [n for n in j["nodes"] if n["spare"]], j["nodes"]
    os.makedirs(os.path.join(d.state, "rebalance"), exist_ok=True)
    open(os.path.join(d.state, "rebalance", str(n1)), "w").close()
    end = time.time() + 180
    early = spare = None
    while time.time() < end:
        ev = d.events(jid)
        early = [e for e in ev if e["type"] == "early_replacement"]
        spare = [n for n in d.job(jid)["nodes"] if n["spare"] and
                 n["state"] == "READY"]
        if early and spare and any(e["type"] == "setup_done" and
                                   e["node_id"] == spare[0]["id"]
                                   for e in ev):
            break
        time.sleep(0.2)
    else:
        raise AssertionError((early, spare, d.log_tail()))
    assert early[0]["data"]["for_node"] == n1 and \
        early[0]["data"]["signal"] == "rebalance", early
    s1 = spare[0]["id"]
    os.makedirs(os.path.join(d.state, "interrupts"), exist_ok=True)
    open(os.path.join(d.state, "interrupts", str(n1)), "w").close()
    j, lines, text = finished(d, jid)
    ev = d.events(jid)
    kinds = [e["type"] for e in ev]
    reb = [e for e in ev if e["type"] == "rebalance"]
    notice = [e for e in ev if e["type"] in ("notice", "notice_ack")]
    adopted = [e for e in ev if e["type"] == "spare_adopted"]
    # recommendation -> replacement launched -> notice -> rank moved
    assert reb and notice and reb[0]["seq"] < early[0]["seq"] < \
        min(e["seq"] for e in notice), kinds
    assert len(adopted) == 1 and adopted[0]["node_id"] == s1 and \
        adopted[0]["data"]["rank"] == 1 and \
        adopted[0]["data"]["setup_done"], adopted
    assert kinds.count("placement") == 1, kinds
    final = {n["id"]: n for n in j["nodes"]}
    assert final[s1]["rank"] == 1 and final[s1]["adopted_at"], final[s1]
    assert final[before[0]["id"]]["rank"] == 0, final
    assert j["attempt"] == 2 and j["preemptions"] == 1, j
    # both attempts' ranks started warm: nothing imported torch anew
    warm = sorted((ln["attempt"], ln["rank"]) for ln in lines if
                  ln["line"].startswith("joining the rendezvous") and
                  "a warm start" in ln["line"])
    assert warm == [(1, 0), (1, 1), (2, 0), (2, 1)], text[-4000:]
    result = [ln["line"] for ln in lines if ln["line"].startswith("RESULT ")]
    assert len(result) == 1, text[-4000:]
    got = json.loads(result[0][len("RESULT "):])
    assert got["hash"] == want and got["steps"] == 240 and \
        got["world_size"] == 2, got
