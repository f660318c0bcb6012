"""The sitecustomize of every Python interpreter in the ASan pytest pass.

scripts/run-tests copies this file, as sitecustomize.py, into a directory
of its own with a file "preload" beside it (the sanitizer runtime, as
LD_PRELOAD takes it), and puts that directory first on PYTHONPATH; the
tests, spotrund and its agents hand PYTHONPATH on to every interpreter
they start.

An interpreter must have the runtime preloaded to load the instrumented
libspotckpt.so, but nothing else should: a shell, sleep or mv with the
runtime preloaded costs ~10 ms of CPU and a leak scan at exit, and a
workload runs thousands of them.  So the preload is not in the
environment; an interpreter started without it starts itself again with
it (the same argv), then takes it out of its environment for its own
children.

CPython and PyTorch do not free everything at exit, and LeakSanitizer's
scan of a PyTorch heap at exit takes minutes: the interpreter itself runs
with detect_leaks=0 added to its ASAN_OPTIONS, and hands its children
the options it was given.  AddressSanitizer's checks of every memory
access in spotrun's library stay on.
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
    if not ours or not all(p in have for p in ours):
        env = dict(os.environ)
        env["LD_PRELOAD"] = " ".join(ours + [p for p in have if p not in ours])
        env[_MARK] = os.environ.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = env[_MARK] + ":detect_leaks=0"
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, sys.orig_argv, env)
    # the runtime is in: the children get the environment without it
    rest = [p for p in have if p not in ours]
    if rest:
        os.environ["LD_PRELOAD"] = " ".join(rest)
    else:
        os.environ.pop("LD_PRELOAD", None)
    if _MARK in os.environ:
        os.environ["ASAN_OPTIONS"] = os.environ.pop(_MARK)


_start()
