"""The contenders a kernel is run against: Numba (each variant), NumPy, CuPy and torch.

A contender turns host inputs into a :class:`Prepared`: a call to time, a way to poison its outputs
and a way to read them back. CuPy and torch are optional: they are imported only when used, and a
missing package or a backend they cannot use (the simulator) becomes a "skipped" row with the
reason, never a crash. Which library ops each kernel runs against is declared in one place,
torch_bridge/registry.py (ops in torch_bridge.cupy_ops and torch_bridge.ops); the NumPy
contender is the kernel's own reference function run in the input dtype.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from kernels.spec import poison_value

CONTENDERS = ("numba", "numpy", "cupy", "torch")


@dataclass
class Prepared:
    """One contender ready to run: ``call`` enqueues it and returns its outputs (device or host
    arrays); ``poison`` refills the outputs; ``read`` copies outputs to NumPy; ``sync`` waits."""

    call: Callable[[], Sequence[Any]]
    poison: Callable[[], None]
    read: Callable[[Sequence[Any]], list[np.ndarray]]
    sync: Callable[[], None]
    timer_mode: str  # "device", "host" or "simulator"
    release: Callable[[], None] = lambda: None


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# --- Numba ----------------------------------------------------------------------------------------
def prepare_numba(spec, size, variant, launch, inputs, simulator: bool) -> Prepared:
    """Copy inputs to the device, allocate outputs, and wrap ``variant.prepare``'s launch call."""
    from numba import cuda

    d_in = [cuda.to_device(np.ascontiguousarray(a)) for a in inputs]
    outs = [cuda.device_array(shape, dtype) for shape, dtype in spec.out_specs(size, inputs[0].dtype)]
    enqueue = variant.prepare(launch, d_in, outs)

    def call():
        enqueue()
        return outs

    def poison():
        for o in outs:
            o.copy_to_device(np.full(o.shape, poison_value(o.dtype), o.dtype))

    return Prepared(call, poison, lambda res: [o.copy_to_host() for o in res], cuda.synchronize,
                    "simulator" if simulator else "device")


# --- NumPy ----------------------------------------------------------------------------------------
def prepare_numpy(spec, inputs) -> Prepared:
    """The kernel's NumPy reference run in the input dtype, on the CPU (timed with perf_counter)."""
    return Prepared(call=lambda: spec.reference(*inputs), poison=lambda: None,
                    read=lambda res: [np.asarray(r) for r in res], sync=lambda: None, timer_mode="host")


# --- CuPy -----------------------------------------------------------------------------------------
def prepare_cupy(spec, size, label, inputs) -> Prepared:
    import cupy as cp

    from torch_bridge import registry

    fn = registry.function("cupy", spec.name, label)
    d_in = [cp.asarray(a) for a in inputs]
    outs = [cp.empty(shape, dtype) for shape, dtype in spec.out_specs(size, inputs[0].dtype)]

    def poison():
        for o in outs:
            o.fill(poison_value(o.dtype))

    def release():
        d_in.clear(), outs.clear()
        cp.get_default_memory_pool().free_all_blocks()

    return Prepared(lambda: fn(cp, *d_in, out=outs), poison, lambda res: [cp.asnumpy(r) for r in res],
                    cp.cuda.Device().synchronize, "device", release)


def why_unavailable(contender: str, simulator: bool) -> str | None:
    """None if the contender can run here, else the reason its row is skipped."""
    if contender in ("cupy", "torch"):
        if not installed(contender):
            extra = "cuda13" if contender == "cupy" else "torch"
            return f"not installed (pip install 'numba-gpu-lab[{extra}]')"
        if simulator:
            return "needs a CUDA GPU; the simulator backend is active"
        if contender == "torch":
            import torch

            if not torch.cuda.is_available():
                return f"torch {torch.__version__} has no CUDA support here"
    return None


def library_labels(contender: str, kernel: str) -> list[str]:
    """The library ops that contender ``cupy`` or ``torch`` runs for ``kernel``."""
    from torch_bridge import registry

    return registry.labels(contender, kernel)


def prepare_library(contender: str, spec, size, label: str, inputs) -> Prepared:
    if contender == "cupy":
        return prepare_cupy(spec, size, label, inputs)
    import torch

    from torch_bridge import ops

    call, poison, read, release = ops.prepare(spec.name, label, inputs, spec.out_specs(size, inputs[0].dtype))
    return Prepared(call, poison, read, torch.cuda.synchronize, "device", release)
