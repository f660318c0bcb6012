#!/usr/bin/python3
"""Workload of bench/failover.sh: a training loop whose state is
$BENCH_BYTES bytes of float32 tensors (numpy, 16 of them), checkpointed
with the spotrun binding every 40 steps, that takes a final checkpoint on
the preemption signal (spotrun.preemption) and resumes from the newest
checkpoint.  It prints, with its own clock (time.time()):
  RESUMED t=<when the first step after restore ran> step=K restore_s=S
  FINAL t=<when save_final returned> step=K save_s=S met=0|1
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
import numpy as np  # noqa: E402

import spotrun  # noqa: E402
from spotrun import preemption  # noqa: E402


def main():
    preemption.install()
    size = int(os.environ.get("BENCH_BYTES", str(1 << 30)))
    n = 16
    per = size // n // 4
    state = {"t%02d" % i: np.zeros(per, dtype=np.float32) for i in range(n)}
    state["step"] = 0
    ck = spotrun.Checkpointer(os.environ["SPOTRUN_CKPT_DIR"], keep=2)
    t0 = time.time()
    restored = ck.restore(state)
    restore_s = time.time() - t0
    if restored is None:
        for i in range(n):
            state["t%02d" % i][:] = np.float32(i)
    step = state["step"]
    first = True
    while True:
        if preemption.should_checkpoint():
            ts = time.time()
            met = ck.save_final(step, state)
            te = time.time()
            print("FINAL t=%.6f step=%d save_s=%.3f met=%d" %
                  (te, step, te - ts, met), flush=True)
            ck.close()
            return 0
        step += 1
        state["t00"][:4096] += 1.0      # the "training step"
        state["step"] = step
        if first:
            print("RESUMED t=%.6f step=%d restore_s=%.3f" %
                  (time.time(), step, restore_s if restored is not None else 0),
                  flush=True)
            first = False
        if step % 40 == 0:
            ck.save(step, state)
        time.sleep(0.02)


if __name__ == "__main__":
    sys.exit(main())
