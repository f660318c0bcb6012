"""Real torch.distributed DDP jobs (gloo, CPU, one process per rank,
127.0.0.1) preempted at random points, on 2 and 4 ranks: a preemption
notice (SIGTERM, as the agent sends it) or a kill -9 of one rank, before
a step, between backward and the optimizer step, or in the middle of a
checkpoint's commit (after the rank's part is durable, after its marker,
before rank 0's record).  The gang is restarted on a fresh rendezvous
until it finishes, and every time:

  * the final model is bitwise identical to the uninterrupted run;
  * every restore gave exactly the reference state of the step it named
    (a hash of parameters and momentum), so no step was ever restored from
    a partly committed set.

$SPOTRUN_DIST_TRIALS trials in all (default 20: 10 per world size; `make
soak` runs 200).  The seed of each trial is printed with a failure.
Then a fifth as many (at least 4) on 2 ranks with the checkpoints in
s3rver (python/spotrun/dist_remote.py): every rank on its own node
directory, fresh ones for the next attempt, and one more kill point,
"uploaded" (the rank's parts in the store, its marker not yet).
Plain pass only: it exercises Python and torch, not spotrun's C code
(test_dist.py runs the same protocol in both passes).
"""

import os
import random

import pytest

torch = pytest.importorskip("torch")

import dist_workers as w  # noqa: E402

TRIALS = int(os.environ.get("SPOTRUN_DIST_TRIALS", "20"))
REMOTE_TRIALS = max(4, TRIALS // 5)
pytestmark = pytest.mark.skipif(
    os.environ.get("SPOTRUN_CHECK_MODE") == "asan",
    reason="a minute of PyTorch; run in the plain pass")
TOTAL, EVERY = 10, 3
POINTS = ("before", "mid", "durable", "prepared", "before_commit")


def reference(out, world):
    assert w.launch(w.ddp_preempt, world, "", out, TOTAL, EVERY, None) == \
        [0] * world
    return torch.load(os.path.join(out, "gref-%d.pt" % world))


@pytest.mark.parametrize("world", [2, 4])
def test_random_preemptions_bitwise_identical(tmp_path, world):
    run_trials(tmp_path, world, TRIALS // 2, POINTS,
               lambda t, attempt: str(tmp_path / ("ck-%d" % t)))


def test_random_preemptions_on_s3_fresh_nodes(tmp_path, monkeypatch):
    from objstore_servers import S3rver
    srv = S3rver(buckets=("ckpt",))
    try:
        env = srv.env()
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        run_trials(tmp_path, 2, REMOTE_TRIALS, POINTS + ("uploaded",),
                   lambda t, attempt: (
                       str(tmp_path / ("t%d-a%d-node{rank}" % (t, attempt))),
                       "s3://ckpt/trial-%d" % t, env), remote=True)
    finally:
        srv.close()


def run_trials(tmp_path, world, n, points, where, remote=False):
    """n trials on `world` ranks; where(trial, attempt) is the
    checkpoint location dist_workers' _ckpt takes."""
    out = str(tmp_path)
    ref = reference(out, world)
    seed0 = int(os.environ.get("SPOTRUN_DIST_SEED", "1307"))
    kills = notices = 0
    for t in range(n):
        rnd = random.Random(seed0 * 1000 + world * 100 + t)
        for r in range(world):
            p = os.path.join(out, "gang-%d-%d.pt" % (world, r))
            if os.path.exists(p):
                os.unlink(p)
        victim = rnd.randrange(world)
        point = rnd.choice(points)
        if point == "before_commit":
            victim = 0        # only rank 0 writes the record
        # the commit phases happen at checkpoint steps only
        steps = [s for s in range(1, TOTAL) if point in ("before", "mid")
                 or s % EVERY == 0]
        if remote and point not in ("before", "mid"):
            # an engine's uploader may supersede any checkpoint but the
            # last one (a newer one was offered before its upload began):
            # that step then never reaches its commit phases
            steps = steps[-1:]
        trial = (victim, rnd.choice(steps), point,
                 rnd.choice(("term", "kill")))
        why = "trial %d (seed %d): %s" % (t, seed0, trial)
        codes = w.launch_gang(w.ddp_preempt, world, where(t, 1), out, TOTAL,
                              EVERY, trial)
        if trial[3] == "kill":
            kills += 1
            assert codes[victim] == -9, (why, codes)
        else:
            notices += 1
            # every rank took its final checkpoint and left on its own
            assert codes == [0] * world, (why, codes)
        # the next attempt (no preemption) restores and finishes
        codes = w.launch_gang(w.ddp_preempt, world, where(t, 2), out, TOTAL,
                              EVERY, (-1, -1, "", ""))
        assert codes == [0] * world, (why, codes)
        for r in range(world):
            res = torch.load(os.path.join(out, "gang-%d-%d.pt" % (world, r)))
            assert res["done"], (why, r, res)
            for got, step, same in res["restored"]:
                assert same, (why, r, "restored step %s is not the "
                              "reference's state" % step)
            # one rank's restore = every rank's restore
            assert [x[:2] for x in res["restored"]] == \
                [x[:2] for x in torch.load(os.path.join(
                    out, "gang-%d-0.pt" % world))["restored"]], why
            if trial[3] == "term":
                # the notice's final checkpoint: nothing was lost
                assert res["restored"][-1][1] >= trial[1] - 1, (why, res)
            for a, b in zip(ref["final"], res["final"]):
                assert torch.equal(a, b), (why, r)
    assert kills + notices == n
