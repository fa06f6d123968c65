"""Matrix transpose, out = a.T: the lesson of coalescing both ways, and of shared-memory bank conflicts.

a is ROWS x COLS, out is COLS x ROWS, both C-contiguous (row-major), float32 or float64. No
arithmetic at all: each element is read once and written once, so the floor is 2 * ROWS * COLS *
itemsize bytes and the best a rung can do is run at the device's copy speed.

Sources: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory" and "Shared Memory"
(strided accesses, bank conflicts); CUDA C++ Programming Guide, "Shared Memory" of the compute
capabilities (32 banks of 4 bytes); M. Harris, "An Efficient Matrix Transpose in CUDA C/C++",
NVIDIA Developer Blog (2013): the same three rungs, 32 x 32 tiles, 32 x 8 threads a block.

The ladder (each rung's docstring says what it saves):

1. ``naive``: one thread an element. A warp reads 32 neighbours of a row of a (coalesced: 4 sectors
   a request in float32) and writes them into 32 different rows of out (strided by ROWS: 32
   sectors a request, 8x the bytes the stores need).
2. ``tile``: a block moves a 32 x 32 tile through shared memory, so both the global reads and the
   global writes are rows (4 sectors a request each way). Reading the tile by columns makes the 32
   lanes of a warp hit one shared-memory bank: 32-way bank conflicts.
3. ``padded``: the same tile, one column wider (32 x 33): a column of the tile now spreads over all
   32 banks, no conflict.

``lab counters transpose --sim`` shows the sectors per request of rung 1's stores (32.0 against 4.0
for the tiled rungs at 64x96, float32). On a GPU ``lab counters transpose`` should add rung 2's
32-way bank conflicts and rung 3's none; not yet measured on a GPU, nor are the rungs' times.
"""
from __future__ import annotations

import numpy as np
from kernels.compiler import cuda

from kernels.spec import Bounds, KernelSpec, Launch, Variant, blocks_for, launch_once

TILE = 32  # a tile is TILE x TILE elements: one warp wide, so a warp reads or writes one tile row
PADDED = TILE + 1  # the padded tile's row length (a shared array's shape must be a constant: no TILE + 1 inside a kernel)


# --- Rung 1: one thread an element ----------------------------------------------------------------
@cuda.jit
def transpose_naive_kernel(a, out):
    """out[c, r] = a[r, c]; thread (x, y) of the 2-D grid takes column x, row y of a.

    Saves nothing yet: the reads are coalesced (lanes along a row of a), but a warp's 32 stores
    land in 32 rows of out, ROWS elements apart: 32 sectors a store request where 4 would do.
    a: (ROWS, COLS), out: (COLS, ROWS), one float dtype. Threads past either edge stay idle.
    """
    c, r = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[c, r] = a[r, c]


def block_shape(threads):
    """(32, threads // 32): a warp along x (one tile row), the rest of the block along y."""
    return (TILE, max(1, threads // TILE))


def naive_launch(size, threads):
    """grid (ceil(COLS / 32), ceil(ROWS / (threads / 32))) blocks of 32 x threads/32 threads."""
    rows, cols = size
    bx, by = block_shape(threads)
    return Launch(grid=(blocks_for(cols, bx), blocks_for(rows, by)), block=(bx, by), threads_needed=rows * cols)


# --- Rung 2: a tile through shared memory ---------------------------------------------------------
@cuda.jit
def transpose_tile_kernel(a, out):
    """Block (bx, by) moves the 32 x 32 tile of a at rows by*32.., columns bx*32.. to out.

    Saves the strided stores: lanes read a row of the tile from a (coalesced), write it to a row of
    the shared tile, and after the barrier read a *column* of the shared tile and write it as a row
    of out (coalesced: 4 sectors a store request in float32 instead of 32). Costs bank conflicts: a
    column of a 32-wide float32 tile is 32 words 32 words apart, all in one bank, so each such
    shared load is replayed 32 times. Each thread copies 32 / blockDim.y rows of the tile.
    """
    tile = cuda.shared.array((TILE, TILE), out.dtype)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r0, c0 = cuda.blockIdx.y * TILE, cuda.blockIdx.x * TILE
    rows, cols = a.shape
    for j in range(0, TILE, cuda.blockDim.y):
        if ty + j < TILE and r0 + ty + j < rows and c0 + tx < cols:
            tile[ty + j, tx] = a[r0 + ty + j, c0 + tx]
    cuda.syncthreads()
    for j in range(0, TILE, cuda.blockDim.y):  # out's row c0 + ty + j is a's column c0 + ty + j
        if ty + j < TILE and c0 + ty + j < cols and r0 + tx < rows:
            out[c0 + ty + j, r0 + tx] = tile[tx, ty + j]


# --- Rung 3: the tile padded by one column --------------------------------------------------------
@cuda.jit
def transpose_padded_kernel(a, out):
    """Rung 2 with a 32 x 33 shared tile: element (i, j) sits at word 33 i + j, so the 32 lanes
    reading column j touch banks (33 i + j) mod 32 = (i + j) mod 32: all 32 banks, one each.

    Saves the 32-way bank conflicts of rung 2's column reads (one shared load where rung 2 needed
    32), for 32 words of shared memory a block. Global traffic as rung 2: coalesced both ways.
    """
    tile = cuda.shared.array((TILE, PADDED), out.dtype)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r0, c0 = cuda.blockIdx.y * TILE, cuda.blockIdx.x * TILE
    rows, cols = a.shape
    for j in range(0, TILE, cuda.blockDim.y):
        if ty + j < TILE and r0 + ty + j < rows and c0 + tx < cols:
            tile[ty + j, tx] = a[r0 + ty + j, c0 + tx]
    cuda.syncthreads()
    for j in range(0, TILE, cuda.blockDim.y):
        if ty + j < TILE and c0 + ty + j < cols and r0 + tx < rows:
            out[c0 + ty + j, r0 + tx] = tile[tx, ty + j]


def tile_launch(size, threads):
    """One block a 32 x 32 tile: grid (ceil(COLS / 32), ceil(ROWS / 32)) of 32 x threads/32 threads; a
    thread copies ceil(32 / (threads / 32)) elements of its tile column."""
    rows, cols = size
    bx, by = block_shape(threads)
    busy_rows = rows // TILE * by + min(by, rows % TILE)  # thread rows with a row of a to load
    return Launch(grid=(blocks_for(cols, TILE), blocks_for(rows, TILE)), block=(bx, by),
                  threads_needed=cols * busy_rows, note=f"{TILE} x {TILE} tiles, {blocks_for(TILE, by)} rows a thread")


# --- reference, inputs, tolerance, contenders -------------------------------------------------------
def reference(a):
    """NumPy: (a.T as a C-contiguous array,)."""
    return (np.ascontiguousarray(a.T),)


def make_inputs(size, dtype, rng):
    return (rng.standard_normal(size).astype(dtype),)


def tolerance(inputs, ref, dtype):
    """Exact: a transpose copies values, so every element must equal a.T in ``dtype`` bit for bit."""
    exact = np.ascontiguousarray(inputs[0].astype(dtype).T)
    return [Bounds(exact, exact)]


def cupy_transpose(cp, a, out):
    """CuPy: ``cupy.copyto(out, a.T)``, CuPy's elementwise copy of a transposed view."""
    cp.copyto(out[0], a.T)
    return (out[0],)


def torch_transpose(torch, a, out):
    """torch: ``out.copy_(a.t())``, torch's copy kernel for a transposed view."""
    return (out[0].copy_(a.t()),)


RUNGS = {
    "naive": Variant("naive", "one thread an element: coalesced reads, strided writes (32 sectors a store)",
                     naive_launch, launch_once(transpose_naive_kernel), warp_multiple=True),
    "tile": Variant("tile", "32 x 32 tile in shared memory: coalesced both ways, 32-way bank conflicts",
                    tile_launch, launch_once(transpose_tile_kernel), warp_multiple=True),
    "padded": Variant("padded", "the tile padded to 32 x 33: coalesced both ways, no bank conflicts",
                      tile_launch, launch_once(transpose_padded_kernel), warp_multiple=True),
}

SPEC = KernelSpec(
    name="transpose",
    summary="out = a.T for a ROWS x COLS row-major matrix (coalescing both ways, bank conflicts)",
    size_help="ROWSxCOLS, e.g. 8192x8192",
    default_size=lambda simulator: (37, 45) if simulator else (8192, 8192),
    in_shapes=lambda size: [size],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [((size[1], size[0]), np.dtype(dtype))],
    reference=reference,
    tolerance=tolerance,
    bytes_moved=lambda size, dtype: 2 * size[0] * size[1] * np.dtype(dtype).itemsize,  # one read, one write
    flops=lambda size: 0,
    variants=RUNGS,
    order=80,
    contenders={"cupy": (("cupy.copyto(out, a.T)", cupy_transpose),),
                "torch": (("torch out.copy_(a.t())", torch_transpose),)},
    torch_op=dict(schema="(Tensor a) -> Tensor", size_of=lambda a: tuple(a), rungs=("padded", "padded"),
                  doc="a.T, contiguous, of a 2-D a"),
    bench_sizes=(("8192x8192", 256), ("4099x8191", 256)),
    sweep=dict(shapes=("1x1", "1x100003", "100003x1", "1000x1000", "4099x3001", "8192x8192", "32x1048576",
                       "1048576x32"),
               skip=frozenset({"naive"}), against="torch out.copy_(a.t())"),
    # median of 3 runs on the 2-core machine, scaled to the load of the other kernels' costs by vecadd's
    # element_per_thread measured beside them (lab.bench.suite.measure_simcost's formula)
    sim_cost={"naive": 0.06, "tile": 0.1, "padded": 0.13},
    counter_size=(64, 96),
    counter_metrics=("sectors_per_request", "store_sectors_per_request", "bank_conflicts"),
)
