#!/usr/bin/python3
"""A gang rank's restore of its own part, alone: into new tensors then
copied into the state's (as spotrun.DistCheckpointer did before session
24), or straight into the state's tensors (since).

    /usr/bin/python3 bench/part_restore.py [--size-mb 512] [--runs 3]
        [--shm /dev/shm] [--disk /var/tmp] [--json]

Writes one checkpoint of a --size-mb uint8 tensor (and a small one) to a
directory on the tmpfs --shm (what a kept node's copy is: dist_keep.py)
and, through tier 3, to a file:// store on the disk --disk (what the
noticed rank's replacement reads).  Then --runs rounds, each arm in a
fresh interpreter whose state tensor is made and filled first (faulted
in, as a model's is): per source (`kept`: the tmpfs directory, `store`:
the file:// store) and way (`copy`, `in_place`), the restore's wall and
CPU seconds of the process (spotrun.checkpoint.restore(), then the copy
where there is one).  Medians over runs, and the load average beside
them.  The library is $SPOTRUN_LIB, else the repository's build/.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

WAYS = ("copy", "in_place")
SOURCES = ("kept", "store")
STEP = 5


def save(size_mb, kept, store):
    import torch
    import spotrun
    t = torch.full((size_mb << 20,), 3, dtype=torch.uint8)
    t[::4097] = 7
    c = spotrun.Checkpointer(kept, prefault=False)
    c.set_remote("file://" + store)
    c.save(STEP, {"shards": {"big": t, "small": torch.arange(100)}})
    c.wait()
    c.remote_wait(STEP)
    c.close()


def child(size_mb, where, way):
    """One restore in this fresh process; prints its JSON line."""
    import torch
    from spotrun import checkpoint as ck
    mine = torch.full((size_mb << 20,), 1, dtype=torch.uint8)
    small = torch.zeros(100, dtype=torch.int64)
    c0, w0 = time.process_time(), time.monotonic()
    if way == "copy":
        h = {}
        ck.restore(where, h, step=STEP)
        with torch.no_grad():
            mine[...] = h["shards"]["big"]
            small[...] = h["shards"]["small"]
    else:
        h = {"shards": {"big": mine, "small": small}}
        ck.restore(where, h, step=STEP)
        if h["shards"]["big"] is not mine:
            raise SystemExit("in_place: the restore made a new tensor")
    c1, w1 = time.process_time(), time.monotonic()
    if int(mine[0]) != 7 or int(mine[1]) != 3 or int(small[99]) != 99:
        raise SystemExit("%s %s: wrong bytes restored" % (where, way))
    print(json.dumps({"cpu_s": c1 - c0, "wall_s": w1 - w0}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=512)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shm", default="/dev/shm",
                    help="a tmpfs for the kept copy (default /dev/shm)")
    ap.add_argument("--disk", default="/var/tmp",
                    help="where the file:// store goes (default /var/tmp)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.size_mb, *a.child)
        return 0
    kept = tempfile.mkdtemp(prefix="part-restore-", dir=a.shm)
    store = tempfile.mkdtemp(prefix="part-restore-", dir=a.disk)
    out = {(s, w): [] for s in SOURCES for w in WAYS}
    loads = [os.getloadavg()[0]]
    try:
        save(a.size_mb, kept, store)
        src = {"kept": kept, "store": "file://" + store}
        for _ in range(a.runs):
            for s in SOURCES:
                for w in WAYS:
                    p = subprocess.run(
                        [sys.executable, os.path.abspath(__file__),
                         "--size-mb", str(a.size_mb), "--child", src[s], w],
                        check=True, capture_output=True, text=True)
                    out[(s, w)].append(json.loads(p.stdout.splitlines()[-1]))
        loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(kept, ignore_errors=True)
        shutil.rmtree(store, ignore_errors=True)
    res = {"size_mb": a.size_mb, "runs": a.runs, "load": loads,
           "arms": {"%s/%s" % k: {
               "cpu_s": round(statistics.median(x["cpu_s"] for x in v), 3),
               "wall_s": round(statistics.median(x["wall_s"] for x in v), 3),
               "cpu_s_runs": [round(x["cpu_s"], 3) for x in v]}
               for k, v in out.items()}}
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print("restore of one %d MiB part, median of %d (load %.1f -> %.1f)"
              % (a.size_mb, a.runs, loads[0], loads[-1]))
        for k, v in res["arms"].items():
            print("  %-16s %6.3f s  %6.3f CPU-s  (CPU-s per run: %s)" % (
                k, v["wall_s"], v["cpu_s"],
                ", ".join("%.3f" % x for x in v["cpu_s_runs"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
