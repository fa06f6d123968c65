"""torch contenders for ``lab run``: per kernel, the library op(s) a student compares against.

Each entry is (label, fn(*inputs, out=outputs) -> outputs); inputs and outputs are CUDA tensors.
"""
from __future__ import annotations

import numpy as np
import torch

from kernels.spec import poison_value


def _vecadd(a, b, out):
    return (torch.add(a, b, out=out[0]),)


def _matvec(A, x, out):
    return (torch.mv(A, x, out=out[0]),)


TORCH_OPS = {
    "vecadd": [("torch.add", _vecadd)],
    "matvec": [("torch.mv (cuBLAS)", _matvec)],
}
# --- matmul (issue 3): TORCH_OPS["matmul"] = [...] ---
# --- softmax (issue 3): TORCH_OPS["softmax"] = [...] ---
# --- quantize (issue 3): TORCH_OPS["quantize"] = [...] ---


def labels(kernel: str) -> list[str]:
    return [label for label, _ in TORCH_OPS.get(kernel, [])]


def prepare(kernel: str, label: str, inputs, out_specs):
    """CUDA copies of ``inputs`` and poisonable outputs; returns (call, poison, read, release)."""
    fn = dict(TORCH_OPS[kernel])[label]
    d_in = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in inputs]
    outs = [torch.empty(shape, dtype=_torch_dtype(dt), device="cuda") for shape, dt in out_specs]
    if torch.cuda.current_stream().cuda_stream != 0:
        raise RuntimeError("torch is not on the default stream; the lab's CUDA events time stream 0")

    def poison():
        for o in outs:
            o.fill_(poison_value(_numpy_dtype(o.dtype)))

    def release():
        d_in.clear(), outs.clear()
        torch.cuda.empty_cache()

    return (lambda: fn(*d_in, out=outs), poison,
            lambda res: [r.cpu().numpy() for r in res], release)


def _torch_dtype(dt):
    return torch.from_numpy(np.empty(0, dtype=dt)).dtype


def _numpy_dtype(dt):
    return torch.empty(0, dtype=dt).numpy().dtype
