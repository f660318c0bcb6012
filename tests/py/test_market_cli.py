"""CLI behaviour of `spotrun catalog` and `spotrun plan`: help, usage
errors, JSON documents, ordering, and file:line errors for bad job files."""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spotrun(*args):
    return subprocess.run(["spotrun", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_help_and_usage_errors():
    for cmd in ("catalog", "plan"):
        r = spotrun(cmd, "--help")
        assert r.returncode == 0 and "usage: spotrun " + cmd in r.stdout
    r = spotrun("catalog", "--gpu")
    assert r.returncode == 2 and "--gpu needs a value" in r.stderr
    r = spotrun("catalog", "--bogus")
    assert r.returncode == 2 and "'--bogus'" in r.stderr
    r = spotrun("plan")
    assert r.returncode == 2 and "missing JOB.yaml" in r.stderr


def test_catalog_json_cheapest_first():
    r = spotrun("catalog", "--gpu", "H100:8", "--spot", "--json")
    assert r.returncode == 0, r.stderr
    offers = json.loads(r.stdout)["offerings"]
    assert len(offers) > 10
    spots = [o["spot_per_h_micros"] for o in offers]
    assert spots == sorted(spots)
    assert all(o["accelerator"] == "H100" and o["accel_count"] == 8 for o in offers)
    clouds = {o["cloud"] for o in offers}
    assert {"aws", "gcp"} <= clouds


def test_catalog_table_lists_every_headline_cloud():
    r = spotrun("catalog", "--gpu", "H100:8")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("CLOUD")
    clouds = {ln.split()[0] for ln in lines[1:]}
    assert {"aws", "gcp", "azure", "lambda", "coreweave"} <= clouds


def test_plan_json():
    r = spotrun("plan", "examples/jobs/h100x8.yaml", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["job"] == "llama-8b-pretrain"
    assert doc["n_feasible"] > 0
    feas = [p for p in doc["placements"] if p["feasible"]]
    costs = [p["expected_cost_micros"] for p in feas]
    assert costs == sorted(costs)
    assert all(p["p_meet"] >= 0.99 for p in feas)
    assert all(p["mode"] in ("spot+od", "on-demand") for p in doc["placements"])


def test_plan_prices_a_warm_spare(tmp_path):
    """The plan's spare: not worth a second p5 for the run at the gang's
    own $/h of delay; kept when an hour of delay costs $100k, with its
    price and the downtime it saves, in the table's footer and --json."""
    r = spotrun("plan", "examples/jobs/h100x8.yaml", "--json")
    sp = json.loads(r.stdout)["spare"]
    assert sp["keep"] == 0 and not sp["fixed"], sp
    assert "does not pay" in sp["why"]
    assert sp["value_micros"] < sp["cost_micros"], sp
    with open(os.path.join(ROOT, "examples/jobs/h100x8.yaml")) as f:
        text = f.read()
    job = tmp_path / "spare.yaml"
    job.write_text(text.rstrip("\n") + "\n  delay_cost_per_hour: 100000\n")
    r = spotrun("plan", str(job), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    sp, top = doc["spare"], doc["placements"][0]
    assert sp["keep"] == 1 and "it pays" in sp["why"], sp
    assert sp["pool"]["region"] == top["region"], (sp, top)
    assert sp["delay_cost_per_h_micros"] == 100000 * 10 ** 6
    assert sp["value_micros"] > sp["cost_micros"] > 0, sp
    assert sp["downtime_saved_h"] > 0
    r = spotrun("plan", str(job))
    assert r.returncode == 0, r.stderr
    assert "warm spares: 1 (it pays" in r.stdout, r.stdout
    assert "of downtime, worth $" in r.stdout, r.stdout


def test_plan_critical_never_spot():
    r = spotrun("plan", "examples/jobs/critical.yaml", "--json")
    assert r.returncode == 0, r.stderr
    modes = {p["mode"] for p in json.loads(r.stdout)["placements"]}
    assert modes and modes <= {"reserved", "on-demand"}


def test_plan_bad_file_names_line():
    r = spotrun("plan", "examples/jobs/bad.yaml")
    assert r.returncode == 1
    assert "examples/jobs/bad.yaml:4: resources.accelerators" in r.stderr


def test_plan_says_which_rates_are_measured(tmp_path):
    """Each spot row names its rate's source, and the table ends with how
    many of the rows shown were measured and how many are defaults (issue
    28: a "1.00 default" rate must not pass for a forecast)."""
    def plan(infra, limit):
        job = tmp_path / (infra.replace("/", "_") + ".yaml")
        job.write_text("name: t\nresources: {accelerators: V100:1, use_spot: true,"
                       " infra: %s}\nrun: python3 train.py\n"
                       "spotrun: {work: 10h, deadline: 20h}\n" % infra)
        r = spotrun("plan", str(job), "--limit", str(limit))
        assert r.returncode == 0, r.stderr
        rows = [ln for ln in r.stdout.splitlines() if ln.split()[:1] and
                ln.split()[0].isdigit()]
        return rows, r.stdout.splitlines()[-1]
    rows, foot = plan("aws/us-west-2", 3)
    n = sum(" trace " in ln for ln in rows)
    assert n == len(rows) == 3, rows
    assert foot.startswith("spot rates shown: 3 measured (trace") and \
        "0 default" in foot, foot
    rows, foot = plan("azure/westus3", 2)
    assert all(" default " in ln for ln in rows), rows
    assert "0 measured" in foot and "%d default (no data: 1.00 per node per 24 h " \
        "assumed; their cost and p95 are not calibrated)" % len(rows) in foot, foot
