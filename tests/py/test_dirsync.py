"""Bucket mounts as durable checkpoint directories (issue 30, lib/dirsync)
against s3rver (npm, SigV4 checked), on 127.0.0.1.

  * test_sync_restore_roundtrip: `spotrun-agent --dirsync` uploads a
    directory (a multipart file, a nested one, a link that must not be
    followed) once its files are quiet, takes a round at once on "sync",
    makes the final round on "final"; `--restore-only` into another dir
    gives the same files; `spotrun ckpt ls` lists the rounds.
  * test_kill9_syncer: kill -9 of the syncer in the middle of sync rounds:
    the real one (`spotrun-agent --dirsync`, the process the node agent
    runs for a mount) after random delays, and every fifth trial a test
    build of the same loop stopped at a named point (one object
    confirmed, every object but no manifest, committed but no retention;
    every seventh, the agent's end of the command pipe closes first, as
    when the agent is killed, and the syncer is killed during its final
    round).
    After every kill a fresh directory restores a WHOLE earlier round -
    every file of one trial's writes, none of another's, none missing -
    and never one older than the newest round the syncer reported
    committed (0 bytes of committed rounds lost).  50 trials here (20
    under ASan, slower per trial);
    SPOTRUN_CRASH_TRIALS overrides (make soak: 2,000); SPOTRUN_SEED picks
    the delays and sizes (printed).
"""

import hashlib
import json
import os
import queue
import random
import signal
import subprocess
import threading
import time

from objstore_servers import S3rver

ASAN = os.environ.get("SPOTRUN_CHECK_MODE") == "asan"
BUILD = os.environ.get("SPOTRUN_BUILD", "build")
AGENT = os.path.join(BUILD, "bin", "spotrun-agent")
CLI = os.path.join(BUILD, "bin", "spotrun")
HELPER = os.path.join(BUILD, "tests", "helpers", "dirsync_syncer")
LIMIT = 120  # generous: an event, never a timing


class Proc:
    """A child whose stdout lines arrive on a queue."""

    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, bufsize=0)
        self.q = queue.Queue()
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.p.stdout:
            self.q.put(raw.decode().rstrip("\n"))
        self.q.put(None)

    def next(self, timeout=LIMIT):
        line = self.q.get(timeout=timeout)
        if line is not None:
            self.lines.append(line)
        return line

    def until(self, pred, timeout=LIMIT):
        end = time.monotonic() + timeout
        while True:
            line = self.next(max(0.01, end - time.monotonic()))
            if line is None:
                raise AssertionError("exited (%s) before the line; stderr: %s"
                                     % (self.p.wait(), self.p.stderr.read()))
            ev = event(line)
            if pred(line, ev):
                return line, ev

    def send(self, text):
        self.p.stdin.write(text.encode())
        self.p.stdin.flush()


def event(line):
    try:
        return json.loads(line)
    except ValueError:
        return {}


def tree(d):
    out = {}
    for root, dirs, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p) or f.startswith(".spotrun-"):
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, d)] = fh.read()
    return out


def env_for(srv):
    env = dict(os.environ, **srv.env())
    env["SPOTRUN_OBJSTORE_PART_MB"] = "5"
    env["SPOTRUN_LOG_LEVEL"] = "error"
    return env


def restore_only(env, uri, d):
    out = subprocess.run([AGENT, "--dirsync", str(d), "--uri", uri,
                          "--restore-only"], env=env, capture_output=True,
                         text=True, timeout=LIMIT)
    assert out.returncode == 0, out.stderr
    evs = [event(x) for x in out.stdout.splitlines()]
    ev = [e for e in evs if e.get("event") == "restored"][0]
    return ev["round"], tree(d)


def test_sync_restore_roundtrip(tmp_path):
    srv = S3rver()
    try:
        env = env_for(srv)
        uri = "s3://ckpt/run1/checkpoint"
        src = tmp_path / "src"
        (src / "sub").mkdir(parents=True)
        big = os.urandom(7 << 20)  # two 5 MiB parts
        (src / "model.pt").write_bytes(big)
        (src / "sub" / "opt.pt").write_bytes(b"optimizer")
        os.symlink("/etc/passwd", src / "passwd")  # never followed
        # both files quiet before the first scan: a file is taken once its
        # mtime is --quiet old, and under ASan the 7 MiB write can end
        # long enough before opt.pt's for round 1 to hold model.pt alone
        past = time.time() - 60
        for f in (src / "model.pt", src / "sub" / "opt.pt"):
            os.utime(f, (past, past))
        p = Proc([AGENT, "--dirsync", str(src), "--uri", uri, "--quiet",
                  "300ms", "--poll", "100ms"], env)
        _, ev = p.until(lambda l, e: e.get("event") == "restored")
        assert ev["round"] == -1
        _, ev = p.until(lambda l, e: e.get("event") == "round")
        assert (ev["round"], ev["files"]) == (1, 2), ev
        assert ev["bytes"] == len(big) + 9
        (src / "sub" / "opt.pt").write_bytes(b"optimizer 2")
        p.send("sync\n")
        _, ev = p.until(lambda l, e: e.get("event") == "round")
        assert ev["round"] == 2
        # only the changed file was sent again
        assert ev["uploaded_bytes"] == len(big) + 9 + 11
        (src / "last.txt").write_bytes(b"written just before the end")
        p.send("final\n")
        _, ev = p.until(lambda l, e: e.get("event") == "final")
        assert ev["round"] == 3 and ev["pending_files"] == 0
        assert p.p.wait(LIMIT) == 0
        rnd, got = restore_only(env, uri, tmp_path / "dst")
        assert rnd == 3
        assert got == {"model.pt": big, "sub/opt.pt": b"optimizer 2",
                       "last.txt": b"written just before the end"}
        out = subprocess.run([CLI, "ckpt", "ls", uri, "--json"], env=env,
                             capture_output=True, text=True, timeout=LIMIT)
        assert out.returncode == 0, out.stderr
        rounds = json.loads(out.stdout)
        assert [r["round"] for r in rounds] == [3, 2, 1]
        files = {f["path"]: f for f in rounds[0]["files"]}
        assert files["model.pt"]["size"] == len(big)
        assert files["model.pt"]["sha256"] == hashlib.sha256(big).hexdigest()
    finally:
        srv.close()


def test_kill9_syncer(tmp_path):
    trials = int(os.environ.get("SPOTRUN_CRASH_TRIALS",
                                "20" if ASAN else "50"))
    seed = int(os.environ.get("SPOTRUN_SEED", "30"))
    print("kill9 syncer: %d trials, SPOTRUN_SEED=%d" % (trials, seed))
    rnd = random.Random(seed)
    srv = S3rver()
    try:
        env = env_for(srv)
        uri = "s3://ckpt/crash"
        written = {}        # trial -> {path: sha256}
        round_trial = {}    # committed round -> trial
        best = -1           # newest round reported committed
        points = ["object", "manifest", "retention"]
        mid_round = restored_older = 0
        for t in range(trials):
            local = tmp_path / ("n%d" % t)  # a fresh node every time
            point = points[t // 5 % 3] if t % 5 == 4 else None
            # the syncer the node agent runs (spotrun-agent --dirsync),
            # rounds only when told; the named points need the helper
            # (the same loop with a test hook that stops there)
            p = Proc([HELPER, str(local), uri, point] if point else
                     [AGENT, "--dirsync", str(local), "--uri", uri,
                      "--quiet", "1h", "--poll", "1h", "--keep", "2"], env)
            _, ev = p.until(lambda l, e: e.get("event") == "restored")
            got = tree(local)
            r = ev["round"]
            # a whole round: exactly one trial's files, all of them
            assert r >= best, "trial %d: restored round %d < committed %d" % (
                t, r, best)
            if r == -1:
                assert got == {} and best == -1
            else:
                digests = {k: hashlib.sha256(v).hexdigest()
                           for k, v in got.items()}
                match = [s for s, w in written.items() if w == digests]
                assert match, "trial %d: round %d is no trial's whole " \
                    "set: %s" % (t, r, sorted(got))
                round_trial.setdefault(r, match[0])
                assert round_trial[r] == match[0]
                restored_older += r < max(round_trial)
            # this trial's writes: 1-3 files, one 6 MiB now and then
            for f in list(got):
                os.unlink(local / f)
            files = {}
            for i in range(rnd.randint(1, 3)):
                size = (6 << 20) if (i == 0 and t % 3 == 0) else \
                    rnd.randint(0, 200 << 10)
                data = (b"trial %d file %d|" % (t, i)) + os.urandom(size)
                name = "ckpt/f%d.bin" % i if i else "model-%d.pt" % (t % 4)
                (local / name).parent.mkdir(parents=True, exist_ok=True)
                (local / name).write_bytes(data)
                files[name] = hashlib.sha256(data).hexdigest()
            written[t] = files
            p.send("sync\n")
            if not point and t % 7 == 3:
                # the agent dies (its end of the pipe closes): the syncer
                # makes its final round, and the node dies soon after
                time.sleep(rnd.uniform(0.0, 0.2))
                p.p.stdin.close()
            end = time.monotonic() + (LIMIT if point else
                                      rnd.uniform(0.0, 0.6))
            while True:
                try:
                    line = p.next(max(0.0, end - time.monotonic()))
                except queue.Empty:
                    break
                if line is None:
                    break
                ev = event(line)
                if ev.get("event") in ("round", "final") and ev["round"] > 0:
                    round_trial[ev["round"]] = t
                    best = max(best, ev["round"])
                if point and line.startswith("at " + point):
                    break
            p.p.kill()
            p.p.wait()
            mid_round += not any(event(x).get("event") in ("round", "final")
                                 for x in p.lines)
        # the end state restores too
        r, got = restore_only(env, uri, tmp_path / "final")
        assert r >= best
        digests = {k: hashlib.sha256(v).hexdigest() for k, v in got.items()}
        match = [s for s, w in written.items() if w == digests]
        assert match, "final: round %d is no trial's whole set: %s" % (
            r, sorted(got))
        # a round nobody reported was committed by the last trial after
        # the test stopped reading its output (no later trial restored it)
        assert round_trial.get(r, trials - 1) == match[0], (
            "final: round %d holds trial %d's files" % (r, match[0]))
        print("kill9 syncer: %d trials, %d killed before their round "
              "committed, newest round %d" % (trials, mid_round, best))
        assert mid_round >= trials // 5  # the named points at least
    finally:
        srv.close()


def test_sync_now_takes_a_round_at_once(tmp_path, monkeypatch):
    """spotrun.sync_now() (the workload's side of the contract): with a
    quiet time of an hour, the new file is committed only because it was
    asked for, and sync_now() returns once it is.  Then the signal
    contract: SIGUSR2 to the syncer ($SPOTRUN_SYNC_PIDS) takes a round."""
    import spotrun
    srv = S3rver()
    try:
        env = env_for(srv)
        uri = "s3://ckpt/now"
        src = tmp_path / "src"
        req, ans = tmp_path / "req.json", tmp_path / "ans.json"
        p = Proc([AGENT, "--dirsync", str(src), "--uri", uri, "--quiet",
                  "1h", "--request", str(req), "--answer", str(ans)], env)
        p.until(lambda l, e: e.get("event") == "restored")
        (src / "ckpt-1.pt").write_bytes(b"one")
        monkeypatch.setenv("SPOTRUN_SYNC_REQUEST", str(req))
        monkeypatch.setenv("SPOTRUN_SYNC_ANSWERS", str(ans))
        monkeypatch.setenv("SPOTRUN_SYNC_PIDS", str(p.p.pid))
        assert spotrun.sync_now(timeout=LIMIT) == {str(ans): 1}
        _, ev = p.until(lambda l, e: e.get("event") == "round")
        assert ev["round"] == 1 and ev["files"] == 1
        (src / "ckpt-2.pt").write_bytes(b"two")
        os.kill(p.p.pid, signal.SIGUSR2)     # "my files are stable now"
        _, ev = p.until(lambda l, e: e.get("event") == "round")
        assert ev["round"] == 2 and ev["files"] == 2
        p.send("final\n")
        assert p.p.wait(LIMIT) == 0
        monkeypatch.delenv("SPOTRUN_SYNC_ANSWERS")
        assert spotrun.sync_now() is None  # no bucket mount: nothing to do
    finally:
        srv.close()
