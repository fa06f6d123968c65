"""``python -m torch_bridge.bench_launch``: host latency per call of a small op (by default a 1024-element
vecadd): Numba direct, the torch bridge, the fast launch path, CuPy, torch (GPU).

    python -m torch_bridge.bench_launch [--kernel K] [--n 1024] [--size S] [--calls 2000] [--rounds 15]
                                        [--json PATH] [--profile N]

An entry point kept as spelled: the command is ``python -m lab.cli.scripts launch-overhead``
(lab.cli.scripts), its rows torch_bridge.overhead, its timing lab.bench.launch_overhead (lab.core.timing's
host clock: ``--calls`` back-to-back calls a sample, ``--rounds`` samples, median and minimum). Output: a
Markdown table headed by the device and the compiler; ``--json PATH``: the results document (device,
compiler, n, rows [[call, median us, min us]], ... and each row's structured stop reason) for
docs/results/launch-overhead.json. This module alone of torch_bridge imports lab (pyproject.toml's
contract says so), as ``python -m lab.bench`` does lab.cli.
"""
from lab.cli.scripts import launch_overhead

if __name__ == "__main__":
    raise SystemExit(launch_overhead())
