"""Every `spotrun` command parses its options with one getopt_long-based
parser (src/cli/cliopt.h): the same usage errors everywhere (exit 2,
naming the argument), a value option given twice refused, --name=value,
unambiguous prefixes, grouped short flags, "--" ending the options; and
the bash completion offers exactly the options each command parses."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SPOTRUN_BUILD", os.path.join(ROOT, "build"))
SPOTRUN = os.path.join(BUILD, "bin", "spotrun")
COMPLETION = os.path.join(ROOT, "completion", "spotrun.bash")
TRACE = os.path.join(ROOT, "data", "traces", "cbl", "availability", "1-node",
                     "aws-10-26-2022", "us-west-2a_v100_1.json")
# nothing here may reach a daemon, a cloud or a metadata service
ENV = dict(os.environ, SPOTRUN_STATE_DIR="/nonexistent-spotrun-options",
           SPOTRUN_API="http://127.0.0.1:1", AWS_EC2_METADATA_DISABLED="true")


def spotrun(*args):
    return subprocess.run([SPOTRUN] + list(args), capture_output=True, text=True,
                          timeout=60, env=ENV, cwd=ROOT)


def commands():
    out = spotrun("--help").stdout
    return re.findall(r"^  (\S+) ", out, re.M)


def completion(*words):
    """What the completion offers after `spotrun WORDS... <TAB>`."""
    line = " ".join("'%s'" % w for w in ("spotrun",) + words + ("",))
    p = subprocess.run(["bash", "-c", "source %s; COMP_WORDS=(%s); COMP_CWORD=%d; "
                        "_spotrun; printf '%%s\\n' \"${COMPREPLY[@]}\""
                        % (COMPLETION, line, len(words) + 1)],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


# A command line up to where its options go (subcommands included).
FORMS = {"ckpt": [("ckpt", "inspect"), ("ckpt", "bench"), ("ckpt", "bench-sync")], "trace": [("trace", "gen"), ("trace", "prior")],
         "cloud": [("cloud", "preempt"), ("cloud", "outage")],
         "slurm": [("slurm", "resume"), ("slurm", "suspend"),
                   ("slurm", "resume-fail"), ("slurm", "node")]}


def forms():
    for cmd in commands():
        for f in FORMS.get(cmd, [(cmd,)]):
            yield f


def parsed(form, opt):
    """True when the command parses opt: `opt=x --help` (or `-f --help`)
    runs nothing, whatever the option does."""
    word = opt + "=x" if opt.startswith("--") else opt
    p = spotrun(*form, word, "--help")
    assert p.returncode in (0, 2), (form, opt, p.stderr)
    return "unknown option" not in p.stderr


def test_command_summaries_start_in_one_column():
    lines = re.findall(r"^  \S+ +\S.*$", spotrun("--help").stdout, re.M)
    starts = {len(l) - len(l.split(None, 1)[1]) for l in lines}
    assert len(lines) == len(commands()) and len(starts) == 1, lines


def test_completion_offers_every_command():
    assert completion() - {"--help", "--version"} == set(commands())


@pytest.mark.parametrize("form", list(forms()), ids=" ".join)
def test_completion_matches_the_parser(form):
    offered = {w for w in completion(*form) if w.startswith("-")}
    assert offered, form
    for opt in offered:
        assert parsed(form, opt), "%s offers %s, which it does not parse" % (form, opt)
    helped = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", spotrun(*form, "--help").stdout))
    for opt in helped - offered:  # named in --help: parsed means offered
        assert not parsed(form, opt), "%s parses %s; completion lacks it" % (form, opt)


@pytest.mark.parametrize("args,opt", [
    (("catalog", "--limit", "1", "--limit", "2"), "--limit"),
    (("status", "--api", "http://a", "--api=http://b"), "--api"),
    (("ckpt", "bench", "--dir", "/a", "--size", "16M", "--size=32M"), "--size"),
    (("trace", "gen", "-o", "a.json", "--out", "b.json"), "--out"),
    (("launch", "--workdir", "a", "--workdir", "b", "x.yaml"), "--workdir"),
    (("sim", "--trace", TRACE, "--seed", "1", "--seed", "2"), "--seed"),
])
def test_a_value_option_given_twice_is_refused(args, opt):
    p = spotrun(*args)
    assert p.returncode == 2, p.stderr
    assert "%s given twice" % opt in p.stderr
    assert "try 'spotrun %s" % args[0] in p.stderr


def test_repeatable_options_and_lists_take_several_values():
    p = spotrun("sim", "--trace", TRACE, "--policy", "od", "greedy", "--work-hours=10",
                "--deadline-hours=14", "--start-tick", "0", "--start-tick=3", "--json")
    assert p.returncode == 0, p.stderr
    assert p.stdout.lstrip().startswith("{") and '"greedy"' in p.stdout


@pytest.mark.parametrize("args,needle", [
    (("version", "--json=1"), "--json takes no value"),
    (("nodes", "--a"), "ambiguous option '--a' (--all, --api)"),
    (("catalog", "--gpu"), "--gpu needs a value"),
    (("sim", "--trace", "--json"), "--trace needs a value"),
    (("logs", "-x", "1"), "unknown option '-x'"),
    (("plan", "a.yaml", "b.yaml"), "unexpected argument 'b.yaml'"),
    (("ckpt", "verify", "--full-meta", "/tmp"), "verify: unknown option '--full-meta'"),
])
def test_usage_errors_name_the_argument(args, needle):
    p = spotrun(*args)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr, p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("cmd", commands())
def test_every_command_answers_help_and_refuses_unknown_options(cmd):
    p = spotrun(cmd, "--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: spotrun " + cmd), p.stdout
    p = spotrun(cmd, "--no-such-option")
    assert p.returncode == 2 and "'--no-such-option'" in p.stderr, p.stderr
    assert "try 'spotrun %s --help'" % cmd in p.stderr


def test_prefixes_groups_and_double_dash():
    full = spotrun("catalog", "--gpu", "V100:1", "--limit", "2", "--json")
    short = spotrun("catalog", "--gp=V100:1", "--lim", "2", "--js")
    assert full.returncode == 0 and short.stdout == full.stdout, short.stderr
    # -dy is -d -y; "--" makes "-x.yaml" the job file, not an option
    p = spotrun("launch", "-dy", "--", "-x.yaml")
    assert p.returncode == 1 and "-x.yaml" in p.stderr and "option" not in p.stderr
    # the daemon passes what follows "--" to spotrund untouched
    p = spotrun("daemon", "stop", "--", "--data-dir", "x")
    assert p.returncode == 2 and "go with 'start'" in p.stderr
