#!/usr/bin/python3
"""Small deterministic training job that survives preemption with spotrun.

An MLP with dropout learns a synthetic 10-class problem ("MNIST-like":
2,048 fixed samples of 32 features labelled by a hidden teacher) with Adam
and a step LR schedule, on the CPU, in one thread.  Every source of
randomness -- dropout (torch RNG), batch sampling (numpy RNG), input noise
(Python RNG) -- is checkpointed, so a run that is killed and resumed ends
with exactly the same weights as one that never stopped.

    PYTHONPATH=python SPOTRUN_CKPT_DIR=/tmp/ck /usr/bin/python3 examples/train.py

Environment (a command-line flag of the same name in lower case, e.g.
--ckpt-every, overrides each):
  SPOTRUN_CKPT_DIR       checkpoint directory (required)
  SPOTRUN_STEPS          total optimizer steps (default 400)
  SPOTRUN_CKPT_EVERY     steps between asynchronous checkpoints (default 50)
  SPOTRUN_CKPT_LAZY      1: lazy saves (return at once; the copy overlaps the
                         next forward/backward and is waited for just
                         before the optimizer step) (default 0)
  SPOTRUN_STEP_SLEEP_MS  sleep per step, to stretch a demo (default 0)
  SPOTRUN_SEED           seed of data, model and RNGs (default 1234)
  SPOTRUN_RESULT_FILE    write the final JSON result line there too
  SPOTRUN_NOTICE_FILE, SPOTRUN_GRACE_S   the preemption contract
                         (docs/python.md)
Flags only:
  --dump PATH            torch.save the final model/optimizer/scheduler
                         state (used by tests to compare runs bit for bit)

Behaviour: resumes from the newest valid checkpoint when there is one;
checkpoints every SPOTRUN_CKPT_EVERY steps and at the end; on SIGTERM /
SIGUSR1 / the notice file it takes a final checkpoint at the next step
boundary and exits.  Prints one line per event on stdout:
  start step=0 | resumed step=K
  committed step=K          (an asynchronous checkpoint reached the disk)
  preempted step=K met_deadline=1
  {"steps": N, "hash": "<sha256 of the weights>", "loss": x, ...}
Exit status: 0 finished or checkpointed after a notice; 75 the final
checkpoint failed; 2 bad arguments.
"""

import argparse
import hashlib
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import spotrun  # noqa: E402
from spotrun import preemption  # noqa: E402

N_SAMPLES, N_FEATURES, N_CLASSES, BATCH = 2048, 32, 10, 64


def env_args(argv):
    def env(name, default):
        return os.environ.get("SPOTRUN_" + name, default)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ckpt-dir", default=env("CKPT_DIR", None))
    p.add_argument("--steps", type=int, default=int(env("STEPS", 400)))
    p.add_argument("--ckpt-every", type=int,
                   default=int(env("CKPT_EVERY", 50)))
    p.add_argument("--ckpt-lazy", type=int, choices=(0, 1),
                   default=int(env("CKPT_LAZY", 0)))
    p.add_argument("--step-sleep-ms", type=float,
                   default=float(env("STEP_SLEEP_MS", 0)))
    p.add_argument("--seed", type=int, default=int(env("SEED", 1234)))
    p.add_argument("--result-file", default=env("RESULT_FILE", None))
    p.add_argument("--dump", default=None)
    a = p.parse_args(argv)
    if not a.ckpt_dir:
        p.error("set SPOTRUN_CKPT_DIR or --ckpt-dir")
    if a.steps < 1 or a.ckpt_every < 1:
        p.error("--steps and --ckpt-every must be >= 1")
    return a


def make_data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N_SAMPLES, N_FEATURES, generator=g)
    teacher = torch.randn(N_FEATURES, N_CLASSES, generator=g)
    return x, (x @ teacher).argmax(dim=1)


def make_model():
    return torch.nn.Sequential(
        torch.nn.Linear(N_FEATURES, 64), torch.nn.ReLU(),
        torch.nn.Dropout(0.1),
        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Dropout(0.1),
        torch.nn.Linear(64, N_CLASSES))


def weights_hash(model):
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(name.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


class Job:
    def __init__(self, seed):
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        self.x, self.y = make_data(seed)
        self.model = make_model()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=3e-3)
        self.sched = torch.optim.lr_scheduler.StepLR(self.opt, 100, 0.5)
        self.step = 0
        self.loss = float("nan")

    def state(self):
        """The checkpointed state, as a PyTorch user keeps it."""
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

    def train_step(self, before_update=None):
        self.model.train()
        idx = torch.from_numpy(np.random.randint(0, N_SAMPLES, size=BATCH))
        xb = self.x[idx]
        if random.random() < 0.5:
            xb = xb + 0.01 * torch.randn_like(xb)
        loss = torch.nn.functional.cross_entropy(self.model(xb), self.y[idx])
        self.opt.zero_grad()
        loss.backward()
        if before_update is not None:
            before_update()     # e.g. wait for a lazy checkpoint's copy
        self.opt.step()
        self.sched.step()
        self.step += 1
        self.loss = loss.item()


def result(job, args, resumed_from):
    out = {"steps": job.step, "hash": weights_hash(job.model),
           "loss": job.loss, "resumed_from": resumed_from}
    line = json.dumps(out)
    print(line, flush=True)
    if args.result_file:
        with open(args.result_file, "w") as f:
            f.write(line + "\n")
    if args.dump:
        torch.save({"model": job.model.state_dict(),
                    "optimizer": job.opt.state_dict(),
                    "scheduler": job.sched.state_dict(),
                    "step": job.step}, args.dump)


def main(argv=None):
    args = env_args(argv)
    torch.set_num_threads(1)
    preemption.install()
    # the Checkpointer first: the memory its restore reads into is
    # faulted in on a thread while the model is built (spotckpt_prefault)
    ckpt = spotrun.Checkpointer(args.ckpt_dir, keep=2)
    job = Job(args.seed)
    st = job.state()
    resumed = ckpt.restore(st)
    if resumed is None:
        print("start step=0", flush=True)
    else:
        job.load(st)
        print("resumed step=%d" % resumed, flush=True)
    committed = ckpt.last_saved_step()
    while job.step < args.steps:
        if preemption.should_checkpoint():
            try:
                met = ckpt.save_final(job.step, job.state())
            except spotrun.CheckpointError as exc:
                print("final checkpoint failed: %s" % exc, file=sys.stderr)
                return preemption.EXIT_CKPT_FAILED
            print("preempted step=%d met_deadline=%d" % (job.step, met),
                  flush=True)
            ckpt.close()
            return preemption.EXIT_OK
        job.train_step(ckpt.wait_staged if args.ckpt_lazy else None)
        if job.step % args.ckpt_every == 0 or job.step == args.steps:
            ckpt.save(job.step, job.state(), lazy=bool(args.ckpt_lazy))
        last = ckpt.last_saved_step()
        if last != committed:
            committed = last
            print("committed step=%d" % last, flush=True)
        if args.step_sleep_ms:
            time.sleep(args.step_sleep_ms / 1000.0)
    ckpt.close()
    result(job, args, resumed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
