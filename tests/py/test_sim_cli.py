"""CLI behaviour of `spotrun sim`: help, usage errors naming the argument,
the JSON document's shape, window selection, and trace errors."""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKY = [f"data/traces/skynomad/v100_4node_600s/{z}_v100_1/full.json"
       for z in ("us-east-1f", "us-east-2a", "us-west-2c")]
CBL = "data/traces/cbl/availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json"


def sim(*args):
    return subprocess.run(["spotrun", "sim", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_help_and_usage_errors():
    r = sim("--help")
    assert r.returncode == 0 and "usage: spotrun sim" in r.stdout
    r = sim()
    assert r.returncode == 2 and "--trace" in r.stderr
    r = sim("--trace", CBL, "--policy", "magic")
    assert r.returncode == 2 and "'magic'" in r.stderr
    r = sim("--trace", CBL, "--deadline-hours", "soon")
    assert r.returncode == 2 and "--deadline-hours" in r.stderr
    r = sim("--trace", CBL, "--trace-format", "xml")
    assert r.returncode == 2 and "--trace-format" in r.stderr


def test_json_shape_and_bounds():
    r = sim("--trace", *SKY, "--windows", "5", "--seed", "3", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert set(doc) == {"params", "policies", "windows"}
    assert doc["params"]["regions"] == SKY
    assert doc["params"]["od_price"] == 3.06
    pols = doc["policies"]
    assert set(pols) == {"od", "greedy", "up", "ups", "optimal", "spotrun"}
    for name, s in pols.items():
        for k in ("mean_cost", "median_cost", "p95_cost", "ratio_to_optimal",
                  "ratio_to_od", "misses", "windows", "mean_preemptions",
                  "spot_fraction"):
            assert k in s, (name, k)
        assert s["windows"] == 5
        assert s["ratio_to_optimal"] >= 1 - 1e-9
    assert pols["od"]["ratio_to_od"] == 1
    assert len(doc["windows"]) == 5 * 6
    by = {}
    for w in doc["windows"]:
        assert set(w) == {"trace", "start_tick", "policy", "cost", "met", "preemptions"}
        by.setdefault(w["start_tick"], {})[w["policy"]] = w
    for start, row in by.items():
        for name, w in row.items():
            assert row["optimal"]["cost"] <= w["cost"] + 1e-6
            if name != "greedy":
                assert w["met"]


def test_start_ticks_are_repeatable_and_seeded_windows_deterministic():
    a = json.loads(sim("--trace", CBL, "--windows", "4", "--seed", "9", "--json").stdout)
    b = json.loads(sim("--trace", CBL, "--windows", "4", "--seed", "9", "--json").stdout)
    assert a == b
    starts = sorted({w["start_tick"] for w in a["windows"]})
    args = [x for s in starts for x in ("--start-tick", str(s))]
    c = json.loads(sim("--trace", CBL, "--policy", "up", "optimal", *args, "--json").stdout)
    got = {(w["start_tick"], w["policy"]): w["cost"] for w in c["windows"]}
    want = {(w["start_tick"], w["policy"]): w["cost"] for w in a["windows"]
            if w["policy"] in ("up", "optimal")}
    assert got == want


def test_table_and_trace_errors(tmp_path):
    r = sim("--trace", CBL, "--windows", "3")
    assert r.returncode == 0
    assert "policy" in r.stdout and "spotrun" in r.stdout and "optimal" in r.stdout
    assert r.stderr == ""  # no progress bar without a TTY
    bad = tmp_path / "bad.json"
    bad.write_text('{"metadata": {"gap_seconds": 600}, "data": [0, 1, "x"]}')
    r = sim("--trace", str(bad))
    assert r.returncode == 1 and "bad.json: data[2]" in r.stderr
    short = "data/traces/cbl/preemption/1-node/gcp-04-30-2023/us-east1-b_c3-88.json"
    r = sim("--trace", short)
    assert r.returncode == 1 and "shorter than one" in r.stderr
    r = sim("--trace", CBL, "--start-tick", "99999999")
    assert r.returncode == 1 and "--start-tick 99999999" in r.stderr
