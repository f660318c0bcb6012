"""Must show 1: bit-exact resume after kill -9.

examples/train.py (MLP with dropout, Adam, StepLR; torch, numpy and Python
RNGs all in play) runs N steps straight.  Separately it runs N/2 steps,
checkpoints, keeps training, is killed with SIGKILL, and a new process
restores and trains to N.  Every tensor of the final model, optimizer and
scheduler state, and every plain value, must be identical bit for bit.
"""

import json
import os
import signal

import pytest
import torch

from conftest import ASAN, read_until, start_train

N = 120 if ASAN else 200


def assert_identical(a, b, path="state"):
    assert type(a) is type(b), "%s: %s vs %s" % (path, type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert torch.equal(a, b), "%s differs" % path
        # torch.equal treats NaN != NaN and -0.0 == 0.0: compare bits too
        assert a.contiguous().numpy().tobytes() == \
            b.contiguous().numpy().tobytes(), "%s bits differ" % path
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys()), path
        for k in a:
            assert_identical(a[k], b[k], "%s[%r]" % (path, k))
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_identical(x, y, "%s[%d]" % (path, i))
    else:
        assert a == b, "%s: %r != %r" % (path, a, b)


def run_to_end(args):
    p = start_train(args)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err[-3000:]
    return out


@pytest.mark.parametrize("lazy", [0, 1], ids=["eager", "lazy"])
def test_kill9_resume_is_bit_exact(tmp_path, lazy):
    half = N // 2
    straight = tmp_path / "straight.pt"
    resumed = tmp_path / "resumed.pt"
    common = ["--steps", str(N), "--ckpt-every", str(half), "--seed", "7",
              "--ckpt-lazy", str(lazy)]

    out = run_to_end(common + ["--ckpt-dir", str(tmp_path / "a"),
                               "--dump", str(straight)])
    assert "start step=0" in out

    # First half: wait until the checkpoint of step N/2 is committed, while
    # the process keeps training (slowly) past it, then SIGKILL it.
    p = start_train(common + ["--ckpt-dir", str(tmp_path / "b"),
                              "--step-sleep-ms", "20"])
    line = read_until(p, "committed step=")
    assert line == "committed step=%d" % half
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=30)
    assert p.returncode == -signal.SIGKILL

    out2 = run_to_end(common + ["--ckpt-dir", str(tmp_path / "b"),
                                "--dump", str(resumed)])
    assert "resumed step=%d" % half in out2, out2
    res1 = json.loads(out.splitlines()[-1])
    res2 = json.loads(out2.splitlines()[-1])
    assert res2["resumed_from"] == half and res1["resumed_from"] is None

    a = torch.load(straight)
    b = torch.load(resumed)
    assert a["step"] == b["step"] == N
    assert a["optimizer"]["state"], "Adam state must not be empty"
    assert_identical(a, b)
    assert res1["hash"] == res2["hash"]
    assert res1["loss"] == res2["loss"]
