"""Run a kernel variant the way the runner does: poisoned outputs (two poisons for integer outputs),
canaries past each output, float64 reference, the spec's tolerances, through ``lab.core.check``."""
import numpy as np

from lab.core import contenders as C
from lab.core.check import check_prepared


def run_variant(spec, variant, size, threads, rng, dtype=np.float32, simulator=True):
    """Run ``variant`` once on fresh random inputs; returns (ok, max_abs_err, outputs, refs)."""
    inputs = spec.make_inputs(size, np.dtype(dtype), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    tols = spec.tolerance(inputs, refs, np.dtype(dtype))
    v = spec.variants[variant]
    prepared = C.prepare_numba(spec, size, v, v.launch(size, threads), inputs, simulator)
    checked = check_prepared(prepared, refs, tols, spec.out_specs(size, np.dtype(dtype)))
    return checked.verdict.ok, checked.verdict.max_abs_err, checked.outputs, refs


def assert_passes(kernel: str, variant, size, threads, rng, simulator, dtype=np.float32):
    """:func:`run_variant` of ``kernel``'s ``variant``, asserting that it passes the check."""
    import kernels

    ok, err, *_ = run_variant(kernels.load(kernel), variant, size, threads, rng, dtype, simulator)
    assert ok, f"{kernel} {variant} at {size} ({np.dtype(dtype)}): max abs err {err}"
