"""train_gang.py's imports, in a module of their own so that a warm
server (`python3 -m spotrun.warm start --preload gang_imports` in the
job's setup, docs/distributed.md "A warm start") does them once per
node: torch, torch.distributed, train_demo, and DEMO_IMPORT_MS's floor
(bench/gang_recovery.py's real-cloud profiles: how long a GPU node's
`import torch` and CUDA initialisation take at least, a wait after this
machine's own imports when they took less).  A cold start pays it here,
at train_gang.py's first import; a warm child finds the module done."""

import os
import time

T_START = time.monotonic()

import torch  # noqa: E402,F401
import torch.distributed  # noqa: E402,F401

import train_demo  # noqa: E402,F401


def _floor_ms():
    try:
        return max(0, int(os.environ.get("DEMO_IMPORT_MS") or 0))
    except ValueError:
        return 0   # train_gang.py names the bad value


IMPORT_MS = _floor_ms()
time.sleep(max(0.0, IMPORT_MS / 1000.0 - (time.monotonic() - T_START)))
