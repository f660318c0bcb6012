"""`spotrun check`: which providers can be used.  AWS is pointed at a
local EC2 stand-in on 127.0.0.1 (AWS_ENDPOINT_URL_EC2); the test asserts
the signed call arrived, the zones it answered are reported, and every
missing-credential case names the variable or file at fault without
printing a secret."""
import http.server
import json
import os
import subprocess
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRET = "checksecretDONOTPRINT"

OFFERINGS = b"""<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstanceTypeOfferingsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
<requestId>1</requestId><instanceTypeOfferingSet>
<item><instanceType>m5.large</instanceType><locationType>availability-zone</locationType><location>us-east-1b</location></item>
<item><instanceType>m5.large</instanceType><locationType>availability-zone</locationType><location>us-east-1a</location></item>
</instanceTypeOfferingSet></DescribeInstanceTypeOfferingsResponse>"""

AUTH_FAIL = b"""<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials</Message></Error></Errors><RequestID>2</RequestID></Response>"""


class Ec2Stub(http.server.BaseHTTPRequestHandler):
    seen = []
    answer = (200, OFFERINGS)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n).decode()
        Ec2Stub.seen.append((body, self.headers.get("Authorization", "")))
        status, doc = Ec2Stub.answer
        self.send_response(status)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(doc)))
        self.end_headers()
        self.wfile.write(doc)

    def log_message(self, *a):
        pass


@pytest.fixture
def ec2():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ec2Stub)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    Ec2Stub.seen = []
    Ec2Stub.answer = (200, OFFERINGS)
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def env_for(tmp_path, **kv):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp_path), AWS_EC2_METADATA_DISABLED="true",
               SPOTRUN_LOG_LEVEL="error")
    env.update(kv)
    return env


def check(env, *args):
    return subprocess.run(["spotrun", "check", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_help_and_usage():
    r = subprocess.run(["spotrun", "check", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage: spotrun check" in r.stdout
    r = subprocess.run(["spotrun", "check", "gcpx"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown provider 'gcpx'" in r.stderr
    r = subprocess.run(["spotrun", "check", "--bogus"], capture_output=True, text=True)
    assert r.returncode == 2 and "'--bogus'" in r.stderr


def test_aws_valid_credentials(ec2, tmp_path):
    env = env_for(tmp_path, AWS_ACCESS_KEY_ID="AKIACHECK", AWS_SECRET_ACCESS_KEY=SECRET,
                  AWS_REGION="us-east-1", AWS_ENDPOINT_URL_EC2=ec2)
    r = check(env, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    by = {p["provider"]: p for p in doc["providers"]}
    assert by["local"]["enabled"] is True
    aws = by["aws"]
    assert aws["enabled"] is True
    assert aws["credentials"] == "environment (AWS_ACCESS_KEY_ID)"
    assert aws["region"] == "us-east-1" and aws["endpoint"] == ec2
    assert aws["zones"] == ["us-east-1a", "us-east-1b"]
    body, auth = Ec2Stub.seen[0]
    assert "Action=DescribeInstanceTypeOfferings" in body
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIACHECK/")
    assert "/us-east-1/ec2/aws4_request" in auth
    r = check(env, "aws")
    assert r.returncode == 0
    assert "aws    enabled" in r.stdout and "us-east-1a us-east-1b" in r.stdout
    assert SECRET not in r.stdout + r.stderr


def test_aws_profile_and_rejected_credentials(ec2, tmp_path):
    os.makedirs(tmp_path / ".aws")
    (tmp_path / ".aws" / "credentials").write_text(
        "[team]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = %s\n" % SECRET)
    (tmp_path / ".aws" / "config").write_text("[profile team]\nregion = eu-west-1\n")
    Ec2Stub.answer = (401, AUTH_FAIL)
    env = env_for(tmp_path, AWS_PROFILE="team", AWS_ENDPOINT_URL_EC2=ec2)
    r = check(env, "--json", "aws")
    assert r.returncode == 1
    aws = json.loads(r.stdout)["providers"][0]
    assert aws["enabled"] is False
    assert "signed call failed (auth)" in aws["reason"]
    assert "AuthFailure" in aws["reason"]
    assert Ec2Stub.seen and "/eu-west-1/ec2/" in Ec2Stub.seen[0][1]
    assert SECRET not in r.stdout + r.stderr


def test_aws_missing_pieces_are_named(tmp_path):
    r = check(env_for(tmp_path, AWS_REGION="us-east-1"), "aws")
    assert r.returncode == 1
    assert "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in r.stdout
    assert "~/.aws/credentials" in r.stdout
    r = check(env_for(tmp_path, AWS_ACCESS_KEY_ID="AKIAX"), "--json", "aws")
    aws = json.loads(r.stdout)["providers"][0]
    assert "AWS_REGION" in aws["reason"]
    r = check(env_for(tmp_path, AWS_REGION="us-east-1", AWS_ACCESS_KEY_ID="AKIAX"), "aws")
    assert "AWS_SECRET_ACCESS_KEY is not" in r.stdout
    r = check(env_for(tmp_path, AWS_REGION="us-east-1", AWS_PROFILE="ghost"), "aws")
    assert "AWS_PROFILE=ghost: no such profile in" in r.stdout
    # without arguments a disabled provider is reported, not an error
    r = check(env_for(tmp_path))
    assert r.returncode == 0 and "local  enabled" in r.stdout and "aws    disabled" in r.stdout


def iso(t):
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def test_aws_credentials_that_cannot_be_renewed(ec2, tmp_path):
    """An exported session that runs out within the hour is a WARNING that
    says what to do; an expired one disables the provider - before a job
    would need it."""
    import time
    base = dict(AWS_ACCESS_KEY_ID="ASIASESS", AWS_SECRET_ACCESS_KEY=SECRET,
                AWS_SESSION_TOKEN="sesstokenDONOTPRINT", AWS_REGION="us-east-1",
                AWS_ENDPOINT_URL_EC2=ec2)
    soon = iso(time.time() + 1800)
    r = check(env_for(tmp_path, AWS_CREDENTIAL_EXPIRATION=soon, **base), "aws")
    assert r.returncode == 0, r.stdout
    assert "expires:     %s" % soon in r.stdout
    assert "WARNING:     aws credentials from environment" in r.stdout
    assert "cannot be renewed" in r.stdout and "credential_process" in r.stdout
    r = check(env_for(tmp_path, AWS_CREDENTIAL_EXPIRATION=soon, **base), "--json", "aws")
    aws = json.loads(r.stdout)["providers"][0]
    assert aws["enabled"] is True
    assert iso(aws["credentials_expire_s"]) == soon
    assert "cannot be renewed" in aws["warning"]
    r = check(env_for(tmp_path, AWS_CREDENTIAL_EXPIRATION=iso(time.time() - 60),
                      **base), "--json", "aws")
    assert r.returncode == 1
    aws = json.loads(r.stdout)["providers"][0]
    assert aws["enabled"] is False and " expired at " in aws["reason"]
    # a session good for longer: no warning
    r = check(env_for(tmp_path, AWS_CREDENTIAL_EXPIRATION=iso(time.time() + 6 * 3600),
                      **base), "aws")
    assert r.returncode == 0 and "WARNING" not in r.stdout
    assert SECRET not in r.stdout + r.stderr
    assert "sesstokenDONOTPRINT" not in r.stdout + r.stderr


def test_aws_credential_process_profile(ec2, tmp_path):
    """A profile whose credentials come from a command: they renew
    themselves, so only their expiry is shown."""
    import time
    exp = iso(time.time() + 1800)
    os.makedirs(tmp_path / ".aws")
    tool = tmp_path / "get creds.sh"
    tool.write_text("#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"ASIAPROC\","
                    " \"SecretAccessKey\": \"%s\", \"SessionToken\": \"t\","
                    " \"Expiration\": \"%s\"}'\n" % (SECRET, exp))
    tool.chmod(0o700)
    (tmp_path / ".aws" / "config").write_text(
        "[profile ops]\nregion = us-east-1\ncredential_process = '%s' --x\n" % tool)
    r = check(env_for(tmp_path, AWS_PROFILE="ops", AWS_ENDPOINT_URL_EC2=ec2), "aws")
    assert r.returncode == 0, r.stdout
    assert "credentials: profile ops (credential_process " in r.stdout
    assert "expires:     %s" % exp in r.stdout and "WARNING" not in r.stdout
    assert Ec2Stub.seen[-1][1].startswith("AWS4-HMAC-SHA256 Credential=ASIAPROC/")
    assert SECRET not in r.stdout + r.stderr
