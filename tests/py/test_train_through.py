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
    # the workload trains (its first steps are in the log)
    end = time.time() + 120
    while time.time() < end:
        st, body = d.api("GET", "/v1/jobs/%d/logs?limit=5000" % jid)
        if sum(ln["line"].startswith("step ") for ln in body["lines"]) >= 5:
            break
        assert d.job(jid)["state"] not in ("FAILED", "CANCELLED")
        time.sleep(0.1)
    else:
        raise AssertionError(d.log_tail())
    j = d.job(jid)
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
    assert after and all(ln["line"].endswith("notice_file=0")
                         for ln in after), a1[-5:]
    stopped = [ln for ln in a1 if ln["line"].startswith("stopped at")]
    assert stopped and ts(stopped[0]["ts"]) >= ts(setup2[0]["ts"]), \
        (stopped, setup2)
    assert any(ln["attempt"] == 2 and ln["line"] == "attempt 2 done"
               for ln in lines), lines[-5:]
    assert j["preemptions"] == 1 and j["attempt"] == 2, j
