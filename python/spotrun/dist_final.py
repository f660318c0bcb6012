"""The kept ranks' side of a gang's final checkpoint: give it up once it
can no longer commit (spotrun.DistCheckpointer.save_final).

A noticed rank's part of the final step is in by its notice deadline or
never: its node is gone after it.  At each noticed peer's deadline
(should_checkpoint() learns every rank's), a kept rank looks for that
peer's part - its prepared marker, or for rank 0 the commit record, which
rank 0 writes only after every marker - and when it is missing the step
can never commit.  The kept rank then stops its own write of the step at
once (Checkpointer.abandon_final: the engine discards the step's
temporary directory), writes no marker, stops waiting for the upload, and
save_final() returns False, so that its process exits and the gang's next
attempt starts without waiting for a write nobody can use.  Nothing
half-written becomes visible: the last committed step stays, on disk and
in the store.

    save_final(S) on a kept rank
      |  a peer's deadline already passed, its part missing
      |-------------------------------------------------->  ABANDONED
      v                                                   (nothing written)
    WRITING (tier 2, upload, marker)  + the guard thread
      |  the guard, at each noticed peer's deadline:
      |    part in   -> wait for the next noticed peer
      |    missing   -> ABANDONED (write cancelled, no marker, False)
      v
    DONE (the usual commit; the guard stops)

See docs/design/distributed.md, "A kept rank gives up a final step that
cannot commit".
"""

import logging
import os
import threading
import time

from . import dist_remote as _remote
from .objects import ObjectStore

log = logging.getLogger("spotrun")


def noticed_peers(peers, rank):
    """[(monotonic deadline, rank)] of the noticed ranks other than
    `rank`, earliest first.  peers: {rank: monotonic deadline}."""
    return sorted((m, r) for r, m in (peers or {}).items() if r != rank)


class FinalGuard:
    """Watches one final step `step` of DistCheckpointer `owner` (its
    engines: `engines`) against the noticed peers' deadlines."""

    def __init__(self, owner, step, engines, peers):
        self.o = owner
        self.step = step
        self.engines = engines
        self.peers = peers          # [(monotonic deadline, rank)]
        self.stop = threading.Event()
        self.thread = None
        self.store = None           # the guard's own, with `remote`

    def doomed_now(self):
        """The first noticed peer whose deadline has passed without its
        part (checked in the caller's thread, before any write), or
        None."""
        now = time.monotonic()
        for mono, r in self.peers:
            if mono > now:
                break
            if not self._part_in(r):
                return r
        return None

    def start(self):
        if not self.peers:
            return
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="spotrun-final-guard")
        self.thread.start()

    def close(self):
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        if self.store is not None:
            self.store.close()
            self.store = None

    def abandon(self, r):
        """The step can never commit (rank r's part is missing at its
        deadline): stop this rank's write of it."""
        o = self.o
        if o._abandoned == self.step:
            return
        o._abandoned = self.step
        log.warning("final step %d abandoned on rank %d: rank %d's part was "
                    "not in by its notice deadline, so the step can never "
                    "commit; the last committed step stays", self.step,
                    o.rank, r)
        for c in self.engines:
            c.abandon_final(self.step)
        if o._rc is not None:
            with o._rc.cv:
                o._rc.cv.notify_all()

    def _run(self):
        for mono, r in self.peers:
            if self.stop.wait(max(0.0, mono - time.monotonic())):
                return
            try:
                if self._part_in(r):
                    continue
            except Exception as exc:   # a store that does not answer
                log.warning("final step %d: cannot see rank %d's part: %s "
                            "(the write goes on)", self.step, r, exc)
                return
            self.abandon(r)
            return

    def _part_in(self, r):
        """Rank r's part of the step is in: its marker, or for rank 0 the
        record (written only after every marker)."""
        o, step = self.o, self.step
        if o._rc is None:
            if r == 0:
                return os.path.exists(o._record_path(step))
            return o._read_marker(o._step_dir(step), r, step) is not None
        if self.store is None:
            # the committer thread has its own; this runs beside it
            self.store = ObjectStore(o.remote)
        if r == 0:
            return self.store.get(_remote.record_key(step)) is not None
        data = self.store.get(_remote.marker_key(step, r))
        return data is not None and _remote.marker_of(o, data, step, r) \
            is not None
