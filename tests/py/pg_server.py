"""A real PostgreSQL 15 server for the tests (no mock).

initdb into a temporary directory, pg_ctl start listening only on a Unix
socket in that directory, a fresh database per test, stop and remove at
the end.  The server runs as the current user, or as `postgres` when the
tests run as root (initdb refuses root).  When it cannot start, start()
raises PgStartError with the reason and the server's log: the caller
fails loudly, never skips.  tests/unit/pg_fixture.h does the same in C.
"""

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile

PG_BIN = os.environ.get("SPOTRUN_PG_BIN", "/usr/lib/postgresql/15/bin")
# The ASan pass preloads the sanitizer runtime into the interpreter; the
# server and its tools (and the npm servers, objstore_servers.py) are not
# instrumented and must not inherit it.
_SAN_VARS = ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")


def tool_env():
    """The environment for programs that are not ours (PostgreSQL's
    initdb, pg_ctl, psql; node): ours without the sanitizer preload."""
    return {k: v for k, v in os.environ.items() if k not in _SAN_VARS}


class PgStartError(RuntimeError):
    pass


class PgServer:
    def __init__(self):
        self.dir = None
        self.running = False
        self._n = itertools.count(1)
        self._unused = []
        self._user = None

    def _demote(self):
        if self._user is None:
            return None
        uid, gid = self._user

        def fn():
            os.setgid(gid)
            os.setuid(uid)
        return fn

    def _run(self, argv, log):
        with open(log, "ab") as f:
            return subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT,
                                  preexec_fn=self._demote(), timeout=120,
                                  env=tool_env(), check=False).returncode

    def _logs(self, *names):
        out = []
        for n in names:
            p = os.path.join(self.dir, n)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    out.append("--- %s ---\n%s" % (n, f.read()[-4000:]))
        return "\n".join(out)

    def start(self):
        initdb = os.path.join(PG_BIN, "initdb")
        if not os.access(initdb, os.X_OK):
            raise PgStartError(
                "PostgreSQL 15 is not installed (%s missing); "
                "scripts/install-deps installs it (package postgresql)" % initdb)
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise PgStartError("running as root and there is no 'postgres' "
                                   "user to run the server as") from exc
            self._user = (pw.pw_uid, pw.pw_gid)
        self.dir = tempfile.mkdtemp(prefix="sr-pg-", dir="/tmp")
        if self._user:
            os.chown(self.dir, *self._user)
        data = os.path.join(self.dir, "data")
        log = os.path.join(self.dir, "ctl.log")
        if self._run([initdb, "-D", data, "-U", "spotrun", "-A", "trust",
                      "-E", "UTF8", "--no-sync", "--no-instructions"], log):
            raise PgStartError("initdb into %s failed:\n%s"
                               % (data, self._logs("ctl.log")))
        opts = ("-k %s -c listen_addresses='' -F -c max_connections=200 "
                "-c shared_buffers=32MB" % self.dir)
        if self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", data, "-l",
                      os.path.join(self.dir, "server.log"), "-w", "-t", "60",
                      "-o", opts, "start"], log):
            raise PgStartError("the PostgreSQL server in %s did not start:\n%s"
                               % (data, self._logs("ctl.log", "server.log")))
        self.running = True

    def url(self, db="postgres"):
        return "postgresql:///%s?host=%s&user=spotrun" % (db, self.dir)

    def psql(self, sql, db="postgres", args=()):
        p = subprocess.run([os.path.join(PG_BIN, "psql"), "-X", "-q", "-v",
                            "ON_ERROR_STOP=1"] + list(args) +
                           ["-d", self.url(db), "-c", sql],
                           capture_output=True, text=True, timeout=120,
                           env=tool_env(), check=False)
        if p.returncode:
            raise RuntimeError("psql %r: %s" % (sql, p.stderr))
        return p.stdout

    def new_db(self):
        """A fresh, empty database; returns its URI.  One given back
        untouched (give_back) is handed out again: CREATE DATABASE copies
        the 7 MB template (0.1-0.3 s of the server's CPU), and most of
        the tests each one was made for never start a daemon."""
        if self._unused:
            return self.url(self._unused.pop())
        name = "t%d_%d" % (os.getpid(), next(self._n))
        self.psql("CREATE DATABASE %s" % name)
        return self.url(name)

    def give_back(self, url):
        """After the test that had url: keep its database for the next
        new_db() if it is as CREATE DATABASE left it - no relation, schema
        or function of anyone's, and no session still connected (a
        daemon that outlived its test)."""
        name = url.split("?", 1)[0].rsplit("/", 1)[-1]
        sql = ("SELECT (SELECT count(*) FROM pg_class WHERE relnamespace"
               " NOT IN (SELECT oid FROM pg_namespace WHERE nspname IN"
               " ('pg_catalog', 'information_schema', 'pg_toast')))"
               " + (SELECT count(*) FROM pg_namespace WHERE nspname NOT IN"
               " ('pg_catalog', 'information_schema', 'pg_toast', 'public')"
               " AND nspname NOT LIKE 'pg_temp%' AND nspname NOT LIKE"
               " 'pg_toast_temp%')"
               " + (SELECT count(*) FROM pg_proc WHERE pronamespace ="
               " 'public'::regnamespace)"
               " + (SELECT count(*) FROM pg_stat_activity WHERE datname ="
               " current_database() AND pid <> pg_backend_pid())")
        try:
            left = self.psql(sql, db=name, args=("-A", "-t"))
        except (RuntimeError, subprocess.TimeoutExpired):
            return
        if left.strip() == "0":
            self._unused.append(name)

    def pg_ctl(self, *args):
        """Run pg_ctl on this server (stop/start for outage tests)."""
        data = os.path.join(self.dir, "data")
        opts = ("-k %s -c listen_addresses='' -F -c max_connections=200 "
                "-c shared_buffers=32MB" % self.dir)
        extra = ["-o", opts] if "start" in args else []
        return self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", data, "-l",
                          os.path.join(self.dir, "server.log"), "-w", "-t",
                          "60"] + extra + list(args),
                         os.path.join(self.dir, "ctl.log"))

    def stop(self):
        if self.running:
            self.pg_ctl("-m", "immediate", "stop")
            self.running = False
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def start_or_say(who):
    """A started PgServer, or None after printing that it cannot start and
    why (for the benches: they report, never skip silently)."""
    srv = PgServer()
    try:
        srv.start()
    except PgStartError as exc:
        print("%s: PostgreSQL CANNOT START: %s" % (who, exc))
        srv.stop()
        return None
    return srv


if __name__ == "__main__":
    # scripts/run-tests BUILD pg: say clearly whether a server can start.
    import sys
    srv = PgServer()
    try:
        srv.start()
        print("PostgreSQL test server: ok (%s)" % PG_BIN)
    except PgStartError as exc:
        print("PostgreSQL test server CANNOT START: %s" % exc)
        sys.exit(1)
    finally:
        srv.stop()
