"""Round trips of everything a PyTorch user keeps in a training state,
in-place filling, the no-checkpoint result, and corruption fallback."""

import json
import math
import os
import random

import numpy as np
import pytest
import torch

import spotrun


def tiny_training(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(),
                                torch.nn.Dropout(0.2), torch.nn.Linear(5, 3))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 3, 0.5)
    return model, opt, sched


def step(model, opt, sched):
    loss = model(torch.randn(4, 6)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()


def save_and_wait(d, step_no, state, **kw):
    with spotrun.Checkpointer(d, **kw) as ck:
        assert ck.save(step_no, state) == "staged"
        ck.wait()
        assert ck.last_saved_step() == step_no


def test_plain_values_rng_and_numpy_round_trip(tmp_path):
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    state = {
        "rng": {"torch": torch.get_rng_state(),
                "numpy": np.random.get_state(),
                "python": random.getstate()},
        "arrays": {"f64": np.linspace(0, 1, 7), "i16": np.arange(
            -3, 3, dtype=np.int16), "b": np.array([True, False]),
            "u64": np.array([2**64 - 1, 0], dtype=np.uint64),
            "zero_d": np.array(3.25, dtype=np.float32),
            "fortran": np.asfortranarray(np.arange(12.).reshape(3, 4)),
            "empty": np.zeros((0, 5), dtype=np.int64),
            "big_endian": np.arange(5, dtype=">i4")},
        "nested": {"a": {"b": {"c": [1, 2.5, None, True, "x"]}}},
        "int_keys": {0: "zero", 7: [1, 2], (1, "t"): b"\x00\xffbytes"},
        "tuple": (1, (2, 3), []),
        "specials": [float("inf"), -float("inf"), -0.0, 2**80, -2**70,
                     1e-308, 0.1 + 0.2],
        "np_scalars": [np.float32(0.1), np.int64(-4), np.bool_(True)],
        "reserved": {"__spotrun__": "tuple", "items": "not a tuple"},
        "blob": bytearray(b"abc"),
        "nan": float("nan"),
        "dtype": torch.bfloat16,
        "t": torch.ones(2),
    }
    save_and_wait(tmp_path, 3, state)
    out = {}
    assert spotrun.restore(tmp_path, out) == 3

    assert torch.equal(out["rng"]["torch"], state["rng"]["torch"])
    a, b = out["rng"]["numpy"], state["rng"]["numpy"]
    assert a[0] == b[0] and a[2:] == b[2:] and np.array_equal(a[1], b[1])
    assert a[1].dtype == np.uint32
    assert out["rng"]["python"] == state["rng"]["python"]
    for k, v in state["arrays"].items():
        assert out["arrays"][k].dtype == v.dtype.newbyteorder("="), k
        assert np.array_equal(out["arrays"][k], v), k
    for k in ("nested", "int_keys", "tuple", "reserved", "blob", "dtype"):
        assert out[k] == state[k] and type(out[k]) is type(state[k]), k
    assert [repr(x) for x in out["specials"]] == \
        [repr(x) for x in state["specials"]]
    assert math.copysign(1, out["specials"][2]) == -1
    for x, y in zip(out["np_scalars"], state["np_scalars"]):
        assert type(x) is type(y) and x == y
    assert math.isnan(out["nan"])
    # the restored RNG states drive the generators identically
    random.setstate(out["rng"]["python"])
    np.random.set_state(out["rng"]["numpy"])
    torch.set_rng_state(out["rng"]["torch"])
    r1 = (random.random(), np.random.rand(), torch.rand(1).item())
    random.setstate(state["rng"]["python"])
    np.random.set_state(state["rng"]["numpy"])
    torch.set_rng_state(state["rng"]["torch"])
    assert r1 == (random.random(), np.random.rand(), torch.rand(1).item())


def test_restore_fills_in_place_and_creates_missing_optimizer_state(
        tmp_path):
    model, opt, sched = tiny_training(0)
    for _ in range(4):
        step(model, opt, sched)
    saved = {"model": model.state_dict(), "optimizer": opt.state_dict(),
             "scheduler": sched.state_dict()}
    save_and_wait(tmp_path, 4, saved)

    model2, opt2, sched2 = tiny_training(1)   # fresh: empty Adam state
    assert opt2.state_dict()["state"] == {}
    st = {"model": model2.state_dict(), "optimizer": opt2.state_dict(),
          "scheduler": sched2.state_dict()}
    model_sd, w = st["model"], st["model"]["0.weight"]
    assert spotrun.restore(tmp_path, st) == 4
    assert st["model"] is model_sd and st["model"]["0.weight"] is w
    # filled in place: the module's own parameter already has the values
    assert torch.equal(model2[0].weight, model[0].weight)
    assert set(st["optimizer"]["state"]) == {0, 1, 2, 3}
    opt2.load_state_dict(st["optimizer"])
    sched2.load_state_dict(st["scheduler"])
    assert sched2.state_dict() == sched.state_dict()
    assert opt2.state_dict()["param_groups"] == \
        opt.state_dict()["param_groups"]
    torch.manual_seed(9)
    step(model, opt, sched)
    torch.manual_seed(9)
    step(model2, opt2, sched2)
    for p, q in zip(model.parameters(), model2.parameters()):
        assert torch.equal(p, q)


def test_checkpointer_prefaults_the_staging_its_restore_reads_into(
        tmp_path):
    """A Checkpointer made on a directory that holds a checkpoint maps the
    memory the restore will read into at once and faults it in on a thread
    (spotckpt_prefault); restore() and the first save use that memory as
    it is.  On an empty directory it maps nothing."""
    model, opt, sched = tiny_training(0)
    step(model, opt, sched)
    with spotrun.Checkpointer(tmp_path / "empty") as ck:
        assert ck.stats()["staging_bytes"] == 0
    save_and_wait(tmp_path, 1, {"model": model.state_dict(),
                                "optimizer": opt.state_dict()})
    model2, opt2, _ = tiny_training(1)
    st = {"model": model2.state_dict(), "optimizer": opt2.state_dict()}
    with spotrun.Checkpointer(tmp_path) as ck:
        staged = ck.stats()["staging_bytes"]
        assert staged > 0
        assert ck.restore(st) == 1
        assert ck.stats()["staging_bytes"] == staged
        assert torch.equal(model2[0].weight, model[0].weight)
        assert ck.save(2, st) == "staged"
        ck.wait()
        assert ck.stats()["staging_bytes"] == staged
    # closed while the thread may still run: nothing left behind
    spotrun.Checkpointer(tmp_path).close()


def test_checkpointer_restore_makes_the_staging_memory_its_saves_use(
        tmp_path):
    """A job's first restore through a Checkpointer keeps the old bytes in
    the engine's staging memory, made for it then
    (spotckpt_reader_read_all_with); the first save uses that memory as
    it is; a failed restore through it puts every byte back."""
    model, opt, sched = tiny_training(0)
    for _ in range(2):
        step(model, opt, sched)
    save_and_wait(tmp_path, 2, {"model": model.state_dict(),
                                "optimizer": opt.state_dict()})
    model2, opt2, _ = tiny_training(1)
    st = {"model": model2.state_dict(), "optimizer": opt2.state_dict()}
    with spotrun.Checkpointer(tmp_path, prefault=False) as ck:
        assert ck.stats()["staging_bytes"] == 0
        assert ck.restore(st) == 2
        staged = ck.stats()["staging_bytes"]
        assert staged > 0
        assert torch.equal(model2[0].weight, model[0].weight)
        assert ck.save(3, st) == "staged"
        ck.wait()
        assert ck.stats()["staging_bytes"] == staged
        # step 3's last byte damaged: restoring it exactly fails, and
        # leaves the state as it was
        shard = os.path.join(tmp_path, "step-00000003",
                             "shard-00000.safetensors")
        with open(shard, "r+b") as f:
            f.seek(-1, os.SEEK_END)
            b = f.read(1)
            f.seek(-1, os.SEEK_END)
            f.write(bytes([b[0] ^ 0x40]))
        with torch.no_grad():
            for p in model2.parameters():
                p.fill_(7.0)
        with pytest.raises(spotrun.CheckpointError):
            ck.restore(st, step=3)
        for p in model2.parameters():
            assert bool((p == 7.0).all())


def test_empty_optimizer_state_round_trips(tmp_path):
    model, opt, _ = tiny_training(0)
    save_and_wait(tmp_path, 0, {"model": model.state_dict(),
                                "optimizer": opt.state_dict()})
    model2, opt2, sched2 = tiny_training(1)
    step(model2, opt2, sched2)            # has state; the checkpoint not
    st = {"model": model2.state_dict(), "optimizer": opt2.state_dict()}
    assert spotrun.restore(tmp_path, st) == 0
    assert st["optimizer"]["state"] == {}
    opt2.load_state_dict(st["optimizer"])
    assert opt2.state_dict()["state"] == {}


def test_non_contiguous_tensors(tmp_path):
    base = torch.arange(48, dtype=torch.float32).view(6, 8)
    state = {"t": base.t(), "cols": base[:, 1::3], "exp": torch.ones(
        1, 3).expand(4, 3)}
    save_and_wait(tmp_path, 1, state)
    out = {}
    assert spotrun.restore(tmp_path, out) == 1
    for k in state:
        assert torch.equal(out[k], state[k]), k
    # restoring into an existing non-contiguous view writes through it
    target = torch.zeros(6, 8)
    view = target.t()
    save_and_wait(tmp_path / "c", 5, {"t": base.t().contiguous()})
    st = {"t": view}
    assert spotrun.restore(tmp_path / "c", st) == 5
    assert st["t"] is view and torch.equal(target, base)


def test_no_checkpoint_returns_none(tmp_path):
    st = {"x": torch.ones(1)}
    assert spotrun.restore(tmp_path / "missing", st) is None
    (tmp_path / "empty").mkdir()
    assert spotrun.restore(tmp_path / "empty", st) is None
    with spotrun.Checkpointer(tmp_path / "fresh") as ck:
        assert ck.restore(st) is None
        assert ck.last_saved_step() is None
    assert torch.equal(st["x"], torch.ones(1))
    save_and_wait(tmp_path / "one", 4, st)
    with pytest.raises(spotrun.CheckpointError):
        spotrun.restore(tmp_path / "one", st, step=3)
    assert spotrun.restore(tmp_path / "one", st, step=4) == 4
    assert spotrun.restore(tmp_path / "one", st, max_step=3) is None


def shard_files(cdir):
    return [os.path.join(cdir, f) for f in sorted(os.listdir(cdir))
            if f != "manifest.json"]


def flip_byte(path, offset_from_end):
    with open(path, "r+b") as f:
        f.seek(-offset_from_end, os.SEEK_END)
        b = f.read(1)
        f.seek(-offset_from_end, os.SEEK_END)
        f.write(bytes([b[0] ^ 0x40]))


@pytest.mark.parametrize("where", ["shard", "manifest"])
def test_corrupt_newest_falls_back_to_previous(tmp_path, where, caplog,
                                               capfd):
    d = tmp_path / "ck"
    with spotrun.Checkpointer(d, keep=3) as ck:
        for s in (1, 2):
            ck.save(s, {"w": torch.full((1000,), float(s)), "step": s})
            ck.wait()
    newest = [e for e in spotrun.list_checkpoints(d) if e["step"] == 2]
    assert newest and newest[0]["committed"]
    cdir = [os.path.join(d, e) for e in os.listdir(d) if e.endswith("2")][0]
    if where == "shard":
        flip_byte(shard_files(cdir)[0], 100)   # inside the tensor data
    else:
        mpath = os.path.join(cdir, "manifest.json")
        text = open(mpath).read()
        open(mpath, "w").write(text.replace('"step":2', '"step":3', 1)
                               if '"step":2' in text else text[:-5])
    with pytest.raises(spotrun.CheckpointError):
        spotrun.verify(d, 2)
    capfd.readouterr()
    st = {}
    assert spotrun.restore(d, st) == 1
    assert st["step"] == 1 and torch.equal(st["w"], torch.full((1000,), 1.))
    if where == "shard":   # caught while reading: named file and tensor
        assert "shard-" in caplog.text and "tensor w" in caplog.text
    else:                  # caught when opening: the library logs it
        err = capfd.readouterr().err
        assert "step-00000002" in err and "manifest.json" in err


def test_unsupported_value_names_its_path(tmp_path):
    with spotrun.Checkpointer(tmp_path) as ck:
        with pytest.raises(spotrun.StateError, match=r"\['opt'\]\['fn'\]"):
            ck.save(1, {"w": torch.ones(1), "opt": {"fn": object()}})
        with pytest.raises(spotrun.StateError, match="complex"):
            ck.save(1, {"w": torch.ones(1, dtype=torch.complex64)})
        with pytest.raises(ValueError, match="no tensor"):
            ck.save(1, {"x": 1})


def test_retention_lazy_and_final(tmp_path):
    w = torch.zeros(256)
    with spotrun.Checkpointer(tmp_path, keep=2, backpressure="block") as ck:
        for s in range(1, 5):
            w.fill_(s)
            assert ck.save(s, {"w": w}, lazy=True) in ("staged", "coalesced")
            ck.wait_staged()
        ck.wait()
        w.fill_(9)
        assert ck.save_final(9, {"w": w}) is True
        assert ck.last_saved_step() == 9
        st = ck.stats()
        assert st["saves_committed"] >= 2 and st["saves_failed"] == 0
    steps = [e["step"] for e in spotrun.list_checkpoints(tmp_path)
             if e["committed"]]
    assert steps == [9, 4]
    out = {}
    assert spotrun.restore(tmp_path, out) == 9
    assert torch.equal(out["w"], torch.full((256,), 9.))
    assert spotrun.restore(tmp_path, out, max_step=8) == 4
    assert torch.equal(out["w"], torch.full((256,), 4.))


def test_save_final_reports_a_missed_deadline(tmp_path):
    import time
    with spotrun.Checkpointer(tmp_path) as ck:
        assert ck.save_final(1, {"w": torch.ones(8)},
                             deadline=time.time() - 1) is False
    assert spotrun.verify(tmp_path) == 1


def test_metadata_is_plain_json(tmp_path):
    save_and_wait(tmp_path, 2, {"w": torch.ones(1), "k": {1: (2,)}})
    cdir = os.path.join(tmp_path, os.listdir(tmp_path)[0])
    with open(os.path.join(cdir, "manifest.json")) as f:
        text = f.read()
    assert "spotrun.python/1" in text
    json.loads(text)


def test_save_returns_after_the_staging_copy(tmp_path):
    """Once save() returns, training may overwrite the tensors: the
    checkpoint holds the values at the time of the call."""
    w = torch.arange(100000, dtype=torch.float32)
    a = np.arange(1000, dtype=np.int64)
    with spotrun.Checkpointer(tmp_path) as ck:
        ck.save(1, {"w": w, "a": a})
        w.fill_(-1)
        a.fill(-1)
        ck.wait()
    out = {}
    assert spotrun.restore(tmp_path, out) == 1
    assert torch.equal(out["w"], torch.arange(100000, dtype=torch.float32))
    assert np.array_equal(out["a"], np.arange(1000))


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="backpressure"):
        spotrun.Checkpointer(tmp_path, backpressure="drop")
    with pytest.raises(spotrun.CheckpointError) as ei:
        spotrun.Checkpointer(tmp_path / "no" / "parent")
    assert ei.value.errno is not None and "no/parent" in str(ei.value)
    ck = spotrun.Checkpointer(tmp_path)
    ck.close()
    ck.close()
    with pytest.raises(ValueError, match="closed"):
        ck.save(1, {"w": torch.ones(1)})
    with pytest.raises(TypeError, match="dict"):
        spotrun.restore(tmp_path, torch.ones(1))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_round_trip(tmp_path):
    w = torch.randn(1000, device="cuda")
    host = torch.arange(10.)
    save_and_wait(tmp_path, 1, {"w": w, "h": host, "t": w.view(10, 100).t()})
    out = {}
    assert spotrun.restore(tmp_path, out) == 1
    assert out["w"].is_cuda and torch.equal(out["w"], w)
    assert torch.equal(out["t"], w.view(10, 100).t())
    into = {"w": torch.zeros(1000, device="cuda"), "h": host,
            "t": torch.zeros(100, 10, device="cuda")}
    target = into["w"]
    with spotrun.Checkpointer(tmp_path) as ck:
        assert ck.restore(into) == 1
    assert into["w"] is target and torch.equal(target, w)


def test_forked_child_neither_uses_nor_closes_the_engine(tmp_path):
    ck = spotrun.Checkpointer(tmp_path)
    pid = os.fork()
    if pid == 0:   # child: must not touch the parent's engine threads
        code = 1
        try:
            ck.save(1, {"w": torch.ones(1)})
        except RuntimeError:
            ck.close()
            code = 0
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    ck.save(2, {"w": torch.ones(1)})
    ck.close()
    assert spotrun.restore(tmp_path, {}) == 2


def test_unsigned_numpy_arrays_keep_their_dtype(tmp_path):
    """uint16/32/64 are stored as U16/U32/U64 (numpy's RNG state is a
    uint32 array), listed so by the reader, and restored as themselves."""
    state = {"u16": np.array([0, 65535, 7], dtype=np.uint16),
             "u32": np.array([0, 2**32 - 1, 400000000], dtype=np.uint32),
             "u64": np.array([2**64 - 1, 0], dtype=np.uint64),
             "rng": np.random.RandomState(9).get_state()}
    save_and_wait(tmp_path, 4, state)
    import subprocess
    out = subprocess.run(["spotrun", "ckpt", "inspect", str(tmp_path),
                          "--json"], capture_output=True, text=True,
                         check=True).stdout
    dtypes = {t["name"]: t["dtype"] for t in json.loads(out)["tensors"]}
    assert sorted(dtypes.values()).count("U32") == 2, dtypes
    assert "U16" in dtypes.values() and "U64" in dtypes.values()
    out = {}
    assert spotrun.restore(tmp_path, out) == 4
    for k in ("u16", "u32", "u64"):
        assert out[k].dtype == state[k].dtype, k
        assert np.array_equal(out[k], state[k]), k
    assert out["rng"][1].dtype == np.uint32
    assert np.array_equal(out["rng"][1], state["rng"][1])


def test_checkpoints_with_unsigned_stored_as_signed_still_restore(
        tmp_path, monkeypatch):
    """Before U32 existed, uint32 arrays were written bit for bit as I32
    with "uint32" in the metadata; such checkpoints restore unchanged."""
    from spotrun import _state
    arr = np.array([0, 2**32 - 1, 123456789], dtype=np.uint32)
    monkeypatch.setitem(_state._NP_TO_ST, "uint32", "I32")
    save_and_wait(tmp_path, 2, {"a": arr})
    monkeypatch.undo()
    out = {}
    assert spotrun.restore(tmp_path, out) == 2
    assert out["a"].dtype == np.uint32 and np.array_equal(out["a"], arr)


def test_set_background_places_the_engine_and_still_saves(tmp_path):
    with spotrun.Checkpointer(tmp_path) as ck:
        with pytest.raises(ValueError):
            ck.set_background(writer_cpus=[64])
        with pytest.raises(spotrun.CheckpointError):
            ck.set_background(nice=25)
        ck.set_background(nice=5, writer_cpus=[0], copy_cpus=[0],
                          write_bytes_per_s=256 << 20)
        w = torch.arange(1 << 18, dtype=torch.float32)
        ck.save(1, {"w": w})
        ck.wait()
    out = {}
    assert spotrun.restore(tmp_path, out) == 1
    assert torch.equal(out["w"], w)
