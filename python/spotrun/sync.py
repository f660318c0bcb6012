"""Bucket mounts (docs/jobs.md "Bucket mounts"): ask the node's syncers
for a round now, and wait until it is committed.

    import spotrun
    torch.save(state, "/checkpoint/ckpt-1000.pt")
    spotrun.sync_now()          # the directory is in the bucket, whole

A script that never imports spotrun does not need this: its files are
uploaded once they have been quiet for a while (2 s by default).  This is
for a script that wants a checkpoint durable at once (before a risky step,
or as its last act), without waiting for the quiet time.

The agent names the request file ($SPOTRUN_SYNC_REQUEST) and one answer
file per uploading mount ($SPOTRUN_SYNC_ANSWERS, ':'-separated); outside a
job with bucket mounts sync_now() returns None at once.  The syncers'
pids ($SPOTRUN_SYNC_PIDS) get SIGUSR2, which wakes them at once (a script
in another language may send only that: `kill -USR2 $SPOTRUN_SYNC_PIDS`
takes a round now, without an answer).
"""

import json
import os
import signal
import time

__all__ = ["sync_now", "SyncError"]


class SyncError(RuntimeError):
    """A round was asked for and failed, or did not come in time."""


def _read(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def sync_now(timeout=600.0):
    """Take a round of every bucket mount now (every file as it is) and
    wait until each is committed.  Returns {answer file: round} (None
    when the job has no bucket mount); raises SyncError when a round
    failed or `timeout` seconds passed."""
    req_path = os.environ.get("SPOTRUN_SYNC_REQUEST")
    answers = [p for p in os.environ.get("SPOTRUN_SYNC_ANSWERS", "").split(":")
               if p]
    if not req_path or not answers:
        return None
    old = _read(req_path) or {}
    n = max(int(old.get("request", 0)) + 1, time.time_ns())
    tmp = "%s.tmp.%d" % (req_path, os.getpid())
    with open(tmp, "w") as f:
        json.dump({"request": n}, f)
    os.replace(tmp, req_path)
    for pid in os.environ.get("SPOTRUN_SYNC_PIDS", "").split():
        try:
            os.kill(int(pid), signal.SIGUSR2)   # wake it: no poll to wait
        except (ValueError, OSError):
            pass                                # it reads the file anyway
    end = time.monotonic() + timeout
    done = {}
    while len(done) < len(answers):
        for p in answers:
            a = _read(p)
            if p in done or not a or int(a.get("request", 0)) < n:
                continue
            if a.get("error"):
                raise SyncError("%s: %s" % (p, a["error"]))
            done[p] = a.get("round")
        if len(done) == len(answers):
            break
        if time.monotonic() > end:
            raise SyncError("no round within %.0f s (answered: %d of %d)" % (
                timeout, len(done), len(answers)))
        time.sleep(0.05)
    return done
