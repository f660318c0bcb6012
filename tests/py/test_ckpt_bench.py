"""`spotrun ckpt bench` end to end at a tiny size: the table (which once
freed a value it then printed: "corrupted double-linked list"), the --json
object, and the progress line, which goes to stderr on a TTY only."""

import json
import os
import pty
import subprocess

import pytest

ROWS = ("stall_vs_memcpy", "lazy_stall_vs_memcpy", "write_vs_raw",
        "restore_vs_raw", "restore_behind_vs_raw", "restore_keep_vs_raw",
        "restore_scratch_vs_raw", "restore_unstaged_vs_raw", "restore_cb_vs_raw",
        "stall_vs_torch_save",
        "train_overhead", "peak_rss_vs_state")
RESTORES = ("restore_vs_raw", "restore_behind_vs_raw",
            "restore_keep_vs_raw", "restore_scratch_vs_raw",
            "restore_unstaged_vs_raw", "restore_cb_vs_raw")
# how each arm is all or nothing (restore_vs_raw.phases.mode)
MODES = {"restore_vs_raw": "verify_first",
         "restore_behind_vs_raw": "behind",
         "restore_keep_vs_raw": "keep",
         "restore_scratch_vs_raw": "as_read",
         "restore_unstaged_vs_raw": "verify_first",
         "restore_cb_vs_raw": "verify_first"}
# tiny and short: two restore pairs, two training pairs of 0.25 CPU-s
# segments (a step is calibrated on CPU time, so a busy machine stretches
# them);
# the torch.save peer has its own test (test_package.py)
ARGS = ["--size", "16M", "--reps", "2", "--pairs", "2",
        "--train-seconds", "1", "--torch-script", "/nonexistent"]


def bench(tmp_path, *extra, stderr=subprocess.PIPE):
    return subprocess.run(["spotrun", "ckpt", "bench", "--dir", str(tmp_path)]
                          + ARGS + list(extra), stdout=subprocess.PIPE,
                          stderr=stderr, text=True, timeout=300)


def test_table_with_progress_on_a_tty(tmp_path):
    master, slave = pty.openpty()
    try:
        p = bench(tmp_path, stderr=slave)
        os.close(slave)
        slave = -1
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:   # EIO: the other end is closed
                break
            if not chunk:
                break
            err += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert p.returncode == 0, err.decode(errors="replace")[-2000:]
    lines = p.stdout.splitlines()
    assert lines[0].startswith("load average")
    assert lines[1].split()[:3] == ["key", "ratio", "goal"]
    assert [ln.split()[0] for ln in lines[2:2 + len(ROWS)]] == list(ROWS)
    # where the writes' time went, under the table
    assert lines[2 + len(ROWS)].startswith("write phases")
    assert lines[3 + len(ROWS)].split()[:2] == ["engine", "prepare"]
    assert lines[4 + len(ROWS)].split()[:2] == ["raw", "write"]
    # the torch peer was not found: n/a with the reason, not a crash
    assert "peer script /nonexistent not found" in p.stdout
    err = err.decode(errors="replace")
    for k in range(1, 7):
        assert "ckpt bench [%d/6]" % k in err, err
    assert "\x1b[K" in err and "ckpt bench" not in p.stdout


def test_json_has_every_ratio_and_no_progress_off_a_tty(tmp_path):
    p = bench(tmp_path, "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "ckpt bench [" not in p.stderr    # stderr is a pipe: no progress
    out = json.loads(p.stdout)               # nothing but the object
    for k in ROWS:
        assert k in out, k
    assert out["stall_vs_torch_save"]["ratio"] is None
    tr = out["train_overhead"]
    assert tr["pairs"] == 2 and 0 <= tr["late_commits"] <= 2
    assert tr["delta_s_min"] <= tr["delta_s_median"] <= tr["delta_s_max"]
    assert tr["overhead_min"] <= tr["ratio"] <= tr["overhead_max"]
    for k in RESTORES:
        rr = out[k]
        assert rr["pair_ratio_min"] <= rr["ratio"] <= rr["pair_ratio_max"]
        assert rr["restore_cpu_s"] > 0 and rr["pairs"] == 2
        check_restore_phases(k, rr)
    assert out["machine"]["cpus"] >= 1 and out["machine"]["loadavg_start"]
    assert out["machine"]["dirs"] == [str(tmp_path)]
    check_phases(out["write_vs_raw"])
    assert not os.listdir(tmp_path), "the work directory was left behind"


def check_restore_phases(key, rr):
    """Where the median restore's time went: its way of being all or
    nothing, the read (and verify) with CPU used, and the place after it
    only when the image is placed (verify first: all of it; behind the
    reads: what the placers had not done, at least every tensor's
    unaligned edges)."""
    ph = rr["phases"]
    assert ph["mode"] == MODES[key], (key, ph)
    assert ph["read_s"] > 0 and ph["read_cpu_s"] > 0, (key, ph)
    assert ph["read_s"] + ph["place_s"] <= rr["restore_s"] * 1.01 + 0.002
    if ph["mode"] == "verify_first":
        assert ph["place_s"] > 0 and ph["place_cpu_s"] > 0, (key, ph)
    elif ph["mode"] == "behind":
        assert ph["place_s"] > 0 and ph["place_cpu_s"] >= 0, (key, ph)
    else:
        assert ph["place_s"] == 0 and ph["place_cpu_s"] == 0, (key, ph)


def check_phases(wr, dirs=1):
    """The breakdown of the median write: every phase of the engine and of
    the raw peer, CPU never above wall, and the engine's phases up to the
    commit adding up to its commit time (one writing thread's clock)."""
    ph = wr["phases"]
    assert ph["dirs"] == dirs
    eng, raw = ph["engine"], ph["raw"]
    names = ("prepare", "hash", "submit", "wait", "manifest", "fsync",
             "publish", "retention")
    for side, keys in ((eng, names), (raw, ("write", "fsync"))):
        for k in keys:
            assert 0 <= side[k]["cpu_s"] <= side[k]["wall_s"] + 0.01, (k, side)
    assert eng["writes"] > 0 and eng["fsyncs"] >= 3
    assert eng["hash"]["cpu_s"] > 0          # every byte hashed
    if dirs == 1:
        upto = sum(eng[k]["wall_s"] for k in names[:-1])
        assert abs(upto - eng["commit_s"]) <= 0.02 * eng["commit_s"] + 0.002
    assert raw["write"]["wall_s"] > 0


@pytest.mark.parametrize("only,rows", [
    ("restore", set(RESTORES)),
    ("train", {"train_overhead"}),
])
def test_only_runs_the_phases_asked_for(tmp_path, only, rows):
    p = bench(tmp_path, "--json", "--only", only)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert set(out) - {"machine"} == rows
    for k in rows & set(RESTORES):
        rr = out[k]                  # pairs after one unmeasured save
        assert rr["pairs"] == 2 and rr["restore_cpu_s"] > 0
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("bad,word", [(["--pairs", "1"], "--pairs"),
                                      (["--placement", "x"], "--placement"),
                                      (["--only", "restore,x"], "--only")])
def test_bad_arguments_are_named(tmp_path, bad, word):
    p = subprocess.run(["spotrun", "ckpt", "bench", "--size", "16M", "--dir",
                        str(tmp_path)] + bad, capture_output=True, text=True)
    assert p.returncode == 2 and word in p.stderr


def test_missing_dir_is_named(tmp_path):
    missing = tmp_path / "not-made"
    p = subprocess.run(["spotrun", "ckpt", "bench", "--size", "16M", "--dir",
                        str(missing)], capture_output=True, text=True)
    assert p.returncode != 0
    assert f"--dir {missing}: not a directory" in p.stderr
    assert not missing.exists()


def test_striped_over_two_directories(tmp_path):
    """--dir twice: the checkpoint is striped over both (two lanes) and
    compared with a raw write striped over the same directories."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    p = subprocess.run(["spotrun", "ckpt", "bench", "--dir", str(a), "--dir",
                        str(b), "--json", "--only", "saves,restore"] + ARGS,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["machine"]["dirs"] == [str(a), str(b)]
    wr = out["write_vs_raw"]
    check_phases(wr, dirs=2)
    assert wr["phases"]["engine"]["lanes"] == 2
    assert out["restore_vs_raw"]["pairs"] == 2
    assert not os.listdir(a) and not os.listdir(b)
