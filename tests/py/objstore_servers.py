"""Object-store servers for the tier-3 tests, all on 127.0.0.1.

S3rver      @20minutes/s3rver (npm, tests/objstore), SigV4 checked, the
            account S3RVER/S3RVER.  No ListMultipartUploads or
            AbortMultipartUpload: the code copes (logs) and the tests say so.
Azurite     Microsoft's Azure Storage emulator (npm), the well-known
            devstoreaccount1 key.
FaultProxy  a TCP proxy in front of either that injects connection
            resets, 500 / 503 with Retry-After, slow and cut-off
            responses on a schedule, and records every request's outcome.

Each class starts its server in __init__ and stops it in close(); the
servers listen on ephemeral ports and keep their data in a temp dir.
"""

import base64
import email.utils
import hashlib
import hmac
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import pytest

from pg_server import tool_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
NPM_DIR = os.path.join(ROOT, "tests", "objstore")
NODE_MODULES = os.path.join(NPM_DIR, "node_modules")

AZ_ACCOUNT = "devstoreaccount1"
# Azurite's documented development key (public, not a secret).
AZ_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq"
          "/K1SZFPTOtr/KBHBeksoGMGw==")


def need_npm(pkg):
    if shutil.which("node") is None:
        pytest.fail("node is not installed (scripts/install-deps installs "
                    "nodejs)")
    if not os.path.isdir(os.path.join(NODE_MODULES, pkg)):
        pytest.fail("%s is not installed in tests/objstore: run "
                    "scripts/install-npm" % pkg)


def _read_port(proc, pattern, timeout=60):
    end = time.monotonic() + timeout
    seen = []
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return int(m.group(1))
    proc.kill()
    raise RuntimeError("server did not start:\n" + "".join(seen) +
                       (proc.stderr.read() if proc.stderr else ""))


class _Server:
    proc = None
    tmp = None

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


class S3rver(_Server):
    KEY = "S3RVER"

    def __init__(self, buckets=("ckpt",)):
        need_npm("@20minutes/s3rver")
        self.tmp = tempfile.mkdtemp(prefix="spotrun-s3rver-")
        self.proc = subprocess.Popen(
            ["node", os.path.join(NPM_DIR, "s3rver-run.js"),
             os.path.join(self.tmp, "data")] + list(buckets),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=NPM_DIR, env=tool_env())
        self.port = _read_port(self.proc, r"^PORT (\d+)")
        self.endpoint = "http://127.0.0.1:%d" % self.port

    def env(self, endpoint=None, secret=None, key_id=None):
        """Environment for a process using this server through the AWS
        variables (credentials chain + endpoint override)."""
        return {"AWS_ACCESS_KEY_ID": key_id or self.KEY,
                "AWS_SECRET_ACCESS_KEY": secret or self.KEY,
                "AWS_ENDPOINT_URL_S3": endpoint or self.endpoint,
                "AWS_REGION": "us-east-1",
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_CONFIG_FILE": os.devnull,
                "AWS_SHARED_CREDENTIALS_FILE": os.devnull}


class Azurite(_Server):
    def __init__(self, containers=("ckpt",)):
        need_npm("azurite")
        self.tmp = tempfile.mkdtemp(prefix="spotrun-azurite-")
        self.proc = subprocess.Popen(
            [os.path.join(NODE_MODULES, ".bin", "azurite-blob"),
             "--blobHost", "127.0.0.1", "--blobPort", "0",
             "--location", self.tmp, "--silent", "--skipApiVersionCheck"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=NPM_DIR, env=tool_env())
        self.port = _read_port(self.proc, r"listens on http://127\.0\.0\.1:(\d+)")
        self.endpoint = "http://127.0.0.1:%d/%s" % (self.port, AZ_ACCOUNT)
        for c in containers:
            self.make_container(c)

    def env(self, endpoint=None, key=AZ_KEY):
        return {"AZURE_STORAGE_CONNECTION_STRING":
                "DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;"
                "BlobEndpoint=%s;" % (AZ_ACCOUNT, key,
                                      endpoint or self.endpoint)}

    def make_container(self, name):
        """Create Container (a fixture step; spotrun never creates
        buckets), signed with Shared Key like any client."""
        date = email.utils.formatdate(usegmt=True)
        path = "/%s/%s" % (AZ_ACCOUNT, name)
        sts = ("PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:%s\nx-ms-version:"
               "2021-08-06\n/%s%s\nrestype:container" % (date, AZ_ACCOUNT,
                                                         path))
        sig = base64.b64encode(hmac.new(base64.b64decode(AZ_KEY),
                                        sts.encode(), hashlib.sha256)
                               .digest()).decode()
        req = urllib.request.Request(
            "http://127.0.0.1:%d%s?restype=container" % (self.port, path),
            method="PUT",
            headers={"x-ms-date": date, "x-ms-version": "2021-08-06",
                     "Content-Length": "0",
                     "Authorization": "SharedKey %s:%s" % (AZ_ACCOUNT, sig)})
        urllib.request.urlopen(req, timeout=30).read()


# ---- fault proxy ------------------------------------------------------------
def _recv_request(sock):
    """One HTTP/1.1 request (headers + Content-Length body) as bytes, or
    None on EOF."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    need = int(m.group(1)) if m else 0
    while len(body) < need:
        chunk = sock.recv(min(1 << 20, need - len(body)))
        if not chunk:
            return None
        body += chunk
    return head, body


def _recv_response(sock):
    buf = b""
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return buf
        buf += chunk


class FaultProxy:
    """Forwards each request on a fresh upstream connection.  `faults` is
    a list of fault names applied to requests in turn (cycled), one of:
    None (forward), "reset" (close without answering), "500", "503"
    (with Retry-After: 1), "slow" (answer after `slow_s`), "cut" (send
    half of the answer, then close).  `log` records (method, target,
    status or fault) of every request in arrival order."""

    def __init__(self, upstream_port, faults=(None,), slow_s=0.3):
        self.upstream = upstream_port
        self.faults = list(faults)
        self.slow_s = slow_s
        self.n = 0
        self.log = []
        self.lock = threading.Lock()
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(64)
        self.port = self.srv.getsockname()[1]
        self.stopped = False
        self.th = threading.Thread(target=self._accept, daemon=True)
        self.th.start()

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,),
                             daemon=True).start()

    def _serve(self, c):
        try:
            with c:
                req = _recv_request(c)
                if req is None:
                    return
                head, body = req
                line = head.split(b"\r\n", 1)[0].decode(errors="replace")
                method, target = (line.split(" ") + ["", ""])[:2]
                with self.lock:
                    fault = self.faults[self.n % len(self.faults)]
                    self.n += 1
                if fault == "reset":
                    self._note(method, target, "reset")
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    return
                if fault in ("500", "503"):
                    self._note(method, target, fault)
                    extra = b"Retry-After: 1\r\n" if fault == "503" else b""
                    c.sendall(b"HTTP/1.1 " + fault.encode() +
                              b" Injected\r\n" + extra +
                              b"Content-Length: 0\r\nConnection: close"
                              b"\r\n\r\n")
                    return
                # forward, one request per upstream connection
                head = re.sub(rb"(?im)^connection:.*\r\n", b"", head + b"\r\n")
                u = socket.create_connection(("127.0.0.1", self.upstream))
                with u:
                    u.sendall(head + b"Connection: close\r\n\r\n" + body)
                    resp = _recv_response(u)
                status = resp.split(b" ", 2)[1].decode() if resp else "?"
                if fault == "slow":
                    time.sleep(self.slow_s)
                if fault == "cut" and len(resp) > 64:
                    self._note(method, target, "cut")
                    c.sendall(resp[:len(resp) // 2])
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    return
                c.sendall(resp)
                self._note(method, target, status)
        except OSError:
            pass

    def _note(self, method, target, what):
        with self.lock:
            self.log.append((method, target, what))

    def close(self):
        self.stopped = True
        self.srv.close()


# ---- a proxy that answers as Amazon S3 does ---------------------------------
def _split_response(raw):
    """(status line + headers as bytes, body bytes) of a whole response;
    a chunked body is decoded."""
    head, _, body = raw.partition(b"\r\n\r\n")
    if re.search(rb"(?im)^transfer-encoding:\s*chunked", head):
        out, rest = b"", body
        while rest:
            line, _, rest = rest.partition(b"\r\n")
            n = int(line.split(b";")[0] or b"0", 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
        head = b"\r\n".join(
            ln for ln in head.split(b"\r\n")
            if not ln.lower().startswith(b"transfer-encoding:"))
    return head, body


def _with_body(head, body):
    lines = [ln for ln in head.split(b"\r\n")
             if ln and not ln.lower().startswith(b"content-length:")]
    return (b"\r\n".join(lines) + b"\r\nContent-Length: %d\r\n\r\n"
            % len(body) + body)


def _s3_error(status, code, message, extra=b""):
    body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s"
            "</Code><Message>%s</Message></Error>" % (code, message)).encode()
    reason = {403: b"Forbidden", 404: b"Not Found", 416: b"Range Not "
              b"Satisfiable", 503: b"Slow Down"}.get(status, b"Error")
    return (b"HTTP/1.1 %d " % status + reason + b"\r\nContent-Type: "
            b"application/xml\r\n" + extra + b"Content-Length: %d\r\n"
            b"Connection: close\r\n\r\n" % len(body) + body)


def _xml_escape_once(text):
    import html
    import xml.sax.saxutils as su
    # s3rver: XML-escape(he.escape(key) with &quot; put back); undo both,
    # then escape once, as S3 does
    key = html.unescape(su.unescape(text))
    return su.escape(key, {'"': "&quot;", "'": "&apos;"})


class S3Proxy:
    """In front of s3rver, answers the way Amazon S3 does where s3rver does
    not, and injects S3's own failures on demand.

    As S3 does:
      * listings (ListObjectsV2) carry each key XML-escaped once (s3rver
        escapes twice, which hid an XML injection);
      * ListMultipartUploads (s3rver: 501 Not Implemented) is answered
        from `uploads`, a list of (key, upload id), filtered by the
        request's prefix the way S3 filters: a plain string prefix;
        AbortMultipartUpload of one of them answers 204 and is recorded
        in `aborted` (keys).
    Failures, switched by the test while it runs:
      * slowdown(seconds): every request is answered 503 SlowDown (S3's
        XML body) for that long (also GET /__proxy/slowdown?s=SECONDS,
        from another process); an Azure client reads it as ServerBusy;
      * deny(code): every request is answered 403 with that <Code>
        (AccessDenied, SignatureDoesNotMatch), until deny(None);
      * range_fault(pattern, fault, times): ranged GETs whose target
        contains `pattern` and that do not start at byte 0 (tensor data,
        not the header a reader checks when it opens a step) are answered
        "416" (InvalidRange), "404" (NoSuchKey), or "cut" (the promised
        Content-Length, then the connection closed half way); `times` of
        them (None: all).
    `log` records (method, target, what) of every request."""

    def __init__(self, upstream_port, uploads=()):
        self.upstream = upstream_port
        self.uploads = list(uploads)
        self.aborted = []
        self.log = []
        self.lock = threading.Lock()
        self._slow_until = 0.0
        self._deny = None
        self._range = None  # (pattern, fault, times left or None)
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(128)
        self.port = self.srv.getsockname()[1]
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    # -- switches ----------------------------------------------------------
    def slowdown(self, seconds):
        with self.lock:
            self._slow_until = time.monotonic() + seconds

    def slowdown_over(self):
        """Whether the SlowDown of slowdown() has ended: its requests are
        forwarded again."""
        with self.lock:
            return time.monotonic() >= self._slow_until

    def deny(self, code="AccessDenied"):
        with self.lock:
            self._deny = code

    def range_fault(self, pattern, fault, times=None):
        with self.lock:
            self._range = None if pattern is None else [pattern, fault, times]

    def close(self):
        self.stopped = True
        self.srv.close()

    # -- serving -----------------------------------------------------------
    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,),
                             daemon=True).start()

    def _note(self, method, target, what):
        with self.lock:
            self.log.append((method, target, what))

    def _canned(self, method, target, head):
        """An answer of the proxy's own (bytes), or None to forward."""
        path, _, query = target.partition("?")
        params = urllib.parse.parse_qs(query, keep_blank_values=True)
        with self.lock:
            slow = time.monotonic() < self._slow_until
            deny = self._deny
            rng = self._range
        if path == "/__proxy/slowdown":
            # the switch, for test processes that cannot call slowdown()
            self.slowdown(float(params.get("s", ["10"])[0]))
            return "switch", (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                              b"Connection: close\r\n\r\n")
        if slow:
            return "503", _s3_error(503, "SlowDown", "Please reduce your "
                                    "request rate.")
        if deny:
            return "403", _s3_error(403, deny, "Access denied by the test.")
        if method == "GET" and "uploads" in params:
            prefix = params.get("prefix", [""])[0]
            items = "".join(
                "<Upload><Key>%s</Key><UploadId>%s</UploadId>"
                "<Initiated>2020-01-01T00:00:00.000Z</Initiated></Upload>"
                % (_xml_escape_once(k), u) for k, u in self.uploads
                if k.startswith(prefix))
            body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<ListMultipartUploadsResult><Bucket>b</Bucket>"
                    "<Prefix>%s</Prefix><IsTruncated>false</IsTruncated>%s"
                    "</ListMultipartUploadsResult>"
                    % (_xml_escape_once(prefix), items)).encode()
            return "200", (b"HTTP/1.1 200 OK\r\nContent-Type: application/"
                           b"xml\r\nContent-Length: %d\r\nConnection: close"
                           b"\r\n\r\n" % len(body) + body)
        if method == "DELETE" and "uploadId" in params:
            uid = params["uploadId"][0]
            for k, u in self.uploads:
                if u == uid:
                    with self.lock:
                        self.aborted.append(k)
                    return "204", (b"HTTP/1.1 204 No Content\r\nConnection: "
                                   b"close\r\n\r\n")
        if rng and method == "GET" and rng[0] in urllib.parse.unquote(path) \
                and re.search(rb"(?im)^range:", head) \
                and not re.search(rb"(?im)^range:\s*bytes=0-", head):
            with self.lock:
                if rng[2] is not None:
                    if rng[2] <= 0:
                        return None
                    rng[2] -= 1
            if rng[1] == "416":
                return "416", _s3_error(416, "InvalidRange", "The requested "
                                        "range is not satisfiable")
            if rng[1] == "404":
                return "404", _s3_error(404, "NoSuchKey", "The specified key "
                                        "does not exist.")
            return "cut", None  # forwarded, then cut (see _serve)
        return None

    def _serve(self, c):
        try:
            with c:
                req = _recv_request(c)
                if req is None:
                    return
                head, body = req
                line = head.split(b"\r\n", 1)[0].decode(errors="replace")
                method, target = (line.split(" ") + ["", ""])[:2]
                canned = self._canned(method, target, head)
                if canned and canned[1] is not None:
                    self._note(method, target, canned[0])
                    c.sendall(canned[1])
                    return
                head2 = re.sub(rb"(?im)^connection:.*\r\n", b"",
                               head + b"\r\n")
                u = socket.create_connection(("127.0.0.1", self.upstream))
                with u:
                    u.sendall(head2 + b"Connection: close\r\n\r\n" + body)
                    resp = _recv_response(u)
                rhead, rbody = _split_response(resp)
                if method == "GET" and "list-type=2" in target:
                    rbody = re.sub(
                        rb"<Key>(.*?)</Key>",
                        lambda m: b"<Key>" + _xml_escape_once(
                            m.group(1).decode()).encode() + b"</Key>",
                        rbody, flags=re.S)
                status = rhead.split(b" ", 2)[1].decode() if rhead else "?"
                if canned and canned[0] == "cut" and len(rbody) > 1:
                    self._note(method, target, "cut")
                    full = _with_body(rhead, rbody)
                    cut = full.index(b"\r\n\r\n") + 4 + len(rbody) // 2
                    c.sendall(full[:cut])
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    return
                c.sendall(_with_body(rhead, rbody))
                self._note(method, target, status)
        except OSError:
            pass
