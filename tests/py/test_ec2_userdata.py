"""The EC2 user-data script run as cloud-init runs it on a fresh instance:
as root, once (issue 24: the agent must not run as root on EC2).

The sandbox stands in for a stock Debian/Ubuntu/Amazon Linux instance: a
private mount namespace in which /etc is a copy (useradd writes the copy,
the host's users are untouched), /var/lib and /run are empty tmpfs,
/proc/sys is a directory of fake sysctls set the way a stock image may
have them (user namespaces off for unprivileged users, Ubuntu's AppArmor
restriction on), and $PATH starts with stand-ins for apparmor_parser and
systemd-run that record what they were asked.  The script itself, the
real useradd, usermod, chown and setpriv run unchanged; the agent is a
probe that writes down who it runs as and what it can read.

Needs root (a mount namespace, bind mounts, useradd): skipped otherwise.
"""

import os
import shutil
import subprocess

import pytest

from conftest import BUILD

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a mount "
                       "namespace with a copy of /etc for useradd"),
    pytest.mark.skipif(shutil.which("unshare") is None,
                       reason="no unshare (util-linux)"),
]

SECRET = "0123456789abcdef0123456789abcdef"
NODE = 7

SANDBOX = r"""
set -eu
H=$1
MODE=$2
# the test's tmp dir may sit under a 0700 one: where the new user
# reaches it, at a path the script and the probe were written for
mount -t tmpfs tmpfs /run
mkdir /run/sandbox
mount --bind "$H" /run/sandbox
T=/run/sandbox
cp -a /etc "$T/etc"
mount --bind "$T/etc" /etc
mkdir -p /etc/apparmor.d
mount -t tmpfs tmpfs /var/lib
mkdir -p "$T/sys/kernel" "$T/sys/user"
echo 0 >"$T/sys/kernel/unprivileged_userns_clone"
echo 0 >"$T/sys/user/max_user_namespaces"
echo 1 >"$T/sys/kernel/apparmor_restrict_unprivileged_userns"
mount --bind "$T/sys" /proc/sys
if [ "$MODE" = systemd ]; then mkdir -p /run/systemd/system; fi
cd /
env -i PATH="$T/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    HOME=/root /bin/sh "$T/user-data"
o="$T/out"
d=/var/lib/spotrun/node-7
stat -c '%U %a %n' /var/lib/spotrun "$d" "$d/work" "$d/bootstrap" >"$o/stat"
id -Gn spotrun >"$o/groups"
cat /proc/sys/kernel/unprivileged_userns_clone \
    /proc/sys/user/max_user_namespaces \
    /proc/sys/kernel/apparmor_restrict_unprivileged_userns >"$o/sysctl"
cp /etc/apparmor.d/spotrun-agent "$o/profile"
if [ "$MODE" = plain ]; then
  # the agent runs in the background (nohup): wait for its report, a
  # bound only on a hung one
  i=0
  while [ ! -e "$o/agent" ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i+1)); done
  cp "$d/agent.log" "$o/agent.log"
fi
"""

# The agent: writes down who runs it, with what, and what it can read.
PROBE = r"""#!/bin/sh
o=@OUT@
b=
while [ $# -gt 0 ]; do
  echo "arg=$1" >>"$o/agent.tmp"
  if [ "$1" = --bootstrap-file ]; then b=$2; fi
  shift
done
{
  echo "user=$(id -un)"
  echo "uid=$(id -u)"
  echo "home=$HOME"
  echo "cwd=$(pwd)"
  grep '^CapEff:' /proc/self/status
  echo "secret=$(cat "$b")"
} >>"$o/agent.tmp"
mv "$o/agent.tmp" "$o/agent"
"""

RECORDER = r"""#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done >"@OUT@/@NAME@"
"""


IN = "/run/sandbox"  # where the sandbox binds the test's tmp dir


def _sandbox(tmp_path, mode):
    t = str(tmp_path)
    out = os.path.join(t, "out")
    bindir = os.path.join(t, "bin")
    os.makedirs(out)
    os.makedirs(bindir)
    os.chmod(t, 0o755)
    os.chmod(out, 0o1777)
    with open(os.path.join(t, "spotrun-agent"), "w") as f:
        f.write(PROBE.replace("@OUT@", IN + "/out"))
    os.chmod(os.path.join(t, "spotrun-agent"), 0o755)
    agent = IN + "/spotrun-agent"
    for name in ("apparmor_parser", "systemd-run"):
        p = os.path.join(bindir, name)
        with open(p, "w") as f:
            f.write(RECORDER.replace("@OUT@", IN + "/out")
                    .replace("@NAME@", name))
        os.chmod(p, 0o755)
    script = subprocess.run(
        [os.path.join(BUILD, "tests", "helpers", "ec2_userdata"), agent,
         "https://ctl.example:7077", str(NODE), SECRET],
        check=True, capture_output=True, text=True).stdout
    with open(os.path.join(t, "user-data"), "w") as f:
        f.write(script)
    # the system's tools, not spotrun's: no sanitizer runtime preloaded
    # into them in the ASan pass (the helper above ran with it)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh",
                        "-c", SANDBOX, "sandbox", t, mode],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    return out, agent


def _read(out, name):
    with open(os.path.join(out, name)) as f:
        return f.read()


def _check_setup(out):
    stat = _read(out, "stat").splitlines()
    assert stat == ["spotrun 700 /var/lib/spotrun",
                    "spotrun 700 /var/lib/spotrun/node-7",
                    "spotrun 700 /var/lib/spotrun/node-7/work",
                    "spotrun 600 /var/lib/spotrun/node-7/bootstrap"]
    groups = _read(out, "groups").split()
    with open("/etc/group") as f:
        have = {line.split(":")[0] for line in f}
    for g in ("video", "render"):
        assert (g in groups) == (g in have), (g, groups)
    # user namespaces on for an unprivileged user; Ubuntu's restriction
    # lifted for the agent alone (its AppArmor profile), not host-wide
    assert _read(out, "sysctl").split() == ["1", "15000", "1"]
    assert _read(out, "apparmor_parser").split() == [
        "-r", "/etc/apparmor.d/spotrun-agent"]
    assert "userns," in _read(out, "profile")


def test_user_data_starts_the_agent_as_an_unprivileged_user(tmp_path):
    out, agent = _sandbox(tmp_path, "plain")
    _check_setup(out)
    assert os.path.exists(os.path.join(out, "agent")), \
        "the agent never ran: " + _read(out, "agent.log")
    got = _read(out, "agent").splitlines()
    assert "user=spotrun" in got
    assert "uid=0" not in got
    assert "CapEff:\t0000000000000000" in got
    assert "home=/var/lib/spotrun" in got
    assert "cwd=/var/lib/spotrun/node-7" in got
    # it reads its own bootstrap file (0600, its own)
    assert "secret=" + SECRET in got
    args = [a[4:] for a in got if a.startswith("arg=")]
    assert args[:6] == ["--api", "https://ctl.example:7077", "--node-id", "7",
                        "--bootstrap-file",
                        "/var/lib/spotrun/node-7/bootstrap"]
    assert "--private" in args and SECRET not in args


def test_user_data_under_systemd_asks_for_the_user(tmp_path):
    out, agent = _sandbox(tmp_path, "systemd")
    _check_setup(out)
    argv = _read(out, "systemd-run").splitlines()
    assert argv[:5] == ["--unit=spotrun-agent-7", "--uid=spotrun",
                        "--gid=spotrun",
                        "-p", "WorkingDirectory=/var/lib/spotrun/node-7"]
    assert argv[5] == agent
    assert not os.path.exists(os.path.join(out, "agent"))
