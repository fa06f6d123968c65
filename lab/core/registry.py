"""The kernels' declarations as lab reads them: every kernel module declares its library contenders,
its torch op, its sizes and the rest in its ``KernelSpec`` (kernels/spec.py), and this module is
where lab looks them up. No table here names a kernel.

Contenders are ``(label, function, options)`` entries of ``KernelSpec.contenders``: the functions live
beside the kernel (its module, or kernels/contenders/<kernel>.py) and take their library's module first,
so neither the kernel nor this module imports torch, CuPy or Triton. Options:

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

Library ``"triton"``: Triton kernels on torch tensors, on a GPU or in Triton's CPU interpreter
(lab.core.triton_ops runs them; an interpreted row's label says so).

A kernel whose spec declares a ``torch_op`` with ``contender=True`` (``torch.ops.lab.<name>``,
torch_bridge.lab_ops) gets a torch row "numba via torch op", so the bridge's cost shows next to the
Numba rungs. Adding a kernel: docs/adding-a-kernel.md (its module and its tests; nothing here).
"""
from __future__ import annotations

from collections.abc import Callable

import kernels
from lab.core.triton_ops import row_label


def lab_op_label(kernel: str) -> str:
    """The label of the torch row that runs ``torch.ops.lab.<kernel>`` (the lab's kernel through the bridge)."""
    return f"numba via torch op (torch.ops.lab.{kernel})"


def spec(kernel: str):
    """The KernelSpec of ``kernel`` (kernels.load: imports its module, so the backend is chosen first)."""
    return kernels.load(kernel)


def specs() -> list:
    """Every kernel's spec, in kernels.NAMES order."""
    return [kernels.load(name) for name in kernels.NAMES]


def _lab_op(kernel: str) -> Callable:
    """The "numba via torch op" contender of ``kernel``: torch_bridge.contenders.lab_op, imported at its
    first call (torch_bridge imports torch)."""
    made = []

    def fn(torch, *inputs, out):
        if not made:  # torch_bridge imports torch: only when the row runs
            from torch_bridge.contenders import lab_op  # lazy: optional (torch)

            made.append(lab_op(kernel))
        return made[0](torch, *inputs, out=out)

    fn.__name__ = f"lab_op_{kernel}"
    return fn


def entries(library: str, kernel: str) -> list[tuple[str, Callable, dict]]:
    """(label, function, options) of ``library``'s contenders for ``kernel`` (empty if none), labels as
    the rows show them; for torch, the "numba via torch op" row last where the spec declares one."""
    s = spec(kernel)
    rows = s.contender_rows(library)
    if library == "triton":
        rows = [(row_label(label), fn, opts) for label, fn, opts in rows]
    if library == "torch" and s.torch_op is not None and s.torch_op.contender:
        rows.append((lab_op_label(kernel), _lab_op(kernel), {}))
    return rows


def options(library: str, kernel: str, label: str) -> dict:
    """The options of the contender behind ``label`` (``float32_inside``; empty if none)."""
    return next((opts for lab, _, opts in entries(library, kernel) if lab == label), {})


def labels(library: str, kernel: str) -> list[str]:
    return [label for label, _, _ in entries(library, kernel)]


def function(library: str, kernel: str, label: str) -> Callable:
    """The op behind ``label``: ``fn(lib, *inputs, out=outputs)``, ``lib`` the library's module (or the
    Triton namespace, lab.core.triton_ops.namespace). KeyError when ``kernel`` has no such row."""
    for lab, fn, _ in entries(library, kernel):
        if lab == label:
            return fn
    raise KeyError(f"no {library} contender {label!r} for {kernel}")


def no_contenders(kernel: str) -> str:
    """Why ``kernel`` has no library contender yet ("" when it has some)."""
    return spec(kernel).no_contenders


def lab_ops() -> tuple[str, ...]:
    """The kernels that are torch ops with the same inputs and outputs as their KernelSpec."""
    return tuple(s.name for s in specs() if s.torch_op is not None and s.torch_op.contender)
