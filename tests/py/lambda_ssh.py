#!/usr/bin/python3
"""The Lambda emulator's ssh (lambda_cloud.py): called as the driver
calls ssh (`[-i KEY] -o ... -- USER@IP 'sudo -n sh -s'`, the script on
stdin), it runs the script as sshd would on the instance: in a session of
its own under $LAMBDA_EMU_WORK/<IP>/ with SPOTRUN_NODE_ROOT set, records
the session's pid (the emulator ends it), and returns once it started.
Exit 255 when the instance has no directory (no route to it), or while
$LAMBDA_EMU_WORK/ssh-down exists (sshd not up yet: the tests' gate).
Each call appends the IP to $LAMBDA_EMU_WORK/ssh-calls, each script run
to <IP>/runs."""

import os
import subprocess
import sys


def main():
    args = sys.argv[1:]
    dest = args[args.index("--") + 1]
    if args[args.index("--") + 2] != "sudo -n sh -s":
        return 2
    ip = dest.split("@", 1)[1]
    work = os.environ["LAMBDA_EMU_WORK"]
    d = os.path.join(work, ip)
    with open(os.path.join(work, "ssh-calls"), "a") as f:
        f.write(ip + "\n")
    if not os.path.isdir(d) or os.path.exists(os.path.join(work, "ssh-down")):
        return 255
    script = os.path.join(d, "bootstrap.sh")
    with open(script, "wb") as f:
        f.write(sys.stdin.buffer.read())
    env = dict(os.environ, SPOTRUN_NODE_ROOT=os.path.join(d, "root"),
               SPOTRUN_EMU_HIDE=os.environ["LAMBDA_EMU_WORK"])
    log = open(os.path.join(d, "boot.log"), "wb")
    p = subprocess.Popen(["/bin/sh", script], env=env, stdout=log,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    with open(os.path.join(d, "pid"), "w") as f:
        f.write(str(p.pid))
    with open(os.path.join(d, "runs"), "a") as f:
        f.write(str(p.pid) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
