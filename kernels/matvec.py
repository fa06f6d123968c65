"""Matrix-vector product, y = A @ x, from the textbook kernel to a coalesced one.

Source: the seed notebook "PyTorch handling of GPU devices" (``cu_mv_product``, one thread per row);
CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; CUDA C++ Programming Guide,
"Warp Shuffle Functions".

A is ROWS x COLS, C-contiguous (row-major), x has COLS entries, y has ROWS. Every element of A is
used once, so the floor is reading A once: ROWS * COLS * itemsize bytes, at copy speed. What
separates the rungs is only *how* the threads of a warp walk through A.

What the hardware did (Nsight Compute, H100, ``lab counters matvec``, 16384 x 4096
float32, one call each): row_per_thread fetches 16.5 sectors per global load request (a warp's 32
rows are 16 KB apart) and runs at 14% of DRAM peak; warp_per_row and every later rung fetch 4.0
(128 contiguous bytes a request), read 1.00x the minimum DRAM bytes and run at 78-85% of DRAM peak.
"""
from __future__ import annotations

import numpy as np
from kernels.arrays import empty_like
from kernels.compiler import cuda, float64, uint64

from kernels.spec import (KernelSpec, plural, Launch, Variant, auto_variant, blocks_for, dot_reference, dot_tolerances,
                          launch_once, sm_count, split_columns, standard_normal)
from kernels.warp import MAX_WARPS, SCRATCH, WARP, block_sum, group_sum, lanes_for, warp_sum


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


# --- Rung 3b: a row per group of G lanes, for short rows --------------------------------------------
# One warp a row of 32 columns gives each lane one load and then 5 shuffles for a single product.
# A group of G = COLS / 4 lanes (a power of two, kernels/warp.lanes_for) a row gives each lane ~4
# loads in flight and log2(G) shuffles; a warp then reads 32 / G rows at once, still whole sectors.
_GROUP = {}


def group_per_row_kernel(width):
    """y[r] = A[r, :] @ x with G = ``width`` lanes a row (compiled per G): thread i of the grid is
    lane i % G of row i // G, summing columns lane, lane + G, ... (UNROLL in flight), group_sum."""
    if width in _GROUP:
        return _GROUP[width]
    G = width

    @cuda.jit
    def group_per_row(A, x, y):
        scratch = cuda.shared.array(SCRATCH, float64)
        i = uint64(cuda.grid(1))
        lane = i % uint64(G)
        row = i // uint64(G)
        cols = uint64(A.shape[1])
        acc = A.dtype.type(0)
        if row < uint64(y.shape[0]):
            step = uint64(G * UNROLL)
            main = cols - cols % step
            j = lane
            while j < main:
                a0 = A[row, j] * x[j]
                a1 = A[row, j + uint64(G)] * x[j + uint64(G)]
                a2 = A[row, j + uint64(2 * G)] * x[j + uint64(2 * G)]
                a3 = A[row, j + uint64(3 * G)] * x[j + uint64(3 * G)]
                acc += (a0 + a1) + (a2 + a3)
                j += step
            j = main + lane
            while j < cols:
                acc += A[row, j] * x[j]
                j += uint64(G)
        total = group_sum(acc, scratch, G)
        if lane == 0 and row < uint64(y.shape[0]):
            y[row] = total

    _GROUP[width] = group_per_row
    return group_per_row


def group_per_row_launch(size, threads):
    """threads / G rows a block, G = lanes_for(COLS, 4) lanes a row."""
    rows, cols = size
    g = lanes_for(cols, UNROLL)
    return Launch(grid=(blocks_for(rows * g, threads),), block=(threads,), threads_needed=rows * g,
                  note=f"{plural(g, 'lane')} a row, {plural(threads // g, 'row')} a block")


def group_per_row_prepare(cfg, inputs, outputs):
    """Rung 3b. Saves over warp_per_row at short rows: idle lanes and shuffles (100,000 x 32: one
    product and 5 shuffles a lane -> 4 products and 3 shuffles). Predicted on the H100 at
    100,000 x 32 float32 (12.8 MB): from 0.019 ms (warp_per_row) to ~0.010 ms, torch.mv 0.013 ms.
    Measured on the H100 (256 threads): 0.0090 ms (warp_per_row 0.0196, torch.mv 0.0125); at
    16384 x 4096 (G = 32, warp_per_row's work at 256 threads) 0.0937 ms against 0.0969."""
    A, x = inputs
    (y,) = outputs
    launch = group_per_row_kernel(lanes_for(A.shape[1], UNROLL))[cfg.grid, cfg.block]
    return lambda: launch(A, x, y)


# --- Rung 4: split-K, several blocks per row, then a reduction ------------------------------------
# Rungs 2-3 give a row one warp. With a handful of rows (4 rows x 100,000 columns) that is 4 warps on
# a GPU that holds 132 x 64: the SMs idle and each warp streams 400 KB alone, latency-bound. Split-K
# cuts each row into chunks, one block per (row, chunk), so every SM gets blocks; each block writes
# one partial sum, and a second small launch adds a row's partials (deterministic, no atomics).
SPLIT_BLOCKS_PER_SM = 4  # the split aims for this many blocks on every SM


def split_k_chunk(size, threads):
    """(chunk, splits): columns per block and blocks per row (spec.split_columns: about
    SPLIT_BLOCKS_PER_SM blocks an SM, no chunk shorter than threads * UNROLL columns)."""
    return split_columns(size[0], size[1], threads, UNROLL, SPLIT_BLOCKS_PER_SM)


@cuda.jit
def split_k_partial_kernel(A, x, partials, chunk):
    """partials[r, s] = sum over j in chunk s of A[r, j] * x[j]; block (r, s) = (blockIdx.x,
    blockIdx.y) computes it, thread t taking j = c0 + t, c0 + t + T, ... (T = threads per block,
    coalesced, UNROLL loads in flight), then a block_sum. partials: (ROWS, splits), A's dtype."""
    partial = cuda.shared.array(MAX_WARPS, A.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)  # used only by the simulator's warp_sum
    row = uint64(cuda.blockIdx.x)
    t = uint64(cuda.threadIdx.x)
    T = uint64(cuda.blockDim.x)
    cols = uint64(A.shape[1])
    c0 = uint64(cuda.blockIdx.y) * uint64(chunk)
    c1 = min(c0 + uint64(chunk), cols)
    step = T * uint64(UNROLL)
    main = c1 - (c1 - c0) % step
    acc = A.dtype.type(0)
    j = c0 + t
    while j < main:
        a0 = A[row, j] * x[j]
        a1 = A[row, j + T] * x[j + T]
        a2 = A[row, j + uint64(2) * T] * x[j + uint64(2) * T]
        a3 = A[row, j + uint64(3) * T] * x[j + uint64(3) * T]
        acc += (a0 + a1) + (a2 + a3)
        j += step
    while j < c1:  # the ragged end of the chunk
        acc += A[row, j] * x[j]
        j += T
    total = block_sum(acc, partial, scratch)
    if t == 0:
        partials[row, cuda.blockIdx.y] = total


@cuda.jit
def split_k_reduce_kernel(partials, y):
    """y[r] = sum_s partials[r, s]; warp ``w`` of the grid sums row w's partials (lanes strided by
    32, coalesced), warp_sum. Launch: REDUCE_THREADS a block, one warp a row."""
    scratch = cuda.shared.array(SCRATCH, float64)
    lane = cuda.threadIdx.x % WARP
    row = cuda.grid(1) // WARP
    acc = partials.dtype.type(0)
    if row < y.shape[0]:
        for s in range(lane, partials.shape[1], WARP):
            acc += partials[row, s]
    total = warp_sum(acc, scratch)
    if lane == 0 and row < y.shape[0]:
        y[row] = total


REDUCE_THREADS = 128


def split_k_launch(size, threads, params=None):
    """The partial-sum launch: grid (ROWS, splits), block (threads,); then a reduction launch of
    ceil(ROWS / 4) blocks of 128 threads (the note says so). Tunable (``lab tune``):
    ``blocks_per_sm``, the blocks an SM the split aims for (default SPLIT_BLOCKS_PER_SM)."""
    rows, cols = size
    per_sm = (params or {}).get("blocks_per_sm", SPLIT_BLOCKS_PER_SM)
    if not isinstance(per_sm, int) or per_sm < 1:
        raise ValueError(f"blocks_per_sm={per_sm!r}: a positive count")
    chunk, splits = split_columns(rows, cols, threads, UNROLL, per_sm)
    return Launch(grid=(rows, splits), block=(threads,), threads_needed=rows * min(cols, splits * threads),
                  note=f"{plural(splits, 'block')} a row of {plural(chunk, 'column')} each, then a reduction launch "
                  f"({plural(blocks_for(rows, REDUCE_THREADS // WARP), 'block')} of {REDUCE_THREADS})",
                  params=(("blocks_per_sm", per_sm), ("chunk", chunk)) if per_sm != SPLIT_BLOCKS_PER_SM else ())


def split_k_prepare(cfg, inputs, outputs):
    """Rung 4: 2 launches. Saves: idle SMs on few, long rows (4 x 100,000: 4 warps -> ~528 blocks).
    Costs: a second launch and ROWS x splits partials (a few KB).
    Predicted on the H100: at 4 x 100,000 float32 (1.6 MB, 0.6 us at copy speed) launch-bound, ~5 us
    for the two launches against ~60 us for warp_per_row (one warp streaming 400 KB); at 16384 x 4096
    no better than warp_per_row (auto does not pick it there).
    Measured on the H100 (float32, 256 threads): 4 x 100,000 0.0100 ms (warp_per_row 0.312 ms, 31x;
    torch.mv 0.0097), 16 x 262,144 0.0168 ms (0.811; torch 0.0144), 64 x 65,536 0.0146 ms (0.204;
    torch 0.0153), 16384 x 4096 0.098 ms (warp_per_row 0.097): launch-bound as predicted.
    """
    A, x = inputs
    (y,) = outputs
    rows = A.shape[0]
    chunk, splits = split_k_chunk(A.shape, cfg.block[0])
    if "chunk" in cfg.param:  # a tuned split: the launch math's plan
        chunk, splits = cfg.param["chunk"], cfg.grid[1]
    partials = empty_like(A, (rows, splits), A.dtype)  # scratch, allocated once, by A's library
    partial = split_k_partial_kernel[cfg.grid, cfg.block]
    reduce = split_k_reduce_kernel[blocks_for(rows, REDUCE_THREADS // WARP), REDUCE_THREADS]

    def enqueue():
        partial(A, x, partials, chunk)
        reduce(partials, y)
    return enqueue


# --- auto: the launch heuristic -------------------------------------------------------------------
def choose(size):
    """(rung, threads, why) for a ROWS x COLS matrix, like cuBLAS's gemv dispatch by shape:

    * few rows (fewer than 8 warps' worth a SM, i.e. ROWS < 8 x SMs) and long rows (COLS >= 2048):
      split_k at 256 threads: one warp a row would leave most SMs idle;
    * short rows (COLS < 128): group_per_row at 256 threads (COLS / 4 lanes a row);
    * otherwise warp_per_row, with the largest block (256, 128 or 64 threads) that still gives every
      SM at least 2 blocks (a 1024-thread block of 32 rows left SMs idle on 1000-row matrices).
    """
    rows, cols = size
    sms = sm_count()
    if rows < 8 * sms and cols >= 2048:
        return "split_k", 256, f"ROWS < 8 x {plural(sms, 'SM')} and COLS >= 2048: several blocks a row"
    if cols < 4 * WARP:
        return "group_per_row", 256, f"COLS < 128: {plural(lanes_for(cols, UNROLL), 'lane')} a row"
    for t in (256, 128):
        if blocks_for(rows, t // WARP) >= 2 * sms:
            return "warp_per_row", t, "one warp a row, at least 2 blocks an SM"
    return "warp_per_row", 64, "one warp a row, small blocks to spread the rows"


# --- Reference, sizes, accounting -------------------------------------------------------------
def reference(A, x):
    """NumPy: (A @ x,)."""
    return (A @ x,)


def reference64(A, x):
    """The float64 reference (A @ x in float64,) without a float64 copy of A (kernels.spec.dot_reference)."""
    return (dot_reference(A, x),)


def make_inputs(size, dtype, rng):
    """A (ROWS, COLS) and x (COLS,): standard normals drawn in ``dtype`` itself (NumPy's float32
    ziggurat for float32: a 16384 x 4096 A in a third of the time of drawing float64 and rounding;
    a large A in parallel streams, kernels.spec.standard_normal)."""
    rows, cols = size
    dtype = np.dtype(dtype)
    if dtype in (np.float32, np.float64):
        return standard_normal(rng, (rows, cols), dtype), rng.standard_normal(cols, dtype=dtype)
    return (rng.standard_normal((rows, cols)).astype(dtype), rng.standard_normal(cols).astype(dtype))


def cupy_matvec(cp, A, x, out):
    """CuPy: ``cupy.matmul(A, x, out=y)``, cuBLAS's GEMV."""
    return (cp.matmul(A, x, out=out[0]),)


def torch_matvec(torch, A, x, out):
    """torch: ``torch.mv(A, x, out=y)``, cuBLAS's GEMV."""
    return (torch.mv(A, x, out=out[0]),)


RUNGS = {
    "row_per_thread": Variant(
        "row_per_thread", "one thread per row; a warp's loads are COLS apart (uncoalesced)",
        row_per_thread_launch, launch_once(row_per_thread_kernel)),
    "warp_per_row": Variant(
        "warp_per_row", "one warp per row; a warp reads 128 contiguous bytes a step (coalesced), "
        "shuffle reduction", warp_per_row_launch, launch_once(warp_per_row_kernel),
        warp_multiple=True),
    "warp_per_row_shared_x": Variant(
        "warp_per_row_shared_x", "rung 2 with x staged in shared memory once per block",
        warp_per_row_launch, launch_once(warp_per_row_shared_x_kernel), warp_multiple=True),
    "group_per_row": Variant(
        "group_per_row", "a row per group of G <= 32 lanes (G = COLS / 4): for short rows",
        group_per_row_launch, group_per_row_prepare, warp_multiple=True),
    "split_k": Variant(
        "split_k", "several blocks a row (chunks of columns), then a reduction launch: for few long rows",
        split_k_launch, split_k_prepare, warp_multiple=True, tunables={"blocks_per_sm": (2, 4, 8, 16)},
        launch_with=split_k_launch),
}

SPEC = KernelSpec(
    name="matvec",
    summary="y = A @ x for a ROWS x COLS row-major matrix",
    size_help="ROWSxCOLS, e.g. 16384x4096",
    # simulator: 8 rows x 100 columns. `lab run matvec --threads 1024` (the quick start) simulates a block
    # of 1024 threads for each rung and split_k's one block a row: 13 blocks, 6 s on an idle 2-core CPU,
    # 13-18 s on a loaded one (12 rows: up to 20 s). Still several rows, idle threads in every
    # 1024-thread block, and COLS < 128 (auto picks group_per_row).
    default_size=lambda simulator: (8, 100) if simulator else (16384, 4096),
    in_shapes=lambda size: [size, (size[1],)],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [((size[0],), np.dtype(dtype))],
    reference=reference,
    reference64=reference64,
    tolerance=dot_tolerances,
    bytes_moved=lambda size, dtype: (size[0] * size[1] + size[0] + size[1]) * np.dtype(dtype).itemsize,
    flops=lambda size: 2 * size[0] * size[1],
    variants={**RUNGS, "auto": auto_variant(
        choose, RUNGS, "split_k for few long rows, else warp_per_row with threads by row count (choose())", kernel="matvec")},
    order=20,
    contenders={"cupy": (("cupy.matmul (cuBLAS)", cupy_matvec),), "torch": (("torch.mv (cuBLAS)", torch_matvec),)},
    torch_op=dict(rungs=("warp_per_row", "warp_per_row"), doc="A @ x, A (ROWS, COLS), x (COLS,); autograd"),
    bench_sizes=(("16384x4096", 1024), ("16384x4096", 256)),
    targets=(dict(size=(16384, 4096), against="torch.mv (cuBLAS)", bound=1.0),),
    sweep=dict(shapes=("1x1", "4x100000", "16x262144", "64x65536", "1000x1000", "2047x3001", "4096x4096",
                       "16384x4096", "100000x32", "131072x256"),
               skip=frozenset({"row_per_thread"}), against="torch.mv (cuBLAS)", memory_bound=True),
    sim_cost={"row_per_thread": 0.05, "warp_per_row": 0.05, "warp_per_row_shared_x": 0.13,
              "group_per_row": 0.05, "split_k": 0.17, "auto": 0.05},
    tune_shapes={"simulator": ("8x100",)},
    counter_size=(32, 256),
    counter_metrics=("sectors_per_request", "dram_bytes_ratio"),
)
