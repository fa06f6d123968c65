"""One registry of library contenders: for each kernel, the CuPy and torch ops `lab run` times it
against, declared here and nowhere else.

Kernel modules cannot import torch or CuPy, so they name no contenders; the runner asks this
registry (through lab.core.contenders) and knows no kernel by name. Entries are ``(label,
"module:function")``, imported only when that contender runs, so this module imports neither torch
nor CuPy. An entry may carry a third element, a dict of options:

* ``float32_inside``: the op computes in float32 whatever the input dtype (torch.quantize_per_tensor
  takes float32 only). With ``--dtype float64`` the runner checks it against the reference of the
  inputs rounded to float32, at float32's tolerance, and its row says "float32 inside" (against the
  float64 reference such a row could only fail, at .5 rounding boundaries).
* ``tf32``: the op multiplies on tensor cores with inputs rounded to TF32 (10 mantissa bits, float32
  accumulation): the runner checks it at the tolerance of a 10-bit mantissa (float16's eps, the
  same mantissa) instead of the input dtype's, and its row says "TF32".

Library ``"triton"``: Triton kernels (lab.core.triton_ops) on torch tensors, on a GPU or in Triton's
CPU interpreter.

Adding a kernel: its module in kernels/, its tests, and its lines here (plus the op
functions in torch_bridge.contenders / lab.core.cupy_ops). A kernel that is also a torch op
(``torch.ops.lab.<name>``, torch_bridge.lab_ops) gets a torch row "numba via torch op", so the
bridge's cost shows next to the Numba rungs.
"""
from __future__ import annotations

import importlib
from typing import Callable

CONTENDERS: dict[str, dict[str, list[tuple]]] = {
    "vecadd": {"cupy": [("cupy.add", "lab.core.cupy_ops:vecadd")],
               "torch": [("torch.add", "torch_bridge.contenders:torch_vecadd")]},
    "matvec": {"cupy": [("cupy.matmul (cuBLAS)", "lab.core.cupy_ops:matvec")],
               "torch": [("torch.mv (cuBLAS)", "torch_bridge.contenders:torch_matvec")]},
    "matmul": {"cupy": [("@lab.core.cupy_ops:matmul_label", "lab.core.cupy_ops:matmul")],
               "torch": [("torch.matmul (cuBLAS, TF32 off)", "torch_bridge.contenders:torch_matmul")],
               "triton": [("@lab.core.triton_ops:matmul_fp32_label", "lab.core.triton_ops:matmul_fp32"),
                          ("@lab.core.triton_ops:matmul_tf32_label", "lab.core.triton_ops:matmul_tf32",
                           {"tf32": True})]},
    "softmax": {"cupy": [("cupyx.scipy.special.softmax", "lab.core.cupy_ops:softmax")],
                "torch": [("torch.softmax", "torch_bridge.contenders:torch_softmax"),
                          ("torch.compile(naive softmax)", "torch_bridge.contenders:torch_softmax_compiled")],
                "triton": [("@lab.core.triton_ops:softmax_label", "lab.core.triton_ops:softmax")]},
    "quantize": {"cupy": [("cupy min/max + ElementwiseKernel", "lab.core.cupy_ops:quantize")],
                 "torch": [("ARENA quantize_tensor (torch ops, host syncs)", "torch_bridge.contenders:torch_quantize_seed"),
                           ("torch.aminmax + torch.quantize_per_tensor", "torch_bridge.contenders:torch_quantize_aminmax",
                            {"float32_inside": True})]},
    "dequantize": {"cupy": [("cupy (q - zero_point) * scale", "lab.core.cupy_ops:dequantize")],
                   "torch": [("torch (q - zero_point) * scale", "torch_bridge.contenders:torch_dequantize")]},
}
# Kernels with no library contender yet, and why (the registry test holds every kernel to one or the other)
NO_CONTENDERS = {
    "quantize_per_channel": "torch.quantize_per_channel and a CuPy twin are not yet checked on a GPU "
                            "against the strict code check (kernels/quantize.py)",
}
# Kernels that are torch ops with the same inputs and outputs as their KernelSpec (torch_bridge.lab_ops)
LAB_OPS = ("vecadd", "matvec", "matmul", "softmax", "quantize")
LAB_OP_LABEL = "numba via torch op (torch.ops.lab.{})"


def _resolve(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _label(text: str) -> str:
    return _resolve(text[1:])() if text.startswith("@") else text


def _entries(library: str, kernel: str) -> list[tuple[str, str, dict]]:
    """(label, "module:function", options) of ``library``'s contenders for ``kernel``."""
    rows = [(_label(e[0]), e[1], dict(e[2]) if len(e) > 2 else {})
            for e in CONTENDERS.get(kernel, {}).get(library, [])]
    if library == "torch" and kernel in LAB_OPS:
        rows.append((LAB_OP_LABEL.format(kernel), f"torch_bridge.contenders:lab_op_{kernel}", {}))
    return rows


def entries(library: str, kernel: str) -> list[tuple[str, str]]:
    """(label, "module:function") of ``library``'s contenders for ``kernel`` (empty if none)."""
    return [(label, path) for label, path, _ in _entries(library, kernel)]


def options(library: str, kernel: str, label: str) -> dict:
    """The options of the contender behind ``label`` (``float32_inside``; empty if none)."""
    for lab, _, opts in _entries(library, kernel):
        if lab == label:
            return opts
    return {}


def labels(library: str, kernel: str) -> list[str]:
    return [label for label, _ in entries(library, kernel)]


def function(library: str, kernel: str, label: str) -> Callable:
    """The op behind ``label``: ``fn(*inputs, out=outputs)`` (CuPy's take ``cp`` first)."""
    for lab, path in entries(library, kernel):
        if lab == label:
            return _resolve(path)
    raise KeyError(f"no {library} contender {label!r} for {kernel}")
