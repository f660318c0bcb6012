"""Peer copies of a gang's checkpoint parts (python/spotrun/dist_peer.py,
issue 33 "restore from a peer"), with real torch.distributed ranks
(gloo, CPU) over a file:// object store.  Attempt 1 trains 2 ranks with
peer_replicas=1 and stops after step 5 (step 4 committed): rank 0's
node holds rank 1's part, rank 1's node rank 0's.  Attempt 2 keeps rank
0's node and gives rank 1 a fresh one (its disk and copies gone), with
rank 0's held copy of rank 1's part removed (only an older step's copy
left: stale), or corrupted (a flipped
byte in a tensor: the engine's verification refuses it): rank 1 reads
its own part from the store (tier 3) and rank 0's replicated part from
peer rank 0, and the run ends bitwise identical to the uninterrupted
reference.  The restore from a peer itself, through the control plane
and a spot notice: tests/py/test_dist_gang.py.
"""

import json
import os
import shutil

import pytest

torch = pytest.importorskip("torch")

import dist_workers as w  # noqa: E402
import peer_workers as pw  # noqa: E402
from spotrun import dist as sdist  # noqa: E402
from spotrun import peer_wire  # noqa: E402

TIMEOUT = 300
pytestmark = pytest.mark.skipif(
    os.environ.get("SPOTRUN_CHECK_MODE") == "asan",
    reason="Python and torch: run in the plain pass (the engine's restore "
    "is tested under ASan by test_dist.py)")
STEPS, EVERY, STOP = 8, 2, 5


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """Attempt 1 (with the reference run): its node dirs and store."""
    base = tmp_path_factory.mktemp("peer")
    uri = "file://%s/store" % base
    dirs = [str(base / "a1-node0"), str(base / "a1-node1")]
    assert w.launch(pw.ddp_peer, 2, dirs, uri, str(base), True, STOP, STEPS,
                    EVERY, "a1", timeout=TIMEOUT) == [0, 0]
    assert sdist.committed_steps(uri)[0] == 4
    # the ring: each node holds the previous rank's parts of step 4
    for node, part in ((0, "rank-00001"), (1, "replicated"),
                       (1, "rank-00000")):
        assert os.path.isfile(os.path.join(
            dirs[node], "peer", part, "step-00000004", "manifest.json"))
    return base, uri, dirs


def second(tmp_path, first, name, damage=None):
    """Attempt 2 on a copy of attempt 1: rank 0's node kept, rank 1's new.
    damage(rank 0's hold dir) runs before it.  Returns rank 1's sources."""
    base, uri, dirs = first
    shutil.copytree(base / "store", tmp_path / "store")
    shutil.copytree(dirs[0], tmp_path / "node0")
    held = tmp_path / "node0" / "peer" / "rank-00001" / "step-00000004"
    assert (held / "manifest.json").is_file(), os.listdir(tmp_path / "node0")
    if damage:
        damage(held)
    out = str(tmp_path)
    nd = [str(tmp_path / "node0"), str(tmp_path / "fresh-node1")]
    assert w.launch(pw.ddp_peer, 2, nd, "file://%s/store" % tmp_path, out,
                    False, 99, STEPS, EVERY, name, timeout=TIMEOUT) == [0, 0]
    for r in (0, 1):
        a = torch.load(os.path.join(str(base), "ref-%d.pt" % r))
        b = torch.load(os.path.join(out, "%s-%d.pt" % (name, r)))
        assert b["restored"] == 4 and b["step"] == STEPS
        for x, y in zip(a["params"], b["params"]):
            assert torch.equal(x, y)
        for k, s in a["optim"]["state"].items():
            assert torch.equal(s["momentum_buffer"],
                               b["optim"]["state"][k]["momentum_buffer"])
    src = [json.load(open(os.path.join(out, "%s-%d.json" % (name, r))))
           for r in (0, 1)]
    assert src[0] == {"replicated": "tier 2", "rank-00000": "tier 2"}, src
    return src[1]


def _stale(held):
    # step 4's copy gone: rank 0's node holds only step 2's (stale)
    shutil.rmtree(held)
    assert (held.parent / "step-00000002" / "manifest.json").is_file()


def test_missing_or_stale_peer_copy_falls_back_to_the_store(tmp_path,
                                                            first):
    src = second(tmp_path, first, "stale", _stale)
    assert src == {"replicated": "peer rank 0", "rank-00001": "store"}


def _flip(held):
    shard = [n for n in sorted(os.listdir(held)) if n != "manifest.json"][0]
    p = os.path.join(held, shard)
    with open(p, "r+b") as f:
        f.seek(os.path.getsize(p) - 1)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0xFF]))


def test_corrupt_peer_copy_is_refused(tmp_path, first):
    src = second(tmp_path, first, "bad", _flip)
    assert src == {"replicated": "peer rank 0", "rank-00001": "store"}


def test_wire_parser_refuses_bad_requests():
    ok = {"token": "t", "op": "put", "part": "rank-00001", "step": 4,
          "files": [["manifest.json", 10], ["shard-00000.safetensors", 5]]}
    assert peer_wire.parse_request(json.dumps(ok).encode())["files"] == \
        [("manifest.json", 10), ("shard-00000.safetensors", 5)]
    bad = [b"not json", b"[]", b"{}",
           dict(ok, op="delete"), dict(ok, part="../etc"),
           dict(ok, part="rank-1"), dict(ok, step=-1), dict(ok, step=True),
           dict(ok, token=None), dict(ok, files=[]),
           dict(ok, files=[["../x", 1], ["manifest.json", 1]]),
           dict(ok, files=[["manifest.json", 1], ["manifest.json", 1]]),
           dict(ok, files=[["a", 1]]), dict(ok, files=[["manifest.json", -1]]),
           b"x" * (peer_wire.LINE_MAX + 1)]
    for b in bad:
        line = b if isinstance(b, bytes) else json.dumps(b).encode()
        with pytest.raises(peer_wire.WireError):
            peer_wire.parse_request(line)
