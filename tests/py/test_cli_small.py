"""Issue 14's "small things": a busy port names the port, `cost --focus -`
writes to stdout, one money precision in tables, the demo report wraps
placements at word boundaries, --work-hours=10, `spotrun --version`."""
import importlib.machinery
import importlib.util
import os
import socket
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SPOTRUN_BUILD", os.path.join(ROOT, "build"))


def test_busy_port_is_named():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([os.path.join(BUILD, "bin", "spotrund"), "--listen",
                            "127.0.0.1:%d" % port, "--state-dir", d, "--data-dir",
                            os.path.join(ROOT, "data")],
                           capture_output=True, text=True, timeout=60)
    s.close()
    assert p.returncode != 0
    assert "127.0.0.1:%d: Address already in use" % port in p.stderr, p.stderr
    assert "port 0" not in p.stderr


def test_focus_dash_is_stdout():
    spotrun = os.path.join(BUILD, "bin", "spotrun")
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, SPOTRUN_STATE_DIR=os.path.join(d, "state"))
        env.pop("SPOTRUN_API", None)
        subprocess.run([spotrun, "daemon", "start", "--listen", "127.0.0.1:0", "--",
                        "--data-dir", os.path.join(ROOT, "data")],
                       env=env, check=True, capture_output=True, timeout=60)
        try:
            p = subprocess.run([spotrun, "cost", "--focus", "-"], env=env,
                               capture_output=True, text=True, timeout=60, cwd=d)
        finally:
            subprocess.run([spotrun, "daemon", "stop"], env=env,
                           capture_output=True, timeout=60)
        assert not os.path.exists(os.path.join(d, "-"))
    assert p.returncode == 0, p.stderr
    header = p.stdout.splitlines()[0]
    assert "BilledCost" in header and "ChargePeriodStart" in header
    assert "wrote 0 FOCUS rows to stdout" in p.stderr


def test_demo_report_wraps_at_words():
    loader = importlib.machinery.SourceFileLoader("spotrun_demo",
                                                  os.path.join(ROOT, "scripts", "demo"))
    spec = importlib.util.spec_from_loader("spotrun_demo", loader)
    demo = importlib.util.module_from_spec(spec)
    loader.exec_module(demo)
    msg = ("spot aws/us-east-1/use1-az2 p3.2xlarge at $0.4800/h chosen by policy "
           "spotrun: cheapest pool with capacity, deadline slack 88.2h of 120.0h, "
           "work left 29.5h")
    lines = "\n".join(demo.placement_lines([msg])).split("\n")
    assert len(lines) > 1
    words = msg.split()
    assert " ".join(w for l in lines for w in l.split()) == " ".join(words)
    assert all(len(l.strip()) <= 96 for l in lines)


def test_equals_form_reaches_every_command():
    trace = os.path.join(ROOT, "data", "traces", "cbl", "availability", "1-node",
                         "aws-10-26-2022", "us-west-2a_v100_1.json")
    p = subprocess.run([os.path.join(BUILD, "bin", "spotrun"), "sim", "--trace=" + trace,
                        "--work-hours=10", "--deadline-hours=14", "--restart-hours=0.2",
                        "--windows=2", "--policy=od", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.lstrip().startswith("{")
