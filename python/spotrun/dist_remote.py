"""Multi-rank checkpoints on an object store (tier 3): the global commit
of spotrun.DistCheckpointer when it is given `remote` (an s3://, gs://,
az:// or file:// URI).  Each node keeps its tier 2 on its own disk; the
object store is the only place the ranks share.

LAYOUT (under the URI; each rank's engine uploads its own part through
the engine's tier-3 uploader, lib/objstore/tier3.c)
    replicated/step-SSSSSSSS/...       rank 0's replicated part
    rank-RRRRR/step-SSSSSSSS/...       rank R's shards (if any)
    global/step-SSSSSSSS/rank-RRRRR.json   rank R's "prepared" marker
    global/step-SSSSSSSS.commit            the global commit record
Every part is an engine checkpoint: its shards first, its manifest.json
last (the engine's commit point in the store).  Markers and records are
single-object PUTs, atomic on every store.

COMMIT PROTOCOL (per step S; no collective, so a dead rank blocks no one)

   every rank R                                  rank 0 (also a rank R)
   ------------                                  ------
   STAGED    tier-1 copy; save() returns
     |
   DURABLE   engine commit in the node's dir
     |       (background thread); S queued for
     |       the tier-3 committer.  Training
     |       goes on: nothing below waits for it.
     v
   UPLOADED  each of R's engines reports S
     |       uploaded, and the store's
     |       PART/step-S/manifest.json has the
     |       SHA-256 of the local one
     v
   PREPARED  PUT global/step-S/rank-R.json  -->  WAITING  LIST global/step-
             (shards, attempt, the digest of        |     until W markers of
              each part's manifest)                 |     this attempt/world
                                                    v
                                                 COMMITTED PUT
                                                   global/step-S.commit
                                                   (every rank's shards and
                                                    part digests), then
                                                   retention
   A step whose upload an engine superseded (a newer one was offered
   before it started) or failed is dropped at UPLOADED: it gets no marker
   and is never committed; the next step goes on.  Rank 0 gives a
   candidate up after commit_timeout, or when a newer step commits.

   save_final(S): each engine's part straight from staging memory into
   the store, in the caller's thread (its tier 2 is not written: the
   node's disk goes with the node; final_local_copy=True writes tier 2
   first and flushes its upload, as a periodic step), an older upload
   in progress cancelled; DURABLE's digest is then that of the manifest
   the engine put (Checkpointer.final_manifest), and UPLOADED follows
   at once; every rank waits until the record of S exists (or the
   deadline / commit_timeout passes): True on every rank only if S is
   committed.  A part's upload that fails or is late leaves no
   manifest, so no marker: S is never committed.

WHY A CRASH IS SAFE.  A kill -9 of any rank before rank 0's record PUT
leaves no record: a restore never sees S, whatever parts of it are in
the store.  The record names each part by the SHA-256 of its manifest:
a part overwritten later (an old attempt's step of the same number) no
longer matches, and the step is skipped rather than mixed.  Retention
(rank 0, after a commit) deletes records beyond `keep` first, then, for
every rank, the parts and markers of steps older than the oldest kept
record (manifests before shards): a record never names a missing part.
The engines' own tier-3 retention keeps every committed part
(SPOTCKPT_REMOTE_KEEP_ALL): the records decide what lives.

RESTORE on any node: the newest record (LIST global/step-), each part
read from this node's copy of its final part in memory (dist_keep.py) or
its tier 2 when either holds the same manifest (a kept node), else
straight from the store; then every rank's leftovers newer
than the restored step are deleted from the store and the node's disk,
before its engines start uploading (they are attached at the first
save, and never re-upload what the node's disk held before).
"""

import hashlib
import json
import logging
import os
import re
import threading
import time

from . import _lib
from . import checkpoint as _ckpt
from . import dist_keep as _keep
from .objects import ObjectStore

log = logging.getLogger("spotrun")
REC_RE = re.compile(r"global/step-(\d{8,})\.commit")
MARK_RE = re.compile(r"global/step-(\d{8,})/rank-(\d{5,})\.json")
PART_RE = re.compile(r"(replicated|rank-\d{5,})/step-(\d{8,})/(.+)")
POLL_S = 0.05
FLUSH_S = 0.5   # a final upload's wait, between looks at an abandon


def digest(data):
    return hashlib.sha256(data).hexdigest()


def local_digest(engine_dir, step):
    """SHA-256 of step's manifest in a node-local engine dir, or None."""
    try:
        with open(os.path.join(engine_dir, "step-%08d" % step,
                               "manifest.json"), "rb") as f:
            return digest(f.read())
    except OSError:
        return None


def record_key(step):
    return "global/step-%08d.commit" % step


def marker_key(step, rank):
    return "global/step-%08d/rank-%05d.json" % (step, rank)


def committed_steps(store):
    """Globally committed steps in the store, newest first."""
    return sorted((int(m.group(1)) for m in
                   map(REC_RE.fullmatch, store.list("global/step-")) if m),
                  reverse=True)


def marker_of(o, data, step, r):
    """Rank r's marker of step (bytes read from the store) as a dict when
    it belongs to DistCheckpointer o's attempt and world size, else
    None."""
    try:
        m = json.loads(data)
    except ValueError:
        return None
    if not isinstance(m, dict) or m.get("format") != o.FORMAT or \
            m.get("step") != step or m.get("rank") != r or \
            m.get("world_size") != o.world_size or \
            m.get("attempt") != o.attempt:
        return None
    return m


def _offer(holder, own):
    """holder, or (own given) a new holder whose "shards" start as own:
    the state's tensors, for the restore to fill in place.  A restore
    that fails leaves holder as it was."""
    if not own:
        return holder
    into = dict(holder)
    into["shards"] = dict(own)
    return into


class RemoteCommit:
    """The tier-3 side of one DistCheckpointer (`owner`): its engines'
    uploads, markers, records, retention and restore sources."""

    def __init__(self, owner, uri):
        self.o = owner
        self.uri = str(uri).rstrip("/")
        self.store = ObjectStore(self.uri)
        self.cv = threading.Condition()
        self.queue = {}      # step -> durable part info, not yet prepared
        self.cands = {}      # rank 0: prepared step -> give-up time
        self.settled = {}    # step -> True (committed/prepared) / False
        self.thread = None
        self.stop_at = None  # close(): drain until then
        self.attached = False

    def part_uri(self, name):
        return self.uri + "/" + name

    # -- lifetime ---------------------------------------------------------
    def attach(self, named):
        """Start tier 3 on this rank's engines (at the first save, after
        restore() cleaned the store) and the committer thread."""
        if self.attached:
            return
        self.attached = True
        for name, c in named:
            c.set_remote(self.part_uri(name), keep=_lib.REMOTE_KEEP_ALL,
                         backfill=False)
        self.thread = threading.Thread(target=self._run,
                                       name="spotrun-tier3-commit",
                                       daemon=True)
        self.thread.start()

    def close(self, drain_s):
        """Let the committer finish the queued steps (at most drain_s),
        then stop it."""
        if self.thread is not None:
            with self.cv:
                self.stop_at = time.monotonic() + drain_s
                self.cv.notify_all()
            self.thread.join()
            self.thread = None
        self.store.close()

    # -- saving -----------------------------------------------------------
    def durable(self, step, named, mine):
        """Step is durable in this node's engines `named`: queue it for
        the committer.  False if a part's manifest is not on disk."""
        parts = {}
        for name, c in named:
            d = local_digest(c.dir, step)
            if d is None:
                # a final part sent straight to the store (no tier 2)
                m = c.final_manifest(step)
                d = None if m is None else digest(m)
            if d is None:
                log.error("step %d: %s has no committed step on disk; not "
                          "uploaded", step, name)
                return False
            parts[name] = d
        with self.cv:
            self.queue[step] = {"named": list(named), "mine": mine,
                                "parts": parts, "ok": set()}
            self.settled.pop(step, None)
            self.cv.notify_all()
        return True

    def final(self, step, named, deadline):
        """save_final's tier-3 part: flush step's uploads, wait for its
        record.  True once the step is globally committed."""
        end = self.o._end()   # commit_timeout, or this node's deadline
        if deadline is not None:
            end = min(end, time.monotonic() + max(0.0, deadline - time.time()))
        for name, c in named:
            if not self._flush(c, step, end):
                log.error("final step %d: %s did not reach %s in time",
                          step, name, self.part_uri(name))
                return False
        return self.await_step(step, end)

    def _flush(self, c, step, end):
        """Engine c's upload of step, by `end`; in slices of FLUSH_S, so
        that a final step abandoned meanwhile (dist_final.py) stops the
        wait."""
        while step not in self.o._abandoned:
            left = end - time.monotonic()
            part = max(0.0, min(left, FLUSH_S))
            until = time.monotonic() + part
            if c.remote_wait(step, deadline=time.time() + part):
                return True
            if left <= FLUSH_S or time.monotonic() < until:
                return False   # out of time, or an error (not a wait)
        return False

    def await_step(self, step, end):
        """Wait (until time.monotonic() `end`) for step's global commit.
        True once its record is in the store."""
        with self.cv:
            self.cv.notify_all()
            while step not in self.settled and time.monotonic() < end \
                    and step not in self.o._abandoned:
                self.cv.wait(POLL_S)
            ok = self.settled.get(step)
        if not ok:
            return False
        if self.o.rank == 0:
            return True
        end = min(end, self.o._peer_end())   # rank 0's record: a peer's
        while time.monotonic() < end:
            if self.store.get(record_key(step)) is not None:
                return True
            time.sleep(POLL_S)
        log.error("step %d: prepared, but rank 0 did not commit it in "
                  "time", step)
        return False

    # -- the committer thread ----------------------------------------------
    def _run(self):
        while True:
            with self.cv:
                idle = not self.queue and not self.cands
                if self.stop_at is not None and (
                        idle or time.monotonic() >= self.stop_at):
                    if not idle:
                        log.error("tier 3: steps %s not committed at close",
                                  sorted(set(self.queue) | set(self.cands)))
                    return
                if idle:
                    self.cv.wait()
                    continue
            try:
                self._pass()
            except Exception as exc:   # a store error: logged, retried
                log.error("tier-3 commit: %s", exc)
            with self.cv:
                self.cv.wait(POLL_S)

    def _settle(self, step, ok):
        with self.cv:
            self.settled[step] = ok
            for s in sorted(self.settled)[:-16]:
                del self.settled[s]
            self.cv.notify_all()

    def _pass(self):
        with self.cv:
            work = sorted(self.queue.items())
        for step, info in work:
            verdict = self._uploaded(step, info)
            if verdict is None:
                continue
            with self.cv:
                del self.queue[step]
            if not verdict or step in self.o._abandoned:
                # abandoned: it can never commit, so no marker
                self._settle(step, False)
                continue
            self.o._hook("uploaded", step)
            o = self.o
            self.store.put(marker_key(step, o.rank), json.dumps({
                "format": o.FORMAT, "step": step, "rank": o.rank,
                "world_size": o.world_size, "attempt": o.attempt,
                "shards": info["mine"], "parts": info["parts"]}).encode())
            o._hook("prepared", step)
            if o.rank == 0:
                with self.cv:
                    self.cands[step] = time.monotonic() + o.commit_timeout
            else:
                self._settle(step, True)
        if self.o.rank == 0 and self.cands:
            self._try_commit()

    def _uploaded(self, step, info):
        """True: every part of step is in the store with this node's
        manifest; None: an upload of it is still to come; False: it
        never will be (superseded, failed, tier 3 off)."""
        for name, c in info["named"]:
            if name in info["ok"]:
                continue
            st = c.remote_stats()
            if not st["enabled"]:
                return False
            if st["uploaded_step"] >= step:
                data = self.store.get("%s/step-%08d/manifest.json"
                                      % (name, step))
                if data is None or digest(data) != info["parts"][name]:
                    return False
                info["ok"].add(name)
            elif step in (st["uploading_step"], st["pending_step"]):
                return None
            else:
                return False
        return True

    def _try_commit(self):
        o = self.o
        have = {}
        for k in self.store.list("global/step-"):
            m = MARK_RE.fullmatch(k)
            if m:
                have.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
        with self.cv:
            cands = sorted(self.cands, reverse=True)
        for step in cands:
            if not set(range(o.world_size)) <= have.get(step, set()):
                continue
            marks = [self._marker(step, r) for r in range(o.world_size)]
            if any(m is None for m in marks):
                continue   # another attempt's marker, not replaced yet
            o._hook("before_commit", step)
            rec = {"format": o.FORMAT, "step": step,
                   "world_size": o.world_size, "attempt": o.attempt,
                   "ranks": [{"rank": r, "shards": marks[r]["shards"],
                              "parts": marks[r]["parts"]}
                             for r in range(o.world_size)]}
            self.store.put(record_key(step),
                           json.dumps(rec, separators=(",", ":")).encode())
            with self.cv:
                for s in [s for s in self.cands if s <= step]:
                    del self.cands[s]
                    self.settled[s] = s == step
                self.cv.notify_all()
            self._retain()
            break
        now = time.monotonic()
        gang = o._peer_end()   # a noticed peer's marker: by then or never
        with self.cv:
            late = [s for s, t in self.cands.items() if now >= min(t, gang)]
        for s in late:
            log.error("step %d not committed: not every rank prepared it "
                      "within %.0f s or by the gang's notice deadline", s,
                      o.commit_timeout)
            with self.cv:
                del self.cands[s]
            self._settle(s, False)

    def _marker(self, step, r):
        data = self.store.get(marker_key(step, r))
        return None if data is None else marker_of(self.o, data, step, r)

    def _retain(self):
        """Records beyond `keep` first, then every part and marker of the
        steps older than the oldest kept record (manifests first)."""
        keys = self.store.list("")
        recs = sorted((int(m.group(1)) for m in map(REC_RE.fullmatch, keys)
                       if m), reverse=True)
        keep = max(1, self.o.keep)
        self.store.delete([record_key(s) for s in recs[keep:]])
        if not recs:
            return
        oldest = recs[:keep][-1]
        manifests, rest = [], []
        for k in keys:
            m = PART_RE.fullmatch(k)
            if m and int(m.group(2)) < oldest:
                (manifests if m.group(3) == "manifest.json" else
                 rest).append(k)
            m = MARK_RE.fullmatch(k)
            if m and int(m.group(1)) < oldest:
                rest.append(k)
        self.store.delete(manifests)
        self.store.delete(rest)

    # -- restoring --------------------------------------------------------
    def committed_steps(self):
        return committed_steps(self.store)

    def record(self, step):
        data = self.store.get(record_key(step))
        if data is None:
            raise _lib.CheckpointError(-_lib.ENOTFOUND, "%s/%s" % (
                self.uri, record_key(step)), "the record was deleted")
        return json.loads(data)

    def load_part(self, name, step, holder, want, own=None):
        """Restore part `name` of step into holder: from this node's own
        copy (its kept copy in memory, then its tier 2) when it holds the
        manifest the record names, else a peer's, else the store (whose
        manifest must be that one).  own: {shard name: the state's own
        tensor} that a read of the kept copy fills in place (a tmpfs,
        read through its files mapped, no fresh memory); the other
        sources read into new tensors, which the caller copies in: in
        place, their all-or-nothing needs a fresh image or undo buffer
        as large (transparent huge pages: 0.16-1.4 CPU-s per 512 MiB from
        the store against 0.50-0.53 into new tensors, bench/
        part_restore.py)."""
        src = self.o.restore_sources
        # this node's own copies first: a kept node's final part in RAM
        # (dist_keep.py; one that is not the record's part is worth a
        # warning), then its tier 2
        # (where, what, warn when not the record's part, read in place)
        for where, what, warn, mine in ((_keep.part_dir(self.o, name),
                                         "kept copy", True, own),
                                        (os.path.join(self.o.dir, name),
                                         "tier 2", False, None)):
            if where is None or want is None:
                continue
            got = local_digest(where, step)
            if got != want:
                if got is not None and warn:
                    log.warning("%s step %d: this node's %s is not the "
                                "part the commit record names", name,
                                step, what)
                continue
            into = _offer(holder, mine)
            try:
                if _ckpt.restore(where, into, step=step) == step:
                    holder.update(into)
                    src[name] = what
                    return
                log.warning("%s step %d: this node's %s unreadable, "
                            "reading the store", name, step, what)
            except (_lib.CheckpointError, ValueError) as exc:
                log.warning("%s step %d: this node's %s unusable, reading "
                            "the store: %s", name, step, what, exc)
        peers = self.o._peers   # a held copy or a peer's (dist_peer.py)
        if peers is not None and want is not None:
            got = peers.load(name, step, holder, want)
            if got is not None:
                src[name] = got
                return
        data = self.store.get("%s/step-%08d/manifest.json" % (name, step))
        if data is None or (want is not None and digest(data) != want):
            raise _lib.CheckpointError(
                -_lib.ENOTFOUND, "%s step %d" % (self.part_uri(name), step),
                "missing, or not the part the commit record names")
        if _ckpt.restore(self.part_uri(name), holder, step=step) != step:
            raise _lib.CheckpointError(-_lib.ENOTFOUND, "%s step %d"
                                       % (self.part_uri(name), step))
        src[name] = "store"

    def drop_after(self, lim, names):
        """Delete this rank's parts (`names`) and markers newer than lim
        from the store; rank 0 also the records newer than lim (they
        could not be restored)."""
        keys = self.store.list("")
        o = self.o
        recs, manifests, rest = [], [], []
        for k in keys:
            m = REC_RE.fullmatch(k)
            if m and o.rank == 0 and int(m.group(1)) > lim:
                recs.append(k)
            m = PART_RE.fullmatch(k)
            if m and m.group(1) in names and int(m.group(2)) > lim:
                (manifests if m.group(3) == "manifest.json" else
                 rest).append(k)
            m = MARK_RE.fullmatch(k)
            if m and int(m.group(2)) == o.rank and int(m.group(1)) > lim:
                rest.append(k)
        self.store.delete(recs)
        self.store.delete(manifests)
        self.store.delete(rest)
