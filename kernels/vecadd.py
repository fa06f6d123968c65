"""Vector add, c = a + b: the "hello world" of CUDA, one thread per element.

Source: CUDA C++ Programming Guide, section "Kernels" and "Thread Hierarchy" (the VecAdd example);
the seed notebook "PyTorch handling of GPU devices" (``cu_add_vectors``).

Each element is read twice (a, b) and written once (c) and costs one FLOP, so the kernel is bound by
memory bandwidth: 3 * itemsize bytes per FLOP. The best it can do is run at the device's copy speed.
Both rungs move the same bytes; the second keeps more of them in flight.

What the hardware did (Nsight Compute, H100, ``lab run vecadd --counters --size 67108865``,
float32): element_per_thread moved 0.99x the minimum DRAM bytes (a and b read once, c written once;
a little of c still in L2 when the call ends) at 4.0 sectors per global load request (32 lanes x 4
contiguous bytes); torch.add 0.98x at 16.0 sectors per request (its 16-byte vector loads).
"""
from __future__ import annotations

import numpy as np
from kernels.compiler import cuda

from kernels.spec import Bounds, KernelSpec, Launch, Variant, auto_variant, blocks_for, launch_once, sm_count


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


# --- Rung 2: four elements per thread (more loads in flight) ------------------------------------
PER_THREAD = 4


@cuda.jit
def vecadd_x4_kernel(a, b, c):
    """c = a + b with each thread adding 4 elements: block ``k`` covers elements
    [k*4T, (k+1)*4T) and thread t of it computes t, t+T, t+2T, t+3T (T = threads per block).

    Same bytes as rung 1, but each thread issues 8 independent loads before its first add, so a
    quarter of the threads keep as many bytes in flight, and the index/guard work is paid once per 4
    elements. Each of a warp's loads still covers 32 consecutive elements (coalesced).
    Predicted: from ~91% to ~100% of copy bandwidth. Measured on the H100 at 2^26 float32, 256
    threads: 0.290 ms (2.78 TB/s) -> 0.260 ms (3.10 TB/s); torch.add 0.261 ms.
    """
    t = cuda.blockDim.x
    i = cuda.blockIdx.x * PER_THREAD * t + cuda.threadIdx.x
    n = c.shape[0]
    if i + 3 * t < n:  # the whole chunk is in range: 8 loads, then 4 adds and stores
        a0, a1, a2, a3 = a[i], a[i + t], a[i + 2 * t], a[i + 3 * t]
        b0, b1, b2, b3 = b[i], b[i + t], b[i + 2 * t], b[i + 3 * t]
        c[i], c[i + t], c[i + 2 * t], c[i + 3 * t] = a0 + b0, a1 + b1, a2 + b2, a3 + b3
    else:  # the last block: guard each element
        for k in range(PER_THREAD):
            j = i + k * t
            if j < n:
                c[j] = a[j] + b[j]


def launch_x4(size, threads):
    """Four elements per thread: grid = ceil(n / (4 * threads)) blocks of ``threads`` threads."""
    (n,) = size
    return Launch(grid=(blocks_for(n, PER_THREAD * threads),), block=(threads,),
                  threads_needed=blocks_for(n, PER_THREAD))


def reference(a, b):
    """NumPy: (a + b,)."""
    return (a + b,)


def make_inputs(size, dtype, rng):
    (n,) = size
    return (rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype))


def tolerance(inputs, ref, dtype):
    """Exact: IEEE 754 addition is correctly rounded, so a + b in ``dtype`` has one right answer, the
    float64 sum rounded once (computed here as NumPy's own add in ``dtype``). Any other value, even
    one ulp off (a fused or reassociated expression, a lower-precision intermediate), fails."""
    a, b = inputs
    exact = a.astype(dtype) + b.astype(dtype)
    return [Bounds(exact, exact)]


# --- auto: the launch heuristic -------------------------------------------------------------------
def choose(size):
    """(rung, threads, why) for N elements. Both rungs move the same bytes; four_per_thread keeps
    more in flight once the grid fills the GPU (N >= 4 x 256 threads x 4 blocks on every SM). Below
    that, one element a thread at 128 threads gives more, smaller blocks to spread over the SMs
    (tiny N is launch-bound either way)."""
    (n,) = size
    if n >= PER_THREAD * 256 * 4 * sm_count():
        return "four_per_thread", 256, "N fills every SM at 4 elements a thread"
    return "element_per_thread", 128, "small N: more blocks to spread over the SMs"


def cupy_vecadd(cp, a, b, out):
    """CuPy: ``cupy.add(a, b, out=c)``, one elementwise kernel."""
    return (cp.add(a, b, out=out[0]),)


def torch_vecadd(torch, a, b, out):
    """torch: ``torch.add(a, b, out=c)``."""
    return (torch.add(a, b, out=out[0]),)


RUNGS = {
    "element_per_thread": Variant(
        "element_per_thread", "one thread per element, bounds-guarded (CUDA Programming Guide, VecAdd)",
        launch, launch_once(vecadd_kernel)),
    "four_per_thread": Variant(
        "four_per_thread", "4 elements a thread, 8 loads in flight before the first add",
        launch_x4, launch_once(vecadd_x4_kernel)),
}

SPEC = KernelSpec(
    name="vecadd",
    summary="c = a + b, one thread per element",
    size_help="N (elements), e.g. 67108864",
    default_size=lambda simulator: (1000,) if simulator else (1 << 26,),
    in_shapes=lambda size: [size, size],
    make_inputs=make_inputs,
    out_specs=lambda size, dtype: [(size, np.dtype(dtype))],
    reference=reference,
    tolerance=tolerance,
    bytes_moved=lambda size, dtype: 3 * size[0] * np.dtype(dtype).itemsize,
    flops=lambda size: size[0],
    variants={**RUNGS, "auto": auto_variant(
        choose, RUNGS, "picks the rung and threads from N and the SM count (see choose())", kernel="vecadd")},
    order=10,
    contenders={"cupy": (("cupy.add", cupy_vecadd),), "torch": (("torch.add", torch_vecadd),)},
    torch_op=dict(rungs=("element_per_thread", "element_per_thread"),
                  doc="a + b, same shape (any shape, flattened); autograd"),
    bench_sizes=(("67108864", 256), ("67108864", 1024)),
    targets=(dict(size=(67108864,), against="torch.add", bound=0.95),),
    sweep=dict(shapes=("1", "1000", "100003", "1048576", "4194305", "16777216", "67108864", "134217728"),
               against="torch.add", memory_bound=True),
    sim_cost={"element_per_thread": 0.05, "four_per_thread": 0.05, "auto": 0.05},
    tune_shapes={"simulator": ("1000",)},
    counter_size=(4096,),
    counter_metrics=("dram_bytes_ratio", "sectors_per_request"),
)
