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
import urllib.request

import pytest

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
        pytest.skip("node is not installed (scripts/install-deps)")
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
            cwd=NPM_DIR)
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
            cwd=NPM_DIR)
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
