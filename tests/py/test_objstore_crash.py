"""kill -9 of the tier-3 uploader at random points, against s3rver.

tests/helpers/ckpt_uploader saves checkpoints with tier 3 as fast as it
can; each trial kills it after a random delay (anywhere in a shard's
multipart upload, between shards, around the manifest PUT, in retention)
and then checks the store:

  * every committed checkpoint (a manifest) names shards that exist with
    the recorded sizes and header checksums (opening it succeeds);
  * a restore yields the newest committed step, complete: every byte
    verified against the manifest's XXH3 and equal to that step's state;
  * a step the library reported in the store (spotckpt_remote_stats, the
    helper's "stored N") is really there: the store restores it or newer.

Every fifth trial kills at a named point instead (the helper stops there:
a shard confirmed, every shard confirmed but no manifest, an old step's
manifest deleted by retention but not its shards), so each run covers
the states between a step's first object and its manifest whatever the
machine's speed.

The next trial restarts the uploader from the following step, so the
store accumulates leftovers of killed uploads, which retention must clean
without ever hiding a complete checkpoint.  50 trials here (20 under
ASan, which is slower per trial); SPOTRUN_CRASH_TRIALS overrides it
(make soak runs 2,000).  SPOTRUN_SEED picks the kill delays (printed).
"""

import ctypes
import os
import random
import selectors
import shutil
import subprocess
import time

import numpy as np
import pytest

import spotrun
from spotrun import _lib
from objstore_servers import S3rver

ASAN = os.environ.get("SPOTRUN_CHECK_MODE") == "asan"
BUILD = os.environ.get("SPOTRUN_BUILD", "build")
W_N, B_N = 3 << 19, 8 << 10


def expected(step):
    w = ((step * 7 + np.arange(W_N, dtype=np.int64)) % 1000003)
    return w.astype(np.float32), step * 1000 + np.arange(B_N, dtype=np.int64)


def restore_newest(lib, uri):
    """Open the newest valid checkpoint, read it (every tensor checked
    against its XXH3 on the way) and return (step, w, b)."""
    r = ctypes.c_void_p()
    rc = lib.spotckpt_reader_open(uri.encode(), _lib.NEWEST, _lib.NEWEST,
                                  0, ctypes.byref(r))
    if rc == -_lib.ENOTFOUND:
        return None, None, None
    _lib.check(rc, "open " + uri)
    try:
        step = lib.spotckpt_reader_step(r)
        w = np.empty(W_N, dtype=np.float32)
        b = np.empty(B_N, dtype=np.int64)
        idx = {}
        ti = _lib.TensorInfo()
        for i in range(lib.spotckpt_reader_ntensors(r)):
            lib.spotckpt_reader_tensor(r, i, ctypes.byref(ti))
            idx[ti.name.decode()] = i
        dests = (_lib.Dest * 2)(
            _lib.Dest(idx["w"], w.ctypes.data, w.nbytes, 0, 0),
            _lib.Dest(idx["b"], b.ctypes.data, b.nbytes, 0, 0))
        _lib.check(lib.spotckpt_reader_read_all(r, dests, 2), "read")
        return step, w, b
    finally:
        lib.spotckpt_reader_close(r)


def settle(uri):
    """The listing once it stops changing: requests the killed process had
    fully sent may still be finishing inside the server."""
    prev = spotrun.list_checkpoints(uri)
    while True:
        time.sleep(0.05)
        cur = spotrun.list_checkpoints(uri)
        if cur == prev:
            return cur
        prev = cur


@pytest.mark.parametrize("mode", ["save", "final"])
def test_kill9_uploader(tmp_path, monkeypatch, mode):
    """mode "final": every step a final save straight from memory into
    the store (no tier 2), the upload in the saving thread; half the
    trials."""
    lib = _lib.lib()
    srv = S3rver()
    try:
        env = dict(os.environ, **srv.env())
        env["SPOTRUN_OBJSTORE_PART_MB"] = "5"
        env["SPOTRUN_LOG_LEVEL"] = "error"
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)
        uri = "s3://ckpt/crash"
        helper = os.path.join(BUILD, "tests", "helpers", "ckpt_uploader")
        trials = int(os.environ.get("SPOTRUN_CRASH_TRIALS",
                                    "20" if ASAN else "50"))
        if mode == "final":
            trials = max(1, trials // 2)
        seed = int(os.environ.get("SPOTRUN_SEED", "12"))
        print("kill9 uploader: %d trials, SPOTRUN_SEED=%d" % (trials, seed))
        rnd = random.Random(seed)
        step, best = 0, -1
        mid_upload = torn = reported = at_points = 0
        points = ["shard", "manifest", "retention"]
        torn_seen = set()  # steps first seen torn as the newest listed
        for trial in range(trials):
            local = tmp_path / ("n%d" % trial)  # a fresh node every time
            point = points[trial // 5 % 3] if trial % 5 == 4 else None
            how = "final" if mode == "final" else str(trial % 2)
            p = subprocess.Popen([helper, str(local), uri, str(step),
                                  how] + ([point] if point else []),
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=env,
                                 bufsize=0)
            # unbuffered: readline() takes only its line, so communicate()
            # below gets every later one ("stored N" right after "saved")
            line = p.stdout.readline().decode()
            assert line.strip() == "ready", p.stderr.read()
            early = []  # lines read before the kill
            if point:
                # the kill at that point of the protocol
                sel = selectors.DefaultSelector()
                sel.register(p.stdout, selectors.EVENT_READ)
                while not early or not early[-1].startswith("at "):
                    assert sel.select(timeout=120), \
                        "trial %d: the uploader never reached '%s'" % (
                            trial, point)
                    early.append(p.stdout.readline().decode())
                    assert early[-1], "trial %d: %s" % (trial, p.stderr.read())
            elif trial % 2 or mode == "final":
                # waiting mode: let one upload commit first, so that slow
                # runs (ASan, a loaded box) still commit; the kill then
                # lands in a later one
                sel = selectors.DefaultSelector()
                sel.register(p.stdout, selectors.EVENT_READ)
                assert sel.select(timeout=120), "no upload committed in 120 s"
                first = p.stdout.readline().decode()
                assert first.startswith("saved "), "trial %d: %r" % (trial, first)
                step = int(first.split()[1]) + 1  # the next one to save
            delay = rnd.uniform(0.0, 0.25)  # drawn each trial: same seed,
            if not point:                   # same delays
                time.sleep(delay)
            p.kill()
            out, err = (x.decode(errors="replace") for x in p.communicate())
            out = "".join(early) + out
            at_points += point is not None
            assert p.returncode == -9, "trial %d: %s" % (trial, err)
            shutil.rmtree(local, ignore_errors=True)  # the node is gone
            # the next uploader starts after the newest step this one saved
            saved = [step - 1] + [int(x.split()[1]) for x in out.split("\n")
                                  if x.startswith("saved ")]
            step = saved[-1] + 1
            # the newest step the library said was in the store
            stored = max([-1] + [int(x.split()[1]) for x in out.split("\n")
                                 if x.startswith("stored ")])
            # every manifest names complete shards.  s3rver writes a PUT
            # body in place, so a kill during the manifest PUT can leave
            # a torn manifest object (S3 itself never shows one); the
            # manifest's own checksum rejects it.  A manifest is torn only
            # while it is the newest listed step; it stays listed (below a
            # newer sound one) until a later uploader's retention deletes
            # it, and a kill can land before that retention runs.
            ents = settle(uri)
            # never reuse a step the store has seen: a rewrite of a
            # committed step's objects is not atomic on s3rver
            step = max([step] + [e["step"] + 1 for e in ents])
            listed = [e["step"] for e in ents if e["committed"]]
            mid_upload += len(ents) > len(listed)
            committed = []
            for i, s in enumerate(listed):
                r = ctypes.c_void_p()
                rc = lib.spotckpt_reader_open(uri.encode(), s, 0, 0,
                                              ctypes.byref(r))
                msg = lib.spotckpt_errmsg().decode()
                lib.spotckpt_reader_close(r)
                if ((i == 0 or s in torn_seen) and
                        -rc in (_lib.EPARSE, _lib.ECORRUPT,
                                _lib.ECHECKSUM) and
                        "/manifest.json: " in msg):
                    torn += s not in torn_seen
                    torn_seen.add(s)
                    continue
                assert rc == 0, "trial %d: manifest of step %d points at " \
                    "a missing or partial shard: %s" % (trial, s, msg)
                committed.append(s)
            # the restore is the newest committed, complete and exact
            got, w, b = restore_newest(lib, uri)
            # a step reported in the store is really there: the store
            # restores it or a newer one
            assert got is not None and got >= stored or stored < 0, \
                "trial %d: reported step %d in the store, it restores %r" \
                % (trial, stored, got)
            reported += stored >= 0
            if committed:
                assert got == committed[0], (trial, got, committed)
                ew, eb = expected(got)
                assert np.array_equal(w, ew) and np.array_equal(b, eb)
                assert got >= best  # commits never go backwards
                best = got
            else:
                assert got is None
            if trials >= 1000 and (trial + 1) % 100 == 0:
                # the long run (make soak) says how far it got
                print("trial %d/%d: newest committed step %d" %
                      (trial + 1, trials, best), flush=True)
        assert best >= 0, "no upload ever committed in %d trials" % trials
        # kills landed mid-upload (objects of a step, no manifest): at
        # least every kill at a named point (each leaves such a step)
        assert mid_upload >= at_points and mid_upload > 0 or trials < 5, \
            (mid_upload, at_points)
        # and the check above ran on steps the library reported
        assert reported > 0
        print("trials=%d at_points=%d mid_upload=%d torn_manifests=%d "
              "reported=%d newest=%d seed=%d" % (trials, at_points, mid_upload,
                                                 torn, reported, best, seed))
    finally:
        srv.close()
