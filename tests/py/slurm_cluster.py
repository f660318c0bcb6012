"""A real Slurm cluster for the tests (no mock): Debian's slurm-wlm.

start() writes slurm.conf, gres.conf and cgroup.conf into a temporary
directory, starts munged with its own key and socket there, then
slurmctld and one slurmd per node (`slurmd -N nK`), every daemon on
127.0.0.1 and free ports, and waits until sinfo shows every node idle.
stop() stops them and removes the directory.  When it cannot start,
start() raises SlurmStartError with the reason and the daemons' logs:
the caller fails loudly, never skips.

The cluster: nodes n1..nN (2 CPUs, 2 "GPUs" each: gres gpu backed by
/dev/zero and /dev/full, nothing uses them), two partitions over all of
them:

    low   PriorityTier=1,  PreemptMode=REQUEUE, GraceTime=60, MaxTime=60
    high  PriorityTier=10  (its jobs preempt low's)

PreemptType=preempt/partition_prio.  Slurm 22.05 applies GraceTime only
to PreemptMode=CANCEL; under REQUEUE a preempted job gets SIGTERM and its
SIGKILL KillWait (60 s here: generous) later, which is the notice's lead.
The scheduler runs every second (sched_interval=1) so a preemption
follows a high job's submission at once rather than within a minute.

Clients (sbatch, squeue, ...) find the cluster through SLURM_CONF:
env() returns the environment to run them with.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

from pg_server import tool_env

SBIN = "/usr/sbin"
CPUS = 2
KILL_WAIT_S = 60


class SlurmStartError(RuntimeError):
    pass


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _alive(pid):
    """Whether pid is a process that has not yet exited (a zombie has)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return False


class SlurmCluster:
    def __init__(self, nodes=2, cloud=0, power_lines=(), auth_extra=""):
        self.nodes = ["n%d" % (i + 1) for i in range(nodes)]
        # State=CLOUD nodes b1..bK of partition `burst` (docs/slurm.md
        # "Spot bursting"): no slurmd until Slurm's ResumeProgram starts
        # one; power_lines are the power-saving lines of slurm.conf
        self.cloud = ["b%d" % (i + 1) for i in range(cloud)]
        self.power_lines = list(power_lines)
        self.ports = {}
        self.auth_extra = auth_extra  # more AuthInfo options ("cred_expire=5")
        self.dir = None
        self.procs = {}
        self.start_s = None

    # ---- files ---------------------------------------------------------------

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def _write(self, name, text, mode=0o644):
        with open(self.path(name), "w") as f:
            f.write(text)
        os.chmod(self.path(name), mode)

    def _conf(self, ports):
        d = self.dir
        lines = [
            "ClusterName=srtest",
            "SlurmctldHost=localhost(127.0.0.1)",
            "SlurmctldPort=%d" % ports[0],
            "SlurmdPort=%d" % ports[1],
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge",
            "AuthInfo=socket=%s/munge/sock%s" % (
                d, "," + self.auth_extra if self.auth_extra else ""),
            "StateSaveLocation=%s/state" % d,
            "SlurmdSpoolDir=%s/spool/%%n" % d,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/slurmd-%%n.pid" % d,
            "SlurmctldLogFile=%s/log/slurmctld.log" % d,
            "SlurmdLogFile=%s/log/slurmd-%%n.log" % d,
            "MailProg=/bin/true",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "MpiDefault=none",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=1,bf_interval=1,"
            "preempt_send_user_signal",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE",
            "KillWait=%d" % KILL_WAIT_S, "MinJobAge=600",
            "ReturnToService=2", "SlurmdParameters=config_overrides",
            "GresTypes=gpu",
        ]
        for i, n in enumerate(self.nodes):
            lines.append("NodeName=%s NodeAddr=127.0.0.1 NodeHostname=localhost "
                         "Port=%d CPUs=%d RealMemory=1000 Gres=gpu:2 "
                         "State=UNKNOWN" % (n, ports[2 + i], CPUS))
        for i, n in enumerate(self.nodes + self.cloud):
            self.ports[n] = ports[2 + i]
        for n in self.cloud:
            lines.append("NodeName=%s NodeAddr=127.0.0.1 NodeHostname=localhost "
                         "Port=%d CPUs=%d RealMemory=1000 Gres=gpu:2 "
                         "State=CLOUD" % (n, self.ports[n], CPUS))
        if self.cloud:
            # a power line replaces the base line of its key
            keys = {l.split("=", 1)[0] for l in self.power_lines}
            lines = [l for l in lines if l.split("=", 1)[0] not in keys]
            lines += self.power_lines
            lines += ["SuspendExcNodes=%s" % ",".join(self.nodes),
                      "PartitionName=burst Nodes=%s MaxTime=60 State=UP"
                      % ",".join(self.cloud)]
        all_nodes = ",".join(self.nodes)
        lines += [
            "PartitionName=low Nodes=%s Default=YES PriorityTier=1 "
            "PreemptMode=REQUEUE GraceTime=60 MaxTime=60 State=UP" % all_nodes,
            "PartitionName=high Nodes=%s PriorityTier=10 MaxTime=60 State=UP"
            % all_nodes,
        ]
        return "\n".join(lines) + "\n"

    # ---- life ----------------------------------------------------------------

    def env(self, **extra):
        """The environment Slurm's clients need (and none of the
        sanitizer preload: they are not ours)."""
        e = tool_env()
        e["SLURM_CONF"] = self.path("slurm.conf")
        e.update({k: str(v) for k, v in extra.items()})
        return e

    def _spawn(self, name, argv):
        log = open(self.path("log", name + ".out"), "ab")
        self.procs[name] = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=self.env(), start_new_session=True)
        log.close()

    def logs(self):
        out = []
        logdir = self.path("log")
        for n in sorted(os.listdir(logdir)):
            with open(os.path.join(logdir, n), errors="replace") as f:
                out.append("--- %s ---\n%s" % (n, f.read()[-3000:]))
        return "\n".join(out)

    def _fail(self, why):
        raise SlurmStartError("%s\n%s" % (why, self.logs() if self.dir else ""))

    def run(self, *argv, check=True, timeout=60):
        """Run a Slurm client (argv[0] a name on PATH); CompletedProcess."""
        p = subprocess.run(list(argv), capture_output=True, text=True,
                           env=self.env(), timeout=timeout, check=False)
        if check and p.returncode:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(argv),
                                                   p.returncode, p.stderr))
        return p

    def node_states(self):
        p = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        if p.returncode:
            return {}
        return dict(line.split()[:2] for line in p.stdout.splitlines()
                    if len(line.split()) >= 2)

    def start(self, timeout=60):
        t0 = time.monotonic()
        for b in ("munged", "slurmctld", "slurmd"):
            if not os.access(os.path.join(SBIN, b), os.X_OK):
                raise SlurmStartError(
                    "%s/%s is missing: scripts/install-deps installs Slurm "
                    "(packages slurmctld slurmd slurm-client munge)" % (SBIN, b))
        if os.geteuid() != 0:
            raise SlurmStartError("the Slurm test cluster runs its daemons as "
                                  "root (slurmd must); run the tests as root")
        self.dir = tempfile.mkdtemp(prefix="sr-slurm-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        for d in ("munge", "state", "log", "spool"):
            os.mkdir(self.path(d))
        for n in self.nodes + self.cloud:
            os.mkdir(self.path("spool", n))
        os.chmod(self.path("munge"), 0o711)
        self._write("munge/munge.key", os.urandom(1024).hex(), 0o400)
        ports = _free_ports(2 + len(self.nodes) + len(self.cloud))
        self._write("slurm.conf", self._conf(ports))
        self._write("gres.conf", "NodeName=%s Name=gpu File=/dev/zero\n"
                    "NodeName=%s Name=gpu File=/dev/full\n"
                    % ((",".join(self.nodes + self.cloud),) * 2))
        self._write("cgroup.conf", "CgroupPlugin=cgroup/v1\n")
        m = self.path("munge")
        self._spawn("munged", [SBIN + "/munged", "-F", "-f",
                               "--socket=%s/sock" % m,
                               "--key-file=%s/munge.key" % m,
                               "--pid-file=%s/munged.pid" % m,
                               "--log-file=%s/munged.log" % m,
                               "--seed-file=%s/munged.seed" % m])
        end = time.monotonic() + timeout
        while not os.path.exists(self.path("munge", "sock")):
            if self.procs["munged"].poll() is not None:
                self._fail("munged exited with %d" % self.procs["munged"].returncode)
            if time.monotonic() > end:
                self._fail("munged did not create its socket")
            time.sleep(0.05)
        self._spawn("slurmctld", [SBIN + "/slurmctld", "-D", "-i"])
        for n in self.nodes:
            self._spawn("slurmd-" + n, [SBIN + "/slurmd", "-D", "-N", n])
        while True:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    self._fail("%s exited with %d" % (name, p.returncode))
            st = self.node_states()
            if all(st.get(n) == "idle" for n in self.nodes):
                break
            if time.monotonic() > end:
                self._fail("the nodes are not idle after %d s: %s" % (timeout, st))
            time.sleep(0.2)
        self.start_s = time.monotonic() - t0

    def stop(self):
        # slurmd first (it ends its jobs' steps), then the controller, munge
        order = [n for n in self.procs if n.startswith("slurmd")] + \
            [n for n in ("slurmctld", "munged") if n in self.procs]
        for name in order:
            p = self.procs[name]
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, 9)
                    p.wait()
        self.procs = {}
        self._kill_stray_steps()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _kill_stray_steps(self):
        """A slurmstepd outlives its slurmd (slurmd may restart under
        running jobs), and a cloud node's slurmd is started by spotrun, not
        here: end every slurmd and slurmstepd of this cluster, found by the
        SLURM_CONF in its environment, with the processes under them, and
        wait for them to go."""
        if not self.dir:
            return
        mark = ("SLURM_CONF=" + self.path("slurm.conf")).encode() + b"\0"
        parent, steps = {}, []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid) as f:
                    parent[int(pid)] = int(f.read().rsplit(") ", 1)[1].split()[1])
                with open("/proc/%s/comm" % pid) as f:
                    if f.read().strip() not in ("slurmstepd", "slurmd"):
                        continue
                with open("/proc/%s/environ" % pid, "rb") as f:
                    if mark in f.read() + b"\0":
                        steps.append(int(pid))
            except (OSError, IndexError, ValueError):
                continue
        doomed, grew = set(steps), True
        while grew:
            grew = False
            for pid, pp in parent.items():
                if pp in doomed and pid not in doomed:
                    doomed.add(pid)
                    grew = True
        for pid in doomed:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        end = time.monotonic() + 20
        pids = list(doomed)
        while pids and time.monotonic() < end:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.05)

    def stop_controller(self):
        """Stop slurmctld alone (the controller-down tests)."""
        p = self.procs.get("slurmctld")
        if p and p.poll() is None:
            p.terminate()
            p.wait(timeout=30)

    def start_controller(self):
        self._spawn("slurmctld", [SBIN + "/slurmctld", "-D"])


if __name__ == "__main__":
    # python3 tests/py/slurm_cluster.py: say whether a cluster can start.
    import sys
    c = SlurmCluster()
    try:
        c.start()
        print("Slurm test cluster: ok, up in %.1f s (%s)"
              % (c.start_s, c.dir))
    except SlurmStartError as exc:
        print("Slurm test cluster CANNOT START: %s" % exc)
        sys.exit(1)
    finally:
        c.stop()
