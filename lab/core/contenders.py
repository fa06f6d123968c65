"""The contenders a kernel is run against: Numba (each variant), NumPy, CuPy and torch.

A contender turns host inputs into a :class:`Prepared`: a call to time, a way to poison its outputs
and a way to read them back. CuPy and torch are optional: they are imported only when used, and a
missing package or a backend they cannot use (the simulator) becomes a "skipped" row with the
reason, never a crash. Which library ops each kernel runs against is declared in one place, the
kernel's KernelSpec (``contenders``, read through lab.core.registry; the ops live beside the kernel,
in its module or kernels/contenders/<kernel>.py); the NumPy contender is the kernel's own reference
function run in the input dtype.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from kernels import arrays as K
from kernels import backend
from kernels.spec import poison_value
from lab.core import registry, triton_ops
from lab.core.errors import LabError

CONTENDERS = ("numba", "numpy", "cupy", "torch", "triton")
# what runs when --contenders is not given: Triton is asked for by name (--contenders triton), since its
# first JIT compile on a fresh machine takes tens of seconds, and it is not yet timed on the H100
DEFAULT_CONTENDERS = ("numba", "numpy", "cupy", "torch")


@dataclass
class Prepared:
    """One contender ready to run: ``call`` enqueues it and returns its outputs (device or host
    arrays); ``poison(which=0)`` refills the outputs with ``poison_value(dtype, which)``; ``read``
    copies outputs to NumPy; ``sync`` waits; ``overrun()`` (Numba only) says what, if anything, was
    written into the canary region past the end of an output, else None."""

    call: Callable[[], Sequence[Any]]
    poison: Callable[..., None]
    read: Callable[[Sequence[Any]], list[np.ndarray]]
    sync: Callable[[], None]
    timer_mode: str  # "device", "host" or "simulator"
    release: Callable[[], None] = lambda: None
    overrun: Callable[[], str | None] | None = None


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# --- Numba ----------------------------------------------------------------------------------------
CANARY_ROWS = 128  # rows (elements, for 1-D outputs) of canary after each output: a 128-row tile's overhang
CANARY_MIN = 1024  # at least this many elements (a block of 1024 threads without a bounds guard)


def canary_value(dtype, which: int = 0, salt: float = 1.0):
    """What the canary after an output holds: a finite, unlikely value for floats, different for
    each prepared contender (``salt`` in [1, 2)), not the NaN poison: a kernel without a bounds guard
    that reads past the end of its inputs may read a freed canary of an earlier run and copy it (seen
    on the H100 with NaN canaries); for integers the poison of run ``which`` (two runs)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return dtype.type((-1.2345678e30 if which == 0 else 3.3333333e29) * salt)
    return poison_value(dtype, which)


def _with_canary(shape, dtype, arrays: str = "numba"):
    """A device array of ``shape`` that is the front of a larger one; the rest is the canary that a
    kernel writing past the end of the output (a missing bounds guard) lands in. ``arrays``: the
    library that allocates it (kernels.arrays.ARRAYS). Returns (output view, whole buffer)."""
    shape = tuple(shape)
    row = int(np.prod(shape[1:], dtype=np.int64)) or 1
    extra = max(CANARY_ROWS, -(-CANARY_MIN // row))
    big = K.empty((shape[0] + extra,) + shape[1:], dtype, arrays)
    return big[: shape[0]], big


def prepare_numba(spec, size, variant, launch, inputs, simulator: bool, arrays: str = "numba") -> Prepared:
    """Copy inputs to the device, allocate outputs (each followed by a canary region), and wrap
    ``variant.prepare``'s launch call. ``arrays`` owns the device buffers (``lab run --arrays``):
    "numba" (``cuda.to_device``/``cuda.device_array``), "torch" (CUDA tensors) or "cupy"; the rung's
    prepare takes them as they are (kernels.arrays.agnostic), and allocates its scratch from the
    same library. Poisoning, the canary check and the copy back work alike for all three."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba); the backend is chosen by now (the spec's module imported it)

    d_in = [K.from_host(a, arrays) for a in inputs]
    specs = spec.out_specs(size, inputs[0].dtype)
    pairs = [_with_canary(shape, dtype, arrays) for shape, dtype in specs]
    dtypes = [np.dtype(dtype) for _, dtype in specs]
    outs = [view for view, _ in pairs]
    enqueue = variant.prepare(launch, d_in, outs)
    canaries = {}
    salt = 1 + float(np.random.default_rng().random())

    def call():
        enqueue()
        return outs

    def poison(which=0):
        for i, (view, big) in enumerate(pairs):
            canaries[i] = canary_value(dtypes[i], which, salt)
            fill = np.full(tuple(big.shape), canaries[i], dtypes[i])
            fill[: view.shape[0]] = poison_value(dtypes[i], which)
            K.copy_from_host(big, fill)

    def overrun():
        for i, (view, big) in enumerate(pairs):
            if i not in canaries:
                continue
            tail = K.to_host(big)[view.shape[0]:]
            touched = tail != canaries[i]  # a NaN written there counts too (NaN != anything)
            if touched.any():
                first = int(np.argmax(touched.reshape(-1)))
                return (f"wrote past the end of output {i} (shape {tuple(view.shape)}): "
                        f"{int(touched.sum())} elements of the canary after it, the first {first} elements in")
        return None

    def release():
        d_in.clear(), pairs.clear(), outs.clear()
        K.release(arrays)

    return Prepared(call, poison, lambda res: [K.to_host(o) for o in res], cuda.synchronize,
                    "simulator" if simulator else "device", overrun=overrun,
                    release=release if arrays != "numba" else lambda: None)


def check_arrays(arrays: str, simulator: bool, numba: bool = True) -> None:
    """LabError (one line) when ``arrays`` is not one of kernels.arrays.ARRAYS, or the Numba rows
    (``numba``: whether any run) cannot have their buffers owned by it here (:func:`why_no_arrays`)."""
    if arrays not in K.ARRAYS:
        raise LabError(f"--arrays {arrays!r}: choose one of {', '.join(K.ARRAYS)}")
    why = why_no_arrays(arrays, simulator) if numba else None
    if why:
        raise LabError(why)


def why_no_arrays(arrays: str, simulator: bool) -> str | None:
    """None when ``lab run --arrays ARRAYS`` can run here, else the one-line reason: torch and CuPy
    arrays need a CUDA GPU (not the simulator) and the library installed with CUDA support."""
    if arrays == "numba":
        return None
    if simulator:
        return (f"--arrays {arrays}: {arrays} arrays live on a CUDA GPU and the CUDA simulator is active; "
                f"use --arrays numba here")
    why = why_unavailable(arrays, simulator)
    return None if why is None else f"--arrays {arrays}: {arrays} {why}; use --arrays numba"


# --- NumPy ----------------------------------------------------------------------------------------
def prepare_numpy(spec, inputs) -> Prepared:
    """The kernel's NumPy reference run in the input dtype, on the CPU (timed with perf_counter)."""
    return Prepared(call=lambda: spec.reference(*inputs), poison=lambda which=0: None,
                    read=lambda res: [np.asarray(r) for r in res], sync=lambda: None, timer_mode="host")


# --- CuPy -----------------------------------------------------------------------------------------
def prepare_cupy(spec, size, label, inputs) -> Prepared:
    import cupy as cp  # lazy: optional (cupy)

    fn = registry.function("cupy", spec.name, label)
    d_in = [cp.asarray(a) for a in inputs]
    outs = [cp.empty(shape, dtype) for shape, dtype in spec.out_specs(size, inputs[0].dtype)]

    def poison(which=0):
        for o in outs:
            o.fill(poison_value(o.dtype, which))

    def release():
        d_in.clear(), outs.clear()
        cp.get_default_memory_pool().free_all_blocks()

    return Prepared(lambda: fn(cp, *d_in, out=outs), poison, lambda res: [cp.asnumpy(r) for r in res],
                    cp.cuda.Device().synchronize, "device", release)


def why_unavailable(contender: str, simulator: bool) -> str | None:
    """None if the contender can run here, else the reason its row is skipped, with an install hint
    that fits this machine: none on a machine without a CUDA GPU (CuPy and torch's CUDA ops need one,
    and ``pip install 'numba-gpu-lab[torch]'`` there would pull GBs of CUDA wheels for nothing)."""
    if contender == "triton":  # on a GPU, or in Triton's CPU interpreter (lab.core.triton_ops)
        return triton_ops.why_unavailable()
    if contender not in ("cupy", "torch"):
        return None
    has_gpu = backend.gpu_count()[0] > 0
    if not has_gpu:
        return "needs a CUDA GPU; this machine has none"
    if not installed(contender):
        return f"not installed (pip install 'numba-gpu-lab[{_cuda_extra() if contender == 'cupy' else 'torch'}]')"
    if simulator:
        return "needs a CUDA GPU; --sim (the CUDA simulator) is active"
    if contender == "torch":
        import torch  # lazy: optional (torch)

        if not torch.cuda.is_available():
            return (f"torch {torch.__version__} has no CUDA support here "
                    "(install a CUDA build: pip install 'numba-gpu-lab[torch]')")
    return None


def _cuda_extra() -> str:
    """The CuPy extra that matches the CUDA driver: cuda13 or cuda12 (cuDriverGetVersion)."""
    return "cuda12" if (backend.driver_version() or 0) // 1000 == 12 else "cuda13"


def library_labels(contender: str, kernel: str) -> list[str]:
    """The library ops that contender ``cupy`` or ``torch`` runs for ``kernel``."""
    return registry.labels(contender, kernel)


def float32_inside(contender: str, kernel: str, label: str) -> bool:
    """Whether the library op behind ``label`` computes in float32 whatever the input dtype (the
    registry's ``float32_inside`` option): the runner then checks it against float32 inputs."""
    return bool(registry.options(contender, kernel, label).get("float32_inside"))


def prepare_library(contender: str, spec, size, label: str, inputs) -> Prepared:
    if contender == "cupy":
        return prepare_cupy(spec, size, label, inputs)
    if contender == "triton":
        call, poison, read, sync, mode, release = triton_ops.prepare(
            registry.function("triton", spec.name, label), inputs, spec.out_specs(size, inputs[0].dtype))
        return Prepared(call, poison, read, sync, mode, release)
    import torch  # lazy: optional (torch); optional, as CuPy: only when a torch row runs

    from torch_bridge import contenders as ops  # lazy: optional (torch)

    fn = registry.function("torch", spec.name, label)
    call, poison, read, release = ops.prepare(fn, inputs, spec.out_specs(size, inputs[0].dtype))
    return Prepared(call, poison, read, torch.cuda.synchronize, "device", release)
