"""Multi-rank checkpoints on an object store (python/spotrun/dist_remote.py)
against s3rver (npm, SigV4 checked) started here on 127.0.0.1, with real
torch.distributed ranks (gloo, CPU; dist_workers.py).  Every rank has its
own node-local directory, and a resumed attempt gets fresh ones: the
store is all the ranks share.

  * 2-rank DDP training checkpointed into s3rver, stopped, and resumed on
    fresh directories ends bitwise identical to the uninterrupted run;
  * kill -9 of one rank during the remote commit (its parts uploaded, no
    marker yet; or rank 0 with every marker, before the record): that
    step is never used, the previous global one is, and the next attempt
    commits it afresh.
  * the final part after a notice goes from staging memory straight to
    the store (nothing of it on the node's disk) and commits; with
    final_local_copy it is on the disk too; a final upload that fails
    leaves the previous step the newest, restored bit for bit;
  * a kept rank restores its final part from its copy in memory, the
    noticed rank's replacement from the store; a copy removed or
    damaged: the store.
"""

import json
import os
import time

import pytest

torch = pytest.importorskip("torch")

import dist_workers as w  # noqa: E402
from objstore_servers import S3rver  # noqa: E402
from spotrun import dist as sdist  # noqa: E402
from spotrun._lib import CheckpointError  # noqa: E402
from spotrun import dist_remote as sdist_remote  # noqa: E402
from spotrun.objects import ObjectStore  # noqa: E402

# generous: a loaded machine, or the ASan pass
TIMEOUT = 300


@pytest.fixture(scope="module")
def s3():
    srv = S3rver(buckets=("ckpt",))
    yield srv
    srv.close()


@pytest.fixture
def store_env(s3, monkeypatch):
    env = s3.env()
    env.update(SPOTRUN_OBJSTORE_RETRIES="4")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    return env


def load(out, name):
    return torch.load(os.path.join(out, name))


def where(tmp_path, attempt, uri, env):
    """Node-local dirs of one attempt (fresh per attempt) + the store."""
    return (str(tmp_path / ("a%d-node{rank}" % attempt)), uri, env)


def check_record_names_the_store(uri, step):
    """step's global record names the manifests the store holds."""
    with ObjectStore(uri) as st:
        rec = json.loads(st.get(sdist_remote.record_key(step)))
        for e in rec["ranks"]:
            for name, dig in e["parts"].items():
                m = st.get("%s/step-%08d/manifest.json" % (name, step))
                assert sdist_remote.digest(m) == dig, name


def test_ddp_on_s3_resumes_on_fresh_nodes_bitwise(tmp_path, store_env):
    out, uri = str(tmp_path), "s3://ckpt/ddp-%s" % tmp_path.name
    # the reference run, then a run preempted after step 5: the newest
    # global step in the store is 4
    d1 = where(tmp_path, 1, uri, store_env)
    assert w.launch(w.ddp_train, 2, d1, out, True, 5, 8, 2,
                    timeout=TIMEOUT) == [0, 0]
    assert sdist.committed_steps(uri)[0] == 4
    with ObjectStore(uri) as st:
        keys = st.list("")
        rec = json.loads(st.get("global/step-00000004.commit"))
    assert "replicated/step-00000004/manifest.json" in keys
    assert "rank-00001/step-00000004/manifest.json" in keys
    # retention (keep=2): no more records than that, and every part a
    # record names is there (step 2 may have been superseded by 4 in
    # an engine's uploader, and then never committed)
    recs = [k for k in keys if k.endswith(".commit")]
    assert recs[-1] == "global/step-00000004.commit" and len(recs) <= 2
    with ObjectStore(uri) as st:
        for k in recs:
            for e in json.loads(st.get(k))["ranks"]:
                for name in e["parts"]:
                    assert "%s/step-%s/manifest.json" % (
                        name, k[len("global/step-"):-len(".commit")]) in keys
    assert [e["rank"] for e in rec["ranks"]] == [0, 1]
    assert set(rec["ranks"][0]["parts"]) == {"replicated", "rank-00000"}
    # attempt 2 on fresh node dirs: everything comes from the store
    d2 = where(tmp_path, 2, uri, store_env)
    assert w.launch(w.ddp_train, 2, d2, out, False, 99, 8, 2,
                    timeout=TIMEOUT) == [0, 0]
    for r in (0, 1):
        a, b = load(out, "ref-%d.pt" % r), load(out, "ddp-%d.pt" % r)
        assert b["restored"] == 4 and b["step"] == 8
        for x, y in zip(a["params"], b["params"]):
            assert torch.equal(x, y)
        for k, s in a["optim"]["state"].items():
            assert torch.equal(s["momentum_buffer"],
                               b["optim"]["state"][k]["momentum_buffer"])
    # the old nodes' disks were never read: deleting them changes nothing
    assert sdist.committed_steps(uri)[0] == 8


def test_final_on_the_step_just_saved_commits_it(tmp_path, store_env):
    """A notice that stops the gang on a periodic checkpoint's step (the
    CI failure of make demo: final step 375, restored from 350): the
    final checkpoint finishes that save's upload and commit instead of
    writing the step a second time, whose new manifest would never match
    the one tier 3 holds."""
    out = str(tmp_path)
    uri = "s3://ckpt/final-saved-%s" % tmp_path.name
    d = where(tmp_path, 1, uri, store_env)
    assert w.launch(w.final_on_saved_step, 2, d, out,
                    timeout=TIMEOUT) == [0, 0]
    for r in (0, 1):
        res = load(out, "final-%d.pt" % r)
        assert res["final"] is True and res["last"] == 2, res
        assert res["rewritten"] == [], res
    assert sdist.committed_steps(uri)[0] == 2
    check_record_names_the_store(uri, 2)


@pytest.mark.parametrize("victim,phase", [(1, "uploaded"),
                                          (0, "before_commit")])
def test_kill_during_remote_commit_uses_previous_step(tmp_path, store_env,
                                                      victim, phase):
    out = str(tmp_path)
    uri = "s3://ckpt/kill-%s-%s" % (phase, tmp_path.name)
    d1 = where(tmp_path, 1, uri, store_env)
    codes = w.launch(w.commit_kill, 2, d1, out, [1, 2], victim, phase, 2,
                     timeout=TIMEOUT)
    assert codes[victim] == -9 and codes[1 - victim] == 0, codes
    survivor = load(out, "kill-%d.pt" % (1 - victim))
    assert survivor["saved"][0] == (1, True)
    assert survivor["saved"][1] == (2, False)   # no record for step 2
    with ObjectStore(uri) as st:
        keys = st.list("")
    # the victim's part of step 2 is in the store, but no record names it
    part = "%s/step-00000002/manifest.json" % (
        "replicated" if victim == 0 else "rank-00001")
    assert part in keys, keys
    assert sdist.committed_steps(uri) == [1]
    # the next attempt, on fresh node dirs, restores step 1 on both
    # ranks, never a part of 2, and commits step 2 afresh
    d2 = where(tmp_path, 2, uri, store_env)
    assert w.launch(w.commit_kill, 2, d2, out, [2], -1, "", 0,
                    timeout=TIMEOUT) == [0, 0]
    w.check_recommitted(out)
    assert sdist.committed_steps(uri) == [2, 1]


def test_kept_rank_writes_nothing_of_an_uncommittable_step(tmp_path,
                                                          store_env):
    """Rank 0 noticed goes without its part of step 1; kept rank 1 comes
    to its final save after rank 0's deadline: the step can never commit
    (rank 0's record is not there), so rank 1 writes no part of it, on its
    disk or in the store, and no marker; step 0 stays, whole."""
    out = str(tmp_path)
    uri = "s3://ckpt/abandon-%s" % tmp_path.name
    d = where(tmp_path, 1, uri, store_env)
    assert w.launch(w.final_abandon, 2, d, out, 2.0, 0, "late",
                    timeout=TIMEOUT) == [0, 0]
    w.check_final_abandoned(out, 0)
    assert sdist.committed_steps(uri) == [0]
    with ObjectStore(uri) as st:
        keys = st.list("")
    assert [k for k in keys if "00000001" in k] == [], keys
    assert "rank-00001/step-00000000/manifest.json" in keys, keys
    node1 = str(tmp_path / "a1-node1")
    left = [n for r, ds, fs in os.walk(node1) for n in ds + fs
            if "00000001" in n]
    assert left == [], left


@pytest.mark.parametrize("victim", [0, 1])
def test_gang_notice_deadline_bounds_the_remote_commit(tmp_path, store_env,
                                                       victim):
    """One rank noticed (a 3 s lead) goes without saving its part of the
    final step: the kept rank stops waiting at the shared deadline - rank
    0 for the victim's marker, rank 1 for rank 0's record - not after
    commit_timeout (an hour); nothing is committed."""
    out = str(tmp_path)
    uri = "s3://ckpt/deadline-%d-%s" % (victim, tmp_path.name)
    d = where(tmp_path, 1, uri, store_env)
    assert w.launch(w.shared_deadline, 2, d, out, 3.0, victim,
                    timeout=TIMEOUT) == [0, 0]
    w.check_shared_deadline(out, victim, False)
    assert sdist.committed_steps(uri) == []


def _local_names(node, step):
    """Files and directories of `step` under a node's tier 2."""
    tag = "%08d" % step
    return [os.path.join(r, n) for r, ds, fs in os.walk(node)
            for n in ds + fs if tag in n]


@pytest.mark.parametrize("local_copy", [False, True])
def test_final_part_goes_straight_to_the_store(tmp_path, store_env,
                                               local_copy):
    """After a notice each rank's final part goes from tier 1 to the
    store (multipart from memory, 5 MiB parts) and the step commits
    globally; nothing of it is written to the node's tier-2 directory.
    final_local_copy=True keeps the old way: tier 2 first, uploaded from
    there.  Either way a fresh node restores the final step bit for
    bit."""
    out = str(tmp_path)
    uri = "s3://ckpt/store-only-%d-%s" % (local_copy, tmp_path.name)
    env = dict(store_env, SPOTRUN_OBJSTORE_PART_MB="5")
    d = (str(tmp_path / "node{rank}"), uri, env)
    assert w.launch(w.final_store_only, 2, d, out, local_copy,
                    timeout=TIMEOUT) == [0, 0]
    for r in (0, 1):
        res = load(out, "store-only-%d.pt" % r)
        assert res["final"] is True and res["last"] == 2, res
        assert res["restored"] == 2 and res["exact"] is True, res
        left = _local_names(str(tmp_path / ("node%d" % r)), 2)
        if local_copy:
            assert left, "final_local_copy: step 2 on node %d's disk" % r
        else:
            assert left == [], left
        # step 1 (a periodic save) is on the disk either way
        assert _local_names(str(tmp_path / ("node%d" % r)), 1)
    assert sdist.committed_steps(uri)[0] == 2
    check_record_names_the_store(uri, 2)


@pytest.mark.parametrize("spoil", ["none", "gone", "corrupt"])
def test_kept_ranks_restore_their_final_part_from_memory(tmp_path,
                                                         store_env, spoil):
    """Rank 1 of 3 gets a notice; every rank's final part of step 2 goes
    straight to the store, and the kept ranks 0 and 2 also keep an exact
    copy of theirs in memory (dist_keep.py; rank 1, noticed, none).  The
    next attempt: rank 1 on a fresh node reads everything from the store,
    ranks 0 and 2 their own parts from their copies ("kept copy") - all
    bit for bit, and each copy is gone after the restore.  Rank 2's copy
    removed, or one byte of it flipped: rank 2 reads the store instead,
    still bit for bit."""
    out = str(tmp_path)
    uri = "s3://ckpt/kept-%s-%s" % (spoil, tmp_path.name)
    d = (str(tmp_path / "node{rank}"), uri, store_env)
    assert w.launch(w.final_kept_copy, 3, d, out, 1, spoil,
                    timeout=TIMEOUT) == [0, 0, 0]
    res = [load(out, "kept-%d.pt" % r) for r in range(3)]
    for r, x in enumerate(res):
        assert x["final"] is True and x["restored"] == 2, (r, x)
        assert x["exact"] is True and x["left"] is False, (r, x)
        assert x["kept"] is (r != 1), (r, x)
    assert res[0]["sources"] == {"replicated": "kept copy",
                                 "rank-00000": "kept copy"}, res[0]
    assert res[1]["sources"] == {"replicated": "store",
                                 "rank-00001": "store"}, res[1]
    mine = "kept copy" if spoil == "none" else "store"
    assert res[2]["sources"] == {"replicated": "store",
                                 "rank-00002": mine}, res[2]
    # nothing of step 2 on any node's disk: the copies are in memory
    for r in range(3):
        assert _local_names(str(tmp_path / ("node%d" % r)), 2) == []
    check_record_names_the_store(uri, 2)


def test_final_upload_failure_leaves_the_previous_step(tmp_path):
    """The final part's manifest cannot be put (its key is taken by a
    directory in the file:// store): the shards went up, the step has no
    manifest, no marker and no record; save_final() says False, nothing
    of it is on the node's disk, and a fresh node restores step 1 bit
    for bit."""
    store = tmp_path / "store"
    uri = "file://%s" % store
    one = torch.arange(1 << 20, dtype=torch.float32)
    c = sdist.DistCheckpointer(str(tmp_path / "node"), remote=uri, rank=0,
                               world_size=1, commit_timeout=10)
    assert c.restore({"w": torch.zeros(1 << 20)}) is None
    c.save(1, {"w": one})
    assert c.wait() is True
    # after restore(), which deletes this rank's leftovers newer than
    # the step it restored
    blocker = store / "replicated" / "step-00000002" / "manifest.json"
    blocker.mkdir(parents=True)
    (blocker / "x").write_bytes(b"x")
    assert c.save_final(2, {"w": one + 1},
                        deadline=time.time() + 20) is False
    assert _local_names(str(tmp_path / "node"), 2) == []
    try:
        c.close()
    except CheckpointError:
        pass
    assert sdist.committed_steps(uri) == [1]
    with ObjectStore(uri) as st:
        keys = st.list("")
    assert "replicated/step-00000001/manifest.json" in keys, keys
    assert [k for k in keys if k.startswith("replicated/step-00000002/")
            and k.endswith(".safetensors")], keys   # shards went up
    assert "global/step-00000002/rank-00000.json" not in keys, keys
    f = sdist.DistCheckpointer(str(tmp_path / "fresh"), remote=uri, rank=0,
                               world_size=1)
    got = {"w": torch.zeros(1 << 20)}
    assert f.restore(got) == 1
    assert torch.equal(got["w"], one)
    f.close()
