"""A kernel as a torch operator, ``torch.ops.lab.<name>``: what its spec declares (:class:`TorchOp`,
``KernelSpec.torch_op``) and the pieces an op's declaration is written with (its checks, a product's
forward, the ``setup_context`` functions). torch_bridge.lab_ops registers the ops; nothing here imports
torch: a function that needs it takes it as its first argument (docs/adding-a-kernel.md, "The torch op").
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Size = tuple[int, ...]


@dataclass(frozen=True)
class TorchOp:
    """The kernel as a torch operator, ``torch.ops.lab.<name>``, declared here and registered by
    torch_bridge.lab_ops (docs/adding-a-kernel.md, "The torch op"). Every op's inputs get the checks all
    ops share (a tensor, float32 or float64 of one dtype, one device); then either

    * ``forward`` (and ``fake``): the op written in the kernel's module, or
    * ``schema`` + ``size_of`` alone: the op built from the spec (inputs of the spec's ``in_shapes``,
      made contiguous; outputs allocated from ``out_specs``; no gradient).

    rungs: (GPU rung, simulator rung) the op runs when the kernel has no ``auto`` variant.
    contender: the op takes the spec's inputs and returns its outputs, so ``lab run`` times it as
      the torch row "numba via torch op (torch.ops.lab.<name>)" (torch_bridge.contenders.lab_op).
    schema: the op's torch schema after its name, e.g. ``"(Tensor a) -> Tensor"``; its ``Tensor x``
      names are the inputs' names in every error message.
    size_of(*shapes) -> Size: the problem size from the input tensors' shapes (ops built from the spec).
    doc: one line for the op's docstring and docs/torch.md's table.
    ndims: input name -> the number of dimensions it must have ("lab.<op>: x must be 2-D, got shape ...").
    fixed_dtypes: input name -> the torch dtype name it must have (``"uint8"``), checked before the rest;
      the other inputs are float32 or float64.
    check(torch, *tensors): the op's own checks after the shared ones (shapes that must agree), a
      one-line ValueError "lab.<op>: ..."; run by the real and the fake implementation.
    forward(torch, bridge, *tensors) -> output or tuple of outputs: the op on checked tensors. ``bridge``
      (torch_bridge.lab_ops): ``bridge.run(size, inputs, outputs)`` runs the kernel's chosen rung on
      contiguous tensors (its launch plan and tensor launcher), ``bridge.launch(kernel, grid, block,
      *tensors)`` launches one ``@cuda.jit`` kernel, ``bridge.threads`` the threads per block it uses.
    fake(torch, *tensors) -> the outputs' empty tensors, shapes and dtypes as ``forward``'s, nothing run
      (``torch.library.register_fake``: ``torch.compile`` traces the op).
    backward(torch, ctx, *grads) -> a gradient (or None) per input, with ``setup_context(ctx, inputs,
      output)`` (if it needs any) saving what it needs (``torch.library.register_autograd``'s contract; :func:`save_inputs`,
      :func:`save_output`). Without one an input that requires grad is a RuntimeError at the call, saying
      ``no_grad`` (why the op has no gradient).
    helpers: name -> TorchOp (or dict) of further ops the op needs, registered just before it (softmax's
      backward kernel as ``torch.ops.lab.softmax_backward``); each gives ``schema``, ``forward``, ``fake``.
    """

    rungs: tuple[str, str] = ("", "")
    contender: bool = True
    schema: str = ""
    size_of: Callable[..., Size] | None = None
    doc: str = ""
    ndims: dict = field(default_factory=dict)
    fixed_dtypes: dict = field(default_factory=dict)
    check: Callable | None = None
    forward: Callable | None = None
    fake: Callable | None = None
    backward: Callable | None = None
    setup_context: Callable | None = None
    no_grad: str = ""
    helpers: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "helpers", {name: TorchOp(**op) if isinstance(op, dict) else op
                                             for name, op in self.helpers.items()})

    @property
    def inputs(self) -> tuple[str, ...]:
        """The inputs' names, in order: the schema's ``Tensor x`` names."""
        return tuple(re.findall(r"Tensor (\w+)", self.schema.split("->")[0]))

    def problems(self) -> list[str]:
        """What is wrong with the declaration (KernelSpec checks it when the spec is defined): no schema,
        neither ``forward`` nor ``size_of``, a ``forward`` without its ``fake``, an ``ndims`` or
        ``fixed_dtypes`` name that is no input, a fixed dtype that is no NumPy dtype name."""
        if not self.schema:
            return ["no schema (the op's torch schema, e.g. \"(Tensor a) -> Tensor\")"]
        found = []
        if self.forward is None and self.size_of is None:
            found.append("neither forward nor size_of (the op is written, or built from the spec's shapes)")
        if self.forward is not None and self.fake is None:
            found.append("a forward without its fake (the outputs' shapes and dtypes, for torch.compile)")
        for what, named in (("ndims", self.ndims), ("fixed_dtypes", self.fixed_dtypes)):
            found += [f"{what} names {name!r}, not one of its inputs ({', '.join(self.inputs)})"
                      for name in named if name not in self.inputs]
        for name, dtype in self.fixed_dtypes.items():
            try:
                np.dtype(dtype)
            except TypeError:
                found.append(f"fixed_dtypes {name!r}: {dtype!r} is no dtype name")
        return found


def op_error(op: str, message: str) -> ValueError:
    """The one-line ValueError of torch op ``op``'s checks: "lab.<op>: <message>"."""
    return ValueError(f"lab.{op}: {message}")


def same_shape(op: str, a, b, an: str = "a", bn: str = "b") -> None:
    """A TorchOp ``check``: ValueError "lab.<op>: b has shape (3,), expected (4,) (a's shape)" unless
    tensors (or arrays) ``a`` and ``b`` (named ``an``, ``bn``) have one shape."""
    if a.shape != b.shape:
        raise op_error(op, f"{bn} has shape {tuple(b.shape)}, expected {tuple(a.shape)} ({an}'s shape)")


def inner_dims_agree(op: str, A, other, name: str) -> None:
    """A TorchOp ``check`` of ``A @ other`` (A 2-D; ``other`` named ``name``, 1-D or 2-D): ValueError
    "lab.<op>: x has 5 entries, expected 4 (A's columns)" unless ``other`` has as many rows as A has columns."""
    if A.shape[1] != other.shape[0]:
        raise op_error(op, f"{name} has {other.shape[0]} {'entries' if other.dim() == 1 else 'rows'}, "
                           f"expected {A.shape[1]} (A's columns)")


def product(torch, bridge, A, other, out_shape, size):
    """A TorchOp ``forward``'s body for ``A @ other``: contiguous inputs, the kernel run at ``size`` into
    a new ``out_shape`` tensor of A's dtype; zeros when A has no column."""
    A, other = A.contiguous(), other.contiguous()
    out = torch.empty(out_shape, dtype=A.dtype, device=A.device)
    if A.shape[1] == 0:
        return out.zero_()
    if out.numel():
        bridge.run(size, [A, other], [out])
    return out


def save_inputs(ctx, inputs, output) -> None:
    """A TorchOp's ``setup_context`` that keeps the inputs for its backward (``ctx.saved_tensors``)."""
    ctx.save_for_backward(*inputs)


def save_output(ctx, inputs, output) -> None:
    """A TorchOp's ``setup_context`` that keeps the output for its backward (softmax's y)."""
    ctx.save_for_backward(output)
