"""Tier 3 against a store that answers the way Amazon S3 does (issue 23):
s3rver behind objstore_servers.S3Proxy, which escapes listed keys once as
S3 does (s3rver escapes them twice), lists multipart uploads by a plain
string prefix, and injects S3's own failures - 503 SlowDown for a while,
403, and ranged GETs answered 416, 404 or cut short.

One test per failure the issue found (each fails on the code before it):
  1. a listed key is XML-escaped in the DeleteObjects body: a key cannot
     close its element and name another object, and `&` is no
     MalformedXML that stops the cleanup behind it;
  2. multipart uploads are listed under the prefix's trailing '/' (and
     under the bucket's root, only the checkpoint layout's), so another
     job's uploads are never aborted;
  3. a store error at restore (403, unreachable, no such bucket) raises,
     it is not "no checkpoint";
  4. a failed restore leaves the caller's tensors untouched;
  5. a final upload waits out 503 SlowDown up to its deadline;
  6. a manifest whose step differs from its key is refused;
  7. a 416 / 404 in the middle of a read falls back like a checksum
     error (and a cut ranged read is retried).
Keys with <, &, ", spaces and non-ASCII round-trip (S3 and Azurite).
"""

import os
import time

import numpy as np
import pytest

import spotrun
from spotrun import _lib
from spotrun.objects import ObjectStore
from objstore_servers import Azurite, S3Proxy, S3rver

ODD_KEYS = ["a<b", "c&d", 'q"t', "sp ace", "n\u00f6n-\u00e4scii \u4e2d",
            "ap'os", "x</Key></Object>"]


@pytest.fixture(scope="module")
def s3():
    srv = S3rver(buckets=("ckpt",))
    yield srv
    srv.close()


@pytest.fixture
def px(s3, monkeypatch):
    """The S3-faithful proxy, and the environment pointing at it."""
    p = S3Proxy(s3.port)
    for k, v in s3.env(endpoint=p.endpoint).items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SPOTRUN_OBJSTORE_RETRIES", "3")
    monkeypatch.setenv("SPOTRUN_OBJSTORE_PART_MB", "5")
    yield p
    p.close()


def state_for(step, n=40_000):
    return {"w": np.arange(n, dtype=np.float32) + step,
            "b": np.full(64, step, dtype=np.int64), "step": step}


def blank(n=40_000):
    return {"w": np.full(n, -7.0, dtype=np.float32),
            "b": np.full(64, -7, dtype=np.int64), "step": -7}


def same(a, b):
    return (np.array_equal(a["w"], b["w"]) and np.array_equal(a["b"], b["b"])
            and a["step"] == b["step"])


def fill(uri, local, steps, **kw):
    with spotrun.Checkpointer(local, remote=uri, **kw) as ck:
        for s in steps:
            ck.save(s, state_for(s))
            ck.wait()
            assert ck.remote_wait(s), ck.remote_stats()


def keys(uri, sub=""):
    with ObjectStore(uri) as st:
        return st.list(sub)


# ---- 1. keys in XML bodies ------------------------------------------------
def test_retention_escapes_keys(px, tmp_path):
    """An object whose name closes its <Key> and opens another naming an
    object outside the prefix: retention deletes that object by its own
    name, and nothing else.  A key with '&' no longer makes DeleteObjects
    MalformedXML (which stopped the cleanup after it on every pass)."""
    uri = "s3://ckpt/jobs/inj"
    with ObjectStore("s3://ckpt") as root:
        root.put("victim/model.bin", b"precious")
    with ObjectStore(uri) as st:
        st.put("step-00000001/x</Key></Object><Object><Key>victim/model.bin",
               b"bait")
        st.put("step-00000001/a&b", b"amp")
    fill(uri, str(tmp_path / "l"), (1, 2, 3), keep=1)
    with ObjectStore("s3://ckpt") as root:
        assert root.get("victim/model.bin") == b"precious"
    left = keys(uri)
    assert not [k for k in left if k.startswith("step-00000001/")], left
    assert [e["step"] for e in spotrun.list_checkpoints(uri)] == [3]


# ---- 2. multipart uploads of others --------------------------------------
@pytest.mark.parametrize("root", [False, True])
def test_abort_stale_stays_in_its_prefix(s3, px, tmp_path, root):
    """ListMultipartUploads is a string-prefix listing: asked with
    prefix=jobs/42 S3 returns jobs/420/...'s uploads too, and with no
    prefix (a URI at the bucket's root) every upload in the bucket."""
    px.uploads = [
        ("jobs/42/step-00000007/shard-00000.safetensors", "mine"),
        ("jobs/420/step-00000001/shard-00000.safetensors", "job420"),
        ("jobs/42x/step-00000001/shard-00000.safetensors", "job42x"),
        ("other/data.bin", "other"),
        ("step-00000009/shard-00000.safetensors", "rootmine"),
    ]
    if root:
        # a bucket of its own for the root case
        uri = "s3://ckpt"
        want = ["step-00000009/shard-00000.safetensors"]
    else:
        uri = "s3://ckpt/jobs/42"
        want = ["jobs/42/step-00000007/shard-00000.safetensors"]
    fill(uri, str(tmp_path / "l"), (1,))
    assert sorted(set(px.aborted)) == want, px.aborted


# ---- 3. store errors at restore ------------------------------------------
def test_store_errors_raise_at_restore(s3, px, tmp_path, monkeypatch):
    uri = "s3://ckpt/jobs/err"
    fill(uri, str(tmp_path / "l"), (10, 20))
    ck = spotrun.Checkpointer(str(tmp_path / "fresh"), remote=uri)
    try:
        # 403 on every request: not "no checkpoint"
        px.deny("SignatureDoesNotMatch")
        with pytest.raises(_lib.CheckpointError) as ei:
            ck.restore(blank())
        assert "SignatureDoesNotMatch" in str(ei.value)
        with pytest.raises(_lib.CheckpointError) as ei:
            spotrun.restore(uri, blank())
        assert "SignatureDoesNotMatch" in str(ei.value)
        px.deny(None)
        got = blank()
        assert ck.restore(got) == 20 and same(got, state_for(20))
    finally:
        ck.close()
    # the store unreachable: an error naming it
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    monkeypatch.setenv("SPOTRUN_OBJSTORE_RETRIES", "1")
    with pytest.raises(_lib.CheckpointError) as ei:
        spotrun.restore(uri, blank())
    assert uri in str(ei.value)
    # no such bucket: an error, not None
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", px.endpoint)
    with pytest.raises(_lib.CheckpointError) as ei:
        spotrun.restore("s3://nosuchbucket/x", blank())
    assert "NoSuchBucket" in str(ei.value)
    # an empty prefix that the store answered for: None
    assert spotrun.restore("s3://ckpt/jobs/none", blank()) is None


# ---- 4. a failed restore leaves the state untouched ----------------------
def flip_last_byte(uri, key):
    with ObjectStore(uri) as st:
        data = bytearray(st.get(key))
        data[-1] ^= 0x10
        st.put(key, bytes(data))


@pytest.mark.parametrize("tier", ["store", "local"])
def test_failed_restore_leaves_state(px, tmp_path, tier):
    """One checkpoint whose last tensor has one flipped bit: restore()
    returns None and the weights read before it are not the checkpoint's
    (they were, before: data went into the caller's tensors before the
    checksum was known)."""
    uri = "s3://ckpt/jobs/flip-" + tier
    local = str(tmp_path / "l")
    fill(uri, local, (5,))
    if tier == "store":
        flip_last_byte(uri, "step-00000005/shard-00000.safetensors")
        src = uri
    else:
        p = os.path.join(local, "step-00000005", "shard-00000.safetensors")
        with open(p, "r+b") as f:
            f.seek(-1, 2)
            b = f.read(1)
            f.seek(-1, 2)
            f.write(bytes([b[0] ^ 0x10]))
        src = local
    got = blank()
    w0 = got["w"]
    assert spotrun.restore(src, got) is None
    assert got["w"] is w0 and np.all(got["w"] == -7.0)
    assert np.all(got["b"] == -7) and got["step"] == -7


# ---- 5. the final upload waits out SlowDown to its deadline -------------
def test_final_upload_waits_out_slowdown(px, tmp_path):
    uri = "s3://ckpt/jobs/slow"
    with spotrun.Checkpointer(str(tmp_path / "l"), remote=uri) as ck:
        ck.save(1, state_for(1))
        ck.wait()
        assert ck.remote_wait(1)
        px.slowdown(8)
        assert ck.save_final(2, state_for(2), deadline=time.time() + 60)
        # it waited the SlowDown out, not a retry count: the save ended
        # after the store stopped answering SlowDown
        assert px.slowdown_over()
        assert ck.remote_stats()["uploaded_step"] == 2
    assert "503" in {w for _, _, w in px.log}
    got = blank()
    assert spotrun.restore(uri, got) == 2 and same(got, state_for(2))


# ---- 6. a manifest's step is its key's -----------------------------------
def test_manifest_step_must_match_key(px, tmp_path):
    """Step 10's objects copied under step-00000099/: not a step 99, and
    not a reason to restore 10 while 30 exists."""
    uri = "s3://ckpt/jobs/copy"
    fill(uri, str(tmp_path / "l"), (10, 30), keep=3)
    with ObjectStore(uri) as st:
        for k in st.list("step-00000010/"):
            st.put(k.replace("step-00000010", "step-00000099"), st.get(k))
    got = blank()
    assert spotrun.restore(uri, got) == 30 and same(got, state_for(30))
    with pytest.raises(_lib.CheckpointError) as ei:
        spotrun.verify(uri, 99)
    assert "manifest says step 10" in str(ei.value)


# ---- 7. an HTTP error in the middle of a read ----------------------------
@pytest.mark.parametrize("fault", ["416", "404"])
def test_http_error_mid_read_falls_back(px, tmp_path, fault):
    """The newest step's shard answers a ranged GET with 416 (the object
    is shorter than its manifest says) or 404 (gone) after the step was
    opened: the step is not whole, so the previous one is restored, as a
    checksum error would."""
    uri = "s3://ckpt/jobs/mid-" + fault
    fill(uri, str(tmp_path / "l"), (10, 20), keep=2)
    # the headers were read when the step was opened; the tensor data
    # ranges start past the first 4096 bytes
    px.range_fault("step-00000020/shard-00000", fault)
    got = blank()
    try:
        r = spotrun.restore(uri, got)
    finally:
        px.range_fault(None, None)
    assert r == 10 and same(got, state_for(10))


def test_cut_ranged_read_is_retried(px, tmp_path):
    uri = "s3://ckpt/jobs/cut"
    fill(uri, str(tmp_path / "l"), (10, 20), keep=2)
    px.range_fault("step-00000020/shard-00000", "cut", times=2)
    got = blank()
    assert spotrun.restore(uri, got) == 20 and same(got, state_for(20))
    assert "cut" in {w for _, _, w in px.log}


# ---- keys that need escaping round-trip ----------------------------------
def roundtrip_keys(uri):
    with ObjectStore(uri) as st:
        for k in ODD_KEYS:
            st.put("odd/" + k, k.encode())
        assert sorted(st.list("odd/")) == sorted("odd/" + k for k in ODD_KEYS)
        for k in ODD_KEYS:
            assert st.get("odd/" + k) == k.encode()
        st.delete(["odd/" + k for k in ODD_KEYS])
        assert st.list("odd/") == []


def test_odd_keys_roundtrip_s3(px):
    roundtrip_keys("s3://ckpt/keys")


def test_odd_prefix_checkpoints_s3(px, tmp_path):
    """A whole tier-3 life (uploads, listings, retention's deletes, the
    multipart cleanup, restore) under a prefix that needs escaping."""
    uri = "s3://ckpt/we<ird & \"pre fix\"/\u00fcn\u00efcode"
    fill(uri, str(tmp_path / "l"), (1, 2, 3), keep=2)
    assert [e["step"] for e in spotrun.list_checkpoints(uri)] == [3, 2]
    got = blank()
    assert spotrun.restore(uri, got) == 3 and same(got, state_for(3))


def test_odd_keys_roundtrip_azure(monkeypatch):
    az = Azurite()
    try:
        for k, v in az.env().items():
            monkeypatch.setenv(k, v)
        roundtrip_keys("az://devstoreaccount1/ckpt/keys")
    finally:
        az.close()
