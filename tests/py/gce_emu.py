"""The GCE emulator (`spotrun gce-emulator`) for tests: started on
127.0.0.1, with a service-account key file whose token_uri is the
emulator's /token (its RS256 JWT is checked there), and the environment
that points the gcp provider at it."""
import json
import os
import subprocess
import urllib.parse
import urllib.request

import pytest

from test_ctl_crash import BUILD, ROOT

ZONES = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"]


def start(tmp, time_scale=10, notice_s=30, zones=ZONES, request_log=None,
          no_capacity=(), billing_skus=None):
    """The emulator: zones with plenty of spot capacity, no_capacity's
    zones with none (the others as the traces say); billing_skus: a file
    of Cloud Billing Catalog SKUs it serves."""
    work = os.path.join(str(tmp), "gce")
    os.makedirs(work)
    args = [os.path.join(BUILD, "bin", "spotrun"), "gce-emulator",
            "--work-dir", work, "--data", os.path.join(ROOT, "data"),
            "--time-scale", str(time_scale), "--notice-s", str(notice_s)]
    for z in zones:
        args += ["--capacity", "%s=plenty" % z]
    for z in no_capacity:
        args += ["--capacity", "%s=none" % z]
    if request_log:
        args += ["--request-log", request_log]
    if billing_skus:
        args += ["--billing-skus", billing_skus]
    log = open(os.path.join(str(tmp), "gce-emulator.log"), "wb")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log,
                            start_new_session=True, text=True)
    log.close()
    url = proc.stdout.readline().strip()
    if urllib.parse.urlsplit(url).hostname != "127.0.0.1":
        proc.kill()
        pytest.fail("refusing a GCE endpoint not on loopback: %r" % url)
    return proc, url


def key_file(tmp, url):
    """A service-account key (a fresh RSA key, openssl) for the emulator."""
    pem = os.path.join(str(tmp), "sa.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                    "rsa_keygen_bits:2048", "-out", pem], check=True,
                   capture_output=True)
    with open(pem) as f:
        key = f.read()
    path = os.path.join(str(tmp), "sa.json")
    with open(path, "w") as f:
        json.dump({"type": "service_account", "project_id": "spotrun-emu",
                   "private_key_id": "0123abcd", "private_key": key,
                   "client_email": "spotrun@spotrun-emu.iam.gserviceaccount.com",
                   "token_uri": url + "/token"}, f)
    os.chmod(path, 0o600)
    return path


def gcp_env(monkeypatch, tmp, url):
    for k in list(os.environ):
        if k.startswith(("GOOGLE_", "GCE_", "CLOUDSDK_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", key_file(tmp, url))
    monkeypatch.setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE",
                       url + "/compute/v1")
    monkeypatch.setenv("CLOUDSDK_COMPUTE_REGION", "us-central1")


def preempt(url, name=None, keep_capacity=False):
    q = urllib.parse.urlencode(
        ([("name", name)] if name else []) +
        ([("keep_capacity", "true")] if keep_capacity else []))
    q = "?" + q if q else ""
    req = urllib.request.Request(url + "/emu/preempt" + q, data=b"",
                                 method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)["affected"]


def capacity(url, zone, spot):
    """The zone's spot capacity from now on: "none" (its spot VMs are
    preempted) or "plenty"."""
    q = urllib.parse.urlencode([("zone", zone), ("spot", spot)])
    req = urllib.request.Request(url + "/emu/capacity?" + q, data=b"",
                                 method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)["affected"]
