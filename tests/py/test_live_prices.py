"""`spotrun plan` and `spotrun gpus` price a cloud from its live feed when
its credentials are found, and from the bundled catalog otherwise, and
say which (lib/providers/liveprice.c, cloud_prov_def.live_prices).  AWS's
feed is DescribeSpotPriceHistory, asked here of the EC2 emulator on
127.0.0.1 (its prices replay the local market's traces)."""
import json
import os
import subprocess

from test_ctl_crash import ROOT
from test_e2e_aws_emu import start_emulator

JOB = os.path.join(ROOT, "examples", "jobs")


def env_without_clouds(tmp_path, **kv):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "GOOGLE_", "GCE_", "CLOUDSDK_"))}
    env.update(HOME=str(tmp_path), AWS_EC2_METADATA_DISABLED="true",
               SPOTRUN_LOG_LEVEL="error", SPOTRUN_CONFIG="")
    env.update(kv)
    return env


def gpus(env, *args):
    r = subprocess.run(["spotrun", "gpus", "--json", *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    return r, (json.loads(r.stdout) if r.returncode == 0 else None)


def test_catalog_without_credentials_and_live_refused(tmp_path):
    env = env_without_clouds(tmp_path)
    r, doc = gpus(env, "--cloud", "aws")
    assert r.returncode == 0, r.stderr
    src = {s["cloud"]: s for s in doc["price_sources"]}
    assert src["aws"]["source"] == "catalog"
    assert "credentials missing" in src["aws"]["why"]
    assert "AWS_REGION" in src["aws"]["why"]
    r, _ = gpus(env, "--cloud", "aws", "--prices", "live")
    assert r.returncode == 1 and "aws: no live prices" in r.stderr
    r, _ = gpus(env, "--prices", "sometimes")
    assert r.returncode == 2 and "--prices 'sometimes'" in r.stderr
    r = subprocess.run(["spotrun", "gpus", "H100"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("prices: aws catalog (")


def test_live_feed_reprices_the_region(tmp_path):
    proc, url = start_emulator(tmp_path)
    try:
        env = env_without_clouds(
            tmp_path, AWS_ENDPOINT_URL_EC2=url, AWS_REGION="us-east-1",
            AWS_ACCESS_KEY_ID="AKIALIVE", AWS_SECRET_ACCESS_KEY="livesecret")
        r, live = gpus(env, "--cloud", "aws", "--region", "us-east-1")
        assert r.returncode == 0, r.stderr
        src = {s["cloud"]: s for s in live["price_sources"]}["aws"]
        assert src["source"] == "live", src
        assert src["feed"] == "EC2 DescribeSpotPriceHistory us-east-1"
        assert 0 < src["quoted"] <= src["rows"]
        r, cat = gpus(env, "--cloud", "aws", "--region", "us-east-1",
                      "--prices", "catalog")
        assert r.returncode == 0, r.stderr
        src = {s["cloud"]: s for s in cat["price_sources"]}["aws"]
        assert src["source"] == "catalog" and src["why"] == "--prices catalog"
        # the plan says the same, and its text names the feed
        r = subprocess.run(["spotrun", "plan", os.path.join(JOB, "demo.yaml"),
                            "--limit", "1"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "aws live (EC2 DescribeSpotPriceHistory us-east-1, " in \
            r.stdout.splitlines()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
