"""`spotrun ckpt inspect` shows a Python training state's metadata (a
several-KB JSON blob, mostly the RNG state) shortened and indented, all
of it with --full-meta, and exactly in --json."""

import json
import random
import subprocess

import numpy as np

import spotrun


def inspect(d, *extra):
    p = subprocess.run(["spotrun", "ckpt", "inspect", str(d)] + list(extra),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_metadata_is_shortened_unless_asked(tmp_path):
    random.seed(1)
    state = {"rng": random.getstate(), "lr": 0.25, "note": "n" * 500,
             "w": np.zeros(4, dtype=np.float32)}
    with spotrun.Checkpointer(tmp_path) as ck:
        ck.save(3, state)
        ck.wait()
    out = inspect(tmp_path)
    assert max(len(ln) for ln in out.splitlines()) < 120
    assert len(out) < 2500, "the RNG state was printed whole"
    assert "shortened (--full-meta shows all of it)" in out
    assert "... 619 more items" in out           # 625 words, 6 shown
    assert "... (500 characters)" in out
    assert '"lr": 0.25' in out

    full = inspect(tmp_path, "--full-meta")
    assert "--full-meta shows" not in full and "n" * 500 in full
    words = random.getstate()[1]
    assert ("%d," % words[400]) in full

    meta = json.loads(inspect(tmp_path, "--json"))["meta"]
    assert len(meta["state"]["rng"]["items"][1]["items"]) == 625
    assert meta["state"]["note"] == "n" * 500


def test_small_metadata_is_shown_as_is(tmp_path):
    with spotrun.Checkpointer(tmp_path) as ck:
        ck.save(1, {"epoch": 2, "w": np.ones(2, dtype=np.float32)})
        ck.wait()
    out = inspect(tmp_path)
    assert "--full-meta shows" not in out and '"epoch": 2' in out
