"""Vector add, c = a + b: the "hello world" of CUDA, one thread per element.

Source: CUDA C++ Programming Guide, section "Kernels" and "Thread Hierarchy" (the VecAdd example);
the seed notebook "PyTorch handling of GPU devices" (``cu_add_vectors``).

Each element is read twice (a, b) and written once (c) and costs one FLOP, so the kernel is bound by
memory bandwidth: 3 * itemsize bytes per FLOP. The best it can do is run at the device's copy speed.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from kernels.spec import KernelSpec, Launch, Variant, blocks_for


@cuda.jit
def vecadd_kernel(a, b, c):
    """c[i] = a[i] + b[i]; thread ``i = blockIdx.x * blockDim.x + threadIdx.x`` computes element i.

    a, b, c: 1-D device arrays of one float dtype, same length n. The grid rounds n up to whole
    blocks, so the last block may hold threads past the end: the bounds guard keeps them idle.
    """
    i = cuda.grid(1)
    if i < c.shape[0]:  # without this guard the last block writes past the end of c
        c[i] = a[i] + b[i]


def launch(size, threads):
    """One thread per element: grid = ceil(n / threads) blocks of ``threads`` threads."""
    (n,) = size
    return Launch(grid=(blocks_for(n, threads),), block=(threads,), threads_needed=n)


def prepare(cfg, inputs, outputs):
    kernel = vecadd_kernel[cfg.grid, cfg.block]  # configure once: keep it out of the timed call
    a, b = inputs
    (c,) = outputs
    return lambda: kernel(a, b, c)


def reference(a, b):
    """NumPy: (a + b,)."""
    return (a + b,)


def make_inputs(size, dtype, rng):
    (n,) = size
    return (rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype))


def tolerance(inputs, ref, dtype):
    # One rounding of the sum: half an ulp of |a| + |b|.
    a, b = inputs
    return [np.finfo(dtype).eps * (np.abs(a.astype(np.float64)) + np.abs(b))]


SPEC = KernelSpec(
    name="vecadd",
    summary="c = a + b, one thread per element",
    size_help="N (elements), e.g. 67108864",
    size_dims=1,
    default_size=lambda simulator: (1000,) if simulator else (1 << 26,),
    in_shapes=lambda size: [size, size],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [(size, np.dtype(dtype))],
    reference=reference,
    tolerance=tolerance,
    bytes_moved=lambda size, dtype: 3 * size[0] * np.dtype(dtype).itemsize,
    flops=lambda size: size[0],
    variants={
        "element_per_thread": Variant(
            "element_per_thread",
            "one thread per element, bounds-guarded (CUDA Programming Guide, VecAdd)",
            launch, prepare),
    },
)
