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

With more than one rank ($WORLD_SIZE, or rank=/world_size=), Checkpointer
gives a DistCheckpointer: globally committed multi-rank steps, Shard for
sliced tensors, resharding (docs/distributed.md).

See docs/python.md.  The shared library is located by spotrun._lib
($SPOTRUN_LIB, else the repository's build/lib); it is loaded on first use,
so importing the package never fails because of it.
"""

from . import preemption
from ._lib import CheckpointError, LibraryNotFound
from ._state import MetadataError, StateError
from .checkpoint import list_checkpoints, restore, verify
from .dist import Checkpointer, DistCheckpointer, Shard
from .sync import SyncError, sync_now

__all__ = ["Checkpointer", "CheckpointError", "DistCheckpointer", "Shard", "LibraryNotFound",
           "MetadataError", "StateError", "SyncError", "list_checkpoints",
           "preemption", "restore", "sync_now", "verify"]
