"""The kernels' declarations as lab reads them: every kernel module declares its library contenders,
its torch op, its sizes and the rest in its ``KernelSpec`` (kernels/spec.py), and this module is
where lab looks them up. No table here names a kernel.

Contenders are ``(label, "module:function", options)`` entries of ``KernelSpec.contenders``,
imported only when that contender runs, so this module imports neither torch nor CuPy. Options:

* ``float32_inside``: the op computes in float32 whatever the input dtype (torch.quantize_per_tensor
  takes float32 only). With ``--dtype float64`` the runner checks it against the reference of the
  inputs rounded to float32, at float32's tolerance, and its row says "float32 inside" (against the
  float64 reference such a row could only fail, at .5 rounding boundaries).
* ``tf32``: the op multiplies on tensor cores with inputs rounded to TF32 (10 mantissa bits, float32
  accumulation): the runner checks it at the tolerance of a 10-bit mantissa (float16's eps, the
  same mantissa) instead of the input dtype's, and its row says "TF32".
* ``tolerance``: the op's own ``tolerance(inputs, refs, dtype)`` (a KernelSpec-style function, e.g.
  bfloat16 inputs: kernels.gemm.mma.precision_tolerances), checked against the float64 reference at
  it; ``why``: what its row says of it.

Library ``"triton"``: Triton kernels (lab.core.triton_ops) on torch tensors, on a GPU or in Triton's
CPU interpreter.

A kernel whose spec declares a ``torch_op`` with ``contender=True`` (``torch.ops.lab.<name>``,
torch_bridge.lab_ops) gets a torch row "numba via torch op", so the bridge's cost shows next to the
Numba rungs. Adding a kernel: docs/adding-a-kernel.md (its module and its tests; nothing here).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable

LAB_OP_LABEL = "numba via torch op (torch.ops.lab.{})"
LAB_OP_PATH = "torch_bridge.contenders:lab_op"  # a factory: lab_op(kernel) is the contender


def spec(kernel: str):
    """The KernelSpec of ``kernel`` (kernels.load: imports its module, so the backend is chosen first)."""
    import kernels

    return kernels.load(kernel)


def specs() -> list:
    """Every kernel's spec, in kernels.NAMES order."""
    import kernels

    return [kernels.load(name) for name in kernels.NAMES]


def _resolve(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _label(text: str) -> str:
    return _resolve(text[1:])() if text.startswith("@") else text


def _entries(library: str, kernel: str) -> list[tuple[str, str, dict]]:
    """(label, "module:function", options) of ``library``'s contenders for ``kernel``."""
    s = spec(kernel)
    rows = [(_label(label), path, dict(opts)) for label, path, opts in s.contenders.get(library, ())]
    if library == "torch" and s.torch_op is not None and s.torch_op.contender:
        rows.append((LAB_OP_LABEL.format(kernel), LAB_OP_PATH, {}))
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
            return _resolve(path)(kernel) if path == LAB_OP_PATH else _resolve(path)
    raise KeyError(f"no {library} contender {label!r} for {kernel}")


def no_contenders(kernel: str) -> str:
    """Why ``kernel`` has no library contender yet ("" when it has some)."""
    return spec(kernel).no_contenders


def lab_ops() -> tuple[str, ...]:
    """The kernels that are torch ops with the same inputs and outputs as their KernelSpec."""
    return tuple(s.name for s in specs() if s.torch_op is not None and s.torch_op.contender)
