"""The mutation suite: wrong kernels (tests/mutants.py) must FAIL the check that ``lab run`` uses,
and every real rung must pass it, on the same inputs. Runs in the simulator (CI) and with -m gpu.

A mutant "fails" the way a contender fails in ``lab run``: ``lab.core.check.check_prepared`` returns a
verdict that is not ok, or the run raises (the simulator raises IndexError on an out-of-bounds
access; the runner turns a raising contender into a FAIL row).
"""
import numpy as np
import pytest

import kernels
from kernels.compiler import COMPILER
from lab.core import contenders as C
from lab.core.check import check_prepared
from tests.kernels import mutants as M
from tests.conftest import SIMULATOR, skip_unavailable

pytestmark = pytest.mark.gpu

# (size, threads): not a multiple of the block anywhere, several blocks, K >= 64 for the dot products.
CASES = {
    "vecadd": ((300,), 64),
    "matvec": ((20, 150), 64),
    "matmul": ((40, 19, 70), 64),
    "softmax": ((8, 70), 32),
    "quantize": ((300,), 64),
}


def verdict(kernel, v, rng, make_inputs=None):
    """(ok, reason) of variant ``v`` of ``kernel`` on fresh random inputs, checked as lab run does."""
    spec = kernels.load(kernel)
    size, threads = CASES[kernel]
    dtype = np.dtype(np.float32)
    inputs = make_inputs(size[0], rng) if make_inputs else spec.make_inputs(size, dtype, rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    own = getattr(v, "tolerance", None)  # a rung with coarser arithmetic (TF32) has its own, as lab run holds it
    tols = own(inputs, refs, dtype) if own else spec.tolerance(inputs, refs, dtype)
    try:
        prepared = C.prepare_numba(spec, size, v, v.launch(size, threads), inputs, SIMULATOR)
        checked = check_prepared(prepared, refs, tols, spec.out_specs(size, dtype))
    except Exception as e:  # the runner's FAIL row: "raised IndexError: ..."
        return False, f"raised {type(e).__name__}: {e}"
    return checked.verdict.ok, checked.verdict.reason


MUTANT_CASES = [(k, m) for k, ms in M.MUTANTS.items() for m in ms]


@pytest.mark.parametrize("kernel,mutant", MUTANT_CASES, ids=[f"{k}-{m.name}" for k, m in MUTANT_CASES])
def test_mutant_fails(kernel, mutant, rng):
    make = M.QUANTIZE_INPUTS.get(mutant.name, M.quantize_inputs) if kernel == "quantize" else None
    ok, reason = verdict(kernel, mutant, rng, make)
    assert not ok, f"wrong kernel {kernel}/{mutant.name} passed the check"
    print(f"{kernel}/{mutant.name}: {reason}")


REAL_CASES = [(k, v) for k in M.MUTANTS for v in kernels.load(k).variants]


SLOW_REAL_CASES = {("matmul", "register_tiled"), ("matmul", "tensor_core_tf32"),  # > 5 s in the simulator on a 2-core CPU
                   ("matmul", "tensor_core_bf16")}


@pytest.mark.parametrize("kernel,variant", [
    pytest.param(k, v, id=f"{k}-{v}", marks=[pytest.mark.slow] if (k, v) in SLOW_REAL_CASES else []) for k, v in REAL_CASES])
def test_real_rung_passes(kernel, variant, rng):
    skip_unavailable(kernel, variant)
    make = M.quantize_inputs if kernel == "quantize" else None
    ok, reason = verdict(kernel, kernels.load(kernel).variants[variant], rng, make)
    assert ok, f"{kernel}/{variant}: {reason}"


def test_at_least_five_mutants_per_kernel():
    # the five kernels of the trust issue; dequantize and quantize_per_channel came later (issue 11)
    assert {"vecadd", "matvec", "matmul", "softmax", "quantize"} <= set(M.MUTANTS)
    assert all(len(ms) >= 5 for ms in M.MUTANTS.values())


@pytest.mark.parametrize("name,why", [("last_code_unwritten", "never written"),
                                      ("truncating", "outside the tolerance")])
def test_quantize_mutants_fail_for_the_right_reason(name, why, rng):
    """The unwritten last code is 171, the first poison: only the second poison exposes it."""
    mutant = next(m for m in M.QUANTIZE if m.name == name)
    ok, reason = verdict("quantize", mutant, rng, M.QUANTIZE_INPUTS.get(name, M.quantize_inputs))
    if COMPILER == "numba-cuda-mlir" and "InternalCompilerError" in reason:
        # numba-cuda-mlir 0.6.0 crashes compiling uint32(min(max(v, lo), hi)) in this mutant (and
        # rejects math.floor of a float32): the mutant cannot run there, so it proves nothing there
        pytest.xfail(f"numba-cuda-mlir cannot compile the {name} mutant: {reason.splitlines()[0]}")
    assert not ok and why in reason, reason


def test_missing_bounds_guard_is_caught_by_the_canary_or_raises(rng):
    mutant = next(m for m in M.VECADD if m.name == "no_bounds_guard")
    ok, reason = verdict("vecadd", mutant, rng)
    assert not ok and ("wrote past the end" in reason or "raised" in reason), reason
