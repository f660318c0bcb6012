"""`spotrun cost --focus` on a live daemon writes FOCUS 1.3's datasets,
and the checker (tests/unit/focus_check.h, as the helper
build/tests/helpers/focus_check) passes every exported row: two teams'
jobs, the control plane's cost and an idle reserved commitment split
over them (issue 34)."""

import csv
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from finops_daemon import Daemon, bin_path, BUILD


def test_focus13_export_passes_the_checker():
    tmp = tempfile.mkdtemp(prefix="finops-focus13-")
    d = Daemon(tmp)
    try:
        with open(os.path.join(d.state, "finops.json"), "w") as f:
            json.dump({"control_plane": {"resource_id": "i-0cp", "name": "spotrund",
                                         "hourly_price": "0.50"},
                       "commitments": [{"id": "ri-1", "provider": "local",
                                        "region": "local-1", "instance_type": "x8",
                                        "gpus": 8, "count": 1, "hourly_price": "3",
                                        "start": "2026-01-01", "end": "2028-01-01",
                                        "description": "reserved x8"}]}, f)
        d.start()
        a = d.launch("ta", 2, extra_yaml="  team: a\n")
        b = d.launch("tb", 2, extra_yaml="  team: b\n  project: p\n")
        for j in (a, b):
            d.wait_state(j, ("SUCCEEDED",), timeout=120)
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
        out = os.path.join(tmp, "out.csv")
        r = subprocess.run([bin_path("spotrun"), "cost", "--focus", out, "--until",
                            until, "--state-dir", d.state], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        cc = os.path.join(tmp, "out-contract-commitment.csv")
        meta = os.path.join(tmp, "out-metadata.json")
        chk = subprocess.run([os.path.join(BUILD, "tests", "helpers", "focus_check"),
                              out, cc], capture_output=True, text=True, timeout=60)
        assert chk.returncode == 0, chk.stderr
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
        assert chk.stdout.strip() == "ok %d rows" % len(rows)
        # the checker has teeth: a value outside the allowed ones, and an
        # origin charge whose ratios no longer sum to 1, are caught
        with open(out, newline="") as f:
            text = f.read()
        bad = os.path.join(tmp, "bad.csv")
        for old, new, want in (
                (r",Usage-Based,", ",Sometimes,", "[FOCUS ChargeFrequency"),
                (r'""AllocatedRatio"":[0-9.e-]+', '""AllocatedRatio"":0.999',
                 "do not sum to 1")):
            with open(bad, "w", newline="") as f:
                f.write(re.sub(old, new, text, count=1))
            c = subprocess.run([os.path.join(BUILD, "tests", "helpers", "focus_check"),
                                bad, cc], capture_output=True, text=True, timeout=60)
            assert c.returncode == 1 and want in c.stderr, (c.stdout, c.stderr)
        alloc = [x for x in rows if x["AllocatedMethodId"]]
        # two origin charges (control plane, idle reserved), split over both jobs
        assert {x["ResourceId"] for x in alloc} == {"i-0cp", "ri-1"}
        assert {x["AllocatedResourceId"] for x in alloc} == {"job-%d" % a, "job-%d" % b}
        assert all(x["AllocatedMethodId"] == "spotrun-gpu-hours" for x in alloc)
        # the report's shared costs are the allocated rows' sum
        _, rep = d.req("GET", "/v1/cost?by=team&until=" + until)
        assert rep["total"]["shared_cost_micros"] == sum(
            round(float(x["BilledCost"]) * 1e6) for x in alloc)
        with open(cc, newline="") as f:
            ccrows = list(csv.DictReader(f))
        assert [x["ContractCommitmentId"] for x in ccrows] == ["ri-1"]
        with open(meta) as f:
            m = json.load(f)
        assert m["FocusVersion"] == "1.3"
        cu = [x for x in m["Datasets"] if x["DatasetName"] == "CostAndUsage"][0]
        assert cu["RowCount"] == len(rows)
        assert isinstance(cu["DatasetCompleteness"]["Complete"], bool)
        # 1.2 stays behind --focus-version
        old = os.path.join(tmp, "old.csv")
        r = subprocess.run([bin_path("spotrun"), "cost", "--focus", old,
                            "--focus-version", "1.2", "--state-dir", d.state],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        with open(old) as f:
            head = f.readline()
        assert "ProviderName" in head and "AllocatedMethodId" not in head
        assert not os.path.exists(os.path.join(tmp, "old-metadata.json"))
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
