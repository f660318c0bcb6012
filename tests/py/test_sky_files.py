"""Issue 30: a SkyPilot task's file_mounts of the user's own files.

SkyPilot's DeepSpeed example mounts an SSH key: `~/.ssh/id_rsa:
~/.ssh/sky-key`.  `~` is the home on each side: `spotrun launch` reads the
launching user's file (only a regular file of theirs, named with `~/`,
outside the credential stores), and the node puts it under the
workload's home, owner-only.  On the local cloud every node is a process
of this machine, so a node's home is its own ($SPOTRUN_NODE_DIR/home,
the workload's $HOME): the user's own ~/.ssh is never written.

Every problem of the mounts is said in one launch; a mount that cannot be
put in place on the node is a `file_mounts` event, not a failed setup.
"""

import os
import stat

from test_e2e_cli import Cli, submitted_id
from test_sec_files import jobs, launch

import pytest


@pytest.fixture
def cli(tmp_path):
    c = Cli(tmp_path)
    c.home = str(tmp_path / "home")
    os.makedirs(os.path.join(c.home, ".ssh"), mode=0o700)
    c.env["HOME"] = c.home
    yield c
    c.stop()


def task(proj, mounts, run):
    os.makedirs(proj, exist_ok=True)
    path = os.path.join(proj, "task.yaml")
    with open(path, "w") as f:
        f.write("name: ds\nresources: {accelerators: V100:1, use_spot: false}\n"
                "file_mounts:\n" + mounts + "run: |\n  " + run + "\n"
                "spotrun: {work: 1h, deadline: 1000h}\n")
    return path


def test_ssh_key_reaches_the_nodes_home_owner_only(cli, tmp_path):
    cli.start()
    key = os.path.join(cli.home, ".ssh", "sky-key")
    with open(key, "w") as f:
        f.write("-----KEY-----\n")
    os.chmod(key, 0o600)
    path = task(str(tmp_path / "proj"), "  ~/.ssh/id_rsa: ~/.ssh/sky-key\n",
                'echo "mode=$(stat -c %a ~/.ssh/id_rsa) home=$HOME"; '
                "cat ~/.ssh/id_rsa")
    p = launch(cli, path, "-y")
    assert p.returncode == 0, (p.stdout, p.stderr, cli.log_tail())
    assert "uploading ~/.ssh/sky-key from your home (owner-only on the node)" \
        in p.stderr, p.stderr
    assert "mode=600 " in p.stdout and "-----KEY-----" in p.stdout, p.stdout
    home = p.stdout.split("home=", 1)[1].split()[0]
    jid = submitted_id(p.stdout)
    node = cli.json("status", str(jid))["job"]["nodes"][0]["id"]
    assert home == os.path.join(cli.state, "nodes", str(node), "home"), home
    # the user's own ~/.ssh was only read
    assert sorted(os.listdir(os.path.join(cli.home, ".ssh"))) == ["sky-key"]
    assert stat.S_IMODE(os.stat(os.path.join(home, ".ssh", "id_rsa")).st_mode) \
        == 0o600


def test_home_files_refused_all_in_one_run(cli, tmp_path):
    cli.start()
    h = cli.home
    os.makedirs(os.path.join(h, ".aws"))
    with open(os.path.join(h, ".aws", "credentials"), "w") as f:
        f.write("aws_secret_access_key = x\n")
    os.symlink("/etc/hostname", os.path.join(h, "out"))
    path = task(str(tmp_path / "proj"),
                "  ~/.aws/credentials: ~/.aws/credentials\n"
                "  ~/.ssh: ~/.ssh\n"
                "  ~/out: ~/out\n"
                "  ~/none: ~/missing-key\n"
                "  /data: ./no-such-dir\n", "true")
    p = launch(cli, path, "-d", "-y")
    assert p.returncode != 0, (p.stdout, p.stderr)
    for msg in ("file_mounts.~/.aws/credentials: ~/.aws/credentials lies in "
                "~/.aws, where credentials are kept",
                "file_mounts.~/.ssh: ~/.ssh: a directory; from your home "
                "spotrun uploads only files you own",
                "file_mounts.~/out: ~/out -> /etc/hostname lies outside your home",
                "file_mounts.~/none: ~/missing-key: No such file",
                "file_mounts./data: ./no-such-dir: No such file"):
        assert msg in p.stderr, (msg, p.stderr)
    assert jobs(cli) == []


def test_a_mount_that_fails_on_the_node_is_no_setup_failure(cli, tmp_path):
    cli.start()
    proj = str(tmp_path / "proj")
    os.makedirs(proj)
    for n in ("f1", "f2"):
        with open(os.path.join(proj, n), "w") as f:
            f.write(n)
    # ~/a is a file, so ~/a/b cannot be put in place under it
    path = task(proj, "  ~/a: ./f1\n  ~/a/b: ./f2\n", "echo ran")
    p = launch(cli, path, "-d", "-y")
    assert p.returncode == 0, (p.stdout, p.stderr)
    jid = submitted_id(p.stdout)
    j = cli.wait(jid)
    assert j["state"] == "FAILED", j
    ev = cli.json("events", str(jid))["events"]
    fm = [e for e in ev if e["type"] == "file_mounts"]
    assert fm and "not a directory" in fm[0]["message"], ev
    assert any(e["type"] == "transition" and "file_mounts could not be put "
               "in place on a node, so setup never ran" in e["message"]
               for e in ev), ev
    assert not any(e["type"] == "setup_done" for e in ev), ev
    logs = cli.run("logs", str(jid), check=0).stdout
    assert "ran" not in logs.split(), logs


def test_a_home_bucket_mount_stays_in_the_nodes_home(cli, tmp_path):
    """A bucket mounted under ~/ lands in the workload's home - on the
    local cloud the node's own, never the user's."""
    from objstore_servers import S3rver
    s3 = S3rver(buckets=("sky-ckpt",))
    try:
        cli.start()
        envs = "".join("  %s: '%s'\n" % kv for kv in s3.env().items())
        path = task(str(tmp_path / "proj"),
                    "  ~/ckpt: {source: s3://sky-ckpt/run, mode: MOUNT}\n",
                    'echo saved > ~/ckpt/model.txt; echo "home=$HOME"')
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("file_mounts:\n", "envs:\n" + envs +
                                 "file_mounts:\n"))
        p = launch(cli, path, "-d", "-y")
        assert p.returncode == 0, (p.stdout, p.stderr, cli.log_tail())
        jid = submitted_id(p.stdout)
        # the job ends once the mount's final round is durable
        j = cli.wait(jid, timeout=300)
        assert j["state"] == "SUCCEEDED", (j, cli.log_tail())
        logs = cli.run("logs", str(jid), check=0).stdout
        assert "home=" in logs, (logs, cli.log_tail())
        home = logs.split("home=", 1)[1].split()[0]
        node = cli.json("status", str(jid))["job"]["nodes"][0]["id"]
        assert home == os.path.join(cli.state, "nodes", str(node), "home")
        assert os.path.exists(os.path.join(home, "ckpt", "model.txt"))
        assert not os.path.exists(os.path.join(cli.home, "ckpt"))
    finally:
        cli.stop()
        s3.close()
