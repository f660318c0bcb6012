"""SkyPilot task files, `spotrun gpus`, name checks and the small CLI
fixes of issue 14 / issue 9, through the `spotrun` binary."""
import json
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKY = os.path.join(ROOT, "tests", "skypilot")


def spotrun(*args):
    return subprocess.run(["spotrun", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_skypilot_examples_parse_and_plan():
    for name in ("minimal", "multi_node", "managed_job", "every_key"):
        r = spotrun("plan", os.path.join(SKY, name + ".yaml"), "--work-hours=10",
                    "--json")
        assert r.returncode == 0, (name, r.stderr)
        doc = json.loads(r.stdout)
        assert doc["n_feasible"] > 0, name


def test_skypilot_file_without_work_says_how():
    r = spotrun("plan", os.path.join(SKY, "minimal.yaml"))
    assert r.returncode == 1
    assert "spotrun.work: required for planning" in r.stderr
    assert "--work-hours" in r.stderr


def test_unsupported_keys_all_reported_with_hints():
    r = spotrun("plan", os.path.join(SKY, "unsupported.yaml"), "--work-hours", "5")
    assert r.returncode == 1
    errs = [l for l in r.stderr.splitlines()
            if re.search(r"unsupported\.yaml:\d+: ", l) and "note:" not in l]
    assert len(errs) == 10, r.stderr
    assert "10 problems in" in r.stderr
    assert any("instance_type: not supported; name the GPU with accelerators" in l
               for l in errs)


def test_plan_validation_exit_2():
    cases = [
        ("resources: {accelerators: H1000:8}\nspotrun: {work: 1h}\n",
         "unknown GPU 'H1000'; nearest: H100"),
        ("resources: {accelerators: H100:8}\nspotrun: {work: 60h, deadline: 52h}\n",
         "cannot finish within the 52.0h deadline"),
        ("resources: {accelerators: H100:8, infra: aws/us-east-1/us-east-1q}\n"
         "spotrun: {work: 1h}\n", "unknown zone 'us-east-1q'"),
    ]
    for i, (y, msg) in enumerate(cases):
        path = os.path.join(ROOT, "build", "tmp_cli_sky_%d_%d.yaml" % (os.getpid(), i))
        with open(path, "w") as f:
            f.write(y)
        try:
            r = spotrun("plan", path)
        finally:
            os.unlink(path)
        assert r.returncode == 2, (y, r.stderr)
        assert msg in r.stderr, r.stderr


def test_zone_names_match_zone_ids():
    a = spotrun("catalog", "--gpu", "V100:1", "--zone", "us-west-2a", "--json")
    b = spotrun("catalog", "--gpu", "V100:1", "--zone", "usw2-az1", "--json")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    offers = json.loads(a.stdout)["offerings"]
    assert offers and offers == json.loads(b.stdout)["offerings"]


def test_catalog_unknown_names_exit_2():
    for args, msg in ((("--cloud", "oracle"), "unknown cloud 'oracle'; the catalog has: aws"),
                      (("--gpu", "H100:3"), "H100:3 is not offered"),
                      (("--region", "us-est-1"), "nearest: us-east-1"),
                      (("--zone", "us-east-1z"), "unknown zone 'us-east-1z'")):
        r = spotrun("catalog", *args)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)


def test_catalog_columns_stay_aligned():
    r = spotrun("catalog", "--gpu", "V100:1", "--spot")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    col = lines[0].index("ONDEMAND")
    longest = max(lines[1:], key=lambda l: len(l.split()[1]))
    # the on-demand price ends where the header's ONDEMAND ends
    assert longest[col:col + 8].strip() == longest.split()[5]


def test_preemption_rates_differ_with_source():
    r = spotrun("catalog", "--gpu", "V100", "--cloud", "aws", "--spot", "--json")
    offers = json.loads(r.stdout)["offerings"]
    rates = {round(o["preempt_per_24h"], 3) for o in offers}
    assert len(rates) > 3
    traced = [o for o in offers if o["hazard_source"] == "trace"]
    assert traced and all("cbl/" in o["hazard_from"] for o in traced)
    r = spotrun("catalog", "--gpu", "V100:1", "--zone", "us-west-2a")
    assert "(trace)" in r.stdout and "cbl/availability" in r.stdout


def test_gpus_overview():
    r = spotrun("gpus", "H100:8", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["gpus"]
    assert {"aws", "gcp"} <= {x["cloud"] for x in rows}
    aws = next(x for x in rows if x["cloud"] == "aws")
    assert aws["count"] == 8 and aws["spot"]["price_per_h_micros"] > 0
    assert aws["spot"]["region"] and aws["ondemand"]["instance_type"] == "p5.48xlarge"
    r = spotrun("gpus", "--cloud", "lambda")
    assert r.returncode == 0 and "H100" in r.stdout
    r = spotrun("gpus", "H1000")
    assert r.returncode == 2 and "nearest: H100" in r.stderr


def test_version_and_equals_form():
    r = spotrun("--version")
    assert r.returncode == 0
    assert re.match(r"spotrun \d+\.\d+\.\d+ \(commit \S+, libspotckpt ABI \d+\)",
                    r.stdout), r.stdout
    r = spotrun("version", "--json")
    doc = json.loads(r.stdout)
    assert doc["libspotckpt_abi"] >= 1 and doc["commit"]
    r = spotrun("catalog", "--gpu=H100:8", "--limit=2", "--json")
    assert r.returncode == 0 and len(json.loads(r.stdout)["offerings"]) == 2


def test_p_target_prints_short():
    r = spotrun("plan", "examples/jobs/demo.yaml", "--json")
    assert r.returncode == 0, r.stderr
    assert '"p_target":0.99,' in r.stdout


def test_risk_follows_the_pool_rate():
    path = os.path.join(ROOT, "build", "tmp_cli_risk_%d.yaml" % os.getpid())
    with open(path, "w") as f:
        f.write("resources:\n  accelerators: V100:8\n  infra: aws/us-west-2\n"
                "spotrun: {work: 20h, deadline: 26h, criticality: best-effort,"
                " checkpoint: {size: 10GB}}\n")
    try:
        r = spotrun("plan", path, "--all", "--json")
    finally:
        os.unlink(path)
    assert r.returncode == 0, r.stderr
    by_zone = {p["zone"]: p for p in json.loads(r.stdout)["placements"]}
    # us-west-2b (usw2-az2) p3.16xlarge: 31.7 preemptions / 24 h in the trace
    hot = by_zone["usw2-az2"]
    assert hot["hazard_source"] == "trace" and hot["risk"] == "high"
    assert hot["p_meet"] < 0.99 and not hot["feasible"]
    assert by_zone["usw2-az3"]["risk"] == "low"


def test_launch_asks_on_a_terminal():
    from conftest import run_on_pty
    rc, text = run_on_pty(["spotrun", "launch",
                           os.path.join(ROOT, "examples", "demo", "job.yaml")],
                          env=dict(os.environ, SPOTRUN_STATE_DIR="/nonexistent-spotrun"),
                          cwd=ROOT, answer_after="[Y/n]", answer=b"n\n")
    assert rc == 1, text
    assert "pool:" in text and "expected:" in text and "p95" in text, text
    assert "Launch? [Y/n]" in text and "not launched" in text, text


def test_launch_checks_names_before_submitting():
    path = os.path.join(ROOT, "build", "tmp_cli_launch_%d.yaml" % os.getpid())
    with open(path, "w") as f:
        f.write("resources: {accelerators: H100:3}\nrun: 'true'\nspotrun: {work: 1h}\n")
    try:
        for extra in ([], ["-d", "--json"]):
            r = subprocess.run(["spotrun", "launch", path, "-y"] + extra, cwd=ROOT,
                               capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, SPOTRUN_STATE_DIR="/nonexistent-spotrun"))
            assert r.returncode == 2, (extra, r.stdout, r.stderr)
            assert "H100:3 is not offered" in r.stderr
            if extra:
                assert r.stdout == ""
    finally:
        os.unlink(path)
