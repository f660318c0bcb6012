"""Issue 24: a job may copy only its own files.

`spotrun launch` reads a job's workdir: and file_mounts: as the user who
launches and uploads them with the job; spotrund and the agents never read
a path of theirs on a job's behalf; the agent unpacks the upload in the
workload's own isolation.

- a job mounting spotrund's api.token or imds.key, a link to them, or
  /etc/shadow, or whose workdir holds a link out of it or the state dir,
  or whose workdir: is neither where launch runs nor under the job
  file's directory (~/.aws), is refused by `spotrun launch` with a clear
  error, and nothing is submitted;
- through the API: a job naming workdir:/file_mounts: without an upload is
  refused (400) - it used to be accepted and to copy daemon paths; an API
  workdir inside the state dir is refused; an upload that is not a clean
  archive (a path out of it) is refused;
- the files that are the job's own arrive, unpacked once the workload's
  isolation is in place.
"""

import io
import json
import os
import subprocess
import tarfile
import urllib.request

from test_e2e_cli import SPOTRUN, Cli, submitted_id

import pytest


@pytest.fixture
def cli(tmp_path):
    c = Cli(tmp_path)
    yield c
    c.stop()


def api(cli, method, path, body=None, ctype="application/json"):
    with open(os.path.join(cli.state, "api.url")) as f:
        url = f.read().strip()
    with open(os.path.join(cli.state, "api.token")) as f:
        tok = f.read().strip()
    data = body if isinstance(body, bytes) or body is None else \
        json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + tok)
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def job(proj, extra, workdir=True):
    path = os.path.join(proj, "job.yaml")
    with open(path, "w") as f:
        f.write("name: files\nresources: {accelerators: V100:1, use_spot: false}\n"
                + ("workdir: .\n" if workdir else "") + extra +
                "run: ls -la\nspotrun: {work: 1h, deadline: 1000h}\n")
    return path


def jobs(cli):
    return cli.json("status")["jobs"]


def launch(cli, path, *args, timeout=120):
    """`spotrun launch` run where the job file is (workdir: . is relative
    to where launch runs, as SkyPilot's)."""
    return subprocess.run([SPOTRUN, "launch", path] + list(args), env=cli.env,
                          cwd=os.path.dirname(path), capture_output=True,
                          text=True, timeout=timeout)


def test_launch_refuses_what_is_not_the_jobs(cli, tmp_path):
    cli.start()
    st = cli.state
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("print(1)\n")
    os.symlink(os.path.join(st, "api.token"), str(proj / "tok"))
    cases = [
        # (file_mounts line, workdir:, what the error says)
        ("file_mounts: {/stolen/api.token: %s/api.token}\n" % st, False,
         "lies outside the job's directory"),
        ("file_mounts: {/stolen/imds.key: %s/imds.key}\n" % st, False,
         "lies outside the job's directory"),
        ("file_mounts: {/stolen/tok: ./tok}\n", False,
         "./tok -> %s/api.token lies outside" % st),
        ("file_mounts: {/stolen/shadow: /etc/shadow}\n", False,
         "/etc/shadow lies outside the job's directory"),
        # the workdir itself holds a link to the admin token
        ("", True, "a symbolic link to '%s/api.token', which leaves" % st),
    ]
    for mounts, wd, msg in cases:
        path = job(str(proj), mounts, workdir=wd)
        p = launch(cli, path, "-d", "-y")
        assert p.returncode != 0, (mounts, p.stdout, p.stderr)
        assert msg in p.stderr, (mounts, p.stderr)
    os.unlink(str(proj / "tok"))
    # the job file's own workdir: elsewhere (the launching user's AWS
    # keys, which spotrund's aws provider uses): refused, with mounts in
    # it too; the user's own --workdir may name any directory
    aws = tmp_path / "home" / ".aws"
    aws.mkdir(parents=True)
    (aws / "credentials").write_text("aws_secret_access_key = x\n")
    path = job(str(proj), "workdir: %s\nfile_mounts: {/k: ./credentials}\n"
               % aws, workdir=False)
    p = launch(cli, path, "-d", "-y")
    assert p.returncode != 0, (p.stdout, p.stderr)
    assert ("workdir: %s is neither the current directory nor under the "
            "job file's directory" % aws) in p.stderr, p.stderr
    assert "pass --workdir %s" % aws in p.stderr, p.stderr
    # a workdir that holds spotrund's state dir (here: the test's tmp)
    path = os.path.join(str(tmp_path), "job.yaml")
    with open(path, "w") as f:
        f.write("name: files\nresources: {accelerators: V100:1, use_spot: "
                "false}\nworkdir: .\nrun: ls\nspotrun: {work: 1h, deadline: "
                "1000h}\n")
    p = launch(cli, path, "-d", "-y")
    assert p.returncode != 0 and "inside spotrund's state dir" in p.stderr, \
        p.stderr
    assert jobs(cli) == [], jobs(cli)
    # nothing of the state dir left the daemon's disk either
    assert not os.path.exists(os.path.join(st, "nodes"))


def test_api_never_copies_a_path_for_a_job(cli, tmp_path):
    cli.start()
    st = cli.state
    yaml = ("name: api\nresources: {accelerators: V100:1, use_spot: false}\n"
            "workdir: .\nrun: 'true'\nspotrun: {work: 1h, deadline: 1000h}\n")
    code, body = api(cli, "POST", "/v1/jobs", {"spec_yaml": yaml,
                                               "workdir": "/tmp"})
    assert code == 400, body
    assert "names files the request does not carry" in body["error"]["message"]
    yaml = ("name: api\nresources: {accelerators: V100:1, use_spot: false}\n"
            "file_mounts: {/x: %s/api.token}\nrun: 'true'\n"
            "spotrun: {work: 1h, deadline: 1000h}\n" % st)
    code, body = api(cli, "POST", "/v1/jobs", {"spec_yaml": yaml})
    assert code == 400 and "file_mounts:" in body["error"]["message"], body
    # an API workdir (run in place) never inside the state dir
    yaml = ("name: api\nresources: {accelerators: V100:1, use_spot: false}\n"
            "run: 'true'\nspotrun: {work: 1h, deadline: 1000h}\n")
    code, body = api(cli, "POST", "/v1/jobs", {"spec_yaml": yaml,
                                               "workdir": st + "/nodes"})
    assert code == 400 and "inside spotrund's state dir" in \
        body["error"]["message"], body
    # an upload whose entry climbs out of the archive
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        info = tarfile.TarInfo("../evil")
        info.size = 1
        t.addfile(info, io.BytesIO(b"x"))
    code, body = api(cli, "POST", "/v1/uploads", buf.getvalue(),
                     "application/x-tar")
    assert code == 400 and "'../evil'" in body["error"]["message"], body
    # a clean upload, and a job whose mounts it does not hold
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        info = tarfile.TarInfo("workdir")
        info.type = tarfile.DIRTYPE
        t.addfile(info)
    code, up = api(cli, "POST", "/v1/uploads", buf.getvalue(),
                   "application/x-tar")
    assert code == 201 and up["upload"].startswith("sha256:"), up
    yaml = ("name: api\nresources: {accelerators: V100:1, use_spot: false}\n"
            "workdir: .\nfile_mounts: {/data: ./data}\nrun: 'true'\n"
            "spotrun: {work: 1h, deadline: 1000h}\n")
    code, body = api(cli, "POST", "/v1/jobs", {"spec_yaml": yaml,
                                               "files": up["upload"]})
    assert code == 400 and "has no data" in body["error"]["message"], body
    # only the admin sends more than the 1 MiB body limit
    code, body = api(cli, "GET", "/v1/jobs")
    assert code == 200 and body["jobs"] == [], body


def test_the_jobs_own_files_arrive_in_its_isolation(cli, tmp_path):
    cli.start()
    proj = tmp_path / "proj"
    (proj / "data").mkdir(parents=True)
    (proj / "data" / "vocab.txt").write_text("vocab-mounted\n")
    (proj / "code.txt").write_text("code-in-workdir\n")
    os.symlink("data/vocab.txt", str(proj / "v.txt"))    # inside: kept
    path = job(str(proj), "file_mounts: {/mnt/vocab.txt: ./data/vocab.txt}\n")
    with open(path) as f:
        text = f.read().replace(
            "run: ls -la", "run: cat code.txt v.txt $SPOTRUN_NODE_DIR/mnt/vocab.txt")
    with open(path, "w") as f:
        f.write(text)
    p = launch(cli, path, "-y")
    assert p.returncode == 0, (p.stdout, p.stderr, cli.log_tail())
    out = p.stdout
    assert "code-in-workdir" in out and out.count("vocab-mounted") == 2, out
    jid = submitted_id(out)
    logs = cli.run("logs", str(jid), check=0).stdout
    # the unpacking ran after the isolation was set up (it reports first)
    lines = logs.splitlines()
    iso = [i for i, l in enumerate(lines) if "isolation:" in l]
    unpacked = [i for i, l in enumerate(lines) if "files: unpacked" in l]
    assert iso and unpacked and iso[0] < unpacked[0], logs
