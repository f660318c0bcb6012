"""Training through a notice's lead (issue 33, arm 5;
docs/distributed.md "Training through the notice"): a job with
`spotrun: {train_through_notice: true}` is not stopped at its node's
notice.  Its agent reports the notice but holds it back from the
workload (no notice file, no signal), spotrund asks for the replacement
at once and keeps the job RUNNING; the replacement registers, runs its
setup ahead and idles; once it is set up spotrund stops the gang as at
any notice (the noticed node's `exit` carries the notice), and the next
attempt runs on the replacement.

The workload logs a line per step with whether the notice file exists;
the test checks by the order of the records, never by durations: steps
of attempt 1 logged after the notice without a notice file, the
replacement's setup done before the stop, and the stop's reason
(`train_through_end`: the replacement is ready)."""

import os
import time

import pytest

from test_ctl_crash import Daemon, make_market, ts

WORK = """/usr/bin/python3 -c '
import os, signal, sys, time
if int(os.environ["SPOTRUN_ATTEMPT"]) > 1:
    print("attempt 2 done", flush=True)
    sys.exit(0)
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
i = 0
while not stop:
    i += 1
    nf = os.path.exists(os.environ["SPOTRUN_NOTICE_FILE"])
    print("step %d notice_file=%d" % (i, nf), flush=True)
    time.sleep(0.05)
print("stopped at step %d" % i, flush=True)
'"""


def wait_training(d, jid, nodes=1):
    """Once the workload trains on every node (steps of each rank in the
    log): the job."""
    end = time.time() + 120
    while time.time() < end:
        st, body = d.api("GET", "/v1/jobs/%d/logs?limit=5000" % jid)
        steps = [ln["rank"] for ln in body["lines"]
                 if ln["line"].startswith("step ")]
        if len(steps) >= 5 * nodes and len(set(steps)) == nodes:
            return d.job(jid)
        assert d.job(jid)["state"] not in ("FAILED", "CANCELLED")
        time.sleep(0.1)
    raise AssertionError(d.log_tail())


@pytest.fixture
def daemon(tmp_path):
    # a 30 s lead: the last safe moment (22.5 s after the notice) stays
    # far behind the replacement's boot and setup even under load
    d = Daemon(tmp_path, make_market(tmp_path, [1]), "--time-scale", "600",
               "--notice-ms", "30000", "--provision-ms", "500")
    yield d
    d.stop()


def test_gang_trains_until_the_replacement_is_set_up(daemon):
    d = daemon
    d.start()
    jid = d.submit("name: through\nresources:\n  accelerators: V100:1\n"
                   "  use_spot: true\nsetup: sleep 0.3\nrun: |\n%s"
                   "spotrun:\n  deadline: 1000h\n  work: 10h\n"
                   "  train_through_notice: true\n" %
                   "".join("  " + ln + "\n" for ln in WORK.splitlines()))
    j = wait_training(d, jid)
    n1 = [n for n in j["nodes"] if n["state"] == "READY"][0]
    os.makedirs(os.path.join(d.state, "interrupts"), exist_ok=True)
    open(os.path.join(d.state, "interrupts", str(n1["id"])), "w").close()
    j = d.wait([jid], 90)[0]
    assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
    ev = d.events(jid)
    st, body = d.api("GET", "/v1/jobs/%d/logs?limit=5000" % jid)
    lines = body["lines"]
    notice = [e for e in ev if e["type"] == "notice"]
    through = [e for e in ev if e["type"] == "train_through"]
    end = [e for e in ev if e["type"] == "train_through_end"]
    assert notice and len(through) == 1 and len(end) == 1, \
        [(e["type"], e["message"]) for e in ev]
    assert end[0]["data"]["why"] == "replacement_ready", end
    n2 = [n for n in j["nodes"] if n["id"] != n1["id"]]
    assert len(n2) == 1, j["nodes"]
    n2 = n2[0]
    # the replacement's setup ran ahead, before the gang stopped
    setup2 = [e for e in ev if e["type"] == "setup_done" and
              e["node_id"] == n2["id"]]
    assert setup2 and setup2[0]["seq"] < end[0]["seq"], ev
    # the workload trained on after the notice, without a notice file,
    # and was stopped only once the replacement was set up
    t_notice = min(ts(e["ts"]) for e in notice)
    a1 = [ln for ln in lines if ln["attempt"] == 1]
    after = [ln for ln in a1 if ln["line"].startswith("step ") and
             ts(ln["ts"]) > t_notice]
    # the notice is released at the stop: the agent writes the notice
    # file, then signals, so a step may be logged between the two; steps
    # with the file come only last, once the replacement was set up
    held = []
    for ln in after:
        if not ln["line"].endswith("notice_file=0"):
            break
        held.append(ln)
    released = after[len(held):]
    assert held and all(ln["line"].endswith("notice_file=1") and
                        ts(ln["ts"]) >= ts(setup2[0]["ts"])
                        for ln in released), (a1[-5:], setup2)
    stopped = [ln for ln in a1 if ln["line"].startswith("stopped at")]
    assert stopped and ts(stopped[0]["ts"]) >= ts(setup2[0]["ts"]), \
        (stopped, setup2)
    assert any(ln["attempt"] == 2 and ln["line"] == "attempt 2 done"
               for ln in lines), lines[-5:]
    assert j["preemptions"] == 1 and j["attempt"] == 2, j


@pytest.mark.skipif(os.environ.get("SPOTRUN_CHECK_MODE") == "asan",
                    reason="the plain pass only: 11 s under ASan, and the "
                    "agent's hold runs under ASan in the test above")
def test_stop_at_the_last_safe_moment_spares_a_setup_run_ahead(tmp_path):
    """A 2-node job, a 4 s lead on rank 1's node: the gang stops at its
    last safe moment (3 s) while rank 1's replacement still runs its
    setup ahead (4 s of it), and kept rank 0's final checkpoint (1.5 s
    after its signal) keeps the job stopping long enough for the
    replacement to hear the gang's `stop`.  That stop is not for a setup
    run ahead - it belongs to no attempt - so the setup ends well
    (before, the agent killed it: exit 143, and the job failed) and the
    next attempt runs on the kept node and the replacement."""
    d = Daemon(tmp_path, make_market(tmp_path, [1]), "--time-scale", "600",
               "--notice-ms", "4000", "--provision-ms", "300")
    work = WORK.replace("print(\"stopped at", "time.sleep(1.5 if os.environ["
                        "\"SPOTRUN_NODE_RANK\"] == \"0\" else 0)\n"
                        "print(\"stopped at")
    try:
        d.start()
        jid = d.submit("name: through\nnum_nodes: 2\nresources:\n"
                       "  accelerators: V100:1\n"
                       "  use_spot: true\nsetup: sleep 4\nrun: |\n%s"
                       "spotrun:\n  deadline: 1000h\n  work: 10h\n"
                       "  train_through_notice: true\n" %
                       "".join("  " + ln + "\n" for ln in work.splitlines()))
        j = wait_training(d, jid, 2)
        n1 = [n for n in j["nodes"] if n["state"] == "READY" and
              n["rank"] == 1][0]
        os.makedirs(os.path.join(d.state, "interrupts"), exist_ok=True)
        open(os.path.join(d.state, "interrupts", str(n1["id"])),
             "w").close()
        j = d.wait([jid], 90)[0]
        assert j["state"] == "SUCCEEDED", (j["message"], d.log_tail())
        ev = d.events(jid)
        end_ev = [e for e in ev if e["type"] == "train_through_end"]
        n2 = [n["id"] for n in j["nodes"] if n["id"] != n1["id"] and
              n["rank"] == 1]
        setups = [e for e in ev if e["type"] == "setup_done" and
                  e["node_id"] in n2]
        # the agent's own last safe moment or spotrund's (the same rule),
        # whichever comes first
        assert not end_ev or end_ev[0]["data"]["why"] == "last_safe_moment", \
            end_ev
        assert len(setups) == 1 and "exit 0" in setups[0]["message"], \
            "\n".join("%s: %s" % (e["type"], e["message"][:90]) for e in ev)
    finally:
        d.stop()
