"""The compiler choice: numba-cuda or numba-cuda-mlir, chosen once per process, errors as one line."""
import json
import os
import subprocess
import sys

import pytest

from lab.core import compilers
from tests.conftest import COMPILER, SIMULATOR

MLIR_STATUS = compilers.compilers_status(SIMULATOR)[compilers.MLIR]
needs_mlir = pytest.mark.skipif(not MLIR_STATUS["usable"], reason=f"numba-cuda-mlir: {MLIR_STATUS['why']}")


def test_status_names_each_compiler_and_why_not():
    status = compilers.compilers_status(simulator=True)
    assert set(status) == set(compilers.COMPILERS)
    assert status["numba-cuda"]["usable"] and status["numba-cuda"]["version"]
    mlir = status["numba-cuda-mlir"]
    assert not mlir["usable"]  # never in the simulator
    assert "not installed" in mlir["why"] or "simulator" in mlir["why"] or "Python" in mlir["why"]
    ok, line = compilers.doctor_check()
    assert ok and line.startswith(f"uses {COMPILER} (") and "numba-cuda 0." in line and "numba-cuda-mlir" in line


@pytest.mark.parametrize("sim,installed,driver,py,want,why", [
    (True, True, 13000, (3, 12), "numba-cuda", "simulator"),
    (False, False, 13000, (3, 12), "numba-cuda", "not installed"),
    (False, True, 12080, (3, 12), "numba-cuda", "CUDA 12.8 driver"),
    (False, True, 13000, (3, 10), "numba-cuda", "Python >= 3.11"),
    (False, True, 13000, (3, 12), "numba-cuda-mlir", "default on CUDA 13"),
    (False, True, None, (3, 12), "numba-cuda-mlir", "default on CUDA 13"),
])
def test_default_compiler_is_mlir_on_a_cuda13_gpu_where_installed(monkeypatch, sim, installed, driver, py, want, why):
    import importlib.util

    from kernels import backend

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if installed else None)
    monkeypatch.setattr(backend, "driver_version", lambda: driver)
    monkeypatch.setattr(backend.sys, "version_info", py)
    name, reason = compilers.default(simulator=sim)
    assert name == want and why in reason


def test_why_names_the_reason(monkeypatch):
    assert compilers.why(COMPILER)  # this session's: --compiler, LAB_COMPILER or the default's reason
    monkeypatch.setenv(compilers.ENV, "numba-cuda")
    monkeypatch.setenv(compilers.WHY_ENV, "numba-cuda: the simulator's compiler")
    assert compilers._env_reason("numba-cuda") == "the simulator's compiler"
    assert compilers._env_reason("numba-cuda-mlir") == "LAB_COMPILER=numba-cuda-mlir"
    line = compilers.run_header("numba-cuda")
    assert line.startswith("Numba compiler: numba-cuda (") and len(line) <= 80


def test_mlir_with_sim_is_one_line_exit_2(lab):
    code, out, err = lab("run", "vecadd", "--compiler", "numba-cuda-mlir", "--sim")
    assert code == 2 and out == ""
    assert err.startswith("error: --compiler numba-cuda-mlir") and "simulator" in err
    assert len(err.strip().splitlines()) == 1


def test_select_rejects_a_change_after_kernels_loaded():
    import kernels.compiler  # noqa: F401  (loaded with this session's compiler)

    other = next(c for c in compilers.COMPILERS if c != COMPILER)
    with pytest.raises(compilers.LabError, match="already loaded|simulator|not installed|Python"):
        compilers.select(other, SIMULATOR)
    assert compilers.select(COMPILER, SIMULATOR) == COMPILER


@pytest.mark.gpu
def test_rows_name_their_compiler_and_resources():
    from lab.core.runner import Options, run

    rep = run(Options("vecadd", size="300", threads=64, repeats=1, warmup=0, contenders=["numba"]),
              "simulator" if SIMULATOR else "gpu")
    assert rep.compiler == COMPILER
    assert all(r.compiler == COMPILER and r.ok for r in rep.rows)
    if not SIMULATOR:  # the compiler's resource report
        assert all(r.registers and r.registers > 0 and r.spill_bytes is not None for r in rep.rows)


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (deselect locally with -m "not slow")
@pytest.mark.gpu
def test_both_gives_one_row_per_rung_and_compiler():
    """``--compiler both`` in fresh processes: numba-cuda rows ok; MLIR rows ok on a GPU where it is
    installed, else skipped with the reason. No numba-cuda import in the MLIR process."""
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "lab", "run", "vecadd", "--size", "1000", "--threads", "64", "--repeats", "2",
           "--warmup", "0", "--contenders", "numba,numpy", "--compiler", "both", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rows = [r for r in doc["results"] if r["contender"] == "numba"]
    assert [(r["variant"], r["compiler"]) for r in rows] == [
        (v, c) for v in ("element_per_thread", "four_per_thread", "auto") for c in compilers.COMPILERS]
    assert [r["contender"] for r in doc["results"] if r["contender"] != "numba"] == ["numpy"]
    for r in rows:
        if r["compiler"] == "numba-cuda" or MLIR_STATUS["usable"]:
            assert r["status"] == "ok" and r["max_abs_err"] < 1e-5 and r["first_call_ms"] > 0
        else:
            assert r["status"] == "skipped" and r["reason"] == MLIR_STATUS["why"]


@needs_mlir
@pytest.mark.gpu
def test_mlir_process_never_imports_numba_cuda():
    code = ("import os, sys; os.environ['LAB_COMPILER'] = 'numba-cuda-mlir'; "
            "from lab.core.runner import Options, run; "
            "rep = run(Options('vecadd', size='5000', threads=128, repeats=2, contenders=['numba']), 'gpu'); "
            "assert all(r.ok for r in rep.rows), [(r.variant, r.reason) for r in rep.rows]; "
            "print(sorted(m for m in sys.modules if m == 'numba' or m.startswith(('numba.', 'numba_cuda.'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"


# --- The resource report reads both nvJitLink log formats (CPU: logs given, or a real link) -------
CUDA12_LOG = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
              "ptxas info    : Function properties for k\n"
              "    24 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads\n"
              "ptxas info    : Used 40 registers, used 1 barriers, 24 bytes stack frame, 3072 bytes smem, 400 bytes cmem[0]\n")
# What CUDA 13's nvJitLink logged on the H100 for a kernel it had linked before: the linker's summary only
CUDA13_SUMMARY = ("info    : 8 bytes gmem\ninfo    : Function properties for 'k':\n"
                  "info    : used 15 registers, used 0 barriers, 16 stack, 1024 bytes smem, 696 bytes cmem[0], 0 bytes lmem\n")


@pytest.mark.parametrize("log,spills,usage", [
    (CUDA12_LOG, 20, {"registers": 40, "shared_bytes": 3072, "local_bytes": 24, "spill_bytes": 12}),
    (CUDA13_SUMMARY, 0, {"registers": 15, "shared_bytes": 1024, "local_bytes": 16, "spill_bytes": 0}),
    ("", None, None),
])
def test_spills_and_usage_from_either_log_format(monkeypatch, tmp_path, log, spills, usage):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))  # the remembered spill reports go there
    monkeypatch.setattr(compilers, "nvjitlink_log", lambda *a, **k: log)
    assert compilers._ptxas_spills("// ptx", (9, 0)) == spills  # stores + loads; none named: 0; no log: unknown
    if usage is None:
        with pytest.raises(RuntimeError, match="no resource line"):
            compilers.nvjitlink_usage(b"", "sm_90", False)
    else:
        got = compilers.nvjitlink_usage(b"", "sm_90", False)
        assert {k: got[k] for k in usage} == usage


def test_a_real_link_reports_registers_and_leaves_the_environment_alone(monkeypatch, tmp_path):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    pytest.importorskip("cuda.bindings.nvjitlink")

    ptx = (".version 8.0\n.target sm_90\n.address_size 64\n"
           ".visible .entry k(.param .u64 p){ .reg .b64 %rd<3>; ld.param.u64 %rd1,[p]; "
           "cvta.to.global.u64 %rd2,%rd1; st.global.u32 [%rd2],1; ret; }\n")
    before = os.environ.get("CUDA_CACHE_DISABLE")
    try:
        got = compilers.nvjitlink_usage(ptx.encode(), "sm_90", False)
    except Exception as e:  # no libnvJitLink on this machine
        pytest.skip(f"nvJitLink unavailable: {e}")
    assert os.environ.get("CUDA_CACHE_DISABLE") == before
    assert got["registers"] > 0 and got["spill_bytes"] == 0 and got["shared_bytes"] == 0
    assert compilers._ptxas_spills(ptx, (9, 0)) == 0


def test_scalar_argument_names_match_numba_typeof():
    """lab.core.resources names a launch's scalar arguments without importing numba (an MLIR process never
    loads it); the names must be numba.typeof's, which the offline compile turns back into types."""
    import numpy as np
    from numba import typeof

    from lab.core.resources import _argtype

    for v in (3, -2**40, 2.5, True, np.bool_(False), np.float32(1.5), np.float64(2), np.int32(7), np.int64(-1), np.uint32(5),
              np.uint8(200), np.uint64(2**63)):
        assert _argtype(v) == ("scalar", str(typeof(v))), v


# --- The simulator's compiler is numba-cuda, whatever a GPU process chose (CPU: mlir faked) -----------
def test_the_simulator_defaults_to_numba_cuda_where_mlir_is_installed(monkeypatch):
    import importlib.util

    from kernels import backend

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())  # numba-cuda-mlir "installed"
    monkeypatch.setattr(backend, "driver_version", lambda: 13000)
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert backend.default_compiler() == ("numba-cuda", "the simulator's compiler")
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    assert backend.default_compiler()[0] == "numba-cuda-mlir"


def test_a_simulator_child_compiles_with_numba_cuda(monkeypatch):
    """A GPU process under numba-cuda-mlir (chosen, or its default, which lab.core.compilers.select
    exports) starts simulator children (lab counters --sim, the exercise checker's simulator leg):
    they get numba-cuda, unless the caller names a compiler; GPU children keep the parent's."""
    from lab.core.session import child_env

    monkeypatch.setenv(compilers.ENV, compilers.MLIR)
    monkeypatch.setenv(compilers.WHY_ENV, f"{compilers.MLIR}: the default on CUDA 13")
    env = child_env(NUMBA_ENABLE_CUDASIM="1")
    assert env[compilers.ENV] == "numba-cuda" and env[compilers.WHY_ENV] == "numba-cuda: the simulator's compiler"
    assert child_env(NUMBA_ENABLE_CUDASIM="0")[compilers.ENV] == compilers.MLIR
    assert child_env(NUMBA_ENABLE_CUDASIM="1", LAB_COMPILER=compilers.MLIR)[compilers.ENV] == compilers.MLIR
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")  # inherited from this process, not an override
    assert child_env()[compilers.ENV] == "numba-cuda"


@pytest.mark.skipif(not SIMULATOR, reason="starts simulator children (a GPU process is not one)")
def test_sim_commands_under_an_mlir_parent(monkeypatch):
    """``lab counters --sim`` from a child_env of a numba-cuda-mlir process runs (numba-cuda); the same
    command with LAB_COMPILER=numba-cuda-mlir set by the user is a one-line error, exit 2 (not the
    ImportError of kernels.compiler as an internal error)."""
    from lab.core.session import child_env

    monkeypatch.setenv(compilers.ENV, compilers.MLIR)
    cmd = [sys.executable, "-m", "lab", "counters", "vecadd", "--sim", "--size", "256", "--threads", "32",
           "--variant", "element_per_thread", "--contenders", "numba", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(NUMBA_ENABLE_CUDASIM="1"), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["kernel"] == "vecadd"
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(LAB_COMPILER=compilers.MLIR), timeout=120)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
    assert proc.stderr.startswith("error: LAB_COMPILER=numba-cuda-mlir has no CUDA simulator")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_select_of_the_simulator_refuses_mlir(monkeypatch):
    from lab.core.simulator import select

    monkeypatch.setenv(compilers.ENV, compilers.MLIR)
    before = os.environ.get("NUMBA_ENABLE_CUDASIM")
    with pytest.raises(compilers.LabError, match="LAB_COMPILER=numba-cuda-mlir has no CUDA simulator"):
        select("sim")
    assert os.environ.get("NUMBA_ENABLE_CUDASIM") == before
