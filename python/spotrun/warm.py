"""A warm workload process: the imports done before the rank is known
(issue 33; docs/distributed.md, "A warm start").

A node's `setup` starts a server that imports the workload's heavy
modules (torch, the script's own) once and waits; each attempt's `run`
is a small client that hands the server its argv, environment, working
directory and stdin/stdout/stderr.  The server forks a child that has
all of that already imported, and the child runs the script as
__main__.  So a warm spare, or a kept node at the next attempt, starts
training without paying `import torch` again:

    setup: pip install ... && python3 -m spotrun.warm start --preload torch,train_demo
    run:   python3 -m spotrun.warm run train.py --flag

The client stays the agent's workload process: it forwards the stop
signals it gets to the child, exits with the child's status (or dies of
its signal), and when it is killed the child kills its own process
group (it watches the connection).  Without a server (none started,
or it is gone) `run` starts the script cold, as plain `python3 train.py`.

What differs from a cold start: the modules in --preload were imported
with setup's environment (a variable read at import time comes from
there: set such variables before `setup`, or do not preload what reads
them); CUDA must not be initialised by a preloaded module (a fork after
CUDA is initialised is not safe); the child runs in the server's
process group, not the client's.  The server lives as long as the
session that started it (the node's agent) and its socket file.

Protocol, one connection per run over a Unix socket (same uid only,
SO_PEERCRED): client -> server one message, a 4-byte length then JSON
{"argv", "env", "cwd"} with fds 0-2 attached (SCM_RIGHTS); server ->
client JSON lines {"pid": N}, then {"exit": code} or {"signal": n};
client -> child lines "sig N".
"""

import argparse
import array
import atexit
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import traceback

SOCK_NAME = "warm.sock"
MAX_MSG = 4 << 20          # the request's JSON: argv + env
IO_TIMEOUT_S = 30.0        # a request or a reply line takes at most this
ALIVE_EVERY_S = 5.0        # how often the server checks its session
FORWARD = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
           signal.SIGUSR1, signal.SIGUSR2)


def default_socket():
    """$SPOTRUN_WARM_SOCKET, else <$SPOTRUN_NODE_DIR>/warm.sock, else
    None."""
    p = os.environ.get("SPOTRUN_WARM_SOCKET")
    if p:
        return p
    d = os.environ.get("SPOTRUN_NODE_DIR")
    return os.path.join(d, SOCK_NAME) if d else None


def _sock_addr(path):
    """A bindable address for path: through /proc/self/fd when the path
    is longer than sun_path holds.  (addr, dir fd to close or -1)."""
    if len(os.fsencode(path)) < 100:
        return path, -1
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY)
    return "/proc/self/fd/%d/%s" % (fd, os.path.basename(path)), fd


def _connect(path, timeout):
    addr, fd = _sock_addr(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(addr)
    except OSError:
        s.close()
        raise
    finally:
        if fd >= 0:
            os.close(fd)
    return s


def _readline(f, what):
    ln = f.readline(65536)
    if not ln.endswith(b"\n"):
        raise OSError("spotrun.warm: the %s closed the connection" % what)
    return json.loads(ln)


# ---- server -------------------------------------------------------------

class Server:
    """The warm process: preloaded modules, a listening socket, one forked
    child per request."""

    def __init__(self, path, preload):
        self.path = path
        self.preload = preload
        self.children = {}        # pidfd -> (pid, connection)
        self.sel = selectors.DefaultSelector()
        self.sid = os.getsid(0)
        self.lsock = None
        self.ino = None

    def listen(self):
        try:
            _connect(self.path, 2.0).close()
            raise OSError("%s: a warm server already listens there" %
                          self.path)
        except (ConnectionRefusedError, FileNotFoundError):
            pass
        try:
            os.unlink(self.path)   # a stale socket of a dead server
        except FileNotFoundError:
            pass
        addr, fd = _sock_addr(self.path)
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            self.lsock.bind(addr)
        finally:
            os.umask(old)
            if fd >= 0:
                os.close(fd)
        self.lsock.listen(16)
        self.ino = os.stat(self.path).st_ino
        self.sel.register(self.lsock, selectors.EVENT_READ, None)

    def alive(self):
        """The session that started us (the agent's) and our socket file
        are still there."""
        try:
            if self.sid != os.getpid():
                os.kill(self.sid, 0)
            return os.stat(self.path).st_ino == self.ino
        except PermissionError:
            return True
        except OSError:
            return False

    def serve(self):
        last = time.monotonic()
        while True:
            for key, _ in self.sel.select(ALIVE_EVERY_S):
                if key.data is None:
                    self.accept()
                else:
                    self.reap(key.fileobj)
            if time.monotonic() - last >= ALIVE_EVERY_S:
                last = time.monotonic()
                if not self.alive():
                    return

    def accept(self):
        try:
            conn, _ = self.lsock.accept()
        except OSError:
            return
        fds = []
        try:
            conn.settimeout(IO_TIMEOUT_S)
            cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                   struct.calcsize("3i"))
            if struct.unpack("3i", cred)[1] != os.getuid():
                raise OSError("a client of another uid")
            req, fds = self.receive(conn)
            pid = os.fork()
        except (OSError, ValueError) as exc:
            print("spotrun.warm: request refused: %s" % exc, file=sys.stderr,
                  flush=True)
            conn.close()
            for fd in fds:
                os.close(fd)
            return
        if pid == 0:
            self.sel.close()
            self.lsock.close()
            for pfd, (_, c) in self.children.items():
                os.close(pfd)
                c.close()
            _child(conn, req, fds)   # never returns
        for fd in fds:
            os.close(fd)
        try:
            conn.sendall(b'{"pid": %d}\n' % pid)
        except OSError:
            pass      # the client is gone: its child sees EOF too
        pfd = os.pidfd_open(pid)
        self.children[pfd] = (pid, conn)
        self.sel.register(pfd, selectors.EVENT_READ, pid)

    @staticmethod
    def receive(conn):
        head = conn.recv(4, socket.MSG_WAITALL)
        if len(head) != 4:
            raise OSError("a short request")
        n = struct.unpack("!I", head)[0]
        if n > MAX_MSG:
            raise OSError("a request of %d bytes (at most %d)" % (n, MAX_MSG))
        fds = array.array("i")
        msg, anc, _, _ = conn.recvmsg(n, socket.CMSG_LEN(3 * fds.itemsize),
                                      socket.MSG_WAITALL)
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        fds = list(fds)
        if len(msg) != n or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            raise OSError("a request without its body or its 3 fds")
        req = json.loads(msg)
        if not isinstance(req.get("argv"), list) or not req["argv"] or \
                not isinstance(req.get("env"), dict) or \
                not isinstance(req.get("cwd"), str):
            for fd in fds:
                os.close(fd)
            raise ValueError("a request without argv, env or cwd")
        return req, fds

    def reap(self, pfd):
        pid, conn = self.children.pop(pfd)
        self.sel.unregister(pfd)
        os.close(pfd)
        _, st = os.waitpid(pid, 0)
        out = {"signal": os.WTERMSIG(st)} if os.WIFSIGNALED(st) else \
            {"exit": os.waitstatus_to_exitcode(st)}
        try:
            conn.sendall(json.dumps(out).encode() + b"\n")
        except OSError:
            pass
        conn.close()


def _watch(conn):
    """The child's watcher: the client's forwarded signals; its end of the
    connection closing (the client was killed) ends the child's group."""
    f = conn.makefile("rb")
    try:
        for ln in f:
            parts = ln.split()
            if len(parts) == 2 and parts[0] == b"sig" and parts[1].isdigit():
                os.kill(os.getpid(), int(parts[1]))
    except OSError:
        pass
    os.killpg(0, signal.SIGKILL)


def _child(conn, req, fds):
    """A forked child: become the request's process and run its script
    as __main__; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ.clear()
        os.environ.update(req["env"])
        os.environ["SPOTRUN_WARM"] = "1"
        os.chdir(req["cwd"])
        conn.settimeout(None)
        threading.Thread(target=_watch, args=(conn,), daemon=True).start()
        script = req["argv"][0]
        sys.argv = list(req["argv"])
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            code = 128 + signal.SIGINT
        except BaseException:
            traceback.print_exc()
            code = 1
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown:
            shutdown()    # the script's own threads, as at a cold exit
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except (OSError, ValueError):
                pass
        os._exit(code & 0xff)


def start(path, preload, timeout):
    """`start`: a detached server (its own process group, the caller's
    session), its imports done before this returns 0."""
    try:
        _connect(path, 2.0).close()
        print("spotrun.warm: a warm server already serves %s" % path,
              flush=True)
        return 0
    except OSError:
        pass
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setpgid(0, 0)
            if os.fork():
                os._exit(0)
            log = os.open(os.path.join(os.path.dirname(path), "warm.log"),
                          os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(null)
            os.close(log)
            t0 = time.monotonic()
            for m in preload:
                importlib.import_module(m)
            srv = Server(path, preload)
            srv.listen()
            print("spotrun.warm: pid %d serving %s; %s imported in %.2f s" % (
                os.getpid(), path, ",".join(preload) or "nothing",
                time.monotonic() - t0), flush=True)
            os.write(w, b"ok\n")
            os.close(w)
            w = -1
            signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
            srv.serve()
            os._exit(0)
        except BaseException as exc:
            if w >= 0:
                os.write(w, ("%s\n" % exc).encode()[:4000])
            else:
                traceback.print_exc()
            os._exit(1)
    os.close(w)
    os.waitpid(pid, 0)
    out = b""
    end = time.monotonic() + timeout
    with os.fdopen(r, "rb") as f:
        os.set_blocking(f.fileno(), True)
        sel = selectors.DefaultSelector()
        sel.register(f, selectors.EVENT_READ)
        while time.monotonic() < end and b"\n" not in out:
            if not sel.select(max(0.0, end - time.monotonic())):
                break
            chunk = os.read(f.fileno(), 4096)
            if not chunk:
                break
            out += chunk
    if out == b"ok\n":
        return 0
    print("spotrun.warm start: %s" % (out.decode(errors="replace").strip()
                                      or "no answer in %.0f s" % timeout),
          file=sys.stderr)
    return 1


# ---- client -------------------------------------------------------------

def _cold(argv, why):
    print("spotrun.warm: %s: starting %s cold" % (why, argv[0]),
          file=sys.stderr, flush=True)
    os.execv(sys.executable, [sys.executable] + argv)


def run(path, argv):
    """`run`: the script in a warm child (or cold); returns its exit
    code, or dies of its signal."""
    if not path:
        _cold(argv, "no socket ($SPOTRUN_NODE_DIR unset)")
    try:
        s = _connect(path, IO_TIMEOUT_S)
    except OSError as exc:
        _cold(argv, "no warm server at %s (%s)" % (path, exc.strerror or exc))
    pending = []
    child = {}

    def forward(sig, _frame):
        if "pid" in child:
            try:
                s.sendall(b"sig %d\n" % sig)
            except OSError:
                pass
        else:
            pending.append(sig)
    for sig in FORWARD:
        signal.signal(sig, forward)
    body = json.dumps({"argv": argv, "env": dict(os.environ),
                       "cwd": os.getcwd()}).encode()
    try:
        s.sendall(struct.pack("!I", len(body)))
        s.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                            array.array("i", [0, 1, 2]))])
        f = s.makefile("rb")
        child["pid"] = _readline(f, "warm server")["pid"]
    except (OSError, ValueError, KeyError) as exc:
        # nothing ran: a cold start is still right
        s.close()
        _cold(argv, "the warm server did not take the run (%s)" % exc)
    for sig in pending:
        s.sendall(b"sig %d\n" % sig)
    s.settimeout(None)
    try:
        res = _readline(f, "warm child")
    except (OSError, ValueError) as exc:
        print("%s; its exit status is unknown" % exc, file=sys.stderr)
        return 1
    if "signal" in res:
        signal.signal(res["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), res["signal"])
        return 128 + res["signal"]
    return res["exit"]


def main(args=None):
    p = argparse.ArgumentParser(prog="python3 -m spotrun.warm",
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    ps = sub.add_parser("start", help="start the warm server (in setup)")
    ps.add_argument("--preload", default="",
                    help="modules to import now, comma-separated")
    ps.add_argument("--socket", default=None,
                    help="default $SPOTRUN_WARM_SOCKET or "
                    "$SPOTRUN_NODE_DIR/warm.sock")
    ps.add_argument("--timeout", type=float, default=600.0,
                    help="seconds the imports may take (default 600)")
    pr = sub.add_parser("run", help="run a script in a warm child")
    pr.add_argument("--socket", default=None)
    pr.add_argument("script")
    pr.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(args)
    path = a.socket or default_socket()
    if a.cmd == "start":
        if not path:
            p.error("no --socket and $SPOTRUN_NODE_DIR is unset")
        if a.timeout <= 0:
            p.error("--timeout must be > 0")
        mods = [m for m in a.preload.split(",") if m]
        return start(os.path.abspath(path), mods, a.timeout)
    return run(os.path.abspath(path) if path else None,
               [a.script] + a.args)


if __name__ == "__main__":
    sys.exit(main())
