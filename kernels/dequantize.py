"""Per-channel quantization and dequantization, their NumPy references, and the library functions.

Sources: as kernels/quantize.py (the seed's ``quantize_tensor`` / ``dequantize_tensor``, ARENA 2.0
chapter 3; B. Jacob et al., arXiv:1712.05877, the affine scheme x = scale * (q - zero_point)).
The rules for (scale, zero_point) and the codes are kernels/quantize.py's, applied per tensor or per
row (per channel).

Dequantize, the kernel spec of this module (``lab run dequantize``): q uint8 ROWS x COLS and params
ROWS x 2 (scale, zero_point of each row; a per-tensor q is the 1 x N case) give
out[r, c] = (q[r, c] - params[r, 1]) * params[r, 0] in params' dtype. One byte read and itemsize
bytes written an element (5 for float32), one subtract and one multiply: memory-bound, the floor is
that traffic at copy speed. The rungs:

    element_per_thread  one thread an element; finds its row with an integer division
    row_blocks          grid (ROWS, column blocks): a block's threads share one row's params,
                        4 elements a thread (4 byte loads in flight), no division

Per-channel quantization (``lab run quantize_per_channel``, kernels/quantize_per_channel.py) is
``quantize_rows_kernel`` below: one block per row.
"""
from __future__ import annotations

import math

import numpy as np
from kernels.compiler import cuda, float64, uint64

from kernels.quantize import (block_partials_prepare, grid_stride_launch, quant_code,
                              quant_params, reference as quantize_reference)
from kernels.device_limits import current
from kernels.spec import KernelSpec, Launch, Variant, auto_variant, blocks_for, launch_once
from kernels.torch_op import op_error
from kernels.warp import MAX_WARPS, SCRATCH, WARP, block_minmax
from kernels import arrays

# --- Per row (per channel): one block per row, one launch ------------------------------------------
@cuda.jit
def quantize_rows_kernel(x, q, params):
    """Row r of x (ROWS x COLS) gets its own (scale, zero_point): block ``r`` reduces the row's min
    and max (thread t reads columns t, t + blockDim, ...: coalesced), computes the parameters,
    writes params[r] = (scale, zero_point) and quantizes the row (the second read of the row mostly
    hits L1/L2). Grid = (ROWS,), block = (threads,), whole warps. The rules are the per-tensor ones
    applied to each row; a constant row gets scale = 1.0.
    """
    scratch = cuda.shared.array(SCRATCH, float64)
    slot_lo = cuda.shared.array(MAX_WARPS, float64)
    slot_hi = cuda.shared.array(MAX_WARPS, float64)
    row = cuda.blockIdx.x
    cols = x.shape[1]
    lo = x.dtype.type(math.inf)
    hi = -lo
    for j in range(cuda.threadIdx.x, cols, cuda.blockDim.x):
        lo = min(lo, x[row, j])
        hi = max(hi, x[row, j])
    lo, hi = block_minmax(lo, hi, slot_lo, slot_hi, scratch)
    scale, zero_point = quant_params(lo, hi)
    if cuda.threadIdx.x == 0:
        params[row, 0] = scale
        params[row, 1] = zero_point
    inv_scale = x.dtype.type(1.0 / scale)
    zp = x.dtype.type(zero_point)
    for j in range(cuda.threadIdx.x, cols, cuda.blockDim.x):
        q[row, j] = quant_code(x[row, j], inv_scale, zp)


# --- Dequantize rung 1: one thread per element ------------------------------------------------------------
@cuda.jit
def dequantize_kernel(q, params, out):
    """out[i] = (q[i] - zero_point) * scale with (scale, zero_point) = params; thread ``i =
    cuda.grid(1)`` does element i (the seed's ``scale * (q.float() - zero_point)``, in out's dtype)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = (out.dtype.type(q[i]) - params[1]) * params[0]


@cuda.jit
def dequantize_rows_kernel(params, q, out):
    """out[r, c] = (q[r, c] - params[r, 1]) * params[r, 0]; thread ``i = cuda.grid(1)`` does the
    i-th element in row-major order (r = i // COLS, c = i % COLS)."""
    i = cuda.grid(1)
    cols = out.shape[1]
    if i < out.shape[0] * cols:
        r = i // cols
        c = i - r * cols
        out[r, c] = (out.dtype.type(q[r, c]) - params[r, 1]) * params[r, 0]


# --- Dequantize rung 2: a block's threads share a row --------------------------------------------------
PER_THREAD = 4


@cuda.jit
def dequantize_row_blocks_kernel(params, q, out):
    """out[r, c] = (q[r, c] - params[r, 1]) * params[r, 0]; block (r, b) = (blockIdx.x, blockIdx.y)
    covers columns [b * 4T, (b + 1) * 4T) of row r, thread t columns t, t + T, t + 2T, t + 3T
    (T = threads a block; each of a warp's byte loads covers 32 consecutive bytes).

    Saves over element_per_thread: the 64-bit integer division that finds the row (tens of
    instructions an element) and 3 of every 4 loads of the row's params; 4 loads in flight a thread.
    Predicted on the H100 at 4096 x 16384 float32 (336 MB): both within ~10% of copy speed (the
    division is hidden behind memory), row_blocks the faster by a few %; measured in the shape
    sweep (docs/benchmarks.md).
    """
    row = uint64(cuda.blockIdx.x)
    T = uint64(cuda.blockDim.x)
    c = uint64(cuda.blockIdx.y) * T * uint64(PER_THREAD) + uint64(cuda.threadIdx.x)
    cols = uint64(out.shape[1])
    scale = params[row, 0]
    zp = params[row, 1]
    if c + uint64(3) * T < cols:
        q0, q1, q2, q3 = q[row, c], q[row, c + T], q[row, c + uint64(2) * T], q[row, c + uint64(3) * T]
        out[row, c] = (out.dtype.type(q0) - zp) * scale
        out[row, c + T] = (out.dtype.type(q1) - zp) * scale
        out[row, c + uint64(2) * T] = (out.dtype.type(q2) - zp) * scale
        out[row, c + uint64(3) * T] = (out.dtype.type(q3) - zp) * scale
    else:
        for k in range(PER_THREAD):
            j = c + uint64(k) * T
            if j < cols:
                out[row, j] = (out.dtype.type(q[row, j]) - zp) * scale


def element_launch(size, threads):
    """One thread an element: grid = ceil(ROWS * COLS / threads)."""
    rows, cols = size
    return Launch(grid=(blocks_for(rows * cols, threads),), block=(threads,), threads_needed=rows * cols)


def row_blocks_launch(size, threads):
    """grid (ROWS, ceil(COLS / (4 * threads))), block (threads,)."""
    rows, cols = size
    return Launch(grid=(rows, blocks_for(cols, PER_THREAD * threads)), block=(threads,),
                  threads_needed=rows * blocks_for(cols, PER_THREAD))


def choose(size):
    """(rung, threads, why): row_blocks at 256 threads when a row fills at least one block's 1024
    elements, else one thread an element (short rows would leave row_blocks' threads idle);
    at most 65535 column blocks a row (grid y)."""
    rows, cols = size
    if cols >= PER_THREAD * 256:
        return "row_blocks", 256, "rows of at least 1024 elements: a block per row segment"
    return "element_per_thread", 256, "short rows: one thread an element"


def quantize_per_channel_reference(x):
    """NumPy, per row of a ROWS x COLS x: (q uint8[ROWS, COLS], params [ROWS, 2] in x's dtype)."""
    q = np.empty(x.shape, np.uint8)
    params = np.empty((x.shape[0], 2), x.dtype)
    for r, row in enumerate(x):
        q[r], params[r] = quantize_reference(row)
    return q, params


def dequantize_per_channel_reference(q, params, dtype=np.float64):
    """NumPy: out[r] = (q[r] - params[r, 1]) * params[r, 0] in ``dtype``."""
    p = np.asarray(params, dtype)
    return (q.astype(dtype) - p[:, 1:2]) * p[:, 0:1]


# --- Library functions: device arrays in, device arrays out ---------------------------------------------
def _device(a):
    """A NumPy array copied to the device; a torch tensor or CuPy array viewed (kernels.arrays.device_arg)."""
    return cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else arrays.device_arg(a)


def _check_threads(threads):
    top = current().max_threads_per_block  # 1024 on every CUDA GPU so far
    if threads % WARP or not 0 < threads <= top:
        raise ValueError(f"threads={threads}: must be a multiple of {WARP} in 32..{top}")


def quantize_per_tensor(x, threads=256):
    """Quantize a 1-D float32/float64 array with one (scale, zero_point); the block_partials rung.

    x: NumPy or device array (Numba, a CUDA tensor, CuPy), N >= 1 elements. Returns Numba device
    arrays (q uint8[N], params x.dtype[2] = (scale, zero_point)). ValueError for an empty x or threads not a multiple of 32.
    """
    _check_threads(threads)
    x = _device(x)
    if x.ndim != 1 or x.shape[0] == 0:
        raise ValueError(f"x must be 1-D and non-empty, got shape {x.shape}")
    q = cuda.device_array(x.shape, np.uint8)
    params = cuda.device_array(2, x.dtype)
    cfg = grid_stride_launch(x.shape, threads)
    block_partials_prepare(cfg, [x], [q, params])()
    return q, params


def dequantize_per_tensor(q, params, threads=256):
    """x' = (q - zero_point) * scale: q uint8[N], params (scale, zero_point) as quantize_per_tensor
    returns them (NumPy or device). Returns a device array of params' dtype, one thread an element."""
    q, params = _device(q), _device(params)
    out = cuda.device_array(q.shape, params.dtype)
    dequantize_kernel[blocks_for(q.shape[0], threads), threads](q, params, out)
    return out


def quantize_per_channel(x, threads=256):
    """Quantize each row of a ROWS x COLS float32/float64 array with its own (scale, zero_point).

    Returns device arrays (q uint8[ROWS, COLS], params x.dtype[ROWS, 2]); one block per row
    (quantize_rows_kernel). ValueError for an empty x or threads not a multiple of 32.
    """
    _check_threads(threads)
    x = _device(x)
    if x.ndim != 2 or min(x.shape) == 0:
        raise ValueError(f"x must be 2-D and non-empty, got shape {x.shape}")
    q = cuda.device_array(x.shape, np.uint8)
    params = cuda.device_array((x.shape[0], 2), x.dtype)
    quantize_rows_kernel[x.shape[0], threads](x, q, params)
    return q, params


def dequantize_per_channel(q, params, threads=256):
    """out[r] = (q[r] - params[r, 1]) * params[r, 0]: q uint8[ROWS, COLS], params [ROWS, 2].
    Returns a device array of params' dtype; one thread an element."""
    q, params = _device(q), _device(params)
    out = cuda.device_array(q.shape, params.dtype)
    dequantize_rows_kernel[blocks_for(q.size, threads), threads](params, q, out)
    return out


def make_inputs(size, dtype, rng):
    """(params ROWS x 2, q ROWS x COLS uint8): random rows (quantize's spread and offset, one per row)
    quantized by the float64 reference, params stored in ``dtype``."""
    rows, cols = size
    spread = 10 ** rng.uniform(-2, 2, (rows, 1))
    x = rng.standard_normal((rows, cols)) * spread + spread * rng.uniform(-1, 1, (rows, 1))
    q, params = quantize_per_channel_reference(x)
    return params.astype(dtype), q


def reference(params, q):
    """NumPy: ((q - params[:, 1:2]) * params[:, 0:1],) in params' dtype."""
    return (dequantize_per_channel_reference(q, params, params.dtype),)


def tolerance(inputs, ref, dtype):
    # q - zero_point is exact (small integers); the product rounds once: half an ulp, eps for margin.
    return [np.finfo(dtype).eps * np.abs(ref[0]) + float(np.finfo(dtype).tiny)]


def cupy_dequantize(cp, params, q, out):
    """CuPy: per-row (q - zero_point) * scale as two broadcast elementwise kernels."""
    return (cp.multiply(q.astype(params.dtype) - params[:, 1:2], params[:, 0:1], out=out[0]),)


def torch_dequantize(torch, params, q, out):
    """torch: per-row (q - zero_point) * scale, a subtract (exact: small integers) and a multiply that
    rounds once, as the reference does, so torch and NumPy agree to the last bit."""
    return (torch.mul(q.to(params.dtype) - params[:, 1:2], params[:, 0:1], out=out[0]),)


# --- torch.ops.lab.dequantize (registered by torch_bridge.lab_ops from the spec's torch_op) ----------
def op_check(torch, q, scale, zero_point):
    for name, t in (("scale", scale), ("zero_point", zero_point)):
        if t.numel() != 1:
            raise op_error("dequantize", f"{name} must hold 1 value, got shape {tuple(t.shape)}")


def op_forward(torch, bridge, q, scale, zero_point):
    """x' = (q - zero_point) * scale, in scale's dtype, q's shape; one thread an element."""
    q = q.contiguous()
    out = torch.empty(q.shape, dtype=scale.dtype, device=q.device)
    n = q.numel()
    if n:
        params = torch.stack([scale.reshape(()), zero_point.reshape(())])
        blocks = math.ceil(n / bridge.threads)
        bridge.launch(dequantize_kernel, (blocks,), (bridge.threads,), q.view(-1), params, out.view(-1))
    return out


def op_fake(torch, q, scale, zero_point):
    return torch.empty(q.shape, dtype=scale.dtype, device=q.device)


RUNGS = {
    "element_per_thread": Variant(
        "element_per_thread", "one thread an element; the row by integer division",
        element_launch, launch_once(dequantize_rows_kernel)),
    "row_blocks": Variant(
        "row_blocks", "grid (rows, column blocks), 4 elements a thread, the row's params once a thread",
        row_blocks_launch, launch_once(dequantize_row_blocks_kernel)),
}

SPEC = KernelSpec(
    name="dequantize",
    summary="x' = (q - zero_point) * scale per row: q uint8 ROWS x COLS, params ROWS x 2",
    size_help="ROWSxCOLS, e.g. 4096x16384 (1xN: one per-tensor (scale, zero_point))",
    default_size=lambda simulator: (5, 70) if simulator else (4096, 16384),
    in_shapes=lambda size: [(size[0], 2), size],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [(size, np.dtype(dtype))],
    reference=reference,
    tolerance=tolerance,
    bytes_moved=lambda size, dtype: size[0] * size[1] * (1 + np.dtype(dtype).itemsize)
    + size[0] * 2 * np.dtype(dtype).itemsize,
    flops=lambda size: 2 * size[0] * size[1],
    variants={**RUNGS, "auto": auto_variant(choose, RUNGS, "row_blocks for long rows, else one thread an element", kernel="dequantize")},
    order=60,
    contenders={"cupy": (("cupy (q - zero_point) * scale", cupy_dequantize),),
                "torch": (("torch (q - zero_point) * scale", torch_dequantize),)},
    # torch.ops.lab.dequantize(q, scale, zero_point) takes per-tensor parameters, not the spec's
    # per-row ones: an op, not a contender
    torch_op=dict(contender=False, doc="(q - zp) * s in s.dtype, of q.shape",
                  schema="(Tensor q, Tensor scale, Tensor zero_point) -> Tensor", fixed_dtypes={"q": "uint8"},
                  check=op_check, forward=op_forward, fake=op_fake, no_grad="rounding is flat almost everywhere"),
    bench_sizes=(("4096x16384", 256),),
    sweep=dict(shapes=("1x1", "1x1000003", "100000x33", "4096x1024", "1024x16384", "4096x16384", "3x5000001",
                       "20000x4097")),
    sim_cost={"element_per_thread": 0.05, "row_blocks": 0.05, "auto": 0.05},
    counter_size=(8, 256),
    counter_metrics=("dram_bytes_ratio", "sectors_per_request"),
)
