"""CLI behaviour of `spotrun sim`: help, usage errors naming the argument,
the JSON document's shape, window selection, and trace errors."""
import json
import os
import pty
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKY = [f"data/traces/skynomad/v100_4node_600s/{z}_v100_1/full.json"
       for z in ("us-east-1f", "us-east-2a", "us-west-2c")]
CBL = "data/traces/cbl/availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json"


def test_runs_the_builds_spotrun():
    """`spotrun` by name is the build's (conftest puts its bin first on
    PATH, as make check does), also when this file is run by hand."""
    from conftest import BUILD
    assert shutil.which("spotrun") == os.path.join(BUILD, "bin", "spotrun")


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
    r = sim("--trace", *SKY, "--windows", "3", "--seed", "3", "--json")
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
        assert s["windows"] == 3
        assert s["ratio_to_optimal"] >= 1 - 1e-9
    assert pols["od"]["ratio_to_od"] == 1
    assert len(doc["windows"]) == 3 * 6
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
    assert r.returncode == 2 and "shorter than one 52 h window" in r.stderr
    r = sim("--trace", CBL, "--start-tick", "99999999")
    assert r.returncode == 1 and "--start-tick 99999999" in r.stderr


def test_impossible_inputs_are_usage_errors():
    """Work that cannot fit before the deadline is exit 2 naming the values,
    never a table of nan with ratio_to_optimal 1.0."""
    r = sim("--trace", CBL, "--work-hours", "60", "--deadline-hours", "52")
    assert r.returncode == 2, r.stdout
    assert "--work-hours 60" in r.stderr and "--deadline-hours 52" in r.stderr
    assert r.stdout == ""
    r = sim("--trace", CBL, "--work-hours", "52", "--deadline-hours", "52", "--json")
    assert r.returncode == 2 and "--restart-hours 0.2" in r.stderr and r.stdout == ""
    r = sim("--trace", CBL, "--deadline-hours", "1e300")
    assert r.returncode == 2 and "deadline_hours" in r.stderr
    r = sim("--trace", CBL, "--window-hours", "10")
    assert r.returncode == 2 and "--window-hours" in r.stderr
    r = sim("--trace", CBL, "--policy", "upp")
    assert r.returncode == 2 and "known: od greedy up ups optimal spotrun" in r.stderr
    # --flag=value is the same as --flag value.
    a = sim("--trace=" + CBL, "--windows=2", "--deadline-hours=60", "--json")
    b = sim("--trace", CBL, "--windows", "2", "--deadline-hours", "60", "--json")
    assert a.returncode == 0 and a.stdout == b.stdout


def run_with_tty_stderr(args):
    """Run spotrun with stderr on a pseudo-terminal; returns (rc, stdout, tty text)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(["spotrun", *args], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    out = p.stdout.read().decode()
    rc = p.wait(timeout=300)
    os.close(master)
    return rc, out, b"".join(chunks).decode(errors="replace")


def test_progress_bar_only_on_a_tty_and_never_with_json():
    rc, out, tty = run_with_tty_stderr(["sim", "--trace", CBL, "--policy", "up",
                                        "--windows", "5"])
    assert rc == 0 and "up" in out
    assert "5/5 windows" in tty and "1/5 windows" in tty
    rc, out, tty = run_with_tty_stderr(["sim", "--trace", CBL, "--policy", "up",
                                        "--windows", "5", "--json"])
    assert rc == 0 and json.loads(out)["policies"]["up"]["windows"] == 5
    assert "windows" not in tty


def test_trace_gen(tmp_path):
    r = subprocess.run(["spotrun", "trace", "gen", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage: spotrun trace gen" in r.stdout
    out = tmp_path / "g.json"
    args = ["spotrun", "trace", "gen", "--out", str(out), "--nodes", "8", "--tail", "1.3",
            "--gap-seconds", "300", "--hours", "200", "--od-ratio", "4", "--seed", "5"]
    assert subprocess.run(args).returncode == 0
    doc = json.loads(out.read_text())
    assert doc["metadata"]["gap_seconds"] == 300
    assert doc["metadata"]["price_info"] == {"price": 1.0, "on_demand_price": 4.0}
    assert len(doc["data"]) == 200 * 12 and set(doc["data"]) <= {0, 1}
    first = out.read_text()
    assert subprocess.run(args).returncode == 0 and out.read_text() == first
    r = sim("--trace", str(out), "--work-hours", "20", "--deadline-hours", "30",
            "--windows", "3", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["params"]["od_price"] == 4.0
    d = tmp_path / "multi"
    assert subprocess.run(["spotrun", "trace", "gen", "--out", str(d), "--regions", "2",
                           "--hours", "100"]).returncode == 0
    assert sorted(os.listdir(d)) == ["region0.json", "region1.json"]
    for bad, needle in ((["--tail", "1"], "tail"), (["--nodes", "0"], "nodes"),
                        (["--od-ratio", "0.5"], "od-ratio"), (["--gap-seconds", "x"], "--gap-seconds"),
                        (["--hours", "0.01"], "hours")):
        r = subprocess.run(["spotrun", "trace", "gen", "--out", str(tmp_path / "b.json"), *bad],
                           capture_output=True, text=True)
        assert r.returncode == 2 and needle in r.stderr, (bad, r.stderr)
    r = subprocess.run(["spotrun", "trace", "gen"], capture_output=True, text=True)
    assert r.returncode == 2 and "--out" in r.stderr


def test_trace_gen_widened(tmp_path):
    """Correlated zones, a forced outage with blips, per-tick prices."""
    d = tmp_path / "m"
    args = ["spotrun", "trace", "gen", "--out", str(d), "--regions", "3", "--nodes", "4",
            "--shared-nodes", "2", "--outage-hours", "30", "--blip-hours", "3",
            "--price-vol", "0.3", "--hours", "200", "--seed", "9"]
    assert subprocess.run(args).returncode == 0
    docs = [json.loads((d / f"region{k}.json").read_text()) for k in range(3)]
    for doc in docs:
        up = [1 - x for x in doc["data"]]
        assert sum(up[:180]) < 30          # 30 h of outage, blips only
        assert len(set(doc["prices"])) > 100 and min(doc["prices"]) > 0
    assert docs[0]["prices"] != docs[1]["prices"]
    for bad, needle in ((["--shared-nodes", "5"], "shared-nodes"),
                        (["--outage-hours", "300"], "outage-hours"),
                        (["--blip-hours", "0.01"], "blip-hours"),
                        (["--price-vol", "3"], "price-vol")):
        r = subprocess.run(["spotrun", "trace", "gen", "--out", str(tmp_path / "b.json"),
                            "--nodes", "4", "--hours", "200", *bad],
                           capture_output=True, text=True)
        assert r.returncode == 2 and needle in r.stderr, (bad, r.stderr)


def test_trace_prior_and_sim_prior_trace():
    """`spotrun trace prior` fits spotrun's prior; `sim --prior-trace`
    runs spotrun on it, and only spotrun's figures move."""
    r = subprocess.run(["spotrun", "trace", "prior", CBL, "--json"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["traces"] == 1 and doc["tick_seconds"] == 600
    assert len(doc["ends"]) == 2 and len(doc["ends"][1]) == 10
    assert sum(doc["ends"][1]) > 10 and sum(doc["exposure_ticks"][1]) > sum(doc["ends"][1])
    r = subprocess.run(["spotrun", "trace", "prior"], capture_output=True, text=True)
    assert r.returncode == 2 and "at least one trace" in r.stderr
    r = subprocess.run(["spotrun", "trace", "prior", "/nonexistent.json"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "/nonexistent.json" in r.stderr
    base = sim("--trace", SKY[0], "--windows", "3", "--policy", "spotrun", "up", "--json")
    other = sim("--trace", SKY[0], "--windows", "3", "--policy", "spotrun", "up", "--json",
                "--prior-trace", CBL)
    assert base.returncode == 0 and other.returncode == 0, other.stderr
    b, o = json.loads(base.stdout)["policies"], json.loads(other.stdout)["policies"]
    assert b["up"] == o["up"]
    assert o["spotrun"]["misses"] == 0
    r = sim("--trace", SKY[0], "--prior-trace", "/nonexistent.json")
    assert r.returncode == 1 and "--prior-trace" in r.stderr


def test_sim_zone_pairs():
    """`sim --zone-pairs` picks spotrun's model across regions: the pair
    model (on) plans differently from the run model (off), every mode
    runs without a miss, anything else is refused."""
    base = ["--trace", *SKY[:2], "--windows", "2", "--policy", "spotrun", "--json"]
    got = {}
    for m in ("off", "on", "auto"):
        r = sim(*base, "--zone-pairs", m)
        assert r.returncode == 0, (m, r.stderr)
        got[m] = json.loads(r.stdout)["policies"]["spotrun"]
        assert got[m]["misses"] == 0, m
    assert got["on"]["mean_cost"] != got["off"]["mean_cost"]
    r = sim(*base, "--zone-pairs", "both")
    assert r.returncode == 2 and "--zone-pairs" in r.stderr and "both" in r.stderr


def fold_run(spotrun_fold, misses=0):
    """One run's summaries as scripts/sim-policy-table --json saves them."""
    def pol(cost, m=0):
        return {"mean_cost": cost, "ratio_to_optimal": cost / 80.0, "misses": m,
                "median_cost": cost, "p95_cost": cost, "ratio_to_od": cost / 200.0,
                "windows": 2, "mean_preemptions": 0.0, "spot_fraction": 0.5}
    return {"fold": "cbl availability 1-node 2022", "od": pol(200), "greedy": pol(150),
            "optimal": pol(80), "up": pol(100), "ups": pol(104), "spotrun": pol(95),
            "spotrun_fold": pol(spotrun_fold, misses)}


def test_policy_table_fold_goal(tmp_path):
    """scripts/sim-policy-table --goal: exit 1 when a held-out fold costs
    more than 1.02 x the better of up and ups, or misses a deadline there;
    0 when every fold meets it (issue 27; bench/policy_folds.sh)."""
    script = os.path.join(ROOT, "scripts", "sim-policy-table")
    key = "single|cbl/availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json|52|0.2"

    def table(doc, *flags):
        path = tmp_path / "res.json"
        path.write_text(json.dumps(doc))
        return subprocess.run([script, "--from", str(path), *flags], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)

    r = table({key: fold_run(101.9)}, "--goal")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fold goal: met" in r.stdout
    r = table({key: fold_run(102.5)}, "--goal")
    assert r.returncode == 1
    assert "NOT met: cbl availability 1-node 2022 at 52:0.2" in r.stdout and "1.0250" in r.stdout
    r = table({key: fold_run(90, misses=1)}, "--goal")
    assert r.returncode == 1 and "1 misses held out" in r.stdout
    r = table({key: fold_run(102.5)})  # the table alone never fails
    assert r.returncode == 0
    doc = {key: fold_run(95)}
    del doc[key]["spotrun_fold"]
    r = table(doc, "--goal")
    assert r.returncode != 0 and "no held-out folds" in r.stderr
    r = subprocess.run([script, "--goal"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and "--goal: needs --folds" in r.stderr


def test_policy_table_passes_zone_pairs(tmp_path):
    """scripts/sim-policy-table --zone-pairs M runs every `spotrun sim` with
    that model across regions (a stand-in spotrun records its arguments),
    and --json keeps each policy's cost per window, in window order."""
    script = os.path.join(ROOT, "scripts", "sim-policy-table")
    log = tmp_path / "args"
    pols = {k: v for k, v in fold_run(95).items() if isinstance(v, dict) and k != "spotrun_fold"}
    rows = [{"policy": p, "start_tick": w, "cost": 10.0 * w + i, "met": True}
            for w in range(2) for i, p in enumerate(pols)]
    out = tmp_path / "out.json"
    out.write_text(json.dumps({"policies": pols, "windows": rows}))
    fake = tmp_path / "spotrun"
    fake.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec cat "{out}"\n')
    fake.chmod(0o755)
    saved = tmp_path / "res.json"
    r = subprocess.run([script, "--spotrun", str(fake), "--sets", "multi", "--settings", "52:0.2",
                        "--windows", "2", "--jobs", "1", "--zone-pairs", "auto",
                        "--json", str(saved)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = log.read_text().splitlines()
    assert runs and all(x.startswith("sim ") and "--zone-pairs auto" in x for x in runs), runs
    doc = json.loads(saved.read_text())
    assert doc
    for v in doc.values():
        for i, p in enumerate(pols):
            assert v[p]["costs"] == [0.0 + i, 10.0 + i], (p, v[p])


def test_policy_paired_se(tmp_path):
    """scripts/policy-paired-se: an arm's figure against a peer's on the
    same windows, with the standard error of the paired per-window
    difference; WORSE and exit 1 past max(0.005, 2 x SE); a clear error
    when the two runs are not on the same windows."""
    script = os.path.join(ROOT, "scripts", "policy-paired-se")

    def bench_out(path, spot, fig):
        lines = [f"window v100_1 {w} known2 1.000000 spotrun {s:.6f} ups 1.2 misses 0"
                 for w, s in enumerate(spot)]
        lines.append(f"  spotrun 1.0, ups 1.2; spotrun / known2 {fig:.4f}; misses 0")
        path.write_text("\n".join(lines) + "\n")
        return str(path)

    def run(*args):
        return subprocess.run([script, *args], capture_output=True, text=True, timeout=60)

    # differences 0.00, 0.02: mean 0.01, SE = sd / sqrt(2) = 0.01
    peer = bench_out(tmp_path / "peer.out", [1.00, 1.00], 1.0)
    arm = bench_out(tmp_path / "arm.out", [1.00, 1.02], 1.01)
    r = run("bench", arm, peer)
    assert r.returncode == 0 and "diff +0.0100" in r.stdout and "SE 0.0100" in r.stdout \
        and "bound 0.0200 ok" in r.stdout, r.stdout + r.stderr
    # the same mean difference with no spread: over the 0.005 floor
    arm = bench_out(tmp_path / "arm2.out", [1.01, 1.01], 1.01)
    r = run("bench", arm, peer)
    assert r.returncode == 1 and "SE 0.0000 bound 0.0050 WORSE" in r.stdout, r.stdout
    short = bench_out(tmp_path / "short.out", [1.0], 1.0)
    r = run("bench", short, peer)
    assert r.returncode != 0 and "not the same sets and windows" in r.stderr

    def folds_json(path, costs, insample=(95.0, 95.0)):
        v = fold_run(95)
        v["up"]["costs"], v["ups"]["costs"] = [100.0, 100.0], [104.0, 104.0]
        v["spotrun_fold"]["costs"] = costs
        v["spotrun_fold"]["mean_cost"] = sum(costs) / len(costs)
        v["spotrun"]["costs"] = list(insample)
        v["spotrun"]["mean_cost"] = sum(insample) / len(insample)
        path.write_text(json.dumps({"multi|set a|70|0.05": v}))
        return str(path)

    peer = folds_json(tmp_path / "peer.json", [90.0, 90.0])
    # held out +0.01 +- 0.01 of up's $100; in-sample +0.03 with no spread
    arm = folds_json(tmp_path / "arm.json", [90.0, 92.0], (98.0, 98.0))
    r = run("folds", arm, peer)
    assert r.returncode == 1 and "cbl availability 1-node 2022 70:0.05: " in r.stdout \
        and "diff +0.0100 SE 0.0100 bound 0.0200 ok" in r.stdout \
        and "2022 70:0.05 in-sample: arm 0.9800 peer 0.9500 diff +0.0300 SE 0.0000 " \
            "bound 0.0050 WORSE" in r.stdout, r.stdout + r.stderr
    r = run("folds", str(tmp_path / "peer.json"), str(tmp_path / "peer.json"))
    assert r.returncode == 0 and "diff +0.0000" in r.stdout
    r = run("bench", peer)
    assert r.returncode == 2 and "usage" in r.stderr
