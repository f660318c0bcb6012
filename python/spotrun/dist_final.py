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
    """Watches the steps a final save of DistCheckpointer `owner` waits
    for - the previous save's, still in flight, and the final one:
    `steps` - against the noticed peers' deadlines; `engines`: the
    owner's engines."""

    def __init__(self, owner, steps, engines, peers):
        self.o = owner
        self.steps = list(steps)
        self.engines = engines
        self.peers = peers          # [(monotonic deadline, rank)]
        self.stop = threading.Event()
        self.thread = None
        self.store = None           # the guard's own, with `remote`

    def check_now(self):
        """Give up, in the caller's thread and before any write, every
        step a noticed peer whose deadline has passed has no part of."""
        now = time.monotonic()
        for mono, r in self.peers:
            if mono > now:
                break
            self._check(r)

    def start(self):
        if not self.peers or self._done():
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

    def abandon(self, step, r):
        """Step can never commit (rank r's part is missing at its
        deadline): stop this rank's writes of it, no marker."""
        o = self.o
        if step in o._abandoned:
            return
        o._abandoned.add(step)
        log.warning("step %d abandoned on rank %d: rank %d's part was not "
                    "in by its notice deadline, so the step can never "
                    "commit; the last committed step stays", step, o.rank, r)
        for c in self.engines:
            c.abandon_final(step)
        if o._rc is not None:
            with o._rc.cv:
                o._rc.cv.notify_all()

    def _done(self):
        return all(s in self.o._abandoned for s in self.steps)

    def _check(self, r):
        for step in self.steps:
            if step not in self.o._abandoned and not self._part_in(r, step):
                self.abandon(step, r)

    def _run(self):
        for mono, r in self.peers:
            if self.stop.wait(max(0.0, mono - time.monotonic())):
                return
            try:
                self._check(r)
            except Exception as exc:   # a store that does not answer
                log.warning("final save: cannot see rank %d's part: %s "
                            "(the writes go on)", r, exc)
                return
            if self._done():
                return

    def _part_in(self, r, step):
        """Rank r's part of step is in: its marker, or for rank 0 the
        record (written only after every marker)."""
        o = self.o
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
