"""Statement, hints and hidden tests agree (issue 28): every piece of code a hint or a statement
recommends, written into the reference solution as a student would copy it, passes the hidden tests
and compiles for a GPU; what the statement rules out fails (quantize's ties rounded up, a float32
buffer where the data is int32).

RECOMMENDED: (exercise, where: "hint K" or "statement", quote: the text of that hint or statement
the row implements (it must still be there), [(old, new) substitutions in solution.py]). An empty
list of substitutions: the solution already is that code, word for word (the quote is in it, up to
whitespace). PROSE: hints that recommend no code, with what they say instead. Every hint of every
exercise is in one of the two.
"""
import os

import pytest

import exercises
from lab.teach.contained import gpu_compile
from lab.teach.inprocess import run_all

from tests.conftest import BACKEND, SIMULATOR
from tests.helpers import mutated_solution, shown

RECOMMENDED = [
    ("mma_fragment", "hint 1", "lane = cuda.threadIdx.x; g = lane // 4; q = lane % 4; r0 = 16 * cuda.blockIdx.y; c0 = 8 * cuda.blockIdx.x", []),
    ("mma_fragment", "hint 2", "b0 = B[k0 + q, c0 + g]", []),
    ("mma_fragment", "hint 3", "C[r0 + g, c0 + 2 * q] = d0; C[r0 + g, c0 + 2 * q + 1] = d1; C[r0 + g + 8, c0 + 2 * q] = d2; "
     "C[r0 + g + 8, c0 + 2 * q + 1] = d3", []),
    ("async_pipeline", "hint 1", "ntiles = (K + TILE - 1) // TILE", []),
    ("async_pipeline", "hint 2", "cp_async_commit(); cp_async_wait(1); cuda.syncthreads()", []),
    ("async_pipeline", "hint 3", "if row < M and col < N: C[row, col] = acc", []),
    # map_guard
    ("map_guard", "hint 1", "the same as cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x",
     [("i = cuda.grid(1)", "i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x")]),
    ("map_guard", "hint 2", "i < out.shape[0]", []),
    ("map_guard", "hint 3", "i = cuda.grid(1); if i < out.shape[0]: out[i] = 2 * x[i] + 1", []),
    # vecadd
    ("vecadd", "hint 2", "i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x (or cuda.grid(1))",
     [("i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x", "i = cuda.grid(1)")]),
    ("vecadd", "hint 3", "blocks = (n + threads - 1) // threads", []),
    ("vecadd", "statement", "ceil(5466 / 1024) = 6 blocks",
     [("from numba import cuda", "import math\n\nfrom numba import cuda"),
      ("blocks = (n + threads - 1) // threads", "blocks = math.ceil(n / threads)")]),
    # matrix_add_2d
    ("matrix_add_2d", "hint 1", "x = blockIdx.x * blockDim.x + threadIdx.x and y likewise",
     [("    x, y = cuda.grid(2)\n", "    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n"
                                   "    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y\n")]),
    ("matrix_add_2d", "hint 2", "if y < C.shape[0] and x < C.shape[1]: C[y, x] = A[y, x] + 2 * B[y, x]", []),
    ("matrix_add_2d", "hint 3", "block = (16, 8); grid = ((cols + 15) // 16, (rows + 7) // 8); return grid, block",
     [("    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])\n",
       "    grid = ((cols + 15) // 16, (rows + 7) // 8)\n")]),
    # strided_index
    ("strided_index", "hint 1", "x, y = cuda.grid(2); r = y, c = x; guard r < out.shape[0] and c < out.shape[1]",
     [("    c, r = cuda.grid(2)\n", "    x, y = cuda.grid(2)\n    r = y\n    c = x\n")]),
    ("strided_index", "hint 2", "offset + r * stride0 + c * stride1", []),
    ("strided_index", "hint 3", "out[r, c] = storage[offset + r * stride0 + c * stride1]", []),
    # matvec_row
    ("matvec_row", "hint 1", "i = cuda.grid(1); if i < y.shape[0]:", []),
    ("matvec_row", "hint 2", "acc = 0.0; for j in range(A.shape[1]): acc += A[i, j] * x[j]", []),
    ("matvec_row", "hint 3", "y[i] = acc", []),
    # matvec_coalesced
    ("matvec_coalesced", "hint 1", "acc = 0.0; for j in range(t, A.shape[1], 32): acc += A[row, j] * x[j]",
     [("acc = float32(0.0)", "acc = 0.0"), ("range(t, A.shape[1], WARP)", "range(t, A.shape[1], 32)")]),
    ("matvec_coalesced", "hint 2", "partial = cuda.shared.array(32, float32); partial[t] = acc; cuda.syncthreads()",
     [("cuda.shared.array(WARP, float32)", "cuda.shared.array(32, float32)")]),
    ("matvec_coalesced", "hint 3", "s = 16; while s > 0: if t < s: partial[t] += partial[t + s]",
     [("s = WARP // 2", "s = 16")]),
    # block_sum
    ("block_sum", "hint 1", "cache[t] = x[i] if i < x.shape[0] else 0.0; then cuda.syncthreads()",
     [("cache[t] = x[i] if i < x.shape[0] else float32(0.0)", "cache[t] = x[i] if i < x.shape[0] else 0.0")]),
    ("block_sum", "hint 2", "s = THREADS // 2; while s > 0: if t < s: cache[t] += cache[t + s]", []),
    ("block_sum", "hint 3", "if t == 0: partials[cuda.blockIdx.x] = cache[0]", []),
    # dot
    ("dot", "hint 1", "a[i] * b[i]", []),
    ("dot", "hint 3", "if t == 0: cuda.atomic.add(out, 0, cache[0])", []),
    ("dot", "statement", "cuda.atomic.add(out, 0, partial)",
     [("        cuda.atomic.add(out, 0, cache[0])", "        partial = cache[0]\n        cuda.atomic.add(out, 0, partial)")]),
    # minmax
    ("minmax", "hint 1", "lo[t] = x[i] if i < n else math.inf; hi[t] = x[i] if i < n else -math.inf",
     [("    if i < x.shape[0]:\n        lo[t] = x[i]\n        hi[t] = x[i]\n    else:\n        lo[t] = math.inf\n"
       "        hi[t] = -math.inf\n",
       "    n = x.shape[0]\n    lo[t] = x[i] if i < n else math.inf\n    hi[t] = x[i] if i < n else -math.inf\n")]),
    ("minmax", "hint 2", "if t < s: lo[t] = min(lo[t], lo[t + s]); hi[t] = max(hi[t], hi[t + s])", []),
    ("minmax", "hint 3", "if t == 0: cuda.atomic.min(out, 0, lo[0]); cuda.atomic.max(out, 1, hi[0])", []),
    # tiled_matmul
    ("tiled_matmul", "hint 1", "range((K + TILE - 1) // TILE)", []),
    ("tiled_matmul", "hint 2", "sA[ty, tx] = A[row, t*TILE + tx] if in range else 0.0; sB[ty, tx] = B[t*TILE + ty, col] "
                               "if in range else 0.0",
     [("        sA[ty, tx] = A[row, k_a] if row < M and k_a < K else float32(0.0)\n"
       "        sB[ty, tx] = B[k_b, col] if k_b < K and col < N else float32(0.0)\n",
       "        sA[ty, tx] = A[row, t*TILE + tx] if row < M and t*TILE + tx < K else 0.0\n"
       "        sB[ty, tx] = B[t*TILE + ty, col] if t*TILE + ty < K and col < N else 0.0\n")]),
    ("tiled_matmul", "hint 3", "for k in range(TILE): acc += sA[ty, k] * sB[k, tx]", []),
    ("tiled_matmul", "statement", "grid (ceil(N / TILE), ceil(M / TILE))",
     [("from numba import cuda, float32", "import math\n\nfrom numba import cuda, float32"),
      ("return ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE), (TILE, TILE)",
       "return (math.ceil(N / TILE), math.ceil(M / TILE)), (TILE, TILE)")]),
    # softmax_fused
    ("softmax_fused", "hint 1", "m = -inf; for j in range(t, cols, THREADS): m = max(m, x[r, j])",
     [("m = float32(-math.inf)", "m = -math.inf")]),
    ("softmax_fused", "hint 2", "acc = 0.0; for j in range(t, cols, THREADS): acc += math.exp(x[r, j] - m)",
     [("acc = float32(0.0)", "acc = 0.0")]),
    ("softmax_fused", "hint 3", "out[r, j] = math.exp(x[r, j] - m) / total", []),
    # quantize
    ("quantize", "hint 1", "i = cuda.grid(1); if i < q.shape[0]: v = x[i] / scale + zero_point", []),
    ("quantize", "hint 2", "v = min(max(v, 0.0), 255.0). Then round to nearest, ties to even: round(v)",
     [("        q[i] = round(min(max(v, 0.0), 255.0))", "        v = min(max(v, 0.0), 255.0)\n        q[i] = round(v)")]),
    ("quantize", "hint 3", "q[i] = round(min(max(x[i] / scale + zero_point, 0.0), 255.0))",
     [("        v = x[i] / scale + zero_point\n        q[i] = round(min(max(v, 0.0), 255.0))",
       "        q[i] = round(min(max(x[i] / scale + zero_point, 0.0), 255.0))")]),
    ("quantize", "statement", "q[i] = round(clamp(x[i] / scale + zero_point, 0, 255))",
     [("round(min(max(v, 0.0), 255.0))", "round(min(max(v, 0), 255))")]),
    # transpose_shared
    ("transpose_shared", "hint 1", "for j in range(0, TILE, BLOCK_ROWS): if y + j < rows and x < cols: "
                                   "tile[ty + j, tx] = A[y + j, x]", []),
    ("transpose_shared", "hint 2", "x = by*TILE + tx (a column of out, i.e. a row of A), y = bx*TILE + ty",
     [("    x = cuda.blockIdx.y * TILE + tx  # a column of out = a row of A\n"
       "    y = cuda.blockIdx.x * TILE + ty  # a row of out = a column of A\n",
       "    by, bx = cuda.blockIdx.y, cuda.blockIdx.x\n    x = by*TILE + tx\n    y = bx*TILE + ty\n")]),
    ("transpose_shared", "hint 3", "if y + j < cols and x < rows: out[y + j, x] = tile[tx, ty + j]", []),
    ("transpose_shared", "statement", "stores tile[tx, ty + j] into out[bx*TILE + ty + j,\nby*TILE + tx]",
     [("    x = cuda.blockIdx.y * TILE + tx  # a column of out = a row of A\n"
       "    y = cuda.blockIdx.x * TILE + ty  # a row of out = a column of A\n"
       "    for j in range(0, TILE, BLOCK_ROWS):\n        if y + j < cols and x < rows:\n"
       "            out[y + j, x] = tile[tx, ty + j]",
       "    bx, by = cuda.blockIdx.x, cuda.blockIdx.y\n    for j in range(0, TILE, BLOCK_ROWS):\n"
       "        if bx*TILE + ty + j < cols and by*TILE + tx < rows:\n"
       "            out[bx*TILE + ty + j, by*TILE + tx] = tile[tx, ty + j]")]),
    # warp_reduce
    ("warp_reduce", "hint 1", "v = x[i] if i < x.shape[0] else float32(0.0); lane = t % 32; warp = t // 32", []),
    ("warp_reduce", "hint 2", "offset = 16; while offset > 0: v += cuda.shfl_down_sync(FULL_MASK, v, offset); "
                              "offset //= 2", []),
    ("warp_reduce", "hint 3", "v = warp_sums[lane] if lane < WARPS else 0.0, the same five shuffles, and if t == 0: "
                              "partials[cuda.blockIdx.x] = v",
     [("v = warp_sums[lane] if lane < WARPS else float32(0.0)", "v = warp_sums[lane] if lane < WARPS else 0.0"),
      ("        if lane == 0:\n            partials[cuda.blockIdx.x] = v", "        if t == 0:\n            partials[cuda.blockIdx.x] = v")]),
    ("warp_reduce", "statement", "cuda.shfl_down_sync(FULL_MASK, v, offset) for offset = 16, 8,\n   4, 2, 1",
     [("    offset = 16\n    while offset > 0:  # after the loop lane 0 holds the warp's sum\n"
       "        v += cuda.shfl_down_sync(FULL_MASK, v, offset)\n        offset //= 2\n",
       "".join(f"    v += cuda.shfl_down_sync(FULL_MASK, v, {o})\n" for o in (16, 8, 4, 2, 1)))]),
    # histogram
    ("histogram", "hint 1", "for b in range(t, BINS, THREADS): local[b] = 0; then cuda.syncthreads()", []),
    ("histogram", "hint 2", "for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)): cuda.atomic.add(local, x[i], 1)", []),
    ("histogram", "hint 3", "for b in range(t, BINS, THREADS): cuda.atomic.add(hist, b, local[b])", []),
    # prefix_sum
    ("prefix_sum", "hint 1", "temp[t] = x[i] if i < x.shape[0] else 0", []),
    ("prefix_sum", "hint 2", "v = temp[t - s] if t >= s else 0; cuda.syncthreads(); temp[t] += v; cuda.syncthreads(); s *= 2", []),
    ("prefix_sum", "hint 3", "for k in range(cuda.blockIdx.x): total += block_sums[k]; offset[0] = total", []),
    # conv1d
    ("conv1d", "hint 1", "tile[t + R] = x[i] if i < n else 0.0",
     [("tile[t + R] = x[i] if i < n else float32(0.0)", "tile[t + R] = x[i] if i < n else 0.0")]),
    ("conv1d", "hint 2", "tile[t] = x[left] if left >= 0 else 0.0; right = i + THREADS; tile[t + THREADS + R] = "
                         "x[right] if right < n else 0.0",
     [("x[left] if left >= 0 and left < n else float32(0.0)", "x[left] if left >= 0 else 0.0"),
      ("x[right] if right < n else float32(0.0)", "x[right] if right < n else 0.0")]),
    ("conv1d", "hint 3", "acc = 0.0; for k in range(K): acc += w[k] * tile[t + k]; y[i] = acc",
     [("acc = float32(0.0)", "acc = 0.0")]),
    ("conv1d", "statement", "tile[t + 64 + R] = x[i + 64]",
     [("        right = i + THREADS\n        tile[t + THREADS + R] = x[right] if right < n else float32(0.0)\n",
       "        tile[t + 64 + R] = x[i + 64] if i + 64 < n else float32(0.0)\n")]),
]

# hints that recommend no code: what each says instead
PROSE = {
    ("vecadd", "hint 1"): "which index: a block starts at b * blockDim.x (hint 2 gives the code)",
    ("dot", "hint 2"): "why an atomic (hint 3 gives the code)",
}


def _text(ex, where):
    if where == "statement":
        return ex.statement
    return ex.hints[int(where.split()[1]) - 1]


def _squash(text):
    return " ".join(text.split())


def _flat(source):
    """``source`` without comments, as one-line Python: a block's first line after ': ', other
    lines after '; ' (how the hints write code)."""
    import re

    lines = [re.sub(r"\s*#.*$", "", line) for line in source.splitlines()]
    text = "\n".join(line for line in lines if line.strip())
    return _squash(text.replace(":\n", ": ").replace("\n", "; "))


def test_every_hint_is_in_the_table():
    """Every hint either recommends code that is in RECOMMENDED, or is PROSE; no row names a hint
    that does not exist."""
    rows = {(r[0], r[1]) for r in RECOMMENDED}
    for name in exercises.names():
        for k in range(1, len(exercises.load(name).hints) + 1):
            key = (name, f"hint {k}")
            assert (key in rows) != (key in PROSE), f"{key}: in neither RECOMMENDED nor PROSE (or in both)"
    for name, where in rows | set(PROSE):
        ex = exercises.load(name)
        assert where == "statement" or 1 <= int(where.split()[1]) <= len(ex.hints), (name, where)


@pytest.mark.parametrize("name,where,quote,subs", [pytest.param(*r, id=f"{r[0]}-{r[1]}") for r in RECOMMENDED])
def test_the_row_quotes_the_text_and_applies(name, where, quote, subs):
    ex = exercises.load(name)
    assert _squash(quote) in _squash(_text(ex, where)), f"{name} {where} no longer says: {quote}"
    solution = ex.solution.read_text()
    if not subs:  # the solution is that code, word for word: each '; '-separated piece of the quote
        code = _flat(solution)
        for piece in quote.split("; "):
            piece = _squash(piece.removeprefix("then "))
            assert piece in code, f"{name} {where}: {piece!r} is not in solution.py"
    for old, _ in subs:
        assert old in solution, f"{name} {where}: {old!r} is not in solution.py"


ROWS_WITH_CODE = [r for r in RECOMMENDED if r[3]]


@pytest.mark.gpu
@pytest.mark.parametrize("name,where,quote,subs", [pytest.param(*r, id=f"{r[0]}-{r[1]}") for r in ROWS_WITH_CODE])
def test_recommended_code_passes_the_hidden_tests(tmp_path, name, where, quote, subs):
    """What check's child runs (lab.teach.inprocess.run_all), on the solution with the row's code."""
    results = run_all(name, str(mutated_solution(tmp_path, name, subs)), BACKEND,
                      seed=int.from_bytes(os.urandom(4), "little"), compile_check=False)
    assert all(r["passed"] for r in results), [r for r in results if not r["passed"]]


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (one compile process for ~30 kernels)
@pytest.mark.gpu
def test_recommended_code_compiles_for_a_gpu(tmp_path):
    """Every row's kernel compiles offline for sm_75 with the hidden tests' argument types (one
    child process for all of them), as the check's "compiles for a GPU" test does."""
    import numpy as np

    from lab.core.resources import offline_unavailable

    if offline_unavailable() is not None:
        pytest.skip("no NVVM/NVRTC here (pip install 'numba-gpu-lab[occupancy]')")
    items = []
    for k, (name, _where, _quote, subs) in enumerate(ROWS_WITH_CODE):
        ex = exercises.load(name)
        cases = ex.hidden().cases(np.random.default_rng(k))
        (tmp_path / str(k)).mkdir()
        path = mutated_solution(tmp_path / str(k), name, subs)
        items.append((str(path), ex.kernel, [gpu_compile.arg_types(c) for c in cases]))
    results = gpu_compile.check_many(items)
    bad = [(r[0], r[1], res) for r, res in zip(ROWS_WITH_CODE, results) if not res.get("ok")]
    assert not bad, bad


@pytest.mark.skipif(not SIMULATOR, reason="lab exercise check --sim")
@pytest.mark.parametrize("name,where", [("quantize", "hint 2"), ("warp_reduce", "statement")])
def test_recommended_code_passes_lab_exercise_check(tmp_path, monkeypatch, name, where):
    """End to end (the child process, --bench) for two rows (the offline compile: the test above)."""
    from lab.teach.workspace import check

    monkeypatch.setenv("LAB_GPU_COMPILE", "0")
    subs = next(r[3] for r in RECOMMENDED if r[:2] == (name, where))
    result = check(name, file=str(mutated_solution(tmp_path, name, subs)), backend="sim", bench=True)
    assert result["passed"] and result["bench"]["passed"], shown(result)


# --- what the statement rules out fails, on both backends ---------------------------------------------
F32 = ("from numba import cuda, int32", "from numba import cuda, float32, int32")
RULED_OUT = [
    # quantize: ties round to even (the seed's torch.round); floor(v + 0.5) rounds them up
    ("quantize", "math.floor(v + 0.5)",
     [("from numba import cuda", "import math\n\nfrom numba import cuda"),
      ("q[i] = round(min(max(v, 0.0), 255.0))", "q[i] = math.floor(min(max(v, 0.0), 255.0) + 0.5)")],
     ["ties at .5"], ["round half to even"]),
    ("quantize", "int(v + 0.5)", [("q[i] = round(min(max(v, 0.0), 255.0))", "q[i] = int(min(max(v, 0.0), 255.0) + 0.5)")],
     ["ties at .5"], ["round half to even"]),
    # prefix_sum: int32 data, sums past 2**24: a float32 buffer rounds them
    ("prefix_sum", "float32 scan buffer", [F32, ("temp = cuda.shared.array(THREADS, int32)", "temp = cuda.shared.array(THREADS, float32)")],
     ["large values"], ["float32", "2**24"]),
    ("prefix_sum", "float32 block offset", [F32, ("offset = cuda.shared.array(1, int32)", "offset = cuda.shared.array(1, float32)")],
     ["large values"], ["float32", "2**24"]),
]


@pytest.mark.gpu
@pytest.mark.parametrize("name,label,subs,tests,phrases", [pytest.param(*r, id=f"{r[0]}-{r[1]}") for r in RULED_OUT])
def test_what_the_statement_rules_out_fails(tmp_path, name, label, subs, tests, phrases):
    results = run_all(name, str(mutated_solution(tmp_path, name, subs)), BACKEND,
                      seed=int.from_bytes(os.urandom(4), "little"), compile_check=False)
    failed = [r for r in results if not r["passed"]]
    assert failed and all(any(t in r["name"] for t in tests) for r in failed), results
    assert all(all(p in r["message"] for p in phrases) for r in failed), failed
