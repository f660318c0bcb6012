"""The PostgreSQL server goes away under a running daemon (issue 16).

A spotrund on its own real PostgreSQL 15 server runs a spot job; while
the job runs, the server is stopped (`pg_ctl -m immediate`: every open
connection and transaction is cut) for 5 s and started again.  The daemon
logs "store unreachable, retrying", waits with bounded backoff
(lib/store/store.c: store__reconnect), logs "store reachable again" and
continues: the job finishes once, its events form one unbroken chain,
no rank had two live nodes, and the ledger tiles every node's billed
life.

Runs where the control plane runs on PostgreSQL (SPOTRUN_CHECK_STORE=
postgresql: the ASan pass, scripts/run-tests); it starts its own server
so that stopping it disturbs no other test's database."""
import os
import time

import pytest

from test_ctl_crash import Daemon, make_market, spot_job
from test_ctl_liveloop import ledger_matches_nodes
from test_store_failover import events_chain, no_rank_twice

PG = os.environ.get("SPOTRUN_CHECK_STORE") == "postgresql"
OUTAGE_S = 5


@pytest.mark.skipif(not PG, reason="needs PostgreSQL: runs in the"
                    " PostgreSQL pass (SPOTRUN_CHECK_STORE=postgresql)")
def test_server_stopped_5s_daemon_waits_and_continues(tmp_path, monkeypatch):
    from pg_server import PgServer, PgStartError
    srv = PgServer()
    d = None
    try:
        try:
            srv.start()
        except PgStartError as exc:
            pytest.fail("the PostgreSQL server cannot start: %s" % exc,
                        pytrace=False)
        monkeypatch.setenv("SPOTRUN_STORE", srv.new_db())
        # spot up 6 trace hours, down 2 (1 trace hour = 6 s here): the
        # job is preempted too, around the outage
        d = Daemon(tmp_path, make_market(tmp_path, [1, 1, 1, 1, 1, 1, 0, 0]),
                   "--time-scale", "600", "--notice-ms", "1500",
                   "--restart-guess-ms", "500")
        d.start()
        jid = d.submit(spot_job("outage", 200))
        deadline = time.time() + 120
        while d.job(jid)["state"] != "RUNNING":
            assert time.time() < deadline, d.log_tail()
            time.sleep(0.1)
        time.sleep(1.0)
        assert srv.pg_ctl("-m", "immediate", "stop") == 0, srv._logs("ctl.log")
        time.sleep(OUTAGE_S)
        assert srv.pg_ctl("start") == 0, srv._logs("ctl.log", "server.log")
        [j] = d.wait([jid], 600)
        assert j["state"] == "SUCCEEDED", (j, d.log_tail())
        assert d.proc.poll() is None, d.log_tail()
        with open(os.path.join(d.state, "jobs", str(jid), "ckpt",
                               "completions")) as f:
            assert len(f.read().splitlines()) == 1
        no_rank_twice(d.state, jid)
        ev = events_chain(d.state, jid)
        d.stop()
        ledger_matches_nodes(d.state)
        with open(os.path.join(d.tmp, "spotrund.log"), errors="replace") as f:
            log = f.read()
        assert 'msg="store unreachable, retrying"' in log, log[-3000:]
        assert 'msg="store reachable again"' in log, log[-3000:]
        print("\noutage: %d s; %d events, %d preemptions; %d 'unreachable'"
              " lines" % (OUTAGE_S, len(ev), j["preemptions"],
                          log.count("store unreachable, retrying")))
    finally:
        if d:
            d.stop()
        srv.stop()
