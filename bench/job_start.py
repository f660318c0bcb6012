#!/usr/bin/python3
"""A job's start: the restore into a freshly built model, with the
Checkpointer made before the model (its staging memory faulted in on a
thread meanwhile: spotckpt_prefault) or after it (as before session 23).

    /usr/bin/python3 bench/job_start.py --dir D [--size-mb 1024]
        [--build-s 3] [--runs 3] [--json]

Makes one checkpoint of --size-mb MiB (16 float32 tensors) in D/job_start,
then runs --runs rounds of three arms, each in a fresh interpreter (fresh
memory, as a job's first restore has), in turn:

  before  Checkpointer(dir) first (prefault=True, the default), then the
          model (the state's tensors made and filled), then --build-s
          seconds for the rest of a model's build, then restore();
  after   the model, --build-s s, then Checkpointer(dir, prefault=False)
          and restore() (what a job did before spotckpt_prefault);
  now     the model, --build-s s, then Checkpointer(dir) and restore()
          at once: the thread has had no time (no worse than `after`?).

Before each arm the checkpoint's files leave the page cache and the child
reads them once with O_DIRECT into resident memory (64 MiB reads, one
thread: the raw peer of `spotrun ckpt bench`), drops them again and
sleeps 3 s (this VM hands freed memory back to its host after ~2 s; the
restore's fresh memory is then what a new process's is).  Per arm: the
restore's wall and CPU seconds (process CPU, the prefault thread's
included while it runs), raw read / restore, and the time from the
child's first line of work to the state restored.  Medians over runs.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

ARMS = ("before", "after", "now")
NT = 16


def drop(path):
    for root, _, files in os.walk(path):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def raw_read(path):
    """Seconds to read every shard with O_DIRECT, 64 MiB at a time."""
    import mmap
    buf = mmap.mmap(-1, 64 << 20)
    buf.write(b"\1" * len(buf))  # resident, like the bench's state buffer
    t = time.monotonic()
    for root, _, files in os.walk(path):
        for f in sorted(files):
            if not f.endswith(".safetensors"):
                continue
            fd = os.open(os.path.join(root, f), os.O_RDONLY | os.O_DIRECT)
            while os.readv(fd, [buf]) == len(buf):
                pass
            os.close(fd)
    return time.monotonic() - t


def child(a):
    import torch
    import spotrun
    n = (a.size_mb << 20) // NT // 4
    if a.arm == "make":
        st = {"w%02d" % i: torch.full((n,), float(i)) for i in range(NT)}
        with spotrun.Checkpointer(a.ckdir) as ck:
            ck.save(1, st)
            ck.wait()
        return
    drop(a.ckdir)
    rt = raw_read(a.ckdir)
    drop(a.ckdir)
    time.sleep(3)
    t_start = time.monotonic()
    ck = spotrun.Checkpointer(a.ckdir) if a.arm == "before" else None
    st = {"w%02d" % i: torch.empty(n) for i in range(NT)}
    for v in st.values():
        v.fill_(-1.0)                 # the model: resident, its own values
    time.sleep(a.build_s)             # the rest of the model's build
    if ck is None:
        ck = spotrun.Checkpointer(a.ckdir, prefault=(a.arm == "now"))
    t0, c0 = time.monotonic(), time.process_time()
    got = ck.restore(st)
    t1, c1 = time.monotonic(), time.process_time()
    ck.close()
    ok = got == 1 and all(float(v[0]) == i and float(v[-1]) == i
                          for i, v in enumerate(st.values()))
    print(json.dumps({"arm": a.arm, "ok": ok, "raw_s": rt,
                      "restore_s": t1 - t0, "restore_cpu_s": c1 - c0,
                      "start_to_restored_s": t1 - t_start}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--size-mb", type=int, default=1024)
    p.add_argument("--build-s", type=float, default=3.0)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--arm", help=argparse.SUPPRESS)
    p.add_argument("--ckdir", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return child(a)
    ckdir = os.path.join(a.dir, "job_start")
    subprocess.run(["rm", "-rf", ckdir], check=True)
    os.makedirs(ckdir)
    me = [sys.executable, os.path.abspath(__file__), "--child", "--dir", a.dir,
          "--ckdir", ckdir, "--size-mb", str(a.size_mb),
          "--build-s", str(a.build_s)]
    subprocess.run(me + ["--arm", "make"], check=True)
    rows = {arm: [] for arm in ARMS}
    load0 = os.getloadavg()
    for _ in range(a.runs):
        for arm in ARMS:
            out = subprocess.run(me + ["--arm", arm], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            rows[arm].append(r)
            if not a.json:
                print("%-6s restore %.3f s, %.3f CPU-s, raw read %.3f s, "
                      "start -> restored %.3f s%s" % (
                          arm, r["restore_s"], r["restore_cpu_s"],
                          r["raw_s"], r["start_to_restored_s"],
                          "" if r["ok"] else "  WRONG STATE"), flush=True)
    subprocess.run(["rm", "-rf", ckdir], check=True)
    res = {"size_mb": a.size_mb, "build_s": a.build_s, "runs": a.runs,
           "load_start": load0[0], "load_end": os.getloadavg()[0],
           "ok": all(r["ok"] for v in rows.values() for r in v)}
    for arm, v in rows.items():
        med = lambda k: statistics.median(r[k] for r in v)  # noqa: E731
        res[arm] = {"restore_s": med("restore_s"),
                    "restore_cpu_s": med("restore_cpu_s"),
                    "raw_s": med("raw_s"),
                    "ratio": statistics.median(r["raw_s"] / r["restore_s"]
                                               for r in v),
                    "start_to_restored_s": med("start_to_restored_s")}
    print(json.dumps(res, indent=1 if a.json else None))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
