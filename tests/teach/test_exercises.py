"""Author checks for the exercises: every reference solution passes every hidden test, every
untouched scaffold fails, and wrong kernels an honest student might write (mutants of the solution)
are each caught, with the message we expect to diagnose them.

Runs in the simulator in CI; on a GPU the ``gpu``-marked tests run there (race mutants are
simulator-only: the tracing executor finds them; a GPU may or may not show them).
"""
import json
import os
import subprocess
import sys

import pytest

import exercises
from lab.teach.inprocess import run_all

from tests.conftest import BACKEND
from tests.helpers import mutated_solution

NAMES = exercises.names()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository


def _run(name, path):
    return run_all(name, str(path), BACKEND, seed=int.from_bytes(os.urandom(4), "little"), compile_check=False)


def test_the_seventeen_in_order():
    assert exercises.ORDER == ["map_guard", "vecadd", "matrix_add_2d", "strided_index", "matvec_row",
                               "matvec_coalesced", "block_sum", "dot", "minmax", "tiled_matmul",
                               "softmax_fused", "quantize",
                               "transpose_shared", "warp_reduce", "histogram", "prefix_sum", "conv1d"]
    assert NAMES[:17] == exercises.ORDER
    for n in NAMES:
        ex = exercises.load(n)
        assert ex.hints and ex.statement and 1 <= ex.difficulty <= 5
        assert ex.scaffold.is_file() and ex.solution.is_file() and ex.visible_test.is_file()
        assert "TODO" in ex.scaffold.read_text() and "roughly" in ex.scaffold.read_text()


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_solution_passes_every_hidden_test(name):
    results = _run(name, exercises.load(name).solution)
    assert len(results) >= 3, results
    assert all(r["passed"] for r in results), results


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_untouched_scaffold_fails(name):
    results = _run(name, exercises.load(name).scaffold)
    assert not all(r["passed"] for r in results), results


# (exercise, mutant label, [(old, new) substitutions in solution.py], a phrase the failing message has,
#  runs on a GPU too)
MUTANTS = [
    ("map_guard", "missing guard", [("    if i < out.shape[0]:\n        out[i]", "    out[i]")], "out of bounds", True),
    ("map_guard", "guard off by one", [("i < out.shape[0]", "i < out.shape[0] - 1")], "never written", True),
    ("map_guard", "missing block offset", [("i = cuda.grid(1)", "i = cuda.threadIdx.x")], "never written", True),
    ("vecadd", "missing block offset", [("cuda.blockIdx.x * cuda.blockDim.x + ", "")],
     "is blockIdx.x * blockDim.x in your index?", True),
    ("vecadd", "blocks rounded down", [("(n + threads - 1) // threads", "n // threads")], "", True),
    ("vecadd", "missing guard", [("    if i < c.shape[0]:\n        c[i]", "    c[i]")], "out of bounds", True),
    ("matrix_add_2d", "swapped indices", [("C[y, x] = A[y, x] + 2 * B[y, x]", "C[x, y] = A[x, y] + 2 * B[x, y]")], "", True),
    ("matrix_add_2d", "grid axes swapped",
     [("((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])",
       "((rows + block[0] - 1) // block[0], (cols + block[1] - 1) // block[1])")], "never written", True),
    ("strided_index", "strides swapped", [("r * stride0 + c * stride1", "r * stride1 + c * stride0")], "", True),
    ("strided_index", "offset forgotten", [("offset + r", "r")], "expected", True),
    ("matvec_row", "A indexed [j, i]", [("A[i, j]", "A[j, i]")], "", True),
    ("matvec_row", "loop over rows", [("range(A.shape[1])", "range(A.shape[0])")], "", True),
    ("matvec_coalesced", "missing syncthreads", [("    cuda.syncthreads()  # every lane", "    pass  # every lane")], "race", False),
    ("matvec_coalesced", "tree drops partials", [("s = WARP // 2", "s = WARP // 4")], "expected", True),
    ("matvec_coalesced", "early return", [("    t = cuda.threadIdx.x\n", "    t = cuda.threadIdx.x\n    if t >= A.shape[1]:\n        return\n")],
     "reached the same cuda.syncthreads()", False),
    ("block_sum", "missing syncthreads in the tree", [("        cuda.syncthreads()  # this level", "        pass  # this level")], "race", False),
    ("block_sum", "missing syncthreads after the loads", [("    cuda.syncthreads()  # all loads", "    pass  # all loads")], "race", False),
    ("block_sum", "no padding past the end", [("x[i] if i < x.shape[0] else float32(0.0)", "x[i]")], "out of bounds", True),
    ("block_sum", "early return", [("    i = cuda.grid(1)\n", "    i = cuda.grid(1)\n    if i >= x.shape[0]:\n        return\n")],
     "reached the same cuda.syncthreads()", False),
    ("dot", "non-atomic accumulate", [("cuda.atomic.add(out, 0, cache[0])", "out[0] += cache[0]")], "without an atomic", False),
    ("dot", "missing syncthreads", [("    cuda.syncthreads()\n    s =", "    s =")], "race", False),
    ("minmax", "zero instead of the identities", [("lo[t] = math.inf", "lo[t] = 0.0"), ("hi[t] = -math.inf", "hi[t] = 0.0")], "expected", True),
    ("minmax", "missing syncthreads in the tree", [("        cuda.syncthreads()\n        s //= 2", "        s //= 2")], "race", False),
    ("tiled_matmul", "missing syncthreads after the loads", [("        cuda.syncthreads()  # the tiles", "        pass  # the tiles")], "race", False),
    ("tiled_matmul", "missing syncthreads before the next loads", [("        cuda.syncthreads()  # everyone is done", "        pass  # everyone")], "race", False),
    ("tiled_matmul", "tile count rounded down", [("range((K + TILE - 1) // TILE)", "range(K // TILE)")], "", True),
    ("tiled_matmul", "launch rounded down", [("((N + TILE - 1) // TILE, (M + TILE - 1) // TILE)", "(N // TILE + 0 * M, max(M // TILE, 1))")], "", True),
    ("softmax_fused", "no max shift", [("math.exp(x[r, j] - m)", "math.exp(x[r, j])")], "", True),
    ("softmax_fused", "max read after the sum overwrote it", [("    cuda.syncthreads()  # everyone has read the max", "    pass  # everyone has read the max")], "race", False),
    ("quantize", "truncating", [("q[i] = round(min(max(v, 0.0), 255.0))", "q[i] = int(min(max(v, 0.0), 255.0))")], "expected", True),
    ("quantize", "no clamp", [("q[i] = round(min(max(v, 0.0), 255.0))", "q[i] = min(round(v), 255)")], "", True),
    # transpose_shared (the tile without its +1 padding is NOT a mutant: bank conflicts cost speed only)
    ("transpose_shared", "missing syncthreads", [("    cuda.syncthreads()  # the whole tile", "    pass  # the whole tile")], "race", False),
    ("transpose_shared", "loads not guarded", [("        if y + j < rows and x < cols:\n            tile[ty + j, tx] = A[y + j, x]",
                                                "        tile[ty + j, tx] = A[y + j, x]")], "out of bounds", False),
    ("transpose_shared", "store guarded with A's shape", [("if y + j < cols and x < rows:", "if y + j < rows and x < cols:")], "", True),
    ("transpose_shared", "blocks not swapped for the store",
     [("x = cuda.blockIdx.y * TILE + tx  # a column of out", "x = cuda.blockIdx.x * TILE + tx  # a column of out"),
      ("y = cuda.blockIdx.x * TILE + ty  # a row of out", "y = cuda.blockIdx.y * TILE + ty  # a row of out")], "", True),
    ("transpose_shared", "tile read row-wise", [("out[y + j, x] = tile[tx, ty + j]", "out[y + j, x] = tile[ty + j, tx]")], "", True),
    # warp_reduce
    ("warp_reduce", "shuffles start at offset 8", [("    offset = 16\n    while", "    offset = 8\n    while")], "lanes 0..15", True),
    ("warp_reduce", "early return past the end", [("    i = cuda.grid(1)\n", "    i = cuda.grid(1)\n    if i >= x.shape[0]:\n        return\n")],
     "never reached the warp shuffle", False),
    ("warp_reduce", "missing syncthreads", [("    cuda.syncthreads()  # every warp's sum", "    pass  # every warp's sum")], "race", False),
    ("warp_reduce", "warps' sums never combined", [("    if warp == 0:\n        v = warp_sums[lane] if lane < WARPS else float32(0.0)\n"
                                                    "        offset = 16\n        while offset > 0:\n"
                                                    "            v += cuda.shfl_down_sync(FULL_MASK, v, offset)\n"
                                                    "            offset //= 2\n        if lane == 0:",
                                                    "    if t == 0:\n        if t == 0:")], "warp 0's values only", True),
    ("warp_reduce", "second stage reads past the slots", [("v = warp_sums[lane] if lane < WARPS else float32(0.0)", "v = warp_sums[lane]")],
     "out of bounds", False),
    # histogram
    ("histogram", "shared count without an atomic", [("cuda.atomic.add(local, x[i], 1)", "local[x[i]] += 1")], "race", False),
    ("histogram", "global merge without an atomic", [("cuda.atomic.add(hist, b, local[b])", "hist[b] += local[b]")], "without an atomic", False),
    ("histogram", "missing syncthreads after zeroing", [("    cuda.syncthreads()  # every bin is zero", "    pass  # every bin is zero")], "race", False),
    ("histogram", "missing syncthreads before the merge", [("    cuda.syncthreads()  # every count", "    pass  # every count")], "race", False),
    ("histogram", "one bin a thread", [("    for b in range(t, BINS, THREADS):\n        local[b] = 0", "    local[t] = 0"),
                                       ("    for b in range(t, BINS, THREADS):\n        cuda.atomic.add(hist, b, local[b])",
                                        "    cuda.atomic.add(hist, t, local[t])")], "two bins", True),
    ("histogram", "no grid-stride loop", [("for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):", "for i in range(cuda.grid(1), min(cuda.grid(1) + 1, x.shape[0])):")],
     "grid-stride loop", True),
    # prefix_sum
    ("prefix_sum", "in-place step without the middle barrier", [("        cuda.syncthreads()  # everyone has read", "        pass  # everyone has read")], "race", False),
    ("prefix_sum", "offset includes its own block", [("range(cuda.blockIdx.x):", "range(cuda.blockIdx.x + 1):")], "own total", True),
    ("prefix_sum", "no block offset", [("out[i] = temp[t] + offset[0]", "out[i] = temp[t]")], "starts again from 0", True),
    ("prefix_sum", "exclusive scan", [("out[i] = temp[t] + offset[0]", "out[i] = temp[t] + offset[0] - x[i]")], "exclusive", True),
    ("prefix_sum", "offset read before it is written", [("    cuda.syncthreads()  # the offset is in", "    pass  # the offset is in")], "race", False),
    ("prefix_sum", "store not guarded", [("    if i < x.shape[0]:\n        out[i] = temp[t] + offset[0]", "    out[i] = temp[t] + offset[0]")],
     "out of bounds", True),
    # conv1d
    ("conv1d", "halo cells never loaded", [("    if t < R:  # the halo cells", "    if t < 0:  # the halo cells")], "", False),
    ("conv1d", "halo cells zeroed, not loaded", [("x[left] if left >= 0 and left < n else float32(0.0)", "float32(0.0)"),
                                                 ("x[right] if right < n else float32(0.0)", "float32(0.0)")], "halo cells", True),
    ("conv1d", "right halo from the wrong place", [("right = i + THREADS", "right = i + R")], "halo cells", True),
    ("conv1d", "missing syncthreads", [("    cuda.syncthreads()  # the tile and its halo", "    pass  # the tile and its halo")], "race", False),
    ("conv1d", "no zero padding at the left end", [("x[left] if left >= 0 and left < n else float32(0.0)", "x[left] if left < n else float32(0.0)")],
     "out of bounds", False),
    ("conv1d", "flipped filter", [("acc += w[k] * tile[t + k]", "acc += w[K - 1 - k] * tile[t + k]")], "flipped", True),
    ("conv1d", "early return past the end", [("    n = x.shape[0]\n", "    n = x.shape[0]\n    if i >= n:\n        return\n")],
     "reached the same cuda.syncthreads()", False),
    # the tensor-core exercises: caught by the simulator's emulation (numba-cuda on a GPU copies synchronously)
    ("mma_fragment", "wrong fragment lane (a1 and a2 swapped)",
     [("a1 = A[r0 + g + 8, k0 + q]\n        a2 = A[r0 + g, k0 + q + 4]", "a1 = A[r0 + g, k0 + q + 4]\n        a2 = A[r0 + g + 8, k0 + q]")],
     "a1 and a2 are exchanged", False),
    ("mma_fragment", "C stored at columns q and q + 4",
     [("C[r0 + g, c0 + 2 * q + 1] = d1", "C[r0 + g, c0 + q + 4] = d1")], "", False),
    ("async_pipeline", "a missing wait",
     [("        cp_async_wait(1)  # tile t has landed; tile t + 1's group may still be in flight\n", "")], "but it is NaN", False),
    ("async_pipeline", "a wait in the wrong place (after the barrier)",
     [("        cp_async_wait(1)  # tile t has landed; tile t + 1's group may still be in flight\n"
       "        cuda.syncthreads()  # everyone's copies of tile t are visible\n",
       "        cuda.syncthreads()\n        cp_async_wait(1)\n")], "race", False),
    ("async_pipeline", "a buffer overwritten while read (no barrier after the products)",
     [("        cuda.syncthreads()  # everyone is done with this buffer before tile t + 2 is copied into it\n", "")],
     "race", False),
    ("async_pipeline", "right values with nothing in flight during the products (cp_async_wait(0))",
     [("cp_async_wait(1)  #", "cp_async_wait(0)  #")], "no copy was ever in flight", False),
]


@pytest.mark.parametrize("name,label,subs,phrase,on_gpu",
                         [pytest.param(*m, marks=[pytest.mark.gpu] if m[4] else [], id=f"{m[0]}-{m[1]}") for m in MUTANTS])
def test_mutant_is_caught(tmp_path, name, label, subs, phrase, on_gpu):
    path = mutated_solution(tmp_path, name, subs)
    if phrase and BACKEND == "simulator":  # one test a request, until a failure has the phrase
        from tests.teach.catalogue import first_failures

        failed = first_failures(name, path, int.from_bytes(os.urandom(4), "little"),
                                enough=lambda bad: any(phrase in r["message"] for r in bad))
    else:
        failed = [r for r in _run(name, path) if not r["passed"]]
    assert failed, f"{name} mutant '{label}' passed every hidden test"
    if phrase and BACKEND == "simulator":
        assert any(phrase in r["message"] for r in failed), failed
    for r in failed:  # never a traceback, never the hidden test's code
        assert "Traceback" not in r["message"] and "def cases" not in r["message"]


# Right kernels written differently from the solution: each must pass (no false alarm).
# (exercise, label, [(old, new) substitutions in solution.py])
RIGHT = [
    ("transpose_shared", "no padding (bank conflicts cost speed, not correctness)", [("(TILE, PADDED)", "(TILE, TILE)")]),
    ("warp_reduce", "xor butterfly (every lane gets the sum)", [("cuda.shfl_down_sync(FULL_MASK, v, offset)", "cuda.shfl_xor_sync(FULL_MASK, v, offset)")]),
    ("histogram", "merge skips empty bins", [("        cuda.atomic.add(hist, b, local[b])", "        if local[b] > 0:\n            cuda.atomic.add(hist, b, local[b])")]),
    ("conv1d", "tile and halo loaded by one strided loop",
     [("    tile[t + R] = x[i] if i < n else float32(0.0)\n    if t < R:  # the halo cells: R on the left, R on the right\n"
       "        left = i - R\n        tile[t] = x[left] if left >= 0 and left < n else float32(0.0)\n"
       "        right = i + THREADS\n        tile[t + THREADS + R] = x[right] if right < n else float32(0.0)\n",
       "    for j in range(t, WIDTH, THREADS):\n        src = cuda.blockIdx.x * THREADS - R + j\n"
       "        tile[j] = x[src] if 0 <= src < n else float32(0.0)\n")]),
]


@pytest.mark.gpu
@pytest.mark.parametrize("name,label,subs", [pytest.param(*r, id=f"{r[0]}-{r[1]}") for r in RIGHT])
def test_right_variant_passes(tmp_path, name, label, subs):
    results = _run(name, mutated_solution(tmp_path, name, subs))
    assert all(r["passed"] for r in results), results


def test_every_exercise_has_mutants():
    assert {m[0] for m in MUTANTS} >= set(NAMES)


def test_mirrors_names_a_kernel_or_nothing():
    """MIRRORS is "-" or kernels/NAME.py of a kernel the lab runs (lab counters NAME, the notebook's cell)."""
    import kernels

    for name in NAMES:
        m = exercises.load(name).mirrors
        assert m == "-" or (m.startswith("kernels/") and m.endswith(".py")
                            and m[len("kernels/"):-3] in kernels.NAMES), (name, m)


def test_the_five_newer_exercises_carry_a_performance_pass_line():
    """Issue 20: the five newer exercises set the --bench pass line and the peak it is measured against."""
    import importlib

    for name in exercises.ORDER[12:]:
        m = importlib.import_module(f"exercises.{name}.meta")
        assert 0 < m.PASS_PCT_OF_REFERENCE <= 100 and m.PEAK in ("copy", "fp32"), name


# --- The CLI and containment (through the child process) ---------------------------------------------
def _python(*args, env=None, cwd=None):
    """``python ARGS`` in a child, with this checkout on its path and this session's backend."""
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    if BACKEND == "simulator":
        e["NUMBA_ENABLE_CUDASIM"] = "1"
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=e, cwd=cwd, timeout=300)


def _lab(*args, env=None, cwd=None):
    return _python("-m", "lab", *args, env=env, cwd=cwd)


def _documented_path() -> list[str]:
    """The student's commands in exercises/README.md's shell block, as written there (from ``lab
    exercise list`` to ``lab exercise solution``): the walkthrough runs these, so the page cannot drift."""
    from pathlib import Path

    from tests.docs.test_doc_commands import commands

    cmds = [c for _, c in commands(Path(ROOT, "exercises", "README.md"))]
    first = cmds.index("lab exercise list")
    last = next(i for i in range(first, len(cmds)) if cmds[i].startswith("lab exercise solution"))
    return cmds[first:last + 1]


def _run_documented(cmd: str, cwd):
    """One documented command, run as a student would in ``cwd`` (``lab`` and ``python`` as written)."""
    import shlex

    argv = shlex.split(cmd)
    if argv[0] == "lab":
        return _lab(*argv[1:], cwd=cwd)
    assert argv[0] == "python", cmd
    return _python(*argv[1:], cwd=cwd)


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (deselect locally with -m "not slow")
@pytest.mark.gpu
def test_walkthrough_vecadd(tmp_path):
    """start, fail, hint, fix, pass: the student's path of exercises/README.md, its commands run as
    written there (in a fresh folder), with the exit codes the page promises."""
    path = _documented_path()
    assert {"lab exercise start vecadd", "lab exercise check vecadd", "lab exercise hint vecadd"} <= set(path), path
    ws = tmp_path / "lab-exercises"  # where `lab exercise start` puts the file (the page says so)
    done = {}
    for cmd in path:
        p = done[cmd] = _run_documented(cmd, tmp_path)
        assert "Traceback" not in p.stderr or cmd.startswith("python "), (cmd, p.stderr[-2000:])
        if cmd == "lab exercise start vecadd":
            assert p.returncode == 0 and p.stdout.strip().splitlines()[-1].endswith("vecadd.py")
            assert sorted(os.listdir(ws)) == [".lab-state.json", "test_vecadd.py", "vecadd.py"]  # no hidden tests, no solution
        elif cmd == "lab exercise check vecadd":  # the scaffold: "exit 0 all pass, 1 some fail"
            assert p.returncode == 1, p.stdout + p.stderr
        elif cmd.startswith("lab exercise hint vecadd"):
            assert p.returncode == 0 and "Hint 1/" in p.stdout
        elif cmd.startswith("lab exercise solution vecadd"):
            assert p.returncode == 0 and "def vecadd_kernel" in p.stdout
        elif not cmd.startswith("python "):  # the visible example may fail on the scaffold
            assert p.returncode == 0, (cmd, p.stdout + p.stderr)
    p = _lab("exercise", "check", "vecadd", "--json", cwd=tmp_path)
    result = json.loads(p.stdout)
    assert p.returncode == 1 and set(result) >= {"exercise", "passed", "tests"} and result["passed"] is False
    assert all({"name", "passed", "message"} <= set(t) <= {"name", "passed", "message", "seen_by", "map"}
               for t in result["tests"])  # seen_by: which backend saw a failure (on a GPU)
    assert "Hint 2/" in _lab("exercise", "hint", "vecadd", cwd=tmp_path).stdout
    listing = json.loads(_lab("exercise", "list", "--json", cwd=tmp_path).stdout)
    assert {r["name"]: r["status"] for r in listing}["vecadd"] == "in progress"
    assert set(listing[0]) >= {"name", "title", "difficulty", "status"}
    solution = next(q.stdout for c, q in done.items() if c.startswith("lab exercise solution vecadd"))
    (ws / "vecadd.py").write_text(solution)
    p = _run_documented("lab exercise check vecadd", tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    listing = json.loads(_lab("exercise", "list", "--json", cwd=tmp_path).stdout)
    assert {r["name"]: r["status"] for r in listing}["vecadd"] == "passed"


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (deselect locally with -m "not slow")
@pytest.mark.gpu
def test_containment_infinite_loop_and_raise(tmp_path):
    """A kernel that never ends is stopped by the timeout; one that raises is reported; no traceback."""
    loop = mutated_solution(tmp_path, "vecadd", [("if i < c.shape[0]:", "while i < c.shape[0]:")])
    p = _lab("exercise", "check", "vecadd", "--file", str(loop), "--json", "--timeout", "2",
             env={"LAB_GPU_COMPILE": "0"})
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    tests = json.loads(p.stdout)["tests"]
    # every test hangs: two time out (the second with a shorter limit), the rest is not run; on a GPU the
    # simulator's child hangs the same way (the union: "seen on the GPU and in the simulator's trace")
    assert "timed out" in tests[0]["message"] and "timed out" in tests[1]["message"], tests
    assert all("not run" in t["message"] for t in tests[2:]), tests
    bad = tmp_path / "raises" / "vecadd.py"
    bad.parent.mkdir()
    bad.write_text(exercises.load("vecadd").solution.read_text().replace("c[i] = a[i] + b[i]", "c[i] = a[i] + b[i] / undefined_name"))
    p = _lab("exercise", "check", "vecadd", "--file", str(bad), "--json", "--timeout", "60")
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    assert all(not t["passed"] for t in json.loads(p.stdout)["tests"])


def test_bad_input_exit_2(tmp_path):
    p = _lab("exercise", "check", "no_such_exercise")
    assert p.returncode == 2 and "unknown exercise" in p.stderr
    p = _lab("exercise", "check", "vecadd", "--file", str(tmp_path / "missing.py"))
    assert p.returncode == 2 and "no such file" in p.stderr
    p = _lab("exercise", "start", "nope", "--dir", str(tmp_path))
    assert p.returncode == 2


def test_syntax_error_is_one_message(tmp_path):
    f = tmp_path / "map_guard.py"
    f.write_text("from numba import cuda\n\n@cuda.jit\ndef map_kernel(x, out)\n    pass\n")
    p = _lab("exercise", "check", "map_guard", "--file", str(f), "--json")
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    assert "SyntaxError" in json.loads(p.stdout)["tests"][0]["message"]


def test_solution_asks_first(tmp_path):
    p = subprocess.run([sys.executable, "-m", "lab", "exercise", "solution", "dot"], input="n\n",
                       capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 1 and "def dot_kernel" not in p.stdout


def test_new_exercise_scaffolds_and_is_checkable(tmp_path, monkeypatch):
    from lab.teach.authoring import new

    monkeypatch.setattr(exercises, "HERE", tmp_path)
    d = new("triple", "Triple it")
    assert sorted(p.name for p in d.iterdir()) == ["__init__.py", "hidden.py", "meta.py", "scaffold.py",
                                                  "solution.py", "test_visible.py"]
    assert "TODO" in (d / "scaffold.py").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_visible_example_passes_with_the_solution(tmp_path, monkeypatch, name):
    """The visible test a student gets runs (and passes) against the reference solution."""
    import importlib
    import shutil

    ex = exercises.load(name)
    shutil.copyfile(ex.solution, tmp_path / f"{name}.py")
    shutil.copyfile(ex.visible_test, tmp_path / f"test_{name}.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    for mod in (name, f"test_{name}"):
        sys.modules.pop(mod, None)
    try:
        t = importlib.import_module(f"test_{name}")
        tests = [getattr(t, f) for f in dir(t) if f.startswith("test_")]
        assert tests
        for f in tests:
            f()
    finally:
        for mod in (name, f"test_{name}"):
            sys.modules.pop(mod, None)
