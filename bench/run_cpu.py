"""run_cpu.py - the CPU seconds one bench run's processes used, and the
bytes they wrote to and read from storage, over time, so that a recovery's stretches can be read as this machine's work
or as waiting (bench/gang_recovery.py's breakdown).

The run's processes: its spotrund, every process descended from it, and
every process of a session one of those leads (a local-cloud node's
agent leads its own session; a warm server, python/spotrun/warm.py,
stays in its node's session).  A sampler thread reads /proc every
PERIOD_S and keeps, per process (pid and start time, so a reused pid is
another process), its own utime + stime and its storage bytes (/proc/PID/io write_bytes,
read_bytes: what reached the block layer, not the page cache's hits;
the kernel adds a reaped child's bytes to its parent's, so a child seen
here has its last seen bytes taken off its parent's); a process that is
gone keeps
its last value, so the total only grows (what a process used after its
last sample, and a process that lived less than PERIOD_S, are missed:
the total is if anything short).  Children's times (cutime) are not
added: each child is counted itself, once.

    cpu = RunCpu(daemon_pid); ...; cpu.at(unix_time) -> CPU-s so far
    cpu.at(unix_time, 1) -> MiB written so far (2: MiB read)
"""

import os
import threading
import time

PERIOD_S = 0.2
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """(ppid, sid, start ticks, utime + stime ticks) of `pid`, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return None
    f = st[st.rindex(")") + 2:].split()
    # fields from 3 (state): ppid 4, session 6, utime 14, stime 15,
    # starttime 22 (proc(5)), here shifted by 3
    return int(f[1]), int(f[3]), int(f[19]), int(f[11]) + int(f[12])


def _io(pid):
    """(read_bytes, write_bytes) of `pid` (0, 0 when unreadable)."""
    try:
        with open("/proc/%d/io" % pid) as f:
            kv = dict(ln.split(": ") for ln in f.read().splitlines())
        return int(kv["read_bytes"]), int(kv["write_bytes"])
    except (OSError, KeyError, ValueError):
        return 0, 0


class RunCpu:
    """CPU seconds of a daemon's process tree and its sessions, sampled
    in the background until close()."""

    def __init__(self, root_pid):
        self.root = root_pid
        self.sids = set()
        self.used = {}              # (pid, start) -> (ticks, read, written)
        self.parent = {}            # (pid, start) -> its parent's key
        self.raw = {}               # (pid, start) -> /proc io, last seen
        self.reaped = {}            # (pid, start) -> bytes of its reaped
                                    # children seen here (read, written)
        self.samples = []           # (unix time, CPU-s, MiB written, read)
        self.stop = threading.Event()
        self.sample()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self):
        procs = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                s = _stat(int(d))
                if s:
                    procs[int(d)] = s
        kids = {}
        for pid, (ppid, _, _, _) in procs.items():
            kids.setdefault(ppid, []).append(pid)
        mine, todo = set(), [self.root] if self.root in procs else []
        while todo:
            p = todo.pop()
            if p not in mine:
                mine.add(p)
                todo.extend(kids.get(p, ()))
        # a session once led by one of the run's processes stays the run's
        # (only one it leads: not the session the daemon was started in)
        self.sids.update(p for p in mine if procs[p][1] == p)
        live = {(pid, v[2]) for pid, v in procs.items()}
        for k in [k for k in self.parent if k not in live]:
            # gone: reaped by its parent (one reparented away between
            # two samples leaves its old parent's figure short - rare)
            p = self.parent.pop(k)
            r = self.reaped.setdefault(p, [0, 0])
            r[0] += self.raw[k][0]
            r[1] += self.raw[k][1]
        for pid, (ppid, sid, start, ticks) in procs.items():
            if pid in mine or sid in self.sids:
                k = (pid, start)
                rd, wr = _io(pid)
                self.raw[k] = (rd, wr)
                if ppid in procs:
                    self.parent[k] = (ppid, procs[ppid][2])
                off = self.reaped.get(k, (0, 0))
                self.used[k] = (ticks, max(0, rd - off[0]),
                                max(0, wr - off[1]))
        v = self.used.values()
        self.samples.append((time.time(), sum(x[0] for x in v) / TICK,
                             sum(x[2] for x in v) / 2**20,
                             sum(x[1] for x in v) / 2**20))

    def run(self):
        while not self.stop.wait(PERIOD_S):
            self.sample()

    def close(self):
        if self.stop.is_set():
            return
        self.stop.set()
        self.thread.join()
        self.sample()

    def at(self, t, what=0):
        """CPU-s used up to unix time t (what 1: MiB written, 2: MiB
        read), linear between samples."""
        s = [(x[0], x[1 + what]) for x in self.samples]
        if not s or t <= s[0][0]:
            return s[0][1] if s else 0.0
        for (t0, c0), (t1, c1) in zip(s, s[1:]):
            if t <= t1:
                return c0 + (c1 - c0) * (t - t0) / max(1e-9, t1 - t0)
        return s[-1][1]
