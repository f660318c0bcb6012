"""Must show 3: any safetensors reader can load the shards.

The reader below is written from the published safetensors rules only
(it shares no code with spotrun):
  * the file starts with N, an unsigned 64-bit little-endian integer;
  * then N bytes of UTF-8 JSON: an object mapping each tensor name to
    {"dtype", "shape", "data_offsets": [begin, end]}, plus an optional
    "__metadata__" object of string -> string; the header may be padded
    with trailing spaces;
  * then the byte buffer; offsets are relative to its start, the tensors
    cover it completely, without holes or overlaps, and it ends where the
    file ends;
  * end - begin == element size of dtype x product of shape; data is
    little-endian, row-major.
"""

import json
import os
import struct

import numpy as np
import pytest
import torch

import spotrun

NP_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8",
             "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1",
             "BOOL": "?", "BF16": "<u2", "U16": "<u2", "U32": "<u4",
             "U64": "<u8"}


def read_safetensors(path):
    """Return ({name: ndarray}, metadata) or raise AssertionError."""
    with open(path, "rb") as f:
        blob = f.read()
    assert len(blob) >= 8, "%s: shorter than the length prefix" % path
    (n,) = struct.unpack("<Q", blob[:8])
    assert 8 + n <= len(blob), "%s: header length %d past EOF" % (path, n)
    raw = blob[8:8 + n]
    assert raw[:1] == b"{", "%s: header does not start with '{'" % path
    header = json.loads(raw.decode("utf-8").rstrip(" "))
    data = blob[8 + n:]
    meta = header.pop("__metadata__", None)
    if meta is not None:
        assert all(isinstance(k, str) and isinstance(v, str)
                   for k, v in meta.items()), "metadata must be str -> str"
    spans, out = [], {}
    for name, h in header.items():
        assert set(h) == {"dtype", "shape", "data_offsets"}, (name, h)
        begin, end = h["data_offsets"]
        dt = np.dtype(NP_DTYPES[h["dtype"]])
        count = 1
        for d in h["shape"]:
            assert isinstance(d, int) and d >= 0
            count *= d
        assert end - begin == count * dt.itemsize, \
            "%s: %s size %d != dtype x shape" % (path, name, end - begin)
        spans.append((begin, end, name))
        arr = np.frombuffer(data, dtype=dt, count=count, offset=begin)
        out[name] = (h["dtype"], arr.reshape(h["shape"]))
    spans.sort()
    pos = 0
    for begin, end, name in spans:
        assert begin == pos, "%s: hole or overlap before %s" % (path, name)
        pos = end
    assert pos == len(data), "%s: buffer has %d bytes, tensors cover %d" \
        % (path, len(data), pos)
    return out, meta


def as_bits(t):
    """A torch tensor's raw bytes as a numpy array (bf16 as uint16)."""
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.contiguous().reshape(-1).numpy().view(np.uint8)


@pytest.mark.parametrize("striped", [False, True])
def test_every_shard_loads_with_an_independent_reader(tmp_path, striped):
    """Also striped over three directories (dirs=...): the shards are
    reached through step-N/, some of them links to the other disks."""
    g = torch.Generator().manual_seed(3)
    state = {
        "big": torch.randn(64, 1024, generator=g),          # 256 KiB
        "w": [torch.randn(128, 128, generator=g) for _ in range(6)],
        "half": torch.randn(33, 7, generator=g).half(),
        "bf": torch.randn(5, 3, generator=g).bfloat16(),
        "i64": torch.arange(-50, 50, dtype=torch.int64),
        "i8": torch.arange(-8, 8, dtype=torch.int8),
        "mask": torch.rand(17, generator=g) > 0.5,
        "u8": torch.arange(256, dtype=torch.uint8),
        "scalar": torch.tensor(2.5, dtype=torch.float64),
        "empty": torch.zeros(0, 4),
        "strided": torch.arange(60, dtype=torch.int32).view(6, 10)[:, ::3],
        "np": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        "np_u32": np.arange(10, dtype=np.uint32) * 400000000,
    }
    d = tmp_path / "ck"
    dirs = [d] + [tmp_path / ("disk%d" % k) for k in (1, 2)] if striped else None
    with spotrun.Checkpointer(d, shard_bytes=128 << 10, dirs=dirs) as ck:
        ck.save(11, state)
        ck.wait()
    steps = [e for e in os.listdir(d) if not e.endswith(".tmp")]
    assert len(steps) == 1
    cdir = d / steps[0]
    shards = [f for f in sorted(os.listdir(cdir)) if f != "manifest.json"]
    assert len(shards) >= 2, "shard_bytes should have split the state"
    links = [f for f in shards if os.path.islink(cdir / f)]
    if striped:
        assert links and len(links) < len(shards)
        assert {os.path.dirname(os.path.dirname(os.readlink(cdir / f)))
                for f in links} == {str(x) for x in dirs[1:]}
        back = {}
        spotrun.Checkpointer(None, dirs=dirs).restore(back)
        assert torch.equal(back["big"], state["big"])
    else:
        assert not links
    loaded = {}
    for f in shards:
        tensors, _meta = read_safetensors(cdir / f)
        assert not set(tensors) & set(loaded), "tensor in two shards"
        loaded.update(tensors)

    _, refs = spotrun._state.encode(state)
    assert set(loaded) == {r.name for r in refs}
    by_path = {
        "big": state["big"], "half": state["half"], "bf": state["bf"],
        "i64": state["i64"], "i8": state["i8"], "mask": state["mask"],
        "u8": state["u8"], "scalar": state["scalar"],
        "empty": state["empty"], "strided": state["strided"],
    }
    for i, w in enumerate(state["w"]):
        by_path["w.%d" % i] = w
    for name, t in by_path.items():
        st_dtype, arr = loaded[name]
        assert list(arr.shape) == list(t.shape), name
        assert arr.tobytes() == as_bits(t).tobytes(), name
    assert loaded["strided"][1].tolist() == state["strided"].tolist()
    assert loaded["bf"][0] == "BF16" and loaded["half"][0] == "F16"
    assert loaded["mask"][0] == "BOOL"
    assert np.array_equal(loaded["np"][1], state["np"])
    # unsigned numpy types keep their safetensors type
    assert loaded["np_u32"][0] == "U32"
    assert loaded["np_u32"][1].dtype == np.uint32
    assert np.array_equal(loaded["np_u32"][1], state["np_u32"])


def test_reader_rejects_a_torn_file(tmp_path):
    """The reference reader itself must catch damage (guards the test)."""
    p = tmp_path / "x.safetensors"
    hdr = json.dumps({"a": {"dtype": "F32", "shape": [2],
                            "data_offsets": [0, 8]}}).encode()
    p.write_bytes(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 8)
    assert read_safetensors(p)[0]["a"][1].shape == (2,)
    p.write_bytes(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 7)
    with pytest.raises((AssertionError, ValueError)):
        read_safetensors(p)
