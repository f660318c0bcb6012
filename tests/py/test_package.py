"""The package imports without an install step, finds (or clearly fails
to find) the library, and the torch.save peer benchmark works."""

import json
import os
import subprocess

from conftest import PYTHON, ROOT, child_env


def run_py(code, **env):
    e = child_env(**env)
    return subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=120)


def test_import_from_repo_root_with_pythonpath_python(lib):
    e = {k: v for k, v in os.environ.items()}
    e["PYTHONPATH"] = "python"
    r = subprocess.run([PYTHON, "-c", "import spotrun; "
                        "print(spotrun._lib.lib().path)"],
                       cwd=ROOT, env=e, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("libspotckpt.so")


def test_default_location_is_the_repo_build_dir():
    from spotrun import _lib
    saved = os.environ.pop("SPOTRUN_LIB", None)
    try:
        paths = [p for p, _ in _lib.candidates()]
    finally:
        if saved is not None:
            os.environ["SPOTRUN_LIB"] = saved
    assert paths == [os.path.join(ROOT, "build", "lib", "libspotckpt.so")]


def test_missing_library_names_where_it_looked(tmp_path):
    missing = tmp_path / "nope" / "libspotckpt.so"
    r = run_py("import spotrun\n"
               "try:\n    spotrun.Checkpointer('/tmp/x')\n"
               "except spotrun.LibraryNotFound as e:\n    print(e)\n",
               SPOTRUN_LIB=str(missing))
    assert r.returncode == 0, r.stderr
    assert str(missing) in r.stdout and "make" in r.stdout


def test_bench_torch_save_prints_one_json_line(tmp_path):
    r = subprocess.run([PYTHON, os.path.join(ROOT, "python", "spotrun",
                                             "bench_torch_save.py"),
                        "--bytes", "3000000", "--dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1
    out = json.loads(lines[0])
    assert set(out) == {"seconds", "bytes"}
    assert out["bytes"] == 3000000 and out["seconds"] > 0
    assert os.listdir(tmp_path) == []


def test_bench_tensor_sizes_cover_the_total():
    from spotrun import bench_torch_save as b
    sizes = b.tensor_sizes(100 << 20)
    assert sum(sizes) == 100 << 20
    assert set(b.SIZES) <= set(sizes)   # mixed sizes
    assert sizes[:3] == [16 << 20] * 3
    assert sum(b.tensor_sizes(1001)) == 1000


def test_default_build_is_loaded_without_spotrun_lib():
    default = os.path.join(ROOT, "build", "lib", "libspotckpt.so")
    if not os.path.exists(default):
        import pytest
        pytest.skip("no default build (make) in this checkout")
    e = child_env()
    e.pop("SPOTRUN_LIB", None)
    e["PYTHONPATH"] = "python"
    r = subprocess.run([PYTHON, "-c", "import spotrun; "
                        "print(spotrun._lib.lib().path)"],
                       cwd=ROOT, env=e, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == default
