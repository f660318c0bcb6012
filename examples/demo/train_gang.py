#!/usr/bin/python3
"""The gang training job of `make demo`: real PyTorch DDP (gloo, CPU) on
every node of a spotrun gang, one rank per node, that survives a spot
preemption of any one node and proves it lost nothing.

The model and data are train_demo.py's (an MLP with dropout, Adam, a step
LR schedule, a fixed synthetic 10-class problem); each rank draws its own
batches, and DDP averages the gradients, so every rank holds the same
model.  What each rank saves (spotrun.Checkpointer gives a
DistCheckpointer when $WORLD_SIZE > 1, docs/distributed.md):

  replicated  model, Adam, scheduler, step: stored once, by rank 0
  rank-local  Shard(torch RNG) for dropout, Shard(data RNG) for batches

so an interrupted and resumed gang ends with exactly the bits of an
uninterrupted one (scripts/demo checks it against --reference).

The rendezvous comes from the environment the agent gives every rank
(MASTER_ADDR, MASTER_PORT fresh per attempt, RANK, WORLD_SIZE), so a
recovered gang - the kept nodes and the replacement - meets on a new port.
A preemption notice reaches one rank (SIGTERM from its agent); at the next
step boundary spotrun.dist.should_checkpoint() tells every rank (one
all_reduce, which also gives every rank the notice's deadline: no rank
waits past it for a peer's part), all ranks take their final checkpoint
for the same step and exit 0.  Progress goes to $SPOTRUN_STATUS_FILE as
in train_demo.py.  "joining the rendezvous" / "rendezvous joined" time a
restart (bench/gang_recovery.py).

Environment: as train_demo.py (DEMO_STEPS, DEMO_CKPT_EVERY, DEMO_HIDDEN,
DEMO_SEED, DEMO_STEP_MS), plus the torch.distributed variables above, and
for bench/gang_recovery.py's real-cloud profiles: DEMO_STATE_MB (default
0) a rank-local Shard of that many MiB in every checkpoint, standing for
a large model's part (one byte changes per step), and DEMO_IMPORT_MS
(default 0) how long the imports take at least, standing for a GPU
node's `import torch` and CUDA initialisation (a wait after this
machine's own imports, when they took less; gang_imports.py, which a
warm server preloads: `python3 -m spotrun.warm`).
Flags: --reference (uninterrupted, no checkpoints), --result PATH.
Output: "resumed step=K ..." / "start step=0 ...", "restored from: ..."
and "restore took: ...", "preempted: final checkpoint step=K ..." and
"final phases: {...}" (where its time went), and on rank 0 of a
finished run
  RESULT {"steps": N, "hash": "<sha256>", "world_size": W, ...}
Exit: 0 finished or final checkpoint taken; 75 the final checkpoint did
not commit; 2 bad usage.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

import gang_imports  # noqa: E402,F401  (torch, DEMO_IMPORT_MS's floor)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from train_demo import (N_SAMPLES, BATCH, Status, Trainer,  # noqa: E402
                        env_int, finish)


class GangTrainer(Trainer):
    """train_demo's Trainer under DDP: per-rank batches and dropout."""

    def __init__(self, seed, hidden, total, rank, world, state_mb=0):
        super().__init__(seed, hidden, total)
        # ballast: not part of the result's hash
        self.ballast = torch.full((state_mb << 20,), rank, dtype=torch.uint8)
        # Beyond 2 ranks the order of a gradient sum changes its rounding.
        # DDP rebuilds its gradient buckets after the first step of every
        # process, so a resumed attempt would sum in another order than
        # the uninterrupted run; find_unused_parameters keeps the first
        # buckets.  (Two ranks: a + b == b + a, bit for bit.)
        self.ddp = torch.nn.parallel.DistributedDataParallel(
            self.model, find_unused_parameters=world > 2)
        torch.manual_seed(seed + 7919 * (rank + 1))
        self.data = torch.Generator().manual_seed(seed * 1000 + rank)

    def state(self):
        from spotrun import Shard
        st = {"model": self.model.state_dict(),
              "optimizer": self.opt.state_dict(),
              "scheduler": self.sched.state_dict(),
              "rng": Shard(torch.get_rng_state()),
              "data_rng": Shard(self.data.get_state()),
              "step": self.step}
        if self.ballast.numel():
            st["ballast"] = Shard(self.ballast)
        return st

    def load(self, st):
        self.model.load_state_dict(st["model"])
        self.opt.load_state_dict(st["optimizer"])
        self.sched.load_state_dict(st["scheduler"])
        torch.set_rng_state(st["rng"].tensor)
        self.data.set_state(st["data_rng"].tensor)
        if "ballast" in st:
            self.ballast = st["ballast"].tensor
        self.step = st["step"]

    def train_step(self):
        self.model.train()
        idx = torch.randint(0, N_SAMPLES, (BATCH,), generator=self.data)
        xb = self.x[idx]
        if torch.rand(1, generator=self.data).item() < 0.5:
            xb = xb + 0.01 * torch.randn_like(xb)
        loss = torch.nn.functional.cross_entropy(self.ddp(xb), self.y[idx])
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.sched.step()
        if self.ballast.numel():
            self.ballast[self.step % self.ballast.numel()] += 1
        self.step += 1
        self.loss = loss.item()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", action="store_true")
    p.add_argument("--result", default=None)
    args = p.parse_args()
    total = env_int("DEMO_STEPS", 1200)
    every = env_int("DEMO_CKPT_EVERY", 50)
    hidden = env_int("DEMO_HIDDEN", 192)
    seed = env_int("DEMO_SEED", 1234)
    step_ms = env_int("DEMO_STEP_MS", 50)
    state_mb = env_int("DEMO_STATE_MB", 0)
    import_ms = env_int("DEMO_IMPORT_MS", 0)
    if total < 1 or every < 1 or hidden < 1 or min(step_ms, state_mb,
                                                   import_ms) < 0:
        p.error("DEMO_STEPS, DEMO_CKPT_EVERY and DEMO_HIDDEN must be >= 1, "
                "DEMO_STEP_MS, DEMO_STATE_MB and DEMO_IMPORT_MS >= 0")
    for v in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        if not os.environ.get(v):
            p.error("$%s is not set (spotrun-agent sets it on every node)"
                    % v)
    torch.set_num_threads(1)
    # the two lines bench/gang_recovery.py times a recovery's restart by
    print("joining the rendezvous (imports done%s)" % (
        ", a warm start" if os.environ.get("SPOTRUN_WARM") else ""),
        flush=True)
    dist.init_process_group("gloo", init_method="env://")
    print("rendezvous joined", flush=True)
    rank, world = dist.get_rank(), dist.get_world_size()
    tr = GangTrainer(seed, hidden, total, rank, world, state_mb)
    extra = {"world_size": world, "rank": rank}

    if args.reference:
        t0 = time.monotonic()
        while tr.step < total:
            tr.train_step()
        extra["seconds"] = round(time.monotonic() - t0, 3)
        if rank == 0:
            finish(tr, None, args, extra)
        dist.destroy_process_group()
        return 0

    import spotrun
    from spotrun import preemption

    ckdir = os.environ.get("SPOTRUN_CKPT_DIR")
    if not ckdir:
        p.error("SPOTRUN_CKPT_DIR is not set (spotrun-agent sets it)")
    preemption.install()
    status = Status(os.environ.get("SPOTRUN_STATUS_FILE"), total)
    # tier 3: with SPOTRUN_CKPT_URI (spotrun.checkpoint.uri) every rank's
    # part and the global commit records go to the object store, and
    # SPOTRUN_CKPT_DIR is this node's own disk
    ckpt = spotrun.Checkpointer(ckdir, keep=2,
                                remote=os.environ.get("SPOTRUN_CKPT_URI"))
    st = tr.state()
    took = (time.monotonic(), time.process_time())
    resumed = ckpt.restore(st)
    took = (time.monotonic() - took[0], time.process_time() - took[1])
    where = "attempt %s, rank %d of %d, rendezvous %s:%s" % (
        os.environ.get("SPOTRUN_ATTEMPT", "?"), rank, world,
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"])
    if resumed is None:
        print("start step=0 of %d (%s)" % (total, where), flush=True)
    else:
        tr.load(st)
        print("resumed step=%d of %d (%s)" % (resumed, total, where),
              flush=True)
        # where each part came from (spotrun: {peer_replicas: 1} with
        # an object store: a peer's copy, else tier 2 or the store)
        src = getattr(ckpt, "restore_sources", None)
        if src:
            print("restored from: %s" % ", ".join(
                "%s=%s" % kv for kv in sorted(src.items())), flush=True)
        print("restore took: %.3f s, %.3f CPU-s of this process" % took,
              flush=True)
    committed = resumed
    status.write(tr.step, committed, resumed, force=True)
    t_start = pace = time.monotonic()
    while tr.step < total:
        # every rank asks at the same step boundary: a notice on any node
        # stops the whole gang at this step
        if spotrun.dist.should_checkpoint():
            t0 = time.monotonic()
            try:
                ok = ckpt.save_final(tr.step, tr.state())
            except spotrun.CheckpointError as exc:
                print("final checkpoint failed: %s" % exc, file=sys.stderr,
                      flush=True)
                return preemption.EXIT_CKPT_FAILED
            ms = (time.monotonic() - t0) * 1000.0
            print("preempted: final checkpoint step=%d in %.1f ms (rank %d%s)"
                  % (tr.step, ms, rank, ", committed" if ok and rank == 0
                     else ""), flush=True)
            # where its time went (spotrun.DistCheckpointer.final_phases)
            phases = getattr(ckpt, "final_phases", None)
            if phases:
                print("final phases: %s" % json.dumps(phases), flush=True)
            status.stalls.append(round(ms, 3))
            status.write(tr.step, ckpt.last_committed_step(), resumed,
                         force=True)
            ckpt.close()
            dist.destroy_process_group()
            return preemption.EXIT_OK if ok else preemption.EXIT_CKPT_FAILED
        tr.train_step()
        if tr.step % every == 0 and tr.step < total:
            t0 = time.monotonic()
            ckpt.save(tr.step, tr.state())   # the commit runs behind
            status.stalls.append(round((time.monotonic() - t0) * 1000.0, 3))
        if tr.step % 100 == 0:
            rate = (tr.step - (resumed or 0)) / max(
                1e-9, time.monotonic() - t_start)
            print("step %d/%d loss %.4f (%.0f steps/s)" %
                  (tr.step, total, tr.loss, rate), flush=True)
            committed = ckpt.last_committed_step()
        status.write(tr.step, committed, resumed)
        if step_ms:
            pace += step_ms / 1000.0
            now = time.monotonic()
            if pace > now:
                time.sleep(pace - now)
            elif now - pace > step_ms / 1000.0:
                pace = now
    ckpt.save(tr.step, tr.state())
    ckpt.close()
    status.write(tr.step, tr.step, resumed, force=True)
    if rank == 0:
        finish(tr, resumed, args, extra)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
