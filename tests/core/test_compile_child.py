"""Compiler crashes (lab.core.compile_child, kernels.cache's probe and crash marker): a compile that
aborts its process does not take the run down.

On a GPU a rung's first compile runs in a child process and the run loads what it compiled. Here,
without a GPU: the probe is Numba's own CPU cache (the same ``load_overload`` the CUDA dispatchers
call), and the whole path runs in the simulator with ``SIMULATED`` (every rung counts as uncompiled),
the compile child aborted by its test-only hook (``LAB_TEST_COMPILE_ABORT``)."""
import json
import os
import signal
import subprocess
import sys

import pytest

from kernels import cache
from lab.core import compile_child
from tests.conftest import SIMULATOR

GEN = "def triple_{k}(x):\n    return x * 3 + {k}\n"


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv(cache.ENV, raising=False)
    monkeypatch.delenv(cache.NUMBA_ENV, raising=False)
    monkeypatch.delenv(cache._OURS, raising=False)
    monkeypatch.delenv(compile_child.ABORT_ENV, raising=False)
    monkeypatch.delenv(compile_child.CHILD_ENV, raising=False)
    monkeypatch.setattr(cache, "_READY", [False])
    return tmp_path / "c"


def test_the_probe_stops_a_compile_and_lets_a_cached_kernel_run(tmp_cache, monkeypatch):
    """Inside no_compile a kernel missing from the disk cache raises WouldCompile before compiling;
    outside, its compile leaves a crash marker naming it (and what the lab compiles it for) until
    the save; a fresh dispatcher of the same source then loads it inside no_compile (no child)."""
    numba = pytest.importorskip("numba")
    from numba.core import config

    cache.configure("test", "0")
    monkeypatch.setattr(config, "CACHE_DIR", os.environ[cache.NUMBA_ENV])
    k = int.from_bytes(os.urandom(3), "little")  # a text no earlier run compiled
    src = GEN.format(k=k)

    def fresh():
        return cache._guard(numba.njit(cache=True)(cache.exec_generated(src, {})[f"triple_{k}"]))

    first = fresh()
    with pytest.raises(cache.WouldCompile, match=f"triple_{k}"), cache.no_compile():
        first(2)
    assert not first.overloads  # nothing was compiled
    seen = []
    monkeypatch.setattr(cache, "MISS_HOOKS", [lambda: seen.append(cache.read_marker())])
    with cache.compiling_for(compiler="numba-cuda-mlir", rung="demo/rung (float32, 8, 32 threads)"):
        assert first(2) == 6 + k
    assert seen[0]["kernel"].endswith(f"triple_{k}") and seen[0]["rung"].startswith("demo/rung")
    assert seen[0]["compiler"] == "numba-cuda-mlir" and seen[0]["pid"] == os.getpid()
    assert cache.read_marker() is None  # saved: the marker is gone
    with cache.no_compile():  # the second run: everything in the cache
        assert fresh()(5) == 15 + k and not cache.would_have_compiled()


def test_the_labs_own_helper_kernels_compile_inside_a_probe(tmp_cache, monkeypatch):
    """compile_allowed (the timer's blocking and flush kernels): inside a rung's no_compile probe the
    helper compiles here, its crash marker naming it; the probe stops a rung's compile as before,
    after it and around it (the timer once fell back to sleeping for the whole process)."""
    numba = pytest.importorskip("numba")
    from numba.core import config

    cache.configure("test", "0")
    monkeypatch.setattr(config, "CACHE_DIR", os.environ[cache.NUMBA_ENV])
    k = int.from_bytes(os.urandom(3), "little")
    helper, rung = (cache._guard(numba.njit(cache=True)(cache.exec_generated(GEN.format(k=k + i), {})[f"triple_{k + i}"]))
                    for i in (0, 1))
    seen = []
    monkeypatch.setattr(cache, "MISS_HOOKS", [lambda: seen.append(cache.read_marker())])
    with cache.no_compile():
        with cache.compile_allowed("the timer's blocking kernel"):
            assert helper(2) == 6 + k
        assert not cache.would_have_compiled()
        with pytest.raises(cache.WouldCompile, match=f"triple_{k + 1}"):
            rung(2)
        assert cache.would_have_compiled()
    assert seen and seen[0]["rung"] == "the timer's blocking kernel" and cache.read_marker() is None


def test_markers_of_dead_processes_are_reported_once(tmp_cache):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    pid = int(dead.stdout)
    folder = cache.marker_path(pid).parent
    folder.mkdir(parents=True)
    cache.marker_path(pid).write_text(json.dumps(
        {"pid": pid, "started": 0, "compiler": "numba-cuda-mlir", "kernel": "group_rows_kernel",
         "rung": "softmax/group_rows (float64, 300x700, 128 threads)"}))
    cache.marker_path(os.getppid()).write_text("{}")  # a live process: still compiling, not a crash
    lines = compile_child.earlier_crashes()
    assert len(lines) == 1 and f"process {pid} died" in lines[0]
    assert "numba-cuda-mlir compiled softmax/group_rows (float64, 300x700, 128 threads) (group_rows_kernel)" in lines[0]
    assert compile_child.earlier_crashes() == []  # said once
    assert cache.marker_path(os.getppid()).exists()


def test_how_a_child_ended():
    assert compile_child.how(-signal.SIGABRT) == "SIGABRT" and compile_child.how(-signal.SIGSEGV) == "SIGSEGV"
    assert compile_child.how(3) == "exit code 3"
    assert compile_child.other("numba-cuda-mlir") == "numba-cuda" and compile_child.other("numba-cuda") == "numba-cuda-mlir"


def test_no_child_where_nothing_can_crash_or_be_handed_over(tmp_cache, monkeypatch):
    problem = compile_child.Problem("softmax", (4, 40), "float32", 32, "numba", 1, "gpu")
    monkeypatch.setattr(cache, "location", lambda: "/somewhere")
    assert compile_child.Guard(problem, "numba-cuda-mlir", ["fused"], simulator=False).active
    assert not compile_child.Guard(problem, "numba-cuda", ["fused"], simulator=True).active  # compiles nothing
    monkeypatch.setenv(compile_child.CHILD_ENV, "1")
    assert not compile_child.Guard(problem, "numba-cuda-mlir", ["fused"], simulator=False).active  # a child
    monkeypatch.delenv(compile_child.CHILD_ENV)
    monkeypatch.setattr(cache, "location", lambda: None)  # LAB_KERNEL_CACHE=0: nothing to hand over
    assert not compile_child.Guard(problem, "numba-cuda-mlir", ["fused"], simulator=False).active


# --- the whole path, in the simulator --------------------------------------------------------------
needs_sim = pytest.mark.skipif(not SIMULATOR, reason="the simulated compile child runs in the simulator")


def _run(variants, **opts):
    from lab.core.runner import Options, run

    return run(Options("softmax", threads=32, size="2x40", dtype="float64", variants=variants,
                       contenders=["numba"], seed=7, **opts), "simulator")


@needs_sim
def test_a_compile_abort_is_survived_named_and_falls_back(tmp_cache, monkeypatch):
    """The compile child aborts on group_rows (SIGABRT): the run goes on, fused is compiled by the
    child and run here, group_rows runs, checked, under the other compiler in a child of its own,
    and one line names the compiler, the rung and the signal, in the row and in the warnings."""
    from lab.core import compilers

    monkeypatch.setattr(compile_child, "SIMULATED", [True])
    monkeypatch.setattr(compilers, "current", lambda: compilers.MLIR)  # as on a CUDA 13 GPU
    monkeypatch.setenv(compile_child.ABORT_ENV, "softmax/group_rows")
    report = _run(["fused", "group_rows"])
    fused, group = report.rows
    assert fused.ok and fused.compiler == compilers.MLIR and fused.first_call_ms > 0 and not fused.reason
    line = ("numba-cuda-mlir crashed compiling softmax/group_rows (float64, 2x40, 32 threads): SIGABRT; "
            "fell back to numba-cuda for this rung")
    assert group.ok and group.compiler == "numba-cuda" and group.reason == line
    assert report.warnings == [line]
    assert group.max_abs_err is not None and group.launch is report.launches["group_rows"] and group.launch["grid"]
    assert report.to_dict()["results"][1]["reason"] == line
    logs = list((tmp_cache / "kernels" / "crashes").glob("*group_rows.log"))
    assert len(logs) == 1 and "Fatal Python error: Aborted" in logs[0].read_text()
    assert list((tmp_cache / "kernels" / cache.MARKERS).glob("*.json")) == []  # the child's marker: read, removed


@needs_sim
def test_a_crash_without_the_other_compiler_is_a_fail_row(tmp_cache, monkeypatch):
    monkeypatch.setattr(compile_child, "SIMULATED", [True])
    monkeypatch.setenv(compile_child.ABORT_ENV, "softmax/group_rows")
    (row,) = _run(["group_rows"]).rows  # numba-cuda crashed; numba-cuda-mlir has no simulator
    assert row.status == "FAIL" and row.reason.startswith(
        "numba-cuda crashed compiling softmax/group_rows (float64, 2x40, 32 threads): SIGABRT; numba-cuda-mlir cannot run here")


@needs_sim
def test_a_child_that_cannot_start_leaves_the_compile_to_the_run(tmp_cache, monkeypatch):
    monkeypatch.setattr(compile_child, "SIMULATED", [True])
    monkeypatch.setattr(compile_child, "_ENTRY", "lab.core.no_such_module:main")
    report = _run(["fused"])
    assert report.rows[0].ok and len(report.warnings) == 1
    assert report.warnings[0].startswith("the compile child failed before softmax/fused (float64, 2x40, 32 threads) "
                                         "(exit code 1: ModuleNotFoundError")


@needs_sim
def test_the_simulator_starts_no_child(tmp_cache, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a child was started")

    monkeypatch.setattr(compile_child, "spawn", refuse)
    monkeypatch.setenv(compile_child.ABORT_ENV, "softmax/fused")  # read by a compile child only
    assert _run(["fused"]).rows[0].ok


def test_a_rung_a_child_compiled_shows_the_childs_first_call(tmp_cache):
    """The child compiled this rung and the later ones; each of their rows shows the child's first call
    (compile + load + one run), not the run's own load; a rung no child compiled keeps its own."""
    from lab.core.rows import row

    problem = compile_child.Problem("softmax", (4, 40), "float32", 32, "numba", 1, "gpu")
    guard = compile_child.Guard(problem, "numba-cuda-mlir", ["fused", "online"], simulator=False)
    guard.done["online"] = ("ok", 1234.5)
    attempt = lambda probe: (row("numba", "online", first_call_ms=1.5), [])  # noqa: E731
    got, launched = guard.row(row("numba", "online").task, attempt, lambda stage: None)
    assert got.first_call_ms == 1234.5 and launched == []
    got, _ = guard.row(row("numba", "fused").task, lambda probe: (row("numba", "fused", first_call_ms=2.5), []),
                       lambda stage: None)
    assert got.first_call_ms == 2.5


def test_the_crash_line_is_printed_once_under_the_table():
    from lab.cli.views.report import notes_lines
    from lab.core.runner import Report
    from lab.core.rows import row

    line = ("numba-cuda-mlir crashed compiling softmax/group_rows (float64, 300x700, 128 threads): SIGABRT; "
            "fell back to numba-cuda for this rung")
    rep = Report("softmax", "", "gpu", {}, (300, 700), "float64", 1, None, 5, 0, 0,
                 rows=[row("numba", "group_rows", "ok", line, compiler="numba-cuda")], warnings=[line])
    assert sum(line in n for n in notes_lines(rep)) == 1
