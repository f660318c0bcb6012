"""The usercustomize of every Python interpreter in the ASan pytest pass.

scripts/run-tests copies this file, as usercustomize.py, into the user
site-packages directory of a $PYTHONUSERBASE of its own, with a file
"preload" beside it (the sanitizer runtime, as LD_PRELOAD takes it).
Python runs it at the start of every interpreter that has that
PYTHONUSERBASE in its environment, whatever its PYTHONPATH (a test's
child with PYTHONPATH=python, a job whose `envs` set PYTHONPATH; spotrund
passes PYTHONUSERBASE on to its agents and they to the job).

An interpreter must have the runtime loaded first to load the
instrumented libspotckpt.so, and nothing else needs it: spotrun's
programs are linked with it, and in a shell, date, mv or sleep a
preloaded runtime costs ~7 ms of CPU a process (a workload runs
thousands).  So the runtime is not in the environment: an interpreter
started without it starts itself again with it (the same argv), then
takes it out of its environment, so that its children start without it
(an interpreter among them runs this file in turn).

CPython and PyTorch do not free everything at exit, and LeakSanitizer's
scan of a PyTorch heap at exit takes minutes: the interpreter runs with
detect_leaks=0 added to its ASAN_OPTIONS and hands its children the
options it was given (conftest.py turns leak checks on for spotrun's
programs).  AddressSanitizer's checks of every memory access in
libspotckpt stay on wherever it is loaded.
"""

import os
import sys


_MARK = "SPOTRUN_ASAN_CHILD_OPTIONS"


def _start():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(here, "preload")) as f:
            ours = f.read().split()
    except OSError:
        return
    have = os.environ.get("LD_PRELOAD", "").split()
    if _MARK not in os.environ or not all(p in have for p in ours):
        env = dict(os.environ)
        env["LD_PRELOAD"] = " ".join(ours + [p for p in have if p not in ours])
        env.setdefault(_MARK, os.environ.get("ASAN_OPTIONS", ""))
        env["ASAN_OPTIONS"] = env[_MARK] + ":detect_leaks=0"
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, sys.orig_argv, env)
    # started again, with the runtime: the children get neither it nor
    # this one's detect_leaks=0
    os.environ["ASAN_OPTIONS"] = os.environ.pop(_MARK)
    rest = [p for p in have if p not in ours]
    if rest:
        os.environ["LD_PRELOAD"] = " ".join(rest)
    else:
        os.environ.pop("LD_PRELOAD", None)


_start()
