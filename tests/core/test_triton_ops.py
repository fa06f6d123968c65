"""Triton contenders (declared beside their kernels, run by lab.core.triton_ops): checked like every contender, on fresh random inputs of
sizes that are not multiples of the tile, outputs poisoned first, against the float64 reference.
Without a GPU they run in Triton's CPU interpreter (TRITON_INTERPRET=1) and say so in their label."""
import importlib.util

import numpy as np
import pytest

from lab.core import contenders as C
from kernels.contenders import matmul as CM
from kernels.contenders import softmax as CS
from lab.core import registry, triton_ops
from lab.core.catalog import load
from lab.core.check import check_prepared

needs_triton = pytest.mark.skipif(triton_ops.why_unavailable() is not None,
                                  reason=f"triton: {triton_ops.why_unavailable()}")


def test_registered_for_matmul_and_softmax_with_tf32_marked():
    assert [f for _, f, _ in registry.entries("triton", "matmul")] == [CM.triton_matmul_fp32, CM.triton_matmul_tf32]
    assert [f for _, f, _ in registry.entries("triton", "softmax")] == [CS.triton_softmax]
    fp32, tf32 = registry.labels("triton", "matmul")
    assert "FP32" in fp32 and "TF32" in tf32
    assert registry.options("triton", "matmul", tf32) == {"tf32": True} and not registry.options("triton", "matmul", fp32)
    assert "triton" in C.CONTENDERS


def test_without_triton_the_row_says_how_to_get_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "triton" else real(name, *a))
    assert "pip install triton" in C.why_unavailable("triton", simulator=True)


CASES = [("matmul", (37, 45, 29)), ("matmul", (1, 33, 70)), ("softmax", (5, 70)), ("softmax", (3, CS.ONE_PASS_COLS + 37))]


@needs_triton
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel,size", CASES)
def test_each_op_passes_the_runners_check(kernel, size, dtype):
    spec = load(kernel)
    rng = np.random.default_rng()
    inputs = spec.make_inputs(size, np.dtype(dtype), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    for label in registry.labels("triton", kernel):
        if triton_ops.interpreted():
            assert "interpreted on the CPU" in label
        tf32 = registry.options("triton", kernel, label).get("tf32")
        tols = spec.tolerance(inputs, refs, np.dtype(np.float16) if tf32 else np.dtype(dtype))
        prepared = C.prepare_library("triton", spec, size, label, inputs)
        try:
            checked = check_prepared(prepared, refs, tols, spec.out_specs(size, np.dtype(dtype)))
        finally:
            prepared.release()
        assert checked.verdict.ok, (label, checked.verdict.reason)
        assert checked.outputs[0].dtype == dtype and checked.outputs[0].shape == refs[0].shape


@needs_triton
def test_a_wrong_op_fails_the_check():
    """The check is real: a softmax that forgets to subtract the row max still passes on small
    inputs, one that skips the division does not."""
    spec = load("softmax")
    size = (4, 70)
    inputs = spec.make_inputs(size, np.dtype(np.float32), np.random.default_rng())
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    call, poison, read, sync, mode, release = triton_ops.prepare(
        lambda tr, x, out: (CS.triton_softmax(tr, x, out)[0] * 1.01,), inputs, spec.out_specs(size, np.dtype(np.float32)))
    prepared = C.Prepared(call, poison, read, sync, mode, release)
    assert not check_prepared(prepared, refs, spec.tolerance(inputs, refs, np.dtype(np.float32))).verdict.ok


def test_triton_runs_when_asked_for_by_name():
    """Not a default contender (its first JIT compile takes tens of seconds); --contenders triton asks."""
    from lab.core.runner import check_contenders

    assert check_contenders(None) == list(C.DEFAULT_CONTENDERS) and "triton" not in C.DEFAULT_CONTENDERS
    assert check_contenders(["numpy", "triton"]) == ["numpy", "triton"] and "triton" in C.CONTENDERS
