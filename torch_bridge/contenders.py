"""Running torch contenders for ``lab run``: their CUDA inputs and poisonable outputs (:func:`prepare`),
and the "numba via torch op" row (:func:`lab_op`).

The ops themselves live beside their kernels (each kernel module's KernelSpec, ``contenders``; lab.core.
registry reads it): ``fn(torch, *inputs, out=outputs) -> outputs`` on CUDA tensors, this module's
``torch`` passed in. ``lab_op(kernel)`` runs the lab's own Numba kernel through ``torch.ops.lab.<kernel>``
(torch_bridge.lab_ops): the bridge's cost next to a direct launch.
"""
from __future__ import annotations

import numpy as np
import torch

from kernels.spec import poison_value


# --- the lab's own kernels as torch ops: what the bridge costs next to a direct launch ---
def _lab(name):
    import torch_bridge.lab_ops  # noqa: F401  (registers torch.ops.lab.*)  # lazy: backend chosen first (numba)

    return getattr(torch.ops.lab, name)


def prepare(fn, inputs, out_specs):
    """CUDA copies of ``inputs`` and poisonable outputs for the torch contender function ``fn``
    (declared in a KernelSpec, found through lab.core.registry); returns (call, poison, read, release)."""
    d_in = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in inputs]
    outs = [torch.empty(shape, dtype=_torch_dtype(dt), device="cuda") for shape, dt in out_specs]
    if torch.cuda.current_stream().cuda_stream != 0:
        raise RuntimeError("torch is not on the default stream; the lab's CUDA events time stream 0")

    def poison(which=0):
        for o in outs:
            o.fill_(poison_value(_numpy_dtype(o.dtype), which))

    def release():
        d_in.clear(), outs.clear()
        torch.cuda.empty_cache()

    return (lambda: fn(torch, *d_in, out=outs), poison,
            lambda res: [r.cpu().numpy() for r in res], release)


def _torch_dtype(dt):
    return torch.from_numpy(np.empty(0, dtype=dt)).dtype


def _numpy_dtype(dt):
    return torch.empty(0, dtype=dt).numpy().dtype


def lab_op(kernel: str):
    """The "numba via torch op" contender of ``kernel`` (lab.core.registry builds it for a kernel whose
    spec declares its torch op a contender): ``fn(torch, *inputs, out=outputs)`` that calls
    ``torch.ops.lab.<kernel>`` and returns its outputs as a tuple, in the spec's layout: outputs of the
    op past the spec's count are the spec's last output's elements, stacked (quantize's op returns q,
    scale, zero_point; its spec holds (q, [scale, zero_point]))."""
    op = _lab(kernel)

    def fn(torch, *inputs, out):
        res = op(*inputs)
        res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
        if len(res) > len(out):
            res = (*res[:len(out) - 1], torch.stack([torch.as_tensor(r) for r in res[len(out) - 1:]]))
        return res

    fn.__name__ = f"lab_op_{kernel}"
    return fn
