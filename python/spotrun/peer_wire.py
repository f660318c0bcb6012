"""The wire of the peer copies (dist_peer.py, issue 33): parsing what a
peer sends, moving a step directory's files over a socket, and one
request helper.

WIRE (one TCP connection per request; ranks of one attempt only: the
token is rank 0's, shared with the addresses):
    request   one JSON line (<= LINE_MAX bytes):
              {"token", "op": "put"|"get"|"done", "part", "step",
               "files": [[name, size], ...] (put only),
               "from": the sender's rank (done only)}
              put: then the files' bytes, in order; done: every part
              of that step was put (a rank's close() waits for it from
              the ranks before it, bounded by its deadline, so that the
              last step's copy is not lost to a receiver that exited)
    reply     one JSON line {"ok": true|false, "error",
              "files": [[name, size], ...] (get only)}, get: then bytes
Every count and size is bounded (FILES_MAX, the memory check, the
socket timeout IO_S).
"""

import json
import os
import re
import socket

PART_RE = re.compile(r"replicated|rank-\d{5}")
FILE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
LINE_MAX = 1 << 16
FILES_MAX = 4096
IO_S = 60.0
CHUNK = 1 << 20


class WireError(ValueError):
    """A request or reply that breaks the protocol."""


def parse_request(line):
    """The request line (bytes, newline stripped) as a dict with part,
    step, op, token and files (put); WireError if it breaks the
    protocol."""
    if len(line) > LINE_MAX:
        raise WireError("request line over %d bytes" % LINE_MAX)
    try:
        r = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError("request is not JSON: %s" % exc) from None
    if not isinstance(r, dict):
        raise WireError("request is not an object")
    op, part, step = r.get("op"), r.get("part"), r.get("step")
    if op not in ("put", "get", "done"):
        raise WireError("op %r is not put, get or done" % (op,))
    if not _is_int(step, 10 ** 12):
        raise WireError("step %r is not a step number" % (step,))
    if not isinstance(r.get("token"), str):
        raise WireError("no token")
    out = {"op": op, "step": step, "token": r["token"]}
    if op == "done":
        if not _is_int(r.get("from"), 1 << 20):
            raise WireError("from %r is not a rank" % (r.get("from"),))
        out["from"] = r["from"]
        return out
    if not isinstance(part, str) or not PART_RE.fullmatch(part):
        raise WireError("part %r is not replicated or rank-NNNNN" % (part,))
    out["part"] = part
    if op == "put":
        out["files"] = parse_files(r.get("files"))
    return out


def _is_int(v, lim):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < lim


def parse_files(files):
    """[[name, size], ...] checked: names plain, unique, sizes >= 0."""
    if not isinstance(files, list) or not 0 < len(files) <= FILES_MAX:
        raise WireError("files: not a list of 1..%d entries" % FILES_MAX)
    seen, out = set(), []
    for f in files:
        if not isinstance(f, list) or len(f) != 2:
            raise WireError("files: entry %r is not [name, size]" % (f,))
        name, size = f
        if not isinstance(name, str) or not FILE_RE.fullmatch(name) or \
                name in seen:
            raise WireError("files: bad or repeated name %r" % (name,))
        if not isinstance(size, int) or isinstance(size, bool) or \
                not 0 <= size < 1 << 48:
            raise WireError("files: bad size %r for %s" % (size, name))
        seen.add(name)
        out.append((name, size))
    if "manifest.json" not in seen:
        raise WireError("files: no manifest.json")
    return out


def read_line(sock):
    buf = bytearray()
    while not buf.endswith(b"\n"):
        b = sock.recv(1)
        if not b:
            raise WireError("connection closed inside a line")
        buf += b
        if len(buf) > LINE_MAX + 1:
            raise WireError("line over %d bytes" % LINE_MAX)
    return bytes(buf[:-1])


def send_line(sock, obj):
    sock.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")


def step_files(d):
    """[[name, size]] of an engine step directory (plain files only)."""
    files = []
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p) and FILE_RE.fullmatch(name):
            files.append([name, os.path.getsize(p)])
    return files


def _pump(read, write, size, short):
    """Move size bytes from read(n) to write(b), CHUNK at a time; raise
    short (an exception) when read ends early."""
    while size > 0:
        b = read(min(CHUNK, size))
        if not b:
            raise short
        write(b)
        size -= len(b)


def send_files(sock, d, files):
    """The bytes of d's files [(name, size)], in order."""
    for name, size in files:
        with open(os.path.join(d, name), "rb") as f:
            _pump(f.read, sock.sendall, size,
                  OSError("%s/%s shrank while sent" % (d, name)))


def recv_files(sock, d, files):
    """Files [(name, size)] from sock into the new directory d."""
    os.makedirs(d)
    for name, size in files:
        with open(os.path.join(d, name), "wb") as f:
            _pump(sock.recv, f.write, size,
                  WireError("connection closed inside %s" % name))


def read_reply(sock):
    """The reply line as a dict; WireError if it is not one."""
    try:
        rep = json.loads(read_line(sock))
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError("reply is not JSON: %s" % exc) from None
    if not isinstance(rep, dict):
        raise WireError("reply is not an object")
    return rep


def request(addr, port, msg, send=None, recv=None):
    """One request on a connection of its own (IO_S timeout): the line
    msg, then send(sock) (a put's bytes); the reply line, WireError when
    it is not ok (its error quoted); then recv(sock, reply) (a get's
    bytes).  Returns the reply."""
    with socket.create_connection((addr, port), timeout=IO_S) as c:
        send_line(c, msg)
        if send is not None:
            send(c)
        rep = read_reply(c)
        if not rep.get("ok"):
            raise WireError("refused: %s" % rep.get("error"))
        if recv is not None:
            recv(c, rep)
        return rep
