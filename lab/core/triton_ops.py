"""Running Triton contenders for ``lab run``: where they run, their labels, their inputs and outputs.

Triton is what a kernel hacker compares a Python kernel against: a block-level language (one
*program* computes a tile; Triton picks the threads, shared memory and tensor-core instructions).
The Triton ops live beside their kernels (a KernelSpec's ``contenders``, library ``"triton"``: e.g.
kernels/contenders/matmul.py's tiled matmul, kernels/contenders/softmax.py's fused softmax), each
``fn(tr, *inputs, out=outputs)`` on torch tensors, ``tr`` the :func:`namespace` this module passes in
(``triton``, ``tl``, ``torch``, ``interpreted``), so kernels/ imports none of them. Each is checked like
every contender.

Where they run: on the GPU where Triton is installed (it comes with CUDA builds of torch); else, where
Triton and torch are installed, on the CPU under Triton's interpreter (``TRITON_INTERPRET=1``, set
here before the first op defines its kernels: it must be set when ``@triton.jit`` runs). Interpreted
rows say so in their label (:func:`row_label`); their times are the interpreter's (NumPy), not a GPU's.
Nothing here imports Triton or torch until an op runs.
"""
from __future__ import annotations

import importlib.util
import os
from types import SimpleNamespace

import numpy as np

from kernels import backend
from kernels.spec import poison_value

INTERPRET_ENV = "TRITON_INTERPRET"


def installed() -> bool:
    """Whether Triton and torch are importable."""
    return all(importlib.util.find_spec(m) is not None for m in ("triton", "torch"))


def interpreted() -> bool:
    """Whether the ops run in Triton's CPU interpreter: ``TRITON_INTERPRET=1``, the CUDA simulator
    is active, the driver reports no GPU, or torch has no CUDA device."""
    if os.environ.get(INTERPRET_ENV, "0") not in ("", "0"):
        return True
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return True
    if backend.gpu_count()[0] == 0:
        return True
    import torch  # lazy: optional (torch)

    return not torch.cuda.is_available()


def why_unavailable() -> str | None:
    """None when the Triton contender can run here (on a GPU, or interpreted), else why not."""
    if importlib.util.find_spec("torch") is None:
        return "needs torch (pip install 'numba-gpu-lab[torch]')"
    if importlib.util.find_spec("triton") is None:
        return "not installed (pip install triton; CUDA builds of torch bring it)"
    return None


def row_label(label: str) -> str:
    """The label a Triton row shows: the declared one, which says ", interpreted on the CPU" inside its
    closing parenthesis (or after it, in parentheses) when the ops run in the interpreter."""
    if not interpreted():
        return label
    return label[:-1] + ", interpreted on the CPU)" if label.endswith(")") else label + " (interpreted on the CPU)"


_NS: dict = {}


def namespace() -> SimpleNamespace:
    """What a Triton op is given first: ``triton``, ``tl`` (triton.language), ``torch`` and
    ``interpreted`` (bool), made once, after TRITON_INTERPRET is set for an interpreted run."""
    if not _NS:
        interp = interpreted()
        if interp:
            os.environ[INTERPRET_ENV] = "1"  # read by @triton.jit when an op defines its kernel
        import torch  # lazy: optional (torch)
        import triton  # lazy: optional (triton)
        import triton.language as tl  # lazy: optional (triton)

        _NS["ns"] = SimpleNamespace(triton=triton, tl=tl, torch=torch, interpreted=interp)
    return _NS["ns"]


def prepare(fn, inputs, out_specs):
    """``fn``'s inputs and poisonable outputs as torch tensors on the GPU (on the CPU when
    interpreted); returns (call, poison, read, sync, timer_mode, release), the parts of a
    lab.core.contenders.Prepared. Timed with CUDA events on the GPU, perf_counter interpreted."""
    import torch  # lazy: optional (torch)

    dev = "cpu" if interpreted() else "cuda"
    if dev == "cuda" and torch.cuda.current_stream().cuda_stream != 0:
        raise RuntimeError("torch is not on the default stream; the lab's CUDA events time stream 0")
    d_in = [torch.from_numpy(np.ascontiguousarray(a)).to(dev) for a in inputs]
    outs = [torch.from_numpy(np.empty(shape, dt)).to(dev) for shape, dt in out_specs]

    dtypes = [np.dtype(dt) for _, dt in out_specs]

    def poison(which=0):
        for o, dt in zip(outs, dtypes):
            o.fill_(poison_value(dt, which))

    def release():
        d_in.clear(), outs.clear()
        if dev == "cuda":
            torch.cuda.empty_cache()

    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    tr = namespace()
    return (lambda: fn(tr, *d_in, out=outs), poison, lambda res: [r.cpu().numpy() for r in res], sync,
            "device" if dev == "cuda" else "host", release)
