"""A pytest-xdist scheduler that hands the tests out one at a time, in
collection order (tests/py/conftest.py puts tests/slowest.txt's tests
first), to whichever worker is free.

Why: xdist 3.1's "load" scheduler (Debian 12) first sends each worker a
CHUNK of consecutive tests (a quarter of its share: ~53 of 430 tests with
2 workers), so every test of tests/slowest.txt went to the first worker,
one after another, while the others ran short tests: make check's plain
pytest pass took 1034 s where its tests summed to 1721 s (860 s on 2
workers).  Here each worker holds at most two tests, the one it runs and
the next (an xdist worker starts a test only once it knows the one after
it, for fixture teardown), and gets the next pending test when one ends:
the slow tests start first, each on its own worker.

Used only for `--dist load` (what `-n N` means); any other mode, or an
xdist whose scheduler this does not fit, keeps xdist's own.
"""

try:
    from xdist.scheduler import LoadScheduling
except ImportError:  # no xdist: the tests run serially
    LoadScheduling = None

# the tests a worker holds: the one it runs and the next
DEPTH = 2

# Tests that never run beside one another (node id prefixes): each demo is
# a whole PyTorch training run whose preemption notices give its final
# checkpoint a few seconds of wall clock; two or three at once on two busy
# cores missed that lead (test_gang_demo[local]: restored step 300, final
# checkpoint 363, in a loaded make check) or the 600 s limit.  One worker
# may hold two of them: it runs them one after the other.
APART = ("tests/py/test_e2e_demo.py::",)


def make_scheduler(config, log):
    """The scheduler for this run, or None for xdist's own."""
    if LoadScheduling is None or config.getvalue("dist") != "load":
        return None
    if not all(hasattr(LoadScheduling, n) for n in
               ("_send_tests", "_check_nodes_have_same_collection")):
        return None
    return OneAtATime(config, log)


if LoadScheduling is not None:
    class OneAtATime(LoadScheduling):
        """LoadScheduling with chunks of one (see the module's text)."""

        def schedule(self):
            assert self.collection_is_completed
            if self.collection is not None:  # a node joined: top it up
                for node in self.nodes:
                    self.check_schedule(node)
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(self.node2collection.values())[0]
            self.pending[:] = range(len(self.collection))
            self.apart = {i for i, nid in enumerate(self.collection)
                          if nid.startswith(APART)}
            if not self.collection:
                return
            # round robin: the slowest test to the first worker, the
            # second slowest to the second, ...
            for _ in range(DEPTH):
                for node in self.nodes:
                    self._send_one(node)
            if not self.pending:
                for node in self.nodes:
                    node.shutdown()

        def _send_one(self, node):
            """Send `node` the first pending test it may run now: not one
            of APART while another worker holds one.  False if none."""
            busy = any(i in self.apart for n, held in
                       self.node2pending.items() if n is not node
                       for i in held)
            for k, i in enumerate(self.pending):
                if not (busy and i in self.apart):
                    del self.pending[k]
                    self.node2pending[node].append(i)
                    node.send_runtest_some([i])
                    return True
            return False

        def _top_up(self, node):
            if node.shutting_down:
                return
            while len(self.node2pending[node]) < DEPTH and self.pending:
                if not self._send_one(node):
                    break
            if not self.pending:
                node.shutdown()

        def check_schedule(self, node, duration=0):
            # this worker first, then the others: one may have waited
            # for a test of APART that this one held
            self._top_up(node)
            for other in self.nodes:
                if other is not node:
                    self._top_up(other)
