"""The sitecustomize of every Python interpreter in the ASan pytest pass.

scripts/run-tests copies this file, as sitecustomize.py, into a directory
of its own with a file "preload" beside it (the sanitizer runtime, as
LD_PRELOAD takes it), and puts that directory first on PYTHONPATH; the
tests, spotrund and its agents hand PYTHONPATH on to most interpreters
they start.

Every process of the pass has the runtime preloaded (LD_PRELOAD stays in
the environment: an interpreter a test starts with a PYTHONPATH of its
own never runs this file, and must still load the instrumented
libspotckpt.so).  spotrun's programs check leaks (conftest.py gives them
detect_leaks=1 and a report directory).  CPython and PyTorch do not free
everything at exit, and LeakSanitizer's scan of a PyTorch heap at exit
takes minutes: an interpreter that runs this file starts itself again
(the same argv) with detect_leaks=0 added to its ASAN_OPTIONS, and hands
its children the options it was given.  An interpreter that does not run
it still works; its leak report, if any, is not a finding
(asan_reports.py counts only spotrun's programs' leaks).
AddressSanitizer's checks of every memory access in spotrun's library
stay on everywhere.
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
        env[_MARK] = os.environ.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = env[_MARK] + ":detect_leaks=0"
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, sys.orig_argv, env)
    # started again: the children get the options this one was given
    os.environ["ASAN_OPTIONS"] = os.environ.pop(_MARK)


_start()
