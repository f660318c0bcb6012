#!/usr/bin/python3
"""bench/objstore.py - `spotrun ckpt bench --remote` against s3rver.

Starts @20minutes/s3rver (tests/objstore, npm) on 127.0.0.1, runs the
checkpoint bench with tier 3 on (upload_vs_raw, remote_restore_vs_raw,
and stall_vs_memcpy / peak_rss_vs_state with the uploader running), and
prints those keys with the load average at the start and end.  A load
above the CPU count means other work shared the machine and the ratios
say less: re-run on a quiet machine.

Usage: bench/objstore.py [--build DIR] [--size 256M] [--reps 5]
                         [--dir DIR] [--json]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
from objstore_servers import S3rver  # noqa: E402

KEYS = ("upload_vs_raw", "remote_restore_vs_raw", "stall_vs_memcpy",
        "peak_rss_vs_state", "machine")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--size", default="256M")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--json", action="store_true",
                    help="print the bench's whole JSON object")
    a = ap.parse_args()
    if a.reps < 1:
        sys.exit("bench/objstore.py: --reps: expected at least 1")
    srv = S3rver(buckets=("bench",))
    try:
        env = dict(os.environ, **srv.env())
        with tempfile.TemporaryDirectory(dir=a.dir,
                                         prefix="spotrun-objbench-") as wd:
            cmd = [os.path.join(a.build, "bin", "spotrun"), "ckpt", "bench",
                   "--size", a.size, "--dir", wd, "--json", "--reps",
                   str(a.reps), "--pairs", "2", "--interval", "1",
                   "--no-progress", "--remote", "s3://bench/ckpt"]
            print(" ".join(cmd[1:]) + "   (s3rver at %s)" % srv.endpoint,
                  flush=True)
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
        if p.returncode:
            sys.exit("bench/objstore.py: spotrun ckpt bench exited %d"
                     % p.returncode)
        out = json.loads(p.stdout)
        if a.json:
            print(json.dumps(out, indent=2))
            return
        for k in KEYS:
            print("%-22s %s" % (k, json.dumps(out.get(k))))
    finally:
        srv.close()


if __name__ == "__main__":
    main()
