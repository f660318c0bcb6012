"""FinOps against a running spotrund: Prometheus exposition checked by
promtool and scraped by a real Prometheus server, the dashboard rendered by
headless Chromium, and `spotrun cost` agreeing with the API and the FOCUS
export."""

import csv
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from decimal import Decimal

import pytest

from finops_daemon import BUILD, Daemon, bin_path, free_port, tool_env


@pytest.fixture(scope="module")
def daemon():
    tmp = tempfile.mkdtemp(prefix="finops-daemon-")
    d = Daemon(tmp).start()
    try:
        job = d.launch("finops-live", 600)
        d.wait_state(job, ("RUNNING",), timeout=60)
        d.wait_rows(job, 3)
        d.job_id = job
        yield d
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_metrics_pass_promtool(daemon):
    status, text = daemon.req("GET", "/metrics", raw=True)
    assert status == 200
    text = text.decode()
    r = subprocess.run(["promtool", "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=60, env=tool_env())
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr
    job = str(daemon.job_id)
    assert 'spotrun_job_cost_dollars_total{job_id="%s"}' % job in text
    assert 'spotrun_node_hourly_price_dollars{node=' in text
    assert 'spotrun_job_deadline_slack_seconds{job_id="%s"}' % job in text
    # the metrics route needs the admin token like every /v1 route
    status, _ = daemon.req("GET", "/metrics", auth=False, raw=True)
    assert status == 401


def prom_query(port, q):
    url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
    with urllib.request.urlopen(url, timeout=10) as f:
        return json.loads(f.read())


def test_prometheus_scrapes_spotrund(daemon, tmp_path):
    port = free_port()
    target = daemon.url.split("//", 1)[1]
    token_file = os.path.join(daemon.state, "api.token")
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n"
        "  - job_name: spotrund\n"
        "    metrics_path: /metrics\n"
        "    authorization:\n      type: Bearer\n      credentials_file: %s\n"
        "    static_configs:\n      - targets: ['%s']\n" % (token_file, target))
    log = open(tmp_path / "prometheus.log", "wb")
    prom = subprocess.Popen(
        ["prometheus", "--config.file=%s" % cfg,
         "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
         "--web.listen-address=127.0.0.1:%d" % port],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=tool_env())
    try:
        deadline = time.time() + 90
        result = []
        while time.time() < deadline:
            assert prom.poll() is None, (tmp_path / "prometheus.log").read_text()[-3000:]
            try:
                r = prom_query(port, 'spotrun_job_cost_dollars_total{job_id="%d"}'
                               % daemon.job_id)
                result = r["data"]["result"]
                if result and float(result[0]["value"][1]) > 0:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert result, "Prometheus never returned spotrun_job_cost_dollars_total:\n" + \
            (tmp_path / "prometheus.log").read_text()[-3000:]
        assert result[0]["metric"]["job_id"] == str(daemon.job_id)
        assert result[0]["metric"]["__name__"] == "spotrun_job_cost_dollars_total"
        assert float(result[0]["value"][1]) > 0
        # the scrape itself was healthy
        up = prom_query(port, 'up{job="spotrund"}')["data"]["result"]
        assert up and up[0]["value"][1] == "1"
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=20)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
        log.close()


def chromium(*args, timeout=120):
    user_dir = tempfile.mkdtemp(prefix="finops-chromium-")
    try:
        return subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update",
             "--no-first-run", "--disable-sync", "--user-data-dir=" + user_dir]
            + list(args), capture_output=True, text=True, timeout=timeout,
            env=tool_env())
    finally:
        shutil.rmtree(user_dir, ignore_errors=True)


def test_dashboard_shows_running_job(daemon):
    status, html = daemon.req("GET", "/", auth=False, raw=True)
    assert status == 200 and b"<canvas id=\"costchart\"" in html
    # nothing is fetched from another origin: every src/href is local
    for ref in (b'src="http', b'href="http', b"//cdn", b"@import"):
        assert ref not in html
    # the URL a user gets from `spotrun dashboard`
    out = subprocess.run([bin_path("spotrun"), "dashboard", "--state-dir", daemon.state],
                         capture_output=True, text=True, timeout=30)
    url = out.stdout.strip()
    assert out.returncode == 0 and url == "%s/#token=%s" % (daemon.url, daemon.token)
    r = chromium("--virtual-time-budget=8000", "--dump-dom", url)
    dom = r.stdout
    assert 'data-loaded="true"' in dom, r.stderr[-2000:]
    assert 'data-job-id="%d" data-state="RUNNING"' % daemon.job_id in dom
    assert '<td class="job-name">finops-live</td>' in dom
    assert 'class="state state-RUNNING">RUNNING<' in dom
    # a live node row (its job by id and name) and a non-zero spend card
    assert 'data-state="READY"' in dom
    assert '<td>%d finops-live</td>' % daemon.job_id in dom
    assert '<div class="value" id="t-cost">$0.0000</div>' not in dom
    shot_dir = os.path.join(BUILD, "finops")
    os.makedirs(shot_dir, exist_ok=True)
    shot = os.path.join(shot_dir, "dashboard.png")
    if os.path.exists(shot):
        os.unlink(shot)
    chromium("--virtual-time-budget=8000", "--window-size=1280,1000",
             "--screenshot=" + shot, url)
    with open(shot, "rb") as f:
        png = f.read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000


def test_dashboard_without_token_says_so(daemon):
    r = chromium("--virtual-time-budget=3000", "--dump-dom", daemon.url + "/")
    assert "no token" in r.stdout


def micros(s):
    return int(Decimal(s) * 1000000)


def test_cost_cli_matches_api_and_focus(daemon, tmp_path):
    # a fixed window that no row can still be added to
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    # rows are billed each second, in order: once one starts at or after
    # `until`, every row before it has landed
    daemon.wait(lambda: daemon.req("GET", "/v1/cost?job=%d&since=%s" % (
        daemon.job_id, until))[1]["total"]["rows"] > 0, 60,
        "a ledger row after %s" % until)
    spotrun = bin_path("spotrun")
    base = [spotrun, "cost", "--state-dir", daemon.state, "--until", until]
    out = subprocess.run(base + ["--json", "--by", "job"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    cli = json.loads(out.stdout)
    _, api = daemon.req("GET", "/v1/cost?by=job&until=" + until)

    def same(a, b):  # integers exactly; floats as printed by two encoders
        assert a.keys() == b.keys()
        for k in a:
            if isinstance(a[k], float) or isinstance(b[k], float):
                assert a[k] == pytest.approx(b[k], rel=1e-9, abs=1e-9), k
            else:
                assert a[k] == b[k], k

    same(cli["total"], api["total"])
    # the table: SAVED (on-demand for the hours used) first, VS-PLAN
    # second, money as dollars and cents
    out = subprocess.run(base + ["--by", "job"], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, NO_COLOR="1"))
    assert out.returncode == 0, out.stderr
    head = out.stdout.splitlines()[2].split()
    assert head[:5] == ["KEY", "COST", "OD-FOR-USED", "SAVED", "SAVED%"], head
    assert head.index("VS-PLAN") > head.index("SAVED")
    total = [ln for ln in out.stdout.splitlines() if ln.startswith("TOTAL")][0].split()
    t = cli["total"]
    assert total[1:4] == ["$%.2f" % (t[k] / 1e6) for k in (
        "cost_micros", "list_cost_micros", "savings_vs_list_micros")], total
    assert len(cli["groups"]) == len(api["groups"])
    for g, h in zip(cli["groups"], api["groups"]):
        same(g, h)
    focus = tmp_path / "focus.csv"
    out = subprocess.run(base + ["--focus", str(focus)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    raw = focus.read_bytes()
    assert raw.endswith(b"\r\n")  # RFC 4180 line ends
    rows = list(csv.DictReader(io.StringIO(raw.decode(), newline="")))
    assert len(rows) == cli["total"]["rows"] > 0
    assert sum(micros(r["BilledCost"]) for r in rows) == cli["total"]["cost_micros"]
    assert sum(micros(r["EffectiveCost"]) for r in rows) == cli["total"]["cost_micros"]
    assert sum(micros(r["ListCost"]) for r in rows) == cli["total"]["list_cost_micros"]
    assert sum(micros(r["x_IdleCost"]) for r in rows) == cli["total"]["idle_cost_micros"]
    # and the API serves the same CSV
    status, text = daemon.req("GET", "/v1/cost/focus?until=" + until, raw=True)
    assert status == 200 and text == raw
    # every row belongs to our job and is dated like FOCUS wants
    for r in rows:
        assert r["x_JobId"] == str(daemon.job_id)
        assert r["ChargePeriodStart"].endswith("Z") and len(r["ChargePeriodStart"]) == 20
