#!/usr/bin/python3
"""The control plane at scale on both store backends, in one run
(bench/store_scale.sh, part of `make bench`; docs/store.md).

Runs build/bench/bench_ctl twice on the same machine and load: 10,000
simulated nodes in 2,000 active jobs heartbeating through the real
spotrund API, first on SQLite, then on a real PostgreSQL 15 server
(tests/py/pg_server.py, a fresh database).  Prints each run's heartbeat
p50/p99 and reconciler pass time, and the PostgreSQL/SQLite heartbeat
p99 ratio against its goal (<= 2).  Exits non-zero when a run fails
(more than 1 % failed heartbeats, or a heartbeat answered 200 that the
store did not record).

Env: BENCH_CTL_NODES, BENCH_CTL_JOBS, BENCH_CTL_SECONDS, ... are passed
on to bench_ctl."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
from pg_server import start_or_say  # noqa: E402

GOAL_P99_RATIO = 2.0


def run(bench, store):
    env = dict(os.environ)
    env.setdefault("BENCH_CTL_NODES", "10000")
    env.setdefault("BENCH_CTL_JOBS", "2000")
    env["BENCH_CTL_STORE"] = store or ""
    p = subprocess.run([bench], env=env, capture_output=True, text=True,
                       timeout=1200, check=False)
    sys.stdout.write(p.stdout)
    res = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            res = dict(kv.split("=", 1) for kv in line.split()[1:])
    if p.returncode or res is None:
        sys.stdout.write(p.stderr[-3000:])
    return p.returncode, res


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    bench = os.path.join(ROOT, build, "bench", "bench_ctl")
    if not os.access(bench, os.X_OK):
        print("store_scale: %s is not built (make build)" % bench)
        return 1
    srv = start_or_say("store_scale")
    if srv is None:
        return 1
    try:
        rc_s, sq = run(bench, None)
        rc_p, pg = run(bench, srv.new_db())
    finally:
        srv.stop()
    if not sq or not pg:
        print("store_scale: a run printed no RESULT line")
        return 1
    ratio = float(pg["hb_p99_ms"]) / max(float(sq["hb_p99_ms"]), 1e-9)
    print("store scale: %s nodes, %s active jobs" % (sq["nodes"], sq["jobs"]))
    print("  %-10s  %9s  %9s  %14s  %13s  %s" % (
        "backend", "hb p50 ms", "hb p99 ms", "pass mean ms", "pass max ms",
        "failed"))
    for r in (sq, pg):
        print("  %-10s  %9s  %9s  %14s  %13s  %s" % (
            r["backend"], r["hb_p50_ms"], r["hb_p99_ms"], r["pass_mean_ms"],
            r["pass_max_ms"], r["failed"]))
    print("  heartbeat p99 PostgreSQL/SQLite: %.2f (goal <= %.0f: %s)" % (
        ratio, GOAL_P99_RATIO, "met" if ratio <= GOAL_P99_RATIO else "NOT met"))
    return 1 if rc_s or rc_p else 0


if __name__ == "__main__":
    sys.exit(main())
