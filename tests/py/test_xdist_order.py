"""make check's pytest scheduler (tests/py/xdist_order.py), driven with
stand-in workers: the tests go out one at a time in collection order (the
slowest first), each worker holding at most the test it runs and the
next, so the slowest tests start at once on different workers; every
test is sent exactly once; a worker is told to stop when none is left."""

import heapq

import pytest

xdist_order = pytest.importorskip("xdist_order")
if xdist_order.LoadScheduling is None:
    pytest.skip("pytest-xdist is missing (scripts/install-deps installs "
                "python3-pytest-xdist)", allow_module_level=True)


class Config:
    def __init__(self, workers):
        self.workers = workers

    def getvalue(self, name):
        return {"tx": ["%d*popen" % self.workers], "dist": "load"}[name]


class Gateway:
    def __init__(self, name):
        self.id = name


class Node:
    def __init__(self, name):
        self.name = name
        self.gateway = Gateway(name)
        self.shutting_down = False
        self.sent = []

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def shutdown(self):
        self.shutting_down = True


def run(durations, workers):
    """Run the schedule as xdist would (a worker starts its next test when
    the one it runs ends); returns the nodes, each test's worker and the
    most any worker held."""
    sched = xdist_order.make_scheduler(Config(workers), None)
    assert isinstance(sched, xdist_order.OneAtATime)
    ids = ["t%d" % i for i in range(len(durations))]
    nodes = [Node("gw%d" % k) for k in range(workers)]
    for n in nodes:
        sched.add_node(n)
        sched.add_node_collection(n, ids)
    assert sched.collection_is_completed
    sched.schedule()
    held = max(len(sched.node2pending[n]) for n in nodes)
    ran = {}
    clock = [(durations[n.sent[0]], k) for k, n in enumerate(nodes) if n.sent]
    heapq.heapify(clock)
    done = [0] * workers
    while clock:
        t, k = heapq.heappop(clock)
        node = nodes[k]
        item = node.sent[done[k]]
        ran[item] = node.name
        done[k] += 1
        sched.mark_test_complete(node, item, durations[item])
        held = max(held, len(sched.node2pending[node]))
        if done[k] < len(node.sent):
            heapq.heappush(clock, (t + durations[node.sent[done[k]]], k))
    return nodes, ran, held


def test_slowest_tests_start_at_once_on_different_workers():
    # slowest first (conftest.py's order), then many short ones
    durations = [200, 150, 60, 45] + [1] * 100
    nodes, ran, held = run(durations, 3)
    assert [n.sent[0] for n in nodes] == [0, 1, 2]
    assert held <= xdist_order.DEPTH
    # every test sent once, and run
    sent = sorted(i for n in nodes for i in n.sent)
    assert sent == list(range(len(durations)))
    assert sorted(ran) == sent
    assert all(n.shutting_down for n in nodes)
    # the worker on the 200 s test holds one more, then nothing: the
    # short tests went to the other two
    assert len(nodes[0].sent) == 2


def test_fewer_tests_than_places():
    nodes, ran, held = run([5, 4, 3], 2)
    assert sorted(i for n in nodes for i in n.sent) == [0, 1, 2]
    assert sorted(ran) == [0, 1, 2]
    assert all(n.shutting_down for n in nodes)


def test_other_dist_modes_keep_xdists_scheduler():
    class Each(Config):
        def getvalue(self, name):
            return "each" if name == "dist" else super().getvalue(name)
    assert xdist_order.make_scheduler(Each(2), None) is None
