"""GCP's live prices (issue 31): `spotrun gpus` prices the catalog's GCP
machines from the Cloud Billing Catalog API (services/6F81-5844-456A/skus,
the official shape), served here by the GCE emulator from a file of SKUs,
three a page, behind its token endpoint: a machine is its family's vCPU
and memory rates and its GPUs', on demand and spot, and price_sources
names the feed.  Without credentials the catalog answers, saying why."""
import json
import os
import subprocess

from test_ctl_crash import ROOT
from test_live_prices import env_without_clouds, gpus
import gce_emu


def sku(desc, use, unit, nanos):
    return {"name": "services/6F81-5844-456A/skus/X", "description": desc,
            "category": {"serviceDisplayName": "Compute Engine",
                         "resourceFamily": "Compute", "usageType": use},
            "serviceRegions": ["us-central1", "us-east1"],
            "pricingInfo": [{"pricingExpression": {
                "usageUnit": unit, "tieredRates": [{
                    "startUsageAmount": 0, "unitPrice": {
                        "currencyCode": "USD", "units": "0",
                        "nanos": nanos}}]}}]}


SKUS = [sku("Nvidia L4 GPU running in Americas", "OnDemand", "h", 560000000),
        sku("Spot Preemptible Nvidia L4 GPU running in Americas",
            "Preemptible", "h", 223600000),
        sku("G2 Instance Core running in Americas", "OnDemand", "h", 24850000),
        sku("Spot Preemptible G2 Instance Core running in Americas",
            "Preemptible", "h", 9940000),
        sku("G2 Instance Ram running in Americas", "OnDemand", "GiBy.h",
            2912000),
        sku("Spot Preemptible G2 Instance Ram running in Americas",
            "Preemptible", "GiBy.h", 1165000),
        sku("Commitment v1: G2 Cpu in Americas for 1 Year", "Commit1Yr", "h",
            1000)]


def test_gpus_priced_from_the_billing_catalog(tmp_path):
    f = tmp_path / "skus.json"
    f.write_text(json.dumps({"skus": SKUS}))
    log = str(tmp_path / "requests.log")
    proc, url = gce_emu.start(tmp_path, billing_skus=str(f), request_log=log)
    try:
        env = env_without_clouds(
            tmp_path, GOOGLE_APPLICATION_CREDENTIALS=gce_emu.key_file(
                tmp_path, url),
            CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDBILLING=url,
            CLOUDSDK_COMPUTE_REGION="us-central1")
        r, doc = gpus(env, "--cloud", "gcp", "--region", "us-central1", "L4")
        assert r.returncode == 0, r.stderr
        src = {s["cloud"]: s for s in doc["price_sources"]}["gcp"]
        assert src["source"] == "live", src
        assert src["feed"] == ("Cloud Billing Catalog API %s (services/"
                               "6F81-5844-456A/skus) us-central1" % url), src
        assert 0 < src["quoted"] <= src["rows"]
        one = [g for g in doc["gpus"] if g["count"] == 1.0][0]
        # g2-standard-4: 4 vCPU, 16 GiB, one L4
        assert one["spot"]["instance_type"] == "g2-standard-4", one
        assert one["spot"]["price_per_h_micros"] == 4 * 9940 + 16 * 1165 + 223600
        assert one["ondemand"]["price_per_h_micros"] == \
            4 * 24850 + 16 * 2912 + 560000
        with open(log) as lf:
            pages = [l for l in lf if "/v1/services/6F81-5844-456A/skus" in l]
        assert len(pages) == 3, pages   # 7 SKUs, 3 a page: every page read
        # the catalog, asked for
        r, cat = gpus(env, "--cloud", "gcp", "--region", "us-central1",
                      "--prices", "catalog", "L4")
        assert r.returncode == 0, r.stderr
        one_cat = [g for g in cat["gpus"] if g["count"] == 1.0][0]
        assert one_cat["spot"]["price_per_h_micros"] != \
            one["spot"]["price_per_h_micros"], (one_cat, one)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_catalog_without_google_credentials(tmp_path):
    env = env_without_clouds(tmp_path, CLOUDSDK_COMPUTE_REGION="us-central1")
    r, doc = gpus(env, "--cloud", "gcp", "L4")
    assert r.returncode == 0, r.stderr
    src = {s["cloud"]: s for s in doc["price_sources"]}["gcp"]
    assert src["source"] == "catalog", src
    assert "credentials missing" in src["why"], src
    assert "GOOGLE_APPLICATION_CREDENTIALS" in src["why"], src
    r = subprocess.run(["spotrun", "gpus", "--cloud", "gcp", "--prices",
                        "live", "L4"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "gcp: no live prices" in r.stderr, r.stderr
