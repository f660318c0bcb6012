"""Shared fixtures for the Python binding tests.

scripts/run-tests sets SPOTRUN_LIB (the libspotckpt.so under test),
SPOTRUN_BUILD and SPOTRUN_CHECK_MODE (plain | asan; under asan the
interpreter runs with libasan preloaded and sizes are cut down).
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "python")
if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)

ASAN = os.environ.get("SPOTRUN_CHECK_MODE") == "asan"
PYTHON = "/usr/bin/python3"


def child_env(**extra):
    """Environment for a child interpreter: the package on PYTHONPATH, the
    same library, no inherited preemption settings."""
    env = dict(os.environ)
    for k in ("SPOTRUN_NOTICE_FILE", "SPOTRUN_GRACE_S", "SPOTRUN_CKPT_DIR",
              "SPOTRUN_PREEMPT_SIGNAL", "SPOTRUN_STATUS_FILE",
              "SPOTRUN_STEPS", "SPOTRUN_CKPT_EVERY", "SPOTRUN_STEP_SLEEP_MS",
              "SPOTRUN_RESULT_FILE", "SPOTRUN_SEED"):
        env.pop(k, None)
    env["PYTHONPATH"] = PYDIR + os.pathsep + env.get("PYTHONPATH", "")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_train(args, **env):
    """Start examples/train.py; stdout is a pipe of text lines."""
    return subprocess.Popen(
        [PYTHON, os.path.join(ROOT, "examples", "train.py")] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=child_env(**env), cwd=ROOT)


def read_until(proc, prefix, timeout=60):
    """Read proc's stdout lines until one starts with prefix; return it.
    Fails the test (with the child's stderr) on EOF."""
    import selectors
    import time
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    end = time.monotonic() + timeout
    seen = []
    while time.monotonic() < end:
        if not sel.select(timeout=max(0.0, end - time.monotonic())):
            break
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith(prefix):
            return line.strip()
    proc.kill()
    _, err = proc.communicate()
    pytest.fail("no line starting with %r from train.py; stdout:\n%s\n"
                "stderr:\n%s" % (prefix, "".join(seen), err[-3000:]))


@pytest.fixture(scope="session")
def lib():
    """The library under test, loaded (fails clearly when it is not
    built)."""
    from spotrun import _lib
    return _lib.lib()


def run_on_pty(argv, env=None, cwd=None, answer_after=None, answer=b"",
               timeout=90):
    """Run argv with stdin, stdout and stderr on a pseudo-terminal; when
    the output shows `answer_after`, type `answer`.  Returns (exit status,
    everything written, decoded)."""
    import pty
    import select
    import time
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=slave, stdout=slave,
                            stderr=slave)
    os.close(slave)
    out, answered = b"", answer_after is None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: every writer is gone
                break
            if not chunk:
                break
            out += chunk
            if not answered and answer_after.encode() in out:
                os.write(master, answer)
                answered = True
        elif proc.poll() is not None:
            break
    os.close(master)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    return rc, out.decode(errors="replace")


# ---- the control plane on PostgreSQL (scripts/run-tests: the asan and
# pg passes) ----
# SPOTRUN_CHECK_STORE=postgresql: one real PostgreSQL 15 server for the
# session (tests/py/pg_server.py) and a fresh database per test, handed to
# every spotrund the test starts through $SPOTRUN_STORE.
PG_MODE = os.environ.get("SPOTRUN_CHECK_STORE") == "postgresql"


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server (fails, with the server's log, when
    it cannot start)."""
    from pg_server import PgServer, PgStartError
    srv = PgServer()
    try:
        srv.start()
    except PgStartError as exc:
        srv.stop()
        pytest.fail("the PostgreSQL server for the tests cannot start: %s"
                    % exc, pytrace=False)
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _store_per_test(request):
    if not PG_MODE:
        yield None
        return
    srv = request.getfixturevalue("pg_server")
    old = os.environ.get("SPOTRUN_STORE")
    os.environ["SPOTRUN_STORE"] = srv.new_db()
    yield os.environ["SPOTRUN_STORE"]
    if old is None:
        os.environ.pop("SPOTRUN_STORE", None)
    else:
        os.environ["SPOTRUN_STORE"] = old


def store_rows(state, sql):
    """Rows of `sql` (no parameters) from the daemon's store: SQLite in
    the state dir, or the PostgreSQL database in $SPOTRUN_STORE.  Integer
    columns come back as int, NULL as None, the rest as str."""
    url = os.environ.get("SPOTRUN_STORE", "")
    if not url.startswith("postgres"):
        import sqlite3
        db = sqlite3.connect(os.path.join(state, "spotrun.db"))
        try:
            return [tuple(r) for r in db.execute(sql)]
        finally:
            db.close()
    from pg_server import PG_BIN, tool_env
    p = subprocess.run([os.path.join(PG_BIN, "psql"), "-X", "-A", "-t",
                        "-F", "\t", "-P", "null=\\N", "-v", "ON_ERROR_STOP=1",
                        "-d", url, "-c", sql], capture_output=True, text=True,
                       timeout=120, env=tool_env(), check=False)
    assert p.returncode == 0, p.stderr

    def val(v):
        if v == "\\N":
            return None
        try:
            return int(v)
        except ValueError:
            return v
    return [tuple(val(v) for v in line.split("\t"))
            for line in p.stdout.splitlines() if line]
