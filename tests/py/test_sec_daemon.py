"""Issue 24, the control plane's side: one daemon per SQLite state (a
second spotrund on the same state dir exits, naming the first one's pid)."""

import os
import subprocess

import pytest

from conftest import PG_MODE
from test_ctl_crash import BUILD, ROOT, Daemon


def test_second_spotrund_on_one_state_exits_naming_the_first(tmp_path):
    if PG_MODE:
        pytest.skip("the lock is for a SQLite state; daemons sharing a "
                    "PostgreSQL store share a state dir on purpose")
    d = Daemon(tmp_path, os.path.join(ROOT, "data"))
    try:
        d.start()
        with open(os.path.join(d.state, "api.url")) as f:
            url = f.read()
        r = subprocess.run([os.path.join(BUILD, "bin", "spotrund"), "--listen",
                            "127.0.0.1:0", "--state-dir", d.state,
                            "--data-dir", os.path.join(ROOT, "data")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert ("state dir %s is in use by another spotrund (pid %d)"
                % (d.state, d.proc.pid)) in r.stderr, r.stderr
        # the first one's files are untouched and it still answers
        with open(os.path.join(d.state, "api.url")) as f:
            assert f.read() == url
        assert d.proc.poll() is None
        # a daemon killed -9 leaves no lock behind: the next one starts
        d.kill9()
        d.start()
        assert d.proc.poll() is None
    finally:
        d.stop()



def test_lock_left_by_a_dead_daemons_child_is_waited_for(tmp_path):
    """A daemon killed -9 while a child it forked had not yet exec'd: the
    child holds the lock a moment longer.  The next daemon waits for it
    (the pid in the lock file is gone) instead of refusing to start."""
    if PG_MODE:
        pytest.skip("the lock is for a SQLite state")
    d = Daemon(tmp_path, os.path.join(ROOT, "data"))
    os.makedirs(d.state, mode=0o700)
    gone = subprocess.Popen(["true"])
    gone.wait()                       # a pid that names no process now
    lock = os.path.join(d.state, "spotrund.lock")
    with open(lock, "w") as f:
        f.write("%d\n" % gone.pid)
    # the "child": holds the lock until told to let go (its stdin closes)
    holder = subprocess.Popen(
        ["/usr/bin/python3", "-c",
         "import fcntl,sys; f=open(%r,'r+'); fcntl.flock(f, fcntl.LOCK_EX);"
         "print('held', flush=True); sys.stdin.read()" % lock],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = subprocess.Popen(
            [os.path.join(BUILD, "bin", "spotrund"), "--listen",
             "127.0.0.1:0", "--state-dir", d.state,
             "--data-dir", os.path.join(ROOT, "data")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            # let the daemon reach the lock first (were it slower, the
            # test would pass without exercising the wait, never fail)
            subprocess.run(["sleep", "0.5"])
            holder.stdin.close()      # the child execs: the lock goes
            holder.wait(timeout=60)
            url = os.path.join(d.state, "api.url")
            while not os.path.exists(url):
                assert proc.poll() is None, proc.stderr.read()
                subprocess.run(["sleep", "0.05"])
            with open(lock) as f:
                assert int(f.read()) == proc.pid
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


# ---- a leader paused past its lease writes nothing ---------------------
# The daemon is stopped (SIGSTOP) for longer than its lease; meanwhile
# another party takes the lease in the store, as a standby would.  When
# it runs again its agents' heartbeats are waiting: every write must be
# refused (503 not_leader) and the database must not change.  The other
# party's writes go through the writers' lock the daemon uses (SQLite:
# BEGIN IMMEDIATE; PostgreSQL: the transaction advisory lock), so a daemon
# stopped inside a transaction is let run a moment and stopped again.

PG_TX_LOCK = 0x73706f7472756e   # lib/store/store_pg.c STORE_PG_TX_LOCK
LEASE_MS = 1000
SKIP_TABLES = ("members",)      # where every daemon, standby or not,
                                # says it is alive: not the job's state


class Store:
    """The test's own view of the daemon's database (sqlite3 or psql)."""

    def __init__(self, state, pg):
        self.state, self.pg = state, pg

    def _sqlite(self):
        import sqlite3
        return sqlite3.connect(os.path.join(self.state, "spotrun.db"),
                               timeout=2, isolation_level=None)

    def snapshot(self):
        if self.pg is None:
            db = self._sqlite()
            try:
                names = [r[0] for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'"
                    " ORDER BY name")]
                return {t: db.execute("SELECT * FROM \"%s\" ORDER BY 1" % t)
                        .fetchall() for t in names if t not in SKIP_TABLES}
            finally:
                db.close()
        names = self.psql_rows("SELECT table_name FROM information_schema"
                               ".tables WHERE table_schema='public' ORDER BY 1")
        return {t: self.psql_rows("SELECT * FROM %s ORDER BY 1" % t)
                for t in names if t not in SKIP_TABLES}

    def psql_rows(self, sql):
        from pg_server import PG_BIN, tool_env
        p = subprocess.run([os.path.join(PG_BIN, "psql"), "-X", "-At", "-v",
                            "ON_ERROR_STOP=1", "-d", os.environ["SPOTRUN_STORE"],
                            "-c", sql], capture_output=True, text=True,
                           timeout=120, env=tool_env(), check=True)
        return p.stdout.splitlines()

    def pgdb(self):
        return os.environ["SPOTRUN_STORE"].split("/")[3].split("?")[0]

    def take_lease(self, expires_ns):
        """Take the lease (epoch + 1) until expires_ns, under the writers'
        lock; False when a stopped writer holds that lock."""
        sql = ("UPDATE lease SET holder='test-standby', epoch=epoch+1,"
               " expires_ns=%d WHERE id=1" % expires_ns)
        if self.pg is None:
            import sqlite3
            db = self._sqlite()
            try:
                db.execute("BEGIN IMMEDIATE")
                db.execute(sql)
                db.execute("COMMIT")
                return True
            except sqlite3.OperationalError:
                return False
            finally:
                db.close()
        try:
            self.pg.psql("SET lock_timeout = '2s'; BEGIN; SELECT"
                         " pg_advisory_xact_lock(%d); %s; COMMIT"
                         % (PG_TX_LOCK, sql), db=self.pgdb())
            return True
        except RuntimeError:
            return False

    def release_lease(self):
        if self.pg is None:
            db = self._sqlite()
            try:
                db.execute("UPDATE lease SET expires_ns=0 WHERE id=1")
            finally:
                db.close()
        else:
            self.pg.psql("UPDATE lease SET expires_ns=0 WHERE id=1",
                         db=self.pgdb())


def test_leader_paused_past_its_lease_writes_nothing(tmp_path, request):
    import signal
    import time
    pg = request.getfixturevalue("pg_server") if PG_MODE else None
    d = Daemon(tmp_path, os.path.join(ROOT, "data"), "--lease-ms",
               str(LEASE_MS), "--heartbeat-timeout", "60s")
    store = Store(d.state, pg)
    try:
        d.start()
        spec = ("name: paused\nresources:\n  accelerators: V100:1\n"
                "  use_spot: false\nrun: |\n  i=0\n  while :; do i=$((i+1));"
                " printf '{\"step\":%d}' $i > $SPOTRUN_STATUS_FILE.t;"
                " mv $SPOTRUN_STATUS_FILE.t $SPOTRUN_STATUS_FILE;"
                " sleep 0.05; done\nspotrun:\n  deadline: 1000h\n"
                "  work: 10h\n")
        st, body = d.write("POST", "/v1/jobs",
                                {"spec_yaml": spec, "spec_name": "t.yaml"})
        assert st == 201, body
        jid = body["job"]["id"]
        deadline = time.time() + 60
        while time.time() < deadline:
            j = d.job(jid)
            if j["state"] == "RUNNING" and (j.get("step") or 0) > 0:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("never ran: %s\n%s" % (j, d.log_tail()))
        for _ in range(20):
            d.proc.send_signal(signal.SIGSTOP)
            time.sleep(2.5 * LEASE_MS / 1000)       # past its lease
            if store.take_lease(time.time_ns() + 3600 * 10**9):
                break
            d.proc.send_signal(signal.SIGCONT)      # stopped mid-transaction
            time.sleep(0.05)
        else:
            raise AssertionError("the writers' lock was never free")
        before = store.snapshot()
        d.proc.send_signal(signal.SIGCONT)
        # its agent's heartbeats (a write each) are refused, the daemon
        # steps down, and it does not take the other party's live lease
        deadline = time.time() + 60
        while time.time() < deadline:
            st, lease = d.api("GET", "/v1/lease")
            if lease.get("writes_refused", 0) >= 3:
                break
            time.sleep(0.1)
        assert lease.get("writes_refused", 0) >= 3, (lease, d.log_tail())
        st, lease = d.api("GET", "/v1/lease")
        assert st == 200 and not lease["leader"], lease
        assert "stepped down" in d.log_tail(), d.log_tail()
        st, body = d.api("POST", "/v1/jobs/%d/cancel" % jid)
        assert st == 503 and body["error"]["code"] == "not_leader", body
        after = store.snapshot()
        for t in before:
            assert before[t] == after[t], "table %s changed" % t
        # the other party gone, the daemon leads again and goes on
        store.release_lease()
        deadline = time.time() + 60
        while time.time() < deadline:
            st, lease = d.api("GET", "/v1/lease")
            if lease.get("leader"):
                break
            time.sleep(0.1)
        assert lease["leader"], lease
        st, body = d.write("POST", "/v1/jobs/%d/cancel" % jid)
        assert st in (200, 202), body
        assert d.wait([jid], 60)[0]["state"] == "CANCELLED"
    finally:
        d.proc.send_signal(signal.SIGCONT)
        d.stop()
