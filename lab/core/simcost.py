"""How long Numba's CUDA simulator takes: a rough wall-time model, so a long run can say so first.

The simulator runs every CUDA thread of a block as a Python thread and interprets the kernel line
by line, so a call costs about

    seconds = sum over launches of  threads launched * per_thread_ms(variant) / 1e3
              + FLOPs of the problem * PER_FLOP_MS / 1e3

``per_thread_ms`` is the fixed cost of a simulated thread (start, index math, barriers and warp
shuffles, which the simulator emulates with locks); it differs by rung (a warp-shuffle reduction
costs ~10x an element-wise thread). ``PER_FLOP_MS`` is the interpreted cost of one multiply or add.
PER_THREAD_MS was measured with :func:`lab.bench.suite.measure_simcost` (``python -m lab.cli.scripts
simcost``) on a 2-core CPU machine at the simulator's default sizes and --threads 32, with the
runner's switch interval of 0.2 ms (lab.core.runner.simulator_threads): the median of 3 runs on a
shared, loaded machine (2026-11-22; values below 0.05 rounded up). A faster or idle CPU runs
proportionally faster. The estimate is rough (within ~2-3x): good enough to say "roughly 3 min"
before a run, suggest a smaller --size, and refuse a run of hours without --yes.

A run makes, per variant: the checked first call (two for integer outputs, the two-poison check),
then only if timing was asked for (--repeats in the simulator) the warm-up and timed calls
(lab.core.runner.simulator_calls). Checked: ``lab run matvec --threads 1024`` (8x100, 1 call a row)
was estimated at 10 s and took 6-7 s including imports on the idle machine, 13-18 s on the loaded one
(split_k's 8 blocks of 1024 threads are most of it; such blocks cost more a thread than blocks of 32).
"""
from __future__ import annotations

# ms per simulated thread launched, per (kernel, variant); measured by lab.bench.suite.measure_simcost
PER_THREAD_MS = {
    ("vecadd", "element_per_thread"): 0.077,
    ("vecadd", "four_per_thread"): 0.05,
    ("vecadd", "auto"): 0.084,
    ("matvec", "row_per_thread"): 0.05,
    ("matvec", "warp_per_row"): 0.52,
    ("matvec", "warp_per_row_shared_x"): 0.71,
    ("matvec", "group_per_row"): 0.59,
    ("matvec", "split_k"): 1.0,
    ("matvec", "auto"): 0.46,
    ("matmul", "naive"): 0.05,
    ("matmul", "shared"): 0.2,
    ("matmul", "register_tiled"): 4.3,
    ("matmul", "tile64"): 0.98,
    ("matmul", "split_k"): 0.32,
    ("matmul", "skinny_m"): 0.05,
    ("matmul", "auto"): 0.86,
    ("softmax", "naive"): 1.8,
    ("softmax", "fused"): 1.1,
    ("softmax", "online"): 0.97,
    ("softmax", "group_rows"): 0.89,
    ("softmax", "split_row"): 2.3,
    ("softmax", "auto"): 0.53,
    ("quantize", "atomic_per_element"): 0.17,
    ("quantize", "atomic_per_block"): 1.7,
    ("quantize", "block_partials"): 3.5,
    ("quantize", "l2_tail_first"): 3.5,
    ("quantize", "auto"): 2.1,
    ("dequantize", "element_per_thread"): 0.05,
    ("dequantize", "row_blocks"): 0.05,
    ("dequantize", "auto"): 0.067,
    ("quantize_per_channel", "block_per_row"): 2.0,
    ("quantize_per_channel", "auto"): 2.0,
}
DEFAULT_PER_THREAD_MS = 1.0  # a rung not measured yet
PER_FLOP_MS = 0.017


def call_seconds(kernel: str, launches: dict[str, int], flops: int) -> float:
    """Estimated simulator seconds for one call of each variant in ``launches`` (variant -> threads
    launched), summed."""
    ms = sum(n * PER_THREAD_MS.get((kernel, v), DEFAULT_PER_THREAD_MS) + flops * PER_FLOP_MS
             for v, n in launches.items())
    return ms / 1e3
