"""`spotrun check gcp`: Google credentials found the way gcloud and the
client libraries find them (lib/gcp/gcpcred.c), reported as valid,
missing or bad with the variable or file to fix, against the GCE
emulator's token endpoint and Compute API on 127.0.0.1.  The service
account's RS256 JWT is checked there (alg, iss, scope, aud, iat/exp)."""
import json
import os
import subprocess

import pytest

import gce_emu
from test_ctl_crash import ROOT


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gcecreds")
    proc, url = gce_emu.start(tmp)
    yield tmp, url
    proc.terminate()
    proc.wait(timeout=20)


def env_for(tmp, **kv):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "GCE_", "CLOUDSDK_"))}
    env.update(HOME=str(tmp), SPOTRUN_LOG_LEVEL="error",
               CLOUDSDK_COMPUTE_REGION="us-central1")
    env.update(kv)
    return env


def check(env):
    r = subprocess.run(["spotrun", "check", "gcp", "--json"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    return r.returncode, json.loads(r.stdout)["providers"][0]


def test_missing_names_the_variable_and_file(tmp_path):
    rc, g = check(env_for(tmp_path))
    assert rc == 1 and g["credentials_state"] == "missing"
    assert "GOOGLE_APPLICATION_CREDENTIALS" in g["reason"]
    assert "application_default_credentials.json" in g["reason"]


def test_bad_files_name_the_field(tmp_path):
    p = tmp_path / "k.json"
    p.write_text('{"type": "service_account", "client_email": "a@b"}')
    rc, g = check(env_for(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(p)))
    assert rc == 1 and g["credentials_state"] == "bad"
    assert str(p) in g["reason"] and '"private_key"' in g["reason"]
    p.write_text('{"type": "external_account"}')
    rc, g = check(env_for(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(p)))
    assert rc == 1 and "external accounts are not supported" in g["reason"]
    p.write_text('not json')
    rc, g = check(env_for(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(p)))
    assert rc == 1 and g["credentials_state"] == "bad"


def test_service_account_jwt_and_zones(emu, tmp_path):
    tmp, url = emu
    key = gce_emu.key_file(tmp_path, url)
    env = env_for(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=key,
                  CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=url + "/compute/v1")
    rc, g = check(env)
    assert rc == 0, g
    assert g["credentials_state"] == "valid"
    assert g["credentials"].startswith(
        "service account spotrun@spotrun-emu.iam.gserviceaccount.com")
    assert g["region"] == "us-central1"
    assert g["zones"] == gce_emu.ZONES
    assert g["credentials_expire_s"] > 0
    # a key whose JWT names another audience is refused there: bad
    with open(key) as f:
        doc = json.load(f)
    doc["token_uri"] = url + "/token?aud=elsewhere"
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps(doc))
    rc, g = check(dict(env, GOOGLE_APPLICATION_CREDENTIALS=str(bad)))
    assert rc == 1 and g["credentials_state"] == "bad"
    assert "refused the credentials" in g["reason"]
    assert "BEGIN PRIVATE KEY" not in json.dumps(g)


def test_gcloud_adc_authorized_user(emu, tmp_path):
    tmp, url = emu
    cfg = tmp_path / "gcloud"
    cfg.mkdir()
    (cfg / "application_default_credentials.json").write_text(json.dumps({
        "type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
        "client_secret": "csecretDONOTPRINT", "refresh_token": "1//refreshDONOTPRINT",
        "quota_project_id": "spotrun-emu", "token_uri": url + "/token"}))
    rc, g = check(env_for(tmp_path, CLOUDSDK_CONFIG=str(cfg),
                          CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=url + "/compute/v1"))
    assert rc == 0, g
    assert g["credentials"].startswith("user credentials (gcloud application-default")
    assert "DONOTPRINT" not in json.dumps(g)
