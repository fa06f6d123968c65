"""Per-channel (per-row) uint8 quantization as a kernel spec: ``lab run quantize_per_channel``.

Each row r of a ROWS x COLS float32/float64 x gets its own (scale, zero_point), by the per-tensor
rules of kernels/quantize.py; the kernel, ``quantize_rows_kernel`` (kernels/dequantize.py), gives
each row a block: the block reduces the row's min and max (block_minmax), computes the parameters
and writes the row's codes (the second read of the row mostly hits L1/L2). Outputs: q uint8
ROWS x COLS and params ROWS x 2 (scale, zero_point) in x's dtype. x read about once (twice for rows
that fall out of cache), one byte written an element: the floor is (itemsize + 1) bytes an element.
"""
from __future__ import annotations

import numpy as np

from kernels.dequantize import quantize_per_channel_reference, quantize_rows_kernel
from kernels.spec import KernelSpec, Launch, Variant, auto_variant, launch_once


def block_per_row_launch(size, threads):
    """One block per row: grid (ROWS,), block (threads,), whole warps."""
    rows, cols = size
    return Launch(grid=(rows,), block=(threads,), threads_needed=rows * min(cols, threads))


def choose(size):
    """(rung, threads, why): the one rung, with the block sized to the row: the smallest of 32, 64,
    ..., 256 threads that gives each thread at most 8 elements (short rows leave fewer idle lanes)."""
    cols = size[1]
    t = 32
    while t < 256 and t * 8 < cols:
        t *= 2
    return "block_per_row", t, "block sized to the row, up to 8 elements a thread"


def make_inputs(size, dtype, rng):
    """Random rows, each with its own spread (1e-2..1e2) and offset (kernels/quantize.py's rule)."""
    rows, cols = size
    spread = 10 ** rng.uniform(-2, 2, (rows, 1))
    return ((rng.standard_normal((rows, cols)) * spread + spread * rng.uniform(-1, 1, (rows, 1))).astype(dtype),)


def tolerance(inputs, ref, dtype):
    # As per tensor (kernels/quantize.py): codes within 1; each row's scale within a few ulps, the
    # zero point exact.
    _, params = ref
    return [1.0, np.column_stack([4 * np.finfo(dtype).eps * params[:, 0], np.zeros(len(params))])]


RUNGS = {
    "block_per_row": Variant(
        "block_per_row", "one block a row: min/max (block_minmax), parameters, codes; one launch",
        block_per_row_launch, launch_once(quantize_rows_kernel), warp_multiple=True),
}

SPEC = KernelSpec(
    name="quantize_per_channel",
    summary="per-row uint8 quantization: each row its own (scale, zero_point)",
    size_help="ROWSxCOLS, e.g. 4096x16384",
    default_size=lambda simulator: (5, 70) if simulator else (4096, 16384),
    in_shapes=lambda size: [size],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [(size, np.dtype(np.uint8)), ((size[0], 2), np.dtype(dtype))],
    reference=quantize_per_channel_reference,
    tolerance=tolerance,
    bytes_moved=lambda size, dtype: size[0] * size[1] * (np.dtype(dtype).itemsize + 1),
    flops=lambda size: 4 * size[0] * size[1],
    variants={**RUNGS, "auto": auto_variant(choose, RUNGS, "the one rung, block sized to the row", kernel="quantize_per_channel")},
    order=70,
    no_contenders="torch.quantize_per_channel and a CuPy twin are not yet checked on a GPU "
                  "against the strict code check (kernels/quantize.py)",
    bench_sizes=(("4096x16384", 256),),
    sweep=dict(shapes=("1x1", "100000x33", "4096x1024", "1024x16384", "4096x16384", "3x5000001", "20000x4097",
                       "262144x64")),
    sim_cost={"block_per_row": 0.28, "auto": 0.18},
    counter_size=(8, 256),
    counter_metrics=("dram_bytes_ratio",),
)
