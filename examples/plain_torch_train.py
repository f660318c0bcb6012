#!/usr/bin/python3
"""A plain PyTorch training script that has never heard of spotrun.

It is what a SkyPilot spot task usually runs: every --save-every steps it
torch.save()s {model, optimizer, RNG state, step} into --out (a bucket
mount's directory in the task file), and when it starts it resumes from
the newest checkpoint it finds there.  Nothing in it imports spotrun:
spotrun's agent keeps --out in the bucket (docs/jobs.md "Bucket mounts").

    python3 plain_torch_train.py --out DIR [--steps 600] [--save-every 50]
            [--keep 2] [--seed 0] [--step-sleep 0]

Each step trains a small MLP on a batch drawn from a generator seeded by
(seed, step), so a run resumed from a checkpoint ends with the same model,
bit for bit, as one never interrupted.  Checkpoints are written as
ckpt-<step>.pt (torch.save to a temporary name, then os.replace, as
careful scripts do); the oldest beyond --keep are deleted.  At the end the
model alone is saved as final.pt.  It prints "resumed from step N" or
"starting fresh", and "done".
"""

import argparse
import glob
import os
import re
import time

import torch


def batch(seed, step):
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    x = torch.randn(32, 64, generator=g)
    y = torch.randint(0, 10, (32,), generator=g)
    return x, y


def newest(out):
    best = None
    for p in glob.glob(os.path.join(out, "ckpt-*.pt")):
        m = re.match(r"ckpt-(\d+)\.pt$", os.path.basename(p))
        if m and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), p)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--save-every", type=int, default=50)
    ap.add_argument("--keep", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--step-sleep", type=float, default=0.0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(a.seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Dropout(0.1), torch.nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = 0
    found = newest(a.out)
    if found:
        state = torch.load(found[1])
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        start = state["step"]
        print("resumed from step %d" % start, flush=True)
    else:
        print("starting fresh", flush=True)
    for step in range(start + 1, a.steps + 1):
        x, y = batch(a.seed, step)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % a.save_every == 0:
            path = os.path.join(a.out, "ckpt-%06d.pt" % step)
            torch.save({"model": model.state_dict(),
                        "optimizer": opt.state_dict(),
                        "rng": torch.get_rng_state(), "step": step},
                       path + ".tmp")
            os.replace(path + ".tmp", path)
            print("saved step %d loss %.4f" % (step, loss.item()), flush=True)
            old = sorted(glob.glob(os.path.join(a.out, "ckpt-*.pt")))
            for p in old[:-a.keep]:
                os.unlink(p)
        if a.step_sleep:
            time.sleep(a.step_sleep)
    torch.save(model.state_dict(), os.path.join(a.out, "final.pt"))
    print("done", flush=True)


if __name__ == "__main__":
    main()
