"""`make install` into a temporary DESTDIR, then use what it installed:
the programs (finding their data beside themselves), the Python package
without PYTHONPATH, the library through pkg-config, the man pages, the
bash completion and the systemd unit; then `make uninstall`."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SPOTRUN_BUILD", os.path.join(ROOT, "build"))
ASAN = os.environ.get("SPOTRUN_CHECK_MODE") == "asan"
PREFIX = "/usr/local"
PYVER = "python%d.%d" % sys.version_info[:2]


def header_abi():
    """SPOTCKPT_ABI_VERSION as the public header defines it (the one
    source of truth: the library and the binding must both agree)."""
    with open(os.path.join(ROOT, "include", "spotrun", "ckpt.h")) as f:
        m = re.search(r"^#define SPOTCKPT_ABI_VERSION (\d+)$", f.read(), re.M)
    assert m, "include/spotrun/ckpt.h defines no SPOTCKPT_ABI_VERSION"
    return m.group(1)


@pytest.fixture(scope="module")
def dest(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("destdir"))
    p = subprocess.run(["make", "--no-print-directory", "-C", ROOT, "install-files",
                        "BUILD=" + os.path.relpath(BUILD, ROOT), "DESTDIR=" + d,
                        "PREFIX=" + PREFIX],
                       capture_output=True, text=True, timeout=300, env=clean_env())
    assert p.returncode == 0, p.stdout + p.stderr
    return d


def clean_env(preload=False, **extra):
    """The environment without our paths.  Under ASan the sanitizer
    runtime is preloaded only for the interpreter that loads the
    instrumented library (man's troff must not get it; the pass's
    usercustomize, asan_usercustomize.py, loads it in any interpreter
    too)."""
    env = dict(os.environ)
    for k in ("PYTHONPATH", "SPOTRUN_LIB", "SPOTRUN_DATA", "SPOTRUN_BUILD"):
        env.pop(k, None)
    env.pop("LD_PRELOAD", None)
    if preload and os.environ.get("SPOTRUN_ASAN_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["SPOTRUN_ASAN_PRELOAD"]
    env.update(extra)
    return env


def test_programs_run_from_the_install(dest):
    spotrun = dest + PREFIX + "/bin/spotrun"
    for prog in ("spotrun", "spotrund", "spotrun-agent"):
        assert os.access(dest + PREFIX + "/bin/" + prog, os.X_OK)
    p = subprocess.run([spotrun, "--version"], capture_output=True, text=True,
                       env=clean_env(), cwd="/")
    assert p.returncode == 0 and p.stdout.startswith("spotrun "), p.stderr
    assert "libspotckpt ABI" in p.stdout
    # the data directory is found beside the program (../share/spotrun/data)
    p = subprocess.run([spotrun, "gpus", "H100:8", "--json"], capture_output=True,
                       text=True, env=clean_env(), cwd="/")
    assert p.returncode == 0 and '"gpu":"H100"' in p.stdout, p.stderr


def test_python_package_imports_without_pythonpath(dest):
    site = dest + PREFIX + "/lib/" + PYVER + "/dist-packages"
    assert os.path.isfile(os.path.join(site, "spotrun", "__init__.py"))
    # The interpreter is pointed at the DESTDIR site dir, as it already
    # looks in PREFIX's site dir without that once really installed.
    code = ("import site, sys; site.addsitedir(%r); import spotrun, spotrun._lib as L; "
            "print(spotrun.__file__); print([p for p, _ in L.candidates()])" % site)
    p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True,
                       text=True, env=clean_env(), cwd="/")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(site)
    assert PREFIX + "/lib/libspotckpt.so" in p.stdout
    # and the installed library loads through the binding
    code = ("import site; site.addsitedir(%r); import spotrun._lib as L; "
            "print(L.lib().spotckpt_abi_version(), L.ABI_VERSION)" % site)
    p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True,
                       env=clean_env(preload=True,
                                     SPOTRUN_LIB=dest + PREFIX + "/lib/libspotckpt.so"),
                       cwd="/")
    assert p.returncode == 0, p.stderr
    abi = header_abi()
    assert p.stdout.split() == [abi, abi], "library, binding vs header %s" % abi


def test_pkg_config_and_linking(dest, tmp_path):
    env = clean_env(PKG_CONFIG_PATH=dest + PREFIX + "/lib/pkgconfig",
                    PKG_CONFIG_SYSROOT_DIR=dest)
    p = subprocess.run(["pkg-config", "--cflags", "--libs", "spotckpt"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    flags = p.stdout.split()
    assert "-I" + dest + PREFIX + "/include" in flags
    assert "-L" + dest + PREFIX + "/lib" in flags and "-lspotckpt" in flags
    if ASAN:
        return  # the ASan library needs its runtime; linking is shown in plain
    src = tmp_path / "abi.c"
    src.write_text("#include <spotrun/ckpt.h>\n"
                   "int main(void) { return spotckpt_abi_version() == "
                   "SPOTCKPT_ABI_VERSION ? 0 : 1; }\n")
    exe = str(tmp_path / "abi")
    p = subprocess.run(["gcc", str(src), "-o", exe] + flags, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([exe], env=dict(env, LD_LIBRARY_PATH=dest + PREFIX + "/lib"))
    assert p.returncode == 0


def test_man_pages_completion_and_unit(dest):
    man = dest + PREFIX + "/share/man"
    for page, name in (("man1/spotrun.1", "spotrun"), ("man8/spotrund.8", "spotrund"),
                       ("man8/spotrun-agent.8", "spotrun-agent"),
                       ("man3/libspotckpt.3", "libspotckpt")):
        p = subprocess.run(["man", "-l", os.path.join(man, page)], capture_output=True,
                           text=True, env=clean_env(MANPAGER="cat", PAGER="cat",
                                                    MANWIDTH="80"))
        assert p.returncode == 0 and "NAME" in p.stdout and name in p.stdout, p.stderr
    comp = dest + PREFIX + "/share/bash-completion/completions/spotrun"
    p = subprocess.run(["bash", "-c", "source %s; COMP_WORDS=(spotrun pl); COMP_CWORD=1; "
                        "_spotrun; echo ${COMPREPLY[@]}" % comp],
                       capture_output=True, text=True, env=clean_env())
    assert p.returncode == 0 and p.stdout.split() == ["plan"], p.stderr
    unit = open(dest + PREFIX + "/lib/systemd/user/spotrund.service").read()
    assert "ExecStart=" + PREFIX + "/bin/spotrund" in unit


def test_uninstall_removes_everything(dest):
    p = subprocess.run(["make", "--no-print-directory", "-C", ROOT, "uninstall",
                        "BUILD=" + os.path.relpath(BUILD, ROOT), "DESTDIR=" + dest,
                        "PREFIX=" + PREFIX],
                       capture_output=True, text=True, timeout=120, env=clean_env())
    assert p.returncode == 0, p.stderr
    left = [os.path.join(r, f) for r, _, fs in os.walk(dest) for f in fs]
    assert left == [], left
    shutil.rmtree(dest)
