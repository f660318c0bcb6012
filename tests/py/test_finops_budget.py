"""Team and project budgets end to end (issue 34): spotrund reads
<state-dir>/finops.json; a team's month-end forecast crossing 80% and
100% of its budget sends ONE Slack message per level to the local
receiver however many budget ticks pass, and a launch that would push a
hard project budget past its month is refused with the numbers."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from finops_daemon import Daemon, bin_path
from test_finops_alerts import Receiver, SLACK_PATH, PD_KEY
from test_finops_daemon import chromium


def test_budget_alert_once_and_hard_refusal():
    tmp = tempfile.mkdtemp(prefix="finops-budget-")
    rx = Receiver()
    d = Daemon(tmp)
    try:
        fd = os.open(os.path.join(d.state, "alerts.json"),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"slack": {"webhook_url": rx.url + SLACK_PATH,
                                 "events": ["team_budget"]},
                       "pagerduty": {"routing_key": PD_KEY,
                                     "url": rx.url + "/v2/enqueue",
                                     "events": ["team_budget"]}}, f)
        with open(os.path.join(d.state, "finops.json"), "w") as f:
            json.dump({"control_plane": {"resource_id": "i-0cp",
                                         "hourly_price": "36"},
                       "budgets": [{"team": "ml", "monthly": "0.01"},
                                   {"project": "llama", "monthly": "0.01",
                                    "hard": True}]}, f)
        d.start()
        job = d.launch("budgeted", 4, extra_yaml="  team: ml\n")
        d.wait(lambda: len(rx.of(SLACK_PATH)) >= 2, 90, "the budget alerts")
        # ticks go on while the job runs to its end
        d.wait_state(job, ("SUCCEEDED",), timeout=120)
        d.wait(lambda: "budget crossed" in d.log_tail(200000), 30, "the log")
        slack = rx.of(SLACK_PATH)
        heads = [b["blocks"][0]["text"]["text"] for _, _, b in slack]
        assert sorted(heads) == sorted([
            "Budget forecast: team ml, %s, 80%%" % heads[0].split(", ")[1],
            "Budget forecast: team ml, %s, 100%%" % heads[0].split(", ")[1]]), heads
        for _, _, b in slack:
            assert re.match(r"team ml: month-end forecast \$\d+\.\d\d is \d+% of "
                            r"its \$0\.01 budget for \d{4}-\d\d", b["text"]), b["text"]
        pd = rx.of("/v2/enqueue")
        assert sorted(p[2]["dedup_key"].rsplit("/", 1)[1] for p in pd) == ["100", "80"]
        assert all(p[2]["event_action"] == "trigger" for p in pd)
        # the hard project budget refuses a launch, naming the numbers
        spec = ("name: over\nresources: {accelerators: V100:1, use_spot: true}\n"
                "run: 'true'\nspotrun:\n  work: 4h\n  team: ml\n"
                "  project: llama\n")
        status, body = d.write("POST", "/v1/jobs", {"spec_yaml": spec})
        assert status == 403, body
        msg = body["error"]["message"] if isinstance(body.get("error"), dict) \
            else str(body)
        assert re.search(r"project llama: hard budget \$0\.01 for \d{4}-\d\d: "
                         r"month-end forecast \$\d+\.\d\d \+ this job \$\d+\.\d\d "
                         r"\(4\.0 h x 1 node\(s\) at \$\d+\.\d\d/h on-demand\) = "
                         r"\$\d+\.\d\d, over by \$\d+\.\d\d", msg), msg
        # the report groups by team, with the control plane's cost shared
        # (a fixed window: the control plane's share grows by the second)
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
        status, rep = d.req("GET", "/v1/cost?by=team&until=" + until)
        assert status == 200 and [g["key"] for g in rep["groups"]] == ["ml"], \
            (rep, d.log_tail())
        ml = rep["groups"][0]
        assert ml["shared_cost_micros"] > 0
        assert ml["allocated_cost_micros"] == ml["cost_micros"] + ml["shared_cost_micros"]
        out = subprocess.run([bin_path("spotrun"), "cost", "--by", "team",
                              "--until", until, "--state-dir", d.state], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "shared costs split by GPU-hours" in out.stdout, out.stdout
        row = [ln.split() for ln in out.stdout.splitlines() if ln.startswith("ml ")]
        assert row and row[0][1:4] == ["$%.2f" % (ml[k] / 1e6) for k in (
            "cost_micros", "shared_cost_micros", "allocated_cost_micros")], out.stdout
        # the dashboard's Teams table
        r = chromium("--virtual-time-budget=8000", "--dump-dom",
                     "%s/#token=%s" % (d.url, d.token))
        m = re.search(r'<tr data-team="ml">(.*?)</tr>', r.stdout, re.S)
        assert m, r.stdout[-3000:]
        cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))
        assert cells[0] == "ml" and cells[2].startswith("$"), cells
        assert "split by GPU-hours" in r.stdout
    finally:
        d.stop()
        rx.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_token_defaults_label_jobs():
    """finops.json tokens: spotrund creates <state>/tokens/<name>.token
    (0600); a job launched with it carries the token's labels where its
    job file gives none."""
    from conftest import store_rows
    import urllib.request
    import urllib.error
    tmp = tempfile.mkdtemp(prefix="finops-tokens-")
    d = Daemon(tmp)
    try:
        with open(os.path.join(d.state, "finops.json"), "w") as f:
            json.dump({"tokens": [{"name": "ml", "team": "ml", "project": "llama",
                                   "cost_center": "CC-9"}]}, f)
        d.start()
        path = os.path.join(d.state, "tokens", "ml.token")
        assert os.stat(path).st_mode & 0o777 == 0o600
        with open(path) as f:
            tok = f.read().strip()
        assert tok and tok != d.token

        def post(spec, token, key=None):
            h = {"Content-Type": "application/json",
                 "Authorization": "Bearer " + token}
            if key:
                h["Idempotency-Key"] = key
            r = urllib.request.Request(
                d.url + "/v1/jobs", method="POST",
                data=json.dumps({"spec_yaml": spec}).encode(), headers=h)
            try:
                with urllib.request.urlopen(r, timeout=30) as f:
                    return f.status, json.loads(f.read())
            except urllib.error.HTTPError as e:
                return e.code, e.read()

        base = ("resources: {accelerators: V100:1, use_spot: true}\n"
                "run: 'true'\nspotrun:\n  work: 1h\n")
        st, a = post("name: a\n" + base, tok)
        assert st == 201, a
        st, b = post("name: b\n" + base + "  team: infra\n", tok)
        assert st == 201, b
        st, c = post("name: c\n" + base, d.token)
        assert st == 201, c
        st, _ = post("name: x\n" + base, "0" * 64)
        assert st == 401
        rows = dict((r[0], r[1:]) for r in store_rows(
            d.state, "SELECT name, team, project, cost_center FROM jobs"))
        assert rows["a"] == ("ml", "llama", "CC-9"), rows
        assert rows["b"] == ("infra", "llama", "CC-9"), rows
        assert rows["c"] == (None, None, None), rows
        # a retried create is the same job, even once a hard budget it
        # weighs on is full; a new one is refused
        st, k1 = post("name: k\n" + base, tok, key="create-k-1")
        assert st == 201, k1
        with open(os.path.join(d.state, "finops.json"), "w") as f:
            json.dump({"tokens": [{"name": "ml", "team": "ml", "project": "llama",
                                   "cost_center": "CC-9"}],
                       "budgets": [{"team": "ml", "monthly": "0.000001",
                                    "hard": True}]}, f)
        st, k2 = post("name: k\n" + base, tok, key="create-k-1")
        assert st == 200 and k2["job"]["id"] == k1["job"]["id"], k2
        st, k3 = post("name: k\n" + base, tok, key="create-k-2")
        assert st == 403, k3
        # the token is a log secret: never in the daemon's log
        assert tok not in d.log_tail(1 << 20)
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
