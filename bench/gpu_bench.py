#!/usr/bin/python3
"""The checkpoint engine on a GPU: the measurements behind bench/gpu.sh.

    /usr/bin/python3 bench/gpu_bench.py --device cuda --sizes 1G,8G --dir D
    /usr/bin/python3 bench/gpu_bench.py --device cpu --sizes 64M --dir D

For each size it builds a model-like float32 state (parameter, exp_avg,
exp_avg_sq triples of 16 MiB .. 4 KiB, as python/spotrun/bench_torch_save.py
does) on the device and measures, `--reps` times in pairs, median kept:

  stall_vs_d2h_memcpy   time the engine's save blocks training (tier 1:
                        device -> pinned staging on the engine's stream;
                        its last_stall_ns; the Python call's wall time is
                        python_save_s) / a plain copy of the same tensors into one
                        pinned host buffer (cudaMemcpy D2H) right before it.
                        Goal <= 1.10.  On the CPU the peer is a host copy.
  stall_vs_torch_save   the same stall / torch.save of the same state +
                        fsync (torch copies CUDA tensors to the host itself).
  restore_s             restore into the device tensors (verified).

train_overhead (--overhead-layers N, 0 = skip): a model of N square
Linear layers (--overhead-width, 4096) and Adam trains on the device;
rounds of --overhead-steps steps without a checkpoint, then one save and
as many steps with the disk write in flight.  Reported: the save's stall,
the median step time clean and while the tier-2 write runs, the write's duration, and the cost
per 30 s checkpoint interval = (stall + extra step time during the
write) / 30 s.  Goal < 1%.

Then the bit-exact resume test on the device: a small MLP with dropout and
Adam trains N steps straight; another run trains N/2, checkpoints, is
thrown away, and a fresh model restored from the checkpoint trains to N.
Every tensor of both final states must match bit for bit.

Prints one JSON object on stdout.  Exit status 0 when every measurement
ran and the resume test passed, 1 otherwise, 2 on bad arguments.
"""

import argparse
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))

SIZES = (16 << 20, 4 << 20, 1 << 20, 64 << 10, 4 << 10)


def parse_size(s):
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B").rstrip("I")
    if s and s[-1] in mul:
        return int(float(s[:-1]) * mul[s[-1]])
    return int(s)


def build_state(torch, nbytes, device):
    state, i, left = {}, 0, nbytes - nbytes % 4
    while left > 0:
        size = min(SIZES[(i // 3) % len(SIZES)], left)
        t = torch.empty(size // 4, dtype=torch.float32, device=device)
        t.uniform_(1.0, 2.0)
        state["t%05d" % i] = t
        left -= size
        i += 1
    return state


def sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def d2h_peer(torch, state, device, host):
    """Copy every tensor into one pinned host buffer (cudaMemcpy D2H on
    the CUDA side); returns seconds."""
    sync(torch, device)
    t0 = time.perf_counter()
    off = 0
    for t in state.values():
        n = t.numel()
        host[off:off + n].copy_(t, non_blocking=False)
        off += n
    sync(torch, device)
    return time.perf_counter() - t0


def torch_save_peer(torch, state, d):
    path = os.path.join(d, "torch-save-%d.pt" % os.getpid())
    sync(torch, next(iter(state.values())).device.type)
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    s = time.perf_counter() - t0
    os.unlink(path)
    return s


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def bench_size(torch, spotrun, nbytes, device, d, reps):
    state = build_state(torch, nbytes, device)
    total = sum(t.numel() * 4 for t in state.values())
    host = torch.empty(total // 4, dtype=torch.float32,
                       pin_memory=(device == "cuda"))
    host.fill_(0)   # fault every page before timing
    ckdir = os.path.join(d, "ck-%d" % total)
    stalls, walls, peers, restores = [], [], [], []
    with spotrun.Checkpointer(ckdir, keep=1) as ck:
        ck.save(0, state)          # registers and allocates the staging
        ck.wait()
        for r in range(reps):
            peers.append(d2h_peer(torch, state, device, host))
            sync(torch, device)
            t0 = time.perf_counter()
            ck.save(r + 1, state)  # returns after the tier-1 copy
            walls.append(time.perf_counter() - t0)
            # the engine's own stall (what a C caller sees); the wall
            # time adds the binding's walk over the state dict
            stalls.append(ck.stats()["last_stall_ns"] * 1e-9)
            ck.wait()
        for r in range(reps):
            t0 = time.perf_counter()
            ck.restore(state)
            sync(torch, device)
            restores.append(time.perf_counter() - t0)
        stats = ck.stats()
    del host
    tsave = torch_save_peer(torch, state, d)
    shutil.rmtree(ckdir, ignore_errors=True)
    del state
    if device == "cuda":
        torch.cuda.empty_cache()
    stall, peer = median(stalls), median(peers)
    return {
        "bytes": total,
        "stall_vs_d2h_memcpy": {
            "ratio": stall / peer, "stall_s": stall, "d2h_memcpy_s": peer,
            "python_save_s": median(walls),
            "pairs": reps, "pair_ratios": [s / p for s, p in
                                           zip(stalls, peers)],
            "peer": "copy into one pinned host buffer (cudaMemcpy D2H)"
                    if device == "cuda" else "host copy (no GPU)",
            "goal_max": 1.10},
        "stall_vs_torch_save": {"ratio": stall / tsave, "stall_s": stall,
                                "torch_save_s": tsave, "goal_max": 0.05},
        "restore_s": median(restores),
        "restore_gbps": total / median(restores) / 1e9,
        "cuda_loaded": bool(stats.get("cuda_loaded")),
    }


def overhead_test(torch, spotrun, device, d, layers, steps, width,
                  rounds=3):
    """Training throughput with a checkpoint's stall and background write
    against the same steps without one, interleaved rounds."""
    torch.manual_seed(3)
    batch = 1024
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width)
                                  for _ in range(layers)]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width, device=device)

    def step():
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sync(torch, device)

    for _ in range(3):
        step()
    state = {"model": model.state_dict(), "opt": opt.state_dict()}
    ckdir = os.path.join(d, "overhead")
    clean, during, after, stalls, writes = [], [], [], [], []
    with spotrun.Checkpointer(ckdir, keep=1) as ck:
        ck.save(0, state)               # registers, allocates the staging
        ck.wait()
        for r in range(rounds):
            for _ in range(steps):
                t0 = time.perf_counter()
                step()
                clean.append(time.perf_counter() - t0)
            done = ck.stats()["saves_committed"]
            t0 = time.perf_counter()
            ck.save(r + 1, state)
            t_saved = time.perf_counter()
            stalls.append(t_saved - t0)
            t_write = None
            for _ in range(steps):
                t0 = time.perf_counter()
                step()
                t1 = time.perf_counter()
                if t_write is None:
                    during.append(t1 - t0)
                    if ck.stats()["saves_committed"] > done:
                        t_write = t1 - t_saved
                else:
                    after.append(t1 - t0)
            ck.wait()
            writes.append(t_write if t_write is not None
                          else time.perf_counter() - t_saved)
        nbytes = ck.stats()["state_bytes"]
    shutil.rmtree(ckdir, ignore_errors=True)
    del model, opt, state
    if device == "cuda":
        torch.cuda.empty_cache()
    clean_s, during_s = median(clean), median(during)
    stall, write = median(stalls), median(writes)
    extra = max(0.0, during_s - clean_s) * len(during) / rounds
    return {"layers": layers, "state_bytes": nbytes,
            "step_s_clean": clean_s, "step_s_during_write": during_s,
            "steps_during_write": len(during), "steps_clean": len(clean),
            "stall_s": stall, "write_s": write,
            "per_30s_interval": (stall + extra) / 30.0,
            "goal_max": 0.01,
            "measures": "(stall + (median step during the write - median "
                        "clean step) x steps during one write) / 30 s"}


def resume_test(torch, spotrun, device, d, n=40):
    """Bit-exact resume of a small MLP with dropout and Adam on device."""
    def make(seed):
        torch.manual_seed(seed)
        m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Dropout(0.2),
                                torch.nn.Linear(64, 10)).to(device)
        return m, torch.optim.Adam(m.parameters(), lr=1e-2)

    torch.manual_seed(11)
    data = torch.randn(256, 32, device=device)
    labels = torch.randint(0, 10, (256,), device=device)

    def train(m, opt, steps, start):
        for k in range(start, start + steps):
            idx = torch.arange(k * 16, k * 16 + 16, device=device) % 256
            loss = torch.nn.functional.cross_entropy(m(data[idx]),
                                                     labels[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()

    def rng():
        r = {"cpu": torch.get_rng_state()}
        if device == "cuda":
            r["cuda"] = torch.cuda.get_rng_state()
        return r

    def set_rng(r):
        torch.set_rng_state(r["cpu"])
        if device == "cuda":
            torch.cuda.set_rng_state(r["cuda"])

    m, opt = make(5)
    torch.manual_seed(99)
    train(m, opt, n, 0)
    straight = {"model": m.state_dict(), "opt": opt.state_dict()}

    ckdir = os.path.join(d, "resume")
    m, opt = make(5)
    torch.manual_seed(99)
    train(m, opt, n // 2, 0)
    with spotrun.Checkpointer(ckdir) as ck:
        ck.save(n // 2, {"model": m.state_dict(), "opt": opt.state_dict(),
                         "rng": rng()})
        ck.wait()
    del m, opt
    m, opt = make(6)                       # different weights on purpose
    train(m, opt, 1, 0)                    # and optimizer state to match
    into = {"model": m.state_dict(), "opt": opt.state_dict(), "rng": None}
    step = spotrun.restore(ckdir, into)
    m.load_state_dict(into["model"])
    opt.load_state_dict(into["opt"])
    set_rng(into["rng"])
    train(m, opt, n - n // 2, n // 2)
    resumed = {"model": m.state_dict(), "opt": opt.state_dict()}
    shutil.rmtree(ckdir, ignore_errors=True)

    bad = []

    def cmp(a, b, path):
        if isinstance(a, torch.Tensor):
            if a.device.type != b.device.type and path.startswith("model"):
                bad.append("%s: on %s, not %s" % (path, b.device, a.device))
            elif a.cpu().numpy().tobytes() != b.cpu().numpy().tobytes():
                bad.append(path)
        elif isinstance(a, dict):
            for k in a:
                cmp(a[k], b.get(k), "%s.%s" % (path, k))
        elif isinstance(a, (list, tuple)):
            for i, (x, y) in enumerate(zip(a, b)):
                cmp(x, y, "%s[%d]" % (path, i))
        elif a != b:
            bad.append(path)
    cmp(straight, resumed, "state")
    on_device = all(t.device.type == device
                    for t in resumed["model"].values())
    return {"passed": not bad and on_device and step == n // 2,
            "restored_step": step, "steps": n, "device": device,
            "tensors_on_device": on_device, "differing": bad[:10]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cuda", "cpu"), required=True)
    p.add_argument("--sizes", default="1G,8G")
    p.add_argument("--dir", required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--overhead-layers", type=int, default=0,
                   help="train_overhead's model depth (0: not measured)")
    p.add_argument("--overhead-steps", type=int, default=30)
    p.add_argument("--overhead-width", type=int, default=4096)
    a = p.parse_args(argv)
    try:
        sizes = [parse_size(s) for s in a.sizes.split(",")]
    except ValueError:
        p.error("--sizes: %r is not a list of sizes like 1G,8G" % a.sizes)
    if not os.path.isdir(a.dir):
        p.error("--dir %s is not a directory" % a.dir)
    if a.device == "cuda":
        # deterministic kernels for the resume test
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    import spotrun
    torch.use_deterministic_algorithms(True)
    out = {"device": a.device, "torch": torch.__version__, "sizes": {}}
    if a.device == "cuda":
        out["gpu"] = torch.cuda.get_device_name(0)
        out["torch_cuda"] = torch.version.cuda
    ok = True
    for s in sizes:
        label = "%dMiB" % (s >> 20)
        free = (torch.cuda.mem_get_info()[0] if a.device == "cuda"
                else os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        if 2.2 * s > free:
            out["sizes"][label] = {"skipped": "needs about %.1f GiB free on "
                                   "the %s, %.1f GiB are" % (
                                       2.2 * s / 2**30, a.device,
                                       free / 2**30)}
            continue
        try:
            out["sizes"][label] = bench_size(torch, spotrun, s, a.device,
                                             a.dir, a.reps)
        except Exception as exc:  # report and go on with the next size
            out["sizes"][label] = {"error": "%s: %s" % (type(exc).__name__,
                                                        exc)}
            ok = False
    if a.overhead_layers > 0:
        try:
            out["train_overhead"] = overhead_test(
                torch, spotrun, a.device, a.dir, a.overhead_layers,
                a.overhead_steps, a.overhead_width)
        except Exception as exc:
            out["train_overhead"] = {"error": "%s: %s" % (
                type(exc).__name__, exc)}
            ok = False
    out["resume_bit_exact"] = resume_test(torch, spotrun, a.device, a.dir)
    ok = ok and out["resume_bit_exact"]["passed"]
    print(json.dumps(out, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
