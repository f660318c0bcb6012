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


def run(durations, workers, ids=None):
    """Run the schedule as xdist would: a worker starts a test once it
    holds the next one too, or was told that none will come; returns the
    nodes, each test's (worker, start, end) and the most any worker
    held.  Fails where the workers would wait for ever."""
    sched = xdist_order.make_scheduler(Config(workers), None)
    assert isinstance(sched, xdist_order.OneAtATime)
    ids = ids or ["t%d" % i for i in range(len(durations))]
    nodes = [Node("gw%d" % k) for k in range(workers)]
    for n in nodes:
        sched.add_node(n)
        sched.add_node_collection(n, ids)
    assert sched.collection_is_completed
    sched.schedule()
    ran, clock, done, busy = {}, [], [0] * workers, [False] * workers
    held = 0

    def start(now):
        for k, n in enumerate(nodes):
            left = len(n.sent) - done[k]
            if not busy[k] and left and (left >= 2 or n.shutting_down):
                busy[k] = True
                i = n.sent[done[k]]
                heapq.heappush(clock, (now + durations[i], k, i, now))
    start(0)
    while clock:
        t, k, item, t0 = heapq.heappop(clock)
        ran[item] = (nodes[k].name, t0, t)
        done[k] += 1
        busy[k] = False
        sched.mark_test_complete(nodes[k], item, durations[item])
        held = max([held] + [len(v) for v in sched.node2pending.values()])
        start(t)
    assert sorted(ran) == list(range(len(durations))), "workers left waiting"
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
    # the three slowest started at once
    assert [ran[i][1] for i in range(3)] == [0, 0, 0]
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


def test_demos_never_run_beside_one_another():
    # three demos among the slowest tests, as in tests/slowest.txt
    demo = xdist_order.APART[0]
    ids = [demo + "a", "kill9", demo + "b", demo + "c", "soak"] + \
        ["t%d" % i for i in range(60)]
    durations = [200, 150, 60, 45, 50] + [3] * 60
    for workers in (2, 3, 4):
        nodes, ran, held = run(durations, workers, ids)
        assert held <= xdist_order.DEPTH
        spans = sorted(ran[i][1:] for i in range(len(ids))
                       if ids[i].startswith(demo))
        assert len(spans) == 3
        for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
            assert s1 >= e0, (workers, spans)
        # the other tests did not wait for them
        assert ran[1][1] == 0
        # and the pass ends about when the longer of the demos in a row
        # and the whole pass spread over the workers would (+ 2 short)
        end = max(e for _, _, e in ran.values())
        assert end <= max(200 + 60 + 45, sum(durations) / workers) + 6, \
            (workers, end)
