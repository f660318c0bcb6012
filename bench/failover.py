#!/usr/bin/python3
"""Spot failover benchmark (run by bench/failover.sh, part of `make bench`).

A job whose state is BENCH_BYTES (default 1 GiB) of tensors runs on the
local spot cloud.  The market is one synthetic V100 trace, available 30
ticks then reclaimed 2 (a tick is one real second here), so every pool is
reclaimed within ~half a minute at its own phase.  For the first
preemption that hits a running workload it measures, on one clock
(time.time() of this machine):

  notice            the daemon serves the IMDS notice (its `notice` event)
  final durable     save_final() returned: the final checkpoint is committed
  resumed           the replacement node restored it and ran a step

and prints notice->durable and notice->resumed, split into their parts
(notice seen by the agent, final save, provisioning + agent + restore),
plus two ratios against peers measured in the same run on the same
directory: final save / raw write+fsync of the same bytes, and restore /
raw read of the same bytes (page cache dropped for the file first).

The seed's figure for this path in the cloud is 3-5 minutes, mostly
provisioning; here provisioning is simulated (--provision-ms), so what is
measured is our software's share.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def raw_peers(directory, nbytes):
    """Raw sequential write+fsync and read of nbytes in `directory`."""
    path = os.path.join(directory, "raw.bin")
    chunk = b"\x5a" * (64 << 20)
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    left = nbytes
    while left > 0:
        left -= os.write(fd, chunk[:min(left, len(chunk))])
    os.fsync(fd)
    os.close(fd)
    w = time.monotonic() - t0
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    t0 = time.monotonic()
    while os.read(fd, 64 << 20):
        pass
    r = time.monotonic() - t0
    os.close(fd)
    os.unlink(path)
    return w, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--bytes", type=int,
                    default=int(os.environ.get("BENCH_BYTES", 1 << 30)))
    ap.add_argument("--timeout", type=float, default=240)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="spotrun-failover-")
    state = os.path.join(tmp, "state")
    data = os.path.join(tmp, "data")
    os.makedirs(os.path.join(data, "traces"))
    for name in ("catalog", "offerings.csv"):
        src = os.path.join(ROOT, "data", name)
        if os.path.exists(src):
            os.symlink(src, os.path.join(data, name))
    with open(os.path.join(data, "traces", "bench_v100_1.json"), "w") as f:
        json.dump({"metadata": {"gap_seconds": 600},
                   "data": ([1] * 30 + [0] * 2) * 20}, f)
    env = dict(os.environ, SPOTRUN_STATE_DIR=state,
               PATH=os.path.join(args.build, "bin") + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.path.join(ROOT, "python"),
               SPOTRUN_LIB=os.path.join(args.build, "lib", "libspotckpt.so"))
    for k in ("SPOTRUN_API", "SPOTRUN_TOKEN"):
        env.pop(k, None)
    job = os.path.join(tmp, "job.yaml")
    with open(job, "w") as f:
        f.write("name: failover-bench\nresources:\n  accelerators: V100:1\n"
                "  use_spot: true\n  infra: aws\n"
                "envs:\n  BENCH_BYTES: \"%d\"\n"
                "run: /usr/bin/python3 %s\n"
                "spotrun:\n  work: 1000h\n  deadline: 100000h\n"
                "  criticality: best-effort\n"
                % (args.bytes, os.path.join(ROOT, "bench", "failover_work.py")))

    def cli(*a, check=True):
        return subprocess.run(["spotrun", *a], env=env, check=check,
                              stdout=subprocess.PIPE, text=True).stdout

    rc = 1
    try:
        cli("daemon", "start", "--listen", "127.0.0.1:0", "--",
            "--data-dir", data, "--time-scale", "600", "--provision-ms", "1000",
            "--notice-ms", "20000", "--heartbeat-ms", "500")
        jid = json.loads(cli("launch", job, "-d", "--json"))["job"]["id"]
        deadline = time.time() + args.timeout
        result = None
        while time.time() < deadline and result is None:
            time.sleep(1)
            events = json.loads(cli("events", str(jid), "--json"))["events"]
            lines = json.loads(cli("logs", str(jid), "--json"))["lines"]
            node_attempt = {e["node_id"]: e["data"].get("attempt")
                            for e in events if e["type"] == "workload_exit"}
            resumed, final = {}, {}
            for ln in lines:
                w = ln["line"].split()
                if not w:
                    continue
                kv = dict(x.split("=", 1) for x in w[1:] if "=" in x)
                if w[0] == "RESUMED":
                    resumed[ln["attempt"]] = (float(kv["t"]), float(kv["restore_s"]))
                elif w[0] == "FINAL":
                    final[ln["attempt"]] = (float(kv["t"]), float(kv["save_s"]))
            acks = {e["node_id"]: ts(e["ts"]) for e in events
                    if e["type"] == "notice_ack"}
            for ev in events:
                if ev["type"] != "notice":
                    continue
                a = node_attempt.get(ev["node_id"])
                t_n = ts(ev["ts"])
                if a is None or a not in final or a not in resumed:
                    continue
                if resumed[a][0] > t_n:
                    continue              # hit before it was running
                nxt = [b for b in sorted(resumed) if b > a]
                if not nxt:
                    continue
                result = {
                    "notice_to_agent_s": acks.get(ev["node_id"], t_n) - t_n,
                    "final_save_s": final[a][1],
                    "notice_to_durable_s": final[a][0] - t_n,
                    "notice_to_resumed_s": resumed[nxt[0]][0] - t_n,
                    "restore_s": resumed[nxt[0]][1],
                    "durable_to_resumed_s": resumed[nxt[0]][0] - final[a][0],
                }
                break
        if result is None:
            print("failover: no complete preemption within %.0f s" % args.timeout,
                  file=sys.stderr)
            return 1
        raw_w, raw_r = raw_peers(os.path.join(state, "jobs", str(jid)), args.bytes)
        gib = args.bytes / (1 << 30)
        print("state %.2f GiB; notice lead 20 s; provisioning 1 s (simulated)" % gib)
        print("%-34s %8.3f s" % ("notice -> agent saw it", result["notice_to_agent_s"]))
        print("%-34s %8.3f s" % ("final save (save_final)", result["final_save_s"]))
        print("%-34s %8.3f s" % ("notice -> final checkpoint durable",
                                 result["notice_to_durable_s"]))
        print("%-34s %8.3f s" % ("durable -> training resumed",
                                 result["durable_to_resumed_s"]))
        print("%-34s %8.3f s" % ("  of which restore", result["restore_s"]))
        print("%-34s %8.3f s" % ("notice -> training resumed",
                                 result["notice_to_resumed_s"]))
        print("%-34s %8.3f s  ratio final save / raw %.2f" %
              ("raw write+fsync, same bytes", raw_w, result["final_save_s"] / raw_w))
        print("%-34s %8.3f s  ratio restore / raw %.2f" %
              ("raw read, same bytes", raw_r,
               result["restore_s"] / raw_r if raw_r > 0 else float("nan")))
        result.update(bytes=args.bytes, raw_write_s=raw_w, raw_read_s=raw_r,
                      final_save_vs_raw_write=result["final_save_s"] / raw_w,
                      restore_vs_raw_read=(result["restore_s"] / raw_r
                                           if raw_r > 0 else None))
        print(json.dumps({"failover": result}, sort_keys=True))
        rc = 0
    finally:
        try:
            for j in json.loads(cli("status", "--json", check=False) or "{}").get(
                    "jobs", []):
                if j["state"] not in ("SUCCEEDED", "FAILED", "CANCELLED"):
                    cli("cancel", str(j["id"]), check=False)
            time.sleep(2)
        except ValueError:
            pass
        cli("daemon", "stop", check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
