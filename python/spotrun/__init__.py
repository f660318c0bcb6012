"""spotrun: checkpoints that survive spot-instance preemption.

    import spotrun
    ckpt = spotrun.Checkpointer("/ckpt", keep=2)
    spotrun.preemption.install()
    start = ckpt.restore(state)          # None: fresh start
    ...
    ckpt.save(step, state)               # returns after the staging copy
    if spotrun.preemption.should_checkpoint():
        ckpt.save_final(step, state)
        sys.exit(0)

See docs/python.md.  The shared library is located by spotrun._lib
($SPOTRUN_LIB, else the repository's build/lib); it is loaded on first use,
so importing the package never fails because of it.
"""

from . import preemption
from ._lib import CheckpointError, LibraryNotFound
from ._state import MetadataError, StateError
from .checkpoint import (Checkpointer, list_checkpoints, restore,
                         verify)

__all__ = ["Checkpointer", "CheckpointError", "LibraryNotFound",
           "MetadataError", "StateError", "list_checkpoints", "preemption", "restore",
           "verify"]
