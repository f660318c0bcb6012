"""Peer copies of a gang's checkpoint parts (issue 33, restore from a
peer): each rank keeps a copy of the previous rank's part of its newest
step, so that a replaced rank restores from a kept node instead of the
object store.  Only with an object store (dist_remote.py), a process
group, and `spotrun: {peer_replicas: K}` ($SPOTRUN_PEER_REPLICAS, or
DistCheckpointer(peer_replicas=K)).

THE RING.  Rank R's parts (replicated/ on rank 0, rank-RRRRR/) of a step
go, once durable on R's disk, to ranks R+1 .. R+K (mod W), which hold
them in their hold directory:

    HOLD/<part>/step-SSSSSSSS/   an exact copy of R's engine step
                                 (manifest.json + shards), written to
                                 a temporary name and renamed: a
                                 partial copy is never seen

HOLD is $SPOTRUN_PEER_DIR, else <node dir>/peer: a directory that
outlives the workload's process (every attempt restarts it) and dies
with the node.  Each part keeps its two newest steps (the newest may
never commit).  A copy that does not fit the node's available memory
is refused (the error names spotrun.peer_replicas).

RESTORE.  restore() first gathers, over the process group, every rank's
server address and what it can serve (its held copies and its own
tier-2 parts, each as part, step, SHA-256 of the manifest).  A part the
commit record names is then read from, in order:
    1. this node's own tier 2 (a kept node: dist_remote.py);
    2. this node's held copy;
    3. a peer that serves it, over TCP: the copy is written here, its
       manifest's digest checked against the record, and the engine's
       restore verifies every tensor against the manifest;
    4. the object store (tier 3).
A copy that is missing, of another step (stale) or corrupt (digest, or
a tensor that fails verification) is skipped with a warning naming why.
Where each part came from: DistCheckpointer.restore_sources.

WIRE: one TCP connection per request, between the ranks of one attempt
(rank 0's token): put, get and done, each answered by one line
(peer_wire.py, which bounds every count and size).
"""

import hashlib
import logging
import os
import re
import secrets
import shutil
import socket
import sys
import threading
import time

from . import _lib
from . import checkpoint as _ckpt
from . import peer_wire as _wire
from .peer_wire import IO_S, PART_RE, WireError

log = logging.getLogger("spotrun")
ENV = "SPOTRUN_PEER_REPLICAS"
DIR_ENV = "SPOTRUN_PEER_DIR"
KEY = "spotrun.peer_replicas"
STEP_RE = re.compile(r"step-(\d{8,})")
HOLD_KEEP = 2


def replicas_from_env():
    """$SPOTRUN_PEER_REPLICAS as an int (0 when unset)."""
    v = os.environ.get(ENV, "")
    if v == "":
        return 0
    try:
        k = int(v)
    except ValueError:
        raise ValueError("$%s=%r is not an integer (%s)" % (ENV, v, KEY)) \
            from None
    if k < 0:
        raise ValueError("$%s=%d: %s must be >= 0" % (ENV, k, KEY))
    return k


def digest_file(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def mem_available():
    """MemAvailable of /proc/meminfo in bytes, or None."""
    try:
        with open("/proc/meminfo") as f:
            for ln in f:
                if ln.startswith("MemAvailable:"):
                    return int(ln.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _install(tmp, dst):
    """Rename the complete copy tmp to dst (replacing an older one)."""
    if os.path.isdir(dst):
        shutil.rmtree(dst, ignore_errors=True)
    os.rename(tmp, dst)


class Peers:
    """One DistCheckpointer's peer side (`owner`): the server of its held
    copies and own parts, the pusher of its own parts, the fetches of a
    restore."""

    def __init__(self, owner, replicas, hold_dir=None):
        self.o = owner
        self.k = min(int(replicas), owner.world_size - 1)
        self.hold = hold_dir or os.environ.get(DIR_ENV) or \
            os.path.join(owner.dir, "peer")
        os.makedirs(self.hold, exist_ok=True)
        self.token = None
        self.peers = {}      # rank -> {"addr", "port", "holds"}
        self.sock = None
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        self.push_next = None   # (step, [(part, step dir)]) to push
        self.pushing = False
        self.pushed = {}        # step -> True/False (tests, close)
        self.done = {}          # rank -> newest step it put here whole
        self.pusher = None
        self.closed = False
        self.n_tmp = 0

    # -- meeting the other ranks --------------------------------------------
    def meet(self):
        """Start the server and learn every rank's address, what it
        serves and rank 0's token (all_gather over the default group;
        every rank calls it, in restore()).  False without a group of
        this world size: peers stay off."""
        tdist = getattr(sys.modules.get("torch"), "distributed", None)
        if tdist is None or not tdist.is_available() or \
                not tdist.is_initialized() or \
                tdist.get_world_size() != self.o.world_size:
            log.warning("%s: no torch.distributed group of %d ranks: peer "
                        "copies are off", KEY, self.o.world_size)
            return False
        if self.sock is None:
            self._serve()
        mine = {"addr": self.addr, "port": self.port, "holds": self.holds(),
                "token": secrets.token_hex(16) if self.o.rank == 0 else None}
        every = [None] * self.o.world_size
        tdist.all_gather_object(every, mine)
        with self.cv:
            self.token = every[0]["token"]
            self.peers = {r: every[r] for r in range(self.o.world_size)}
            self.cv.notify_all()
        return True

    def _node_addr(self):
        ips = os.environ.get("SKYPILOT_NODE_IPS", "").split()
        if self.o.rank < len(ips):
            return ips[self.o.rank]
        return os.environ.get("SPOTRUN_NODE_ADDR") or "127.0.0.1"

    def _serve(self):
        addr = self._node_addr()
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, 0))
        s.listen(16)
        self.sock, self.addr, self.port = s, addr, s.getsockname()[1]
        threading.Thread(target=self._accept, name="spotrun-peer-serve",
                         daemon=True).start()

    def holds(self):
        """[[part, step, digest], ...] this node can serve: its held
        copies and its own tier-2 parts."""
        out = []
        for base in (self.hold, self.o.dir):
            try:
                names = os.listdir(base)
            except OSError:
                continue
            for part in names:
                if not PART_RE.fullmatch(part):
                    continue
                d = os.path.join(base, part)
                for sd in os.listdir(d) if os.path.isdir(d) else ():
                    m = STEP_RE.fullmatch(sd)
                    if not m:
                        continue
                    dig = digest_file(os.path.join(d, sd, "manifest.json"))
                    if dig:
                        out.append([part, int(m.group(1)), dig])
        return out

    def _dir_of(self, part, step):
        """The step directory this node serves for part/step, or None."""
        sd = "step-%08d" % step
        for base in (self.hold, self.o.dir):
            d = os.path.join(base, part, sd)
            if os.path.isfile(os.path.join(d, "manifest.json")):
                return d
        return None

    # -- the server ------------------------------------------------------------
    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return   # closed
            threading.Thread(target=self._handle, args=(c,),
                             name="spotrun-peer-conn", daemon=True).start()

    def _handle(self, c):
        with c:
            c.settimeout(IO_S)
            try:
                req = _wire.parse_request(_wire.read_line(c))
                # a peer whose all_gather returned first may ask before
                # this rank's has: wait for the token (bounded)
                with self.cv:
                    self.cv.wait_for(lambda: self.token is not None, IO_S)
                if self.token is None or \
                        not secrets.compare_digest(req["token"], self.token):
                    raise WireError("not a rank of this attempt (token)")
                if req["op"] == "get":
                    self._serve_get(c, req)
                elif req["op"] == "done":
                    with self.cv:
                        f = req["from"]
                        self.done[f] = max(self.done.get(f, -1), req["step"])
                        self.cv.notify_all()
                    _wire.send_line(c, {"ok": True})
                else:
                    self._serve_put(c, req)
            except (OSError, WireError) as exc:
                log.warning("peer copy: request refused: %s", exc)
                try:
                    _wire.send_line(c, {"ok": False, "error": str(exc)})
                except OSError:
                    pass

    def _serve_get(self, c, req):
        d = self._dir_of(req["part"], req["step"])
        if d is None:
            raise WireError("%s step %d: not held here"
                            % (req["part"], req["step"]))
        files = _wire.step_files(d)
        _wire.send_line(c, {"ok": True, "files": files})
        _wire.send_files(c, d, files)

    def _serve_put(self, c, req):
        total = sum(s for _, s in req["files"])
        avail = mem_available()
        if avail is not None and total > avail:
            raise WireError(
                "%s: a copy of %s step %d (%d MiB) does not fit this "
                "node's available memory (%d MiB); lower %s"
                % (KEY, req["part"], req["step"], total >> 20, avail >> 20,
                   KEY))
        part_dir = os.path.join(self.hold, req["part"])
        os.makedirs(part_dir, exist_ok=True)
        with self.lock:
            self.n_tmp += 1
            tmp = os.path.join(part_dir, ".tmp-%d-%d" % (os.getpid(),
                                                         self.n_tmp))
        try:
            _wire.recv_files(c, tmp, req["files"])
            _install(tmp, os.path.join(part_dir, "step-%08d" % req["step"]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._trim(part_dir)
        _wire.send_line(c, {"ok": True})

    def _trim(self, part_dir):
        steps = sorted((n for n in os.listdir(part_dir)
                        if STEP_RE.fullmatch(n)), reverse=True)
        for n in steps[HOLD_KEEP:]:
            shutil.rmtree(os.path.join(part_dir, n), ignore_errors=True)

    # -- pushing this rank's parts -----------------------------------------------
    def push(self, step, named):
        """Queue this rank's parts of a durable step (named: [(part,
        engine)]) for ranks R+1 .. R+K; the newest step wins."""
        if not self.peers or self.k < 1:
            return
        dirs = [(p, os.path.join(c.dir, "step-%08d" % step))
                for p, c in named]
        with self.cv:
            self.push_next = (step, dirs)
            if self.pusher is None:
                self.pusher = threading.Thread(
                    target=self._push_loop, name="spotrun-peer-push",
                    daemon=True)
                self.pusher.start()
            self.cv.notify_all()

    def targets(self):
        w, r = self.o.world_size, self.o.rank
        return [(r + i) % w for i in range(1, self.k + 1)]

    def _push_loop(self):
        while True:
            with self.cv:
                while self.push_next is None and not self.closed:
                    self.cv.wait()
                if self.push_next is None:
                    return
                step, dirs = self.push_next
                self.push_next = None
                self.pushing = True
            ok = True
            for t in self.targets():
                for part, d in dirs:
                    ok = self._put_bounded(t, part, step, d) and ok
                self._done(t, step)
            with self.cv:
                self.pushing = False
                self.pushed[step] = ok
                for s in sorted(self.pushed)[:-8]:
                    del self.pushed[s]
                self.cv.notify_all()

    def _put_bounded(self, t, part, step, d):
        """Put one part on rank t: at most two tries (a put is
        idempotent: the copy replaces itself)."""
        err = None
        for _ in range(2):
            try:
                self._put(t, part, step, d)
                return True
            except (OSError, WireError) as exc:
                err = exc
        log.warning("peer copy of %s step %d to rank %d failed: %s",
                    part, step, t, err)
        return False

    def _done(self, t, step):
        """Tell rank t that this rank's parts of step were all put (one
        try: its close() waits for it only until its deadline)."""
        try:
            self._request(t, {"op": "done", "step": step,
                              "from": self.o.rank})
        except (OSError, WireError) as exc:
            log.warning("peer copy: rank %d not told of step %d: %s", t,
                        step, exc)

    def _request(self, t, msg, send=None, recv=None):
        """One request to rank t with this attempt's token (peer_wire.
        request): its reply; OSError or WireError."""
        p = self.peers[t]
        return _wire.request(p["addr"], p["port"],
                             dict(msg, token=self.token), send, recv)

    def _put(self, t, part, step, d):
        files = _wire.step_files(d)
        self._request(t, {"op": "put", "part": part, "step": step,
                          "files": files},
                      send=lambda c: _wire.send_files(c, d, files))

    def wait_pushed(self, step, end):
        """Wait (until time.monotonic() end) for the push of step; its
        result, or None when it did not end in time."""
        with self.cv:
            while step not in self.pushed and time.monotonic() < end and \
                    (self.pushing or self.push_next is not None):
                self.cv.wait(min(0.1, max(0.0, end - time.monotonic())))
            return self.pushed.get(step)

    def close(self, step, end, peer_end):
        """Let a push in flight finish (until time.monotonic() end) and,
        until peer_end, the ranks before this one put their parts of
        step (this rank's last save; None: no wait), then stop the
        pusher and the server."""
        with self.cv:
            while (self.pushing or self.push_next is not None) and \
                    time.monotonic() < end:
                self.cv.wait(min(0.1, max(0.0, end - time.monotonic())))
            w, r = self.o.world_size, self.o.rank
            before = [(r - i) % w for i in range(1, self.k + 1)]
            while step is not None and self.peers and \
                    time.monotonic() < peer_end and \
                    any(self.done.get(p, -1) < step for p in before):
                self.cv.wait(min(0.1, max(0.0, peer_end -
                                          time.monotonic())))
            self.closed = True
            self.push_next = None
            self.cv.notify_all()
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass

    # -- restoring ------------------------------------------------------------------
    def load(self, part, step, holder, want):
        """Restore part/step (whose manifest's SHA-256 the record names:
        want) from this node's held copy or a peer.  Returns where from
        ("held", "peer rank N"), or None: read the store (each copy
        refused is logged with why)."""
        own = os.path.join(self.hold, part)
        if digest_file(os.path.join(own, "step-%08d" % step,
                                    "manifest.json")) == want:
            if self._restore_from(own, step, holder, "this node's copy"):
                return "held"
        for r in sorted(self.peers):
            if r == self.o.rank or \
                    [part, step, want] not in self.peers[r]["holds"]:
                continue
            if self._fetch_restore(r, part, step, holder, want):
                return "peer rank %d" % r
        other = sorted((r, s) for r, p in self.peers.items()
                       if r != self.o.rank
                       for pt, s, d in p["holds"]
                       if pt == part and (s, d) != (step, want))
        if other:
            log.warning("%s step %d: no peer holds the part the commit "
                        "record names; other copies (rank, step) %s are "
                        "stale or differ: reading the store", part, step,
                        other)
        return None

    def _restore_from(self, base, step, holder, what):
        try:
            if _ckpt.restore(base, holder, step=step) == step:
                return True
            log.warning("%s: %s step %d unreadable", what, base, step)
        except (_lib.CheckpointError, ValueError) as exc:
            log.warning("%s of %s step %d refused: %s", what,
                        os.path.basename(base), step, exc)
        return False

    def _fetch_restore(self, r, part, step, holder, want):
        got = os.path.join(self.hold, ".got-%d" % os.getpid(), part)
        shutil.rmtree(got, ignore_errors=True)
        sd = os.path.join(got, "step-%08d" % step)
        try:
            os.makedirs(got)
            self._request(r, {"op": "get", "part": part, "step": step},
                          recv=lambda c, rep: _wire.recv_files(
                              c, sd, _wire.parse_files(rep.get("files"))))
            dig = digest_file(os.path.join(sd, "manifest.json"))
            if dig != want:
                log.warning("peer rank %d's copy of %s step %d refused: "
                            "its manifest's digest %s is not the commit "
                            "record's %s", r, part, step, dig, want)
                return False
            return self._restore_from(got, step, holder,
                                      "peer rank %d's copy" % r)
        except (OSError, WireError) as exc:
            log.warning("peer rank %d's copy of %s step %d: %s", r, part,
                        step, exc)
            return False
        finally:
            shutil.rmtree(os.path.dirname(got), ignore_errors=True)
