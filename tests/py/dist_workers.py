"""Rank programs for tests/py/test_dist.py: each runs in its own process
(multiprocessing "forkserver": fresh processes, torch preloaded), joins a real torch.distributed gloo group on
127.0.0.1 and checkpoints through spotrun's multi-rank Checkpointer.
A rank writes what it saw to OUT/<name>-<rank>.pt for the test to check."""

import multiprocessing
import os
import shutil
import signal
import socket
import threading
import time

import torch
import torch.distributed as dist

import spotrun
from spotrun import dist as sdist


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(target, world, *args, timeout=120):
    """Start `world` ranks of target(rank, world, port, *args); returns
    their exit codes (a rank killed by SIGKILL reads -9)."""
    # fresh processes, not forks of the test: a fork server that imported
    # torch once (not started per rank: 9 torch imports cost a minute on
    # two busy cores)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", "spotrun",
                                "dist_workers"])
    port = free_port()
    ps = [ctx.Process(target=target, args=(r, world, port) + args)
          for r in range(world)]
    for p in ps:
        p.start()
    codes = []
    for p in ps:
        p.join(timeout)
        if p.is_alive():
            p.kill()
            p.join()
        codes.append(p.exitcode)
    return codes


def _group(rank, world, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                            rank=rank, world_size=world)


def _ckpt(d, rank, world, **kw):
    if isinstance(d, tuple):
        # (this rank's node-local dir, with {rank}; an object-store URI;
        # the store's environment - the fork server's is the test's at
        # its start, not now)
        local, kw["remote"], env = d
        os.environ.update(env)
        d = local.format(rank=rank)
        # a rank's upload and marker on a loaded machine (or under ASan)
        # can take longer than the local protocol's test timeout
        kw["commit_timeout"] = max(kw.get("commit_timeout", 0), 15)
    c = spotrun.Checkpointer(d, rank=rank, world_size=world, **kw)
    assert isinstance(c, spotrun.DistCheckpointer)
    return c


# ---- DDP training -------------------------------------------------------

def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 1))


def _batch(step, rank):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(8, 16, generator=g)
    return x, x.sum(1, keepdim=True).sin()


def ddp_train(rank, world, port, d, out, with_ref, stop_at, total, every):
    """with_ref: first the uninterrupted reference run (no checkpoints,
    OUT/ref-<rank>.pt).  Then train steps 1..total with DDP from the newest
    global step in `d`, checkpointing every `every` steps, and stop after
    step stop_at (a preemption): OUT/ddp-<rank>.pt."""
    _group(rank, world, port)
    if with_ref:
        _ddp_run(rank, None, total, total, every, out, "ref")
    c = _ckpt(d, rank, world)
    _ddp_run(rank, c, stop_at, total, every, out, "ddp")
    c.close()
    dist.destroy_process_group()


def _ddp_run(rank, c, stop_at, total, every, out, name):
    net = _model()
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    torch.manual_seed(100 + rank)
    state = {"model": net.state_dict(), "optim": opt.state_dict(),
             "step": 0, "rng": sdist.Shard(torch.get_rng_state())}
    step = 0
    if c is not None:
        got = c.restore(state)
        if got is not None:
            net.load_state_dict(state["model"])
            opt.load_state_dict(state["optim"])
            torch.set_rng_state(state["rng"].tensor)
            step = state["step"]
            assert step == got
    restored = step
    while step < min(stop_at, total):
        step += 1
        x, y = _batch(step, rank)
        # a per-rank random mask: the RNG state must resume too
        x = x * (torch.rand(x.shape) > 0.1)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        if c is not None and step % every == 0:
            state = {"model": net.state_dict(), "optim": opt.state_dict(),
                     "step": step,
                     "rng": sdist.Shard(torch.get_rng_state())}
            assert c.save(step, state)
    torch.save({"restored": restored, "step": step,
                "params": [p.detach().clone() for p in net.parameters()],
                "optim": opt.state_dict()},
               os.path.join(out, "%s-%d.pt" % (name, rank)))


# ---- kill -9 during the commit --------------------------------------------

def _kv_state(step, rank, world):
    return {"w": torch.full((4,), float(step)),
            "s": sdist.Shard(torch.full((3,), float(step * 10 + rank)),
                             (3 * world,), (3 * rank,))}


def _big_state(big, step, rank, world):
    st = _kv_state(step, rank, world)
    st["big"] = big + step
    return st


def commit_kill(rank, world, port, d, out, steps, victim, phase, kill_step):
    """Restore, then save each of `steps`; rank `victim` SIGKILLs itself at
    protocol point `phase` of step kill_step."""
    _group(rank, world, port)
    c = _ckpt(d, rank, world, commit_timeout=3)
    st = _kv_state(0, rank, world)
    got = c.restore(st)
    res = {"restored": got, "w": st["w"].clone(),
           "s": st["s"].tensor.clone(), "saved": []}
    torch.save(res, os.path.join(out, "kill-%d.pt" % rank))

    def hook(ph, step):
        if rank == victim and ph == phase and step == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)
        if victim >= 0 and rank != victim and ph == "prepared" and \
                step == kill_step:
            # the survivor's part of the doomed step is in; the victim's
            # part (or rank 0's record) never comes, so every wait for it
            # from here on can only time out: 3 s, not the 15 s _ckpt
            # gives a part still to upload on a loaded machine
            c.commit_timeout = 3.0
    sdist._test_hook = hook
    for s in steps:
        c.save(s, _kv_state(s, rank, world))   # commits in the background
        res["saved"].append((s, c.wait()))
        torch.save(res, os.path.join(out, "kill-%d.pt" % rank))
    if victim < 0:
        # the ranks of this attempt committed: a restore now sees it
        dist.barrier()
        st = _kv_state(0, rank, world)
        res["again"] = (c.restore(st), st["s"].tensor.clone())
        torch.save(res, os.path.join(out, "kill-%d.pt" % rank))
    c.close()


def final_on_saved_step(rank, world, port, d, out):
    """save(2), then at once save_final(2): a notice that stops the gang
    on a periodic checkpoint's step, its commit (an upload of a few MB
    with an object store) still in flight.  OUT/final-R.pt: what
    save_final() returned, the step now newest, and the parts whose
    engine was asked to write the step again."""
    _group(rank, world, port)
    c = _ckpt(d, rank, world)
    big = torch.zeros(1 << 20)   # 4 MiB: the upload is still running

    def state(step):
        return _big_state(big, step, rank, world)
    c.restore(state(0))
    c.save(1, state(1))
    c.wait()
    c.save(2, state(2))
    parts = c._named([x for x in (c._repl, c._own) if x is not None])
    before = {n: e.stats()["saves_requested"] for n, e in parts}
    res = {"final": c.save_final(2, state(2)),
           "last": c.last_committed_step()}
    res["rewritten"] = sorted(n for n, e in parts
                              if e.stats()["saves_requested"] != before[n])
    c.close()
    torch.save(res, os.path.join(out, "final-%d.pt" % rank))
    dist.destroy_process_group()


def _big_saved(c, rank, world):
    """Restore (nothing), then step 1 of a 12 MiB state saved and
    committed; returns the state's maker, state(step)."""
    big = torch.arange(3 << 20, dtype=torch.float32)

    def state(step):
        return _big_state(big, step, rank, world)
    c.restore(state(0))
    c.save(1, state(1))
    c.wait()
    return state


def _big_equal(got, want):
    return torch.equal(got["w"], want["w"]) and \
        torch.equal(got["s"].tensor, want["s"].tensor) and \
        torch.equal(got["big"], want["big"])


def final_store_only(rank, world, port, d, out, local_copy):
    """save(1), then save_final(2) with a 12 MiB tensor (multipart from
    memory at 5 MiB parts), final_local_copy=local_copy; then a fresh
    node restores.  OUT/store-only-R.pt: what save_final() returned, the
    restored step and whether every tensor came back bit for bit."""
    _group(rank, world, port)
    c = _ckpt(d, rank, world, final_local_copy=local_copy)
    state = _big_saved(c, rank, world)
    res = {"final": c.save_final(2, state(2)),
           "last": c.last_committed_step()}
    c.close()
    dist.barrier()
    local, uri, env = d
    f = _ckpt((local + "-fresh", uri, env), rank, world)
    got = state(-1)
    res["restored"] = f.restore(got)
    want = state(2)
    res["exact"] = _big_equal(got, want)
    f.close()
    torch.save(res, os.path.join(out, "store-only-%d.pt" % rank))
    dist.destroy_process_group()


def final_kept_copy(rank, world, port, d, out, victim, spoil):
    """save(1); rank `victim` alone gets a notice (the agent's notice
    file: a deadline), every rank its final part of step 2 straight to
    the store; the kept ranks also keep a copy in memory (dist_keep.py).
    Then the next attempt: the victim's rank on a fresh node dir (the
    replacement), the others on their own (kept nodes) - rank 2's copy
    first removed (spoil "gone") or one byte of its shard flipped
    ("corrupt").  OUT/kept-R.pt: save_final()'s answer, whether a copy
    was made, the restored step, restore_sources, bitwise equality and
    whether restore() removed the copy."""
    from spotrun import dist_keep, preemption
    _group(rank, world, port)
    local, uri, env = d
    # the agent's contract: a notice file for the noticed node (written
    # before its signal), a signal alone for a kept node's `stop`
    notice = os.path.join(out, "notice-%d" % rank)
    os.environ["SPOTRUN_NOTICE_FILE"] = notice
    c = _ckpt(d, rank, world)
    state = _big_saved(c, rank, world)
    if rank == victim:
        with open(notice + ".tmp", "w") as f:
            f.write("%.3f\n" % (time.time() + 60))
        os.rename(notice + ".tmp", notice)
        preemption.should_checkpoint()   # the file seen
    else:
        preemption.notify()              # the `stop` signal: no deadline
    assert sdist.should_checkpoint()
    res = {"final": c.save_final(2, state(2))}
    c.close()
    preemption.uninstall()   # the next attempt is a new process
    mine = local.format(rank=rank)
    kd = dist_keep.keep_dir(mine)
    part = os.path.join(kd, "rank-%05d" % rank, "step-00000002")
    res["kept"] = os.path.isfile(os.path.join(part, "manifest.json"))
    if rank == 2 and spoil == "gone":
        shutil.rmtree(part, ignore_errors=True)
    elif rank == 2 and spoil == "corrupt":
        with open(os.path.join(part, "shard-00000.safetensors"),
                  "r+b") as f:
            f.seek(-8, os.SEEK_END)
            b = f.read(1)
            f.seek(-8, os.SEEK_END)
            f.write(bytes([b[0] ^ 0xFF]))
    dist.barrier()
    node = (local + "-replacement") if rank == victim else local
    f = _ckpt((node, uri, env), rank, world)
    got = state(-1)
    res["restored"] = f.restore(got)
    res["sources"] = dict(f.restore_sources)
    want = state(2)
    res["exact"] = _big_equal(got, want)
    res["left"] = os.path.exists(os.path.join(kd, "rank-%05d" % rank))
    f.close()
    torch.save(res, os.path.join(out, "kept-%d.pt" % rank))
    dist.destroy_process_group()


def shared_deadline(rank, world, port, d, out, lead_s, victim):
    """Rank `victim` alone gets a notice whose deadline is lead_s from
    now; at the next step boundary spotrun.dist.should_checkpoint() must
    tell the other ranks and give them that deadline.  The victim's node
    then goes without its part of the final step; the others'
    save_final() must stop waiting for it (rank 0: its marker; the
    others, with an object store: rank 0's record) at the deadline, not
    after commit_timeout (an hour here, far beyond launch()'s timeout):
    OUT/deadline-R.pt."""
    from spotrun import preemption
    _group(rank, world, port)
    c = _ckpt(d, rank, world, commit_timeout=3600)
    if rank == victim:
        preemption.notify(time.time() + lead_s)
    res = {"own": preemption.deadline()}
    res["stop"] = sdist.should_checkpoint()
    res["gang"] = sdist.gang_deadline()
    res["mono"] = sdist._gang["mono"]
    if rank != victim:
        res["final"] = c.save_final(1, _kv_state(1, rank, world))
        res["returned"] = time.monotonic()
    c.close()
    torch.save(res, os.path.join(out, "deadline-%d.pt" % rank))
    dist.destroy_process_group()


def final_abandon(rank, world, port, d, out, lead_s, victim, when):
    """Step 0 committed by both ranks; then rank `victim` alone gets a
    notice (lead_s) and goes without saving step 1, the node being
    reclaimed.  The kept rank's save_final(1) must give the step up -
    write no part of it, no marker - once the victim's part is missing at
    the victim's deadline.  when: "late" - the kept rank calls save_final
    after that deadline; "during" - it calls it at once and its write is
    held (the "final_write" hook) until the guard has abandoned the step
    at the deadline; "inflight" - step 1 is a periodic save() whose
    commit is still in flight (held at its "durable" hook until the guard
    gives it up) when save_final(1) comes.  OUT/abandon-R.pt."""
    from spotrun import preemption
    _group(rank, world, port)
    c = _ckpt(d, rank, world, commit_timeout=3600)
    c.save(0, _kv_state(0, rank, world))
    res = {"saved0": c.wait()}
    dist.barrier()   # step 0 committed on both ranks before the notice
    if rank == victim:
        preemption.notify(time.time() + lead_s)
    phase = "durable" if when == "inflight" else "final_write"

    def hold(at, step):
        if at != phase:
            return
        end = time.monotonic() + 300   # the guard acts at lead_s
        while step not in c._abandoned and time.monotonic() < end:
            time.sleep(0.01)
    if rank != victim and when == "inflight":
        sdist._test_hook = hold
        c.save(1, _kv_state(1, rank, world))
    res["stop"] = sdist.should_checkpoint()
    res["peers"] = dict(sdist._gang["peers"])
    if rank != victim:
        if when == "late":
            while time.monotonic() < sdist._gang["mono"]:
                time.sleep(0.01)
        else:
            sdist._test_hook = hold
        res["final"] = c.save_final(1, _kv_state(1, rank, world))
        res["abandoned"] = sorted(c._abandoned)
        sdist._test_hook = None
    c.close()
    torch.save(res, os.path.join(out, "abandon-%d.pt" % rank))
    dist.destroy_process_group()


def check_final_abandoned(out, victim):
    """final_abandon's results: the kept rank knew whose notice it was,
    and its save_final(1) gave the step up."""
    kept = 1 - victim
    rk = torch.load(os.path.join(out, "abandon-%d.pt" % kept))
    assert rk["saved0"] and rk["stop"], rk
    assert list(rk["peers"]) == [victim], rk
    assert rk["final"] is False and rk["abandoned"] == [1], rk


def check_shared_deadline(out, victim, final):
    """shared_deadline's results: every rank stopped, with the victim's
    deadline; the kept rank's save_final() returned `final` (False: it
    gave up on the victim's part), not before that deadline."""
    kept = 1 - victim
    rv = torch.load(os.path.join(out, "deadline-%d.pt" % victim))
    rk = torch.load(os.path.join(out, "deadline-%d.pt" % kept))
    # the kept rank has no notice of its own: its node stays
    assert rk["own"] is None and rv["own"] is not None
    assert rk["stop"] and rv["stop"]
    # the same Unix time on both ranks (it crossed as a float64)
    assert rk["gang"] == rv["gang"] == rv["own"]
    assert rk["final"] is final, rk
    if final is False:
        assert rk["returned"] >= rk["mono"]   # it waited to the deadline


def check_recommitted(out):
    """After commit_kill's second attempt (steps [2], no victim): both
    ranks restored step 1, never a part of 2, then committed step 2
    afresh, which a restore then took."""
    for r in (0, 1):
        res = torch.load(os.path.join(out, "kill-%d.pt" % r))
        assert res["restored"] == 1, (r, res)
        assert torch.equal(res["w"], torch.full((4,), 1.0))
        assert torch.equal(res["s"], torch.full((3,), 10.0 + r))
        assert res["saved"] == [(2, True)], (r, res)
        assert res["again"][0] == 2, (r, res)
        assert torch.equal(res["again"][1], torch.full((3,), 20.0 + r))


# ---- resharding ------------------------------------------------------------

def _rows(n, world):
    """Uneven row slices: the first n % world ranks get one more."""
    base, extra = divmod(n, world)
    sizes = [base + (1 if r < extra else 0) for r in range(world)]
    return [(sum(sizes[:r]), sizes[r]) for r in range(world)]


def _global(step):
    return {"m": torch.arange(30, dtype=torch.float32).reshape(10, 3) + step,
            "v": torch.arange(7, dtype=torch.float64) * 2 + step}


def _sharded_state(rank, world, step, fill=True):
    g = _global(step)
    mo, mn = _rows(10, world)[rank]
    vo, vn = _rows(7, world)[rank]
    m = g["m"][mo:mo + mn].clone() if fill else torch.zeros(mn, 3)
    v = g["v"][vo:vo + vn].clone() if fill else torch.zeros(vn,
                                                             dtype=torch.float64)
    return {"m": sdist.Shard(m, (10, 3), (mo, 0)),
            "opt": {"v": sdist.Shard(v, (7,), (vo,))},
            "bias": torch.full((2,), float(step)) if fill else torch.zeros(2),
            "step": step}


def reshard(rank, world, port, d, out, restore_step, save_step, repl_dir,
            local_dir):
    """Restore the sharded state into this world's slicing (if
    restore_step), check it, then save it at save_step (+1 on every
    value).  repl_dir / local_dir: a replicated-only state and one with a
    rank-local shard, saved when this is the first world and restored
    otherwise."""
    _group(rank, world, port)
    res = {}
    c = _ckpt(d, rank, world)
    if restore_step is not None:
        st = _sharded_state(rank, world, 0, fill=False)
        res["restored"] = c.restore(st)
        want = _sharded_state(rank, world, restore_step)
        res["ok"] = (torch.equal(st["m"].tensor, want["m"].tensor) and
                     torch.equal(st["opt"]["v"].tensor,
                                 want["opt"]["v"].tensor) and
                     torch.equal(st["bias"], want["bias"]) and
                     st["step"] == restore_step)
    dist.barrier()
    assert c.save(save_step, _sharded_state(rank, world, save_step))
    c.close()
    rc = _ckpt(repl_dir, rank, world)
    lc = _ckpt(local_dir, rank, world)
    if restore_step is None:
        rc.save(1, {"w": torch.arange(5.0), "n": 5})
        lc.save(1, {"w": torch.arange(5.0),
                    "rng": sdist.Shard(torch.full((2,), float(rank)))})
    else:
        st = {"w": torch.zeros(5), "n": 0}
        res["repl"] = (rc.restore(st), st["w"].tolist(), st["n"])
        try:
            lc.restore({"w": torch.zeros(5),
                        "rng": sdist.Shard(torch.zeros(2))})
            res["local_err"] = None
        except ValueError as exc:
            res["local_err"] = str(exc)
    rc.close()
    lc.close()
    torch.save(res, os.path.join(out, "reshard-%d-%d.pt" % (world, rank)))
    dist.barrier()
    dist.destroy_process_group()


# ---- preemption at random points (test_dist_preempt.py) ---------------------

def launch_gang(target, world, *args, timeout=120):
    """launch() as a gang: when a rank dies (kill -9, a crash), its node
    is gone and the survivors are stopped too (SIGKILL after a second: a
    rank blocked on the dead peer may never return), as spotrund stops a
    gang to restart it.  Returns the exit codes."""
    import time
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", "spotrun",
                                "dist_workers"])
    port = free_port()
    ps = [ctx.Process(target=target, args=(r, world, port) + args)
          for r in range(world)]
    for p in ps:
        p.start()
    end, dead_at = time.monotonic() + timeout, None
    while any(p.is_alive() for p in ps) and time.monotonic() < end:
        if dead_at is None and any(p.exitcode not in (None, 0) for p in ps):
            dead_at = time.monotonic()
        if dead_at is not None and time.monotonic() > dead_at + 1.0:
            break
        time.sleep(0.02)
    for p in ps:
        if p.is_alive():
            p.kill()
        p.join()
    return [p.exitcode for p in ps]


def _hash_of(net, opt):
    import hashlib
    h = hashlib.sha256()
    for p in net.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    for k in sorted(opt.state_dict()["state"]):
        h.update(opt.state_dict()["state"][k]["momentum_buffer"]
                 .contiguous().numpy().tobytes())
    return h.hexdigest()


def _gang_state(net, opt, step):
    return {"model": net.state_dict(), "optim": opt.state_dict(),
            "step": step, "rng": sdist.Shard(torch.get_rng_state())}


def ddp_preempt(rank, world, port, d, out, total, every, trial):
    """A DDP job of `total` steps on `world` ranks, checkpointed every
    `every` steps into `d`.  trial: None for the uninterrupted reference
    (no checkpoints; OUT/gref-W.pt holds the hash after every step and the
    final parameters), else (victim, step, point, mode): rank `victim`
    gets a preemption notice (mode "term": SIGTERM, the agent's signal)
    or dies (mode "kill": SIGKILL) at `point` of step `step` ("before",
    "mid": after backward, or the commit phases "durable", "prepared",
    "before_commit" of a checkpoint).  On a notice every rank agrees
    (spotrun.dist.should_checkpoint), takes its final checkpoint for the
    same step and exits 0.  A rank that restored checks the state against
    the reference's hash of that step: OUT/gang-W-R.pt."""
    from spotrun import preemption
    preemption.install()
    _group(rank, world, port)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                              torch.nn.Linear(32, 1))
    # find_unused_parameters: DDP then keeps its first gradient buckets
    # instead of rebuilding them after the first step, so a resumed run
    # sums gradients in the same order as the uninterrupted one (with
    # more than 2 ranks the order changes the rounding)
    ddp = torch.nn.parallel.DistributedDataParallel(
        net, find_unused_parameters=True)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    torch.manual_seed(100 + rank)
    res_path = os.path.join(out, "gang-%d-%d.pt" % (world, rank))
    res = torch.load(res_path) if os.path.exists(res_path) else \
        {"restored": [], "done": False}
    c, hashes, step = None, [], 0
    victim, at, point, mode = trial if trial else (-1, -1, "", "")

    def trigger():
        os.kill(os.getpid(), signal.SIGKILL if mode == "kill"
                else signal.SIGTERM)

    if trial is not None:
        c = _ckpt(d, rank, world, commit_timeout=5)
        st = _gang_state(net, opt, 0)
        got = c.restore(st)
        if got is not None:
            net.load_state_dict(st["model"])
            opt.load_state_dict(st["optim"])
            torch.set_rng_state(st["rng"].tensor)
            step = st["step"]
        ref = torch.load(os.path.join(out, "gref-%d.pt" % world))
        # a restored state is exactly the reference's at that step: never
        # a mix of two steps, never a part of an uncommitted one
        res["restored"].append((got, step, _hash_of(net, opt) ==
                                ref["hashes"][step]))
        torch.save(res, res_path)

        def hook(ph, s):
            if rank == victim and ph == point and s == at:
                trigger()
        sdist._test_hook = hook
    else:
        hashes.append(_hash_of(net, opt))
    while step < total:
        step += 1
        if rank == victim and step == at and point == "before":
            trigger()
        x, y = _batch(step, rank)
        x = x * (torch.rand(x.shape) > 0.1)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        if rank == victim and step == at and point == "mid":
            trigger()
        opt.step()
        if c is None:
            hashes.append(_hash_of(net, opt))
            continue
        if step % every == 0:
            c.save(step, _gang_state(net, opt, step))
        if step < total and sdist.should_checkpoint():
            if step % every == 0:
                c.wait()      # this step is already on its way
            else:
                c.save_final(step, _gang_state(net, opt, step))
            c.close()
            dist.destroy_process_group()
            return            # exit 0: the node can go
    final = [p.detach().clone() for p in net.parameters()]
    if c is None:
        torch.save({"hashes": hashes, "final": final},
                   os.path.join(out, "gref-%d.pt" % world))
    else:
        c.close()
        res.update(done=True, final=final)
        torch.save(res, res_path)
    dist.destroy_process_group()


# ---- the durability matrix (test_objstore_durability.py) -----------------

def _fresh_restore(rank, world, d, out, tag):
    """What the store restores on a fresh node: OUT/<tag>-R.pt."""
    local, uri, env = d
    fresh = (local + "-fresh", uri, env)
    c = _ckpt(fresh, rank, world)
    st = _kv_state(-1, rank, world)
    got = c.restore(st)
    torch.save({"restored": got, "w": st["w"].clone(),
                "s": st["s"].tensor.clone()},
               os.path.join(out, "%s-%d.pt" % (tag, rank)))
    c.close()


def durability_cell(rank, world, port, d, out, column, slow_url):
    """One cell of the 2-rank row: the column's saves, then close(), then
    what a fresh node restores from the store (OUT/cell-R.pt)."""
    import urllib.request
    _group(rank, world, port)
    # the 503 column: the commit waits the store's 10 s of 503 out
    c = _ckpt(d, rank, world, commit_timeout=120 if column == "503" else 0)
    c.restore(_kv_state(0, rank, world))
    res = {}
    if column == "close":
        c.save(5, _kv_state(5, rank, world))
    elif column == "notice":
        c.save(3, _kv_state(3, rank, world))
        res["final"] = c.save_final(4, _kv_state(4, rank, world),
                                    deadline=time.time() + 60)
    elif column == "two":
        c.save(1, _kv_state(1, rank, world))
        c.save(2, _kv_state(2, rank, world))
    elif column == "503":
        c.save(1, _kv_state(1, rank, world))
        c.wait()
        dist.barrier()
        if rank == 0:
            urllib.request.urlopen(slow_url, timeout=30).read()
        dist.barrier()
        c.save(2, _kv_state(2, rank, world))
    c.close()
    torch.save(res, os.path.join(out, "res-%d.pt" % rank))
    dist.barrier()
    _fresh_restore(rank, world, d, out, "cell")
    dist.destroy_process_group()


def durability_kill(rank, world, port, d, out, delay_s):
    """Save steps 1, 2, ... until SIGKILLed after delay_s (both ranks; the
    kill lands anywhere in the saves, uploads and the commit protocol).
    OUT/kill-R.txt: the steps whose save() and wait() returned."""
    _group(rank, world, port)
    c = _ckpt(d, rank, world)
    c.restore(_kv_state(0, rank, world))
    threading.Timer(delay_s, os.kill, (os.getpid(), signal.SIGKILL)).start()
    step = 1
    while True:
        c.save(step, _kv_state(step, rank, world))
        ok = c.wait()
        with open(os.path.join(out, "kill-%d.txt" % rank), "a") as f:
            f.write("%d %d\n" % (step, ok))
        step += 1


def durability_restore(rank, world, port, d, out):
    _group(rank, world, port)
    _fresh_restore(rank, world, d, out, "after")
    dist.destroy_process_group()
