"""Under compute-sanitizer the exercise checker gives each GPU output its exact size (issue 21, section
5): its usual guard band of poisoned elements would make an unguarded store past the end land in a valid
allocation, where memcheck sees nothing. The same launch code runs here in the simulator (cuda.to_device
and the student's kernel are the simulator's), so the choice of allocation is checked on a laptop; the
memcheck report itself is tests/inspect/test_hardware_gpu.py's (-m gpu)."""
import numpy as np
import pytest

from exercises import Case
from kernels.compiler import cuda
from lab.teach.messages import Failed
from lab.teach.contained import executor
from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="the launch code runs on the simulator's arrays here")


@cuda.jit
def guarded_add(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


@cuda.jit
def unguarded_add(a, b, c):
    i = cuda.grid(1)
    c[i] = a[i % a.shape[0]] + b[i % b.shape[0]]  # the store is unguarded: past c's end


def _kernel(guarded: bool):
    return guarded_add if guarded else unguarded_add


def _case(rng, n):
    a, b = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
    return Case("t", [a, b], [((n,), np.float32)], [a.astype(np.float64) + b], [1e-6]), a + b


def test_guard_band_only_outside_the_sanitizer(monkeypatch):
    monkeypatch.delenv("LAB_SANITIZER", raising=False)
    assert executor.guard_elements() == executor.GUARD > 0
    monkeypatch.setenv("LAB_SANITIZER", "memcheck")
    assert executor.guard_elements() == 0


@pytest.mark.parametrize("sanitizer, extra", [(None, 2 * executor.GUARD), ("memcheck", 0)])
def test_output_allocations_are_exact_only_under_the_sanitizer(rng, monkeypatch, sanitizer, extra):
    import numba.cuda

    if sanitizer:
        monkeypatch.setenv("LAB_SANITIZER", sanitizer)
    else:
        monkeypatch.delenv("LAB_SANITIZER", raising=False)
    sizes, real = [], numba.cuda.to_device
    monkeypatch.setattr(numba.cuda, "to_device", lambda a, *args, **kw: sizes.append(np.asarray(a).size)
                        or real(a, *args, **kw))
    n = int(rng.integers(33, 95))  # not a multiple of the 32-thread block
    case, want = _case(rng, n)
    (out,) = executor._launch_gpu(_kernel(True), case, (-(-n // 32),), (32,), 0)
    assert sizes == [n + extra] * 3  # a, b and the output, each in its guard band outside the sanitizer
    assert np.allclose(out, want)


def test_under_the_sanitizer_outputs_are_exact_so_the_store_leaves_the_allocation(rng, monkeypatch):
    monkeypatch.setenv("LAB_SANITIZER", "memcheck")
    n = int(rng.integers(33, 95))
    n += n == 64  # not a multiple of the block: some thread stores past the end (64 made this test flaky)
    case, _ = _case(rng, n)
    # exact size: the out-of-bounds store is outside the array (the simulator raises where memcheck reports)
    with pytest.raises(Failed, match="the launch failed"):
        executor._launch_gpu(_kernel(False), case, (-(-n // 32),), (32,), 0)


@pytest.mark.parametrize("sanitizer", [None, "memcheck"])
def test_a_guarded_kernel_gives_the_same_outputs_either_way(rng, monkeypatch, sanitizer):
    if sanitizer:
        monkeypatch.setenv("LAB_SANITIZER", sanitizer)
    else:
        monkeypatch.delenv("LAB_SANITIZER", raising=False)
    n = int(rng.integers(33, 95))
    case, want = _case(rng, n)
    (out,) = executor._launch_gpu(_kernel(True), case, (-(-n // 32),), (32,), 0)
    assert out.shape == (n,) and np.allclose(out, want)


def test_the_checker_asks_for_exact_outputs_and_line_info_under_each_tool(monkeypatch, tmp_path):
    """lab.teach.workspace runs the hidden tests under compute-sanitizer with LAB_LINEINFO (kernels built
    with line info: reports name the student's file and line) and LAB_SANITIZER (exact-size outputs)."""
    from lab.core import sanitizer as san
    from lab.teach import workspace

    seen = []
    monkeypatch.setattr(san, "find_sanitizer", lambda: "/x/compute-sanitizer")
    monkeypatch.setattr(workspace, "run_child", lambda *a, wrap=(), env=None, **kw: seen.append((list(wrap), env)) or [])
    tests, notes = workspace._gpu_diagnoses("vecadd", tmp_path / "vecadd.py", 0, 10)
    assert [w[2] for w, _ in seen] == list(workspace.SANITIZER_TOOLS)
    for wrap, env in seen:
        assert env["LAB_LINEINFO"] == "1" and env["LAB_SANITIZER"] == wrap[2]
    assert tests == [] and len(notes) == 3  # no report written by the stand-in: said, not passed


MEMCHECK_REPORT = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at cudapy::student_vecadd::vecadd_kernel+0x170{where}
=========     by thread (40,0,0) in block (3,0,0)
=========     Address 0x7f0000000100 is out of bounds
=========
========= ERROR SUMMARY: 1 error
"""


@pytest.mark.parametrize("where, start", [
    (" in {path}:11", "out of bounds (compute-sanitizer memcheck on the GPU): thread 40 of block 3 wrote outside "
                      "an array at line 11 of your file"),
    ("", "out of bounds (compute-sanitizer memcheck on the GPU): thread 40 of block 3 wrote outside an array at "
         "your kernel (no line info)"),
])
def test_a_memcheck_report_is_a_finding_with_or_without_your_line(monkeypatch, tmp_path, where, start):
    from lab.core import sanitizer as san
    from lab.teach import workspace

    student = tmp_path / "vecadd.py"
    student.write_text("# the student's file\n")

    def child(name, path, backend, seed, timeout, wrap=(), env=None, **kw):
        log = wrap[wrap.index("--log-file") + 1]
        text = MEMCHECK_REPORT.format(where=where.format(path=student)) if wrap[2] == "memcheck" else \
            "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
        open(log, "w").write(text)
        return []

    monkeypatch.setattr(san, "find_sanitizer", lambda: "/x/compute-sanitizer")
    monkeypatch.setattr(workspace, "run_child", child)
    tests, notes = workspace._gpu_diagnoses("vecadd", student, 0, 10)
    got = {t["name"]: t for t in tests}
    assert got["GPU racecheck"]["passed"] and got["GPU synccheck"]["passed"] and not notes
    entry = got["GPU memcheck"]
    assert not entry["passed"] and entry["message"].startswith(start), entry["message"]
