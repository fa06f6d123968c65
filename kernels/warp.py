"""Warp and block reductions shared by every reduction kernel (matvec, softmax, quantize), and the
warp size.

Warp level: on a GPU, ``group_sum``/``group_max`` are the butterfly of ``shfl_xor_sync`` (``shfl_xor``
below: exact for float64 under both compilers) over the
``width`` lanes of a lane group (``width`` a power of two up to 32; log2(width) register exchanges,
no shared memory, no barrier: CUDA C++ Programming Guide, "Warp Shuffle Functions"); ``warp_sum`` and
``warp_max`` are the 32-lane case. Numba's CUDA simulator has no shuffles, so there the same sums go
through a shared-memory scratch row with ``syncthreads`` between the halving steps. Every thread of
the block must call these functions (the simulator path holds a barrier), which is why the kernels
keep idle threads alive instead of returning early.

Block level: ``block_sum``, ``block_max`` and ``block_minmax`` reduce in two steps: shuffles inside
each warp, then one slot per warp in shared memory (``partial``: MAX_WARPS slots, one call's own), a
barrier, and a second warp reduction over those slots that every warp does itself, so each thread
gets the result without a second barrier. Blocks are whole warps; a one-warp block skips the shared
step. ``block_merge`` reduces online-softmax pairs (running max, sum of exp relative to it) the same
way (M. Milakov and N. Gimelshein, "Online normalizer calculation for softmax", arXiv:1805.02867;
kernels/softmax.py, rung 3, explains the rule).
"""
from __future__ import annotations

import math

from kernels.compiler import COMPILER, MLIR, SIMULATOR, cuda

WARP = 32  # threads a warp, on every NVIDIA GPU so far
MAX_WARPS = 32  # warps in the largest block (1024 threads): one shared slot each
FULL_MASK = 0xFFFFFFFF
# Shared scratch for the simulator path: one slot a thread of the largest block. On the GPU the
# shuffle path never touches it, so a single element keeps the kernel's shared-memory use at zero.
SCRATCH = 1024 if SIMULATOR else 1


def lanes_for(cols: int, per_lane: int) -> int:
    """Lanes a row for the row-per-group rungs (matvec group_per_row, softmax group_rows): the
    smallest power of two G <= 32 with ceil(cols / G) <= per_lane."""
    g = 1
    while g < WARP and g * per_lane < cols:
        g *= 2
    return g


if COMPILER == MLIR:
    from kernels.compiler import libdevice, overload, types

    def shfl_xor(value, offset):
        """``cuda.shfl_xor_sync(FULL_MASK, value, offset)``, exact for float64 too (typed below)."""

    @overload(shfl_xor, target="cuda")
    def _shfl_xor_mlir(value, offset):
        # numba-cuda-mlir 0.6 lowers every float shuffle to one 32-bit SHFL: a float64 is rounded to
        # float32 on the way (its lowering/cuda.py: "nvvm.shfl.sync only supports i32 or f32"), so a
        # float64 sum came back with float32 error. Move its two 32-bit halves instead, as numba-cuda
        # and CUDA C++'s __shfl_xor_sync(double) do: bit-exact, two SHFLs.
        if value == types.float64:
            def impl(value, offset):
                hi = cuda.shfl_xor_sync(FULL_MASK, libdevice.double2hiint(value), offset)
                lo = cuda.shfl_xor_sync(FULL_MASK, libdevice.double2loint(value), offset)
                return libdevice.hiloint2double(hi, lo)
            return impl
        return lambda value, offset: cuda.shfl_xor_sync(FULL_MASK, value, offset)

elif not SIMULATOR:

    @cuda.jit(device=True)
    def shfl_xor(value, offset):
        """``cuda.shfl_xor_sync(FULL_MASK, value, offset)``: numba-cuda moves 64-bit values as two
        32-bit halves itself."""
        return cuda.shfl_xor_sync(FULL_MASK, value, offset)


if SIMULATOR:

    @cuda.jit(device=True)
    def group_sum(value, scratch, width):
        """Sum of ``value`` over the calling thread's group of ``width`` lanes (lanes
        [l - l % width, l - l % width + width)), returned to every lane of the group."""
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        lane = t % width
        scratch[t] = value
        cuda.syncthreads()
        offset = width // 2
        while offset > 0:
            if lane < offset:
                scratch[t] += scratch[t + offset]
            cuda.syncthreads()
            offset //= 2
        total = scratch[t - lane]
        cuda.syncthreads()
        return total

    @cuda.jit(device=True)
    def group_max(value, scratch, width):
        """Maximum of ``value`` over the calling thread's group of ``width`` lanes."""
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        lane = t % width
        scratch[t] = value
        cuda.syncthreads()
        offset = width // 2
        while offset > 0:
            if lane < offset:
                scratch[t] = max(scratch[t], scratch[t + offset])
            cuda.syncthreads()
            offset //= 2
        total = scratch[t - lane]
        cuda.syncthreads()
        return total

else:

    @cuda.jit(device=True)
    def group_sum(value, scratch, width):
        """Sum of ``value`` over the calling thread's group of ``width`` lanes, returned to every
        lane of the group: xor offsets below ``width`` never leave the group."""
        offset = width // 2
        while offset > 0:
            value += shfl_xor(value, offset)
            offset //= 2
        return value

    @cuda.jit(device=True)
    def group_max(value, scratch, width):
        """Maximum of ``value`` over the calling thread's group of ``width`` lanes."""
        offset = width // 2
        while offset > 0:
            value = max(value, shfl_xor(value, offset))
            offset //= 2
        return value


if SIMULATOR:

    @cuda.jit(device=True)
    def warp_sum(value, scratch):
        """Sum of ``value`` over the 32 lanes of the calling warp, returned to every lane."""
        return group_sum(value, scratch, WARP)

    @cuda.jit(device=True)
    def warp_max(value, scratch):
        """Maximum of ``value`` over the 32 lanes of the calling warp, returned to every lane."""
        return group_max(value, scratch, WARP)

else:  # the five offsets written out: a literal tuple unrolls for certain

    @cuda.jit(device=True)
    def warp_sum(value, scratch):
        """Sum of ``value`` over the 32 lanes of the calling warp, returned to every lane."""
        # Five shuffles written out: numba-cuda unrolls ``for offset in (16, 8, 4, 2, 1)``, but
        # numba-cuda-mlir 0.6 keeps the tuple in local memory and loops over it (a local load a step).
        value += shfl_xor(value, 16)
        value += shfl_xor(value, 8)
        value += shfl_xor(value, 4)
        value += shfl_xor(value, 2)
        value += shfl_xor(value, 1)
        return value

    @cuda.jit(device=True)
    def warp_max(value, scratch):
        """Maximum of ``value`` over the 32 lanes of the calling warp, returned to every lane."""
        value = max(value, shfl_xor(value, 16))  # unrolled: see warp_sum
        value = max(value, shfl_xor(value, 8))
        value = max(value, shfl_xor(value, 4))
        value = max(value, shfl_xor(value, 2))
        value = max(value, shfl_xor(value, 1))
        return value


@cuda.jit(device=True)
def block_max(value, partial, scratch):
    """Maximum of ``value`` over the block, returned to every thread.

    partial: shared array of MAX_WARPS slots, used by this call only; scratch: the simulator's.
    """
    lane = cuda.threadIdx.x % WARP
    nwarps = cuda.blockDim.x // WARP
    value = warp_max(value, scratch)
    if nwarps == 1:  # the same for the whole block, so no thread skips a barrier the others wait at
        return value
    if lane == 0:
        partial[cuda.threadIdx.x // WARP] = value
    cuda.syncthreads()
    # lanes past the last warp repeat slot 0: harmless for a maximum
    value = partial[lane] if lane < nwarps else partial[0]
    return warp_max(value, scratch)


@cuda.jit(device=True)
def block_sum(value, partial, scratch):
    """Sum of ``value`` over the block, returned to every thread (same scheme as block_max)."""
    lane = cuda.threadIdx.x % WARP
    nwarps = cuda.blockDim.x // WARP
    value = warp_sum(value, scratch)
    if nwarps == 1:
        return value
    if lane == 0:
        partial[cuda.threadIdx.x // WARP] = value
    cuda.syncthreads()
    value = partial[lane] if lane < nwarps else value - value  # 0 in value's dtype
    return warp_sum(value, scratch)


@cuda.jit(device=True)
def block_minmax(lo, hi, slot_lo, slot_hi, scratch):
    """(min of ``lo``, max of ``hi``) over the block, returned to every thread.

    One barrier for both: min(a) = -max(-a) exactly (negation never rounds), so warp_max does both.
    slot_lo, slot_hi: shared arrays of MAX_WARPS slots.
    """
    lane = cuda.threadIdx.x % WARP
    nwarps = cuda.blockDim.x // WARP
    neg_lo = warp_max(-lo, scratch)
    hi = warp_max(hi, scratch)
    if lane == 0:
        slot_lo[cuda.threadIdx.x // WARP] = neg_lo
        slot_hi[cuda.threadIdx.x // WARP] = hi
    cuda.syncthreads()
    # lanes past the last warp repeat slot 0: harmless for a max
    neg_lo = slot_lo[lane] if lane < nwarps else slot_lo[0]
    hi = slot_hi[lane] if lane < nwarps else slot_hi[0]
    return -warp_max(neg_lo, scratch), warp_max(hi, scratch)


# Online-softmax pairs (kernels/softmax.py, rungs 3-5): (m, d) = (running max, sum of exp(x - m)).
# Two pairs merge as M = max(m1, m2), D = d1 exp(m1 - M) + d2 exp(m2 - M); a thread (or warp) that
# saw only -inf has m = -inf and d = 0, so rescale skips the exp when d is 0 (exp(-inf - -inf) = NaN).
@cuda.jit(device=True)
def rescale(d, m, new_m):
    """d * exp(m - new_m): a partial sum taken relative to max m, re-expressed relative to new_m
    (>= m); 0 when d is 0, without computing exp(-inf - -inf)."""
    return d * math.exp(m - new_m) if d > 0 else d


@cuda.jit(device=True)
def block_merge(m, d, part_m, part_d, scratch):
    """Merge every thread's (m, d) into the row's (M, D), returned to every thread.

    The pairwise rule applied to a whole warp at once: M = max of the m's (warp_max), then
    D = sum of d * exp(m - M) (warp_sum); the same again over the warps' pairs in shared memory.
    One barrier.
    """
    lane = cuda.threadIdx.x % WARP
    nwarps = cuda.blockDim.x // WARP
    big_m = warp_max(m, scratch)
    big_d = warp_sum(rescale(d, m, big_m), scratch)
    if nwarps == 1:
        return big_m, big_d
    if lane == 0:
        part_m[cuda.threadIdx.x // WARP] = big_m
        part_d[cuda.threadIdx.x // WARP] = big_d
    cuda.syncthreads()
    if lane < nwarps:
        m = part_m[lane]
        d = part_d[lane]
    else:  # lanes past the last warp: an empty pair (d = 0, m any value)
        m = part_m[0]
        d = d - d
    big_m = warp_max(m, scratch)
    big_d = warp_sum(rescale(d, m, big_m), scratch)
    return big_m, big_d
