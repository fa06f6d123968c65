"""The checker's classes of issue 20: wrong kernels that used to pass (GPU-incompatible Python, a
plain function, every block redoing the whole problem, data that never stressed the bug) and hints
that pointed at the wrong bug. The mutants (tests/teach/mutants.py) are written as students write
them; each test here failed before the checker learned the class.

Tracer-based diagnoses (writers per element, NaN that was written, race lines) are simulator-only;
on a GPU the ``gpu``-marked mutants must still fail, with any message.
"""
import json
import os

import pytest

import exercises
from lab.teach import checker
from lab.teach.cases import COMPILE_TEST, unique_names
from lab.teach.messages import Failed
from lab.teach.contained import gpu_compile
from lab.teach.inprocess import run_all

from tests.conftest import BACKEND
from tests.helpers import mutated_solution
from tests.teach import mutants

SIM_ONLY = {id(m) for m in mutants.EVERY_BLOCK} | {
    id(m) for m in mutants.HINTS if m[1] in ("race names the lines", "accumulates into the poisoned output",
                                             "shared memory not zeroed past the end")}


def _seed():
    return int.from_bytes(os.urandom(4), "little")


def _params(group):
    return [pytest.param(*m, marks=[] if id(m) in SIM_ONLY else [pytest.mark.gpu], id=f"{m[0]}-{m[1]}") for m in group]


def _check(tmp_path, name, subs, want, avoid, compile_check=False):
    path = mutated_solution(tmp_path, name, subs)
    if BACKEND == "simulator" and not compile_check:  # one test a request, until a failure has the words
        from tests.teach.catalogue import first_failures

        results = first_failures(name, path, _seed(), enough=lambda bad: any(_wanted(r, want, avoid) for r in bad))
    else:
        results = run_all(name, str(path), BACKEND, seed=_seed(), compile_check=compile_check)
    return _failed_as_wanted(name, results, want, avoid)


def _wanted(r, want, avoid) -> bool:
    return all(w in r["message"] or w in r["name"] for w in want) and not any(a in r["message"] for a in avoid)


def _failed_as_wanted(name, results, want, avoid):
    failed = [r for r in results if not r["passed"]]
    assert failed, f"{name}: the mutant passed every hidden test: {results}"
    for r in failed:  # never a traceback, never the hidden test's code
        assert "Traceback" not in r["message"] and "def cases" not in r["message"]
    if BACKEND == "simulator":
        assert any(_wanted(r, want, avoid) for r in failed), failed
    return results


def _nvvm():
    from lab.core.resources import offline_unavailable

    return offline_unavailable() is None


@pytest.mark.gpu
def test_gpu_incompatible_python_fails_the_compile(tmp_path):
    """Each kernel of mutants.COMPILE fails the check's "compiles for a GPU" test, first and alone,
    naming what a GPU cannot compile. One compile child for all of them (gpu_compile.check_many, as
    ``lab exercise grade`` compiles a student's files), whose verdicts each check's own compile step
    then takes (the same source, kernel and argument types: the same seed)."""
    import numpy as np

    from lab.teach.cases import compile_sigs, hidden_cases

    if BACKEND == "simulator" and not _nvvm():
        pytest.skip("no NVVM/NVRTC here (pip install 'numba-gpu-lab[occupancy]')")
    seed = _seed()
    items = []
    for k, (name, _label, subs, _want, _avoid) in enumerate(mutants.COMPILE):
        (tmp_path / str(k)).mkdir()
        ex = exercises.load(name)
        items.append((str(mutated_solution(tmp_path / str(k), name, subs)), ex.kernel,
                      compile_sigs(hidden_cases(ex, np.random.default_rng(seed)))))
    verdicts = gpu_compile.check_many(items)
    for (name, label, _subs, want, avoid), (path, _, _), verdict in zip(mutants.COMPILE, items, verdicts):
        assert verdict.get("ok") is False, (label, verdict)
        results = _failed_as_wanted(name, run_all(name, path, BACKEND, seed, compile_check=True), want, avoid)
        assert results[0]["name"] == COMPILE_TEST and not results[0]["passed"], (label, results)


@pytest.mark.parametrize("name,label,subs,want,avoid",
                         _params(mutants.NOT_A_KERNEL + mutants.EVERY_BLOCK + mutants.ADVERSARIAL + mutants.HINTS))
def test_mutant_fails_with_the_right_hint(tmp_path, name, label, subs, want, avoid):
    _check(tmp_path, name, subs, want, avoid)


@pytest.mark.gpu
def test_every_solution_compiles_for_a_gpu():
    """The reference solutions compile offline for sm_75 with the hidden tests' argument types (one
    child process for all of them)."""
    if not _nvvm():
        pytest.skip("no NVVM/NVRTC here (pip install 'numba-gpu-lab[occupancy]')")
    import numpy as np

    items = []
    for n in exercises.names():
        ex = exercises.load(n)
        cases = ex.hidden().cases(np.random.default_rng(_seed()))
        items.append((str(ex.solution), ex.kernel, [gpu_compile.arg_types(c) for c in cases]))
    results = gpu_compile.check_many(items)
    assert all(r.get("ok") for r in results), list(zip(exercises.names(), results))


def test_skipped_compile_is_one_note(tmp_path, monkeypatch):
    """Without NVVM the check is not called passed: one note says it was skipped and how to enable it."""
    monkeypatch.setattr(gpu_compile, "check", lambda *a, **k: {"skipped": "needs nvvm (not found)"})
    notes = []
    emit = lambda obj: notes.append(obj["note"]) if "note" in obj else None  # noqa: E731
    results = run_all("map_guard", str(exercises.load("map_guard").solution), "simulator", _seed(), emit=emit)
    assert all(r["passed"] for r in results) and COMPILE_TEST not in [r["name"] for r in results]
    assert len(notes) == 1 and "GPU compile check was skipped" in notes[0] and "pip install" in notes[0]


@pytest.fixture
def fresh_compile_cache(tmp_path, monkeypatch):
    """gpu_compile with an empty memo, its disk cache under tmp_path, and ``starts``: the compile
    processes started (the compile step is faked: ``answers`` pops what each process says)."""
    import subprocess

    monkeypatch.setattr(gpu_compile, "_MEMO", {})
    monkeypatch.setattr(gpu_compile, "_TRANSIENT", {})
    monkeypatch.setattr(gpu_compile, "_NO_PROCESS", [])
    monkeypatch.setattr(gpu_compile, "_cache_file", lambda key: str(tmp_path / "cache" / f"{key}.json"))
    starts, answers = [], []

    def fake_run(args, **kwargs):
        starts.append(args)
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, str):  # the process died: no result line, this on stderr
            return subprocess.CompletedProcess(args, -9, stdout="", stderr=answer)
        return subprocess.CompletedProcess(args, 0, stdout="\n" + json.dumps(answer) + "\n", stderr="")

    monkeypatch.setattr(gpu_compile.subprocess, "run", fake_run)
    path = tmp_path / "vecadd.py"
    path.write_text(exercises.load("vecadd").solution.read_text())
    return str(path), starts, answers


SIGS = [["array", "<f4", 1, "C"]]
PTX = ("//\n.version 8.5\n.target sm_75\n.address_size 64\n\n.visible .entry _ZN6cudapy8__main__13vecadd_kernelB2v1E(\n"
       "\t.param .u64 p0\n)\n{\n\tret;\n}\n")
OK = {"ok": True, "ptx": [PTX]}


def test_a_compile_that_could_not_run_is_tried_again(fresh_compile_cache):
    """A killed compile process, a timeout or a toolchain that could not load (out of memory, no NVVM) is
    no verdict on the student's code: the next check compiles again, and its verdict is then kept."""
    import subprocess

    path, starts, answers = fresh_compile_cache
    answers += ["Traceback ...\nMemoryError\n", subprocess.TimeoutExpired("python", 50),
                [{"skipped": "the compiler could not run (NvvmSupportError: libNVVM cannot be found)"}],
                [OK]]
    first = gpu_compile.check(path, "vecadd_kernel", SIGS)
    assert "MemoryError" in first["skipped"] and len(starts) == 1
    assert "longer than 50 s" in gpu_compile.check(path, "vecadd_kernel", SIGS)["skipped"] and len(starts) == 2
    assert "NvvmSupportError" in gpu_compile.check(path, "vecadd_kernel", SIGS)["skipped"] and len(starts) == 3
    assert gpu_compile.check(path, "vecadd_kernel", SIGS) == OK and len(starts) == 4
    assert gpu_compile.check(path, "vecadd_kernel", SIGS) == OK and len(starts) == 4  # kept
    gpu_compile._MEMO.clear()
    assert gpu_compile.check(path, "vecadd_kernel", SIGS) == OK and len(starts) == 4  # on disk


@pytest.mark.parametrize("answer", [{"ok": True}, {"ok": True, "ptx": ["// forged"]},
                                    {"ok": True, "ptx": [PTX.replace("sm_75", "sm_90")]},
                                    {"ok": True, "ptx": [PTX.replace("vecadd_kernel", "other_kernel")]},
                                    {"ok": True, "ptx": [PTX, PTX]}, "not a record"])
def test_a_compile_ok_without_its_ptx_is_a_failure(fresh_compile_cache, answer):
    """The compile child's "ok" is its word: without a PTX per signature, for the compute capability
    asked, with an ``.entry`` of the student's kernel, it is a failing compile, never a pass."""
    path, starts, answers = fresh_compile_cache
    answers.append([answer])
    r = gpu_compile.check(path, "vecadd_kernel", SIGS)
    assert r.get("ok") is False and r["message"], r


def test_a_compile_error_is_kept(fresh_compile_cache):
    """The compiler's error in the student's code is a verdict: the same file is not compiled again."""
    path, starts, answers = fresh_compile_cache
    error = {"ok": False, "message": "np.dot is not supported in a CUDA kernel", "line": 5}
    answers.append([error])
    assert gpu_compile.check(path, "vecadd_kernel", SIGS) == error
    assert gpu_compile.check(path, "vecadd_kernel", SIGS) == error and len(starts) == 1


def test_a_failed_compile_process_is_not_started_again_in_the_sandbox(fresh_compile_cache):
    """A contained grader's child compiles before its audit hook, which refuses processes; when that
    compile could not run (H100, 2026-11-23: every submission was failed "tried to start a process"),
    the checker's second check, after ``no_more_processes``, must take the first's answer, not start
    the compiler again; a check it has no answer for is skipped."""
    path, starts, answers = fresh_compile_cache
    answers.append("Traceback ...\nOSError: cannot load nvvm\n")
    first = gpu_compile.check(path, "vecadd_kernel", SIGS)
    gpu_compile.no_more_processes()
    second = gpu_compile.check(path, "vecadd_kernel", SIGS)
    assert first == second and "cannot load nvvm" in first["skipped"] and len(starts) == 1
    other = gpu_compile.check(path, "vecadd_kernel", [["array", "<f8", 1, "C"]])
    assert "audit hook" in other["skipped"] and len(starts) == 1


def test_toolchain_errors_are_not_the_students():
    """compile_here's split: the toolchain failing (no NVVM: an ImportError; out of memory; an OSError,
    also as the cause of another error) is no verdict; a typing error is the student's."""
    from numba.core.errors import TypingError

    assert gpu_compile._environment_error(ImportError("libNVVM cannot be found"))
    assert gpu_compile._environment_error(MemoryError())
    try:
        try:
            raise OSError(12, "Cannot allocate memory")
        except OSError as e:
            raise RuntimeError("NVVM failed") from e
    except RuntimeError as wrapped:
        assert gpu_compile._environment_error(wrapped)
    assert not gpu_compile._environment_error(TypingError("No implementation of function dot"))


def test_compile_error_names_the_students_line(tmp_path):
    text = ('No implementation of function Function(<built-in function dot>) found for signature:\n \n'
            ' >>> dot(array(float32, 1d, C), array(float32, 1d, C))\n')
    f = tmp_path / "k.py"
    f.write_text("import numpy as np\n\n\ndef k(x, out):\n    out[0] = np.dot(x, x)\n")
    assert gpu_compile.explain(text, str(f), 5) == "np.dot is not supported in a CUDA kernel"
    assert gpu_compile.message({"ok": False, "message": "np.dot is not supported in a CUDA kernel", "line": 5},
                               (7, 5)) == "does not compile for a GPU (sm_75): np.dot is not supported in a CUDA kernel (line 5)"
    assert gpu_compile.student_line('File "k.py", line 9:\n', str(f)) == 9


def test_argument_types_from_the_hidden_cases():
    import numpy as np

    case = exercises.Case("q", [np.zeros(3, np.float32), 0.5, 3], [((3,), np.uint8)], [None], [0])
    assert gpu_compile.arg_types(case) == [["array", "<f4", 1, "C"], ["scalar", "float64"], ["scalar", "int64"],
                                           ["array", "|u1", 1, "C"]]


@pytest.mark.parametrize("name", exercises.names())
def test_test_labels_are_unique(name):
    import numpy as np

    cases = exercises.load(name).hidden().cases(np.random.default_rng(_seed()))
    labels = [c.name for c in cases]
    assert len(set(labels)) == len(labels), labels
    dup = unique_names([exercises.Case("n=1", [], [], [], []), exercises.Case("n=1", [], [], [], [])])
    assert [c.name for c in dup] == ["n=1", "n=1 (2)"]


@pytest.mark.parametrize("name", exercises.names())
def test_adversarial_sizes_and_inputs(name):
    """Inputs are random (never constant) and the sizes reach past the first block."""
    import numpy as np

    cases = exercises.load(name).hidden().cases(np.random.default_rng(_seed()))
    for c in cases:
        for a in c.args:
            if isinstance(a, np.ndarray) and a.size > 1:
                assert np.unique(a).size > 1, (name, c.name)
    if name == "softmax_fused":
        spiky = [c for c in cases if "maximum far above" in c.name]
        assert len(spiky) >= 2
        for c in spiky:
            x = c.args[0]
            assert np.all(x.max(axis=1) - np.sort(x, axis=1)[:, -2] > 89)  # exp overflows float32 without the max
    if name == "quantize":
        ties = [c for c in cases if "ties" in c.name][0]
        x, scale, zp = ties.args
        v = x.astype(np.float64) / scale + zp
        assert np.sum(v - np.floor(v) == 0.5) > 20


@pytest.mark.slow  # two short timeouts and three child processes
def test_a_hanging_test_costs_one_timeout_and_the_rest_still_run(tmp_path, monkeypatch):
    """A kernel that hangs only when n = 1: that test times out, every other test still gets a
    verdict (a fresh child runs them)."""
    from pathlib import Path

    from lab.teach import workspace

    monkeypatch.setenv("LAB_GPU_COMPILE", "0")
    src = exercises.load("map_guard").solution.read_text().replace(
        "    if i < out.shape[0]:\n        out[i] = 2 * x[i] + 1\n",
        "    while i < out.shape[0]:\n        out[i] = 2 * x[i] + 1\n        i += cuda.blockDim.x * cuda.gridDim.x * min(out.shape[0] - 1, 1)\n")
    f = tmp_path / "map_guard.py"
    f.write_text(src)
    backend = "simulator" if BACKEND == "simulator" else "gpu"
    seed = _seed()
    tests = workspace.run_child("map_guard", Path(f), backend, seed, 3)
    names = [t["name"] for t in tests]
    assert len(names) == len(set(names)) == len(workspace.hidden_names(["map_guard"], seed)["map_guard"]), tests
    timed = [t for t in tests if t["message"].startswith("timed out")]
    assert [t["name"] for t in timed] == ["n=1, 32 threads a block"], tests
    assert all(t["passed"] for t in tests if t not in timed), tests
    assert json.dumps(tests)


def _fake_gpu(case, write):
    """What the executor hands back on the GPU path (no trace), from a stand-in launch:
    ``write(out, ref, poison)`` fills one output, in the first run and in the finite-poison re-run."""
    from types import SimpleNamespace

    import numpy as np

    from lab.core import simt

    def launch(which):
        out = simt.poisoned(case.outputs[0][0], case.outputs[0][1], which)
        write(out, np.asarray(case.refs[0]), out.flat[0])
        return [out]

    return SimpleNamespace(grid=case.grid, block=case.block, onames=["out"], runs=[(launch(0), None, None)],
                           again=launch(2), error=None)


@pytest.mark.parametrize("nan_written", [True, False])
def test_gpu_tells_nan_written_from_never_written(nan_written):
    """No tracer on a GPU: a second run with a finite poison separates NaN that was written from an
    element never written."""
    import numpy as np

    def write(out, ref, poison):
        out[1:] = ref[1:]
        if nan_written:
            out[0] = np.nan

    ex = exercises.load("map_guard")
    case = ex.hidden().cases(np.random.default_rng(_seed()))[2]
    with pytest.raises(Failed) as e:
        checker.judge_case(ex, case, _fake_gpu(case, write), "gpu")
    if nan_written:
        assert "[0] is NaN although it was written" in str(e.value)
    else:
        assert "never written" in str(e.value) and "although" not in str(e.value)


def test_value_hints_on_fresh_data():
    """The hint helpers recognise the part that is missing, and say nothing when nothing fits."""
    import numpy as np

    rng = np.random.default_rng(_seed())
    x = rng.standard_normal(200)
    # minmax with block 1 (elements 64..127) left out; the last element left out
    x[100], x[-1] = x.min() - 1, x.max() + 1  # the extremes in block 1 and at the end
    rest = np.concatenate([x[:64], x[128:]])
    assert "every block but block 1" in exercises.dropped_block_hint([rest.min(), rest.max()], x, 64)
    assert "last element is left out" in exercises.dropped_block_hint([x[:-1].min(), x[:-1].max()], x, 64)
    assert exercises.dropped_block_hint([x.min(), x.max()], x, 64) is None
    # a sum missing one block's terms; only one block's terms; a clamp at the wrong bound
    terms = rng.standard_normal((3, 150))
    ref = terms.sum(axis=1)
    assert "partial of block 2" in exercises.sum_hints(ref - terms[:, 128:].sum(axis=1), ref, terms, block=64)
    assert "holds only the partial of block 1" in exercises.sum_hints(terms[:, 64:128].sum(axis=1), ref, terms, block=64)
    assert exercises.sum_hints(ref + 1.0, ref, terms, block=64, lanes=32) is None
    v = rng.uniform(-50, 300, 100)
    ref_q = np.round(np.clip(v, 0, 255))
    assert "clamp to 255" in exercises.clamp_hint(np.round(np.clip(v, 0, 250)), ref_q, 0, 255)
    wrapped = np.where(v > 255.5, np.round(v) % 256, ref_q)  # no clamp above: uint8 wraps around
    assert "wrap around" in exercises.clamp_hint(wrapped, ref_q, 0, 255)
