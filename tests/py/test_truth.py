"""What spotrun tells a user must be true (issue 28): the README's
training loop, launched as a job with nothing added for spotrun (no
status file, no PYTHONPATH), shows its steps, and after three
preemptions its preemptions, lost work, downtime and cost are the same
on every surface - the job view and `spotrun status`, `spotrun cost`,
the events, /metrics, the FOCUS export and the dashboard (headless
Chromium) - because each is computed once, in the ledger."""

import csv
import io
import json
import os
import re
import shutil
import subprocess
import tempfile

from finops_daemon import ROOT, Daemon, bin_path
from test_finops_daemon import chromium

CENT = 10000  # micro-dollars in a cent: what a table shows


def readme_loop():
    """The README's PyTorch training loop, as written, paced (a sleep per
    step) so that preemptions land while it trains.  Nothing else is
    added: it reports through the library alone."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"<!-- snippet: train -->\n```python\n(.*?)```", text, re.S)
    assert m, "the README's train snippet"
    code = m.group(1)
    pace = "    opt.zero_grad(); loss.backward(); opt.step()\n"
    assert pace in code
    return "import time\n" + code.replace(pace, pace + "    time.sleep(0.04)\n")


def metric(text, name, job):
    m = re.search(r"^%s\{job_id=\"%d\"\} (\S+)$" % (re.escape(name), job), text, re.M)
    assert m, name
    return float(m.group(1))


def cli_json(d, *args):
    out = subprocess.run([bin_path("spotrun")] + list(args) +
                         ["--json", "--state-dir", d.state],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_every_surface_agrees_through_three_preemptions():
    tmp = tempfile.mkdtemp(prefix="truth-")
    # no PYTHONPATH for the job: the agent must give it the package
    env_keep = os.environ.pop("PYTHONPATH", None)
    d = Daemon(tmp, "--time-scale", "60", "--notice-ms", "3000")
    try:
        d.start()
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        with open(os.path.join(work, "train.py"), "w") as f:
            f.write(readme_loop())
        spec = ("name: readme\n"
                "resources: {accelerators: V100:1, use_spot: true}\n"
                "run: /usr/bin/python3 train.py\n"
                "spotrun: {work: 2h, deadline: 48h}\n")
        status, body = d.write("POST", "/v1/jobs", {"spec_yaml": spec, "workdir": work})
        assert status == 201, body
        job = body["job"]["id"]
        # the local cloud made its interrupts/ folder: a user only touches
        # a file there (docs/distributed.md)
        assert os.stat(os.path.join(d.state, "interrupts")).st_mode & 0o777 == 0o700
        seen_steps = set()
        for _ in range(3):
            # preempt once the attempt trains (its steps show in status)
            def training():
                j = d.job(job)
                if j["state"] != "RUNNING" or j["step"] is None:
                    return None
                seen_steps.add(j["step"])
                live = [n for n in j.get("nodes", []) if n["state"] == "READY"] or \
                    [n for n in d.req("GET", "/v1/nodes?job=%d" % job)[1]["nodes"]
                     if n["state"] == "READY"]
                return live[0]["id"] if j["step"] > 0 and live else None
            node = d.wait(training, 120, "the job training")
            open(os.path.join(d.state, "interrupts", str(node)), "w").close()
            d.wait(lambda: d.job(job)["state"] != "RUNNING", 60, "the notice")
        j = d.wait_state(job, ("SUCCEEDED",), timeout=300)
        assert j["total_steps"] == 300 and j["step"] == 300, j
        assert any(0 < s < 300 for s in seen_steps), seen_steps

        # the one source: the job's ledger figures
        lg = j["ledger"]
        n_pre, lost_s, lost_c = lg["preemptions"], lg["lost_work_s"], lg["lost_work_micros"]
        cost, down = lg["cost_micros"], lg["downtime_s"]
        assert n_pre >= 3 and lg["recoveries"] >= 3, lg
        assert j["preemptions"] == n_pre and j["cost_micros"] == cost
        assert lost_s > 0 and lost_c > 0, lg

        # `spotrun status`, as a user reads it
        st = subprocess.run([bin_path("spotrun"), "status", str(job), "--state-dir",
                             d.state], capture_output=True, text=True, timeout=60).stdout
        assert "preemptions %d " % n_pre in st, st
        assert "$%.2f" % (cost / 1e6) in st and "$%.2f" % (lost_c / 1e6) in st, st

        # `spotrun cost`
        c = cli_json(d, "cost", "--job", str(job))["total"]
        assert (c["preemptions"], c["cost_micros"], c["lost_work_cost_micros"]) == \
            (n_pre, cost, lost_c)
        assert abs(c["lost_work_s"] - lost_s) < 1e-6 and abs(c["downtime_s"] - down) < 1e-6

        # the events: one "preempted" per preemption (per node the cloud
        # reclaimed: the three while training, and any replacement
        # reclaimed before it ran), the lost_work events add up to the
        # ledger's lost work
        evs = cli_json(d, "events", str(job))["events"]
        pre = [e["data"] for e in evs if e["type"] == "preempted"]
        assert len(pre) == n_pre
        assert all(x["phase"] in ("training", "booting") for x in pre), pre
        assert sum(x["phase"] == "training" for x in pre) >= 3, pre
        assert all(x["attempt"] is None for x in pre if x["phase"] == "booting")
        # the ledger's own log of them (the dashboard's timeline)
        _, tl = d.req("GET", "/v1/finops/timeline?job=%d&limit=1000" % job)
        assert sum(x["kind"] == "preemption" for x in tl["events"]) == n_pre
        lw = [e["data"] for e in evs if e["type"] == "lost_work"]
        assert len(lw) == lg["lost_attempts"]
        assert abs(sum(x["lost_work_s"] for x in lw) - lost_s) < 1e-3
        assert sum(x["lost_work_micros"] for x in lw) == lost_c
        assert not [e for e in evs if re.search(r"(?<![\w-])-1\b", e["message"])], \
            "unknown printed as -1"

        # /metrics
        _, text = d.req("GET", "/metrics", raw=True)
        text = text.decode()
        assert metric(text, "spotrun_preemptions_total", job) == n_pre
        assert abs(metric(text, "spotrun_job_lost_work_seconds_total", job) - lost_s) < 1e-3
        assert round(metric(text, "spotrun_job_lost_work_dollars_total", job) * 1e6) == lost_c
        assert round(metric(text, "spotrun_job_cost_dollars_total", job) * 1e6) == cost
        assert abs(metric(text, "spotrun_recovery_downtime_seconds_total", job) - down) < 1e-3

        # FOCUS: the billed rows add up to the cost
        status, raw = d.req("GET", "/v1/cost/focus?job=%d" % job, raw=True)
        assert status == 200
        rows = list(csv.DictReader(io.StringIO(raw.decode())))
        assert round(sum(float(r["BilledCost"]) for r in rows) * 1e6) == cost

        # the dashboard: the job's row and the preemption timeline
        url = "%s/#token=%s" % (d.url, d.token)
        r = chromium("--virtual-time-budget=8000", "--dump-dom", url)
        dom = r.stdout
        assert 'data-loaded="true"' in dom, r.stderr[-2000:]
        row = re.search(r'<tr data-job-id="%d"[^>]*>(.*?)</tr>' % job, dom, re.S)
        assert row, dom
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
        assert cells[5] == str(n_pre) and cells[6] == "$%.2f" % (cost / 1e6), cells
        assert dom.count('class="tl-preemption"') == n_pre
    finally:
        if env_keep is not None:
            os.environ["PYTHONPATH"] = env_keep
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
