"""Restore falls back to the previous checkpoint when the newest one's
files verify but its metadata does not decode (issue 10, item 7).

Each case saves step 1 normally, then step 2 with metadata rewritten the
way a bug or another writer would leave it; restore() must log a warning
naming step 2 and return step 1 - never raise, and never put anything but
a real dtype into the state (`tdtype: "load"` used to restore the
torch.load function).  A manifest whose step disagrees with its directory
name is corrupt, not a newer checkpoint.
"""

import json
import os

import pytest
import torch

import spotrun
from spotrun import _lib
from spotrun import checkpoint as ckmod

TAG = "__spotrun__"


def save_two(d, monkeypatch, meta2):
    with spotrun.Checkpointer(d, keep=3) as ck:
        ck.save(1, {"w": torch.full((8,), 1.0), "step": 1})
        ck.wait()
        monkeypatch.setattr(ckmod, "_meta_json", lambda tree: meta2(tree))
        ck.save(2, {"w": torch.full((8,), 2.0), "step": 2})
        ck.wait()
        monkeypatch.undo()
    # the files of step 2 verify: only its metadata is bad
    assert spotrun.verify(d, 2) == 2


def wrap(state):
    return json.dumps({"format": ckmod.FORMAT, "state": state}).encode()


CASES = {
    "unknown-tag": lambda tree: wrap({"w": {TAG: "pickle", "v": "x"}}),
    "tdtype-load": lambda tree: wrap(dict(tree, step={TAG: "tdtype",
                                                      "v": "load"})),
    "tdtype-not-a-name": lambda tree: wrap(dict(tree, step={TAG: "tdtype",
                                                            "v": ["float32"]})),
    "tensor-dtype-Tensor": lambda tree: wrap(dict(tree, w=dict(
        tree["w"], dtype="Tensor"))),
    "ndarray-dtype-object": lambda tree: wrap(dict(tree, w={
        TAG: "ndarray", "name": tree["w"]["name"], "dtype": "O",
        "shape": [8]})),
    "missing-field": lambda tree: wrap(dict(tree, w={TAG: "tensor"})),
    "c-api": lambda tree: b'{"run": "from the C API", "lr": 0.1}',
    "not-json": lambda tree: b"\x00not json",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_undecodable_metadata_falls_back(tmp_path, monkeypatch, caplog, case):
    d = tmp_path / "ck"
    save_two(d, monkeypatch, CASES[case])
    st = {}
    assert spotrun.restore(d, st) == 1
    assert st["step"] == 1 and torch.equal(st["w"], torch.full((8,), 1.0))
    assert "skipping checkpoint step 2" in caplog.text
    # asked for exactly step 2, the error is clear and typed
    with pytest.raises(spotrun.MetadataError):
        spotrun.restore(d, {}, step=2)


def test_only_real_dtypes_are_restored(tmp_path):
    d = tmp_path / "ck"
    st = {"dt": torch.bfloat16, "c": torch.complex64, "w": torch.ones(2)}
    with spotrun.Checkpointer(d) as ck:
        ck.save(3, st)
        ck.wait()
    out = {}
    assert spotrun.restore(d, out) == 3
    assert out["dt"] is torch.bfloat16 and out["c"] is torch.complex64


def test_manifest_step_must_match_the_directory(tmp_path, caplog):
    d = tmp_path / "ck"
    with spotrun.Checkpointer(d, keep=3) as ck:
        for s in (100, 200):
            ck.save(s, {"w": torch.full((4,), float(s))})
            ck.wait()
    # step-00000200 now holds a manifest that claims step 999999 (its own
    # checksum made to match, so only the step is wrong): rename a valid
    # checkpoint of another step into its place
    with spotrun.Checkpointer(tmp_path / "other") as ck:
        ck.save(999999, {"w": torch.full((4,), 9.0)})
        ck.wait()
    os.rename(d / "step-00000200", tmp_path / "old200")
    os.rename(tmp_path / "other" / "step-00999999", d / "step-00000200")
    with pytest.raises(spotrun.CheckpointError) as ei:
        spotrun.verify(d, 200)
    assert "999999" in str(ei.value)
    st = {}
    assert spotrun.restore(d, st) == 100
    assert torch.equal(st["w"], torch.full((4,), 100.0))
    ls = {e["step"]: e for e in spotrun.list_checkpoints(d)}
    assert ls[200]["damaged"] and not ls[200]["committed"]
    assert ls[100]["committed"] and not ls[100]["damaged"]
    # `spotrun ckpt ls` says so too
    import subprocess
    out = subprocess.run(["spotrun", "ckpt", "ls", str(d), "--json"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    states = {e["step"]: e["state"] for e in json.loads(out)}
    assert states == {200: "damaged", 100: "committed"}


def test_multi_rank_directory_is_named(tmp_path):
    """A single-process Checkpointer pointed at a DistCheckpointer's
    directory says so, naming how to open it, instead of returning None
    (issue 23)."""
    import numpy as np
    d = str(tmp_path / "gang")
    with spotrun.DistCheckpointer(d, rank=0, world_size=1) as dc:
        dc.save(3, {"w": np.arange(10, dtype=np.float32)})
        assert dc.wait()
    want = "spotrun.DistCheckpointer(%r, rank=0, world_size=1)" % d
    with pytest.raises(_lib.CheckpointError) as ei:
        spotrun.restore(d, {"w": np.zeros(10, dtype=np.float32)})
    assert want in str(ei.value)
    with spotrun.Checkpointer(d) as ck, pytest.raises(_lib.CheckpointError):
        ck.restore({"w": np.zeros(10, dtype=np.float32)})
    # an empty directory is still "no checkpoint"
    assert spotrun.restore(str(tmp_path / "empty"), {"w": None}) is None
