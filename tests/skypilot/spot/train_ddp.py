"""A small DistributedDataParallel training loop for tests/skypilot/spot
task files: the process group from torchrun's environment (nccl on GPUs,
else gloo on CPU), a linear model on fixed synthetic data, a torch.save
checkpoint into --ckpt-dir every 10 steps, resumed from the newest one
there.  It never imports spotrun."""

import argparse
import glob
import os

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--ckpt-dir", default=None)
    a = ap.parse_args()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda \
        else torch.device("cpu")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Linear(8, 1).to(dev), device_ids=[dev.index] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(64, 8, generator=g).to(dev)
    y = x.sum(dim=1, keepdim=True)
    start = 0
    if a.ckpt_dir:
        os.makedirs(a.ckpt_dir, exist_ok=True)
        found = sorted(glob.glob(os.path.join(a.ckpt_dir, "step-*.pt")))
        if found:
            st = torch.load(found[-1], map_location=dev)
            model.module.load_state_dict(st["model"])
            opt.load_state_dict(st["opt"])
            start = st["step"]
    for step in range(start, a.steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if a.ckpt_dir and rank == 0 and (step + 1) % 10 == 0:
            torch.save({"model": model.module.state_dict(),
                        "opt": opt.state_dict(), "step": step + 1},
                       os.path.join(a.ckpt_dir, "step-%06d.pt" % (step + 1)))
    t = torch.tensor([loss.item()], device=dev)
    dist.all_reduce(t)
    print("ddp rank=%d world=%d steps=%d start=%d mean_loss=%.6f" %
          (rank, world, a.steps, start, t.item() / world), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
