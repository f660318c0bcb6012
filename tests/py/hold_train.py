"""examples/demo/train_gang.py as it is, except that its first attempt
holds after its first checkpoint until a preemption notice comes
(test_slurm_provider.py: the test preempts the gang once the control
plane reports that checkpoint - an event - instead of racing the job's
end).  Every rank of attempt 1, after its first save, asks
spotrun.dist.should_checkpoint() (an all_reduce: the ranks ask in step)
until it says yes, at that step boundary.  Holding changes no training
state: the weights stay bit-identical to an uninterrupted run."""
import os
import runpy
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GANG = os.path.join(ROOT, "examples", "demo", "train_gang.py")


def main():
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import spotrun
    import spotrun.dist

    saves = []
    save, asked = spotrun.DistCheckpointer.save, spotrun.dist.should_checkpoint

    def counted_save(self, step, *a, **kw):
        saves.append(step)
        return save(self, step, *a, **kw)

    def held_ask():
        yes = asked()
        while saves and not yes:
            time.sleep(0.05)
            yes = asked()
        return yes

    if os.environ.get("SPOTRUN_ATTEMPT") == "1":
        spotrun.DistCheckpointer.save = counted_save
        spotrun.dist.should_checkpoint = held_ask
    sys.argv = [GANG] + sys.argv[1:]
    runpy.run_path(GANG, run_name="__main__")


if __name__ == "__main__":
    main()
