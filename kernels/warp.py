"""Warp-level sums shared by the reduction kernels (matvec, softmax, quantize).

On a GPU, ``warp_sum`` is the butterfly of ``shfl_down_sync``: five register exchanges, no shared
memory and no barrier (CUDA C++ Programming Guide, "Warp Shuffle Functions"). Numba's CUDA simulator
has no shuffles, so there the same sum goes through a shared-memory scratch row with
``syncthreads`` between the halving steps. Every thread of the block must call these functions
(the simulator path holds a barrier), which is why the kernels keep idle threads alive instead of
returning early.
"""
from __future__ import annotations

from kernels.compiler import SIMULATOR, cuda

FULL_MASK = 0xFFFFFFFF
# Shared scratch for the simulator path: one slot a thread of the largest block. On the GPU the
# shuffle path never touches it, so a single element keeps the kernel's shared-memory use at zero.
SCRATCH = 1024 if SIMULATOR else 1

if SIMULATOR:

    @cuda.jit(device=True)
    def warp_sum(value, scratch):
        """Sum of ``value`` over the 32 lanes of the calling warp, returned to every lane."""
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        lane = t % 32
        scratch[t] = value
        cuda.syncthreads()
        offset = 16
        while offset > 0:
            if lane < offset:
                scratch[t] += scratch[t + offset]
            cuda.syncthreads()
            offset //= 2
        total = scratch[t - lane]
        cuda.syncthreads()
        return total

    @cuda.jit(device=True)
    def warp_max(value, scratch):
        """Maximum of ``value`` over the 32 lanes of the calling warp, returned to every lane."""
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        lane = t % 32
        scratch[t] = value
        cuda.syncthreads()
        offset = 16
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
    def warp_sum(value, scratch):
        """Sum of ``value`` over the 32 lanes of the calling warp, returned to every lane."""
        # Five shuffles written out: numba-cuda unrolls ``for offset in (16, 8, 4, 2, 1)``, but
        # numba-cuda-mlir 0.6 keeps the tuple in local memory and loops over it (a local load a step).
        value += cuda.shfl_xor_sync(FULL_MASK, value, 16)
        value += cuda.shfl_xor_sync(FULL_MASK, value, 8)
        value += cuda.shfl_xor_sync(FULL_MASK, value, 4)
        value += cuda.shfl_xor_sync(FULL_MASK, value, 2)
        value += cuda.shfl_xor_sync(FULL_MASK, value, 1)
        return value

    @cuda.jit(device=True)
    def warp_max(value, scratch):
        """Maximum of ``value`` over the 32 lanes of the calling warp, returned to every lane."""
        value = max(value, cuda.shfl_xor_sync(FULL_MASK, value, 16))  # unrolled: see warp_sum
        value = max(value, cuda.shfl_xor_sync(FULL_MASK, value, 8))
        value = max(value, cuda.shfl_xor_sync(FULL_MASK, value, 4))
        value = max(value, cuda.shfl_xor_sync(FULL_MASK, value, 2))
        value = max(value, cuda.shfl_xor_sync(FULL_MASK, value, 1))
        return value
