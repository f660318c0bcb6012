"""The README's promises, checked: every fenced code block of README.md runs
as written and does what the text around it says, and every relative link
and anchor in README.md and docs/**/*.md leads somewhere.

Blocks.  Each fenced block in README.md follows a marker comment on the
line before it:

    <!-- snippet: NAME -->               run it; CHECKS[NAME] checks it
    <!-- snippet: file PATH -->          write it to PATH for the blocks after
    <!-- snippet: not-run: REASON -->    reported as a skip with REASON

A block without a marker, or with a NAME this file does not check, fails
test_every_block_is_marked_and_checked: a new README block gets a test.

How a block runs.  All blocks share one sandbox, as a reader's shell does:
a temporary working directory holding links to the repository's data/,
examples/ and tests/ (the README's commands run from the repository root),
the build's programs first on PATH, PYTHONPATH=python, and a temporary
SPOTRUN_STATE_DIR and HOME.  `python` blocks run under /usr/bin/python3,
`sh` blocks under `bash -e`.  A block that names an s3:// URI gets an
s3rver on 127.0.0.1 (tests/objstore, as in test_objstore.py) and the AWS
variables that point at it.  The one change to what the README says is
the daemon's port: `spotrun daemon start` runs spotrund through a wrapper
(SPOTRUN_SPOTRUND) that appends `--listen 127.0.0.1:0`, so parallel test
runs never fight over 127.0.0.1:7077.  The daemon is stopped at the end
whatever happens.  Blocks that depend on earlier ones (the ckpt commands
read what the Python blocks wrote; the cost block reads the job the
control-plane block ran) run those first, once per worker.
"""

import html
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unicodedata

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
PYTHON = "/usr/bin/python3"
BLOCK_TIMEOUT = 600  # a generous limit, never a measured time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


# ---- parsing ---------------------------------------------------------------

FENCE = re.compile(r"^(```+|~~~+)(.*)$")
MARKER = re.compile(r"^<!--\s*snippet:\s*(.*?)\s*-->\s*$")


def fenced_blocks(text):
    """[(first line number, info string, body, marker or None)] of every
    fenced code block; the marker is the text of a snippet comment on the
    line right before the opening fence."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2).strip(), i
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        mk = MARKER.match(lines[start - 1]) if start > 0 else None
        out.append((start + 1, info, "\n".join(body) + "\n",
                    mk.group(1) if mk else None))
        i += 1
    return out


class Block:
    def __init__(self, line, lang, body, marker):
        self.line, self.lang, self.body, self.marker = line, lang, body, marker
        self.kind, self.name = "run", marker
        if marker is None:
            self.kind = "unmarked"
        elif marker.startswith("not-run:"):
            self.kind, self.name = "not-run", None
            self.reason = marker[len("not-run:"):].strip()
        elif marker.startswith("file "):
            self.kind, self.name = "file", marker[len("file "):].strip()

    def ident(self):
        if self.kind == "run":
            return self.name
        if self.kind == "file":
            return "file-" + self.name
        return "line%d-%s" % (self.line, self.kind)


def readme_blocks():
    with open(README, encoding="utf-8") as f:
        return [Block(*b) for b in fenced_blocks(f.read())]


BLOCKS = readme_blocks()


# ---- links -----------------------------------------------------------------

def github_slug(heading):
    """The anchor GitHub gives a heading: inline markup dropped, lower
    case, punctuation removed (letters, digits, spaces, '-' and '_' stay),
    spaces turned into '-'."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    t = re.sub(r"<[^>]+>", "", t)                            # html tags
    t = t.replace("`", "").replace("*", "")
    t = html.unescape(t).strip().lower()
    keep = []
    for ch in t:
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN":
            keep.append(ch)
    return "".join(keep).replace(" ", "-")


def strip_code(text):
    """The text with fenced blocks and inline code spans blanked (line
    numbers kept), so links inside code are not links."""
    out, in_fence, fence = [], False, ""
    for line in text.split("\n"):
        m = FENCE.match(line)
        if in_fence:
            if line.startswith(fence):
                in_fence = False
            out.append("")
            continue
        if m:
            in_fence, fence = True, m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def anchors_of(path, _cache={}):
    if path not in _cache:
        with open(path, encoding="utf-8") as f:
            text = strip_code(f.read())
        seen, names = {}, set()
        for line in text.split("\n"):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                slug = github_slug(m.group(1))
                n = seen.get(slug, 0)
                seen[slug] = n + 1
                names.add(slug if n == 0 else "%s-%d" % (slug, n))
        for m in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", text):
            names.add(m.group(1))
        _cache[path] = names
    return _cache[path]


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def markdown_files():
    files = [README]
    for d, _, names in os.walk(os.path.join(ROOT, "docs")):
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
    return files


def broken_links(path):
    """'file:line: target (why)' for every relative link of path that
    names a missing file or a missing anchor."""
    with open(path, encoding="utf-8") as f:
        text = strip_code(f.read())
    bad = []
    for lineno, line in enumerate(text.split("\n"), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:
                continue
            where = "%s:%d: %s" % (os.path.relpath(path, ROOT), lineno, target)
            file_part, _, anchor = target.partition("#")
            dest = (os.path.normpath(os.path.join(os.path.dirname(path),
                                                  file_part))
                    if file_part else path)
            if not os.path.exists(dest):
                bad.append(where + " (no such file)")
                continue
            if anchor:
                if not dest.endswith(".md") or os.path.isdir(dest):
                    bad.append(where + " (an anchor into a non-markdown file)")
                elif anchor not in anchors_of(dest):
                    bad.append(where + " (no such anchor in %s)"
                               % os.path.relpath(dest, ROOT))
    return bad


def test_links_and_anchors_resolve():
    bad = []
    for path in markdown_files():
        bad += broken_links(path)
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_link_checker_sees_a_broken_link(tmp_path):
    """The checker itself: a missing file, a missing anchor and a good
    link to a heading with punctuation."""
    (tmp_path / "b.md").write_text("# Where the gap at 52 h / 0.2 h comes from\n"
                                   "<a id=\"row\"></a>\n")
    a = tmp_path / "a.md"
    a.write_text("[ok](b.md#where-the-gap-at-52-h--02-h-comes-from) "
                 "[ok](b.md#row) [bad](c.md) [bad](b.md#nope)\n"
                 "`[not a link](nowhere.md)`\n")
    bad = broken_links(str(a))
    assert len(bad) == 2, bad
    assert "c.md (no such file)" in bad[0]
    assert "b.md#nope (no such anchor" in bad[1]


def test_readme_fits_two_screens_and_links_its_figures():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert text.count("\n") <= 200, "README.md is %d lines (at most 200)" \
        % text.count("\n")
    head = text.split("## Headline figures", 1)
    assert len(head) == 2, "README.md has no 'Headline figures' section"
    rows = [r for r in head[1].split("\n") if r.startswith("| [")]
    assert rows, "the headline table has no rows"
    for r in rows:
        assert "](docs/benchmarks.md#" in r, \
            "a headline figure that does not link to its row: " + r
