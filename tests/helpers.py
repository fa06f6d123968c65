"""Run a kernel variant the way the runner does: poisoned outputs, float64 reference, tolerances."""
import numpy as np

from lab import contenders as C
from lab.runner import check_outputs


def run_variant(spec, variant, size, threads, rng, dtype=np.float32, simulator=True):
    """Run ``variant`` once on fresh random inputs; returns (ok, max_abs_err, outputs, refs)."""
    inputs = spec.make_inputs(size, np.dtype(dtype), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    tols = spec.tolerance(inputs, refs, np.dtype(dtype))
    v = spec.variants[variant]
    prepared = C.prepare_numba(spec, size, v, v.launch(size, threads), inputs, simulator)
    prepared.poison()
    outs = prepared.read(prepared.call())
    ok, err, _ = check_outputs(outs, refs, tols)
    return ok, err, outs, refs
