"""spotrun-agent never goes silent while it is alive, and sends an urgent
report at once (src/agent/watch.c, agent.c loop_once).

- A pass of the main loop that blocks (here the job's files fetch, held
  by the scripted control plane) does not stop the heartbeats: the
  watchdog thread sends keep-alives while it lasts, and names the stall
  in the agent's log ("main loop stalled ... phase=files fetch").  A
  fetch that failed is reported once (a file_mounts event) and not
  tried again for the same attempt.
- The job's files that cannot be put in place are reported as soon as
  the unpacker has said why, also when it has exited before the agent
  read a line of it (the agent's log write held on a full pipe while it
  ran): the agent's own log line drained the unpacker's pipes to their
  end, and the loop waiting for both to end waited its full 120 s.
- An urgent event (a notice, the run's exit) is reported by the first
  attempt after it, not after the retry backoff: with a backoff of
  minutes (--retry-base/--retry-cap 300s) and spotrund failing, the
  notice's report is tried at once, and once spotrund answers again
  the exit's report reaches it - both long before any retry the backoff
  would allow.
"""

import fcntl
import io
import os
import select
import tarfile
import threading
import time

from test_e2e_agent import Plane


def test_heartbeats_go_on_while_the_files_fetch_blocks(tmp_path):
    p = Plane(tmp_path)
    p.files_gate = threading.Event()
    try:
        p.start_agent()
        p.wait_for(lambda: p.files_asked >= 1, what="the files fetch")
        with p.lock:
            before = len(p.heartbeats)
        # the fetch is held: only the watchdog's keep-alives arrive
        p.wait_for(lambda: len(p.heartbeats) >= before + 3,
                   what="heartbeats while the fetch blocks")
        p.wait_for(lambda: 'phase="files fetch"' in p.agent_log(),
                   what="the stall named in the agent's log")
        with p.lock:
            assert p.files_asked == 1  # still the same, held fetch
            kept = p.heartbeats[before:]
        assert all(h["workload"] == "idle" and h["attempt"] == 0
                   for h in kept), kept
        # liveness only: no progress is made up
        assert not any("step" in h for h in kept), kept
        p.files_gate.set()
        p.wait_for(lambda: "file_mounts" in p.types(),
                   what="the failed fetch reported")
        # the plane still says "run attempt 1": the agent has reported
        # why that attempt cannot run and does not fetch again (it used
        # to retry on every reply, a storm that also pushed the stall's
        # line out of the log's tail)
        with p.lock:
            n = len(p.heartbeats)
        p.wait_for(lambda: len(p.heartbeats) >= n + 3,
                   what="heartbeats after the failed fetch")
        with p.lock:
            assert p.files_asked == 1, p.files_asked
        log = p.agent_log()
        assert "main loop stalled" in log and "files fetch" in log, log
        with p.lock:
            p.directive = {"action": "exit", "attempt": 1}
        assert p.proc.wait(60) == 0, p.agent_log()
    finally:
        if p.files_gate:
            p.files_gate.set()
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()
        p.srv.shutdown()


def test_urgent_reports_skip_the_retry_backoff(tmp_path):
    go = os.path.join(str(tmp_path), "go")
    run = ("trap 'while [ ! -e \"%s\" ]; do sleep 0.05; done; exit 0' TERM\n"
           "printf '{\"seq\":1,\"step\":5,\"total_steps\":100}' > "
           "\"$SPOTRUN_STATUS_FILE.t\"; mv \"$SPOTRUN_STATUS_FILE.t\" "
           "\"$SPOTRUN_STATUS_FILE\"\n"
           "while :; do sleep 0.05; done\n" % go)
    p = Plane(tmp_path, run=run)
    try:
        # a failure makes the agent wait 150-300 s before its next try
        p.start_agent(["--retry-base", "300s", "--retry-cap", "300s"])
        p.wait_for(lambda: any(h.get("step") == 5 for h in p.heartbeats),
                   what="the workload running")
        with p.lock:
            p.down = True
        p.wait_for(lambda: len(p.refused) >= 1, what="a refused call")
        # the backoff now holds every call for minutes; the notice's
        # report is an urgent event's first attempt: it goes at once
        from datetime import datetime, timezone
        import time
        t = datetime.fromtimestamp(time.time() + 120, timezone.utc)
        with p.lock:
            p.notice_time = t.strftime("%Y-%m-%dT%H:%M:%SZ")
            p.notice = "good"

        def refused_types():
            return [e["type"] for path, b in p.refused
                    if path.endswith("/report") for e in b["events"]]
        p.wait_for(lambda: "notice" in refused_types(),
                   what="the notice's report tried during the backoff")
        # spotrund is back; the workload ends: the exit's report is
        # tried at once and reaches it (the backoff has minutes left)
        with p.lock:
            p.down = False
            n_refused = len(p.refused)
        open(go, "w").close()
        p.wait_for(lambda: "exit" in p.types(), what="the exit report")
        types = p.types()
        assert types.index("notice") < types.index("exit"), types
        ex = [e for e in p.events if e["type"] == "exit"][0]
        assert ex["cause"] == "preempted" and ex["exit_code"] == 0, ex
        with p.lock:
            assert len(p.refused) == n_refused  # nothing refused since
        assert p.proc.wait(60) == 0, p.agent_log()
    finally:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()
        p.srv.shutdown()


def _archive(entries):
    """A job's files archive (lib/bundle's ustar: uid/gid/mtime 0)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def _zombie_child(pid):
    """A child of pid that has exited and is not reaped yet."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if st[0] == "Z" and int(st[1]) == pid:
            return True
    return False


def test_files_failure_reported_when_the_unpacker_ends_first(tmp_path):
    """The unpacker has exited (its pipes at their end) before the agent
    reads a line of it.  Forced: the agent's log is a one-page pipe the
    test fills as it serves the files, so the agent blocks on its next
    log line (the isolation line, after it started the unpacker) until
    the unpacker is a zombie.  The failure must be reported at once, with
    the unpacker's reason; it waited 120 s and said "took more than
    120 s" before (session 24: the flake of test_sky_files)."""
    p = Plane(tmp_path)
    # "a" is a file, so "a/b" cannot be put in place under it
    p.files_archive = _archive([("a", b"f1"), ("a/b", b"f2")])
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    # a second open of the pipe, non-blocking, for the test's filler
    # (O_NONBLOCK on w itself would reach the agent's copy too)
    fill = os.open("/proc/self/fd/%d" % w, os.O_WRONLY | os.O_NONBLOCK)
    reading = threading.Event()
    reading.set()
    done = threading.Event()
    seen = {"zombie": False}

    def copy():
        with open(os.path.join(p.tmp, "agent.log"), "ab") as log:
            while not done.is_set():
                if not reading.is_set():
                    time.sleep(0.01)
                    continue
                if select.select([r], [], [], 0.05)[0]:
                    data = os.read(r, 65536)
                    log.write(data.replace(b"\0", b""))
                    log.flush()

    def hold_the_log():
        reading.clear()
        time.sleep(0.1)  # the copier has seen it
        try:
            while True:
                os.write(fill, b"\0" * 512)
        except BlockingIOError:
            pass
        try:
            while True:
                os.write(fill, b"\0")
        except BlockingIOError:
            pass

        def release():
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not seen["zombie"]:
                seen["zombie"] = _zombie_child(p.proc.pid)
                time.sleep(0.02)
            reading.set()
        threading.Thread(target=release, daemon=True).start()

    p.files_hook = hold_the_log
    copier = threading.Thread(target=copy, daemon=True)
    copier.start()
    try:
        p.start_agent(out=w)
        os.close(w)
        w = -1
        p.wait_for(lambda: p.files_asked >= 1, what="the files fetch")
        p.wait_for(lambda: reading.is_set(), timeout=30,
                   what="the log released")
        assert seen["zombie"], ("the unpacker never ended while the agent "
                                "was held", p.agent_log())
        t0 = time.monotonic()
        p.wait_for(lambda: "file_mounts" in p.types(), timeout=30,
                   what="the files failure reported")
        took = time.monotonic() - t0
        with p.lock:
            fm = [e for e in p.events if e["type"] == "file_mounts"]
        assert "not a directory" in fm[0]["message"], (fm, took)
        with p.lock:
            p.directive = {"action": "exit", "attempt": 1}
        assert p.proc.wait(60) == 0, p.agent_log()
    finally:
        reading.set()
        done.set()
        if w >= 0:
            os.close(w)
        os.close(fill)
        p.close()
        copier.join(5)
        os.close(r)


def test_one_refused_event_does_not_take_the_others_with_it(tmp_path):
    """A report spotrund refuses as malformed (400: here, a daemon that
    does not know the 'rebalance' event) is not dropped whole: each of its
    events is sent alone, and only the refused one is dropped.  The run's
    exit, queued behind it while spotrund was down, used to go with it,
    and the job waited for an exit that never came (session 24)."""
    go = os.path.join(str(tmp_path), "go")
    p = Plane(tmp_path, run='while [ ! -e "%s" ]; do sleep 0.05; done; '
              'exit 3\n' % go)
    p.refuse_type = "rebalance"
    try:
        p.start_agent()
        p.wait_for(lambda: any(h["workload"] == "running"
                               for h in p.heartbeats), what="the run")
        with p.lock:
            p.down = True  # spotrund answers 503: the events wait
            p.rebalance_time = "2026-11-29T14:18:00Z"
        p.wait_for(lambda: "rebalance recommendation" in p.agent_log(),
                   what="the rebalance recommendation seen")
        open(go, "w").close()
        p.wait_for(lambda: "run of attempt 1 ended" in p.agent_log(),
                   what="the run's end")
        with p.lock:
            p.down = False
        p.wait_for(lambda: "exit" in p.types(), timeout=30,
                   what="the run's exit reported")
        with p.lock:
            ex = [e for e in p.events if e["type"] == "exit"]
            assert p.refused_reports >= 1, p.refused_reports
            assert "rebalance" not in p.types(), p.types()
        assert ex[0]["exit_code"] == 3 and ex[0]["attempt"] == 1, ex
        with p.lock:
            p.directive = {"action": "exit", "attempt": 1}
        assert p.proc.wait(60) == 0, p.agent_log()
    finally:
        p.close()
