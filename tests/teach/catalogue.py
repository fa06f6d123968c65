"""Issue 28's catalogue: realistic WRONG kernels for every exercise (at least 5 each, beyond
tests/teach/mutants.py), written as students write them, and CORRECT variants that must pass.

Every wrong entry names the hint it must get (``want``: phrases that one failing message has, all of
them) and the hints it must not get (``avoid``: phrases that message must not have); ``cls`` is its
class (the classes of issue 28 are all here: see :data:`ISSUE_CLASSES`). ``subs`` is a list of
(old, new) substitutions in the exercise's solution.py (each ``old`` must be there), or a string: the
whole file. ``pending``: a reason the entry may still pass today (it is reported, not counted).

tests/teach/test_catalogue.py runs it in the simulator (every wrong kernel fails, every correct one
passes, hint accuracy >= 95%); scripts/catalogue_gpu.py runs it with ``--gpu`` on a GPU machine.
"""
from __future__ import annotations

from typing import NamedTuple


class Wrong(NamedTuple):
    exercise: str
    label: str
    subs: object  # [(old, new)] on solution.py, or the whole file (str)
    want: list
    avoid: list
    cls: str
    pending: str = ""


class Right(NamedTuple):
    exercise: str
    label: str
    subs: object


def source(entry) -> str:
    """The student's file of ``entry``: the solution with the substitutions, or the whole file."""
    import exercises

    if isinstance(entry.subs, str):
        return _GENERATED[entry.subs]() if entry.subs in _GENERATED else entry.subs
    src = exercises.load(entry.exercise).solution.read_text()
    for old, new in entry.subs:
        assert old in src, f"{entry.exercise} '{entry.label}': the substitution does not apply: {old!r}"
        src = src.replace(old, new)
    return src


# the classes issue 28 names (every one has entries below)
ISSUE_CLASSES = {
    "grid x/y swapped", "halo index bug", "non-atomic shared +=", "output initialised inside the kernel",
    "missing loop / wrong shape guard", "result k times too large", "guard on the global index",
    "syncthreads inside a branch", "early return before a barrier", "shared memory never zeroed",
    "read before the guard", "shuffle mask of 16 lanes", "missing zero past the end", "global-memory init race",
    "every block redoes the whole problem", "float32 shared buffer on int32 data",
    "one block with a grid-stride loop", "launch returns (threads, blocks)", "one atomic per element",
    "transpose without shared memory",
}

MAPPING = ["right values"]  # every mapping lesson's message starts "right values, but"
BARRIER = ["reached the same cuda.syncthreads()"]

_VECADD_LOOP = '''from numba import cuda


@cuda.jit
def vecadd_kernel(a, b, c):
    """c = a + b."""
    for i in range(cuda.threadIdx.x, c.shape[0], cuda.blockDim.x):
        c[i] = a[i] + b[i]


def launch(n, threads):
    return 1, threads
'''

_MATRIX_LOOP = '''from numba import cuda


@cuda.jit
def matrix_add_kernel(A, B, C):
    """C = A + 2 B, one block looping over the matrix."""
    for y in range(cuda.threadIdx.y, C.shape[0], cuda.blockDim.y):
        for x in range(cuda.threadIdx.x, C.shape[1], cuda.blockDim.x):
            C[y, x] = A[y, x] + 2 * B[y, x]


def launch(rows, cols):
    return (1, 1), (16, 8)
'''

_DOT_ATOMIC = '''from numba import cuda

THREADS = 64


@cuda.jit
def dot_kernel(a, b, out):
    """Every thread adds its product straight into out[0]."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        cuda.atomic.add(out, 0, a[i] * b[i])
'''

_TRANSPOSE_NAIVE = '''from numba import cuda

TILE = 32
BLOCK_ROWS = 8


@cuda.jit
def transpose_kernel(A, out):
    """out = A.T straight from global memory (no tile)."""
    rows, cols = A.shape
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < rows and x < cols:
            out[x, y + j] = A[y + j, x]
'''

_MATMUL_NAIVE = '''from numba import cuda, float32

TILE = 8


@cuda.jit
def matmul_kernel(A, B, C):
    """C = A @ B, one thread per element, straight from global memory."""
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def launch(M, N):
    return ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE), (TILE, TILE)
'''

_CONV_NAIVE = '''from numba import cuda, float32

THREADS = 64
R = 3
K = 2 * R + 1


@cuda.jit
def conv1d_kernel(x, w, y):
    """y[i] = sum_k w[k] x[i + k - R], every x read from global memory."""
    i = cuda.grid(1)
    n = x.shape[0]
    if i < n:
        acc = float32(0.0)
        for k in range(K):
            j = i + k - R
            if j >= 0 and j < n:
                acc += w[k] * x[j]
        y[i] = acc
'''

_WARP_SHARED_TREE = '''from numba import cuda, float32

THREADS = 128


@cuda.jit
def warp_reduce_kernel(x, partials):
    """A shared-memory tree (no shuffles)."""
    cache = cuda.shared.array(THREADS, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    cache[t] = x[i] if i < x.shape[0] else float32(0.0)
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s:
            cache[t] += cache[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        partials[cuda.blockIdx.x] = cache[0]
'''

_HIST_GLOBAL = '''from numba import cuda

THREADS = 128
BINS = 256


@cuda.jit
def histogram_kernel(x, hist):
    """One global atomic per element (no shared counts)."""
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(hist, x[i], 1)
'''

_SCAN_SERIAL = '''from numba import cuda, int32

THREADS = 64


@cuda.jit
def scan_kernel(x, block_sums, out):
    """Thread 0 of each block scans the block's elements in a loop."""
    if cuda.threadIdx.x == 0:
        b = cuda.blockIdx.x
        total = 0
        for k in range(b):
            total += block_sums[k]
        for i in range(b * THREADS, min((b + 1) * THREADS, x.shape[0])):
            total += x[i]
            out[i] = total
'''

_BLOCK_SUM_SERIAL = '''from numba import cuda, float32

THREADS = 64


@cuda.jit
def block_sum_kernel(x, partials):
    """Thread 0 adds the block's elements in a loop."""
    if cuda.threadIdx.x == 0:
        b = cuda.blockIdx.x
        acc = float32(0.0)
        for i in range(b * THREADS, min((b + 1) * THREADS, x.shape[0])):
            acc += x[i]
        partials[b] = acc
'''

_SOFTMAX_SERIAL = '''import math

from numba import cuda, float32

THREADS = 32


@cuda.jit
def softmax_kernel(x, out):
    """Thread 0 finds the row's max and sum alone; every thread writes its columns."""
    stats = cuda.shared.array(2, float32)
    r = cuda.blockIdx.x
    t = cuda.threadIdx.x
    cols = x.shape[1]
    if t == 0:
        m = float32(-math.inf)
        for j in range(cols):
            m = max(m, x[r, j])
        acc = float32(0.0)
        for j in range(cols):
            acc += math.exp(x[r, j] - m)
        stats[0] = m
        stats[1] = acc
    cuda.syncthreads()
    m = stats[0]
    total = stats[1]
    for j in range(t, cols, THREADS):
        out[r, j] = math.exp(x[r, j] - m) / total
'''

_MATVEC_ROW_IN_COALESCED = '''from numba import cuda, float32

WARP = 32


@cuda.jit
def matvec_warp_kernel(A, x, y):
    """One thread per row (as in matvec_row)."""
    i = cuda.grid(1)
    if i < y.shape[0]:
        acc = float32(0.0)
        for j in range(A.shape[1]):
            acc += A[i, j] * x[j]
        y[i] = acc
'''

_MATVEC_CHUNKS = ("    for j in range(t, A.shape[1], WARP):\n        acc += A[row, j] * x[j]\n",
                  "    chunk = (A.shape[1] + WARP - 1) // WARP\n"
                  "    for j in range(t * chunk, min((t + 1) * chunk, A.shape[1])):\n        acc += A[row, j] * x[j]\n")

# async_pipeline's loop, line by line (the catalogue moves and drops them)
_WAIT = "        cp_async_wait(1)  # tile t has landed; tile t + 1's group may still be in flight\n"
_SYNC1 = "        cuda.syncthreads()  # everyone's copies of tile t are visible\n"
_COMMIT = "        cp_async_commit()  # one group an iteration (an empty one at the end)\n"
_SYNC2 = "        cuda.syncthreads()  # everyone is done with this buffer before tile t + 2 is copied into it\n"

# the fresh wrong kernels of a red-team round (none of the entries above describes them)
_MMA_STORE = ("    C[r0 + g, c0 + 2 * q] = d0\n    C[r0 + g, c0 + 2 * q + 1] = d1\n"
              "    C[r0 + g + 8, c0 + 2 * q] = d2\n    C[r0 + g + 8, c0 + 2 * q + 1] = d3\n")
_MMA_ONE_BLOCK = '''from numba import cuda, float32

from kernels.gemm.mma import mma_tf32, to_tf32


@cuda.jit
def mma_kernel(A, B, C):
    """Block (0, 0)'s warp walks every 16 x 8 tile; the other blocks return."""
    if cuda.blockIdx.x + cuda.blockIdx.y > 0:
        return
    lane = cuda.threadIdx.x
    g = lane // 4
    q = lane % 4
    for r0 in range(0, C.shape[0], 16):
        for c0 in range(0, C.shape[1], 8):
            d0 = d1 = d2 = d3 = float32(0.0)
            for k0 in range(0, A.shape[1], 8):
                d0, d1, d2, d3 = mma_tf32(to_tf32(A[r0 + g, k0 + q]), to_tf32(A[r0 + g + 8, k0 + q]),
                                          to_tf32(A[r0 + g, k0 + q + 4]), to_tf32(A[r0 + g + 8, k0 + q + 4]),
                                          to_tf32(B[k0 + q, c0 + g]), to_tf32(B[k0 + q + 4, c0 + g]), d0, d1, d2, d3)
            C[r0 + g, c0 + 2 * q] = d0
            C[r0 + g, c0 + 2 * q + 1] = d1
            C[r0 + g + 8, c0 + 2 * q] = d2
            C[r0 + g + 8, c0 + 2 * q + 1] = d3
'''

_ASYNC_HEAD = '''from numba import cuda, float32

from kernels.gemm.mma import cp_async4, cp_async_commit, cp_async_wait  # noqa: F401

TILE = 8
BUFFERS = 2 * TILE * TILE


@cuda.jit
def pipeline_kernel(A, B, C):
    sA = cuda.shared.array(BUFFERS, float32)
    sB = cuda.shared.array(BUFFERS, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    me = ty * TILE + tx
    acc = float32(0.0)
'''
_ASYNC_TAIL = '''    if row < M and col < N:
        C[row, col] = acc
'''
_ASYNC_ONE_BUFFER = _ASYNC_HEAD + '''    for t in range((K + TILE - 1) // TILE):  # copy, wait for it, multiply: nothing in flight meanwhile
        ka = t * TILE + tx
        kb = t * TILE + ty
        cp_async4(sA, me, A, row, ka, 1 if row < M and ka < K else 0)
        cp_async4(sB, me, B, kb, col, 1 if kb < K and col < N else 0)
        cp_async_commit()
        cp_async_wait(0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty * TILE + k] * sB[k * TILE + tx]
        cuda.syncthreads()
''' + _ASYNC_TAIL
_ASYNC_ISSUE_AFTER = _ASYNC_HEAD + '''    ntiles = (K + TILE - 1) // TILE
    cp_async4(sA, me, A, row, tx, 1 if row < M and tx < K else 0)
    cp_async4(sB, me, B, ty, col, 1 if ty < K and col < N else 0)
    cp_async_commit()
    for t in range(ntiles):
        cp_async_wait(0)
        cuda.syncthreads()
        base = (t % 2) * TILE * TILE
        for k in range(TILE):
            acc += sA[base + ty * TILE + k] * sB[base + k * TILE + tx]
        if t + 1 < ntiles:  # the next tile only after the products: it never overlaps them
            nxt = (t + 1) % 2 * TILE * TILE + me
            ka = (t + 1) * TILE + tx
            kb = (t + 1) * TILE + ty
            cp_async4(sA, nxt, A, row, ka, 1 if row < M and ka < K else 0)
            cp_async4(sB, nxt, B, kb, col, 1 if kb < K and col < N else 0)
            cp_async_commit()
''' + _ASYNC_TAIL
_ASYNC_PLAIN_LOADS = _ASYNC_HEAD + '''    for t in range((K + TILE - 1) // TILE):  # tiled_matmul's synchronous loads
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[me] = A[row, ka] if row < M and ka < K else float32(0.0)
        sB[me] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty * TILE + k] * sB[k * TILE + tx]
        cuda.syncthreads()
''' + _ASYNC_TAIL
_ASYNC_PREFETCH_EARLY = _ASYNC_HEAD + '''    for s in range(2):  # tiles 0 and 1 up front
        ka = s * TILE + tx
        kb = s * TILE + ty
        cp_async4(sA, s * TILE * TILE + me, A, row, ka, 1 if row < M and ka < K else 0)
        cp_async4(sB, s * TILE * TILE + me, B, kb, col, 1 if kb < K and col < N else 0)
        cp_async_commit()
    for t in range((K + TILE - 1) // TILE):
        cp_async_wait(1)
        cuda.syncthreads()
        base = (t % 2) * TILE * TILE
        for k in range(TILE):
            acc += sA[base + ty * TILE + k] * sB[base + k * TILE + tx]
        ka = (t + 2) * TILE + tx  # tile t + 2 into this buffer before the barrier: neighbours still read it
        kb = (t + 2) * TILE + ty
        cp_async4(sA, base + me, A, row, ka, 1 if row < M and ka < K else 0)
        cp_async4(sB, base + me, B, kb, col, 1 if kb < K and col < N else 0)
        cp_async_commit()
        cuda.syncthreads()
''' + _ASYNC_TAIL
_ASYNC_ISSUE_LINES = ("            cp_async4(sA, nxt, A, row, ka, 1 if row < M and ka < K else 0)\n"
                      "            cp_async4(sB, nxt, B, kb, col, 1 if kb < K and col < N else 0)\n")

WRONG = [
    # --- map_guard --------------------------------------------------------------------------------
    Wrong("map_guard", "guard with <=", [("i < out.shape[0]", "i <= out.shape[0]")],
          ["out of bounds", "guard it"], ["loop bound"], "guard on the global index"),
    Wrong("map_guard", "read before the guard",
          [("    if i < out.shape[0]:\n        out[i] = 2 * x[i] + 1", "    v = 2 * x[i] + 1\n    if i < out.shape[0]:\n        out[i] = v")],
          ["out of bounds", "read x[", "guard it"], ["loop bound"], "read before the guard"),
    Wrong("map_guard", "guard on threadIdx", [("if i < out.shape[0]:", "if cuda.threadIdx.x < out.shape[0]:")],
          ["out of bounds", "guard it"], ["swapped"], "guard on the global index"),
    Wrong("map_guard", "one block loops over everything",
          [("    i = cuda.grid(1)\n    if i < out.shape[0]:\n        out[i] = 2 * x[i] + 1",
            "    if cuda.blockIdx.x == 0:\n        for i in range(cuda.threadIdx.x, out.shape[0], cuda.blockDim.x):\n"
            "            out[i] = 2 * x[i] + 1")],
          MAPPING + ["one block did all the work", "one element"], ["round the number"], "one block with a grid-stride loop"),
    Wrong("map_guard", "stride of a block, from the global index",
          [("    i = cuda.grid(1)\n    if i < out.shape[0]:\n        out[i] = 2 * x[i] + 1",
            "    for i in range(cuda.grid(1), out.shape[0], cuda.blockDim.x):\n        out[i] = 2 * x[i] + 1")],
          ["was written by"], ["round the number"], "every block redoes the whole problem"),
    Wrong("map_guard", "formula 2x - 1", [("2 * x[i] + 1", "2 * x[i] - 1")], ["expected"], ["never written"], "values"),
    # --- vecadd -------------------------------------------------------------------------------------
    Wrong("vecadd", "launch returns (threads, blocks)", [("    return blocks, threads", "    return threads, blocks")],
          MAPPING + ["(threads, blocks)", "blocks per grid, threads per block"], [], "launch returns (threads, blocks)"),
    Wrong("vecadd", "one block with a grid-stride loop", _VECADD_LOOP,
          MAPPING + ["one block did all the work"], ["round the number"], "one block with a grid-stride loop"),
    Wrong("vecadd", "no blocks for a short vector", [("(n + threads - 1) // threads", "(n - 1) // threads")],
          ["at least 1"], [], "launch math"),
    Wrong("vecadd", "index without blockDim", [("cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x",
                                               "cuda.blockIdx.x + cuda.threadIdx.x")],
          ["never written", "the index"], ["round the number", "off by one"], "index arithmetic"),
    Wrong("vecadd", "b shifted by one", [("a[i] + b[i]", "a[i] + b[i - 1]")], ["negative index"], ["guard it"], "index arithmetic"),
    Wrong("vecadd", "guard stops two short", [("if i < c.shape[0]:", "if i < c.shape[0] - 2:")],
          ["stops 2 elements short"], ["off by one", "round the number"], "guard on the global index"),
    # --- matrix_add_2d --------------------------------------------------------------------------------
    Wrong("matrix_add_2d", "grid x from rows, y from cols",
          [("((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])",
            "((rows + block[0] - 1) // block[0], (cols + block[1] - 1) // block[1])")],
          ["never written", "grid's x and y swapped"], ["round the number"], "grid x/y swapped"),
    Wrong("matrix_add_2d", "launch returns (block, grid)", [("    return grid, block", "    return block, grid")],
          MAPPING + ["(threads, blocks)"], [], "launch returns (threads, blocks)"),
    Wrong("matrix_add_2d", "one block with a grid-stride loop", _MATRIX_LOOP,
          MAPPING + ["one block did all the work"], ["round the number"], "one block with a grid-stride loop"),
    Wrong("matrix_add_2d", "guard against the wrong extents", [("if y < C.shape[0] and x < C.shape[1]:", "if y < C.shape[1] and x < C.shape[0]:")],
          ["out of bounds"], ["swapped"], "missing loop / wrong shape guard"),
    Wrong("matrix_add_2d", "rows rounded down", [("(rows + block[1] - 1) // block[1]", "max(1, rows // block[1])")],
          ["never written", "round the number of blocks up"], ["swapped"], "launch math"),
    Wrong("matrix_add_2d", "B not doubled", [("A[y, x] + 2 * B[y, x]", "A[y, x] + B[y, x]")], ["expected"], ["never written"], "values"),
    # --- strided_index ------------------------------------------------------------------------------
    Wrong("strided_index", "column stride ignored", [("c * stride1", "c")], ["expected"], ["never written"], "values"),
    Wrong("strided_index", "row and column from the wrong axes", [("    c, r = cuda.grid(2)\n", "    r, c = cuda.grid(2)\n")],
          ["swapped"], ["round the number"], "grid x/y swapped"),
    Wrong("strided_index", "guard against the wrong extents", [("if r < out.shape[0] and c < out.shape[1]:", "if r < out.shape[1] and c < out.shape[0]:")],
          ["out of bounds"], ["round the number"], "missing loop / wrong shape guard"),
    Wrong("strided_index", "row stride for the columns too", [("c * stride1", "c * stride0")],
          ["out of bounds", "storage["], ["guard it"], "index arithmetic"),
    Wrong("strided_index", "offset added twice", [("offset + r", "offset + offset + r")], ["storage["], ["guard it"], "index arithmetic"),
    Wrong("strided_index", "one block loops over everything",
          [("    c, r = cuda.grid(2)\n    if r < out.shape[0] and c < out.shape[1]:\n        out[r, c] = storage[offset + r * stride0 + c * stride1]",
            "    if cuda.blockIdx.x == 0 and cuda.blockIdx.y == 0:\n"
            "        for r in range(cuda.threadIdx.y, out.shape[0], cuda.blockDim.y):\n"
            "            for c in range(cuda.threadIdx.x, out.shape[1], cuda.blockDim.x):\n"
            "                out[r, c] = storage[offset + r * stride0 + c * stride1]")],
          MAPPING + ["one block did all the work"], [], "one block with a grid-stride loop"),
    # --- matvec_row -----------------------------------------------------------------------------------
    Wrong("matvec_row", "x indexed by the row", [("A[i, j] * x[j]", "A[i, j] * x[i]")], ["expected"], [], "values"),
    Wrong("matvec_row", "one thread does every row",
          [("    i = cuda.grid(1)\n    if i < y.shape[0]:\n", "    if cuda.grid(1) == 0:\n      for i in range(y.shape[0]):\n")],
          MAPPING + ["one element"], [], "one block with a grid-stride loop"),
    Wrong("matvec_row", "guard with <=", [("if i < y.shape[0]:", "if i <= y.shape[0]:")], ["out of bounds", "guard it"], [], "guard on the global index"),
    Wrong("matvec_row", "column index one ahead", [("A[i, j] * x[j]", "A[i, j + 1] * x[j]")],
          ["out of bounds", "a loop bound"], ["guard it"], "index arithmetic"),
    Wrong("matvec_row", "stored one row down", [("        y[i] = acc", "        y[i + 1] = acc")],
          ["out of bounds", "+1 from it"], ["guard it"], "index arithmetic"),
    # --- matvec_coalesced ------------------------------------------------------------------------------
    Wrong("matvec_coalesced", "one thread per row", _MATVEC_ROW_IN_COALESCED, MAPPING, [], "coalescing"),
    Wrong("matvec_coalesced", "lane 0 sums the row alone",
          [("    for j in range(t, A.shape[1], WARP):\n        acc += A[row, j] * x[j]\n",
            "    if t == 0:\n        for j in range(A.shape[1]):\n            acc += A[row, j] * x[j]\n")],
          MAPPING + ["by itself", "a block reduction"], [], "serial reduction"),
    Wrong("matvec_coalesced", "each lane a contiguous chunk", [_MATVEC_CHUNKS], MAPPING + ["coalesced"], [], "coalescing"),
    Wrong("matvec_coalesced", "tree starts at the warp", [("    s = WARP // 2\n", "    s = WARP\n")],
          ["out of bounds", "partial["], [], "index arithmetic"),
    Wrong("matvec_coalesced", "every lane stores the row", [("    if t == 0:\n        y[row] = partial[0]", "    y[row] = partial[0]")],
          ["written by 32 threads"], [], "many writers"),
    Wrong("matvec_coalesced", "barrier inside the tree's branch",
          [("            partial[t] += partial[t + s]\n        cuda.syncthreads()", "            partial[t] += partial[t + s]\n            cuda.syncthreads()")],
          BARRIER, [], "syncthreads inside a branch"),
    # --- block_sum ------------------------------------------------------------------------------------
    Wrong("block_sum", "barrier inside the tree's branch",
          [("            cache[t] += cache[t + s]\n        cuda.syncthreads()", "            cache[t] += cache[t + s]\n            cuda.syncthreads()")],
          BARRIER, [], "syncthreads inside a branch"),
    Wrong("block_sum", "every thread adds into cache[0]",
          [("    cache[t] = x[i] if i < x.shape[0] else float32(0.0)\n    cuda.syncthreads()  # all loads land before the tree reads them\n",
            "    if t == 0:\n        cache[0] = float32(0.0)\n    cuda.syncthreads()  # all loads land before the tree reads them\n"
            "    if i < x.shape[0]:\n        cache[0] += x[i]\n    cuda.syncthreads()\n"),
           ("    s = THREADS // 2\n", "    s = 0\n")],
          ["race", "cuda.atomic.add(cache"], ["add one between"], "non-atomic shared +="),
    Wrong("block_sum", "thread 0 sums the block alone", _BLOCK_SUM_SERIAL, MAPPING + ["a block reduction"], [], "serial reduction"),
    Wrong("block_sum", "one atomic per element into the block's slot",
          [("    cache[t] = x[i] if i < x.shape[0] else float32(0.0)\n",
            "    if t == 0:\n        partials[cuda.blockIdx.x] = float32(0.0)\n    cuda.syncthreads()\n"
            "    if i < x.shape[0]:\n        cuda.atomic.add(partials, cuda.blockIdx.x, x[i])\n    return\n")],
          MAPPING + ["atomic updates", "a block reduction"], [], "one atomic per element"),
    Wrong("block_sum", "early return past the end before the tree",
          [("    cache[t] = x[i] if i < x.shape[0] else float32(0.0)\n", "    if i >= x.shape[0]:\n        return\n    cache[t] = x[i]\n")],
          BARRIER, [], "early return before a barrier"),
    # --- dot ----------------------------------------------------------------------------------------
    Wrong("dot", "one atomic per element", _DOT_ATOMIC, MAPPING + ["atomic updates", "a block reduction"], [], "one atomic per element"),
    Wrong("dot", "out zeroed inside the kernel",
          [("    cache = cuda.shared.array(THREADS, float32)\n", "    cache = cuda.shared.array(THREADS, float32)\n"
            "    if cuda.grid(1) == 0:\n        out[0] = float32(0.0)\n")],
          ["plain store", "cuda.atomic", "remove the store"], ["add with cuda.atomic.add"], "output initialised inside the kernel"),
    Wrong("dot", "every thread adds the block's sum", [("    if t == 0:\n        cuda.atomic.add(out, 0, cache[0])", "    cuda.atomic.add(out, 0, cache[0])")],
          ["64 times"], ["missing"], "result k times too large"),
    Wrong("dot", "no zero past the end",
          [("    cache[t] = a[i] * b[i] if i < a.shape[0] else float32(0.0)\n", "    if i < a.shape[0]:\n        cache[t] = a[i] * b[i]\n")],
          ["NaN"], ["add one between"], "missing zero past the end"),
    Wrong("dot", "early return past the end", [("    i = cuda.grid(1)\n", "    i = cuda.grid(1)\n    if i >= a.shape[0]:\n        return\n")],
          BARRIER, [], "early return before a barrier"),
    # --- minmax -------------------------------------------------------------------------------------
    Wrong("minmax", "no identities past the end",
          [("    else:\n        lo[t] = math.inf\n        hi[t] = -math.inf\n", "")],
          ["before any thread of its block wrote it"], [], "shared memory never zeroed"),
    Wrong("minmax", "one atomic per element",
          [("    if i < x.shape[0]:\n        lo[t] = x[i]\n        hi[t] = x[i]\n",
            "    if i < x.shape[0]:\n        cuda.atomic.min(out, 0, x[i])\n        cuda.atomic.max(out, 1, x[i])\n    return\n"
            "    if i < x.shape[0]:\n        lo[t] = x[i]\n        hi[t] = x[i]\n")],
          MAPPING + ["atomic updates", "a block reduction"], [], "one atomic per element"),
    Wrong("minmax", "out set to the identities inside the kernel",
          [("    t = cuda.threadIdx.x\n", "    t = cuda.threadIdx.x\n    if cuda.grid(1) == 0:\n        out[0] = math.inf\n        out[1] = -math.inf\n")],
          ["plain store", "remove the store"], ["add with cuda.atomic.add"], "global-memory init race"),
    Wrong("minmax", "barrier inside the tree's branch",
          [("            hi[t] = max(hi[t], hi[t + s])\n        cuda.syncthreads()", "            hi[t] = max(hi[t], hi[t + s])\n            cuda.syncthreads()")],
          BARRIER, [], "syncthreads inside a branch"),
    Wrong("minmax", "min folded in without an atomic", [("cuda.atomic.min(out, 0, lo[0])", "out[0] = min(out[0], lo[0])")],
          ["without an atomic"], [], "non-atomic global update"),
    # --- tiled_matmul -------------------------------------------------------------------------------
    Wrong("tiled_matmul", "no shared memory", _MATMUL_NAIVE, MAPPING + ["shared memory"], [], "no shared-memory reuse"),
    Wrong("tiled_matmul", "tiles not zeroed past the edges",
          [("        sA[ty, tx] = A[row, k_a] if row < M and k_a < K else float32(0.0)\n",
            "        if row < M and k_a < K:\n            sA[ty, tx] = A[row, k_a]\n")],
          ["NaN", "read before"], [], "shared memory never zeroed"),
    Wrong("tiled_matmul", "barrier inside the output guard",
          [("    for t in range((K + TILE - 1) // TILE):\n", "    if row >= M or col >= N:\n        return\n"
            "    for t in range((K + TILE - 1) // TILE):\n")],
          BARRIER, [], "early return before a barrier"),
    Wrong("tiled_matmul", "grid from (M, N) instead of (N, M)",
          [("((N + TILE - 1) // TILE, (M + TILE - 1) // TILE)", "((M + TILE - 1) // TILE, (N + TILE - 1) // TILE)")],
          ["swapped"], ["round the number"], "grid x/y swapped"),
    Wrong("tiled_matmul", "B's tile read transposed", [("acc += sA[ty, k] * sB[k, tx]", "acc += sA[ty, k] * sB[tx, k]")],
          ["expected"], [], "values"),
    Wrong("tiled_matmul", "barrier inside the load branch",
          [("        sB[ty, tx] = B[k_b, col] if k_b < K and col < N else float32(0.0)\n        cuda.syncthreads()",
            "        sB[ty, tx] = B[k_b, col] if k_b < K and col < N else float32(0.0)\n        if row < M:\n            cuda.syncthreads()")],
          BARRIER, [], "syncthreads inside a branch"),
    # --- softmax_fused ------------------------------------------------------------------------------
    Wrong("softmax_fused", "thread 0 finds max and sum alone", _SOFTMAX_SERIAL, MAPPING + ["a block reduction"], [], "serial reduction"),
    Wrong("softmax_fused", "barrier inside the max tree's branch",
          [("            cache[t] = max(cache[t], cache[t + s])\n        cuda.syncthreads()",
            "            cache[t] = max(cache[t], cache[t + s])\n            cuda.syncthreads()")],
          BARRIER, [], "syncthreads inside a branch"),
    Wrong("softmax_fused", "sum of exp without the max", [("acc += math.exp(x[r, j] - m)", "acc += math.exp(x[r, j])")],
          ["exp(row max) times too large"], ["more than once", "misses terms"], "values"),
    Wrong("softmax_fused", "each thread its own max", [("    m = cache[0]\n", "    m = cache[t]\n")], ["expected"], [], "values"),
    Wrong("softmax_fused", "early return for threads past the columns",
          [("    cols = x.shape[1]\n", "    cols = x.shape[1]\n    if t >= cols:\n        return\n")],
          BARRIER, [], "early return before a barrier"),
    Wrong("softmax_fused", "every block does every row", "every block loops over the rows",
          ["one per block"], [], "every block redoes the whole problem"),
    # --- quantize -----------------------------------------------------------------------------------
    Wrong("quantize", "read before the guard",
          [("    if i < q.shape[0]:\n        v = x[i] / scale + zero_point\n", "    v = x[i] / scale + zero_point\n    if i < q.shape[0]:\n")],
          ["out of bounds", "guard it"], [], "read before the guard"),
    Wrong("quantize", "one thread does everything",
          [("    i = cuda.grid(1)\n    if i < q.shape[0]:\n", "    if cuda.grid(1) == 0:\n      for i in range(q.shape[0]):\n")],
          MAPPING + ["one element"], [], "one block with a grid-stride loop"),
    Wrong("quantize", "zero point subtracted", [("x[i] / scale + zero_point", "x[i] / scale - zero_point")], ["expected"], [], "values"),
    Wrong("quantize", "guard stops two short", [("if i < q.shape[0]:", "if i < q.shape[0] - 2:")],
          ["stops 2 elements short"], ["off by one"], "guard on the global index"),
    Wrong("quantize", "multiplied by the scale", [("x[i] / scale", "x[i] * scale")], ["expected"], [], "values"),
    # --- transpose_shared ---------------------------------------------------------------------------
    Wrong("transpose_shared", "no shared memory", _TRANSPOSE_NAIVE, MAPPING + ["stores", "coalesced"], [], "transpose without shared memory"),
    Wrong("transpose_shared", "store loop covers one slab",
          [("    for j in range(0, TILE, BLOCK_ROWS):\n        if y + j < cols and x < rows:",
            "    for j in range(0, BLOCK_ROWS, BLOCK_ROWS):\n        if y + j < cols and x < rows:")],
          ["never written"], ["swapped", "round the number"], "missing loop / wrong shape guard"),
    Wrong("transpose_shared", "load guard against rows twice", [("if y + j < rows and x < cols:", "if y + j < rows and x < rows:")],
          ["NaN"], ["swapped"], "missing loop / wrong shape guard"),
    Wrong("transpose_shared", "tile read row-wise for the store", [("out[y + j, x] = tile[tx, ty + j]", "out[y + j, x] = tile[ty + j, tx]")],
          ["NaN", "before any thread of its block wrote it"], ["swapped"], "shared memory never zeroed"),
    Wrong("transpose_shared", "barrier inside the load branch",
          [("            tile[ty + j, tx] = A[y + j, x]\n", "            tile[ty + j, tx] = A[y + j, x]\n            cuda.syncthreads()\n")],
          BARRIER, [], "syncthreads inside a branch"),
    Wrong("transpose_shared", "early return outside A",
          [("    rows, cols = A.shape\n", "    rows, cols = A.shape\n    if cuda.blockIdx.x * TILE + tx >= cols:\n        return\n")],
          BARRIER, [], "early return before a barrier"),
    # --- warp_reduce --------------------------------------------------------------------------------
    Wrong("warp_reduce", "mask of 16 lanes", [("FULL_MASK = 0xFFFFFFFF", "FULL_MASK = 0x0000FFFF")], ["mask"], [], "shuffle mask of 16 lanes"),
    Wrong("warp_reduce", "a shared-memory tree, no shuffles", _WARP_SHARED_TREE, MAPPING + ["no warp shuffle"], [], "no warp shuffle"),
    Wrong("warp_reduce", "barrier inside the lane-0 branch",
          [("        warp_sums[warp] = v\n    cuda.syncthreads()", "        warp_sums[warp] = v\n        cuda.syncthreads()")],
          BARRIER, [], "syncthreads inside a branch"),
    Wrong("warp_reduce", "every lane reads a warp's sum", [("v = warp_sums[lane] if lane < WARPS else float32(0.0)", "v = warp_sums[lane % WARPS]")],
          ["8 times"], ["missing"], "result k times too large"),
    Wrong("warp_reduce", "no zero past the end", [("v = x[i] if i < x.shape[0] else float32(0.0)", "v = x[min(i, x.shape[0] - 1)]")],
          ["expected"], [], "missing zero past the end"),
    # --- histogram ----------------------------------------------------------------------------------
    Wrong("histogram", "shared count with a plain add", [("cuda.atomic.add(local, x[i], 1)", "local[x[i]] = local[x[i]] + 1")],
          ["race", "cuda.atomic.add(local"], ["add one between"], "non-atomic shared +="),
    Wrong("histogram", "one global atomic per element", _HIST_GLOBAL, MAPPING + ["atomic updates"], [], "one atomic per element"),
    Wrong("histogram", "hist zeroed by every block",
          [("    for b in range(t, BINS, THREADS):\n        local[b] = 0\n",
            "    for b in range(t, BINS, THREADS):\n        local[b] = 0\n        hist[b] = 0\n")],
          ["plain store", "remove the store"], ["add with cuda.atomic.add"], "output initialised inside the kernel"),
    Wrong("histogram", "every thread merges every bin",
          [("    for b in range(t, BINS, THREADS):\n        cuda.atomic.add(hist, b, local[b])", "    for b in range(BINS):\n        cuda.atomic.add(hist, b, local[b])")],
          ["128 times"], ["missing"], "result k times too large"),
    Wrong("histogram", "shared counts never zeroed", [("    for b in range(t, BINS, THREADS):\n        local[b] = 0\n", "")],
          ["never zeroed"], [], "shared memory never zeroed"),
    Wrong("histogram", "early return past the end",
          [("    t = cuda.threadIdx.x\n", "    t = cuda.threadIdx.x\n    if cuda.grid(1) >= x.shape[0]:\n        return\n")],
          BARRIER, [], "early return before a barrier"),
    # --- prefix_sum ---------------------------------------------------------------------------------
    Wrong("prefix_sum", "float32 shared buffer", [("from numba import cuda, int32", "from numba import cuda, float32, int32"),
                                                  ("temp = cuda.shared.array(THREADS, int32)", "temp = cuda.shared.array(THREADS, float32)")],
          ["expected", "float32 rounding step", "2**24"], [], "float32 shared buffer on int32 data"),
    Wrong("prefix_sum", "thread 0 scans the block alone", _SCAN_SERIAL, MAPPING + ["a block scan"], [], "serial reduction"),
    Wrong("prefix_sum", "barrier inside the step's branch",
          [("        v = temp[t - s] if t >= s else 0\n        cuda.syncthreads()  # everyone has read",
            "        v = 0\n        if t >= s:\n            v = temp[t - s]\n            cuda.syncthreads()  # everyone has read")],
          BARRIER, [], "syncthreads inside a branch"),
    Wrong("prefix_sum", "early return past the end", [("    i = cuda.grid(1)\n", "    i = cuda.grid(1)\n    if i >= x.shape[0]:\n        return\n")],
          BARRIER, [], "early return before a barrier"),
    Wrong("prefix_sum", "step reads the wrong neighbour", [("v = temp[t - s] if t >= s else 0", "v = temp[t + s] if t + s < THREADS else 0")],
          ["expected"], ["never written"], "values"),
    Wrong("prefix_sum", "store guard one short", [("    if i < x.shape[0]:\n        out[i]", "    if i < x.shape[0] - 1:\n        out[i]")],
          ["off by one"], [], "guard on the global index"),
    # --- conv1d -------------------------------------------------------------------------------------
    Wrong("conv1d", "right halo index R too far", [("right = i + THREADS", "right = i + THREADS + R")],
          ["halo"], ["syncthreads", "guard it"], "halo index bug"),
    Wrong("conv1d", "right halo into the wrong cell", [("tile[t + THREADS + R] = x[right]", "tile[t + THREADS] = x[right]")],
          ["two threads store to one element"], ["add one between", "guard it"], "halo index bug"),
    Wrong("conv1d", "right halo not bounds-checked", [("x[right] if right < n else float32(0.0)", "x[right]")],
          ["out of bounds", "offset"], ["`if i < n:`", "syncthreads"], "halo index bug"),
    Wrong("conv1d", "left halo one too far", [("left = i - R\n", "left = i - R - 1\n")],
          ["halo"], ["syncthreads", "guard it"], "halo index bug"),
    Wrong("conv1d", "no shared memory", _CONV_NAIVE, MAPPING + ["shared memory"], [], "no shared-memory reuse"),
    Wrong("conv1d", "no zero past the end", [("    tile[t + R] = x[i] if i < n else float32(0.0)\n", "    if i < n:\n        tile[t + R] = x[i]\n")],
          ["NaN"], [], "missing zero past the end"),
    Wrong("conv1d", "barrier inside the halo branch",
          [("        tile[t + THREADS + R] = x[right] if right < n else float32(0.0)\n",
            "        tile[t + THREADS + R] = x[right] if right < n else float32(0.0)\n        cuda.syncthreads()\n")],
          BARRIER, [], "syncthreads inside a branch"),
    Wrong("conv1d", "filter index reversed past the end", [("acc += w[k] * tile[t + k]", "acc += w[K - k] * tile[t + k]")],
          ["out of bounds", "w["], ["guard it"], "index arithmetic"),
    # --- mma_fragment ---------------------------------------------------------------------------------
    Wrong("mma_fragment", "a1 and a2 swapped",
          [("a1 = A[r0 + g + 8, k0 + q]\n        a2 = A[r0 + g, k0 + q + 4]", "a1 = A[r0 + g, k0 + q + 4]\n        a2 = A[r0 + g + 8, k0 + q]")],
          ["a1 and a2 are exchanged"], ["wrong places"], "wrong fragment lane"),
    Wrong("mma_fragment", "B's fragment transposed",
          [("b0 = B[k0 + q, c0 + g]\n        b1 = B[k0 + q + 4, c0 + g]", "b0 = B[k0 + g, c0 + q]\n        b1 = B[k0 + g, c0 + q + 4]")],
          ["b0 = B[k0 + q, c0 + g]"], ["wrong places"], "wrong fragment lane"),
    Wrong("mma_fragment", "C stored at columns q and q + 4",
          [("C[r0 + g, c0 + 2 * q] = d0\n    C[r0 + g, c0 + 2 * q + 1] = d1\n    C[r0 + g + 8, c0 + 2 * q] = d2\n"
            "    C[r0 + g + 8, c0 + 2 * q + 1] = d3",
            "C[r0 + g, c0 + q] = d0\n    C[r0 + g, c0 + q + 4] = d1\n    C[r0 + g + 8, c0 + q] = d2\n"
            "    C[r0 + g + 8, c0 + q + 4] = d3")],
          ["wrong places", "columns 2q and 2q + 1"], [], "wrong fragment register"),
    Wrong("mma_fragment", "c1 and c2 swapped",
          [("C[r0 + g, c0 + 2 * q + 1] = d1\n    C[r0 + g + 8, c0 + 2 * q] = d2", "C[r0 + g, c0 + 2 * q + 1] = d2\n    C[r0 + g + 8, c0 + 2 * q] = d1")],
          ["wrong places", "c1, c2"], [], "wrong fragment register"),
    Wrong("mma_fragment", "lane groups of 8", [("g = lane // 4  #", "g = lane // 8  #")], ["never written"], [],
          "wrong fragment lane"),
    Wrong("mma_fragment", "plain FMAs instead of mma_tf32",
          [("        d0, d1, d2, d3 = mma_tf32(to_tf32(a0), to_tf32(a1), to_tf32(a2), to_tf32(a3), to_tf32(b0), to_tf32(b1),\n"
            "                                  d0, d1, d2, d3)\n",
            "        for k in range(8):\n            d0 += A[r0 + g, k0 + k] * B[k0 + k, c0 + 2 * q]\n"
            "            d1 += A[r0 + g, k0 + k] * B[k0 + k, c0 + 2 * q + 1]\n"
            "            d2 += A[r0 + g + 8, k0 + k] * B[k0 + k, c0 + 2 * q]\n"
            "            d3 += A[r0 + g + 8, k0 + k] * B[k0 + k, c0 + 2 * q + 1]\n")],
          MAPPING + ["mma_tf32 never ran"], [], "no tensor-core instruction"),
    # --- async_pipeline -------------------------------------------------------------------------------
    Wrong("async_pipeline", "missing wait", [(_WAIT, "")], ["but it is NaN"], [], "missing wait"),
    Wrong("async_pipeline", "wait after the barrier", [(_WAIT + _SYNC1, _SYNC1 + _WAIT)], ["race"], [],
          "wait after the barrier"),
    Wrong("async_pipeline", "wait before the commit", [(_COMMIT + _WAIT, _WAIT + _COMMIT)], ["but it is NaN"], [],
          "wait before the commit"),
    Wrong("async_pipeline", "no barrier after the products", [(_SYNC2, "")], ["race"], [],
          "buffer overwritten while read"),
    Wrong("async_pipeline", "waits for the wrong group", [("cp_async_wait(1)  #", "cp_async_wait(2)  #")],
          ["but it is NaN"], [], "wait for the wrong group"),
    # --- mma_fragment: fresh ones -----------------------------------------------------------------------
    Wrong("mma_fragment", "C fragment's row and column swapped",
          [(_MMA_STORE, "    C[r0 + 2 * q, c0 + g] = d0\n    C[r0 + 2 * q + 1, c0 + g] = d1\n"
                        "    C[r0 + 2 * q + 8, c0 + g] = d2\n    C[r0 + 2 * q + 9, c0 + g] = d3\n")],
          ["wrong places"], [], "wrong fragment register"),
    Wrong("mma_fragment", "c2 and c3 stored without the + 8 rows",
          [(_MMA_STORE, _MMA_STORE.replace("r0 + g + 8", "r0 + g"))], ["never written"], [], "wrong fragment register"),
    Wrong("mma_fragment", "groupID and threadID_in_group swapped",
          [("g = lane // 4  #", "g = lane % 4  #"), ("q = lane % 4  #", "q = lane // 4  #")], ["out of bounds"], [],
          "wrong fragment lane"),
    Wrong("mma_fragment", "every block stores the first 8 columns", [("c0 = 8 * cuda.blockIdx.x", "c0 = 0")],
          ["never written", "columns 8.."], [], "missing block offset"),
    Wrong("mma_fragment", "second column without the + 1", [(_MMA_STORE, _MMA_STORE.replace(" + 1] =", "] ="))],
          ["never written", "columns 1, 3, 5"], [], "wrong fragment register"),
    Wrong("mma_fragment", "tile staged in shared memory without a barrier",
          [("    C[r0 + g, c0 + 2 * q] = d0\n",
            "    tile = cuda.shared.array(128, float32)\n    tile[g * 8 + 2 * q] = d0\n    tile[g * 8 + 2 * q + 1] = d1\n"
            "    tile[(g + 8) * 8 + 2 * q] = d2\n    tile[(g + 8) * 8 + 2 * q + 1] = d3\n"
            "    for e in range(lane, 128, 32):\n        C[r0 + e // 8, c0 + e % 8] = tile[(e + 32) % 128]\n    return\n"
            "    C[r0 + g, c0 + 2 * q] = d0\n")], ["race"], [], "missing barrier"),
    Wrong("mma_fragment", "tile zeroed 16 columns wide",
          [("    d0 = d1 = d2 = d3 = float32(0.0)\n",
            "    d0 = d1 = d2 = d3 = float32(0.0)\n    for e in range(lane, 256, 32):\n"
            "        if c0 + e % 16 < C.shape[1]:\n            C[r0 + e // 16, c0 + e % 16] = float32(0.0)\n")],
          ["written by 2 threads"], [], "writes past the tile"),
    Wrong("mma_fragment", "accumulators reset at every k-step",
          [("    for k0 in range(0, A.shape[1], 8):\n", "    for k0 in range(0, A.shape[1], 8):\n        d0 = d1 = d2 = d3 = float32(0.0)\n")],
          ["only the last k-step"], ["which element of A"], "accumulator reset"),
    Wrong("mma_fragment", "a3 loads a1's element", [("a3 = A[r0 + g + 8, k0 + q + 4]", "a3 = A[r0 + g + 8, k0 + q]")],
          ["a second copy of a1's element"], ["wrong places"], "wrong fragment lane"),
    Wrong("mma_fragment", "block (0, 0) computes every tile", _MMA_ONE_BLOCK,
          MAPPING + ["stored nothing", "one warp per 16 x 8 tile"], [], "one block with a loop"),
    # --- async_pipeline: fresh ones ---------------------------------------------------------------------
    Wrong("async_pipeline", "commit only when a tile was issued (wait(1) then leaves the last tile in flight)",
          [(_ASYNC_ISSUE_LINES + _COMMIT, _ASYNC_ISSUE_LINES + "            cp_async_commit()\n")],
          ["but it is NaN"], [], "wait for the wrong group"),
    Wrong("async_pipeline", "one buffer, cp_async_wait(0) at every tile", _ASYNC_ONE_BUFFER,
          MAPPING + ["no copy was ever in flight"], [], "no overlap"),
    Wrong("async_pipeline", "two buffers but cp_async_wait(0)", [("cp_async_wait(1)  #", "cp_async_wait(0)  #")],
          MAPPING + ["no copy was ever in flight"], [], "no overlap"),
    Wrong("async_pipeline", "next tile issued after the products", _ASYNC_ISSUE_AFTER,
          MAPPING + ["no copy was ever in flight"], [], "no overlap"),
    Wrong("async_pipeline", "plain loads, no cp.async", _ASYNC_PLAIN_LOADS, MAPPING + ["no cp_async4"], [], "no overlap"),
    Wrong("async_pipeline", "products read the buffer in flight", [("base = (t % 2) * TILE", "base = ((t + 1) % 2) * TILE")],
          ["but it is NaN"], [], "wrong buffer"),
    Wrong("async_pipeline", "tiles along K rounded down", [("ntiles = (K + TILE - 1) // TILE", "ntiles = max(1, K // TILE)")],
          ["misses exactly the partial of tile"], [], "missing loop / wrong shape guard"),
    Wrong("async_pipeline", "edge copies skipped, not zero-filled",
          [("    cp_async4(sA, me, A, row, tx, 1 if row < M and tx < K else 0)\n    cp_async4(sB, me, B, ty, col, 1 if ty < K and col < N else 0)\n",
            "    if row < M and tx < K:\n        cp_async4(sA, me, A, row, tx, 1)\n    if ty < K and col < N:\n        cp_async4(sB, me, B, ty, col, 1)\n"),
           (_ASYNC_ISSUE_LINES, "            if row < M and ka < K:\n                cp_async4(sA, nxt, A, row, ka, 1)\n"
                                "            if kb < K and col < N:\n                cp_async4(sB, nxt, B, kb, col, 1)\n")],
          ["but it is NaN"], [], "missing zero past the end"),
    Wrong("async_pipeline", "tile t + 2 copied before the closing barrier", _ASYNC_PREFETCH_EARLY, ["race"], [],
          "buffer overwritten while read"),
    Wrong("async_pipeline", "B's tile copied transposed",
          [("cp_async4(sB, nxt, B, kb, col, 1 if kb < K and col < N else 0)",
            "cp_async4(sB, nxt, B, (t + 1) * TILE + tx, cuda.blockIdx.x * TILE + ty, "
            "1 if (t + 1) * TILE + tx < K and cuda.blockIdx.x * TILE + ty < N else 0)"),
           ("cp_async4(sB, me, B, ty, col, 1 if ty < K and col < N else 0)",
            "cp_async4(sB, me, B, tx, cuda.blockIdx.x * TILE + ty, 1 if tx < K and cuda.blockIdx.x * TILE + ty < N else 0)")],
          ["expected"], ["never written"], "index arithmetic"),
]

RIGHT = [
    Right("map_guard", "grid-stride loop", [("    i = cuda.grid(1)\n    if i < out.shape[0]:\n        out[i] = 2 * x[i] + 1",
                                             "    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):\n        out[i] = 2 * x[i] + 1")]),
    Right("map_guard", "early return", [("    if i < out.shape[0]:\n        out[i] = 2 * x[i] + 1", "    if i >= out.shape[0]:\n        return\n    out[i] = 2 * x[i] + 1")]),
    Right("vecadd", "one block too many", [("(n + threads - 1) // threads", "n // threads + 1")]),
    Right("vecadd", "grid-stride loop", [("    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n    if i < c.shape[0]:\n        c[i] = a[i] + b[i]",
                                          "    for i in range(cuda.grid(1), c.shape[0], cuda.gridsize(1)):\n        c[i] = a[i] + b[i]")]),
    Right("vecadd", "early return", [("    if i < c.shape[0]:\n        c[i] = a[i] + b[i]", "    if i >= c.shape[0]:\n        return\n    c[i] = a[i] + b[i]")]),
    Right("matrix_add_2d", "blocks of 32 x 4", [("block = (16, 8)", "block = (32, 4)")]),
    Right("matrix_add_2d", "blocks of 64 x 2", [("block = (16, 8)", "block = (64, 2)")]),
    Right("strided_index", "early return", [("    if r < out.shape[0] and c < out.shape[1]:\n        out[r, c]", "    if r >= out.shape[0] or c >= out.shape[1]:\n        return\n    out[r, c]")]),
    Right("matvec_row", "early return", [("    if i < y.shape[0]:\n        acc = 0.0\n        for j in range(A.shape[1]):\n            acc += A[i, j] * x[j]\n        y[i] = acc",
                                          "    if i >= y.shape[0]:\n        return\n    acc = 0.0\n    for j in range(A.shape[1]):\n        acc += A[i, j] * x[j]\n    y[i] = acc")]),
    Right("matvec_coalesced", "lanes other than 0 return after the tree", [("    if t == 0:\n        y[row] = partial[0]", "    if t != 0:\n        return\n    y[row] = partial[0]")]),
    Right("block_sum", "early return after the last barrier", [("    if t == 0:\n        partials", "    if t != 0:\n        return\n    if True:\n        partials")]),
    Right("dot", "early return after the tree", [("    if t == 0:\n        cuda.atomic.add", "    if t > 0:\n        return\n    if True:\n        cuda.atomic.add")]),
    Right("minmax", "early return after the tree", [("    if t == 0:\n        cuda.atomic.min", "    if t != 0:\n        return\n    if True:\n        cuda.atomic.min")]),
    Right("tiled_matmul", "tiles of 16", [("TILE = 8\n", "TILE = 16\n")]),
    Right("softmax_fused", "threads past the columns return after the last barrier",
          [("    total = cache[0]\n", "    total = cache[0]\n    if t >= cols:\n        return\n")]),
    Right("quantize", "grid-stride loop", [("    i = cuda.grid(1)\n    if i < q.shape[0]:\n", "    for i in range(cuda.grid(1), q.shape[0], cuda.gridsize(1)):\n")]),
    Right("transpose_shared", "threads outside out return after the barrier",
          [("    y = cuda.blockIdx.x * TILE + ty  # a row of out = a column of A\n",
            "    y = cuda.blockIdx.x * TILE + ty  # a row of out = a column of A\n    if x >= rows:\n        return\n")]),
    Right("warp_reduce", "warps other than 0 return after the barrier",
          [("    if warp == 0:\n        v = warp_sums", "    if warp != 0:\n        return\n    if True:\n        v = warp_sums")]),
    Right("histogram", "while loop over the grid", [("    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):\n        cuda.atomic.add(local, x[i], 1)\n",
                                                   "    i = cuda.grid(1)\n    while i < x.shape[0]:\n        cuda.atomic.add(local, x[i], 1)\n        i += cuda.gridsize(1)\n")]),
    Right("prefix_sum", "early return after the last barrier",
          [("    if i < x.shape[0]:\n        out[i] = temp[t] + offset[0]", "    if i >= x.shape[0]:\n        return\n    out[i] = temp[t] + offset[0]")]),
 Right("minmax", "warp shuffles + one atomic per warp", '''import math
from numba import cuda, float32
THREADS = 64
@cuda.jit
def minmax_kernel(x, out):
    i = cuda.grid(1)
    lo = x[i] if i < x.shape[0] else float32(math.inf)
    hi = x[i] if i < x.shape[0] else float32(-math.inf)
    off = 16
    while off > 0:
        lo = min(lo, cuda.shfl_down_sync(0xFFFFFFFF, lo, off))
        hi = max(hi, cuda.shfl_down_sync(0xFFFFFFFF, hi, off))
        off //= 2
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.min(out, 0, lo)
        cuda.atomic.max(out, 1, hi)
'''),
 Right("block_sum", "warp shuffles", '''from numba import cuda, float32
THREADS = 64
@cuda.jit
def block_sum_kernel(x, partials):
    s = cuda.shared.array(2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else float32(0.0)
    off = 16
    while off > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    if t % 32 == 0:
        s[t // 32] = v
    cuda.syncthreads()
    if t == 0:
        partials[cuda.blockIdx.x] = s[0] + s[1]
'''),
 # (a launch() that ignores the `threads` it is given is wrong since issue 41: tests/teach/hint_mutants.py)
 Right("matrix_add_2d", "blocks of 32 x 8", [("block = (16, 8)", "block = (32, 8)")]),
 Right("dot", "grid-stride accumulate then tree", [("    cache[t] = a[i] * b[i] if i < a.shape[0] else float32(0.0)\n",
   "    acc = float32(0.0)\n    for j in range(i, a.shape[0], cuda.gridsize(1)):\n        acc += a[j] * b[j]\n    cache[t] = acc\n")]),
 Right("softmax_fused", "loops with while", [("    for j in range(t, cols, THREADS):\n        out[r, j] = math.exp(x[r, j] - m) / total",
   "    j = t\n    while j < cols:\n        out[r, j] = math.exp(x[r, j] - m) / total\n        j += THREADS")]),
 Right("histogram", "merge skips empty bins", [("        cuda.atomic.add(hist, b, local[b])", "        if local[b] > 0:\n            cuda.atomic.add(hist, b, local[b])")]),
    Right("conv1d", "early return after the barrier",
          [("    if i < n:\n        acc = float32(0.0)\n        for k in range(K):\n            acc += w[k] * tile[t + k]\n        y[i] = acc",
            "    if i >= n:\n        return\n    acc = float32(0.0)\n    for k in range(K):\n        acc += w[k] * tile[t + k]\n    y[i] = acc")]),
    Right("async_pipeline", "accumulator set before the first commit",
          [("    cp_async_commit()\n    acc = float32(0.0)\n", "    acc = float32(0.0)\n    cp_async_commit()\n")]),
    Right("async_pipeline", "no empty commit: cp_async_wait(0) at the last tile",
          [(_ASYNC_ISSUE_LINES + _COMMIT + _WAIT,
            _ASYNC_ISSUE_LINES + "            cp_async_commit()\n            cp_async_wait(1)\n        else:\n"
            "            cp_async_wait(0)\n")]),
    Right("async_pipeline", "wait(0) first, then tile t + 1 issued before the products",
          [("        if t + 1 < ntiles:  # tile t + 1", "        cp_async_wait(0)\n        cuda.syncthreads()\n        if t + 1 < ntiles:  # tile t + 1"),
           (_COMMIT + _WAIT + _SYNC1, "        cp_async_commit()\n")]),
    Right("mma_fragment", "stores by a loop over the two row halves",
          [(_MMA_STORE, "    for h in range(2):\n        C[r0 + g + 8 * h, c0 + 2 * q] = d0 if h == 0 else d2\n"
                        "        C[r0 + g + 8 * h, c0 + 2 * q + 1] = d1 if h == 0 else d3\n")]),
    Right("mma_fragment", "fragments loaded through locals of the tile origin",
          [("        a0 = A[r0 + g, k0 + q]\n", "        ra = r0 + g\n        a0 = A[ra, k0 + q]\n")]),
]


def _every_block_softmax() -> str:
    """softmax_fused with the kernel's body in a loop over every row (each block does them all)."""
    import exercises

    src = exercises.load("softmax_fused").solution.read_text()
    head, body = src.split("    r = cuda.blockIdx.x\n")
    lines = body.split("\n")
    body = "\n".join(("    " + ln) if ln.strip() else ln for ln in lines).rstrip() + "\n"
    return head + "    for r in range(x.shape[0]):\n" + body + "        cuda.syncthreads()  # the next row reuses cache\n"


_GENERATED = {"every block loops over the rows": _every_block_softmax}


def run_entry(entry, path, seed: int, backend: str = "simulator") -> dict:
    """Check ``path`` (the entry's file) in this process as the checker does (the executor runs the
    launches, the judge decides: lab.teach.inprocess.run_all, no GPU compile), one hidden test at a
    time, stopping at the first failing test whose message has the wanted hint (a Wrong); a Right runs
    every test in one request (its first failure is reported with the others).

    Returns {"failed": bool, "messages": [failing messages], "hint_ok": bool (a Wrong: one failing
    message has every ``want`` phrase and no ``avoid`` phrase)}.
    """
    from lab.teach.inprocess import run_all

    want, avoid = (entry.want, entry.avoid) if isinstance(entry, Wrong) else ([], [])

    def good(m):
        return all(w in m for w in want) and not any(a in m for a in avoid)

    if not isinstance(entry, Wrong):  # a right kernel runs every test: one request, one load, not one a test
        results = run_all(entry.exercise, str(path), backend, int(seed), compile_check=False)
        messages = [f"{r['name']}: {r['message']}" for r in results if not r["passed"]]
        return {"failed": bool(messages), "messages": messages, "hint_ok": False}
    bad = first_failures(entry.exercise, path, seed, backend=backend,  # the test's name is shown too
                         enough=lambda got: any(good(f"{r['name']}: {r['message']}") for r in got))
    messages = [f"{r['name']}: {r['message']}" for r in bad]
    return {"failed": bool(messages), "messages": messages, "hint_ok": any(good(m) for m in messages)}


def first_failures(exercise: str, path, seed: int, most: int = 2, enough=None,
                   backend: str = "simulator") -> list[dict]:
    """The first ``most`` failing results of the exercise's hidden tests on ``path``, in the tests'
    order, each test checked in its own request (lab.teach.inprocess.run_all with the others skipped:
    a test's verdict does not depend on the others; the judge's diagnoses of the failures after these
    are not made, about a third of the CPU of running every test); a "load" failure alone when the file
    does not load. ``enough(failures)``: stop as soon as it is true instead (``most`` then unused)."""
    import numpy as np

    import exercises
    from lab.teach.cases import hidden_cases
    from lab.teach.inprocess import run_all

    names = [c.name for c in hidden_cases(exercises.load(exercise), np.random.default_rng(int(seed)))]
    bad: list = []
    for name in names:
        got = [r for r in run_all(exercise, str(path), backend, int(seed), compile_check=False,
                                  skip=[n for n in names if n != name]) if not r["passed"]]
        if any(r["name"] == "load" for r in got):
            return got
        bad += got
        if (enough(bad) if enough is not None else len(bad) >= most):
            break
    return bad


def check_first_message(mutant, classes, avoid, tmp_path) -> None:
    """A fresh-set mutant (exercise, label, substitutions, class) fails, and its first failing message on a
    fresh seed has every phrase of one of ``classes[class]``'s lists (a tuple: any one list names it) and
    none of ``avoid[class]`` (tests/teach/test_hint_fresh5.py, test_hint_fresh6.py)."""
    import os

    ex, label, subs, cls = mutant
    path = tmp_path / f"{ex}.py"
    path.write_text(source(Wrong(ex, label, subs, [], [], cls)))
    seed = int.from_bytes(os.urandom(4), "little")
    bad = first_failures(ex, path, seed, most=1)
    assert bad, f"{ex} / {label} passed (seed {seed})"
    first = bad[0]["message"]
    phrases = classes[cls]
    alternatives = list(phrases) if isinstance(phrases, tuple) else [phrases]
    missing = min(([p for p in ps if p not in first] for ps in alternatives), key=len)
    wrong = [p for p in avoid.get(cls, ()) if p in first]
    assert not missing and not wrong, f"{ex} / {label} (seed {seed}): missing {missing}, wrong {wrong}: {first}"
