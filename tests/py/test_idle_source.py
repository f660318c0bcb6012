"""Idle comes from the GPU, else from the workload's own progress, never
from CPU load (issue 28): a job that trains at almost no CPU is busy (its
steps advance), and a job that keeps the CPU busy on a GPU that NVML
reports at 5 % is idle.  The NVML path runs the real agent against a
fake libnvidia-ml (SPOTRUN_NVML_LIB) built here from NVML's documented
entry points; the source and the rule show in the job view, `spotrun
status`, `spotrun cost` and /v1/cost (the dashboard's card)."""

import csv
import io
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from finops_daemon import BURN_PY, Daemon, bin_path

# steps every 0.1 s, sleeping in between: almost no CPU
STEPS_PY = """import json, os, sys, time
path = os.environ["SPOTRUN_STATUS_FILE"]
end = time.time() + float(sys.argv[1])
step = 0
while time.time() < end:
    time.sleep(0.1)
    step += 1
    with open(path + ".tmp", "w") as f:
        json.dump({"step": step, "total_steps": 1000000}, f)
    os.replace(path + ".tmp", path)
"""

# NVML's entry points as nvml.h declares them; every GPU at 5 %
FAKE_NVML_C = r"""
typedef struct { unsigned int gpu, memory; } util_t;
typedef struct { unsigned long long total, free, used; } mem_t;
int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned int *n) { *n = 1; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **d) { *d = (void *)1; (void)i; return 0; }
int nvmlDeviceGetUtilizationRates(void *d, util_t *u) { (void)d; u->gpu = 5; u->memory = 1; return 0; }
int nvmlDeviceGetMemoryInfo(void *d, mem_t *m) { (void)d; m->total = 16ull << 30; m->used = 1ull << 30; m->free = m->total - m->used; return 0; }
"""


def run_job(tmp, script, env_nvml):
    old = os.environ.get("SPOTRUN_NVML_LIB")
    os.environ["SPOTRUN_NVML_LIB"] = env_nvml
    d = Daemon(tmp, "--time-scale", "60")
    try:
        d.start()
    finally:
        if old is None:
            os.environ.pop("SPOTRUN_NVML_LIB")
        else:
            os.environ["SPOTRUN_NVML_LIB"] = old
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    with open(os.path.join(work, "job.py"), "w") as f:
        f.write(script)
    spec = ("name: idle\nresources: {accelerators: V100:1, use_spot: true}\n"
            "run: /usr/bin/python3 job.py 6\nspotrun: {work: 2h, deadline: 48h}\n")
    st, body = d.write("POST", "/v1/jobs", {"spec_yaml": spec, "workdir": work})
    assert st == 201, body
    job = body["job"]["id"]
    d.wait_state(job, ("RUNNING",), timeout=60)

    def seen():
        j = d.job(job)
        return j.get("idle", {}).get("source") not in (None, "none") and j
    j = d.wait(seen, 60, "the idle source of a running job")
    st_text = subprocess.run([bin_path("spotrun"), "status", str(job), "--state-dir",
                              d.state], capture_output=True, text=True, timeout=60).stdout
    d.wait_state(job, ("SUCCEEDED",), timeout=120)
    _, cost = d.req("GET", "/v1/cost?job=%d" % job)
    _, text = d.req("GET", "/v1/cost/focus?version=1.2&job=%d" % job, raw=True)
    rows = list(csv.DictReader(io.StringIO(text.decode())))
    table = subprocess.run([bin_path("spotrun"), "cost", "--job", str(job),
                            "--state-dir", d.state], capture_output=True, text=True,
                           timeout=60).stdout
    return d, j, st_text, cost, rows, table


def test_progress_is_busy_at_low_cpu():
    tmp = tempfile.mkdtemp(prefix="idle-progress-")
    d = None
    try:
        d, j, st_text, cost, rows, table = run_job(tmp, STEPS_PY, "/nonexistent/nvml.so")
        assert j["idle"]["source"] == "progress", j["idle"]
        assert "after 60 s without a training step" in j["idle"]["rule"]
        assert "idle " in st_text and j["idle"]["rule"] in st_text, st_text
        # training at ~0 % CPU: busy (the CPU rule called it idle); only
        # the boot before the workload ran and its exit may be idle
        states = "".join(r["x_UsageState"][0] for r in rows)
        assert states.strip("I") and "I" not in states.strip("I") and \
            len(states.strip("I")) >= 3, states
        assert all(r["x_Utilization"] == "" for r in rows), rows
        t = cost["total"]
        assert 0 <= t["idle_cost_micros"] < t["cost_micros"], t
        assert cost["idle_rule"] in table and "CPU load is not used" in table, table
    finally:
        if d:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_nvml_gpu_at_5_percent_is_idle_at_high_cpu():
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler for the fake NVML library")
    tmp = tempfile.mkdtemp(prefix="idle-nvml-")
    d = None
    try:
        src = os.path.join(tmp, "fake_nvml.c")
        lib = os.path.join(tmp, "libfake-nvml.so")
        with open(src, "w") as f:
            f.write(FAKE_NVML_C)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src], check=True, env=env,
                       timeout=60)
        d, j, st_text, cost, rows, table = run_job(tmp, BURN_PY, lib)
        assert j["idle"]["source"] == "gpu", j["idle"]
        assert "below 10% GPU utilisation (NVML)" in j["idle"]["rule"]
        assert any(n["gpu_util"] == pytest.approx(0.05) for n in j["nodes"]), j["nodes"]
        assert j["idle"]["rule"] in st_text, st_text
        # the CPU burns half the time; the GPU is at 5 %: every row idle
        assert rows and all(r["x_UsageState"] == "Idle" for r in rows), [
            (r["ChargePeriodStart"], r["ChargePeriodEnd"], r["x_UsageState"],
             r["x_Utilization"]) for r in rows]
        assert any(r["x_Utilization"] == "0.05" for r in rows), rows
        t = cost["total"]
        assert t["idle_cost_micros"] == t["cost_micros"] > 0, t
    finally:
        if d:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_agent_gpu_stat_reads_nvml_and_says_when_it_cannot(tmp_path):
    """`spotrun-agent --gpu-stat`: NVML's figures as the agent reads them
    (here the fake library's 5 % and 1 of 16 GiB), exit 3 naming the
    library when it cannot be loaded, exit 2 on a bad option value."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler for the fake NVML library")
    src, lib = tmp_path / "fake_nvml.c", tmp_path / "libfake-nvml.so"
    src.write_text(FAKE_NVML_C)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)],
                   check=True, env=env, timeout=60)
    agent = bin_path("spotrun-agent")

    def stat(nvml, *args):
        return subprocess.run([agent, "--gpu-stat", *args],
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, SPOTRUN_NVML_LIB=nvml))

    r = stat(str(lib), "--json", "--samples", "2", "--interval", "10ms")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(lines) == 2
    for s in lines:
        assert s["mean_permille"] == 50
        assert s["gpus"] == [{"index": 0, "util_pct": 5,
                              "mem_used": 1 << 30, "mem_total": 16 << 30}]
    r = stat(str(lib))
    assert r.returncode == 0 and "gpu 0: util 5%, memory 1.0 / 16.0 GiB" \
        in r.stdout, r.stdout
    missing = str(tmp_path / "no" / "libnvidia-ml.so.1")
    r = stat(missing)
    assert r.returncode == 3 and missing in r.stderr and not r.stdout, r
    r = stat(str(lib), "--samples", "0")
    assert r.returncode == 2 and "--samples" in r.stderr, r
