"""Rank programs for tests/py/test_dist_peer.py (peer copies, issue 33):
2-rank DDP training (dist_workers.py) checkpointed into a file:// object
store with spotrun's peer copies on; each rank's node-local directory is
named by the test, so a test keeps one node and replaces the other."""

import json
import os

import torch.distributed as dist

import spotrun
import dist_workers as w


def ddp_peer(rank, world, port, dirs, uri, out, with_ref, stop_at, total,
             every, name):
    """with_ref: the uninterrupted reference first (OUT/ref-<rank>.pt).
    Then train from the newest global step with peer copies on, until
    stop_at (OUT/<name>-<rank>.pt) and write where each part was read
    from (OUT/<name>-<rank>.json)."""
    w._group(rank, world, port)
    if with_ref:
        w._ddp_run(rank, None, total, total, every, out, "ref")
    c = spotrun.Checkpointer(dirs[rank], rank=rank, world_size=world,
                             keep=2, remote=uri, peer_replicas=1,
                             commit_timeout=60)
    w._ddp_run(rank, c, stop_at, total, every, out, name)
    c.close()
    with open(os.path.join(out, "%s-%d.json" % (name, rank)), "w") as f:
        json.dump(c.restore_sources, f)
    dist.destroy_process_group()
