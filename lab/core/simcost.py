"""How long Numba's CUDA simulator takes: a rough wall-time model, so a long run can say so first.

The simulator interprets every CUDA thread of a block (as a greenlet: lab.core.blocks) line by
line, so a call costs about

    seconds = sum over launches of  threads launched * per_thread_ms(variant) / 1e3
              + FLOPs of the problem * PER_FLOP_MS / 1e3

``per_thread_ms`` is the fixed cost of a simulated thread (start, index math, barriers and warp
shuffles, which the simulator emulates with locks); it differs by rung (a warp-shuffle reduction
costs ~10x an element-wise thread). ``PER_FLOP_MS`` is the interpreted cost of one multiply or add.
Each kernel's ``KernelSpec.sim_cost`` (ms per thread, per rung) was measured with
:func:`lab.bench.suite.measure_simcost` (``python -m lab.cli.scripts simcost``) on a 2-core CPU machine at the simulator's default sizes and --threads 32, with the
runner's switch interval of 0.2 ms (lab.core.runner.simulator_threads): the median of 3 runs on a
shared, loaded machine (values below 0.05 rounded up), last after blocks moved from threads to
greenlets (3-20x less a thread where a block has barriers). A faster or idle CPU runs
proportionally faster. The estimate is rough (within ~2-3x): good enough to say "roughly 3 min"
before a run, suggest a smaller --size, and refuse a run of hours without --yes.

A run makes, per variant: the checked first call (two for integer outputs, the two-poison check),
then only if timing was asked for (--repeats in the simulator) the warm-up and timed calls
(lab.core.runner.simulator_calls). Checked: ``lab run matvec --threads 1024`` (8x100, 1 call a row)
was estimated at 10 s and took 6-7 s including imports on the idle machine, 13-18 s on the loaded one
(split_k's 8 blocks of 1024 threads are most of it; such blocks cost more a thread than blocks of 32).
"""
from __future__ import annotations

import kernels

# ms per simulated thread launched, per variant: each kernel's ``KernelSpec.sim_cost`` (measured by
# lab.bench.suite.measure_simcost); per_thread_ms(kernel, variant) reads them.
DEFAULT_PER_THREAD_MS = 1.0  # a rung not measured yet
PER_FLOP_MS = 0.017


def per_thread_ms(kernel: str, variant: str) -> float:
    """ms per simulated thread of ``kernel``'s ``variant`` (its spec's sim_cost; DEFAULT_PER_THREAD_MS
    for a rung not measured yet)."""
    return kernels.load(kernel).sim_cost.get(variant, DEFAULT_PER_THREAD_MS)


def call_seconds(kernel: str, launches: dict[str, int], flops: int) -> float:
    """Estimated simulator seconds for one call of each variant in ``launches`` (variant -> threads
    launched), summed."""
    ms = sum(n * per_thread_ms(kernel, v) + flops * PER_FLOP_MS for v, n in launches.items())
    return ms / 1e3
