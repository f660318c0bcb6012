"""The durability matrix of tier 3 (issue 23), against s3rver (behind the
S3-faithful proxy of objstore_servers) and Azurite - servers we did not
write - started here on 127.0.0.1.

Rows:    uri    a single process, Checkpointer(URI) alone (the tier-2
                directory in $SPOTRUN_CKPT_LOCAL_DIR)
         local  a single process, Checkpointer(DIR, remote=URI)
         ranks  two ranks (DistCheckpointer, torch.distributed gloo)
Columns: close   save, then close()
         kill9   saves until kill -9 at a random point
         notice  save, then save_final() (a preemption notice)
         two     two saves in a row, faster than one upload, then close()
         503     the store answers 503 for 10 s, save, then close()

Each cell checks what the store restores on a fresh node (no access to
the saving node's disk): after close() or save_final(), exactly the
newest step, bit-exact; after kill -9, a whole committed step, never a
partial one, and never older than one the library reported in the
store.  Random delays print and accept their seed (SPOTRUN_SEED).
"""

import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import spotrun
from spotrun import _lib
from objstore_servers import Azurite, S3Proxy, S3rver

ASAN = os.environ.get("SPOTRUN_CHECK_MODE") == "asan"
SEED = int(os.environ.get("SPOTRUN_SEED", "23"))
COLUMNS = ["close", "kill9", "notice", "two", "503"]
N = 1 << 16   # 256 KiB of float32 per state: the cells stay quick


def state(step):
    return {"w": np.arange(N, dtype=np.float32) * 0.5 + step,
            "b": np.arange(257, dtype=np.int64) * 3 + step, "step": step}


def blank():
    return {"w": np.zeros(N, dtype=np.float32),
            "b": np.zeros(257, dtype=np.int64), "step": None}


def exact(got, step):
    want = state(step)
    return (np.array_equal(got["w"], want["w"]) and
            np.array_equal(got["b"], want["b"]) and got["step"] == step)


# ---- the stores ----------------------------------------------------------
class Store:
    """One store of the matrix: its URI base, the environment that reaches
    it (through a proxy that can answer 503), and the proxy's switch."""

    def __init__(self, kind):
        self.kind = kind
        if kind == "s3":
            self.srv = S3rver(buckets=("ckpt",))
            self.px = S3Proxy(self.srv.port)
            self.env = self.srv.env(endpoint=self.px.endpoint)
            self.base = "s3://ckpt/matrix"
        else:
            self.srv = Azurite(containers=("ckpt",))
            self.px = S3Proxy(self.srv.port)
            self.env = self.srv.env(endpoint="http://127.0.0.1:%d/%s" % (
                self.px.port, "devstoreaccount1"))
            self.base = "az://devstoreaccount1/ckpt/matrix"
        self.env = dict(self.env, SPOTRUN_OBJSTORE_PART_MB="5",
                        SPOTRUN_OBJSTORE_RETRIES="4")
        self.slow_url = self.px.endpoint + "/__proxy/slowdown?s=10"

    def close(self):
        self.px.close()
        self.srv.close()


@pytest.fixture(scope="module", params=["s3", "azure"])
def store(request):
    s = Store(request.param)
    yield s
    s.close()


@pytest.fixture
def on(store, monkeypatch):
    for k in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN",
              "AZURE_STORAGE_KEY", "AZURE_STORAGE_BLOB_ENDPOINT"):
        monkeypatch.delenv(k, raising=False)
    for k, v in store.env.items():
        monkeypatch.setenv(k, v)
    return store


def opener(row, uri, local):
    """How the row makes its Checkpointer."""
    if row == "uri":
        os.environ["SPOTRUN_CKPT_LOCAL_DIR"] = local
        return lambda: spotrun.Checkpointer(uri)
    return lambda: spotrun.Checkpointer(local, remote=uri)


def fresh_restore(uri, tmp_path):
    got = blank()
    step = spotrun.restore(uri, got)
    return step, got


# ---- single-process rows ----------------------------------------------------
CHILD = r"""
import os, sys, numpy as np, spotrun
row, uri, local = sys.argv[1:4]
N = %d
def state(step):
    return {"w": np.arange(N, dtype=np.float32) * 0.5 + step,
            "b": np.arange(257, dtype=np.int64) * 3 + step, "step": step}
if row == "uri":
    os.environ["SPOTRUN_CKPT_LOCAL_DIR"] = local
    ck = spotrun.Checkpointer(uri)
else:
    ck = spotrun.Checkpointer(local, remote=uri)
print("ready", flush=True)
step = 1
while True:
    ck.save(step, state(step))
    print("saved", step, flush=True)
    st = ck.remote_stats()
    print("stored", st["uploaded_step"], flush=True)
    step += 1
""" % N


def single_cell(store, row, column, tmp_path):
    uri = "%s/%s-%s" % (store.base, row, column)
    local = str(tmp_path / "node1")
    make = opener(row, uri, local)
    if column == "kill9":
        rnd = random.Random(SEED)
        delay = rnd.uniform(0.2, 2.0)
        print("kill9 cell: seed %d, kill after %.2f s" % (SEED, delay))
        env = dict(os.environ, PYTHONPATH=os.path.join(
            os.path.dirname(__file__), "..", "..", "python"),
            SPOTRUN_LOG_LEVEL="error")
        p = subprocess.Popen([sys.executable, "-c", CHILD, row, uri, local],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, bufsize=0)
        assert p.stdout.readline().strip() == b"ready", p.stderr.read()
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        out, err = p.communicate()
        assert p.returncode == -9, err
        stored = max([-1] + [int(x.split()[1]) for x in out.decode().split("\n")
                             if x.startswith("stored ")])
        step, got = fresh_restore(uri, tmp_path)
        if step is None:
            assert stored < 0
        else:
            # a whole committed step, every byte the step's own
            assert exact(got, step), step
            assert step >= stored
        return
    want = None
    ck = make()
    try:
        if column == "close":
            ck.save(5, state(5))
            want = 5
        elif column == "notice":
            ck.save(3, state(3))
            assert ck.save_final(4, state(4), deadline=time.time() + 60)
            # durable before close(): that is what the notice is for
            step, got = fresh_restore(uri, tmp_path)
            assert step == 4 and exact(got, 4)
            want = 4
        elif column == "two":
            ck.save(1, state(1))
            ck.save(2, state(2))
            want = 2
        elif column == "503":
            ck.save(1, state(1))
            ck.wait()
            assert ck.remote_wait(1)
            store.px.slowdown(10)
            ck.save(2, state(2))
            want = 2
    finally:
        ck.close()   # raises if the newest step is not in the store
    if column == "503":
        assert "503" in {w for _, _, w in store.px.log}
    step, got = fresh_restore(uri, tmp_path)
    assert step == want and exact(got, want), (step, want)


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("row", ["uri", "local"])
def test_single_process(on, row, column, tmp_path, monkeypatch):
    monkeypatch.delenv("SPOTRUN_CKPT_LOCAL_DIR", raising=False)
    single_cell(on, row, column, tmp_path)


# ---- two ranks ----------------------------------------------------------------
@pytest.mark.parametrize("column", COLUMNS)
def test_two_ranks(on, column, tmp_path):
    if ASAN:
        pytest.skip("torch.distributed ranks run in the plain pass only")
    torch = pytest.importorskip("torch")
    import dist_workers as w
    out = str(tmp_path)
    uri = "%s/ranks-%s" % (on.base, column)
    d = (str(tmp_path / "node{rank}"), uri, dict(on.env))
    if column == "kill9":
        rnd = random.Random(SEED)
        delay = rnd.uniform(1.0, 4.0)
        print("kill9 cell: seed %d, kill after %.2f s" % (SEED, delay))
        codes = w.launch(w.durability_kill, 2, d, out, delay, timeout=300)
        assert codes == [-signal.SIGKILL] * 2, codes
        assert w.launch(w.durability_restore, 2, d, out,
                        timeout=300) == [0, 0]
        for r in range(2):
            res = torch.load(os.path.join(out, "after-%d.pt" % r))
            step = res["restored"]
            done = [int(x.split()[0]) for x in open(os.path.join(
                out, "kill-%d.txt" % r)).read().split("\n")
                if x.strip() and x.split()[1] == "1"] \
                if os.path.exists(os.path.join(out, "kill-%d.txt" % r)) \
                else []
            if step is None:
                assert not done
                continue
            want = w._kv_state(step, r, 2)
            assert torch.equal(res["w"], want["w"]), (r, step)
            assert torch.equal(res["s"], want["s"].tensor), (r, step)
            # a step whose wait() said committed is there (or newer)
            assert step >= max([-1] + done)
        return
    codes = w.launch(w.durability_cell, 2, d, out, column, on.slow_url,
                     timeout=300)
    assert codes == [0, 0], codes
    want = {"close": 5, "notice": 4, "two": 2, "503": 2}[column]
    for r in range(2):
        res = torch.load(os.path.join(out, "cell-%d.pt" % r))
        assert res["restored"] == want, (r, res["restored"])
        st = w._kv_state(want, r, 2)
        assert torch.equal(res["w"], st["w"]) and \
            torch.equal(res["s"], st["s"].tensor)
    if column == "notice":
        assert torch.load(os.path.join(out, "res-0.pt"))["final"] is True
    if column == "503":
        assert "503" in {x for _, _, x in on.px.log}
