"""A tier-3 job whose nodes cannot reach its object store is refused at
launch (issue 28): `spotrun launch` opens spotrun.checkpoint.uri and
lists it once with exactly the credentials the nodes will get (the
job's envs and --env, HOME's ~/.aws files; never the launching shell's
AWS_* variables).  Without credentials, with credentials the store
refuses, or with no such bucket nothing is submitted and the message
says what to fix; with good ones the job is submitted.  With
--no-store-check and no credentials for the nodes, a workload that
checkpoints to the store fails loudly (FAILED, the store named in its
log), never SUCCEEDED with nothing lost."""

import os
import shutil
import subprocess
import tempfile

from finops_daemon import Daemon, bin_path
from objstore_servers import S3rver


def job_file(tmp, name, uri, run="'true'"):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write("name: %s\n"
                "resources: {accelerators: V100:1, use_spot: true}\n"
                "run: %s\n"
                "spotrun:\n  deadline: 48h\n  work: 1h\n"
                "  checkpoint: {uri: %s}\n" % (name, run, uri))
    return path


def launch(d, tmp, path, env_args, extra=()):
    # the launching shell has good credentials: the nodes do not get them
    env = dict(os.environ, HOME=tmp, AWS_ACCESS_KEY_ID="S3RVER",
               AWS_SECRET_ACCESS_KEY="S3RVER")
    args = [bin_path("spotrun"), "launch", "-y", "-d", path, "--state-dir",
            d.state] + list(extra)
    for kv in env_args.items():
        args += ["--env", "%s=%s" % kv]
    return subprocess.run(args, capture_output=True, text=True, timeout=120,
                          env=env)


def jobs(d):
    return d.req("GET", "/v1/jobs")[1]["jobs"]


def test_tier3_job_without_credentials_is_refused_at_launch():
    tmp = tempfile.mkdtemp(prefix="launch-store-")
    s3 = S3rver(buckets=("ckpt",))
    d = Daemon(tmp)
    try:
        d.start()
        good = s3.env()
        no_keys = {k: v for k, v in good.items() if not k.startswith("AWS_ACCESS")
                   and k != "AWS_SECRET_ACCESS_KEY"}
        uri = "s3://ckpt/jobs/a"
        # no credentials for the nodes
        p = launch(d, tmp, job_file(tmp, "nokeys", uri), no_keys)
        assert p.returncode == 1, p.stdout + p.stderr
        assert "cannot use spotrun.checkpoint.uri" in p.stderr, p.stderr
        assert "credentials" in p.stderr and "--env" in p.stderr, p.stderr
        # credentials the store refuses
        p = launch(d, tmp, job_file(tmp, "badkey", uri),
                   s3.env(secret="wrong-secret"))
        assert p.returncode == 1 and "cannot use" in p.stderr, p.stderr
        assert "SignatureDoesNotMatch" in p.stderr or "403" in p.stderr, p.stderr
        # no such bucket
        p = launch(d, tmp, job_file(tmp, "nobucket", "s3://no-such-bucket/x"), good)
        assert p.returncode == 1 and "cannot use" in p.stderr, p.stderr
        assert "NoSuchBucket" in p.stderr or "no such bucket" in p.stderr.lower(), \
            p.stderr
        assert jobs(d) == [], "a refused launch submitted a job"
        # good credentials through --env: submitted
        p = launch(d, tmp, job_file(tmp, "good", uri), good)
        assert p.returncode == 0, p.stderr
        assert [j["name"] for j in jobs(d)] == ["good"]
        # --no-store-check: the user says the nodes get them otherwise
        p = launch(d, tmp, job_file(tmp, "role", uri), no_keys,
                   extra=["--no-store-check"])
        assert p.returncode == 0, p.stderr
        assert sorted(j["name"] for j in jobs(d)) == ["good", "role"]
        # ... and if they do not, the job fails loudly, naming the store:
        # the checkpointer refuses a store it cannot use, so a training
        # run never goes on without tier 3 to SUCCEEDED with "0 lost"
        run = ("|\n  /usr/bin/python3 -c 'import spotrun; "
               "spotrun.Checkpointer(\"ck\", remote=\"%s\")'" % uri)
        p = launch(d, tmp, job_file(tmp, "nocreds", uri, run), no_keys,
                   extra=["--no-store-check", "--max-restarts", "0"])
        assert p.returncode == 0, p.stderr
        jid = [j["id"] for j in jobs(d) if j["name"] == "nocreds"][0]
        j = d.wait_state(jid, ("SUCCEEDED", "FAILED"), timeout=120)
        assert j["state"] == "FAILED", j
        _, logs = d.req("GET", "/v1/jobs/%d/logs?limit=1000" % jid)
        text = "\n".join(ln.get("line", "") for ln in logs["lines"])
        assert "cannot use %s for checkpoints" % uri in text, text[-2000:]
    finally:
        d.stop()
        s3.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_bucket_mounts_are_checked_too():
    """Issue 30: each bucket file_mounts is checked like the checkpoint
    store - spotrun creates no bucket, so a missing one refuses the
    launch, and every refused store is named in the one run."""
    tmp = tempfile.mkdtemp(prefix="launch-buckets-")
    s3 = S3rver(buckets=("ckpt", "data-set"))
    d = Daemon(tmp)
    try:
        d.start()
        path = os.path.join(tmp, "sky.yaml")
        with open(path, "w") as f:
            f.write("name: sky\n"
                    "resources: {accelerators: V100:1, use_spot: true}\n"
                    "file_mounts:\n"
                    "  /checkpoint: {name: no-such-bucket, store: s3}\n"
                    "  /data: s3://data-set/train\n"
                    "  /out: {source: s3://missing-too/x, mode: MOUNT_CACHED}\n"
                    "run: 'true'\n"
                    "spotrun:\n  deadline: 48h\n  work: 1h\n"
                    "  checkpoint: {uri: 's3://ckpt/jobs/b'}\n")
        p = launch(d, tmp, path, s3.env())
        assert p.returncode == 1, p.stdout + p.stderr
        assert "cannot use the bucket of file_mounts./checkpoint " \
            "(s3://no-such-bucket)" in p.stderr, p.stderr
        assert "cannot use the bucket of file_mounts./out " \
            "(s3://missing-too/x)" in p.stderr, p.stderr
        assert "spotrun creates no bucket" in p.stderr, p.stderr
        assert "file_mounts./data" not in p.stderr, p.stderr
        assert "spotrun.checkpoint.uri" not in p.stderr, p.stderr
        assert jobs(d) == [], "a refused launch submitted a job"
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("no-such-bucket", "ckpt").replace(
                "s3://missing-too/x", "s3://data-set/out"))
        p = launch(d, tmp, path, s3.env())
        assert p.returncode == 0, p.stderr
        assert [j["name"] for j in jobs(d)] == ["sky"]
    finally:
        d.stop()
        s3.close()
        shutil.rmtree(tmp, ignore_errors=True)
