"""Preemption notices for a training loop: the contract with the node agent.

DESIGN
    The node agent learns that the instance will be reclaimed (cloud
    metadata notice, spot interruption warning) and must get the trainer to
    write a final checkpoint before the machine disappears.  It does so
    through this contract, also documented in docs/python.md:

      signal       SIGTERM or SIGUSR1 (or the signal named by
                   $SPOTRUN_PREEMPT_SIGNAL, e.g. "TERM") sent to the
                   training process means "a preemption notice arrived:
                   checkpoint and exit".
      notice file  $SPOTRUN_NOTICE_FILE, when set, names a file the agent
                   creates (atomically) for the same purpose, for trainers
                   it cannot signal.  Its content, optional, is the
                   deadline: Unix seconds (e.g. "1767225600.5") or an RFC
                   3339 UTC time ("2026-01-01T00:00:00Z").
      grace        $SPOTRUN_GRACE_S (seconds, default 30) is the time from
                   the notice to the hard kill when the agent gives no
                   explicit deadline.
      exit code    the trainer exits 0 once its final checkpoint is
                   committed; EXIT_CKPT_FAILED (75) if it could not commit
                   one.  Any other exit is a crash.

    install() sets the handlers (the main thread only: Python delivers
    signals there), should_checkpoint() is polled at each step boundary --
    a flag test, plus a stat() of the notice file at most every
    `poll_interval_s` -- and deadline() says when the hard kill is
    expected, in time.time() seconds.

    Progress: the checkpoint library reports every save, commit and
    restore to the agent by itself.  A loop that also says which step it
    is at - install(total_steps=N) and should_checkpoint(step), or
    install(step=callable) - has that step shown too (`spotrun status`),
    written through the library at most once a second
    (spotckpt_progress_step; nothing happens outside the agent).

    Clocks: the deadline is a wall-clock time only at the edges (the
    notice file's Unix seconds, deadline()'s answer).  Inside the process
    it is kept on the monotonic clock, converted once when the notice is
    seen, so a wall-clock step (NTP, a VM resumed) while the final
    checkpoint runs moves neither the grace period nor time_left() nor
    save_final()'s budget.
"""

import datetime
import logging
import os
import signal
import threading
import time

EXIT_OK = 0
EXIT_CKPT_FAILED = 75  # EX_TEMPFAIL: the final checkpoint did not commit
DEFAULT_GRACE_S = 30.0

_lock = threading.Lock()
_state = {
    "installed": False,
    "signal": None,        # signal number that delivered the notice
    "notice_time": None,   # time.time() when the notice was seen
    "notice_mono": None,   # time.monotonic() when the notice was seen
    "deadline": None,      # time.time() of the expected hard kill
    "deadline_mono": None, # the same on the monotonic clock
    "explicit": False,     # deadline came from the agent, not the grace
    "next_poll": 0.0,
    "previous": {},
}
poll_interval_s = 0.5
report_interval_s = 0.5
_progress = {"step_fn": None, "total": None, "next": 0.0, "warned": False}


def _grace_s():
    raw = os.environ.get("SPOTRUN_GRACE_S", "")
    if not raw:
        return DEFAULT_GRACE_S
    try:
        val = float(raw)
    except ValueError:
        raise ValueError("SPOTRUN_GRACE_S=%r is not a number of seconds"
                         % raw) from None
    if not val >= 0:
        raise ValueError("SPOTRUN_GRACE_S=%r must be >= 0" % raw)
    return val


def parse_deadline(text):
    """Parse a notice file's content: Unix seconds or RFC 3339 UTC time.

    Returns time.time()-comparable seconds, or None for empty content.
    Raises ValueError naming the bad text."""
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        dt = datetime.datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError("notice deadline %r is neither Unix seconds nor "
                         "an RFC 3339 time" % text) from None
    if dt.tzinfo is None:
        raise ValueError("notice deadline %r has no time zone" % text)
    return dt.timestamp()


def _notify(signum, deadline):
    wall, mono = time.time(), time.monotonic()
    with _lock:
        if _state["notice_time"] is None:
            _state["signal"] = signum
            _state["notice_time"] = wall
            _state["notice_mono"] = mono
        if deadline is not None:
            # the one wall-to-monotonic conversion of an explicit deadline
            _state["deadline"] = deadline
            _state["deadline_mono"] = mono + (deadline - wall)
            _state["explicit"] = True
        elif _state["deadline"] is None:
            grace = _grace_s()
            _state["deadline"] = _state["notice_time"] + grace
            _state["deadline_mono"] = _state["notice_mono"] + grace


def _handler(signum, frame):
    _notify(signum, None)


def _env_signal():
    """The signal named by $SPOTRUN_PREEMPT_SIGNAL ("TERM", "SIGUSR2",
    "15"), or None when unset."""
    raw = os.environ.get("SPOTRUN_PREEMPT_SIGNAL", "").strip()
    if not raw:
        return None
    if raw.isdigit():
        try:
            return signal.Signals(int(raw))
        except ValueError:
            pass
    else:
        name = raw.upper()
        name = name if name.startswith("SIG") else "SIG" + name
        sig = getattr(signal.Signals, name, None)
        if sig is not None and name not in ("SIGKILL", "SIGSTOP"):
            return sig
    raise ValueError("SPOTRUN_PREEMPT_SIGNAL=%r is not a signal that can be "
                     "caught" % raw)


def install(signals=(signal.SIGTERM, signal.SIGUSR1), step=None,
            total_steps=None):
    """Install the notice handlers for `signals` plus the one named by
    $SPOTRUN_PREEMPT_SIGNAL, if set.  Call once, from the main thread,
    before training starts.  Idempotent.  The previous handlers are kept
    and restored by uninstall().

    step: optional callable returning the training step, read at each
    should_checkpoint() call and reported to the node agent;
    total_steps: the steps of the whole run, if known (shown as "of N")."""
    _grace_s()  # reject a malformed SPOTRUN_GRACE_S now, not mid-notice
    if step is not None and not callable(step):
        raise TypeError("install(step=...) takes a callable returning the "
                        "current step, not %s" % type(step).__name__)
    if total_steps is not None and int(total_steps) <= 0:
        raise ValueError("install(total_steps=%r): must be > 0" % total_steps)
    _progress["step_fn"] = step
    _progress["total"] = None if total_steps is None else int(total_steps)
    extra = _env_signal()
    signals = tuple(signals) + ((extra,) if extra is not None and
                                extra not in signals else ())
    with _lock:
        if _state["installed"]:
            return
        for sig in signals:
            _state["previous"][sig] = signal.signal(sig, _handler)
        _state["installed"] = True


def uninstall():
    """Restore the handlers that install() replaced and forget any notice."""
    with _lock:
        for sig, prev in _state["previous"].items():
            signal.signal(sig, prev)
        _state["previous"].clear()
        _state["installed"] = False
        _state.update(signal=None, notice_time=None, notice_mono=None,
                      deadline=None, deadline_mono=None, explicit=False,
                      next_poll=0.0)


def _poll_notice_file(force=False):
    path = os.environ.get("SPOTRUN_NOTICE_FILE")
    if not path:
        return
    now = time.monotonic()
    if now < _state["next_poll"] and not force:
        return
    _state["next_poll"] = now + poll_interval_s
    try:
        with open(path) as f:
            text = f.read(256)
    except FileNotFoundError:
        return
    _notify(None, parse_deadline(text))


def notify(deadline=None):
    """Record a notice from inside the process (e.g. a watchdog thread);
    deadline: time.time() seconds, or None for the grace period."""
    _notify(None, deadline)


def should_checkpoint(step=None):
    """True once a preemption notice has arrived.  Cheap: poll it at every
    step boundary, then take the final checkpoint and exit.  step: the
    training step, reported to the node agent (see report())."""
    if step is None and _progress["step_fn"] is not None:
        step = _progress["step_fn"]()
    if step is not None:
        report(step)
    if _state["notice_time"] is None:
        _poll_notice_file()
    return _state["notice_time"] is not None


def report(step, total_steps=None):
    """Report the training step (and the total, if known) to the node
    agent, so `spotrun status` shows it.  Cheap: at most one call into the
    library every `report_interval_s`; outside the agent
    ($SPOTRUN_PROGRESS_FILE unset) nothing happens."""
    if total_steps is not None:
        _progress["total"] = int(total_steps)
    now = time.monotonic()
    if now < _progress["next"] or not os.environ.get("SPOTRUN_PROGRESS_FILE"):
        return
    _progress["next"] = now + report_interval_s
    try:
        from . import _lib
        _lib.lib().spotckpt_progress_step(int(step), _progress["total"] or -1)
    except (ImportError, OSError) as exc:  # LibraryNotFound is an ImportError
        if not _progress["warned"]:
            _progress["warned"] = True
            logging.getLogger("spotrun").warning(
                "cannot report progress to the agent: %s", exc)


def _refresh_deadline():
    # A signal carries no deadline.  The agent writes the notice file
    # before it signals, so once a notice is in, the file (if any) is the
    # authority on the deadline; the grace period is only the fallback.
    if _state["notice_time"] is not None and not _state["explicit"]:
        try:
            _poll_notice_file(force=True)
        except (ValueError, OSError):
            pass  # a bad file must not stop the final checkpoint: grace


def deadline():
    """time.time() seconds at which the hard kill is expected, or None
    when no notice has arrived.  The agent's deadline in the notice file
    wins over the SPOTRUN_GRACE_S fallback, also after a signal."""
    _refresh_deadline()
    return _state["deadline"]


def deadline_monotonic():
    """deadline() on the time.monotonic() clock, or None: what to wait
    against inside the process."""
    _refresh_deadline()
    return _state["deadline_mono"]


def node_noticed():
    """True when this node itself has a notice from the agent: its notice
    file, with the cloud's deadline (also after the signal that followed
    it).  False before any notice, and for a signal alone - the agent's
    `stop` of a gang's healthy node (it keeps running) or a signal from
    outside the agent."""
    if _state["notice_time"] is None:
        try:
            _poll_notice_file(force=True)
        except (ValueError, OSError):
            pass   # a bad file: as in deadline(), the signal's grace
    else:
        _refresh_deadline()
    return bool(_state["explicit"])


def time_left():
    """Seconds until the deadline (may be negative), or None.  Measured on
    the monotonic clock: a wall-clock step does not change it."""
    d = deadline_monotonic()
    return None if d is None else d - time.monotonic()


def notice_signal():
    """The signal number that delivered the notice (None for the notice
    file or notify())."""
    return _state["signal"]
