"""A kept node's copy of its final part, in memory (issue 33, training
through the lead): the next attempt on the same node restores its part of
the final step from there instead of the object store.

WHY.  On a notice every rank's final part goes from staging memory
straight to the store (dist.py, _final_store_only): nothing reaches the
node's disk.  The noticed node goes; the kept nodes run the next attempt
a few seconds later and restore the very step they just put - from the
store, all of it, while the replacement reads its part beside them.  So a
kept rank, once its part is in the store and its marker queued, also
writes an exact copy of what it put (the staging image's shard files and
the same manifest bytes: Checkpointer.final_keep, lib/ckpt/final_keep.c)
into

    KEEP/<part>/step-SSSSSSSS/     KEEP: $SPOTRUN_FINAL_KEEP_DIR, else
                                   /dev/shm/spotrun-keep-<uid>/<key>, key:
                                   a hash of the rank's tier-2 directory

and the restore reads it first (restore_sources: "kept copy").

WHO.  A rank whose own node has no notice of its own: the agent writes
the notice file (with the cloud's deadline) for a noticed node, and
signals a kept node's workload with the gang's `stop` alone
(preemption.node_noticed()).  A noticed rank writes no copy: its node
goes.  Outside the agent ($SPOTRUN_NOTICE_FILE unset) a process cannot
tell the two apart, and writes none unless DistCheckpointer(final_keep=
True).  Off with $SPOTRUN_FINAL_KEEP=0 or final_keep=False; skipped
(logged) when the part does not fit KEEP's free space, or twice the part
does not fit the node's available memory (the restore needs it again).

TRUST.  The copy is used only when its manifest's SHA-256 is the one
the global commit record names, and the engine's restore verifies every
tensor against that manifest; a copy missing, of another step or
damaged is refused with a warning and the next source is read (the
store).  restore() removes the node's copies at its end, whatever it
read; each write also removes the copies under the default root not
touched for a day (a node whose next attempt never came, on a machine
that holds several: the local cloud).
"""

import hashlib
import json
import logging
import os
import shutil
import time

from . import _lib
from . import preemption as _preemption
from .dist_peer import mem_available

log = logging.getLogger("spotrun")
ENV = "SPOTRUN_FINAL_KEEP"
DIR_ENV = "SPOTRUN_FINAL_KEEP_DIR"
SHM = "/dev/shm"
OWNER = "owner"   # the tier-2 directory a KEEP belongs to
STALE_S = 24 * 3600


def enabled(option):
    """The DistCheckpointer option final_keep: True or False as given;
    None: False when $SPOTRUN_FINAL_KEEP is 0, else None (on under the
    agent, see write())."""
    if option is not None:
        return bool(option)
    if os.environ.get(ENV, "1").strip() in ("0", "false", "no", ""):
        return False
    return None


def keep_dir(owner_dir):
    """KEEP for the tier-2 directory owner_dir, or None (no tmpfs)."""
    d = os.environ.get(DIR_ENV)
    if d:
        return d
    if not os.path.isdir(SHM):
        return None
    key = hashlib.sha256(os.path.realpath(owner_dir).encode()).hexdigest()
    return os.path.join(_root(), key[:16])


def _root():
    return os.path.join(SHM, "spotrun-keep-%d" % os.getuid())


def _part_bytes(manifest):
    try:
        m = json.loads(manifest)
        return sum(int(s["bytes"]) for s in m["shards"]) + len(manifest)
    except (ValueError, KeyError, TypeError):
        return None


def _fits(base, need):
    """Whether `need` bytes fit KEEP's file system and, beside them, the
    node's available memory (a restore's buffers)."""
    try:
        st = os.statvfs(base)
        free = st.f_bavail * st.f_frsize
    except OSError:
        return False
    avail = mem_available()
    return need <= free and (avail is None or 2 * need <= avail)


def _sweep_stale(mine):
    """Remove the default root's copies, other than `mine`, not touched
    for STALE_S: left by a node whose next attempt never came (on a
    machine that holds several nodes, the local cloud's).  Not by
    whether their tier-2 directory exists: another node's directory may
    be out of this workload's sight (its isolation)."""
    root = _root()
    try:
        names = os.listdir(root)
    except OSError:
        return
    old = time.time() - STALE_S
    for n in names:
        d = os.path.join(root, n)
        if d == mine:
            continue
        try:
            if os.stat(os.path.join(d, OWNER)).st_mtime < old:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            continue


def write(o, named, step):
    """Rank o (a DistCheckpointer) put step's parts `named` ([(part,
    engine)]) straight into the store: keep a copy of each in KEEP when
    this node has no notice of its own.  Never raises: a copy not made
    only means a restore from the store."""
    if o._keep is False or _preemption.node_noticed():
        return
    if o._keep is None and not os.environ.get("SPOTRUN_NOTICE_FILE"):
        return   # not under the agent: kept or noticed, no telling
    base = keep_dir(o.dir)
    if base is None:
        return
    if not os.environ.get(DIR_ENV):
        _sweep_stale(base)
    try:
        os.makedirs(base, exist_ok=True)
        with open(os.path.join(base, OWNER), "w") as f:
            f.write(os.path.realpath(o.dir))
    except OSError as exc:
        log.warning("final step %d: no local copy (%s): %s", step, base,
                    exc)
        return
    for name, c in named:
        m = c.final_manifest(step)
        need = None if m is None else _part_bytes(m)
        if need is None:
            log.warning("final step %d: no local copy of %s: not put "
                        "straight into the store", step, name)
            continue
        if not _fits(base, need):
            log.warning("final step %d: no local copy of %s (%d MiB): it "
                        "does not fit %s and the node's memory", step, name,
                        need >> 20, base)
            continue
        d = os.path.join(base, name)
        try:
            os.makedirs(d, exist_ok=True)
            for old in os.listdir(d):   # one step per part
                shutil.rmtree(os.path.join(d, old), ignore_errors=True)
            c.final_keep(step, d)
        except (OSError, _lib.CheckpointError) as exc:
            log.warning("final step %d: no local copy of %s: %s", step,
                        name, exc)
            shutil.rmtree(d, ignore_errors=True)


def part_dir(o, name):
    """Where this node's copy of part `name` lies (its step-SSSSSSSS
    directories), or None when copies are off or there is no KEEP.  The
    restore (dist_remote.RemoteCommit.load_part) reads it first, when its
    manifest's digest is the commit record's."""
    if o._keep is False:
        return None
    base = keep_dir(o.dir)
    return None if base is None else os.path.join(base, name)


def drop(o):
    """Remove this node's copies (after a restore, whatever it read)."""
    base = keep_dir(o.dir)
    if base is None or o._keep is False:
        return
    for name, _ in o._named([c for c in (o._repl, o._own) if c is not None]):
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    if not os.environ.get(DIR_ENV):
        try:
            if os.listdir(base) == [OWNER]:   # other ranks' parts: theirs
                os.unlink(os.path.join(base, OWNER))
                os.rmdir(base)
        except OSError:
            pass
