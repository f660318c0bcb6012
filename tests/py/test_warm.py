"""python/spotrun/warm.py, a warm workload process (issue 33): a server
started as a node's setup does preloads once; each `run` hands it the
script, its argv, environment, cwd and stdio, and a forked child runs the
script as __main__.  The client passes on the child's exit code and the
stop signals it gets; a killed client takes the child's process group
with it; without a server the script starts cold.  No torch here (the
preload is a small module; tests/py/test_dist_gang.py runs the gang
warm with torch)."""

import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PY = sys.executable
pytestmark = pytest.mark.skipif(
    os.environ.get("SPOTRUN_CHECK_MODE") == "asan",
    reason="Python only, no C code: the plain pass runs it")

SCRIPT = r"""
import os, signal, sys, time
import warmmod
print("ready pid=%d warm=%s loaded=%s x=%s argv=%s cwd=%s" % (
    os.getpid(), os.environ.get("SPOTRUN_WARM"), warmmod.LOADED,
    os.environ.get("X"), sys.argv[1:], os.getcwd()), flush=True)
print("to stderr", file=sys.stderr, flush=True)
if sys.argv[1] == "term":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))
    print("handler set", flush=True)
    time.sleep(600)
if sys.argv[1] == "hang":
    time.sleep(600)
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def node(tmp_path):
    """A node dir with a warm server preloading warmmod; its pid."""
    (tmp_path / "warmmod.py").write_text(
        "import os\nLOADED = os.getpid()\n")
    (tmp_path / "s.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               SPOTRUN_NODE_DIR=str(tmp_path))
    env.pop("SPOTRUN_WARM_SOCKET", None)
    subprocess.run([PY, "-m", "spotrun.warm", "start", "--preload",
                    "warmmod"], cwd=tmp_path, env=env, check=True,
                   timeout=120)
    log = (tmp_path / "warm.log").read_text()
    pid = int(log.split("pid ")[1].split()[0])
    yield tmp_path, env, pid
    os.kill(pid, signal.SIGTERM)


def gone(pid):
    """pid has exited (no process, or a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] == "Z"
    except OSError:
        return True


def run(env, cwd, *args, **kw):
    return subprocess.Popen([PY, "-m", "spotrun.warm", "run", "s.py"] +
                            list(args), cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **kw)


def test_warm_child_exit_env_stdio_signals_and_cold(node):
    d, env, server = node
    # exit code, environment, argv, cwd, stdout and stderr of a warm run
    p = run(dict(env, X="42"), d, "3")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 3, (out, err)
    assert "warm=1 loaded=%d x=42 argv=['3'] cwd=%s" % (server, d) in out, \
        out
    assert "to stderr" in err, err
    # a stop signal to the client reaches the script's handler
    p = run(env, d, "term")
    assert p.stdout.readline().startswith("ready")
    assert p.stdout.readline() == "handler set\n"
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=120) == 7
    # a killed client: the child's process group goes too
    p = run(env, d, "hang")
    child = int(p.stdout.readline().split("pid=")[1].split()[0])
    p.kill()
    p.wait(timeout=120)
    end = time.monotonic() + 120
    while not gone(child):
        assert time.monotonic() < end, "the warm child outlived its client"
        time.sleep(0.05)
    # the server itself serves on
    os.kill(server, 0)
    # without a server: a cold start
    p = run(dict(env, SPOTRUN_NODE_DIR=str(d / "none")), d, "4")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 4, (out, err)
    assert "warm=None" in out and "loaded=%d" % p.pid in out, out
    assert "no warm server" in err and "starting s.py cold" in err, err
    # a second start finds the server there and leaves it
    r = subprocess.run([PY, "-m", "spotrun.warm", "start"], cwd=d, env=env,
                       stdout=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0 and "already serves" in r.stdout, r.stdout
