"""Matrix-vector product, y = A @ x, from the textbook kernel to a coalesced one.

Source: the seed notebook "PyTorch handling of GPU devices" (``cu_mv_product``, one thread per row);
CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; CUDA C++ Programming Guide,
"Warp Shuffle Functions".

A is ROWS x COLS, C-contiguous (row-major), x has COLS entries, y has ROWS. Every element of A is
used once, so the floor is reading A once: ROWS * COLS * itemsize bytes, at copy speed. What
separates the rungs is only *how* the threads of a warp walk through A.
"""
from __future__ import annotations

import numpy as np
from kernels.compiler import cuda, float64, uint64

from kernels.spec import KernelSpec, Launch, Variant, blocks_for, dot_tolerance
from kernels.warp import SCRATCH, warp_sum

WARP = 32


# --- Rung 1: one thread per row (the textbook kernel) -----------------------------------------
@cuda.jit
def row_per_thread_kernel(A, x, y):
    """y[i] = sum_j A[i, j] * x[j]; thread ``i = cuda.grid(1)`` computes row i alone.

    Uncoalesced: at each step j the 32 threads of a warp read A[i..i+31, j], addresses COLS *
    itemsize bytes apart, so one warp-wide load touches 32 different 32-byte sectors instead of
    one 128-byte line — up to 8x the DRAM traffic the data needs (4-byte floats).
    """
    i = cuda.grid(1)
    if i < y.shape[0]:
        acc = A.dtype.type(0)
        for j in range(A.shape[1]):
            acc += A[i, j] * x[j]
        y[i] = acc


def row_per_thread_launch(size, threads):
    """One thread per row: grid = ceil(ROWS / threads) blocks of ``threads`` threads."""
    rows, _ = size
    return Launch(grid=(blocks_for(rows, threads),), block=(threads,), threads_needed=rows)


# --- Rung 2: one warp per row (coalesced) -----------------------------------------------------
UNROLL = 4  # independent loads each lane keeps in flight per trip through the loop


@cuda.jit
def warp_per_row_kernel(A, x, y):
    """y[r] = sum_j A[r, j] * x[j]; warp ``w`` of the grid computes row ``r = w``.

    Lane l of the warp sums A[r, l], A[r, l + 32], A[r, l + 64], ...: at every step the warp reads
    32 consecutive elements, one fully used 128-byte line (coalesced), so A crosses the memory bus
    once. Each lane issues UNROLL independent loads per trip so enough bytes are in flight to hide
    DRAM latency; the 32 partial sums are then added by warp shuffles (``warps.warp_sum``).
    Block = (threads,), rows per block = threads // 32.

    Indices are uint64: with signed indices Numba adds a "negative index counts from the end"
    check and 64-bit sign handling to every access, which costs more instructions than the FMA.

    Saves: the 32 sectors per warp load of rung 1 shrink to 4 (one 128-byte line). Predicted
    ~20x. Measured on the H100 at 16384x4096 float32, 1024 threads: 2.264 ms (0.119 TB/s) ->
    0.098 ms (2.74 TB/s), 23x; torch.mv 0.101 ms. With signed indices the same kernel took
    0.106 ms (the index checks cost more instructions than the FMAs).
    """
    scratch = cuda.shared.array(SCRATCH, float64)  # used only by the simulator's warp_sum
    lane = uint64(cuda.threadIdx.x % WARP)
    row = uint64(cuda.grid(1) // WARP)
    cols = uint64(A.shape[1])
    acc = A.dtype.type(0)
    if row < uint64(y.shape[0]):  # no early return: every lane must reach warp_sum
        step = uint64(WARP * UNROLL)
        main = cols - cols % step
        j = lane
        while j < main:
            a0 = A[row, j] * x[j]
            a1 = A[row, j + uint64(WARP)] * x[j + uint64(WARP)]
            a2 = A[row, j + uint64(2 * WARP)] * x[j + uint64(2 * WARP)]
            a3 = A[row, j + uint64(3 * WARP)] * x[j + uint64(3 * WARP)]
            acc += (a0 + a1) + (a2 + a3)
            j += step
        j = main + lane
        while j < cols:  # the ragged end of the row
            acc += A[row, j] * x[j]
            j += uint64(WARP)
    total = warp_sum(acc, scratch)
    if lane == 0 and row < uint64(y.shape[0]):
        y[row] = total


def warp_per_row_launch(size, threads):
    """One warp per row: threads // 32 rows per block, grid = ceil(ROWS / rows per block)."""
    rows, _ = size
    rows_per_block = threads // WARP
    return Launch(grid=(blocks_for(rows, rows_per_block),), block=(threads,),
                  threads_needed=rows * WARP)


# --- Rung 3: one warp per row, x staged in shared memory ---------------------------------------
XTILE = 4096  # columns of x held in shared memory at a time (16 KB in float32, 32 KB in float64)


@cuda.jit
def warp_per_row_shared_x_kernel(A, x, y):
    """Rung 2 with x read from shared memory: the block copies x into shared memory XTILE
    columns at a time (one global read of x per block instead of one per warp), then each warp
    computes its row as in rung 2, taking x from shared memory.

    Saves: in rung 2 every warp re-reads all of x through L1/L2, as many load instructions and
    L1 requests as for A itself; here x costs one LDS per product and one global read per block.
    Costs: two barriers per tile, during which a block's warps issue no loads of A.
    Predicted ~5% (x traffic is on-chip, A still streams from DRAM). Measured on the H100 at
    16384x4096 float32: 0.098 -> 0.097 ms at 1024 threads (noise), 0.097 -> 0.102 ms at 256:
    L1 already served x well, so staging it buys nothing once rung 2's index math is lean. A
    lesson in measuring: with signed indices this rung *was* 8% faster than rung 2.
    """
    xs = cuda.shared.array(XTILE, A.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)  # used only by the simulator's warp_sum
    t = uint64(cuda.threadIdx.x)
    lane = t % uint64(WARP)
    row = uint64(cuda.grid(1) // WARP)
    rows = uint64(y.shape[0])
    cols = uint64(A.shape[1])
    acc = A.dtype.type(0)
    t0 = uint64(0)
    while t0 < cols:
        width = min(uint64(XTILE), cols - t0)
        cuda.syncthreads()  # every warp is done with the previous tile
        j = t
        while j < width:
            xs[j] = x[t0 + j]
            j += uint64(cuda.blockDim.x)
        cuda.syncthreads()
        if row < rows:
            step = uint64(WARP * UNROLL)
            main = width - width % step
            j = lane
            while j < main:
                a0 = A[row, t0 + j] * xs[j]
                a1 = A[row, t0 + j + uint64(WARP)] * xs[j + uint64(WARP)]
                a2 = A[row, t0 + j + uint64(2 * WARP)] * xs[j + uint64(2 * WARP)]
                a3 = A[row, t0 + j + uint64(3 * WARP)] * xs[j + uint64(3 * WARP)]
                acc += (a0 + a1) + (a2 + a3)
                j += step
            j = main + lane
            while j < width:
                acc += A[row, t0 + j] * xs[j]
                j += uint64(WARP)
        t0 += uint64(XTILE)
    total = warp_sum(acc, scratch)
    if lane == 0 and row < rows:
        y[row] = total


def _prepare(kernel):
    def prepare(cfg, inputs, outputs):
        launch = kernel[cfg.grid, cfg.block]
        A, x = inputs
        (y,) = outputs
        return lambda: launch(A, x, y)
    return prepare


# --- Reference, sizes, accounting -------------------------------------------------------------
def reference(A, x):
    """NumPy: (A @ x,)."""
    return (A @ x,)


def make_inputs(size, dtype, rng):
    rows, cols = size
    return (rng.standard_normal((rows, cols)).astype(dtype), rng.standard_normal(cols).astype(dtype))


def tolerance(inputs, ref, dtype):
    A, x = inputs
    return [dot_tolerance(A, x, dtype)]


SPEC = KernelSpec(
    name="matvec",
    summary="y = A @ x for a ROWS x COLS row-major matrix",
    size_help="ROWSxCOLS, e.g. 16384x4096",
    size_dims=2,
    default_size=lambda simulator: (48, 80) if simulator else (16384, 4096),
    in_shapes=lambda size: [size, (size[1],)],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [((size[0],), np.dtype(dtype))],
    reference=reference,
    tolerance=tolerance,
    bytes_moved=lambda size, dtype: (size[0] * size[1] + size[0] + size[1]) * np.dtype(dtype).itemsize,
    flops=lambda size: 2 * size[0] * size[1],
    variants={
        "row_per_thread": Variant(
            "row_per_thread", "one thread per row; a warp's loads are COLS apart (uncoalesced)",
            row_per_thread_launch, _prepare(row_per_thread_kernel)),
        "warp_per_row": Variant(
            "warp_per_row", "one warp per row; a warp reads 128 contiguous bytes a step (coalesced), "
            "shuffle reduction", warp_per_row_launch, _prepare(warp_per_row_kernel),
            warp_multiple=True),
        "warp_per_row_shared_x": Variant(
            "warp_per_row_shared_x", "rung 2 with x staged in shared memory once per block",
            warp_per_row_launch, _prepare(warp_per_row_shared_x_kernel), warp_multiple=True),
    },
)
