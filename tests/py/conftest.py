"""Shared fixtures for the Python binding tests.

scripts/run-tests sets SPOTRUN_LIB (the libspotckpt.so under test),
SPOTRUN_BUILD and SPOTRUN_CHECK_MODE (plain | asan; under asan every
interpreter runs with libasan loaded first, asan_usercustomize.py, and
sizes are cut down).
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
BUILD = os.environ.get("SPOTRUN_BUILD", os.path.join(ROOT, "build"))
# The build's programs first on PATH, as scripts/run-tests puts them: a
# test that runs `spotrun` by name (test_sim_cli, test_state, test_cli_sky,
# test_market_cli, ...) gets this build's, also when run by hand from a
# fresh build (/usr/bin/python3 -m pytest tests/py/test_sim_cli.py).
_BIN = os.path.join(BUILD, "bin")
if os.environ.get("PATH", "").split(os.pathsep)[0] != _BIN:
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")


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


def read_until(proc, prefix, timeout=300):
    """Read proc's stdout lines until one starts with prefix; return it.
    Fails the test (with the child's stderr) on EOF, or after `timeout`
    seconds: only a bound on a hung child (PyTorch's import alone takes
    a minute on a loaded machine under ASan)."""
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


# ---- sanitizer reports (scripts/run-tests BUILD asan) ----
# The interpreter runs with the sanitizer runtime preloaded and its own
# leak check off.  The programs a test starts get $SPOTRUN_CHILD_ASAN_OPTIONS,
# a report written into a directory of that test instead of stderr
# (log_path), a leak leaving the exit status alone (exitcode=0) and an
# error aborting (abort_on_error=1).  After the test, any report from one
# of spotrun's programs fails it (asan_reports.py).
#
# Leaks are checked in spotrun's programs only.  The other programs that
# load the runtime are the interpreters (asan_usercustomize.py gives it to
# them alone) and what a test starts with an LD_PRELOAD of its own;
# LeakSanitizer's scan at their exit costs ~40 ms of CPU (150-250 ms of
# wall on a loaded machine) for a report nobody reads (asan_reports.py
# counts no foreign program's leaks), and when every program of a shell
# workload had the runtime, that slowed the workloads 1.5-5x and the
# control plane on its time-scaled local cloud rightly saw jobs fall
# behind their declared work (test_live_agrees_with_the_simulator went
# on-demand).  So every program gets detect_leaks=0, then
# include_if_exists=<dir>/%b (%b: the program's own name) reads the child
# options back from a file named after each of spotrun's programs.
_REPORTS = os.environ.get("SPOTRUN_ASAN_REPORTS") if ASAN else None


def _leak_check_dir(opts):
    from asan_reports import spotrun_programs
    d = os.path.join(_REPORTS, ".leak-check")
    os.makedirs(d, exist_ok=True)
    for name in spotrun_programs(BUILD):
        path = os.path.join(d, name)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w") as f:
            f.write(opts + "\n")
        os.replace(tmp, path)
    return d


def _child_asan_options(d):
    os.makedirs(d, exist_ok=True)
    os.environ["ASAN_OPTIONS"] = (
        "detect_leaks=0:include_if_exists=%s/%%b:exitcode=0:abort_on_error=1"
        ":log_path=%s/r:log_exe_name=1" % (_LEAK_CHECK, d))


if _REPORTS:
    _LEAK_CHECK = _leak_check_dir(
        os.environ.get("SPOTRUN_CHILD_ASAN_OPTIONS", "detect_leaks=1"))
    # what starts outside a test (a module's fixture) reports here
    _child_asan_options(os.path.join(_REPORTS, "outside-tests-%d" % os.getpid()))


@pytest.fixture(autouse=True)
def _asan_reports(request):
    if not _REPORTS:
        yield
        return
    import re
    from asan_reports import describe, failing
    d = os.path.join(_REPORTS, re.sub(r"[^A-Za-z0-9_.-]+", "_",
                                      request.node.nodeid)[-160:])
    _child_asan_options(d)
    yield
    bad = failing(BUILD, d, claim=True)
    if bad:
        pytest.fail("sanitizer reports from spotrun's programs:\n" +
                    describe(bad), pytrace=False)


# ---- the runner's timing record (scripts/run-tests: the slowest tests) ----
# Test files whose tests run one after another on one xdist worker, never
# two at once: the PyTorch demos each train a real model against the
# clock of a time-scaled cloud, and two of them at once beside make
# check's other lanes missed their final checkpoints (session 15).
# scripts/run-tests runs pytest with --dist loadgroup, which sends each
# xdist_group whole to one worker and every other test on its own.
ONE_WORKER = {"test_e2e_demo.py": "pytorch_demos"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """The slowest tests first (tests/slowest.txt, slowest first; the rest
    in their usual order): xdist hands tests out in this order, so a
    long test starts while the short ones fill the other workers instead
    of starting last and holding the whole pass.  With --dist loadgroup
    (scripts/run-tests) a worker is sent the next test whenever it has
    two or fewer left, so the slow tests spread over the workers; under
    --dist load xdist 3.1 sent each worker a chunk of a quarter of its
    share first, and every slow test ran on the first worker, one after
    another (~85 s of make check's plain pass, session 16).  Runs before
    xdist's own hook (tryfirst), which appends "@<group>" to the node id
    of a test in an xdist_group."""
    for it in items:
        group = ONE_WORKER.get(os.path.basename(str(it.fspath)))
        if group:
            it.add_marker(pytest.mark.xdist_group(group))
    path = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "slowest.txt")
    try:
        with open(path) as f:
            names = [l.strip() for l in f if "::" in l and not l.startswith("#")]
    except OSError:
        return
    rank = {n: i for i, n in enumerate(names)}
    items.sort(key=lambda it: rank.get(it.nodeid, len(rank)))


# With $SPOTRUN_TIMES set, every test appends one line to that file:
# "<seconds wall> <seconds CPU> <node id>", CPU being this process's and
# its reaped children's user+sys time over the test (a daemon killed and
# waited for counts; one left running does not).  Lines are short and
# written with O_APPEND, so xdist workers can share the file.
_TIMES = os.environ.get("SPOTRUN_TIMES")


def _cpu_s():
    import resource
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _TIMES:
        yield
        return
    import time
    t0, c0 = time.monotonic(), _cpu_s()
    yield
    line = "%.2f %.2f %s\n" % (time.monotonic() - t0, _cpu_s() - c0,
                               item.nodeid)
    fd = os.open(_TIMES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


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
# every spotrund the test starts through $SPOTRUN_STORE (one a test left
# untouched goes to the next test: PgServer.give_back).
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
    url = os.environ["SPOTRUN_STORE"] = srv.new_db()
    yield url
    srv.give_back(url)
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


def leader_write(call, timeout=60):
    """call() -> (status, body) of a write to spotrund, as spotrun's
    clients make it (lib/ctlclient): a 503 not_leader - under load a
    daemon's lease can lapse between two renewals, and it takes it back
    on its next pass (docs/store.md) - is tried again for up to
    `timeout` s; any other answer, or the last 503, is the answer."""
    import time
    deadline = time.monotonic() + timeout
    while True:
        st, b = call()
        err = b.get("error") if isinstance(b, dict) else None
        if not (st == 503 and isinstance(err, dict) and
                err.get("code") == "not_leader") or \
                time.monotonic() > deadline:
            return st, b
        time.sleep(0.1)
