"""examples/train.py as it is, except that its first attempt holds one
step after its first checkpoint until a preemption notice comes
(test_slurm_provider.py: the test preempts the job once the control plane
reports that checkpoint - an event - instead of racing the job's end).
Holding changes no training state: the weights stay bit-identical to an
uninterrupted train.py run."""
import os
import runpy
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = os.path.join(ROOT, "examples", "train.py")


def main():
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import spotrun
    from spotrun import preemption

    saves = []
    sleeps = [0]
    save, sleep = spotrun.Checkpointer.save, time.sleep

    def counted_save(self, step, *a, **kw):
        saves.append(step)
        return save(self, step, *a, **kw)

    def held_sleep(s):
        # train.py sleeps once per step, after its save: the second
        # sleep after the first save ends the step after that checkpoint
        if saves and threading.current_thread() is threading.main_thread():
            sleeps[0] += 1
            if sleeps[0] == 2:
                while not preemption.should_checkpoint():
                    sleep(0.05)
        sleep(s)

    if os.environ.get("SPOTRUN_ATTEMPT") == "1":
        spotrun.Checkpointer.save = counted_save
        time.sleep = held_sleep
    sys.argv = [TRAIN] + sys.argv[1:]
    runpy.run_path(TRAIN, run_name="__main__")


if __name__ == "__main__":
    main()
