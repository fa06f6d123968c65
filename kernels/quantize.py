"""Affine uint8 quantization, q = clamp(round(x / scale + zero_point), 0, 255), per tensor and per row.

Sources: the seed notebook ARENA 2.0 chapter 3, "Quantization from first principles"
(``quantize_tensor`` / ``dequantize_tensor``, callummcdougall/ARENA_2.0); B. Jacob et al.,
"Quantization and Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference",
arXiv:1712.05877 (2017) (the affine scheme x = scale * (q - zero_point)); CUDA C++ Programming
Guide, "Warp Shuffle Functions", "Atomic Functions" and "Synchronization Functions".

The rules, the seed's with two decisions written down (every implementation here, the NumPy
reference, the kernels and the torch/CuPy contenders, follows them):

    qmin, qmax = 0, 255;  lo, hi = min(x), max(x)
    scale      = (hi - lo) / (qmax - qmin),  or 1.0 when hi == lo     (the seed divides by zero)
    zero_point = int(clamp(qmin - lo / scale, qmin, qmax))            (int() truncates, as in the seed)
    q          = round(clamp(x / scale + zero_point, qmin, qmax))     (round half to even)
    dequantize: x' = (q - zero_point) * scale

* Clamp, then round, as the seed does. The bounds are integers and rounding is monotone, so
  round-then-clamp gives the same codes; the kernels use the seed's order anyway.
* Round half to even, like ``np.round`` and ``torch.round`` (the seed's ``round_()``).
* scale and zero_point are computed in float64 from lo and hi. The min and max of floats are exact
  (a comparison never rounds), so every implementation that does this gets bitwise the same two
  parameters whatever order it reduced in. Only x / scale is done in the input dtype; the kernels
  multiply by 1 / scale (one FFMA instead of a division), which can move a value that lies within a
  few ulps of a .5 boundary to the other side: there either neighbouring code is accepted, and
  everywhere else the code must be exact (:func:`tolerance`).
* A constant tensor (hi == lo) gets scale = 1.0: finite, and codes = round(clamp(c + zero_point)).
* float32 inputs whose range hi - lo is below about 255 / 3.4e38 (~7.5e-37) overflow 1 / scale in
  float32 and are not supported; NaN inputs are not supported either.

Round-trip error, the true bound. The codes 0..255 dequantize to the grid lo' + k * scale with
lo' = -zero_point * scale and hi' = (255 - zero_point) * scale. A value inside [lo' - scale/2,
hi' + scale/2] comes back within scale/2; a value outside is clamped to the nearest end, so
|x - x'| <= max(scale/2, lo' - x, x - hi') (plus float rounding). What that means for the seed's
formula:

* lo <= 0 <= hi (the range holds zero): zero_point = izp - f with f = frac(-lo/scale) in [0, 1)
  (truncation), so lo' = lo + f * scale: the bottom f * scale of the range is clamped and the
  bound is max(1/2, f) * scale < scale, not scale/2.
* lo > 0 (all positive): zero_point clamps to 0 and hi' = hi - lo: values above hi - lo come
  back as hi - lo, an error of up to lo. All negative (hi < 0): zero_point clamps to 255, lo' =
  lo - hi, an error of up to |hi|. The seed's formula only suits ranges that contain zero.
:func:`roundtrip_bound` returns the elementwise bound and the tests check it.

The per-tensor pipeline reads x twice (min/max, then quantize) and writes one byte an element:
9 bytes an element for float32, (2 * itemsize + 1) in general; the floor is that traffic at the
device's copy speed (2^26 floats: 604 MB, 0.21 ms at 2.9 TB/s on an H100). The rungs:

    atomic_per_element  3 launches (init, min/max, quantize), 2 same-address atomics an element
    atomic_per_block    3 launches, 2 atomics a block; grid-stride loops, 8 loads in flight a thread
    block_partials      2 launches, no atomics, no init: each quantize block reduces the partials
    l2_tail_first       2 launches; the quantize pass walks x backwards, starting in L2

Per row (per channel) quantization, dequantization, their NumPy references, :func:`roundtrip_bound`
and the library functions (device arrays in and out) live in kernels/dequantize.py, with its own
kernel spec (``lab run dequantize``); per-channel quantization is ``lab run quantize_per_channel``.
"""
from __future__ import annotations

import math

import numpy as np
from kernels.arrays import empty_like
from kernels.compiler import cuda, float64, int64, uint32, uint64

from kernels.device_limits import current
from kernels.spec import Bounds, KernelSpec, Launch, Variant, auto_variant, blocks_for
from kernels.compiler import SIMULATOR
from kernels.warp import MAX_WARPS, SCRATCH, block_minmax
from kernels.contenders import quantize as C  # its CuPy and torch contenders

QMIN = 0.0
QMAX = 255.0
# The clamp bounds as float32 constants: a float32 kernel stays in float32 (a Python float would
# promote every element to float64) and a float64 kernel promotes them exactly.
QMIN32 = np.float32(QMIN)
QMAX32 = np.float32(QMAX)
UNROLL = 8  # independent loads each thread keeps in flight per trip of a grid-stride loop
# Grid of the grid-stride rungs: half the threads the device's SMs hold (kernels.device_limits: on
# an H100, 132 SMs x 2048 = 132 * 1024 threads), i.e. 4 blocks of 256 per SM there. With 8 loads a
# thread that is 32 KiB in flight per SM, more than DRAM latency x bandwidth needs (~18 KiB on an
# H100), and it leaves room for up to 64 registers a thread, so the whole grid is resident in one
# wave (no second wave of blocks arriving late).
def grid_threads() -> int:
    """Threads of the fixed grid of the grid-stride rungs: half of what the current device's SMs
    hold (SMs x resident threads an SM / 2; 135,168 on an H100)."""
    dev = current()
    return dev.sm_count * dev.max_threads_per_sm // 2


# --- Rounding half to even, on the GPU and in the simulator ----------------------------------------
def rint(v):
    """``v`` rounded to the nearest integer, ties to even (as ``np.round`` and ``torch.round``); stays
    a float of v's dtype. Python's ``round()`` would do on the GPU too, but Numba computes it through
    float64 (two slow conversions); libdevice ``rintf`` folds into the float-to-int conversion."""
    return type(v)(np.rint(v))


if not SIMULATOR:  # the simulator calls the Python function above
    from kernels.compiler import libdevice, overload, types

    @overload(rint, target="cuda")
    def _rint_gpu(v):
        if v == types.float32:
            return lambda v: libdevice.rintf(v)
        return lambda v: libdevice.rint(v)


# --- Shared pieces (device functions, inlined into each kernel) ------------------------------------
@cuda.jit(device=True)
def quant_params(lo, hi):
    """(scale, zero_point) as float64 from the tensor's min ``lo`` and max ``hi``, by the rules in
    the module docstring. Cheap (three float64 divisions) next to the pass over x, but not free: the
    grid-stride kernels compute it once a thread, not once an element."""
    lo = float64(lo)
    hi = float64(hi)
    scale = (hi - lo) / (QMAX - QMIN) if hi > lo else 1.0
    initial = QMIN - lo / scale
    zero_point = float64(int(min(max(initial, QMIN), QMAX)))  # clamp, then truncate (the seed's int())
    return scale, zero_point


@cuda.jit(device=True)
def quant_code(value, inv_scale, zero_point):
    """The uint8 code of one element: clamp(value * inv_scale + zero_point) to [0, 255], round half to
    even; returned as uint32 (ptxas folds the rounding into one F2I conversion)."""
    v = value * inv_scale + zero_point
    v = min(max(v, QMIN32), QMAX32)
    return uint32(rint(v))


@cuda.jit(device=True)
def thread_minmax(x):
    """(min, max) of this thread's grid-stride slice of x: elements start, start + stride, ...

    A trip reads UNROLL elements ``stride`` apart: at each load the warp reads 32 consecutive floats
    (coalesced, one 128-byte line), and the UNROLL loads are independent, so they are all in flight
    before the first one returns. The last n % (stride * UNROLL) elements take the plain loop.
    A thread with no element returns (+inf, -inf), the identity of (min, max).

    Indices are uint64: Numba gives a signed index Python's negative-index wraparound (x[-1] is
    the last element), three integer instructions a load; an unsigned one cannot be negative.
    Mixing uint64 with a plain int literal would promote to float64, hence the uint64() casts.
    """
    n = uint64(x.shape[0])
    start = uint64(cuda.grid(1))
    stride = uint64(cuda.gridsize(1))
    step = stride * uint64(UNROLL)
    main = n - n % step
    lo = x.dtype.type(math.inf)
    hi = -lo
    for i in range(start, main, step):
        i1 = i + stride
        i2 = i1 + stride
        i3 = i2 + stride
        i4 = i3 + stride
        i5 = i4 + stride
        i6 = i5 + stride
        i7 = i6 + stride
        a0, a1, a2, a3 = x[i], x[i1], x[i2], x[i3]
        a4, a5, a6, a7 = x[i4], x[i5], x[i6], x[i7]
        lo = min(lo, min(min(min(a0, a1), min(a2, a3)), min(min(a4, a5), min(a6, a7))))
        hi = max(hi, max(max(max(a0, a1), max(a2, a3)), max(max(a4, a5), max(a6, a7))))
    for i in range(main + start, n, stride):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    return lo, hi


@cuda.jit(device=True)
def quantize_trip(x, q, i, stride, inv_scale, zero_point):
    """Quantize the UNROLL elements i, i + stride, ... (uint64 indices): all loads first, then the
    byte stores."""
    i1 = i + stride
    i2 = i1 + stride
    i3 = i2 + stride
    i4 = i3 + stride
    i5 = i4 + stride
    i6 = i5 + stride
    i7 = i6 + stride
    a0, a1, a2, a3 = x[i], x[i1], x[i2], x[i3]
    a4, a5, a6, a7 = x[i4], x[i5], x[i6], x[i7]
    q[i] = quant_code(a0, inv_scale, zero_point)
    q[i1] = quant_code(a1, inv_scale, zero_point)
    q[i2] = quant_code(a2, inv_scale, zero_point)
    q[i3] = quant_code(a3, inv_scale, zero_point)
    q[i4] = quant_code(a4, inv_scale, zero_point)
    q[i5] = quant_code(a5, inv_scale, zero_point)
    q[i6] = quant_code(a6, inv_scale, zero_point)
    q[i7] = quant_code(a7, inv_scale, zero_point)


@cuda.jit(device=True)
def quantize_forward(x, q, scale, zero_point):
    """q for this thread's grid-stride slice of x, front to back (the same slice as thread_minmax).
    A warp's 32 byte stores hit 32 consecutive bytes: one full 32-byte sector, coalesced."""
    inv_scale = x.dtype.type(1.0 / scale)
    zp = x.dtype.type(zero_point)
    n = uint64(x.shape[0])
    start = uint64(cuda.grid(1))
    stride = uint64(cuda.gridsize(1))
    step = stride * uint64(UNROLL)
    main = n - n % step
    for i in range(start, main, step):
        quantize_trip(x, q, i, stride, inv_scale, zp)
    for i in range(main + start, n, stride):
        q[i] = quant_code(x[i], inv_scale, zp)


@cuda.jit(device=True)
def quantize_backward(x, q, scale, zero_point):
    """As quantize_forward, but the grid walks x from the back: the ragged end first, then the full
    trips from the last to the first."""
    inv_scale = x.dtype.type(1.0 / scale)
    zp = x.dtype.type(zero_point)
    n = uint64(x.shape[0])
    start = uint64(cuda.grid(1))
    stride = uint64(cuda.gridsize(1))
    step = stride * uint64(UNROLL)
    trips = n // step
    for i in range(trips * step + start, n, stride):
        q[i] = quant_code(x[i], inv_scale, zp)
    for t in range(int64(trips) - 1, -1, -1):  # signed: counts down past 0
        quantize_trip(x, q, uint64(t) * step + start, stride, inv_scale, zp)


@cuda.jit(device=True)
def write_params(params, scale, zero_point):
    """Thread 0 of block 0 stores (scale, zero_point) in the output's dtype."""
    if cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0:
        params[0] = scale
        params[1] = zero_point


# --- Rung 1: one atomic per element --------------------------------------------------------------
@cuda.jit
def init_minmax_kernel(mm):
    """mm = (+inf, -inf), the identity of (min, max); one thread. The atomics need a start value,
    and writing it with a kernel keeps a host-to-device copy out of the timed call; the cost is one
    more launch (a few microseconds of GPU time)."""
    if cuda.grid(1) == 0:
        mm[0] = mm.dtype.type(math.inf)
        mm[1] = -mm.dtype.type(math.inf)


@cuda.jit
def minmax_atomic_kernel(x, mm):
    """mm[0] = min(mm[0], x[i]), mm[1] = max(mm[1], x[i]); thread ``i = cuda.grid(1)`` does element i.

    Every thread of the grid updates the same two addresses. There is no float atomicMin/Max in
    hardware: Numba loads the current value and, only if x[i] improves on it, tries a compare-and-
    swap, in a loop. The loads alone are 2 an element, all to one 32-byte sector in one L2 slice,
    which serves them one at a time: the kernel is bound by that one slice, not by DRAM.
    """
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.min(mm, 0, x[i])
        cuda.atomic.max(mm, 1, x[i])


@cuda.jit
def quantize_element_kernel(x, mm, q, params):
    """q[i] = code of x[i] with the parameters of (mm[0], mm[1]); thread ``i = cuda.grid(1)`` does
    element i and recomputes the parameters itself (three float64 divisions for one element)."""
    i = cuda.grid(1)
    scale, zero_point = quant_params(mm[0], mm[1])
    write_params(params, scale, zero_point)
    if i < x.shape[0]:
        q[i] = quant_code(x[i], x.dtype.type(1.0 / scale), x.dtype.type(zero_point))


def atomic_per_element_launch(size, threads):
    """One thread per element: grid = ceil(N / threads) blocks, for both the min/max and the
    quantize kernel (the init kernel is one thread)."""
    (n,) = size
    return Launch(grid=(blocks_for(n, threads),), block=(threads,), threads_needed=n)


def atomic_per_element_prepare(cfg, inputs, outputs):
    """Rung 1, the textbook start: init (1 thread), min/max with one atomic min and one atomic max
    per element, quantize with one thread per element. 3 launches, 9 bytes an element, 2N atomics on
    two addresses. Predicted: bound by the one L2 slice that holds mm (about 2N / 32 warp requests
    served one at a time, plus the CAS retries), milliseconds at 2^26, 10x or more slower than rung 2.
    Measured on the H100 at 2^26 float32: 1.88 ms (9x rung 2; IQR 0.10 ms: atomics contend).
    """
    return _init_minmax_quantize(minmax_atomic_kernel, quantize_element_kernel, cfg, inputs, outputs)


def _init_minmax_quantize(minmax_kernel, quantize_kernel, cfg, inputs, outputs):
    """The 3-launch pipeline of rungs 1 and 2: init mm, atomic min/max into mm, quantize."""
    (x,) = inputs
    q, params = outputs
    mm = empty_like(x, 2, x.dtype)  # scratch, allocated once (by x's library), outside the timed call
    init = init_minmax_kernel[1, 1]
    minmax = minmax_kernel[cfg.grid, cfg.block]
    quantize = quantize_kernel[cfg.grid, cfg.block]

    def enqueue():
        init(mm)
        minmax(x, mm)
        quantize(x, mm, q, params)
    return enqueue


# --- Rung 2: one atomic per block ----------------------------------------------------------------
# Saves: 2 atomics an element -> 2 a block (~500 blocks), so the min/max pass is bound by DRAM, not
# by one L2 slice; grid-stride loops with UNROLL loads in flight; the parameters once a thread.
# Still 3 launches: the atomics need the init kernel.
@cuda.jit
def minmax_block_atomic_kernel(x, mm):
    """Block b reduces its threads' grid-stride slices (thread_minmax, block_minmax); thread 0 then
    folds the block's (min, max) into mm with one atomic each. Grid = fixed (grid_threads())."""
    scratch = cuda.shared.array(SCRATCH, float64)  # used only by the simulator's warp_max
    slot_lo = cuda.shared.array(MAX_WARPS, float64)
    slot_hi = cuda.shared.array(MAX_WARPS, float64)
    lo, hi = thread_minmax(x)
    lo, hi = block_minmax(lo, hi, slot_lo, slot_hi, scratch)
    if cuda.threadIdx.x == 0:
        cuda.atomic.min(mm, 0, x.dtype.type(lo))  # exact: lo was an element of x (or +inf)
        cuda.atomic.max(mm, 1, x.dtype.type(hi))


@cuda.jit
def quantize_grid_kernel(x, mm, q, params):
    """q = codes of x with the parameters of (mm[0], mm[1]); each thread quantizes its grid-stride
    slice (quantize_forward). Grid = fixed (grid_threads())."""
    scale, zero_point = quant_params(mm[0], mm[1])
    write_params(params, scale, zero_point)
    quantize_forward(x, q, scale, zero_point)


def grid_stride_launch(size, threads):
    """A fixed grid of grid_threads() // threads blocks (fewer when N needs fewer: one trip of UNROLL
    elements a thread), each thread looping over x with stride grid * threads."""
    (n,) = size
    blocks = max(1, min(blocks_for(n, threads * UNROLL), grid_threads() // threads))
    return Launch(grid=(blocks,), block=(threads,), threads_needed=min(n, blocks * threads),
                  note=f"grid-stride, {UNROLL} loads in flight a thread")


def atomic_per_block_prepare(cfg, inputs, outputs):
    """Rung 2. Improves on rung 1: 2 atomics a block instead of 2 an element, grid-stride loops with
    UNROLL loads in flight, the parameters once a thread. Still init + 2 kernels (3 launches), 9 bytes
    an element. Predicted: both passes at close to DRAM speed, ~0.22-0.25 ms at 2^26 on an H100.
    Measured on the H100 at 2^26 float32: 0.207 ms (2.91 TB/s effective, 96% of copy bandwidth).
    """
    return _init_minmax_quantize(minmax_block_atomic_kernel, quantize_grid_kernel, cfg, inputs, outputs)


# --- Rung 3: block partials, no atomics, no init ---------------------------------------------------
# Saves: the init launch and the atomics. The min/max kernel writes one (min, max) pair per block;
# every block of the quantize kernel reduces those few hundred pairs itself (4 KiB from L2, a few
# microseconds at its start) instead of a third launch doing it once. 2 launches, 9 bytes an element.
# The pairs number grid_threads() / threads (on an H100): 528 at 256 threads a block, 4224 at 32 threads, where
# this prologue (L2 latency, a few loads a thread in turn) costs noticeably more.
@cuda.jit
def minmax_partials_kernel(x, partials):
    """partials[0, b], partials[1, b] = (min, max) of block b's grid-stride slices of x.
    partials: (2, grid) of x's dtype. Grid = fixed (grid_threads())."""
    scratch = cuda.shared.array(SCRATCH, float64)
    slot_lo = cuda.shared.array(MAX_WARPS, float64)
    slot_hi = cuda.shared.array(MAX_WARPS, float64)
    lo, hi = thread_minmax(x)
    lo, hi = block_minmax(lo, hi, slot_lo, slot_hi, scratch)
    if cuda.threadIdx.x == 0:
        partials[0, cuda.blockIdx.x] = lo
        partials[1, cuda.blockIdx.x] = hi


@cuda.jit(device=True)
def reduce_partials(partials, slot_lo, slot_hi, scratch):
    """(min, max) of x from the min/max kernel's per-block pairs, in every thread of the block:
    thread t folds pairs t, t + blockDim, ..., then block_minmax."""
    lo = math.inf
    hi = -math.inf
    for j in range(cuda.threadIdx.x, partials.shape[1], cuda.blockDim.x):
        lo = min(lo, float64(partials[0, j]))
        hi = max(hi, float64(partials[1, j]))
    return block_minmax(lo, hi, slot_lo, slot_hi, scratch)


@cuda.jit
def quantize_partials_kernel(x, partials, q, params):
    """Every block reduces ``partials`` to the tensor's (min, max) and computes the parameters,
    then each thread quantizes its grid-stride slice front to back; block 0 writes params.
    The parameters never visit the host and no launch sits between the passes."""
    scratch = cuda.shared.array(SCRATCH, float64)
    slot_lo = cuda.shared.array(MAX_WARPS, float64)
    slot_hi = cuda.shared.array(MAX_WARPS, float64)
    lo, hi = reduce_partials(partials, slot_lo, slot_hi, scratch)
    scale, zero_point = quant_params(lo, hi)
    write_params(params, scale, zero_point)
    quantize_forward(x, q, scale, zero_point)


def _partials_prepare(quantize_kernel):
    def prepare(cfg, inputs, outputs):
        (x,) = inputs
        q, params = outputs
        partials = empty_like(x, (2, cfg.grid[0]), x.dtype)  # every slot is written each call
        minmax = minmax_partials_kernel[cfg.grid, cfg.block]
        quantize = quantize_kernel[cfg.grid, cfg.block]

        def enqueue():
            minmax(x, partials)
            quantize(x, partials, q, params)
        return enqueue
    return prepare


def block_partials_prepare(cfg, inputs, outputs):
    """Rung 3. Improves on rung 2: no init launch and no atomics; 2 launches, 9 bytes an element,
    the parameters never visit the host. Predicted: rung 2 less one launch (a few microseconds,
    ~1-2%), at about 2.5-2.8 TB/s effective: 0.215-0.24 ms at 2^26 on an H100 (target 0.245 ms).
    Measured on the H100 at 2^26 float32: 0.2068 ms (2.92 TB/s), 0.2% better than rung 2: the init
    launch was already hidden behind the queued work.
    """
    return _partials_prepare(quantize_partials_kernel)(cfg, inputs, outputs)


# --- Rung 4: the quantize pass starts where the min/max pass ended ---------------------------------
# Saves DRAM reads, not launches: the min/max pass walks x front to back, so when it ends the last
# tens of MB it read are still in the H100's 50 MB L2. Walking x back to front, the quantize pass
# reads those from L2 first, before its own traffic evicts them. At 2^26 floats (256 MiB) that can
# save up to ~40 MB of the 604 MB moved: predicted ~3-6% faster than block_partials. Part of that
# gain in `lab run` comes from back-to-back calls (the next min/max pass starts at the front, which
# this pass read last); in a pipeline, the kernel that produced x leaves its own tail in L2 the same way.
@cuda.jit
def quantize_partials_backward_kernel(x, partials, q, params):
    """As quantize_partials_kernel, but each thread walks its slice from the back (quantize_backward)."""
    scratch = cuda.shared.array(SCRATCH, float64)
    slot_lo = cuda.shared.array(MAX_WARPS, float64)
    slot_hi = cuda.shared.array(MAX_WARPS, float64)
    lo, hi = reduce_partials(partials, slot_lo, slot_hi, scratch)
    scale, zero_point = quant_params(lo, hi)
    write_params(params, scale, zero_point)
    quantize_backward(x, q, scale, zero_point)


def l2_tail_first_prepare(cfg, inputs, outputs):
    """Rung 4. Improves on rung 3: the same 2 launches, but the quantize pass starts on the part of x
    still in L2, so fewer of its 9 bytes an element come from DRAM. Predicted: 3-6% faster than
    rung 3 at 2^26 on an H100 (see the comment above).
    Measured on the H100 at 2^26 float32, with L2 flushed before every timed call (so only the reuse
    inside one call counts): 0.2046 ms (2.95 TB/s), 1% faster than rung 3; torch.aminmax +
    torch.quantize_per_tensor 0.322 ms. The best variant meets the 0.245 ms target.
    What the hardware did (Nsight Compute, H100, one call at 2^26 float32, L2 flushed
    before it; ``lab counters quantize``): DRAM read 511.2 MB against rung 3's 536.9 MB (x is 268 MB,
    read twice): the backward pass found 25.7 MB of x still in L2, 4.8% of the call's reads.
    """
    return _partials_prepare(quantize_partials_backward_kernel)(cfg, inputs, outputs)


# --- NumPy references --------------------------------------------------------------------------------
def quantize_params(lo, hi) -> tuple[float, int]:
    """(scale, zero_point) from a tensor's min ``lo`` and max ``hi``, in float64 (the seed's
    ``quantize_tensor`` arithmetic, plus scale = 1.0 when hi == lo)."""
    lo, hi = float(lo), float(hi)
    scale = (hi - lo) / (QMAX - QMIN) if hi > lo else 1.0
    initial = QMIN - lo / scale
    if initial < QMIN:  # the seed's branches: a clamp to [qmin, qmax] ...
        zero_point = QMIN
    elif initial > QMAX:
        zero_point = QMAX
    else:
        zero_point = initial
    return scale, int(zero_point)  # ... then int(), which truncates


def _codes(x, scale, zero_point):
    """clamp(x / scale + zero_point, 0, 255), rounded half to even, as uint8; in x's dtype."""
    t = x.dtype.type
    v = x / t(scale) + t(zero_point)
    return np.round(np.clip(v, QMIN, QMAX)).astype(np.uint8)


def reference(x):
    """NumPy, per tensor: (q uint8[N], params [scale, zero_point] in x's dtype).

    The parameters in float64 from x's exact min and max; x / scale in x's dtype (float64 for the
    runner's reference, the input dtype for the NumPy contender).
    """
    scale, zero_point = quantize_params(x.min(), x.max())
    return _codes(x, scale, zero_point), np.array([scale, zero_point], dtype=x.dtype)


# --- Inputs, tolerance, accounting -------------------------------------------------------------------
def make_inputs(size, dtype, rng):
    """Normal values with a random spread (1e-2..1e2) and a random offset (within one spread), so
    the range usually, not always, contains zero."""
    (n,) = size
    spread = 10 ** rng.uniform(-2, 2)
    offset = spread * rng.uniform(-1, 1)
    return ((rng.standard_normal(n) * spread + offset).astype(dtype),)


BOUNDARY_ULPS = 8  # how close to a .5 boundary (in ulps of the dtype) either neighbouring code is accepted


def tolerance(inputs, ref, dtype):
    """Codes exact, except within a few ulps of a .5 rounding boundary; parameters to dtype rounding.

    Codes: every code must equal the reference's, except where the reference's v = x / scale +
    zero_point (clamped to [0, 255]) lies within BOUNDARY_ULPS ulps (of the dtype, relative to
    |x / scale| + zero_point + 1, the size of the terms a kernel rounds) of a .5 boundary: there a
    kernel that multiplies by 1 / scale, or rounds before adding the zero point (torch's CUDA
    kernel), may land on the other side, and either neighbour (floor(v) or floor(v) + 1) is
    accepted. Everywhere else a truncating or always-rounding-up kernel is wrong and fails.
    Parameters: scale within 2 ulps of the float64 scale rounded to dtype (a float32 contender
    computes (hi - lo) / 255 with two roundings); the zero point is an integer and must be exact.
    """
    (x,) = inputs
    q_ref, params = ref
    scale, zero_point = float(params[0]), float(params[1])
    t = x.astype(np.float64) / scale
    v = np.clip(t + zero_point, QMIN, QMAX)
    band = BOUNDARY_ULPS * np.finfo(dtype).eps * (np.abs(t) + zero_point + 1)
    low = np.floor(v)
    near = np.abs(v - low - 0.5) <= band
    q_ref = np.asarray(q_ref, np.float64)
    codes = Bounds(np.where(near, low, q_ref), np.where(near, np.minimum(low + 1, QMAX), q_ref))
    ulp = float(np.spacing(np.asarray(scale, dtype)))
    params_ok = Bounds(np.array([scale - 2 * ulp, zero_point]), np.array([scale + 2 * ulp, zero_point]))
    return [codes, params_ok]


def dequantize_reference(q, params, dtype=np.float64):
    """NumPy: (q - zero_point) * scale in ``dtype``, with (scale, zero_point) = params."""
    scale, zero_point = np.asarray(params, dtype)
    return (q.astype(dtype) - zero_point) * scale


def roundtrip_bound(x, scale, zero_point):
    """Elementwise bound on |x - dequantize(quantize(x))| for the seed's formula, before float
    rounding: max(scale / 2, lo' - x, x - hi') with lo' = -zero_point * scale and hi' =
    (255 - zero_point) * scale, the ends of what the codes can represent (module docstring)."""
    x = np.asarray(x, np.float64)
    lo_rep = (QMIN - zero_point) * scale
    hi_rep = (QMAX - zero_point) * scale
    return np.maximum(scale / 2, np.maximum(lo_rep - x, x - hi_rep))


def summarize(inputs, outputs):
    """The round-trip error of a checked result: max |x - dequantize(quantize(x))| against scale/2
    and against the true bound for this x (:func:`roundtrip_bound`)."""
    (x,) = inputs
    q, params = outputs
    scale, zero_point = float(params[0]), float(params[1])
    err = np.abs(x.astype(np.float64) - dequantize_reference(q, params)).max()
    bound = roundtrip_bound(x, scale, zero_point).max()
    lines = [f"round trip: max |x - dequantize(quantize(x))| = {err:.4g}; scale/2 = {scale / 2:.4g}, bound "
             f"for this x (zero_point truncated and clamped) = {bound:.4g}; scale {scale:.4g}, "
             f"zero_point {zero_point:.0f}"]
    if err > scale / 2:  # expected, not a bug: say why in one line
        lo_rep, hi_rep = (QMIN - zero_point) * scale, (QMAX - zero_point) * scale
        lines.append(f"above scale/2 by design: the ARENA notebook's formula truncates zero_point, so the codes "
                     f"span [{lo_rep:.4g}, {hi_rep:.4g}], not [min, max] = [{float(x.min()):.4g}, "
                     f"{float(x.max()):.4g}]; values outside are clamped")
    return lines


def choose(size):
    """(rung, threads, why) for N elements: l2_tail_first (the best rung at every size measured),
    at 256 threads; below a full grid (N < grid_threads() x UNROLL) 128 threads, so the smaller grid
    still spreads over more SMs."""
    (n,) = size
    if n >= grid_threads() * UNROLL:
        return "l2_tail_first", 256, "a full grid-stride grid"
    return "l2_tail_first", 128, "small N: smaller blocks over more SMs"


RUNGS = {
    "atomic_per_element": Variant(
        "atomic_per_element",
        "init + min/max with 2 same-address atomics an element + quantize, one thread an element; "
        "3 launches",
        atomic_per_element_launch, atomic_per_element_prepare),
    "atomic_per_block": Variant(
        "atomic_per_block",
        "grid-stride min/max (8 loads in flight, shuffle reduction), 2 atomics a block; init + "
        "2 kernels",
        grid_stride_launch, atomic_per_block_prepare, warp_multiple=True),
    "block_partials": Variant(
        "block_partials",
        "min/max partials per block; each quantize block reduces them itself: 2 launches, "
        "no atomics, 9 bytes an element",
        grid_stride_launch, block_partials_prepare, warp_multiple=True),
    "l2_tail_first": Variant(
        "l2_tail_first",
        "block_partials with the quantize pass walking x back to front, so it starts on what "
        "the min/max pass left in L2",
        grid_stride_launch, l2_tail_first_prepare, warp_multiple=True),
}


SPEC = KernelSpec(
    name="quantize",
    summary="per-tensor uint8 quantization: min/max, then q = round(x / scale + zero_point)",
    size_help="N (elements), e.g. 67108864",
    default_size=lambda simulator: (1000,) if simulator else (1 << 26,),
    in_shapes=lambda size: [size],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [(size, np.dtype(np.uint8)), ((2,), np.dtype(dtype))],
    reference=reference,
    tolerance=tolerance,
    summarize=summarize,
    # x read twice (min/max, quantize), q written once; the parameters are noise
    bytes_moved=lambda size, dtype: size[0] * (2 * np.dtype(dtype).itemsize + 1),
    # a compare for the min and one for the max, a multiply and an add for the code
    flops=lambda size: 4 * size[0],
    variants={**RUNGS, "auto": auto_variant(
        choose, RUNGS, "l2_tail_first at 256 threads, fewer threads for small N (choose())", kernel="quantize")},
    order=50,
    contenders={"cupy": (("cupy min/max + ElementwiseKernel", C.cupy_quantize),),
                "torch": (("ARENA quantize_tensor (torch ops, host syncs)", C.torch_quantize_seed),
                          ("torch.aminmax + torch.quantize_per_tensor", C.torch_quantize_aminmax,
                           {"float32_inside": True}))},
    torch_op=dict(rungs=("block_partials", "block_partials"),
                  doc="(q uint8 of x.shape, scale, zero_point), 0-d tensors of x.dtype"),
    bench_sizes=(("67108864", 256),),
    targets=(dict(size=(67108864,), against=None, bound=0.245, kind="ms"),),
    sweep=dict(shapes=("1", "1000", "100003", "1048576", "4194305", "16777216", "67108864", "134217728"),
               skip=frozenset({"atomic_per_element", "atomic_per_block"}),
               against="torch.aminmax + torch.quantize_per_tensor", memory_bound=True),
    sim_cost={"atomic_per_element": 0.07, "atomic_per_block": 0.2, "block_partials": 0.67,
              "l2_tail_first": 0.7, "auto": 0.45},
    counter_size=(4096,),
    counter_metrics=("dram_bytes_ratio", "l2_hit_pct"),
)
