#!/usr/bin/python3
"""The `make demo` training job: a real PyTorch CPU run that spotrun keeps
alive across spot preemptions, and proves it lost nothing.

An MLP with dropout (3 hidden layers, Adam, a step LR schedule) learns a
fixed synthetic 10-class problem on one CPU thread.  All randomness --
dropout (torch RNG), batch sampling (numpy RNG), input noise (Python RNG)
-- is part of the checkpoint, so an interrupted and resumed run ends with
exactly the bits of an uninterrupted one; the demo checks that by running
this script once more with --reference and comparing the hashes.

It is written against the spotrun Python binding (docs/python.md):
  - spotrun.Checkpointer saves every DEMO_CKPT_EVERY steps (asynchronous:
    the call returns after the staging copy, whose duration is the stall);
  - spotrun.preemption: on SIGTERM/SIGUSR1 (what spotrun-agent sends on a
    spot interruption notice) or $SPOTRUN_NOTICE_FILE, it takes a final
    checkpoint at the next step boundary, before the deadline, and exits 0.
and it reports progress to the agent through $SPOTRUN_STATUS_FILE
(docs/api.md): step, total_steps, ckpt_step, restored_step and the stall
of each checkpoint, with a seq number per write.

Environment:
  SPOTRUN_CKPT_DIR     checkpoint directory (set by the agent; required
                       unless --reference)
  SPOTRUN_STATUS_FILE  progress for the agent (optional)
  DEMO_STEPS           optimizer steps (default 1200)
  DEMO_CKPT_EVERY      steps between checkpoints (default 50)
  DEMO_HIDDEN          hidden width (default 64; sets the cost of a step:
                       ~4 ms of CPU at 64, ~32 ms at 192, which a loaded
                       2-CPU machine could not give every 50 ms)
  DEMO_SEED            seed (default 1234)
  DEMO_STEP_MS         pace: at most one step per this many ms (default 50;
                       0 = as fast as the CPU goes).  A real accelerator
                       sets the pace of a real job; here it keeps the run
                       the same length in cloud time on a fast or a slow
                       machine.  It changes no bit of the result.
Flags:
  --reference          run uninterrupted, no checkpoints, print the result
  --result PATH        also write the result JSON to PATH

Output: one line per event; the last line of a finished run is
  RESULT {"steps": N, "hash": "<sha256>", "resumed_from": K, ...}
Exit: 0 finished, or final checkpoint taken after a notice; 75 the final
checkpoint failed (spotrun.preemption.EXIT_CKPT_FAILED); 2 bad usage.
"""

import argparse
import hashlib
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

N_SAMPLES, N_FEATURES, N_CLASSES, BATCH = 4096, 128, 10, 128


def env_int(name, default):
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        sys.exit("train_demo: %s=%r is not an integer" % (name, raw))


class Trainer:
    def __init__(self, seed, hidden, total):
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(N_SAMPLES, N_FEATURES, generator=g)
        teacher = torch.randn(N_FEATURES, N_CLASSES, generator=g)
        self.y = (self.x @ teacher).argmax(dim=1)
        self.model = torch.nn.Sequential(
            torch.nn.Linear(N_FEATURES, hidden), torch.nn.ReLU(),
            torch.nn.Dropout(0.1),
            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
            torch.nn.Dropout(0.1),
            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
            torch.nn.Linear(hidden, N_CLASSES))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.sched = torch.optim.lr_scheduler.StepLR(
            self.opt, max(1, total // 3), 0.5)
        self.step = 0
        self.loss = float("nan")

    def state(self):
        return {"model": self.model.state_dict(),
                "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict(),
                "rng": {"torch": torch.get_rng_state(),
                        "numpy": np.random.get_state(),
                        "python": random.getstate()},
                "step": self.step, "loss": self.loss}

    def load(self, st):
        self.model.load_state_dict(st["model"])
        self.opt.load_state_dict(st["optimizer"])
        self.sched.load_state_dict(st["scheduler"])
        torch.set_rng_state(st["rng"]["torch"])
        np.random.set_state(st["rng"]["numpy"])
        random.setstate(st["rng"]["python"])
        self.step, self.loss = st["step"], st["loss"]

    def train_step(self):
        self.model.train()
        idx = torch.from_numpy(np.random.randint(0, N_SAMPLES, size=BATCH))
        xb = self.x[idx]
        if random.random() < 0.5:
            xb = xb + 0.01 * torch.randn_like(xb)
        loss = torch.nn.functional.cross_entropy(self.model(xb), self.y[idx])
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.sched.step()
        self.step += 1
        self.loss = loss.item()

    def digest(self):
        """SHA-256 over every bit that defines the trained model: weights,
        Adam's moments and step counts, the scheduler, the step."""
        h = hashlib.sha256()
        for name, t in self.model.state_dict().items():
            h.update(name.encode())
            h.update(t.detach().contiguous().numpy().tobytes())
        for pid, s in sorted(self.opt.state_dict()["state"].items()):
            for k in sorted(s):
                v = s[k]
                h.update(("%s.%s" % (pid, k)).encode())
                if torch.is_tensor(v):
                    h.update(v.detach().contiguous().numpy().tobytes())
                else:
                    h.update(repr(v).encode())
        h.update(json.dumps(self.sched.state_dict(), sort_keys=True,
                            default=str).encode())
        h.update(str(self.step).encode())
        return h.hexdigest()


class Status:
    """Atomic writer of $SPOTRUN_STATUS_FILE (temp file + rename)."""

    def __init__(self, path, total):
        self.path, self.total, self.seq = path, total, 0
        self.stalls, self.next_write = [], 0.0

    def write(self, step, ckpt_step, restored, force=False, ckpt_error=None):
        if not self.path:
            return
        now = time.monotonic()
        if not force and now < self.next_write and not self.stalls:
            return
        self.next_write = now + 0.5
        self.seq += 1
        doc = {"seq": self.seq, "step": step, "total_steps": self.total,
               "stall_ms": self.stalls}
        if ckpt_step is not None:
            doc["ckpt_step"] = ckpt_step
        if restored is not None:
            doc["restored_step"] = restored
        if ckpt_error:
            doc["ckpt_error"] = ckpt_error
        tmp = "%s.tmp.%d" % (self.path, os.getpid())
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.path)
        self.stalls = []


def durable_step(ckpt):
    """Newest checkpoint that outlives this node: in the object store when
    there is one, else on the (shared) checkpoint directory."""
    if ckpt.remote is not None:
        s = ckpt.remote_stats()["uploaded_step"]
        return None if s < 0 else s
    return ckpt.last_saved_step()


def remote_problem(ckpt):
    """Why checkpoints are not reaching the object store, or None (the
    agent turns it into a "checkpoint" alert)."""
    if ckpt.remote is None:
        return None
    if ckpt.remote_error:
        return ckpt.remote_error
    st = ckpt.remote_stats()
    if st["last_error"] and st["uploads_failed"]:
        return st["last_message"]
    return None


def finish(tr, resumed, args, extra=None):
    out = {"steps": tr.step, "hash": tr.digest(), "loss": tr.loss,
           "resumed_from": resumed}
    out.update(extra or {})
    line = json.dumps(out, sort_keys=True)
    print("RESULT " + line, flush=True)
    if args.result:
        with open(args.result, "w") as f:
            f.write(line + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", action="store_true")
    p.add_argument("--result", default=None)
    args = p.parse_args()
    total = env_int("DEMO_STEPS", 1200)
    every = env_int("DEMO_CKPT_EVERY", 50)
    hidden = env_int("DEMO_HIDDEN", 64)
    seed = env_int("DEMO_SEED", 1234)
    step_ms = env_int("DEMO_STEP_MS", 50)
    if total < 1 or every < 1 or hidden < 1 or step_ms < 0:
        p.error("DEMO_STEPS, DEMO_CKPT_EVERY and DEMO_HIDDEN must be >= 1, "
                "DEMO_STEP_MS >= 0")
    torch.set_num_threads(1)
    tr = Trainer(seed, hidden, total)

    if args.reference:
        t0 = time.monotonic()
        while tr.step < total:
            tr.train_step()
        finish(tr, None, args, {"seconds": round(time.monotonic() - t0, 3)})
        return 0

    import spotrun
    from spotrun import preemption

    ckdir = os.environ.get("SPOTRUN_CKPT_DIR")
    if not ckdir:
        p.error("SPOTRUN_CKPT_DIR is not set (spotrun-agent sets it)")
    preemption.install()
    status = Status(os.environ.get("SPOTRUN_STATUS_FILE"), total)
    # tier 3: SPOTRUN_CKPT_URI (spotrun.checkpoint.uri) is where a node in
    # another zone finds the checkpoints; this node's disk goes with it
    ckpt = spotrun.Checkpointer(ckdir, keep=2,
                                remote=os.environ.get("SPOTRUN_CKPT_URI"))
    st = tr.state()
    resumed = ckpt.restore(st)
    if resumed is None:
        print("start step=0 of %d (attempt %s)" %
              (total, os.environ.get("SPOTRUN_ATTEMPT", "?")), flush=True)
    else:
        tr.load(st)
        print("resumed step=%d of %d (attempt %s)" %
              (resumed, total, os.environ.get("SPOTRUN_ATTEMPT", "?")),
              flush=True)
    committed = durable_step(ckpt)
    if committed is None:
        committed = resumed
    status.write(tr.step, committed, resumed, force=True)
    t_start = time.monotonic()
    pace = t_start
    while tr.step < total:
        if preemption.should_checkpoint():
            t0 = time.monotonic()
            try:
                met = ckpt.save_final(tr.step, tr.state())
            except spotrun.CheckpointError as exc:
                print("final checkpoint failed: %s" % exc, file=sys.stderr,
                      flush=True)
                return preemption.EXIT_CKPT_FAILED
            ms = (time.monotonic() - t0) * 1000.0
            print("preempted: final checkpoint step=%d in %.1f ms, "
                  "deadline %s" % (tr.step, ms, "met" if met else "MISSED"),
                  flush=True)
            status.stalls.append(round(ms, 3))
            status.write(tr.step, durable_step(ckpt), resumed, force=True)
            ckpt.close()
            return preemption.EXIT_OK
        tr.train_step()
        if tr.step % every == 0 and tr.step < total:
            t0 = time.monotonic()
            ckpt.save(tr.step, tr.state())
            status.stalls.append(round((time.monotonic() - t0) * 1000.0, 3))
        last = durable_step(ckpt)
        if last is not None and last != committed:
            committed = last
        # written right after a save: its stall belongs to this step
        if tr.step % 100 == 0:
            rate = (tr.step - (resumed or 0)) / max(
                1e-9, time.monotonic() - t_start)
            print("step %d/%d loss %.4f (%.0f steps/s)" %
                  (tr.step, total, tr.loss, rate), flush=True)
        status.write(tr.step, committed, resumed,
                     ckpt_error=remote_problem(ckpt))
        if step_ms:
            pace += step_ms / 1000.0
            now = time.monotonic()
            if pace > now:
                time.sleep(pace - now)
            elif now - pace > step_ms / 1000.0:
                pace = now      # behind (a slow machine): no burst to catch up
    # the final state is checkpointed too, so a late preemption or a
    # restart after success restores the finished model
    ckpt.save(tr.step, tr.state())
    ckpt.close()
    status.write(tr.step, tr.step, resumed, force=True)
    finish(tr, resumed, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
