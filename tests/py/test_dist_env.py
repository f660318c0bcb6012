"""The torch.distributed launch contract on the local cloud: a 2-node job
whose workload is a real `torch.distributed` process group (gloo, CPU),
initialised from nothing but the environment the agent gives it
(init_method="env://": MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE).
Both ranks see the same rendezvous, each its own rank, and an all_reduce
across them gives the sum of both."""

import json

from test_e2e_cli import Cli, job_yaml

import pytest

PROG = r"""
import os, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("contract rank=%s world=%s node_rank=%s nnodes=%s local=%s/%s "
      "port=%s addr=%s ips=%s sum=%d" % (os.environ["RANK"], os.environ["WORLD_SIZE"],
      os.environ["NODE_RANK"], os.environ["NNODES"], os.environ["LOCAL_RANK"],
      os.environ["LOCAL_WORLD_SIZE"], os.environ["MASTER_PORT"],
      os.environ["MASTER_ADDR"],
      os.environ["SKYPILOT_NODE_IPS"].replace("\n", ","), int(t.item())),
      flush=True)
dist.destroy_process_group()
"""


@pytest.fixture
def cli(tmp_path):
    c = Cli(tmp_path)
    yield c
    c.stop()


def test_two_ranks_rendezvous_from_the_environment(cli, tmp_path):
    cli.start()
    prog = tmp_path / "ddp_env.py"
    prog.write_text(PROG)
    path = job_yaml(tmp_path, "/usr/bin/python3 %s" % prog, name="ddp-env",
                    extra="num_nodes: 2\n")
    p = cli.run("launch", path, "-d", "--json", check=0)
    jid = json.loads(p.stdout)["job"]["id"]
    job = cli.wait(jid, timeout=120)
    logs = cli.run("logs", str(jid), check=0).stdout
    assert job["state"] == "SUCCEEDED", (job, logs, cli.log_tail())
    lines = sorted(ln[ln.index("contract "):] for ln in logs.splitlines()
                   if "contract rank=" in ln)
    assert len(lines) == 2, logs
    ports = set()
    for rank, ln in enumerate(lines):
        f = dict(kv.split("=") for kv in ln.split()[1:])
        assert f["rank"] == f["node_rank"] == str(rank)
        assert f["world"] == f["nnodes"] == "2"
        # the control plane's master_addr: rank 0's node address as
        # spotrund saw its register request (loopback here)
        assert f["local"] == "0/1" and f["addr"] == "127.0.0.1"
        assert f["ips"] == "127.0.0.1,127.0.0.1"
        assert f["sum"] == "3"   # 1 + 2: both ranks joined one group
        assert 20000 <= int(f["port"]) < 32000
        ports.add(f["port"])
    assert len(ports) == 1
    # `spotrun status` and the nodes API show each node's address
    nodes = json.loads(cli.run("status", str(jid), "--json").stdout)["job"]["nodes"]
    assert [n["addr"] for n in nodes] == ["127.0.0.1", "127.0.0.1"], nodes
    text = cli.run("status", str(jid)).stdout
    assert text.count("addr 127.0.0.1") == 2, text
    listed = json.loads(cli.run("nodes", "--all", "--job", str(jid),
                                "--json").stdout)["nodes"]
    assert {n["addr"] for n in listed} == {"127.0.0.1"}, listed
    assert "127.0.0.1" in cli.run("nodes", "--all", "--job", str(jid)).stdout
