"""Must-show for the preemption contract (docs/python.md): a training loop
told to stop (SIGTERM, SIGUSR1 or the notice file) takes its final
checkpoint at the next step boundary, exits 0, and that checkpoint
restores."""

import os
import signal
import time

import pytest

import spotrun
from spotrun import preemption

from conftest import read_until, start_train


@pytest.fixture
def clean_preemption(monkeypatch):
    monkeypatch.delenv("SPOTRUN_NOTICE_FILE", raising=False)
    monkeypatch.delenv("SPOTRUN_GRACE_S", raising=False)
    monkeypatch.delenv("SPOTRUN_PREEMPT_SIGNAL", raising=False)
    preemption.uninstall()
    yield monkeypatch
    preemption.uninstall()


def test_signal_sets_flag_and_deadline(clean_preemption):
    clean_preemption.setenv("SPOTRUN_GRACE_S", "12.5")
    preemption.install()
    assert not preemption.should_checkpoint()
    assert preemption.deadline() is None and preemption.time_left() is None
    t0 = time.time()
    os.kill(os.getpid(), signal.SIGUSR1)
    time.sleep(0.01)  # let the interpreter run the handler
    assert preemption.should_checkpoint()
    assert preemption.notice_signal() == signal.SIGUSR1
    assert t0 + 12.0 <= preemption.deadline() <= time.time() + 12.5
    first = preemption.deadline()
    os.kill(os.getpid(), signal.SIGTERM)   # a second notice changes nothing
    time.sleep(0.01)
    assert preemption.deadline() == first
    assert preemption.notice_signal() == signal.SIGUSR1


def test_uninstall_restores_previous_handler(clean_preemption):
    before = signal.getsignal(signal.SIGTERM)
    preemption.install()
    assert signal.getsignal(signal.SIGTERM) is not before
    preemption.uninstall()
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("name", ["USR2", "SIGUSR2", "%d" % signal.SIGUSR2])
def test_preempt_signal_from_environment(clean_preemption, name):
    clean_preemption.setenv("SPOTRUN_PREEMPT_SIGNAL", name)
    preemption.install()
    os.kill(os.getpid(), signal.SIGUSR2)
    time.sleep(0.01)
    assert preemption.should_checkpoint()
    assert preemption.notice_signal() == signal.SIGUSR2


@pytest.mark.parametrize("name", ["KILL", "NOPE", "999"])
def test_preempt_signal_rejects(clean_preemption, name):
    clean_preemption.setenv("SPOTRUN_PREEMPT_SIGNAL", name)
    with pytest.raises(ValueError, match="SPOTRUN_PREEMPT_SIGNAL"):
        preemption.install()


def test_grace_and_deadline_ignore_a_wall_clock_step(clean_preemption, tmp_path):
    # the grace deadline is kept on the monotonic clock: an NTP step of an
    # hour after the notice changes neither time_left() nor the budget
    # save_final() gets (was: both derived from time.time())
    # (each bound brackets the call between two readings of the clock,
    # so a slow machine cannot make it fail)
    clean_preemption.setenv("SPOTRUN_GRACE_S", "30")
    m0 = time.monotonic()
    preemption.notify()
    m1 = time.monotonic()
    mono = preemption.deadline_monotonic()
    assert m0 + 30 <= mono <= m1 + 30
    real_time = time.time
    clean_preemption.setattr(time, "time", lambda: real_time() + 3600.0)
    m0 = time.monotonic()
    left = preemption.time_left()
    m1 = time.monotonic()
    assert mono - m1 <= left <= mono - m0
    assert preemption.deadline_monotonic() == mono
    # an explicit deadline is converted once, when it is read
    preemption.uninstall()
    f = tmp_path / "notice"
    clean_preemption.setenv("SPOTRUN_NOTICE_FILE", str(f))
    clean_preemption.setattr(preemption, "poll_interval_s", 0.0)
    m0 = time.monotonic()
    f.write_text("%.3f\n" % (time.time() + 20))   # the stepped clock's view
    assert preemption.should_checkpoint()
    m1 = time.monotonic()
    mono = preemption.deadline_monotonic()
    # 20 s after the file was written, read at some moment in [m0, m1]
    # (the file holds milliseconds)
    assert m0 + 20 - 0.001 <= mono <= m1 + 20 + 0.001
    clean_preemption.setattr(time, "time", real_time)  # stepped back
    assert preemption.deadline_monotonic() == mono
    m0 = time.monotonic()
    left = preemption.time_left()
    m1 = time.monotonic()
    assert mono - m1 <= left <= mono - m0


def test_notice_file_with_deadline(clean_preemption, tmp_path):
    f = tmp_path / "notice"
    clean_preemption.setenv("SPOTRUN_NOTICE_FILE", str(f))
    clean_preemption.setattr(preemption, "poll_interval_s", 0.0)
    assert not preemption.should_checkpoint()
    f.write_text("2030-01-02T03:04:05Z\n")
    assert preemption.should_checkpoint()
    assert preemption.deadline() == 1893553445.0


def test_signal_then_notice_file_deadline_wins(clean_preemption, tmp_path):
    # The agent writes the deadline into the notice file and then signals:
    # the file's deadline, not the grace fallback, is the one to meet.
    f = tmp_path / "notice"
    clean_preemption.setenv("SPOTRUN_NOTICE_FILE", str(f))
    clean_preemption.setenv("SPOTRUN_GRACE_S", "600")
    preemption.install()
    f.write_text("2030-01-02T03:04:05Z\n")
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.01)
    assert preemption.should_checkpoint()
    assert preemption.deadline() == 1893553445.0
    assert preemption.notice_signal() == signal.SIGTERM


def test_signal_with_bad_notice_file_keeps_grace(clean_preemption, tmp_path):
    f = tmp_path / "notice"
    f.write_text("not a time")
    clean_preemption.setenv("SPOTRUN_NOTICE_FILE", str(f))
    clean_preemption.setenv("SPOTRUN_GRACE_S", "5")
    preemption.install()
    t0 = time.time()
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.01)
    assert preemption.should_checkpoint()
    assert t0 + 4.5 <= preemption.deadline() <= time.time() + 5


def test_notice_file_empty_uses_grace(clean_preemption, tmp_path):
    f = tmp_path / "notice"
    f.write_text("")
    clean_preemption.setenv("SPOTRUN_NOTICE_FILE", str(f))
    clean_preemption.setenv("SPOTRUN_GRACE_S", "0")
    t0 = time.time()
    assert preemption.should_checkpoint()
    assert t0 <= preemption.deadline() <= time.time()


@pytest.mark.parametrize("text,want", [
    ("1767225600.5", 1767225600.5), ("  42 \n", 42.0),
    ("2026-01-01T00:00:00+00:00", 1767225600.0),
    ("2026-01-01T01:00:00+01:00", 1767225600.0), ("", None)])
def test_parse_deadline(text, want):
    assert preemption.parse_deadline(text) == want


@pytest.mark.parametrize("text", ["soon", "2026-01-01T00:00:00", "1e"])
def test_parse_deadline_rejects(text):
    with pytest.raises(ValueError, match="deadline"):
        preemption.parse_deadline(text)


def test_bad_grace_is_rejected_at_install(clean_preemption):
    clean_preemption.setenv("SPOTRUN_GRACE_S", "thirty")
    with pytest.raises(ValueError, match="SPOTRUN_GRACE_S"):
        preemption.install()


@pytest.mark.parametrize("how", ["SIGTERM", "SIGUSR1", "notice-file"])
def test_training_loop_checkpoints_and_exits_on_notice(tmp_path, how):
    d = tmp_path / "ck"
    notice = tmp_path / "notice"
    env = {"SPOTRUN_GRACE_S": "20"}
    if how == "notice-file":
        env["SPOTRUN_NOTICE_FILE"] = str(notice)
    p = start_train(["--ckpt-dir", str(d), "--steps", "1000000",
                     "--ckpt-every", "10", "--step-sleep-ms", "5"], **env)
    # training, with a checkpoint behind it
    committed = int(read_until(p, "committed step=").split("=")[1])
    if how == "notice-file":
        tmp = tmp_path / "notice.tmp"
        tmp.write_text("%.3f\n" % (time.time() + 60))
        os.rename(tmp, notice)
    else:
        os.kill(p.pid, getattr(signal, how))
    line = read_until(p, "preempted step=")
    out, err = p.communicate(timeout=60)
    assert p.returncode == preemption.EXIT_OK, err[-3000:]
    final = int(line.split()[1].split("=")[1])
    assert line.endswith("met_deadline=1")
    assert final >= committed >= 10
    assert spotrun.verify(d) == final
    st = {}
    assert spotrun.restore(d, st) == final
    assert st["step"] == final
    assert st["optimizer"]["state"], "Adam state restored"
    assert sorted(st["rng"]) == ["numpy", "python", "torch"]
