"""Benchmarks built on the engine (:mod:`lab.core`): the standard suite (``lab bench``), sweeps over
threads and sizes, the public shape sweep, the roofline, run comparisons, the compiler table and the
torch.profiler view. Data only: the CLI (:mod:`lab.cli`) renders and prints."""
