"""gs:// (the GCS XML API with HMAC keys) checked against Google's own
client: @google-cloud/storage (npm, tests/objstore), whose TransferManager
uploads through the same XML API multipart calls.

No GCS emulator on npm serves the XML API (see docs/checkpoint.md, "GCS"),
so this is a conformance test in the style of tests/conformance: a small
recording XML API server (below; an in-memory store that answers like
GCS: UploadId, part ETags = MD5, ListObjectsV2, ranged GETs) takes a whole
tier-3 round trip over gs://, then the SDK uploads the very bytes of the
shard object with the same part size, and the two request streams must
agree: the calls and their query parameters, the part boundaries, each
part's CRC32C in the SDK's own `x-goog-hash: crc32c=` form (so our CRC32C
and its encoding match Google's for the same bytes), and the completion
body's parts and ETags.  Our requests must also carry SigV4 with GCS's
scope (region "auto", service "s3") under the HMAC key id, and no
x-amz-checksum-* header (GCS's XML API does not take them)."""

import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import urllib.parse
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import spotrun
from objstore_servers import NPM_DIR, need_npm

PART = 5 << 20
HMAC_ID = "GOOGTS7C7FUP3AIRVJTE2BCDKINBTES3HC2GY5CBFJDCQ2SYHV6A6XXVTJFSA"


class GcsXmlRecorder:
    """The XML API calls tier 3 makes, served from memory, every request
    logged as (method, path, query dict, lower-cased headers, body)."""

    def __init__(self, bucket):
        self.bucket = bucket
        self.objects, self.uploads, self.log = {}, {}, []
        self.lock = threading.Lock()
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_any(self):
                u = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                path = urllib.parse.unquote(u.path)
                with rec.lock:
                    rec.log.append((self.command, path, q, hdrs, body))
                    st, h, out = rec.answer(self.command, path, q, hdrs, body)
                self.send_response(st)
                for k, v in h.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(out)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_any

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()

    @staticmethod
    def err(st, code):
        return st, {}, ("<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s"
                        "</Code><Message>%s</Message></Error>" % (code, code)
                        ).encode()

    def answer(self, m, path, q, hdrs, body):
        if not path.startswith("/" + self.bucket):
            return self.err(404, "NoSuchBucket")
        key = path[len(self.bucket) + 2:]
        etag = '"%s"' % hashlib.md5(body).hexdigest()
        if m == "GET" and not key and q.get("list-type") == "2":
            pre = q.get("prefix", "")
            items = "".join("<Contents><Key>%s</Key><Size>%d</Size></Contents>"
                            % (k, len(v)) for k, v in sorted(self.objects.items())
                            if k.startswith(pre))
            return 200, {}, ("<?xml version='1.0' encoding='UTF-8'?>"
                             "<ListBucketResult><Name>%s</Name>%s<IsTruncated>"
                             "false</IsTruncated></ListBucketResult>"
                             % (self.bucket, items)).encode()
        if m == "GET" and not key and "uploads" in q:
            return 200, {}, b"<ListMultipartUploadsResult></ListMultipartUploadsResult>"
        if m == "POST" and "uploads" in q:
            uid = "up%d" % (len(self.uploads) + 1)
            self.uploads[uid] = (key, {})
            return 200, {}, ("<InitiateMultipartUploadResult><Bucket>%s</Bucket>"
                             "<Key>%s</Key><UploadId>%s</UploadId>"
                             "</InitiateMultipartUploadResult>"
                             % (self.bucket, key, uid)).encode()
        if m == "PUT" and "partNumber" in q:
            if q.get("uploadId") not in self.uploads:
                return self.err(404, "NoSuchUpload")
            self.uploads[q["uploadId"]][1][int(q["partNumber"])] = body
            return 200, {"ETag": etag}, b""
        if m == "POST" and "uploadId" in q:
            k, parts = self.uploads.pop(q["uploadId"])
            data = b""
            for p in ET.fromstring(body).iter("Part"):
                b = parts[int(p.find("PartNumber").text)]
                if p.find("ETag").text.strip('"') != hashlib.md5(b).hexdigest():
                    return self.err(400, "InvalidPart")
                data += b
            self.objects[k] = data
            return 200, {}, b"<CompleteMultipartUploadResult/>"
        if m == "DELETE" and "uploadId" in q:
            self.uploads.pop(q["uploadId"], None)
            return 204, {}, b""
        if m == "PUT":
            if "content-md5" in hdrs and hdrs["content-md5"] != \
                    __import__("base64").b64encode(hashlib.md5(body).digest()).decode():
                return self.err(400, "BadDigest")
            self.objects[key] = body
            return 200, {"ETag": etag}, b""
        if m == "DELETE":
            self.objects.pop(key, None)
            return 204, {}, b""
        if m == "GET" and key in self.objects:
            v = self.objects[key]
            r = re.fullmatch(r"bytes=(\d+)-(\d+)", hdrs.get("range", ""))
            if r:
                a, b = int(r.group(1)), int(r.group(2))
                return 206, {"Content-Range": "bytes %d-%d/%d" % (a, b, len(v))}, \
                    v[a:b + 1]
            return 200, {}, v
        return self.err(404, "NoSuchKey")


def calls(log):
    """(verb, query keys, part number, size, x-goog-hash, completion parts)
    of one multipart upload, in part order."""
    out = []
    for m, q, hdrs, body in log:
        if m == "POST" and "uploads" in q:
            out.append(("create", sorted(q), None, len(body), None, None))
        elif m == "PUT" and "partNumber" in q:
            out.append(("part", sorted(q), int(q["partNumber"]), len(body),
                        hdrs.get("x-goog-hash"), None))
        elif m == "POST" and "uploadId" in q:
            parts = [(int(p.find("PartNumber").text), p.find("ETag").text)
                     for p in ET.fromstring(body).iter("Part")]
            out.append(("complete", sorted(q), None, None, None, parts))
    return sorted(out, key=lambda c: ({"create": 0, "part": 1,
                                       "complete": 2}[c[0]], c[2] or 0))


def test_gcs_against_google_sdk(tmp_path, monkeypatch):
    need_npm("@google-cloud/storage")
    srv = GcsXmlRecorder("ckpt")
    try:
        for k in ("SPOTRUN_OBJSTORE_CHECKSUM",):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.setenv("SPOTRUN_GCS_ENDPOINT", "http://127.0.0.1:%d" % srv.port)
        monkeypatch.setenv("SPOTRUN_GCS_HMAC_ACCESS_KEY_ID", HMAC_ID)
        monkeypatch.setenv("SPOTRUN_GCS_HMAC_SECRET", "bGoa+V7g/yqDXvKRqq+JTFn4uQZbPiQJo4pf9RzJ")
        monkeypatch.setenv("SPOTRUN_OBJSTORE_PART_MB", str(PART >> 20))
        uri = "gs://ckpt/jobs/7"
        w = np.arange(3_000_000, dtype=np.float32)  # 12 MB: three parts
        with spotrun.Checkpointer(str(tmp_path / "n1"), remote=uri) as ck:
            ck.save(5, {"w": w, "step": 5})
            ck.wait()
            assert ck.remote_wait(5), ck.remote_stats()
        # a fresh node restores from gs://, every tensor checked
        got = {"w": np.zeros_like(w), "step": -1}
        assert spotrun.restore(uri, got) == 5
        assert np.array_equal(got["w"], w) and got["step"] == 5
        assert [e["step"] for e in spotrun.list_checkpoints(uri)] == [5]

        shard = "jobs/7/step-00000005/shard-00000.safetensors"
        ours = [(m, q, h, b) for m, p, q, h, b in srv.log
                if p == "/ckpt/" + shard]
        for m, p, q, h, b in srv.log:
            a = h.get("authorization", "")
            assert re.match(r"AWS4-HMAC-SHA256 Credential=%s/\d{8}/auto/s3/"
                            r"aws4_request, SignedHeaders=\S*host\S*, "
                            r"Signature=[0-9a-f]{64}$" % HMAC_ID, a), (m, p, a)
            assert not any(k.startswith("x-amz-checksum") for k in h), (m, p, h)
        # the SDK uploads the same bytes with the same part size
        f = tmp_path / "shard.bin"
        f.write_bytes(srv.objects[shard])
        out = tmp_path / "sdk.json"
        subprocess.run(["node", os.path.join(NPM_DIR, "gcs-sdk-upload.js"),
                        str(f), "ckpt", shard, str(PART), str(out)],
                       check=True, cwd=NPM_DIR, timeout=120)
        sdk = json.loads(out.read_text())
        assert {r["path"] for r in sdk} == {"/" + shard}
        theirs = [(r["method"], r["query"], r["headers"],
                   r.get("body", "").encode() if "body" in r
                   else b"\0" * r["body_len"]) for r in sdk]
        a, b = calls(ours), calls(theirs)
        assert len(a) == 5, a  # create, three parts, complete
        # the same calls, parts, sizes and CRC32C values; the completion
        # names the same parts with the same ETags (the server's MD5s)
        assert [c[:5] for c in a] == [c[:5] for c in b]
        assert a[-1][5] == b[-1][5] and len(a[-1][5]) == 3
        assert all(c[4].startswith("crc32c=") for c in a if c[0] == "part")
        # a flipped byte in the stored tensor data fails the restore's
        # XXH3 check: with the step named it is an error, without it the
        # step is skipped (nothing older to fall back to)
        v = bytearray(srv.objects[shard])
        v[-1000] ^= 0x40
        srv.objects[shard] = bytes(v)
        with pytest.raises(Exception, match="checksum mismatch"):
            spotrun.restore(uri, {"w": np.zeros_like(w), "step": -1}, step=5)
        assert spotrun.restore(uri, {"w": np.zeros_like(w), "step": -1}) is None
        # a checksum setting we do not know is refused, by name
        p = subprocess.run([os.path.join(os.environ.get("SPOTRUN_BUILD", "build"),
                                         "bin", "spotrun"), "ckpt", "ls", uri],
                           env=dict(os.environ, SPOTRUN_OBJSTORE_CHECKSUM="sha1"),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode != 0
        assert "SPOTRUN_OBJSTORE_CHECKSUM='sha1': expected crc32c or md5" \
            in p.stderr
    finally:
        srv.close()
