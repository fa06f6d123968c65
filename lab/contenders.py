"""The contenders a kernel is run against: Numba (each variant), NumPy, CuPy and torch.

A contender turns host inputs into a :class:`Prepared`: a call to time, a way to poison its outputs
and a way to read them back. CuPy and torch are optional: they are imported only when used, and a
missing package or a backend they cannot use (the simulator) becomes a "skipped" row with the
reason, never a crash. Library ops per kernel live in ``CUPY_OPS`` here and in
``torch_bridge.ops.TORCH_OPS``; the NumPy contender is the kernel's own reference function run in
the input dtype.
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


def _with_canary(shape, dtype):
    """A device array of ``shape`` that is the front of a larger one; the rest is the canary that a
    kernel writing past the end of the output (a missing bounds guard) lands in.
    Returns (output view, whole buffer)."""
    from kernels.compiler import cuda

    shape = tuple(shape)
    row = int(np.prod(shape[1:], dtype=np.int64)) or 1
    extra = max(CANARY_ROWS, -(-CANARY_MIN // row))
    big = cuda.device_array((shape[0] + extra,) + shape[1:], dtype)
    return big[: shape[0]], big


def prepare_numba(spec, size, variant, launch, inputs, simulator: bool) -> Prepared:
    """Copy inputs to the device, allocate outputs (each followed by a canary region), and wrap
    ``variant.prepare``'s launch call."""
    from kernels.compiler import cuda

    d_in = [cuda.to_device(np.ascontiguousarray(a)) for a in inputs]
    pairs = [_with_canary(shape, dtype) for shape, dtype in spec.out_specs(size, inputs[0].dtype)]
    outs = [view for view, _ in pairs]
    enqueue = variant.prepare(launch, d_in, outs)
    canaries = {}
    salt = 1 + float(np.random.default_rng().random())

    def call():
        enqueue()
        return outs

    def poison(which=0):
        for i, (view, big) in enumerate(pairs):
            canaries[i] = canary_value(big.dtype, which, salt)
            fill = np.full(big.shape, canaries[i], big.dtype)
            fill[: view.shape[0]] = poison_value(big.dtype, which)
            big.copy_to_device(fill)

    def overrun():
        for i, (view, big) in enumerate(pairs):
            if i not in canaries:
                continue
            tail = big.copy_to_host()[view.shape[0]:]
            touched = tail != canaries[i]  # a NaN written there counts too (NaN != anything)
            if touched.any():
                first = int(np.argmax(touched.reshape(-1)))
                return (f"wrote past the end of output {i} (shape {tuple(view.shape)}): "
                        f"{int(touched.sum())} elements of the canary after it, the first {first} elements in")
        return None

    return Prepared(call, poison, lambda res: [o.copy_to_host() for o in res], cuda.synchronize,
                    "simulator" if simulator else "device", overrun=overrun)


# --- NumPy ----------------------------------------------------------------------------------------
def prepare_numpy(spec, inputs) -> Prepared:
    """The kernel's NumPy reference run in the input dtype, on the CPU (timed with perf_counter)."""
    return Prepared(call=lambda: spec.reference(*inputs), poison=lambda which=0: None,
                    read=lambda res: [np.asarray(r) for r in res], sync=lambda: None, timer_mode="host")


# --- CuPy -----------------------------------------------------------------------------------------
def _cupy_ops():
    """kernel name -> list of (label, fn(cp, *inputs, out=outputs) -> outputs)."""
    def vecadd(cp, a, b, out):
        return (cp.add(a, b, out=out[0]),)

    def matvec(cp, A, x, out):
        return (cp.matmul(A, x, out=out[0]),)

    ops = {"vecadd": [("cupy.add", vecadd)], "matvec": [("cupy.matmul (cuBLAS)", matvec)]}
    # matmul: cuBLAS SGEMM. CuPy leaves TF32 off unless the environment sets CUPY_TF32=1 (read when
    # CuPy loads); the label says which, and a TF32 run fails the float32 check, as it should.
    def matmul(cp, A, B, out):
        return (cp.matmul(A, B, out=out[0]),)

    import os

    tf32 = os.environ.get("CUPY_TF32", "0") not in ("", "0")
    ops["matmul"] = [(f"cupy.matmul (cuBLAS, TF32 {'on: CUPY_TF32=1' if tf32 else 'off unless CUPY_TF32=1'})",
                      matmul)]
    # softmax: cupyx.scipy.special.softmax takes no out=, so it returns a new array (CuPy runs the
    # max, subtract-exp, sum and divide as separate kernels).
    def softmax(cp, x, out):
        from cupyx.scipy.special import softmax as cupyx_softmax

        return (cupyx_softmax(x, axis=1),)

    ops["softmax"] = [("cupyx.scipy.special.softmax", softmax)]
    # quantize: x.min() and x.max() are two CuPy reductions (x read twice); a 2-thread kernel turns
    # them into (scale, zero_point) on the device (float64, the reference's rule), so nothing waits
    # for the host; one elementwise kernel writes the codes (x / scale + zero_point, clamped, rint =
    # half to even). 4 launches, 13 bytes an element for float32.
    quant = {}

    def quantize(cp, x, out):
        if not quant:
            quant["params"] = cp.ElementwiseKernel(
                "T lo, T hi", "T p",
                "double l = lo, h = hi;"
                "double s = h > l ? (h - l) / 255.0 : 1.0;"
                "double z = trunc(fmin(fmax(0.0 - l / s, 0.0), 255.0));"
                "p = (T)(i == 0 ? s : z)",
                "lab_quant_params")
            quant["codes"] = cp.ElementwiseKernel(
                "T x, raw T p", "uint8 q",
                "T v = fmin(fmax(x / p[0] + p[1], (T)0), (T)255); q = (unsigned char)rint(v)",
                "lab_quant_codes")
        quant["params"](x.min(), x.max(), out[1])
        quant["codes"](x, out[1], out[0])
        return out[0], out[1]

    ops["quantize"] = [("cupy min/max + ElementwiseKernel", quantize)]
    return ops


def prepare_cupy(spec, size, label, inputs) -> Prepared:
    import cupy as cp

    fn = dict(_cupy_ops()[spec.name])[label]
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
    if contender not in ("cupy", "torch"):
        return None
    from kernels.backend import gpu_count

    has_gpu = gpu_count()[0] > 0
    if not has_gpu:
        return "needs a CUDA GPU; this machine has none"
    if not installed(contender):
        return f"not installed (pip install 'numba-gpu-lab[{_cuda_extra() if contender == 'cupy' else 'torch'}]')"
    if simulator:
        return "needs a CUDA GPU; --sim (the CUDA simulator) is active"
    if contender == "torch":
        import torch

        if not torch.cuda.is_available():
            return (f"torch {torch.__version__} has no CUDA support here "
                    "(install a CUDA build: pip install 'numba-gpu-lab[torch]')")
    return None


def _cuda_extra() -> str:
    """The CuPy extra that matches the CUDA driver: cuda13 or cuda12 (cuDriverGetVersion)."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value // 1000 == 12:
            return "cuda12"
    except OSError:
        pass
    return "cuda13"


def library_labels(contender: str, kernel: str) -> list[str]:
    """The library ops that contender ``cupy`` or ``torch`` runs for ``kernel``."""
    if contender == "cupy":
        return [label for label, _ in _cupy_ops().get(kernel, [])]
    from torch_bridge.ops import labels

    return labels(kernel)


def prepare_library(contender: str, spec, size, label: str, inputs) -> Prepared:
    if contender == "cupy":
        return prepare_cupy(spec, size, label, inputs)
    import torch

    from torch_bridge import ops

    call, poison, read, release = ops.prepare(spec.name, label, inputs, spec.out_specs(size, inputs[0].dtype))
    return Prepared(call, poison, read, torch.cuda.synchronize, "device", release)
