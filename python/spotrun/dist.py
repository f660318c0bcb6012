"""Multi-rank checkpoints: every rank of a torch.distributed job saves its
part of a step, and a step is used only once every rank's part is durable.

LAYOUT (under the Checkpointer's `dir`, shared by all ranks)
    replicated/            rank 0's engine: the state's tree and every
                           replicated tensor (DDP parameters), stored once
    rank-RRRRR/            rank R's engine: its Shard tensors, if any
    global/step-SSSSSSSS/rank-RRRRR.json   rank R's "prepared" marker
    global/step-SSSSSSSS.commit            the global commit record

COMMIT PROTOCOL (two phases over the storage itself; no collective, so a
dead rank cannot hang the others)

      every rank R                              rank 0
      -----------                               ------
      SAVING   engine save of R's tensors
         |     (tier 1, then tier 2)
         v
      DURABLE  engine commit of step S done
         |     (its files and dir fsync'ed)
         v
      PREPARED marker rank-R.json written   --> WAITING  for the markers of
               (tmp, fsync, rename,                 |    ranks 0..W-1, same
                fsync dir)                          |    step, world, attempt
                                                    v
                                               COMMITTED step-S.commit
                                                 (tmp, fsync, rename,
                                                  fsync dir)
      save() returns after the tier-1 copy (SAVING); DURABLE ->
      PREPARED -> COMMITTED run in a background thread, one step at a
      time (the next save() first waits for the previous step's commit,
      which is done long before in a job that checkpoints every few
      steps).  save_final() runs them all in the caller's thread.
      A crash anywhere before COMMITTED leaves no record: restore never
      sees step S, whatever parts of it are on disk, and takes the newest
      step that has one.  Rank 0 waits at most `commit_timeout` seconds,
      and never past a preemption notice's deadline (its own, or the
      gang's earliest, which should_checkpoint() shares: a noticed rank's
      marker is in by then or never); without every marker by then step
      S stays uncommitted (save returns False on rank 0).  After a restore
      to step S, each rank deletes its own leftovers newer than S (engine
      steps and markers) before it saves again, so a later step can never
      pick up an old attempt's part.

WHAT IS SAVED
    A plain tensor in the state is *replicated*: the same on every rank;
    rank 0 stores it, every rank reads it back.  A tensor wrapped in
    Shard(t, global_shape, offsets) is rank R's slice of a larger tensor:
    rank R stores it, and the commit record keeps the slice's shape,
    offsets and the global shape, so a state saved by W ranks restores into
    any number of ranks with any slicing (resharding).  Shard(t) without
    them is rank-local (e.g. a per-rank RNG state): it restores only into
    the same world size, else a clear error.

WITH AN OBJECT STORE (remote=URI, or dir given as a URI): `dir` is
this node's own tier 2, each rank's engines upload their parts through
tier 3, and the markers and commit records live in the store, written
by a committer thread that training never waits for: see
dist_remote.py.

See docs/distributed.md.
"""

import json
import logging
import os
import re
import shutil
import sys
import threading
import time

from . import _state
from ._lib import CheckpointError
from . import checkpoint as _ckpt
from . import dist_final as _final
from . import dist_keep as _keep
from . import dist_peer as _peer
from . import dist_remote as _remote
from . import preemption as _preemption
from .objects import ObjectStore

FORMAT = "spotrun.dist/1"
PLACEHOLDER = "__spotrun_shard__"
log = logging.getLogger("spotrun")
FINAL_LOCAL_COPY_ENV = "SPOTRUN_FINAL_LOCAL_COPY"
_STEP_RE = re.compile(r"step-(\d{8,})\.commit")
_ENGINE_STEP_RE = re.compile(r"step-(\d{8,})")

# The gang's notice deadline (should_checkpoint): Unix seconds and the
# same on this process's monotonic clock; None before a notice.  peers:
# {global rank: monotonic deadline} of every noticed rank.
_gang = {"wall": None, "mono": None, "peers": {}}
_gang_lock = threading.Lock()

# Called with (phase, step) at the protocol's points ("durable",
# "prepared", "before_commit"); tests use it to kill a rank there.
_test_hook = None


class Shard:
    """A rank's slice of a sharded tensor.

    tensor: this rank's part.  global_shape / offsets: the whole tensor's
    shape and where this slice starts in it (one offset per dimension); both
    or neither.  Without them the tensor is rank-local and can only be
    restored into the same world size."""

    __slots__ = ("tensor", "global_shape", "offsets")

    def __init__(self, tensor, global_shape=None, offsets=None):
        if (global_shape is None) != (offsets is None):
            raise ValueError("Shard: give both global_shape and offsets, "
                             "or neither")
        self.tensor = tensor
        self.global_shape = None if global_shape is None \
            else [int(x) for x in global_shape]
        self.offsets = None if offsets is None else [int(x) for x in offsets]
        if self.global_shape is not None:
            shape = list(tensor.shape)
            if len(shape) != len(self.global_shape) or \
                    len(self.offsets) != len(shape):
                raise ValueError("Shard: shape %s, global_shape %s and "
                                 "offsets %s differ in rank" %
                                 (shape, self.global_shape, self.offsets))
            for d, (n, o, g) in enumerate(zip(shape, self.offsets,
                                              self.global_shape)):
                if o < 0 or o + n > g:
                    raise ValueError("Shard: dimension %d: slice [%d, %d) is "
                                     "outside the global size %d"
                                     % (d, o, o + n, g))

    def __repr__(self):
        return "Shard(shape=%s, global_shape=%s, offsets=%s)" % (
            list(self.tensor.shape), self.global_shape, self.offsets)


def _env_int(names):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                raise ValueError("$%s=%r is not an integer" % (n, v)) from None
    return None


def rank_world(rank=None, world_size=None):
    """(rank, world_size): the arguments, else $RANK / $WORLD_SIZE (set by
    spotrun's agent and by torchrun), else (0, 1)."""
    if rank is None:
        rank = _env_int(("RANK",))
    if world_size is None:
        world_size = _env_int(("WORLD_SIZE",))
    rank = 0 if rank is None else int(rank)
    world_size = 1 if world_size is None else int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError("rank %d is not in a world of %d ranks"
                         % (rank, world_size))
    return rank, world_size


class Checkpointer(_ckpt.Checkpointer):
    """spotrun.Checkpointer: one process's checkpoints, or, when the world
    is larger than one rank (rank/world_size, default $RANK/$WORLD_SIZE),
    a DistCheckpointer (multi-rank, globally committed steps)."""

    def __new__(cls, dir, *args, rank=None, world_size=None, **kw):
        if cls is Checkpointer and rank_world(rank, world_size)[1] > 1:
            return DistCheckpointer(dir, *args, rank=rank,
                                    world_size=world_size, **kw)
        return super().__new__(cls)

    def __init__(self, dir, *args, rank=None, world_size=None, **kw):
        rank_world(rank, world_size)   # validated; one rank here
        super().__init__(dir, *args, **kw)


def _durable_write(path, data):
    """tmp, fsync, rename, fsync dir: `path` holds all of data or is absent."""
    d = os.path.dirname(path)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)
    _fsync_dir(d)


def _fsync_dir(d):
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _mkdir_durable(d):
    if not os.path.isdir(d):
        os.makedirs(d, exist_ok=True)
        _fsync_dir(os.path.dirname(d))


def _split(state):
    """(tree with each Shard replaced by a placeholder, {name: Shard}).
    Containers on the way are copied; tensors are not."""
    shards = {}

    def walk(x, path):
        if isinstance(x, Shard):
            name = ".".join(map(str, path)) or "shard"
            base, n = name, 1
            while name in shards:
                name = "%s~%d" % (base, n)
                n += 1
            shards[name] = x
            return {PLACEHOLDER: name}
        if isinstance(x, dict):
            return {k: walk(v, path + (k,)) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, path + (i,)) for i, v in enumerate(x)]
        if isinstance(x, tuple):
            return tuple(walk(v, path + (i,)) for i, v in enumerate(x))
        return x

    return walk(state, ()), shards


def _join(tree, shards):
    """The inverse of _split on a restored tree: placeholders become the
    caller's Shard objects again."""
    if isinstance(tree, dict):
        if set(tree) == {PLACEHOLDER}:
            name = tree[PLACEHOLDER]
            if name not in shards:
                raise _state.MetadataError(
                    "the checkpoint holds shard %r, the state given to "
                    "restore() has no Shard there" % (name,))
            return shards[name]
        return {k: _join(v, shards) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_join(v, shards) for v in tree]
    if isinstance(tree, tuple):
        return tuple(_join(v, shards) for v in tree)
    return tree


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def _overlap(dst_shape, dst_off, src_shape, src_off):
    """The index tuples of the region two slices of one global tensor have
    in common, in dst's and in src's coordinates, and its element count;
    None when they do not overlap."""
    sl_d, sl_s, n = [], [], 1
    for dn, do, sn, so in zip(dst_shape, dst_off, src_shape, src_off):
        lo, hi = max(do, so), min(do + dn, so + sn)
        if hi <= lo:
            return None
        sl_d.append(slice(lo - do, hi - do))
        sl_s.append(slice(lo - so, hi - so))
        n *= hi - lo
    return tuple(sl_d), tuple(sl_s), n


def _assign(dst, index, src):
    """dst[index] = src, also into a tensor that requires grad."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dst, torch.Tensor):
        with torch.no_grad():
            dst[index] = src
    else:
        dst[index] = src


def _in_place(r, by_name, shards, saved_w, world_size, rank):
    """The Shards of the state that rank r saved exactly (same slice of the
    same global shape, or a rank-local one of the same shape and rank in
    the same world size): name -> the state's own tensor, which a restore
    of rank r's part from a kept copy reads straight into
    (dist_remote.RemoteCommit.load_part).  The engine writes such a
    tensor in place (dtype, shape and a contiguous host or current-CUDA
    tensor; else into a new one, copied in at its commit) and only once
    every byte verified, so a copy refused leaves it as it was.  The
    copy lies on a tmpfs and is read through its files mapped: 0.19-0.21
    CPU-s per 512 MiB in place against 0.63 into new tensors and copied
    in (bench/part_restore.py; docs/notes/distributed.md, session 24)."""
    out, seen = {}, set()
    for name, sh in shards.items():
        if id(sh.tensor) in seen:
            continue   # two Shards of one tensor: the copies decide
        for sr, info in by_name.get(name, ()):
            if sr != r or list(info["shape"]) != list(sh.tensor.shape):
                continue
            if sh.global_shape is None or info["global_shape"] is None:
                exact = info["global_shape"] is None and \
                    sh.global_shape is None and \
                    saved_w == world_size and r == rank
            else:
                exact = list(info["global_shape"]) == sh.global_shape and \
                    list(info["offsets"]) == sh.offsets
            if exact:
                out[name] = sh.tensor
                seen.add(id(sh.tensor))
    return out


class _Laps:
    """Fills `out` with phase -> [wall s, this process's CPU s] since the
    previous lap (DistCheckpointer.final_phases: where a final
    checkpoint's time went)."""

    def __init__(self, out):
        out.clear()
        self.out = out
        self.t = (time.monotonic(), time.process_time())

    def __call__(self, phase):
        t = (time.monotonic(), time.process_time())
        self.out[phase] = [round(t[0] - self.t[0], 3),
                           round(t[1] - self.t[1], 3)]
        self.t = t


def _numel(shape):
    n = 1
    for x in shape:
        n *= int(x)
    return n


class DistCheckpointer:
    """Checkpoints of rank `rank` of `world_size` into the shared `dir`.

    Every rank calls save(step, state) with the same steps; rank 0 writes
    the global commit record once every rank's part is durable (see the
    protocol above).  save() returns when this rank's part is durable and,
    on rank 0, the step committed (True) or not within commit_timeout
    (False).  Options are those of spotrun.Checkpointer, applied to each of
    this rank's engines; `keep` counts globally committed steps.
    remote: an object-store URI (or give `dir` as one, with local_dir):
    the global commit runs there and `dir` is this node's own tier 2
    (dist_remote.py); call restore() before the first save().
    final_local_copy: with an object store, save_final() sends this
    rank's part from staging memory straight to the store and writes
    nothing of it to `dir` (a noticed node's disk goes with it, and a
    final part counts only once it is in the store); True (or
    $SPOTRUN_FINAL_LOCAL_COPY=1) writes it to `dir` first and uploads it
    from there, as before.  Peer copies (peer_replicas) also keep the
    local write: the push to the peers reads it.
    final_keep: with the final part straight to the store, a rank whose
    node has no notice of its own (a kept node) also keeps an exact copy
    of it in memory, which the next attempt on that node restores from
    (dist_keep.py); None: under spotrun's agent unless
    $SPOTRUN_FINAL_KEEP=0; True also outside it; False never."""

    FORMAT = FORMAT

    def __init__(self, dir, keep=2, rank=None, world_size=None,
                 commit_timeout=120.0, remote=None, local_dir=None,
                 peer_replicas=None, final_local_copy=None, final_keep=None,
                 **engine_opts):
        if _ckpt._is_remote(dir):
            if remote is not None and str(remote) != str(dir):
                raise ValueError("two object stores given: %s and %s"
                                 % (dir, remote))
            remote = str(dir)
            dir = local_dir or _ckpt._default_local_dir(remote)
        self.rank, self.world_size = rank_world(rank, world_size)
        self.dir = _ckpt._local_path(dir)
        self.keep = int(keep)
        self.commit_timeout = float(commit_timeout)
        self.attempt = os.environ.get("SPOTRUN_ATTEMPT")
        if final_local_copy is None:
            final_local_copy = bool(_env_int([FINAL_LOCAL_COPY_ENV]))
        self.final_local_copy = bool(final_local_copy)
        self._keep = _keep.enabled(final_keep)
        self.remote = None if remote is None else str(remote)
        self._gdir = os.path.join(self.dir, "global")
        _mkdir_durable(self.dir)
        self._rc = None
        if self.remote is not None:
            # the global protocol runs in the store (dist_remote.py);
            # self.dir is this node's own tier 2
            self._rc = _remote.RemoteCommit(self, self.remote)
        else:
            _mkdir_durable(self._gdir)
        # up to two steps in flight besides the committed ones, so an
        # uncommitted step never pushes a committed one out
        opts = dict(engine_opts, keep=self.keep + 2)
        # no prefault (spotckpt_prefault) unless asked for: a gang's
        # restore reads its parts through readers into new tensors (or,
        # from a kept copy, the state's own), not into these engines'
        # staging, so the prefault would only move
        # the first save's page faults into the switch, where every
        # CPU-s counts (docs/notes/distributed.md, session 23)
        opts.setdefault("prefault", False)
        self._own = _ckpt.Checkpointer(self._rank_dir(self.rank), **opts)
        self._repl = None
        self._pending = None     # the background commit's thread
        self._last_ok = True
        self._last_step = None   # the step of the last save()
        self._last_engines = []  # the engines that saved it
        self._abandoned = set()  # the steps given up (dist_final.py)
        if self.rank == 0:
            self._repl = _ckpt.Checkpointer(
                os.path.join(self.dir, "replicated"), **opts)
        # peer copies (dist_peer.py): where the last restore read each
        # part ("kept copy", "tier 2", "held", "peer rank N", "store")
        self.restore_sources = {}
        # where the last final checkpoint's time went: phase -> [wall s,
        # CPU s of this process] ("part", "marker", "keep", "commit")
        self.final_phases = {}
        self._peers = None
        k = _peer.replicas_from_env() if peer_replicas is None \
            else int(peer_replicas)
        if k > 0 and self.world_size > 1:
            if self._rc is None:
                log.info("%s: peer copies need an object store (remote=); "
                         "a shared directory already holds every part",
                         _peer.KEY)
            else:
                self._peers = _peer.Peers(self, k)

    # -- lifetime ---------------------------------------------------------
    def close(self):
        """Wait for the last save's commit (with an object store: for its
        upload and global commit, at most commit_timeout), then close
        the engines."""
        self._join()
        end = self._end()
        if self._abandoned:
            end = time.monotonic()   # nothing of those steps is kept
        if self._peers is not None:
            # the last step's copies, to and from the ranks around this one
            self._peers.close(None if self._abandoned else self._last_step,
                              end, min(end, self._peer_end()))
        if self._rc is not None:
            self._rc.close(max(0.0, end - time.monotonic()))
        # each engine's close waits for its newest step to be in the
        # store (the single-process guarantee), within the same bound
        for c in (self._own, self._repl):
            if c is None:
                continue
            try:
                c.close(timeout=max(0.0, end - time.monotonic()))
            except CheckpointError as exc:
                if not self._abandoned:
                    raise
                log.info("closing after step(s) %s were abandoned: %s",
                         sorted(self._abandoned), exc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _end(self):
        """time.monotonic() at which this rank stops its own part of a
        commit (its writes, uploads, marker): after commit_timeout, or at
        this node's own notice deadline, past which the node is gone."""
        end = time.monotonic() + self.commit_timeout
        dl = _preemption.deadline_monotonic()
        return end if dl is None else min(end, dl)

    def _peer_end(self):
        """time.monotonic() at which a wait for *another* rank's part (a
        marker, rank 0's record) gives up: _end(), or the gang's notice
        deadline (should_checkpoint() shares it).  A noticed peer's part
        is in by its deadline or never: its node is gone after it."""
        end = self._end()
        dl = _gang["mono"]
        return end if dl is None else min(end, dl)

    def _rank_dir(self, r):
        return os.path.join(self.dir, "rank-%05d" % r)

    def _named(self, engines):
        """(part name, engine) of this rank's engines."""
        return [("replicated" if c is self._repl else
                 "rank-%05d" % self.rank, c) for c in engines]

    def _step_dir(self, step):
        return os.path.join(self._gdir, "step-%08d" % step)

    def _record_path(self, step):
        return os.path.join(self._gdir, "step-%08d.commit" % step)

    # -- saving -----------------------------------------------------------
    def save(self, step, state):
        """Save this rank's part of `step`.  Returns once this rank's
        tensors are copied to staging memory (tier 1), like the
        single-process save(); the engine commit, this rank's marker and,
        on rank 0, the global commit record follow in a background thread
        (wait() for them).  At most one step is in flight: a save() first
        waits for the previous step's commit.  Returns True."""
        self._join()
        step = int(step)
        self._attach()
        self._last_step = step
        engines, mine = self._stage(step, state, False, None)
        self._last_engines = engines
        # both engines (rank 0: replicated part and own shards) copy at
        # once; a tensor may change again only when both are staged
        for c in engines:
            c.wait_staged()
        t = threading.Thread(target=self._background, name="spotrun-commit",
                             args=(step, engines, mine))
        self._pending = t
        t.start()
        return True

    def wait(self):
        """Wait for the background commit of the last save().  True when
        this rank's part is prepared and, on rank 0, the step committed;
        False otherwise (the reason is logged).  With an object store:
        True once the step's global record is there (at most
        commit_timeout; training itself never waits for this)."""
        self._join()
        if self._rc is not None and self._last_ok and \
                self._last_step is not None:
            return self._rc.await_step(self._last_step, self._end())
        return self._last_ok

    def save_final(self, step, state, deadline=None):
        """The final checkpoint on a preemption notice: this rank's part
        at full disk speed, then the same commit, in this thread.  Returns
        True once this rank's part is prepared and, on rank 0, the step
        committed.

        A notice that stops the gang on the step save() has just saved (a
        periodic checkpoint's step) finishes that save instead of writing
        the step again.  A second write gives the step a new manifest
        while tier 3 holds, or is uploading, the first one; the two never
        match, so the step would never commit and the gang would resume
        from the save before it."""
        step = int(step)
        # A kept rank gives a step up once a noticed peer's part of it is
        # missing at that peer's deadline (dist_final.py): this one, and
        # the previous save's if it is still in flight (the wait for it
        # below would otherwise run to its end)
        steps = [step]
        if self._pending is not None and self._last_step not in (None, step):
            steps.insert(0, self._last_step)
        guard = _final.FinalGuard(
            self, steps, [c for c in (self._repl, self._own) if c is not None],
            _final.noticed_peers(_gang["peers"], self.rank))
        guard.check_now()
        guard.start()
        try:
            self._join()
            self._attach()
            if step in self._abandoned:
                self._last_ok = False
                return False
            if step == self._last_step and self._last_ok:
                if self._rc is None:
                    return True   # prepared (rank 0: committed) in _finish
                return self._rc.final(step, self._named(self._last_engines),
                                      deadline)
            return self._final_write(step, state, deadline)
        except CheckpointError as exc:
            if step not in self._abandoned:
                raise
            log.info("final step %d: write stopped (%s)", step, exc)
            self._last_ok = False
            return False
        finally:
            guard.close()

    def _final_write(self, step, state, deadline):
        self._hook("final_write", step)
        if step in self._abandoned:
            # given up before its write began: write none of it (a small
            # part could finish before the engine's cancel reached it)
            self._last_ok = False
            return False
        lap = _Laps(self.final_phases)
        try:
            engines, mine = self._stage(step, state, True, deadline)
            lap("part")   # tier 1 and the store (or tier 2) write
        except CheckpointError as exc:
            if not self._final_store_only() or step in self._abandoned:
                raise
            # the part is not in the store: no marker, so the step
            # never commits and the newest committed one stays
            log.error("final step %d: this rank's part did not reach the "
                      "store: %s", step, exc)
            self._last_step, self._last_ok = step, False
            return False
        self._last_step, self._last_engines = step, engines
        self._last_ok = step not in self._abandoned and \
            self._finish(step, engines, mine)
        lap("marker")   # rank 0 without a store: and the commit
        if not self._last_ok:
            return False
        if self._rc is None:
            return True
        if self._final_store_only():
            # a kept node's copy for its next attempt, while the
            # committer sends the marker (dist_keep.py)
            _keep.write(self, self._named(engines), step)
            lap("keep")
        ok = self._rc.final(step, self._named(engines), deadline)
        lap("commit")   # the global record seen
        return ok

    def _attach(self):
        if self._rc is not None:
            self._rc.attach(self._named(
                [c for c in (self._repl, self._own) if c is not None]))

    def _join(self):
        t, self._pending = self._pending, None
        if t is not None:
            t.join()

    def _stage(self, step, state, final, deadline):
        """Tier 1 (final: the whole engine save) of this rank's part.
        Returns (engines to wait for, this rank's shard descriptions)."""
        tree, shards = _split(state)
        engines = []
        if self.rank == 0:
            self._engine_save(self._repl, step, {
                "tree": tree, "step": _step_tensor(step)}, final, deadline)
            engines.append(self._repl)
        mine = {}
        if shards:
            self._engine_save(self._own, step, {
                "shards": {n: s.tensor for n, s in shards.items()}},
                final, deadline)
            engines.append(self._own)
            mine = {n: {"shape": list(s.tensor.shape),
                        "dtype": _dtype_name(s.tensor),
                        "global_shape": s.global_shape,
                        "offsets": s.offsets} for n, s in shards.items()}
        return engines, mine

    def _final_store_only(self):
        """A final part goes from staging memory to the store alone: the
        store holds the copy that survives the node (docs/distributed.md,
        "The final part goes to the store only")."""
        return self._rc is not None and not self.final_local_copy and \
            self._peers is None

    def _engine_save(self, c, step, st, final, deadline):
        if final:
            c.save_final(step, st, deadline=deadline,
                         local_copy=not self._final_store_only())
        else:
            c.save(step, st, lazy=True)

    def _background(self, step, engines, mine):
        try:
            self._last_ok = self._finish(step, engines, mine)
        except Exception as exc:   # logged; training goes on
            log.error("step %d not committed: %s", step, exc)
            self._last_ok = False

    def _finish(self, step, engines, mine):
        """DURABLE -> PREPARED (-> COMMITTED on rank 0)."""
        for c in engines:
            c.wait()
        self._hook("durable", step)
        if step in self._abandoned:
            return False   # it can never commit: no marker
        if self._rc is not None:
            if self._peers is not None:
                self._peers.push(step, self._named(engines))
            return self._rc.durable(step, self._named(engines), mine)
        sdir = self._step_dir(step)
        _mkdir_durable(sdir)
        _durable_write(os.path.join(sdir, "rank-%05d.json" % self.rank),
                       json.dumps({"format": FORMAT, "step": step,
                                   "rank": self.rank,
                                   "world_size": self.world_size,
                                   "attempt": self.attempt,
                                   "shards": mine}).encode())
        self._hook("prepared", step)
        if self.rank != 0:
            return True
        return self._commit(step)

    def _hook(self, phase, step):
        if _test_hook is not None:
            _test_hook(phase, step)

    def _commit(self, step):
        sdir = self._step_dir(step)
        end = self._peer_end()   # the other ranks' markers
        ranks = {}
        while True:
            for r in range(self.world_size):
                if r in ranks:
                    continue
                m = self._read_marker(sdir, r, step)
                if m is not None:
                    ranks[r] = m
            if len(ranks) == self.world_size:
                break
            if time.monotonic() >= end:
                log.error("step %d not committed: no prepared marker from "
                          "rank(s) %s by the commit timeout (%.0f s) or the "
                          "notice's deadline", step,
                          sorted(set(range(self.world_size)) - set(ranks)),
                          self.commit_timeout)
                return False
            time.sleep(0.01)
        self._hook("before_commit", step)
        rec = {"format": FORMAT, "step": step, "world_size": self.world_size,
               "attempt": self.attempt,
               "ranks": [{"rank": r, "shards": ranks[r]["shards"]}
                         for r in range(self.world_size)]}
        _durable_write(self._record_path(step),
                       json.dumps(rec, separators=(",", ":")).encode())
        self._retain()
        return True

    def _read_marker(self, sdir, r, step):
        try:
            with open(os.path.join(sdir, "rank-%05d.json" % r), "rb") as f:
                m = json.loads(f.read())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("%s: rank %d's marker unreadable: %s", sdir, r, exc)
            return None
        if m.get("format") != FORMAT or m.get("step") != step or \
                m.get("world_size") != self.world_size or \
                m.get("attempt") != self.attempt:
            return None   # another attempt's or another world's
        return m

    def _retain(self):
        """Rank 0: drop commit records (and their marker dirs) beyond
        `keep`; records go first, so a half-pruned step is never used."""
        steps = committed_steps(self.dir)
        for s in steps[self.keep:]:
            try:
                os.unlink(self._record_path(s))
            except FileNotFoundError:
                pass
        if steps[self.keep:]:
            _fsync_dir(self._gdir)
        oldest = steps[min(len(steps), self.keep) - 1] if steps else None
        for name in os.listdir(self._gdir):
            m = _ENGINE_STEP_RE.fullmatch(name)
            if m and oldest is not None and int(m.group(1)) < oldest:
                shutil.rmtree(os.path.join(self._gdir, name),
                              ignore_errors=True)

    # -- restoring --------------------------------------------------------
    def _committed(self):
        if self._rc is not None:
            return self._rc.committed_steps()
        return committed_steps(self.dir)

    def last_committed_step(self):
        """The newest globally committed step (with an object store: the
        newest record there), or None."""
        steps = self._committed()
        return steps[0] if steps else None

    def restore(self, state, max_step=None):
        """Fill `state` from the newest globally committed step: replicated
        tensors from rank 0's copy, each Shard from the saved slices that
        overlap it.  Returns the step, or None if there is none.  Every
        rank must call it: when torch.distributed is initialized the ranks
        agree on one step (an all_reduce), so a part damaged on one rank
        sends all of them to the same older step.  Raises
        MetadataError (a ValueError) when the state cannot be restored
        into this world size (a rank-local shard saved by another number
        of ranks, a global shape that differs)."""
        if not isinstance(state, (dict, list)):
            raise TypeError("restore() fills a dict (or list) in place, not "
                            "a %s" % type(state).__name__)
        lim = max_step
        if self._peers is not None:
            self._peers.meet()   # every rank: addresses and copies
        while True:
            found = self._restore_newest(state, lim)
            lo, hi = self._agree(found)
            if lo == hi:
                break
            # some rank could not use this step (a damaged part of its
            # own): every rank takes the same older one
            log.warning("ranks restored steps %s..%s: all take step <= %s",
                        lo, hi, lo)
            lim = lo
            if lo < 0:
                found = None
                break
        _keep.drop(self)   # read or refused: used up either way
        if max_step is None:
            self._drop_after(found)
            # no rank saves before every rank dropped its leftovers: a
            # marker left by an earlier run is gone before a new one of
            # the same step can be counted
            self._agree(found)
        _ckpt.report_restored(found, self.restore_sources
                              if found is not None else None)
        return found

    def _restore_newest(self, state, lim):
        self._join()
        for s in self._committed():
            if lim is not None and s > lim:
                continue
            self.restore_sources = {}
            try:
                self._restore_step(s, state)
            except _ckpt._lib.CheckpointError as exc:
                log.warning("global step %d unusable, trying the previous "
                            "one: %s", s, exc)
                continue
            return s
        return None

    def _agree(self, found):
        """(min, max) of the step each rank restored (-1: none), over the
        default torch.distributed group when it is up with this world
        size; (found, found) otherwise."""
        v = -1 if found is None else found
        tdist = getattr(sys.modules.get("torch"), "distributed", None)
        if tdist is None or not tdist.is_available() or \
                not tdist.is_initialized() or \
                tdist.get_world_size() != self.world_size:
            return v, v
        torch = sys.modules["torch"]
        dev = "cuda" if tdist.get_backend() == "nccl" else "cpu"
        t = torch.tensor([-v, v], dtype=torch.int64, device=dev)
        tdist.all_reduce(t, op=tdist.ReduceOp.MAX)
        return -int(t[0]), int(t[1])

    def _record(self, step):
        if self._rc is not None:
            return self._rc.record(step)
        with open(self._record_path(step), "rb") as f:
            return json.loads(f.read())

    def _load_part(self, name, step, holder, rec, r, own=None):
        """Engine part `name` (saved by rank r) of step into holder; own:
        the state's tensors it may read straight into (_in_place)."""
        if self._rc is not None:
            want = None
            for ent in rec["ranks"]:
                if ent["rank"] == r:
                    want = ent.get("parts", {}).get(name)
            if want is None:
                raise _state.MetadataError("step %d: the record names no "
                                           "part %s" % (step, name))
            self._rc.load_part(name, step, holder, want, own)
            return
        got = _ckpt.restore(os.path.join(self.dir, name), holder, step=step)
        if got != step:
            raise _ckpt._lib.CheckpointError(-1, "%s part of step %d "
                                             "missing" % (name, step))

    def _restore_step(self, step, state):
        rec = self._record(step)
        if rec.get("format") != FORMAT or rec.get("step") != step:
            raise _state.MetadataError("step %d: not a %s commit record"
                                       % (step, FORMAT))
        tree, shards = _split(state)
        holder = {"tree": tree, "step": _step_tensor(step)}
        self._load_part("replicated", step, holder, rec, 0)
        self._fill_shards(step, rec, shards)
        _state._mirror(state, _join(holder["tree"], shards))

    def _fill_shards(self, step, rec, shards):
        saved_w = rec["world_size"]
        by_name = {}
        for ent in rec["ranks"]:
            for name, info in ent["shards"].items():
                by_name.setdefault(name, []).append((ent["rank"], info))
        cache = {}

        def rank_tensors(r):
            if r not in cache:
                d = {}
                self._load_part("rank-%05d" % r, step, d, rec, r,
                                _in_place(r, by_name, shards, saved_w,
                                          self.world_size, self.rank))
                cache[r] = d["shards"]
            return cache[r]

        for name, sh in shards.items():
            saved = by_name.get(name)
            if not saved:
                raise _state.MetadataError("step %d holds no shard %r"
                                           % (step, name))
            if sh.global_shape is None or \
                    any(i["global_shape"] is None for _, i in saved):
                self._fill_local(name, sh, saved, saved_w, rank_tensors)
                continue
            n = 0
            for r, info in saved:
                if list(info["global_shape"]) != sh.global_shape:
                    raise _state.MetadataError(
                        "shard %r: saved global shape %s, state has %s"
                        % (name, info["global_shape"], sh.global_shape))
                ov = _overlap(sh.tensor.shape, sh.offsets, info["shape"],
                              info["offsets"])
                if ov is None:
                    continue   # that rank's slice is not read at all
                src = rank_tensors(r)[name]
                if src is not sh.tensor:   # else read into it already
                    _assign(sh.tensor, ov[0], src[ov[1]])
                n += ov[2]
            want = _numel(sh.tensor.shape)
            if n != want:
                raise _state.MetadataError(
                    "shard %r: the saved slices cover %d of the %d elements "
                    "of rank %d's slice" % (name, n, want, self.rank))

    def _fill_local(self, name, sh, saved, saved_w, rank_tensors):
        """A shard without reshard information: same world size only."""
        if saved_w != self.world_size:
            raise _state.MetadataError(
                "shard %r was saved by %d ranks without its global shape "
                "and offsets: it cannot be restored into %d ranks (save it "
                "as Shard(t, global_shape, offsets) to reshard)"
                % (name, saved_w, self.world_size))
        mine = [i for r, i in saved if r == self.rank]
        if not mine or list(mine[0]["shape"]) != list(sh.tensor.shape):
            raise _state.MetadataError(
                "shard %r of rank %d: saved shape %s, the state has %s"
                % (name, self.rank, mine[0]["shape"] if mine else None,
                   list(sh.tensor.shape)))
        src = rank_tensors(self.rank)[name]
        if src is not sh.tensor:
            _assign(sh.tensor, Ellipsis, src)

    def _drop_after(self, step):
        """Delete this rank's own leftovers newer than `step` (None: all),
        which no commit record names: engine steps and markers."""
        lim = -1 if step is None else step
        dirs = [self._rank_dir(self.rank)]
        if self.rank == 0:
            dirs.append(os.path.join(self.dir, "replicated"))
        for d in dirs:
            for name in os.listdir(d) if os.path.isdir(d) else ():
                m = _ENGINE_STEP_RE.fullmatch(name)
                if m and int(m.group(1)) > lim:
                    shutil.rmtree(os.path.join(d, name), ignore_errors=True)
        if self._rc is not None:
            self._rc.drop_after(lim, [os.path.basename(d) for d in dirs])
            return
        if self.rank == 0:
            # records that failed to restore: a new save of their step
            # must not be read through them while it is half written
            for s in committed_steps(self.dir):
                if s > lim:
                    os.unlink(self._record_path(s))
        for name in os.listdir(self._gdir):
            m = _ENGINE_STEP_RE.fullmatch(name)
            if m and int(m.group(1)) > lim:
                try:
                    os.unlink(os.path.join(self._gdir, name,
                                           "rank-%05d.json" % self.rank))
                except FileNotFoundError:
                    pass


def should_checkpoint(group=None):
    """The gang's answer to spotrun.preemption.should_checkpoint(): True
    on every rank as soon as any rank has a preemption notice.  Every rank
    calls it at the same step boundary, so all ranks take their final
    checkpoint for the same step, whichever node the notice hit; the other
    ranks learn of it here before the control plane's `stop` reaches their
    nodes.

    The gang also shares the notice's deadline: one all_reduce (MIN) of
    each rank's spotrun.preemption.deadline() (Unix seconds; +inf without
    a notice) over `group` (default: the default group), kept as
    gang_deadline().  Every rank's DistCheckpointer stops waiting for
    another rank's part of a commit (rank 0 for the markers, the others
    for rank 0's record) at it: a noticed peer's part is in by its
    deadline or never, so no rank waits commit_timeout for a peer whose
    node is gone.  A kept rank's own work (its write, its upload) is not
    cut short: its node stays.  Deadlines cross nodes as wall-clock times,
    as exact as the nodes' clocks agree (NTP: a few ms).  Without an
    initialized process group it is this process's own
    should_checkpoint().

    A job with `spotrun: {train_through_notice: true}` (docs/
    distributed.md, "Training through the notice") answers "not yet"
    after a notice: the noticed node's agent holds the notice back - no
    notice file, no signal - until the replacement is ready or the last
    safe moment (the deadline less a quarter of the lead), and the gang
    trains on; then this answers True on every rank as above."""
    mine = _preemption.should_checkpoint()
    tdist = getattr(sys.modules.get("torch"), "distributed", None)
    if tdist is None or not tdist.is_available() or \
            not tdist.is_initialized():
        return mine
    torch = sys.modules["torch"]
    own = _preemption.deadline() if mine else None
    if mine and own is None:   # a notice always has one; be safe anyway
        own = time.time() + _preemption.DEFAULT_GRACE_S
    dev = "cuda" if tdist.get_backend(group) == "nccl" else "cpu"
    # one slot per rank of the group, +inf but this rank's own: the MIN
    # gives every rank every rank's deadline (dist_final.py needs whose)
    n, me = tdist.get_world_size(group), tdist.get_rank(group)
    t = torch.full((n,), float("inf"), dtype=torch.float64, device=dev)
    if own is not None:
        t[me] = own
    tdist.all_reduce(t, op=tdist.ReduceOp.MIN, group=group)
    each = [float(x) for x in t.cpu().tolist()]
    gang = min(each)
    if gang == float("inf"):
        # no rank holds a notice (any more: spotrun.preemption.uninstall()
        # forgets one): neither does the gang
        with _gang_lock:
            _gang.update(wall=None, mono=None, peers={})
        return False
    # the one wall-to-monotonic conversion, as preemption does
    off = time.monotonic() - time.time()
    with _gang_lock:
        if _gang["wall"] is None or gang < _gang["wall"]:
            _gang["wall"] = gang
            _gang["mono"] = gang + off
        for i, wall in enumerate(each):
            if wall == float("inf"):
                continue
            r = i if group is None else tdist.get_global_rank(group, i)
            old = _gang["peers"].get(r)
            if old is None or wall + off < old:
                _gang["peers"][r] = wall + off
    return True


def gang_deadline():
    """The gang's earliest notice deadline (time.time() seconds) that
    should_checkpoint() learned, or None before any notice."""
    return _gang["wall"]


def _step_tensor(step):
    import numpy as np
    return np.array([step], dtype=np.int64)


def committed_steps(dir):
    """The globally committed steps in `dir` (a shared directory, or the
    object-store URI of checkpoints saved with `remote`), newest first."""
    if _ckpt._is_remote(dir):
        with ObjectStore(dir) as st:
            return _remote.committed_steps(st)
    g = os.path.join(_ckpt._local_path(dir), "global")
    try:
        names = os.listdir(g)
    except FileNotFoundError:
        return []
    return sorted((int(m.group(1)) for m in map(_STEP_RE.fullmatch, names)
                   if m), reverse=True)
