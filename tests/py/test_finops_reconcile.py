"""`spotrun cost reconcile` against a bill with real-looking differences
(issue 34): the bill's compute lines at another price per second than the
ledger's, a disk line and egress tagged to the node, a credit, one leaked
instance and one line of something else.  The report must explain every
micro-dollar of the difference, part by part, and name the leak."""

import csv
import io
import json
import os
import shutil
import subprocess
import tempfile

from finops_daemon import Daemon, bin_path

COLS = ["BilledCost", "ChargeCategory", "ChargePeriodStart", "ChargePeriodEnd",
        "ResourceId", "ServiceCategory", "ServiceProviderName", "Tags"]


def micros(s):
    neg = s.startswith("-")
    whole, _, frac = s.lstrip("-").partition(".")
    v = int(whole) * 1000000 + int((frac + "000000")[:6])
    return -v if neg else v


def usd(m):
    return ("-" if m < 0 else "") + "%d.%06d" % divmod(abs(m), 1000000)


def test_reconcile_explains_every_dollar_and_names_the_leak():
    tmp = tempfile.mkdtemp(prefix="finops-reconcile-")
    d = Daemon(tmp)
    try:
        d.start()
        job = d.launch("billed", 3)
        d.wait_state(job, ("SUCCEEDED",), timeout=120)
        _, nodes = d.req("GET", "/v1/nodes?all=1")
        inst = {n["id"]: n["instance_id"] for n in nodes["nodes"]}
        assert inst and all(inst.values()), nodes
        status, raw = d.req("GET", "/v1/cost/focus?version=1.2", raw=True)
        assert status == 200
        rows = list(csv.DictReader(io.StringIO(raw.decode())))
        assert rows
        bill, price, node = [], 0, None
        for i, r in enumerate(rows):
            node = int(r["x_NodeId"])
            # the cloud's price per second differs from the ledger's
            delta = 1370 if i % 2 else -420
            price += delta
            bill.append([usd(micros(r["BilledCost"]) + delta), "Usage",
                         r["ChargePeriodStart"], r["ChargePeriodEnd"], inst[node],
                         "Compute", "spotrun local cloud",
                         json.dumps({"spotrun/node-id": node, "spotrun/job-id": job})])
        day = rows[0]["ChargePeriodStart"]
        end = rows[-1]["ChargePeriodEnd"]
        tag = json.dumps({"spotrun/node-id": node})
        bill += [
            ["0.370000", "Usage", day, end, "vol-%d" % node, "Storage",
             "spotrun local cloud", tag],
            ["0.052000", "Usage", day, end, "nat-%d" % node, "Networking",
             "spotrun local cloud", tag],
            ["-0.200000", "Credit", day, end, inst[node], "Compute",
             "spotrun local cloud", tag],
            # an instance spotrun launched (its tags) and never recorded
            ["1.230000", "Usage", day, end, "local-99999-1", "Compute",
             "spotrun local cloud", json.dumps({"spotrun/job-id": job})],
            # not spotrun's at all
            ["5.000000", "Usage", day, end, "i-someone-else", "Compute",
             "spotrun local cloud", "{}"],
        ]
        path = os.path.join(tmp, "bill.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\r\n")
            w.writerow(COLS)
            w.writerows(bill)
        cmd = [bin_path("spotrun"), "cost", "reconcile", path, "--state-dir", d.state]
        out = subprocess.run(cmd + ["--json"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 3, out.stderr  # a leak
        rep = json.loads(out.stdout)
        ledger = sum(micros(r["BilledCost"]) for r in rows)
        assert rep["ledger_micros"] == ledger
        assert rep["difference_micros"] == rep["bill_micros"] - ledger
        # 100% of the difference, part by part
        assert rep["explained_micros"] == rep["difference_micros"]
        assert rep["parts_micros"] == {"price": price, "disk": 370000,
                                       "egress": 52000, "credit": -200000,
                                       "other": 0}
        assert rep["leaked_micros"] == 1230000
        assert [k["resource_id"] for k in rep["leaks"]] == ["local-99999-1"]
        assert rep["foreign_lines"] == 1 and rep["foreign_micros"] == 5000000
        assert {c["job"] for c in rep["cells"]} == {job}
        table = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert table.returncode == 3
        assert "LEAK: local-99999-1" in table.stdout, table.stdout
        # a broken bill is refused, naming the file and line
        with open(path, "a") as f:
            f.write("lots,Usage,%s,%s,x,Compute,y,{}\r\n" % (day, end))
        bad = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 1
        assert "bill.csv:%d: BilledCost: 'lots'" % (len(bill) + 2) in bad.stderr, bad.stderr
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
