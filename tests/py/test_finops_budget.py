"""Team and project budgets end to end (issue 34): spotrund reads
<state-dir>/finops.json; a team's month-end forecast crossing 80% and
100% of its budget sends ONE Slack message per level to the local
receiver however many budget ticks pass, and a launch that would push a
hard project budget past its month is refused with the numbers."""

import json
import os
import re
import shutil
import tempfile

from finops_daemon import Daemon
from test_finops_alerts import Receiver, SLACK_PATH, PD_KEY


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
            json.dump({"budgets": [{"team": "ml", "monthly": "0.01"},
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
        status, body = d.req("POST", "/v1/jobs", {"spec_yaml": spec})
        assert status == 403, body
        msg = body["error"]["message"] if isinstance(body.get("error"), dict) \
            else str(body)
        assert re.search(r"project llama: hard budget \$0\.01 for \d{4}-\d\d: "
                         r"month-end forecast \$\d+\.\d\d \+ this job \$\d+\.\d\d "
                         r"\(4\.0 h x 1 node\(s\) at \$\d+\.\d\d/h on-demand\) = "
                         r"\$\d+\.\d\d, over by \$\d+\.\d\d", msg), msg
        # and the report groups by team
        status, rep = d.req("GET", "/v1/cost?by=team")
        assert status == 200 and [g["key"] for g in rep["groups"]] == ["ml"], rep
    finally:
        d.stop()
        rx.close()
        shutil.rmtree(tmp, ignore_errors=True)
