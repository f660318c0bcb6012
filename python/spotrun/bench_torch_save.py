"""Time torch.save + fsync of a model-like state: the peer that
`spotrun ckpt bench` compares its stall against (stall_vs_torch_save).

    /usr/bin/python3 python/spotrun/bench_torch_save.py --bytes N --dir DIR

Builds float32 tensors totalling N bytes (N is rounded down to a multiple
of 4), shaped like a model plus its Adam state: the sizes cycle through
16 MiB, 4 MiB, 1 MiB, 64 KiB and 4 KiB, each appearing three times in a
row (parameter, exp_avg, exp_avg_sq); the last tensor takes the
remainder.  The tensors are written (every page touched) before the clock
starts.  Times torch.save of the dict into DIR/torch-save-bench-<pid>.pt,
flush and fsync, then deletes the file, and prints one JSON line:

    {"seconds": <float>, "bytes": N}

Exit status 2 on bad arguments, 1 if saving fails (message on stderr).
"""

import argparse
import json
import os
import sys
import time

SIZES = (16 << 20, 4 << 20, 1 << 20, 64 << 10, 4 << 10)
COPIES = 3


def tensor_sizes(total):
    """Byte sizes of the tensors for `total` bytes (multiples of 4)."""
    total -= total % 4
    out, i = [], 0
    while total > 0:
        size = min(SIZES[(i // COPIES) % len(SIZES)], total)
        out.append(size)
        total -= size
        i += 1
    return out


def build(total):
    import torch
    state = {}
    for i, size in enumerate(tensor_sizes(total)):
        t = torch.empty(size // 4, dtype=torch.float32)
        t.fill_(float(i % 7) + 0.5)
        state["t%05d" % i] = t
    return state


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bytes", type=int, required=True,
                   help="total tensor bytes (> 0)")
    p.add_argument("--dir", required=True, help="directory to write into")
    args = p.parse_args(argv)
    if args.bytes < 4:
        p.error("--bytes must be at least 4, not %d" % args.bytes)
    if not os.path.isdir(args.dir):
        p.error("--dir %s is not a directory" % args.dir)
    import torch
    torch.set_num_threads(1)
    state = build(args.bytes)
    nbytes = sum(t.numel() * 4 for t in state.values())
    path = os.path.join(args.dir, "torch-save-bench-%d.pt" % os.getpid())
    try:
        t0 = time.perf_counter()
        with open(path, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        seconds = time.perf_counter() - t0
    except OSError as exc:
        print("bench_torch_save: writing %s: %s" % (path, exc),
              file=sys.stderr)
        return 1
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    print(json.dumps({"seconds": seconds, "bytes": nbytes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
