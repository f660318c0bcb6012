"""Multi-rank checkpoints (python/spotrun/dist.py) with real
torch.distributed ranks: gloo on CPU, one process per rank (spawned),
127.0.0.1 only.  The rank programs are in dist_workers.py.

  * 2-rank DDP training checkpointed, stopped and resumed ends bitwise
    identical to the uninterrupted run;
  * kill -9 of a rank during the commit of a step: that step is never
    used, the previous globally committed one is;
  * resharding 4 -> 2 -> 3 ranks with uneven slices: values equal after
    each restore; a replicated-only state restores at any world size, a
    rank-local shard at another world size is a clear error.
  * a rank's own slices are read from its kept copy straight into the
    state's tensors (no copy); a damaged copy: the store, copied in.
"""

import glob
import os
import shutil
import tempfile
import time

import pytest

torch = pytest.importorskip("torch")

import dist_workers as w  # noqa: E402
from spotrun import dist as sdist  # noqa: E402


def load(out, name):
    return torch.load(os.path.join(out, name))


def test_ddp_resume_is_bitwise_identical(tmp_path):
    out, d = str(tmp_path), str(tmp_path / "ck")
    # the reference run, then a run preempted after step 5: the newest
    # global step is 4
    assert w.launch(w.ddp_train, 2, d, out, True, 5, 8, 2) == [0, 0]
    assert sdist.committed_steps(d)[0] == 4
    assert w.launch(w.ddp_train, 2, d, out, False, 99, 8, 2) == [0, 0]
    ref = run = out
    for r in (0, 1):
        a, b = load(ref, "ref-%d.pt" % r), load(run, "ddp-%d.pt" % r)
        assert b["restored"] == 4 and b["step"] == 8
        assert len(a["params"]) == len(b["params"])
        for x, y in zip(a["params"], b["params"]):
            assert torch.equal(x, y)
        for k, s in a["optim"]["state"].items():
            assert torch.equal(s["momentum_buffer"],
                               b["optim"]["state"][k]["momentum_buffer"])
    # DDP kept both ranks equal; the replicated part was stored once
    r0, r1 = load(run, "ddp-0.pt"), load(run, "ddp-1.pt")
    assert all(torch.equal(x, y) for x, y in zip(r0["params"], r1["params"]))
    assert os.listdir(os.path.join(d, "replicated"))
    assert not os.path.exists(os.path.join(d, "rank-00001", "replicated"))


@pytest.mark.parametrize("victim,phase", [(1, "durable"),
                                          (0, "before_commit")])
def test_kill_during_commit_uses_previous_step(tmp_path, victim, phase):
    out, d = str(tmp_path), str(tmp_path / "ck")
    codes = w.launch(w.commit_kill, 2, d, out, [1, 2], victim, phase, 2)
    assert codes[victim] == -9 and codes[1 - victim] == 0, codes
    survivor = load(out, "kill-%d.pt" % (1 - victim))
    assert survivor["saved"][0] == (1, True)
    if victim == 1:
        assert survivor["saved"][1] == (2, False)   # no commit without rank 1
    # parts of step 2 are on disk, but no global record names it
    assert os.path.isdir(os.path.join(d, "replicated", "step-00000002"))
    assert sdist.committed_steps(d) == [1]
    # the next attempt restores step 1 on both ranks, never part of 2 ...
    assert w.launch(w.commit_kill, 2, d, out, [2], -1, "", 0) == [0, 0]
    w.check_recommitted(out)   # ... and commits step 2 afresh
    # a part of step 2 damaged on rank 1 only: both ranks agree on step 1
    part = os.path.join(d, "rank-00001", "step-00000002")
    f = max((os.path.join(part, n) for n in os.listdir(part)),
            key=os.path.getsize)
    with open(f, "r+b") as fh:
        fh.seek(os.path.getsize(f) - 4)
        fh.write(b"\xff\xfe\xfd\xfc")
    assert w.launch(w.commit_kill, 2, d, out, [], -1, "", 0) == [0, 0]
    for r in (0, 1):
        res = load(out, "kill-%d.pt" % r)
        assert res["restored"] == 1, (r, res)
        assert torch.equal(res["s"], torch.full((3,), 10.0 + r))


def test_gang_shares_the_notice_deadline(tmp_path):
    """A notice on rank 1 only: rank 0 learns it and its deadline at the
    same step boundary, and its save_final() stops waiting for rank 1's
    marker, which never comes, at that deadline instead of after
    commit_timeout (an hour)."""
    out, d = str(tmp_path), str(tmp_path / "ck")
    assert w.launch(w.shared_deadline, 2, d, out, 2.0, 1,
                    timeout=300) == [0, 0]
    w.check_shared_deadline(out, 1, False)
    assert sdist.committed_steps(d) == []


def test_kept_rank_abandons_a_final_step_that_cannot_commit(tmp_path):
    """Rank 1 noticed goes without its part of step 1; kept rank 0's
    final write of step 1 is under way at rank 1's deadline: rank 0 gives
    it up - no part of step 1 on its disk (committed or temporary), no
    marker, no record - and step 0 stays committed."""
    out, d = str(tmp_path), str(tmp_path / "ck")
    assert w.launch(w.final_abandon, 2, d, out, 2.0, 1, "during",
                    timeout=300) == [0, 0]
    w.check_final_abandoned(out, 1)
    assert sdist.committed_steps(d) == [0]
    left = [os.path.join(r, n) for r, ds, fs in os.walk(d)
            for n in ds + fs if "00000001" in n]
    assert left == [], left
    for part in ("replicated", "rank-00000"):
        assert os.path.isdir(os.path.join(d, part, "step-00000000"))


def test_kept_rank_abandons_a_periodic_step_still_in_flight(tmp_path):
    """The notice comes while kept rank 0's periodic save of step 1 is
    still committing (held before its marker) and rank 1, noticed, never
    saves it: the final save of that same step gives it up at rank 1's
    deadline instead of waiting for it - no marker, no record."""
    out, d = str(tmp_path), str(tmp_path / "ck")
    assert w.launch(w.final_abandon, 2, d, out, 2.0, 1, "inflight",
                    timeout=300) == [0, 0]
    w.check_final_abandoned(out, 1)
    assert sdist.committed_steps(d) == [0]
    assert not os.path.exists(os.path.join(d, "global", "step-00000001",
                                           "rank-00000.json"))


def test_final_on_the_step_just_saved_keeps_that_save(tmp_path):
    """The local protocol: a final checkpoint of the step save() has just
    saved returns once that step is committed, and leaves its files as
    that save wrote them."""
    out, d = str(tmp_path), str(tmp_path / "ck")
    assert w.launch(w.final_on_saved_step, 2, d, out, timeout=300) == [0, 0]
    for r in (0, 1):
        res = load(out, "final-%d.pt" % r)
        # rank 1's part is prepared; rank 0 returned with the step committed
        assert res["final"] is True and res["rewritten"] == [], res
    assert load(out, "final-0.pt")["last"] == 2
    assert sdist.committed_steps(d)[0] == 2


def test_reshard_4_2_3_and_world_size_mismatch(tmp_path):
    out, d = str(tmp_path), str(tmp_path / "ck")
    repl, local = str(tmp_path / "repl"), str(tmp_path / "local")
    assert w.launch(w.reshard, 4, d, out, None, 1, repl, local) == [0] * 4
    assert w.launch(w.reshard, 2, d, out, 1, 2, repl, local) == [0] * 2
    assert w.launch(w.reshard, 3, d, out, 2, 3, repl, local) == [0] * 3
    for world, step in ((2, 1), (3, 2)):
        for r in range(world):
            res = load(out, "reshard-%d-%d.pt" % (world, r))
            assert res["restored"] == step and res["ok"], (world, r, res)
            # replicated-only (DDP) state: any world size
            assert res["repl"] == (1, [0.0, 1.0, 2.0, 3.0, 4.0], 5)
            # a rank-local shard saved by 4 ranks: a clear error
            assert "saved by 4 ranks without its global shape" in \
                res["local_err"], res["local_err"]
    assert sdist.committed_steps(d)[0] == 3


def test_one_rank_gets_the_plain_checkpointer(tmp_path, monkeypatch):
    import spotrun
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    c = spotrun.Checkpointer(str(tmp_path / "a"))
    assert type(c) is spotrun.Checkpointer
    c.close()
    monkeypatch.setenv("WORLD_SIZE", "2")
    c = spotrun.Checkpointer(str(tmp_path / "b"), commit_timeout=1)
    assert isinstance(c, spotrun.DistCheckpointer)
    assert (c.rank, c.world_size) == (0, 2)
    c.close()
    with pytest.raises(ValueError, match="rank 2 is not in a world of 2"):
        spotrun.Checkpointer(str(tmp_path / "c"), rank=2)
    with pytest.raises(ValueError, match="both global_shape and offsets"):
        sdist.Shard(torch.zeros(2), (4,))
    with pytest.raises(ValueError, match="outside the global size"):
        sdist.Shard(torch.zeros(3), (4,), (2,))



def _flip(path):
    with open(path, "r+b") as f:
        f.seek(-5, 2)
        b = f.read(1)
        f.seek(-5, 2)
        f.write(bytes([b[0] ^ 0xFF]))


def test_kept_copy_restores_in_place(tmp_path, monkeypatch):
    """One rank with a file:// store and a kept copy of its final part
    (dist_keep.py) on a tmpfs: its exact slices (a global one and a
    rank-local one) are read from the copy straight into the state's own
    tensors, with no copy by _assign; bit for bit.  A byte of the copy
    flipped: the copy is refused and the store read, into new tensors
    copied in, bit for bit.  A periodic step from tier 2 (on the disk):
    new tensors too."""
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else str(tmp_path)
    keep = tempfile.mkdtemp(prefix="test-keep-", dir=shm)
    monkeypatch.setenv("SPOTRUN_FINAL_KEEP_DIR", keep)
    d = str(tmp_path / "node")
    remote = "file://%s" % (tmp_path / "store")
    g = torch.arange(64, dtype=torch.float32).reshape(8, 8)
    loc = torch.arange(1000, dtype=torch.int64)

    def state(k):
        return {"w": sdist.Shard(g + k, (8, 8), (0, 0)),
                "loc": sdist.Shard(loc * k), "n": k}

    def ckpt():
        return sdist.DistCheckpointer(d, remote=remote, rank=0,
                                      world_size=1, commit_timeout=30,
                                      final_keep=True)

    copied = []
    real = sdist._assign
    monkeypatch.setattr(sdist, "_assign",
                        lambda dst, i, src: (copied.append(dst.shape),
                                             real(dst, i, src)))
    try:
        c = ckpt()
        assert c.restore(state(0)) is None
        c.save(1, state(1))
        assert c.wait() is True
        assert c.save_final(2, state(2), deadline=time.time() + 60) is True
        # where its time went: [wall s, CPU s] per phase
        assert sorted(c.final_phases) == ["commit", "keep", "marker",
                                          "part"], c.final_phases
        assert all(w >= 0 and cpu >= 0 for w, cpu in
                   c.final_phases.values()), c.final_phases
        c.close()
        for k, spoil in ((2, False), (3, True)):
            c = ckpt()
            st = state(0)
            w_t, l_t = st["w"].tensor, st["loc"].tensor
            ptrs = (w_t.data_ptr(), l_t.data_ptr())
            del copied[:]
            assert c.restore(st) == k and st["n"] == k
            src = c.restore_sources
            assert st["w"].tensor is w_t and st["loc"].tensor is l_t
            assert (w_t.data_ptr(), l_t.data_ptr()) == ptrs
            assert torch.equal(w_t, g + k) and torch.equal(l_t, loc * k)
            if spoil:
                assert src["rank-00000"] == "store", src
                assert sorted(copied) == [torch.Size([8, 8]),
                                          torch.Size([1000])]
            else:
                assert src["rank-00000"] == "kept copy", src
                assert copied == []
            # the next attempt's copy: step 3, damaged on the second pass
            assert c.save_final(3, state(3),
                                deadline=time.time() + 60) is True
            c.close()
            shard = glob.glob(os.path.join(keep, "rank-00000",
                                           "step-00000003", "shard-*"))
            assert shard, os.listdir(keep)
            _flip(shard[0])
        # a periodic step read from tier 2: into new tensors
        c = ckpt()
        c.save(4, state(4))
        assert c.wait() is True
        c.close()
        c = ckpt()
        st = state(0)
        del copied[:]
        assert c.restore(st) == 4
        assert c.restore_sources["rank-00000"] in ("tier 2", "store")
        assert torch.equal(st["w"].tensor, g + 4) and len(copied) == 2
        c.close()
    finally:
        shutil.rmtree(keep, ignore_errors=True)
