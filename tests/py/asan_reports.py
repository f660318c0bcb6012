"""Sanitizer reports of the ASan pytest pass (scripts/run-tests BUILD asan).

Every program a test starts runs with log_path pointing into a directory
of that test (conftest.py), so its AddressSanitizer, LeakSanitizer or
UBSan report lands in a file named <dir>/r.<program>.<pid> instead of its
stderr, and a leak does not change its exit status.  This module reads
those files back:

- any report from one of spotrun's programs (the files in BUILD/bin,
  BUILD/tests/helpers, BUILD/conformance) is a failure, leaks included;
- from any other program (the interpreter running a training script or a
  pytest worker, which loads the runtime first, asan_usercustomize.py, or
  a program a test starts with an LD_PRELOAD of its own) only an
  AddressSanitizer error or a UBSan runtime error is: CPython and PyTorch
  do not free everything at exit, so their leak reports say nothing
  about spotrun.

python3 asan_reports.py BUILD DIR prints every failing report under DIR
that no test claimed (a program that outlived the test that started it).
"""

import os
import sys


def spotrun_programs(build):
    names = set()
    for sub in ("bin", os.path.join("tests", "helpers"), "conformance"):
        try:
            names.update(os.listdir(os.path.join(build, sub)))
        except OSError:
            pass
    return names


CLAIMED = ".claimed"


def _claimed(d):
    try:
        with open(os.path.join(d, CLAIMED)) as f:
            return set(f.read().split())
    except OSError:
        return set()


def failing(build, top, programs=None, claim=False):
    """[(path, text)] of the reports under `top` that fail a test and no
    earlier call claimed; with claim, the reports seen are claimed (the
    test that started their programs answers for them)."""
    programs = spotrun_programs(build) if programs is None else programs
    out = []
    for d, _, files in os.walk(top):
        seen = _claimed(d)
        new = [n for n in sorted(files) if n != CLAIMED and n not in seen]
        if claim and new:
            with open(os.path.join(d, CLAIMED), "a") as f:
                f.write("".join(n + "\n" for n in new))
        for n in new:
            parts = n.split(".")
            if len(parts) < 3 or parts[0] != "r":
                continue
            exe = ".".join(parts[1:-1])
            path = os.path.join(d, n)
            try:
                with open(path, errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            # a finding says "ERROR:" (ASan, LSan) or "runtime error"
            # (UBSan); a file without one is the tool's own trouble (a
            # thread it could not stop at exit), not a finding
            if "ERROR:" not in text and "runtime error" not in text:
                continue
            if exe in programs or "ERROR: AddressSanitizer" in text or \
                    "runtime error" in text:
                out.append((path, text))
    return out


def describe(reports, limit=6000):
    """The reports as one message, each cut to its first lines."""
    parts = []
    for path, text in reports:
        parts.append("---- %s\n%s" % (path, text[:limit]))
    return "\n".join(parts)


if __name__ == "__main__":
    bad = failing(sys.argv[1], sys.argv[2])
    if bad:
        print("  %d sanitizer report(s) from spotrun's programs that no test "
              "claimed:" % len(bad))
        print(describe(bad, 3000))
