"""spotrun.peer_replicas in job files and `spotrun plan` (issue 33,
restore from a peer; docs/distributed.md "Peer copies"): the key's
errors name it and its line, the plan states the copies' memory per
node, and refuses copies that do not fit the node's RAM."""
import json

from test_market_cli import spotrun

JOB = """name: peer
num_nodes: %(nodes)d
resources: {accelerators: V100:1, use_spot: true}
run: python train.py
spotrun:
  work: 10h
  deadline: 40h
  checkpoint: {size: %(size)s%(uri)s}
  peer_replicas: %(k)d
"""
URI = ", uri: \"s3://ckpt-bucket/x\""


def job(tmp_path, nodes=4, size="16GB", uri=URI, k=1):
    p = tmp_path / "job.yaml"
    p.write_text(JOB % dict(nodes=nodes, size=size, uri=uri, k=k))
    return str(p)


def test_plan_states_the_copies_memory(tmp_path):
    r = spotrun("plan", job(tmp_path), "--limit", "1")
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines()
            if ln.startswith("peer copies:")]
    assert len(line) == 1 and "1 per node (spotrun.peer_replicas)" in \
        line[0] and "14.9 GiB of RAM per node" in line[0] and \
        line[0].endswith(": fits"), r.stdout
    r = spotrun("plan", job(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["peer_copies"] == {
        "replicas": 1, "bytes_per_node": 16000000000, "fits": True}


def test_copies_that_do_not_fit_are_refused(tmp_path):
    f = job(tmp_path, size="80GB")
    r = spotrun("plan", f)
    assert r.returncode == 1, r.stdout
    assert "%s: spotrun.peer_replicas: 1 copy(ies) of a rank's part " \
        "(74.5 GiB" % f in r.stderr and "GiB of RAM" in r.stderr, r.stderr


def test_key_errors_name_the_key_and_line(tmp_path):
    f = job(tmp_path, nodes=1)
    r = spotrun("plan", f)
    assert r.returncode != 0
    assert "%s:9: spotrun.peer_replicas: 1 copies need at least 2 nodes " \
        "(num_nodes is 1)" % f in r.stderr, r.stderr
    f = job(tmp_path, uri="")
    r = spotrun("plan", f)
    assert "%s:9: spotrun.peer_replicas: needs spotrun.checkpoint.uri" % f \
        in r.stderr, r.stderr
    f = job(tmp_path, k=9)
    r = spotrun("plan", f)
    assert "%s:9: spotrun.peer_replicas:" % f in r.stderr, r.stderr
