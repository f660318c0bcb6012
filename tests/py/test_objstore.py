"""Tier 3: checkpoints in object storage, against servers we did not write
(s3rver for S3, Azurite for Azure Blob), started here on 127.0.0.1.

Round trips (save -> upload -> restore on a fresh node), the CLI on URIs,
a fault proxy (resets, 500, 503 + Retry-After, slow and cut responses),
bad credentials and a missing bucket."""

import json
import os
import subprocess
import tempfile
import time

import numpy as np
import pytest

import spotrun
from spotrun import _lib
from objstore_servers import Azurite, FaultProxy, S3rver

ASAN = os.environ.get("SPOTRUN_CHECK_MODE") == "asan"


@pytest.fixture(scope="module")
def s3():
    srv = S3rver(buckets=("ckpt", "other"))
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def azurite():
    srv = Azurite()
    yield srv
    srv.close()


@pytest.fixture
def env(monkeypatch):
    """Apply a dict of environment variables for this test (the library
    reads credentials and endpoints from the environment)."""
    for k in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN",
              "AZURE_STORAGE_KEY", "AZURE_STORAGE_BLOB_ENDPOINT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SPOTRUN_OBJSTORE_PART_MB", "5")
    monkeypatch.setenv("SPOTRUN_OBJSTORE_RETRIES", "4")

    def apply(d):
        for k, v in d.items():
            monkeypatch.setenv(k, v)
    return apply


def state_for(step):
    n = 1_600_000  # 6.4 MB: a two-part multipart upload at 5 MiB parts
    return {"w": (np.arange(n, dtype=np.float32) + step),
            "b": np.full(3000, step, dtype=np.int64),
            "step": step}


def zero_state():
    return {"w": np.zeros(1_600_000, dtype=np.float32),
            "b": np.zeros(3000, dtype=np.int64), "step": -1}


def same(a, b):
    return (np.array_equal(a["w"], b["w"]) and
            np.array_equal(a["b"], b["b"]) and a["step"] == b["step"])


def roundtrip(uri, tmp_path):
    node1 = tmp_path / "node1"
    with spotrun.Checkpointer(str(node1), remote=uri, shard_bytes=4 << 20,
                              keep=2) as ck:
        for step in (10, 20, 30):
            ck.save(step, state_for(step))
            ck.wait()
            assert ck.remote_wait(step)
        st = ck.remote_stats()
    assert st["enabled"] == 1 and st["uploaded_step"] == 30
    assert st["uploads_failed"] == 0 and st["bytes_uploaded"] > 3 * 6_400_000
    # retention in the store: the two newest, manifests and shards
    ents = spotrun.list_checkpoints(uri)
    assert [e["step"] for e in ents] == [30, 20]
    assert all(e["committed"] and e["ntensors"] == 2 for e in ents)
    assert spotrun.verify(uri) == 30
    # a fresh node: no access to node1's disk
    got = zero_state()
    with spotrun.Checkpointer(uri, local_dir=str(tmp_path / "node2")) as ck2:
        assert ck2.restore(got) == 30
    assert same(got, state_for(30))
    # no local copy was made (tier3.json: the uploader's recovery point)
    assert os.listdir(tmp_path / "node2") in ([], ["tier3.json"])
    # an older step by number, straight from the store
    got = zero_state()
    assert spotrun.restore(uri, got, step=20) == 20
    assert same(got, state_for(20))


def test_s3_roundtrip(s3, env, tmp_path):
    env(s3.env())
    roundtrip("s3://ckpt/jobs/rt", tmp_path)


def test_azure_roundtrip(azurite, env, tmp_path):
    env(azurite.env())
    roundtrip("az://devstoreaccount1/ckpt/jobs/rt", tmp_path)


def test_striped_tier2_uploads_whole_steps(s3, env, tmp_path):
    """Shards striped over several tier-2 directories are symlinks in
    step-N/ (issue 29): the uploader sends their data, not the links,
    and a fresh node restores the step bit-exact from the store."""
    env(s3.env())
    uri = "s3://ckpt/jobs/striped"
    dirs = [str(tmp_path / ("d%d" % i)) for i in range(3)]
    with spotrun.Checkpointer(dirs[0], dirs=dirs, remote=uri,
                              shard_bytes=2 << 20, keep=2) as ck:
        ck.save(7, state_for(7))
        ck.wait()
        step_dir = os.path.join(dirs[0], "step-00000007")
        links = [n for n in os.listdir(step_dir)
                 if os.path.islink(os.path.join(step_dir, n))]
        assert links, os.listdir(step_dir)  # the layout this test is about
        assert ck.remote_wait(7)
    ents = spotrun.list_checkpoints(uri)
    assert [e["step"] for e in ents] == [7] and ents[0]["committed"]
    got = zero_state()
    assert spotrun.restore(uri, got) == 7
    assert same(got, state_for(7))


def test_cli_on_uri(s3, env, tmp_path):
    env(s3.env())
    uri = "s3://ckpt/jobs/cli"
    with spotrun.Checkpointer(str(tmp_path / "l"), remote=uri) as ck:
        ck.save(7, state_for(7))
        ck.wait()
        assert ck.remote_wait(7)
    run = lambda *a: subprocess.run(["spotrun", "ckpt"] + list(a),
                                    capture_output=True, text=True)
    r = run("ls", "--json", uri)
    assert r.returncode == 0, r.stderr
    ls = json.loads(r.stdout)
    rows = ls if isinstance(ls, list) else ls.get("checkpoints", ls)
    assert [e["step"] for e in rows] == [7]
    # nothing there is an error that says so, in a store as in a directory
    for where in ("s3://ckpt/jobs/nothing", str(tmp_path / "empty")):
        os.makedirs(str(tmp_path / "empty"), exist_ok=True)
        r = run("ls", where)
        assert r.returncode == 1 and "no checkpoints" in r.stderr, r.stderr
    r = run("verify", uri)
    assert r.returncode == 0, r.stderr
    r = run("inspect", uri)
    assert r.returncode == 0 and "w" in r.stdout, r.stdout + r.stderr
    # an empty prefix: a clear answer, not a crash
    bad = run("verify", "s3://ckpt/jobs/none")
    assert bad.returncode != 0
    assert "no committed checkpoint" in bad.stdout + bad.stderr


def test_remote_restore_skips_damaged(s3, env, tmp_path):
    """A manifest whose shard is missing in the store is skipped: the
    reader takes the newest checkpoint whose shards all verify."""
    env(s3.env())
    uri = "file://" + str(tmp_path / "store")
    with spotrun.Checkpointer(str(tmp_path / "l"), remote=uri) as ck:
        for step in (1, 2):
            ck.save(step, state_for(step))
            ck.wait()
            assert ck.remote_wait(step)
    shard = tmp_path / "store" / "step-00000002" / "shard-00000.safetensors"
    shard.unlink()
    got = zero_state()
    assert spotrun.restore(uri, got) == 1
    assert same(got, state_for(1))


def test_fault_proxy(s3, env, tmp_path):
    """Resets, 500, 503 + Retry-After, slow and cut-off answers: every
    request is retried until it succeeds, and no manifest is written
    before every shard of its step was confirmed."""
    faults = [None, "reset", None, "503", "slow", None, "500", "cut", None]
    px = FaultProxy(s3.port, faults=faults, slow_s=0.2)
    try:
        env(s3.env(endpoint="http://127.0.0.1:%d" % px.port))
        uri = "s3://ckpt/jobs/faults"
        with spotrun.Checkpointer(str(tmp_path / "l"), remote=uri,
                                  shard_bytes=4 << 20) as ck:
            for step in (1, 2):
                ck.save(step, state_for(step))
                ck.wait()
                assert ck.remote_wait(step), ck.remote_stats()
            assert ck.remote_stats()["uploads_failed"] == 0
        got = zero_state()
        assert spotrun.restore(uri, got) == 2
        assert same(got, state_for(2))
        log = list(px.log)
    finally:
        px.close()
    kinds = {w for _, _, w in log}
    assert {"reset", "503", "500", "cut"} <= kinds, kinds
    # commit order: each manifest PUT that succeeded came after a
    # successful completion of every shard object of its step
    for i, (m, target, what) in enumerate(log):
        if m == "PUT" and "manifest.json" in target and what == "200":
            step = target.split("/step-")[1].split("/")[0]
            done = {t.split("?")[0].rsplit("/", 1)[1] for mm, t, w in log[:i]
                    if w == "200" and "/step-%s/shard-" % step in t and
                    ((mm == "POST" and "uploadId=" in t) or
                     (mm == "PUT" and "?" not in t))}
            assert done == {"shard-00000.safetensors",
                            "shard-00001.safetensors"}, (step, done)


def test_store_down_keeps_tier2(s3, env, tmp_path):
    """A store that only answers 503: nothing is committed there, every
    failed upload is retried, training keeps its tier 2, and close()
    says which step is where instead of returning as if all were safe."""
    px = FaultProxy(s3.port, faults=["503"])
    try:
        env(s3.env(endpoint="http://127.0.0.1:%d" % px.port))
        env({"SPOTRUN_OBJSTORE_RETRIES": "2"})
        uri = "s3://ckpt/jobs/down"
        ck = spotrun.Checkpointer(str(tmp_path / "l"), remote=uri)
        ck.save(5, state_for(5))
        ck.wait()
        assert not ck.remote_wait(5, deadline=time.time() + 2)
        # the attempt under way ends (fails) at the deadline it was given
        end = time.monotonic() + 60
        while ck.remote_stats()["uploads_failed"] < 1 and \
                time.monotonic() < end:
            time.sleep(0.05)
        st = ck.remote_stats()
        assert st["uploads_failed"] >= 1 and st["uploaded_step"] == -1
        assert st["local_step"] == 5 and st["steps_behind"]
        assert "503" in st["last_message"]
        with pytest.raises(_lib.CheckpointError) as ei:
            ck.close(timeout=1)
        assert "step 5 is in %s only" % (tmp_path / "l") in str(ei.value)
        assert "holds no step" in str(ei.value)
    finally:
        px.close()
    env(s3.env())
    assert spotrun.list_checkpoints(uri) == []
    got = zero_state()
    assert spotrun.restore(str(tmp_path / "l"), got) == 5


@pytest.mark.parametrize("case", ["secret", "bucket", "nokeys", "name",
                                  "scheme"])
def test_bad_configuration_raises(s3, env, tmp_path, monkeypatch, case):
    """Issue 23: a configuration the store refuses is an exception at
    construction, naming what to fix - not a warning and a run without
    durability."""
    if case == "secret":
        env(s3.env(secret="not-the-secret"))
        uri, want = "s3://ckpt/jobs/bad", "SignatureDoesNotMatch"
    elif case == "bucket":
        env(s3.env())
        uri, want = "s3://no-such-bucket/jobs", "NoSuchBucket"
    elif case == "nokeys":
        env(s3.env())
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        uri, want = "s3://ckpt/jobs/nokeys", "AWS_ACCESS_KEY_ID"
    elif case == "name":
        env(s3.env())
        uri, want = "s3://CK/run1", "bad bucket name 'CK'"
    else:
        env(s3.env())
        uri, want = "s4://ckpt/run1", "expected an object-store URI"
    with pytest.raises((_lib.CheckpointError, ValueError)) as ei:
        spotrun.Checkpointer(str(tmp_path / "l"), remote=uri)
    assert want in str(ei.value)
    if case in ("secret", "bucket", "nokeys", "name"):
        # the URI alone (the tier-2 directory in the cache) is the same
        monkeypatch.setenv("SPOTRUN_CKPT_LOCAL_DIR", str(tmp_path / "c"))
        with pytest.raises(_lib.CheckpointError) as ei:
            spotrun.Checkpointer(uri)
        assert want in str(ei.value)
