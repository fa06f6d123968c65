"""How long Numba's CUDA simulator takes: a rough wall-time model, so a long run can say so first.

The simulator runs every CUDA thread of a block as a Python thread and interprets the kernel line
by line, so a call costs about

    seconds = sum over launches of  threads launched * per_thread_ms(variant) / 1e3
              + FLOPs of the problem * PER_FLOP_MS / 1e3

``per_thread_ms`` is the fixed cost of a simulated thread (start, index math, barriers and warp
shuffles, which the simulator emulates with locks); it differs by rung (a warp-shuffle reduction
costs ~20x an element-wise thread). ``PER_FLOP_MS`` is the interpreted cost of one multiply or add.
Both were measured with :func:`measure` (``python -m lab.bench.simcost``) on a 2-core CPU machine at the
simulator's default sizes and --threads 32 (2026-11-21; values below 0.05 rounded up); a faster CPU
runs proportionally faster. The estimate is rough (within ~2-3x): good enough to say "roughly
3 min" before a run and suggest a smaller --size. Checked: ``lab run matvec --threads 1024``
(48x80) was estimated at 1.6 min and took 76 s.
"""
from __future__ import annotations

# ms per simulated thread launched, per (kernel, variant); measured by measure() below
PER_THREAD_MS = {
    ("vecadd", "element_per_thread"): 0.7,
    ("vecadd", "four_per_thread"): 1.8,
    ("matvec", "row_per_thread"): 0.05,
    ("matvec", "warp_per_row"): 4.0,
    ("matvec", "warp_per_row_shared_x"): 6.3,
    ("matmul", "naive"): 0.05,
    ("matmul", "shared"): 1.5,
    ("matmul", "register_tiled"): 6.2,
    ("softmax", "naive"): 12.3,
    ("softmax", "fused"): 14.8,
    ("softmax", "online"): 9.1,
    ("quantize", "atomic_per_element"): 0.4,
    ("quantize", "atomic_per_block"): 22.1,
    ("quantize", "block_partials"): 53.6,
    ("quantize", "l2_tail_first"): 29.2,
}
DEFAULT_PER_THREAD_MS = 1.0  # a rung not measured yet
PER_FLOP_MS = 0.017


def call_seconds(kernel: str, launches: dict[str, int], flops: int) -> float:
    """Estimated simulator seconds for one call of each variant in ``launches`` (variant -> threads
    launched), summed."""
    ms = sum(n * PER_THREAD_MS.get((kernel, v), DEFAULT_PER_THREAD_MS) + flops * PER_FLOP_MS
             for v, n in launches.items())
    return ms / 1e3
