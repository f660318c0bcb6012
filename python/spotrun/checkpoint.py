"""spotrun.Checkpointer: the PyTorch-facing checkpoint API over libspotckpt.

DESIGN
    save(step, state) flattens `state` (_state.encode) into named tensors
    and one JSON document.  The tensors are registered with the engine by
    pointer -- no copy on the Python side -- and re-registered only when the
    set changes (the optimizer creates its state after the first step;
    torch.get_rng_state() returns a fresh tensor every call, so its buffer
    is re-registered each save, which is cheap: the staging buffer is kept
    when the new state fits).  The engine then copies them into its
    pre-faulted staging buffer (tier 1) and returns; the disk write (tier 2)
    runs in the background.  Objects whose memory is registered are kept
    referenced until the next registration or close().

    restore(state) walks the checkpoints newest first with the reader API:
    the manifest and metadata say what the state looked like; _state
    plans where each tensor's bytes go (the caller's own tensors when they
    match, zero copy); read_all reads and verifies them in parallel; only
    then is the caller's dict updated.  A checkpoint that fails its
    checksums or format checks is skipped (logged by the library) and the
    next older one is tried.

    The metadata stored in each checkpoint is
        {"format": "spotrun.python/1", "state": <encoded tree>}.
"""

import ctypes
import errno
import json
import logging
import os
import sys
import threading
import time

from . import _lib, _state, preemption

FORMAT = "spotrun.python/1"
REMOTE_SCHEMES = ("s3://", "gs://", "az://")
log = logging.getLogger("spotrun")
# a damaged checkpoint: the previous one is tried (lib/ckpt ckpt__is_damage);
# any other failure - a store that does not answer included - raises
_FALLBACK_CODES = (-_lib.ECHECKSUM, -_lib.EPARSE, -_lib.ECORRUPT, -errno.EIO)


def _meta_json(tree):
    return json.dumps({"format": FORMAT, "state": tree},
                      separators=(",", ":"), allow_nan=False).encode()


def _is_remote(s):
    return str(s).startswith(REMOTE_SCHEMES)


def _local_path(s):
    s = str(s)
    return s[len("file://"):] if s.startswith("file://") else s


def _default_local_dir(uri):
    """Tier-2 directory for a Checkpointer opened on a URI alone:
    $SPOTRUN_CKPT_LOCAL_DIR, else ~/.cache/spotrun/ckpt/<uri as a name>."""
    env = os.environ.get("SPOTRUN_CKPT_LOCAL_DIR")
    if env:
        return env
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in uri)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "spotrun", "ckpt", name)


def _sync_cuda(tensors):
    if any(t.device == "cuda" for t in tensors):
        # the engine copies on its own stream: finish pending kernels first
        sys.modules["torch"].cuda.synchronize()


class Checkpointer:
    """Asynchronous checkpoints of a training state into `dir`.

    Options (see include/spotrun/ckpt.h, struct spotckpt_opts):
      keep            complete checkpoints kept (default 2)
      copy_threads    tier-1 copy threads (0 = auto)
      staging_bytes   staging memory budget (0 = one state's size)
      shard_bytes     target shard size (0 = 4 GiB, or with `dirs` the
                      state split over the directories)
      backpressure    "coalesce" | "skip" | "block" when tier 2 lags
      direct_io       use O_DIRECT where the file system allows it
      io_depth, io_chunk_bytes   io_uring tuning (0 = defaults)
      dirs            tier-2 directories to stripe the shards over, one per
                      disk, the first being `dir` (which may then be None);
                      every step-N/ and its manifest stay in the first,
                      which links to the shards striped to the others.
                      Default: $SPOTRUN_CKPT_DIRS (a:b:c) when its first
                      entry is `dir`.
      remote          tier 3: an object-store URI (s3://BUCKET/PREFIX,
                      gs://..., az://ACCOUNT/CONTAINER/PREFIX, file:///DIR)
                      each committed checkpoint is uploaded to, in the
                      background.  `dir` may itself be such a URI; tier 2
                      is then `local_dir` (default $SPOTRUN_CKPT_LOCAL_DIR
                      or ~/.cache/spotrun/ckpt/...).  A configuration the
                      store refuses (bad URI or bucket name, no such
                      bucket, missing or refused credentials) raises
                      CheckpointError here.  A store that does not answer
                      never stops training: it is logged, counted in
                      remote_stats(), and the uploads are retried.
      commit_timeout  seconds close() waits for the newest checkpoint to
                      be in the object store (default 120)
      prefault        when `dir` holds a checkpoint, map the memory its
                      restore will read into and fault it in on a
                      background thread now (spotckpt_prefault), so that
                      a job that makes its Checkpointer before building
                      its model does not pay for that memory inside
                      restore() (default True)

    THE GUARANTEE.  After close() returns, and after remote_wait(step)
    returns True, that step - for close(), the newest one committed to
    disk - is restorable from the object store, whole.  When it cannot be
    (the store stayed down past commit_timeout), close() raises
    CheckpointError saying which step is where.

    Thread-safety: the methods may be called from any thread; they are
    serialised by a lock.  Use as a context manager or call close()."""

    def __init__(self, dir, keep=2, copy_threads=0, staging_bytes=0,
                 shard_bytes=0, backpressure="coalesce", direct_io=True,
                 io_depth=0, io_chunk_bytes=0, remote=None, local_dir=None,
                 commit_timeout=120.0, dirs=None, prefault=True):
        lib = _lib.lib()
        dirs = [str(_local_path(d)) for d in dirs] if dirs else []
        if dir is None:
            if not dirs:
                raise ValueError("give dir, or dirs")
            dir = dirs[0]
        if _is_remote(dir):
            if remote is not None and str(remote) != str(dir):
                raise ValueError("two object stores given: %s and %s"
                                 % (dir, remote))
            remote = str(dir)
            dir = local_dir or _default_local_dir(remote)
            os.makedirs(dir, exist_ok=True)
        dir = _local_path(dir)
        self.remote = None if remote is None else str(remote)
        self.remote_error = None  # kept for old callers; errors raise now
        if remote is not None and not _is_remote(remote) and \
                not str(remote).startswith("file://"):
            raise ValueError("remote=%r: expected an object-store URI "
                             "(s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, "
                             "az://ACCOUNT/CONTAINER/PREFIX or "
                             "file:///DIR)" % (remote,))
        if not commit_timeout or commit_timeout < 0:
            raise ValueError("commit_timeout must be > 0 seconds, not %r"
                             % (commit_timeout,))
        self.commit_timeout = float(commit_timeout)
        if backpressure not in _lib.BACKPRESSURE:
            raise ValueError("backpressure must be one of %s, not %r"
                             % ("/".join(_lib.BACKPRESSURE), backpressure))
        self.dir = str(dir)
        self._lock = threading.RLock()
        self._handle = None
        self._registered = None   # signature of the current registration
        self._keep_alive = []
        self._cuda = bool(lib.spotckpt_cuda_available())
        o = _lib.Opts()
        lib.spotckpt_opts_init(ctypes.byref(o))
        o.dir = self.dir.encode()
        o.keep = keep
        o.copy_threads = copy_threads
        o.staging_bytes = staging_bytes
        o.shard_bytes = shard_bytes
        o.backpressure = _lib.BACKPRESSURE[backpressure]
        o.direct_io = 0 if direct_io else 1
        o.io_depth = io_depth
        o.io_chunk_bytes = io_chunk_bytes
        o.commit_timeout_ms = max(1, int(self.commit_timeout * 1000))
        self.dirs = dirs
        if dirs:
            arr = (ctypes.c_char_p * len(dirs))(*[d.encode() for d in dirs])
            o.dirs = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
            o.ndirs = len(dirs)   # copied by spotckpt_open
        h = ctypes.c_void_p()
        _lib.check(lib.spotckpt_open(ctypes.byref(o), ctypes.byref(h)),
                   "cannot open checkpoint directory %s" % self.dir)
        self._handle = h
        self._pid = os.getpid()
        if prefault:  # best effort: nothing to restore is not an error
            lib.spotckpt_prefault(h, -1)
        if self.remote is not None:
            uri, self.remote = self.remote, None
            try:
                self.set_remote(uri)
            except BaseException:
                self._handle = None
                lib.spotckpt_close_ex(h, 0)
                raise

    def set_remote(self, uri, keep=0, backfill=True):
        """Start tier 3 to `uri` (see the class's `remote` option), if the
        constructor did not.  keep: checkpoints kept in the store (0: this
        Checkpointer's keep; -1: none deleted here - the caller prunes, as
        spotrun.DistCheckpointer does).  backfill: also upload the newest
        checkpoint already in `dir`.  Raises CheckpointError naming what
        to fix when the URI, the bucket or the credentials are wrong (the
        store is listed once here); a store that does not answer only
        logs a warning and the uploads are retried.  Raises ValueError if
        tier 3 is already set."""
        with self._lock:
            if self.remote is not None:
                raise ValueError("tier 3 is already %s" % self.remote)
            lib = _lib.lib()
            flags = 0 if backfill else _lib.REMOTE_NO_BACKFILL
            _lib.check(lib.spotckpt_set_remote_ex(self._h(), str(uri).encode(),
                                                  int(keep), flags),
                       "cannot use %s for checkpoints" % uri)
            self.remote = str(uri)

    # -- lifetime ---------------------------------------------------------
    def close(self, timeout=None):
        """Wait for pending writes, then - with an object store - until
        the newest checkpoint is in the store (at most `timeout` seconds,
        default commit_timeout), and stop the engine.  Raises
        CheckpointError if the newest save failed, or if the store does
        not hold the newest checkpoint by then: the message says which
        step is where (the local copy stays on disk).  Idempotent."""
        with self._lock:
            h, self._handle = self._handle, None
            if h is None:
                return
            if os.getpid() != self._pid:
                # a forked child (e.g. a DataLoader worker): the engine's
                # threads live in the parent only; leave it alone
                return
            ms = -1 if timeout is None else max(0, int(timeout * 1000))
            rc = _lib.lib().spotckpt_close_ex(h, ms)
            self._keep_alive = []
            self._registered = None
            _lib.check(rc, "checkpoint not safe at close")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        else:
            try:
                self.close()
            except _lib.CheckpointError:
                pass  # do not mask the exception in flight
        return False

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            try:
                self.close()
            except Exception:
                pass

    def _h(self):
        if self._handle is None:
            raise ValueError("Checkpointer is closed")
        if os.getpid() != self._pid:
            raise RuntimeError("a Checkpointer cannot be used in a forked "
                               "child process; open a new one there")
        return self._handle

    # -- saving -----------------------------------------------------------
    def _register(self, tensors):
        sig = [(t.name, t.ptr, t.dtype, t.shape, t.device) for t in tensors]
        if sig == self._registered:
            self._keep_alive = [t.keep for t in tensors]
            return
        lib, h = _lib.lib(), self._h()
        lib.spotckpt_clear(h)
        self._registered = None
        for t in tensors:
            shape = (ctypes.c_int64 * max(1, len(t.shape)))(*t.shape)
            dev = _lib.DEV_CUDA if t.device == "cuda" else _lib.DEV_CPU
            _lib.check(lib.spotckpt_register(
                h, t.name.encode(), ctypes.c_void_p(t.ptr),
                _lib.DTYPE_IDS[t.dtype], len(t.shape), shape, dev),
                "cannot register tensor %s" % t.name)
        self._registered = sig
        self._keep_alive = [t.keep for t in tensors]

    def _prepare(self, state):
        tree, tensors = _state.encode(state, cuda_direct=self._cuda)
        if not tensors:
            raise ValueError("the state holds no tensor to checkpoint")
        meta = _meta_json(tree)
        _sync_cuda(tensors)
        self._register(tensors)
        return meta

    def save(self, step, state, lazy=False):
        """Checkpoint `state` as `step`.  Returns once the tensors are
        copied into staging memory (tier 1); the write to disk continues in
        the background (see wait()).  With lazy=True it returns at once and
        the tensors must not be modified until wait_staged() returns.

        Returns "staged", "coalesced" (replaced an older save not yet
        written) or "skipped" (dropped by back-pressure)."""
        with self._lock:
            meta = self._prepare(state)
            out = ctypes.c_int32(-1)
            flags = _lib.SAVE_LAZY if lazy else 0
            _lib.check(_lib.lib().spotckpt_save(
                self._h(), int(step), meta, flags, ctypes.byref(out)),
                "cannot save step %d" % step)
            return _lib.OUTCOMES.get(out.value, str(out.value))

    def wait_staged(self):
        """Block until a lazy save's copy is done (tensors modifiable)."""
        with self._lock:
            _lib.check(_lib.lib().spotckpt_wait_staged(self._h()),
                       "staging copy failed")

    def wait(self):
        """Block until every save so far is committed on disk.  Raises
        CheckpointError (e.g. errno ENOSPC) if the newest one failed."""
        with self._lock:
            _lib.check(_lib.lib().spotckpt_wait(self._h()),
                       "checkpoint write failed")

    def save_final(self, step, state, deadline=None, local_copy=True):
        """Final checkpoint on a preemption notice: cancels writes in
        flight and writes `state` synchronously at full disk speed.

        deadline: time.time() seconds of the expected hard kill; default
        spotrun.preemption.deadline().  Returns True if the commit finished
        by the deadline (always True without one); raises CheckpointError
        if it could not commit.  local_copy=False, with a remote store:
        the step goes from staging memory straight to the store and
        nothing of it is written to the local directory (the node's disk
        goes with the node); it is then committed once it is in the
        store, whole (final_manifest(step) gives its manifest).  Without
        a store it does nothing: the local directory is then the only
        durable copy."""
        mono_ns = 0
        if deadline is None:
            # the notice's own deadline, already on the monotonic clock
            mono = preemption.deadline_monotonic()
            if mono is not None:
                mono_ns = max(1, int(mono * 1e9))
        else:
            left = deadline - time.time()
            mono_ns = max(1, time.monotonic_ns() + int(left * 1e9))
        with self._lock:
            meta = self._prepare(state)
            met = ctypes.c_int32(1)
            flags = 0 if local_copy or self.remote is None else \
                _lib.FINAL_STORE_ONLY
            _lib.check(_lib.lib().spotckpt_save_final_ex(
                self._h(), int(step), meta, mono_ns, flags,
                ctypes.byref(met)),
                "final checkpoint of step %d failed" % step)
            if self.remote is not None:
                return self._remote_wait(int(step), mono_ns) and \
                    bool(met.value)
            return bool(met.value)

    def final_manifest(self, step):
        """The manifest.json bytes of `step` when save_final(...,
        local_copy=False) put it into the store, else None."""
        lib = _lib.lib()
        buf, n = ctypes.c_void_p(), ctypes.c_size_t(0)
        with self._lock:
            rc = lib.spotckpt_final_manifest(self._h(), int(step),
                                             ctypes.byref(buf),
                                             ctypes.byref(n))
        if rc == -_lib.ENOTFOUND:
            return None
        _lib.check(rc, "manifest of step %d" % step)
        try:
            return ctypes.string_at(buf, n.value)
        finally:
            lib.spotckpt_free(buf)

    def final_keep(self, step, dir):
        """Write the step save_final(..., local_copy=False) just put into
        the store to dir/step-SSSSSSSS/: an exact copy of the store's
        objects (the same manifest bytes) from the staging memory, for
        this node's next restore of it (dir: memory, e.g. a tmpfs).
        Raises CheckpointError (ENOTFOUND once a later save took the
        staging memory, or for another step; an errno from the writes).
        The engine's own lock orders it with saves; this object's lock is
        not held while it copies, so remote_stats() from another thread
        (a multi-rank commit's) does not wait for it: call it from the
        thread that will close() this Checkpointer."""
        with self._lock:
            h = self._h()
        _lib.check(_lib.lib().spotckpt_final_keep(h, int(step),
                                                  os.fsencode(dir)),
                   "local copy of final step %d" % step)

    def abandon_final(self, step):
        """Give up the final checkpoint of `step` from another thread
        (it takes no lock): a save_final(step) in progress stops at its
        next write chunk, a later one writes nothing; both raise
        CheckpointError (errno.ECANCELED).  Nothing half-written becomes
        visible; committed checkpoints stay.  spotrun.DistCheckpointer
        calls it when the gang's final step can no longer commit."""
        h = self._handle
        if h is None:
            return
        _lib.check(_lib.lib().spotckpt_abandon_final(h, int(step)),
                   "abandon_final of step %d" % step)

    def _remote_wait(self, step, mono_ns):
        lib = _lib.lib()
        met = ctypes.c_int32(0)
        rc = lib.spotckpt_remote_wait(self._h(), step, mono_ns,
                                      ctypes.byref(met))
        if rc:
            log.error("checkpoint step %d did not reach %s: %s (%s)", step,
                      self.remote, lib.spotckpt_strerror(rc).decode(),
                      lib.spotckpt_errmsg().decode(errors="replace"))
            return False
        return bool(met.value)

    def remote_wait(self, step=None, deadline=None):
        """Wait until checkpoint `step` (default: the newest committed to
        disk) is in the object store, whole; deadline: time.time()
        seconds (None: no deadline - then the first failed attempt
        returns False, while the upload is retried in the background).
        Waits for the disk write of `step` first.  Returns True if it got
        there by the deadline; False (logged) if not, or if `step` was
        never committed to disk (skipped by back-pressure, or failed)."""
        mono_ns = 0
        if deadline is not None:
            mono_ns = max(1, time.monotonic_ns() +
                          int((deadline - time.time()) * 1e9))
        with self._lock:
            if self.remote is None:
                raise ValueError("this Checkpointer has no remote store")
            return self._remote_wait(-1 if step is None else int(step),
                                     mono_ns)

    def remote_stats(self):
        """Tier-3 counters as a dict (struct spotckpt_remote_stats) plus
        "last_message", "remote", and the recovery point: "local_step"
        (newest on disk), "uploaded_step" (newest whole in the store),
        "store_age_s" (seconds since the store's copy was saved, None
        when it holds none), "behind" (checkpoints on disk newer than
        the store's: how many intervals it lags) and "steps_behind"
        (True when the disk holds a newer step than the store)."""
        st = _lib.RemoteStats()
        msg = ctypes.create_string_buffer(512)
        with self._lock:
            _lib.check(_lib.lib().spotckpt_remote_stats(
                self._h(), ctypes.byref(st), msg, len(msg)), "remote stats")
        out = {f: getattr(st, f) for f, _ in _lib.RemoteStats._fields_}
        out["last_message"] = msg.value.decode(errors="replace")
        out["remote"] = self.remote
        out["store_age_s"] = None if st.store_time_ns <= 0 else \
            max(0.0, time.time() - st.store_time_ns / 1e9)
        out["steps_behind"] = st.local_step > st.uploaded_step
        return out

    def last_saved_step(self):
        """Newest step committed by this Checkpointer, or None."""
        with self._lock:
            s = _lib.lib().spotckpt_last_saved_step(self._h())
            return None if s < 0 else s

    def set_background(self, nice=10, writer_cpus=None, copy_cpus=None,
                       write_bytes_per_s=0):
        """Keep the engine's threads out of the training thread's way:
        the writer (hashing, I/O) runs at `nice` (0..19) and only on
        `writer_cpus`, the copy threads only on `copy_cpus` (iterables of
        CPU numbers < 64; None = any), and the writer at most
        `write_bytes_per_s` (0 = no cap; a final save is never capped).
        Pin the training thread to the other CPUs
        (os.sched_setaffinity(0, ...)).  See docs/checkpoint.md, "Staying
        out of the training thread's way"."""
        def mask(cpus, what):
            m = 0
            for c in cpus or ():
                if not 0 <= c < 64:
                    raise ValueError("%s: %r is not a CPU number 0..63"
                                     % (what, c))
                m |= 1 << c
            return m
        b = _lib.Background()
        b.nice = nice
        b.writer_cpus = mask(writer_cpus, "writer_cpus")
        b.copy_cpus = mask(copy_cpus, "copy_cpus")
        b.write_bytes_per_s = write_bytes_per_s
        with self._lock:
            _lib.check(_lib.lib().spotckpt_set_background(
                self._h(), ctypes.byref(b)), "set_background")

    def stats(self):
        """The engine's counters as a dict (struct spotckpt_stats)."""
        st = _lib.Stats()
        with self._lock:
            _lib.check(_lib.lib().spotckpt_stats(self._h(),
                                                  ctypes.byref(st)), "stats")
        return {f: getattr(st, f) for f, _ in _lib.Stats._fields_}

    # -- restoring --------------------------------------------------------
    def restore(self, state, max_step=None, step=None):
        """Fill `state` from the newest valid checkpoint; see restore().
        With a remote store, from whichever tier holds the newer one
        (the object store on a fresh node)."""
        with self._lock:
            src = self.dir
            if self.remote is not None and step is None:
                src = _newer_source(self.dir, self.remote, max_step)
            elif self.remote is not None:
                src = self.dir if os.path.isdir(os.path.join(
                    self.dir, "step-%08d" % int(step))) else self.remote
            got = _restore(src, state, max_step, step, self._cuda,
                           self._h())
            report_restored(got)
            return got


def report_restored(step, sources=None):
    """Tell the node agent what this process resumed from (None: a fresh
    start, reported as step 0); see spotckpt_progress_restored.  sources:
    {part: where it was read} of a multi-rank restore, reported as the
    job's `restored` event."""
    step = 0 if step is None else int(step)
    if sources:
        _lib.lib().spotckpt_progress_restored_from(step, ", ".join(
            "%s=%s" % kv for kv in sorted(sources.items())).encode())
        return
    _lib.lib().spotckpt_progress_restored(step)


def _newest(src, max_step):
    """Newest committed step of src at or below max_step, -1 if none.
    A store (or directory) that cannot be listed raises: "no checkpoint"
    only means that it answered and holds none."""
    for e in list_checkpoints(src):
        if e["committed"] and (max_step is None or e["step"] <= max_step):
            return e["step"]
    return -1


def _newer_source(local, remote, max_step):
    """local unless the object store holds a newer committed step."""
    lstep = _newest(local, max_step) if os.path.isdir(local) else -1
    rstep = _newest(remote, max_step)
    return remote if rstep > lstep else local


def _multirank_hint(dir):
    """A message when dir is a multi-rank (DistCheckpointer) checkpoint
    directory or URI, else None."""
    name = str(dir)
    try:
        if _is_remote(name):
            from .objects import ObjectStore
            with ObjectStore(name) as st:
                multi = bool(st.list("global/step-"))
        else:
            path = _local_path(name)
            multi = os.path.isdir(os.path.join(path, "global")) and any(
                n.startswith("rank-") for n in os.listdir(path))
    except (OSError, _lib.CheckpointError):
        return None
    if not multi:
        return None
    return ("%s holds a multi-rank checkpoint (spotrun.DistCheckpointer: "
            "rank-*/ and global/), not one of a single process; restore it "
            "with spotrun.DistCheckpointer(%r, rank=0, world_size=1)"
            % (name, name))


def _read_infos(lib, r):
    infos, index = {}, {}
    ti = _lib.TensorInfo()
    for i in range(lib.spotckpt_reader_ntensors(r)):
        _lib.check(lib.spotckpt_reader_tensor(r, i, ctypes.byref(ti)),
                   "cannot describe tensor %d" % i)
        name = ti.name.decode()
        infos[name] = (_lib.DTYPE_NAMES.get(ti.dtype, "?%d" % ti.dtype),
                       tuple(ti.shape[:ti.ndim]))
        index[name] = i
    return infos, index


def _restore_one(lib, r, state, cuda_direct, engine):
    """Plan and read the checkpoint open in reader r (keeping the old bytes
    in engine's staging memory, made now if it has none: see
    spotckpt_reader_read_all_with); commit into state."""
    path = lib.spotckpt_reader_path(r).decode(errors="replace")
    try:
        meta = json.loads(lib.spotckpt_reader_meta(r))
    except ValueError as exc:
        raise _state.MetadataError("%s: metadata is not JSON: %s"
                                   % (path, exc)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _state.MetadataError("%s was not written by "
                                   "spotrun.Checkpointer (its metadata has "
                                   "no %r state)" % (path, FORMAT))
    infos, index = _read_infos(lib, r)
    try:
        plan = _state.plan_restore(meta["state"], infos, state, cuda_direct)
    except _state.MetadataError as exc:
        raise _state.MetadataError("%s: %s" % (path, exc)) from None
    dests = (_lib.Dest * max(1, len(plan.buffers)))()
    for i, (name, (ptr, nbytes, _owner, dev)) in \
            enumerate(plan.buffers.items()):
        d = dests[i]
        d.index = index[name]
        d.ptr = ptr
        d.len = nbytes
        d.device = _lib.DEV_CUDA if dev == "cuda" else _lib.DEV_CPU
        d.flags = _lib.DEST_SCRATCH if name in plan.scratch else 0
    rc = lib.spotckpt_reader_read_all_with(r, engine, dests,
                                           len(plan.buffers))
    return rc, plan


def restore(dir, state, max_step=None, step=None, cuda_direct=None):
    """Fill `state` in place from the newest valid checkpoint in `dir`.

    Tensors already in `state` with the saved dtype and shape are
    overwritten in place (zero copy when on the CPU and contiguous);
    missing ones are created (e.g. optimizer state before the first step);
    dicts and lists are made equal to the saved ones, keeping their
    identity; tuples and plain values are replaced.  The caller then
    passes the parts to load_state_dict().

    max_step: only consider checkpoints with step <= max_step.  step: that
    exact checkpoint, no fallback (CheckpointError if it is missing or
    invalid).  cuda_direct: read straight into CUDA tensors of the current
    device (default: when libcudart is loadable).  Returns the step
    restored, or None when `dir` holds no valid checkpoint (or does not
    exist).  A checkpoint that
    fails verification is skipped (the library logs which file and
    tensor) and the previous one is used.  So is one whose metadata does
    not decode (an unknown tag, a dtype name that is not a real dtype,
    metadata written by the C API): a warning names it; with `step` given
    it raises MetadataError (a ValueError).

    A restore that fails, or returns None, leaves `state` untouched: no
    tensor of it holds bytes that were not verified (a local checkpoint
    is checked whole before any tensor is written; a read from a store
    or into CUDA memory keeps each destination's old bytes aside and
    puts them back on failure).
    A store that does not answer (credentials, no such bucket, network)
    raises CheckpointError naming it - None means only that the
    directory or store holds no valid checkpoint.  A directory of
    spotrun.DistCheckpointer raises, naming how to open it."""
    return _restore(dir, state, max_step, step, cuda_direct, None)


def _restore(dir, state, max_step, step, cuda_direct, engine):
    """restore(), the old bytes kept in engine's staging memory (a
    Checkpointer's: its saves then use that memory) or, engine None, in
    memory mapped for the read."""
    if not isinstance(state, (dict, list)):
        raise TypeError("restore() fills a dict (or list) in place, not a %s"
                        % type(state).__name__)
    lib = _lib.lib()
    if cuda_direct is None:
        cuda_direct = bool(lib.spotckpt_cuda_available())
    limit = _lib.NEWEST if max_step is None else int(max_step)
    while True:
        r = ctypes.c_void_p()
        if step is None:
            rc = lib.spotckpt_reader_open(str(dir).encode(), _lib.NEWEST,
                                          limit, 0, ctypes.byref(r))
        else:
            rc = lib.spotckpt_reader_open(str(dir).encode(), int(step), 0,
                                          0, ctypes.byref(r))
        if step is None and rc in (-_lib.ENOTFOUND, -2):  # -ENOENT
            hint = _multirank_hint(dir)
            if hint:
                raise _lib.CheckpointError(rc, hint)
            return None
        _lib.check(rc, "cannot open a checkpoint in %s" % dir)
        try:
            found = lib.spotckpt_reader_step(r)
            try:
                rc, plan = _restore_one(lib, r, state, cuda_direct, engine)
            except _state.MetadataError as exc:
                # its files verify but its metadata does not decode: as
                # damaged as a bad checksum, so the previous one is used
                if step is not None:
                    raise
                log.warning("skipping checkpoint step %d in %s: %s",
                            found, dir, exc)
                if found <= 0:
                    return None
                limit = found - 1
                continue
            if rc in _FALLBACK_CODES and step is None:
                log.warning("skipping checkpoint step %d in %s: %s (%s)",
                            found, dir, lib.spotckpt_strerror(rc).decode(),
                            lib.spotckpt_errmsg().decode(errors="replace"))
                if found <= 0:
                    return None
                limit = found - 1
                continue
            _lib.check(rc, "cannot read checkpoint step %d in %s"
                       % (found, dir))
            plan.commit(state)
            return found
        finally:
            lib.spotckpt_reader_close(r)


def list_checkpoints(dir):
    """The checkpoints of `dir`, newest first, as dicts (step, time_ns,
    bytes, committed, damaged, ntensors); no checksum verification.  A
    damaged one (its manifest or shard headers do not check out) is not
    committed; restore() skips it."""
    lib = _lib.lib()
    n = ctypes.c_size_t(0)
    _lib.check(lib.spotckpt_list(str(dir).encode(), None, 0,
                                 ctypes.byref(n)), "cannot list %s" % dir)
    arr = (_lib.Entry * max(1, n.value))()
    _lib.check(lib.spotckpt_list(str(dir).encode(), arr, n.value,
                                 ctypes.byref(n)), "cannot list %s" % dir)
    return [{"step": e.step, "time_ns": e.time_ns, "bytes": e.bytes,
             "committed": e.state == 0, "damaged": e.state == 2,
             "ntensors": e.ntensors}
            for e in arr[:min(n.value, len(arr))]]


def verify(dir, step=None):
    """Fully verify a checkpoint (newest committed by default).  Returns
    the step checked; raises CheckpointError naming the damage."""
    out = ctypes.c_int64(-1)
    s = _lib.NEWEST if step is None else int(step)
    _lib.check(_lib.lib().spotckpt_verify(str(dir).encode(), s,
                                          ctypes.byref(out)),
               "checkpoint in %s is invalid" % dir)
    return out.value
