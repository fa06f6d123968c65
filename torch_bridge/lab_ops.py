"""The lab's Numba kernels as torch operators: ``torch.ops.lab.<name>``.

    torch.ops.lab.vecadd(a, b)          a + b, same shape (any shape, flattened)   autograd
    torch.ops.lab.matvec(A, x)          A @ x, A (ROWS, COLS), x (COLS,)           autograd
    torch.ops.lab.matmul(A, B)          A @ B, A (M, K), B (K, N)                  autograd
    torch.ops.lab.softmax(x)            softmax over the rows of a 2-D x           autograd (Numba backward)
    torch.ops.lab.quantize(x)           (q uint8 of x.shape, scale, zero_point), 0-d tensors of x.dtype
    torch.ops.lab.dequantize(q, s, zp)  (q - zp) * s in s.dtype, of q.shape
    torch.ops.lab.<kernel>(...)         any other kernel whose KernelSpec declares a torch_op

Every op is declared in its kernel's spec (``KernelSpec.torch_op``, kernels.torch_op.TorchOp: its schema,
checks, forward, fake and backward, written beside the kernel; docs/adding-a-kernel.md, "The torch
op"); this module names no kernel: it holds what every op shares (the checks, the launch plans, the
launch) and registers each op (:func:`_spec_op`). Each op is registered with torch.library's public
API, the parts ``torch.library.custom_op`` is made of (:func:`_define`):
``torch.library.Library("lab", "FRAGMENT").define`` (the schema) and ``.impl`` (the implementation,
under ``CompositeExplicitAutograd``, so every device reaches the op's own checks),
``torch.library.register_fake`` (shapes and dtypes without running anything, so
``torch.compile(fullgraph=True)`` traces them) and ``torch.library.register_autograd``: vecadd, matvec,
matmul and softmax have a backward (softmax's is the Numba kernel of kernels/softmax_backward.py); the
others refuse an input that requires grad. Not ``custom_op`` itself: its first call imports
torch._dynamo (about 800 modules, ~1 s on a CPU) in every ``lab run`` with a "numba via torch op" row,
and its generic wrapper costs more per call than these registrations. ``torch.library.opcheck``
passes for every op (tests/torch_bridge/test_ops.py). PyTorch docs: "torch.library", "Python Custom
Operators".

Tensor rules (the same for every op, checked in the real and the fake implementation):

* float32 or float64 (quantize's q: uint8); every float input of one op has the same dtype, else
  ValueError "lab.matmul: B is torch.float64, expected torch.float32 (A's dtype)";
* all inputs on one device. On a GPU: CUDA tensors (a CPU tensor is a ValueError naming the device:
  the bridge never copies behind your back). In Numba's CUDA simulator (no GPU): CPU tensors, and
  the simulated kernel runs on them in place (slow: small tensors only);
* non-contiguous inputs are made contiguous (one copy, made by the op); outputs are contiguous;
* inputs that require grad go through autograd; quantize and dequantize, which have no gradient,
  raise a RuntimeError instead of silently detaching;
* every launch goes to torch's current stream (torch_bridge.streams).

Which rung runs: the kernel's ``auto`` variant when it has one (its ``choose()``, or ``lab tune``'s
winner), else the rung its KernelSpec's ``torch_op.rungs`` names (on a GPU the fastest measured one;
in the simulator a small-block one). What does not change between calls is kept per (op, size, threads,
device limits, device, dtypes and shapes) (:class:`_Plan`): the rung's Launch (asked again every
RECHECK_S seconds, so that a new ``lab tune`` table is followed) and, on a GPU, for a rung that is one
launch of one kernel, its tensor launcher (:func:`torch_bridge.launch.tensor_launcher`: no Numba view,
typing or configuration per call); other rungs run ``Variant.prepare`` on views of the tensors each call.
The checks above run on every call. What a small op's host time is made of, and what is left without
torch's dispatcher: :func:`torch_bridge.launch.vecadd` (docs/torch.md, "The fast launch path").
"""
from __future__ import annotations

import os
import time
from functools import partial
from types import SimpleNamespace

import torch
import numpy as np
from kernels import arrays
from torch_bridge.interop import to_numba
from torch_bridge.launch import tensor_launcher
from torch_bridge.streams import on_torch_stream, numba_stream

# The ops launch small grids on purpose for small tensors: no low-occupancy warning for each (as lab does)
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

import kernels  # noqa: E402
from kernels.compiler import SIMULATOR  # noqa: E402  (settles the backend: simulator if no GPU)
from kernels.device_limits import current as _limits  # noqa: E402

THREADS = 32 if SIMULATOR else 256  # threads per block: one simulated warp, or the lab's GPU default
FLOATS = (torch.float32, torch.float64)
_DEVICE = "cpu" if SIMULATOR else "cuda"
# every op registered here, in registration order: name -> (what it computes, in one line; whether it
# has a backward). docs/torch.md's table is generated from it (lab.cli.doctables).
DECLARED: dict[str, tuple[str, bool]] = {}


# --- Checks ---------------------------------------------------------------------------------------
def _check(op: str, named: dict, ndims: dict | None = None, fixed: dict | None = None) -> torch.dtype:
    """Validate ``named`` (name -> tensor) for op ``op``, the checks every op shares (its TorchOp's
    ``ndims``: name -> dimensions; ``fixed``: name -> the torch dtype name it must have, checked first);
    returns the common float dtype. One-line ValueError naming what was expected and what was got."""
    if fixed:
        for name, want in fixed.items():
            t = named[name]
            if not isinstance(t, torch.Tensor) or t.dtype != getattr(torch, want):
                got = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"lab.{op}: {name} is {got}, expected torch.{want}")
    first_name, first = next(iter(named.items()))
    want_device = _DEVICE
    dtype = None
    for name, t in named.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"lab.{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.device.type != want_device:
            where = ("the simulator runs CPU tensors" if SIMULATOR else
                     "the lab kernels run on the GPU: move it with .cuda() (no implicit copies)")
            raise ValueError(f"lab.{op}: {name} is on {t.device}, expected a {want_device} tensor ({where})")
        if t.device != first.device:
            raise ValueError(f"lab.{op}: {name} is on {t.device}, expected {first.device} ({first_name}'s device)")
        if ndims and name in ndims and t.dim() != ndims[name]:
            raise ValueError(f"lab.{op}: {name} must be {ndims[name]}-D, got shape {tuple(t.shape)}")
        if fixed and name in fixed:
            continue
        if t.dtype not in FLOATS:
            raise ValueError(f"lab.{op}: {name} is {t.dtype}, expected torch.float32 or torch.float64")
        if dtype is None:
            dtype, dname = t.dtype, name
        elif t.dtype != dtype:
            raise ValueError(f"lab.{op}: {name} is {t.dtype}, expected {dtype} ({dname}'s dtype)")
    return dtype


# --- Running a kernel variant on tensors -------------------------------------------------------------
def _view(t: torch.Tensor):
    """A Numba array over ``t``'s memory: a device view on a GPU, a simulator array over the CPU
    tensor's memory in the simulator (no copy either way; kernels.arrays.device_arg)."""
    if SIMULATOR:
        return arrays.device_arg(t.detach())
    return to_numba(t.detach())


def _rung(spec) -> str:
    if "auto" in spec.variants:
        return "auto"
    gpu, sim = spec.torch_op.rungs  # the kernel's spec: (GPU rung, simulator rung)
    return sim if SIMULATOR else gpu


# --- Launch plans: what every call of an op at one shape reuses ---------------------------------------
RECHECK_S = 1.0  # a plan's rung choice is asked again after this long (a `lab tune` table written meanwhile)
PLAN_LIMIT = 512  # plans kept (a dict per process; cleared when full)
_plans: dict = {}  # (kernel, size, threads, id(device limits), device, (dtype, shape) of each tensor) -> _Plan
_launchers: dict = {}  # (kernel function, grid, block, device, (dtype, shape)...) -> tensor launcher or None
STATS = {"plans": 0, "rechecks": 0}  # plans built, choices asked again (tests read them)


class _Plan:
    """One op at one (size, threads, device, input and output dtypes and shapes): the variant that
    runs (the kernel's ``auto`` or its ``torch_op.rungs`` rung), its Launch (the rung auto chose, the
    grid and block), and on a GPU, when that rung is one launch of one kernel (``kernels.spec.launch_once``),
    the kernel's tensor launcher (:func:`torch_bridge.launch.tensor_launcher`)."""

    __slots__ = ("variant", "cfg", "choice", "fast", "checked", "limits")

    def __init__(self, variant, cfg, fast, now):
        self.variant, self.cfg, self.fast, self.checked, self.limits = variant, cfg, fast, now, None
        self.choice = _choice(cfg)


def _choice(cfg) -> tuple:
    return cfg.rung, tuple(cfg.grid), tuple(cfg.block), cfg.params


def _plan(key, kernel: str, size: tuple, threads: int, tensors, old, now) -> _Plan:
    """The plan for ``key``: the variant's launch math asked (the rung choice, tuned table or
    heuristic); ``old`` (the plan of RECHECK_S ago) kept when the answer is the same."""
    spec = kernels.load(kernel)
    variant = spec.variants[_rung(spec)]
    cfg = variant.launch(size, threads)
    if old is not None:
        STATS["rechecks"] += 1
        if old.variant is variant and old.choice == _choice(cfg):
            old.checked = now
            return old
    fast = None
    if not SIMULATOR:
        rung = spec.variants.get(cfg.rung) if cfg.rung else variant
        single = getattr(getattr(rung, "prepare", None), "single_launch", None)
        if single is not None:
            kernel_fn, kernel_f64 = single
            if kernel_f64 is not None and tensors[0].dtype == torch.float64:
                kernel_fn = kernel_f64
            fast = tensor_launcher(kernel_fn, cfg.grid, cfg.block, tensors)
    if len(_plans) >= PLAN_LIMIT:
        _plans.clear()
    plan = _plans[key] = _Plan(variant, cfg, fast, now)
    STATS["plans"] += 1
    return plan


def plan_of(kernel: str, size) -> _Plan | None:
    """The launch plan ``torch.ops.lab.<kernel>`` made last at ``size`` (a tuple of ints; any threads,
    device, dtypes), or None before its first call there: its ``variant``, ``cfg`` (the Launch: the
    rung, grid and block it runs) and ``fast`` (its tensor launcher, None in the simulator or for a rung
    of several launches; ``fast.path`` says which launch it takes). torch_bridge.overhead reads it."""
    size = tuple(size)
    found = [p for k, p in _plans.items() if k[0] == kernel and k[1] == size]
    return found[-1] if found else None


def _run(kernel: str, size, inputs, outputs, threads: int = THREADS) -> None:
    """Run ``kernel``'s chosen rung on tensors, on torch's stream: through the plan of this shape
    (:class:`_Plan`, made on the first call): the rung's kernel launched by its tensor launcher, or
    ``Variant.prepare`` on views of the tensors (rungs of several launches or scratch space, the
    simulator)."""
    tensors = (*inputs, *outputs)
    size = tuple(size)
    limits = _limits()  # the device launch math sizes for (another inside a kernels.device_limits.described block)
    key = (kernel, size, threads, id(limits), tensors[0].device, *[(t.dtype, t.shape) for t in tensors])
    plan = _plans.get(key)
    now = time.monotonic()
    if plan is None or plan.limits is not limits or now - plan.checked > RECHECK_S:
        plan = _plan(key, kernel, size, threads, tensors, plan if plan is not None and plan.limits is limits
                     else None, now)
        plan.limits = limits  # held: its id in the key cannot be another object's while the plan lives
    if plan.fast is not None and plan.fast([t.detach() if t.requires_grad else t for t in tensors]):
        return
    with on_torch_stream():
        plan.variant.prepare(plan.cfg, [_view(t) for t in inputs], [_view(t) for t in outputs])()


def _launch(kernel_fn, grid, block, *tensors) -> None:
    """One launch of a ``@cuda.jit`` kernel on tensors, on torch's current stream (its tensor
    launcher, made once per grid, block, device, dtypes and shapes)."""
    if not SIMULATOR:
        key = (kernel_fn, tuple(grid), tuple(block), tensors[0].device, *[(t.dtype, t.shape) for t in tensors])
        fast = _launchers.get(key)
        if fast is None:
            if len(_launchers) >= PLAN_LIMIT:
                _launchers.clear()
            fast = _launchers[key] = tensor_launcher(kernel_fn, grid, block, tensors)
        if fast([t.detach() if t.requires_grad else t for t in tensors]):
            return
        kernel_fn[grid, block, numba_stream()](*[_view(t) for t in tensors])
        return
    kernel_fn[grid, block](*[_view(t) for t in tensors])


# --- registering an op: torch.library's public API ------------------------------------------------
_lib = torch.library.Library("lab", "FRAGMENT")


def _define(name, schema, impl, fake, backward=None, setup_context=None, no_grad="", doc=""):
    """Register ``torch.ops.lab.<name>`` (``schema``: "(Tensor A, ...) -> Tensor"): ``impl`` runs it,
    ``fake`` gives its outputs' shapes and dtypes (``torch.library.register_fake``); ``backward(ctx,
    *grads)`` with ``setup_context(ctx, inputs, output)`` (``torch.library.register_autograd``'s
    contract) makes it differentiable; without a backward an input that requires grad is a
    RuntimeError at the call, saying ``no_grad`` (why). ``doc``: one line for :data:`DECLARED`.
    Returns ``impl``."""
    qualname = f"{_lib.ns}::{name}"  # "lab::<name>" (a test registers its own ops in a namespace of its own)
    _lib.define(name + schema)
    _lib.impl(name, impl, "CompositeExplicitAutograd")
    torch.library.register_fake(qualname, fake, lib=_lib)
    if backward is None:
        def refuse(ctx, inputs, output):  # register_autograd calls it only when an input requires grad
            raise RuntimeError(f"lab.{name}: an input requires grad, but {name} has no gradient ({no_grad}): "
                               "pass .detach()ed tensors")

        torch.library.register_autograd(qualname, _no_backward, setup_context=refuse, lib=_lib)
    else:
        torch.library.register_autograd(qualname, backward, setup_context=setup_context, lib=_lib)
    DECLARED[name] = (doc, backward is not None)
    return impl


def _no_backward(ctx, *grads):
    raise RuntimeError("unreachable: the op refused an input that requires grad at the call")


# --- ops declared by a kernel's spec ----------------------------------------------------------------
def _spec_outputs(spec, names):
    """The ``outputs(tensors)`` of an op built from ``spec`` alone: the shape check (the inputs are the
    shapes ``in_shapes(size)`` of the size ``size_of(*shapes)``) and the outputs allocated from
    ``out_specs``; returns (size, outputs)."""
    op, name = spec.torch_op, spec.name

    def outputs(tensors):
        shapes = [tuple(t.shape) for t in tensors]
        size = tuple(op.size_of(*shapes))
        if len(size) != spec.size_dims or shapes != [tuple(s) for s in spec.in_shapes(size)]:
            want = ", ".join(f"{n} {tuple(s)}" for n, s in zip(names, spec.in_shapes(size))) \
                if len(size) == spec.size_dims else f"{spec.size_dims}-D ({spec.size_help})"
            raise ValueError(f"lab.{name}: inputs of shapes {', '.join(map(str, shapes))}, expected {want}")
        dtype = np.dtype(str(tensors[0].dtype).removeprefix("torch."))
        return size, [torch.empty(shape, dtype=getattr(torch, np.dtype(dt).name), device=tensors[0].device)
                      for shape, dt in spec.out_specs(size, dtype)]

    return outputs


def _spec_op(spec, name: str, op) -> None:
    """Register ``torch.ops.lab.<name>`` as ``spec``'s TorchOp ``op`` declares it (kernels.torch_op.TorchOp,
    docs/adding-a-kernel.md): the checks every op shares (:func:`_check`, with the op's ``ndims`` and
    ``fixed_dtypes``), then its ``check``, in the real and the fake implementation; then its ``forward``
    and ``fake`` (given ``torch`` and a bridge: ``run`` through the kernel's launch plan, ``launch`` of one
    kernel, ``threads``), or, for an op of ``schema`` and ``size_of`` alone, inputs of the spec's
    ``in_shapes`` made contiguous and outputs allocated from ``out_specs`` (the rung: the kernel's
    ``auto`` or ``torch_op.rungs``). Its ``backward`` and ``setup_context`` make it differentiable;
    without them an input that requires grad is a RuntimeError naming ``no_grad``."""
    names = op.inputs
    ndims, fixed, own = op.ndims or None, op.fixed_dtypes or None, op.check

    def check(tensors):
        _check(name, dict(zip(names, tensors)), ndims, fixed)
        if own is not None:
            own(torch, *tensors)

    if op.forward is not None:
        forward, fake_outputs = op.forward, op.fake
        bridge = SimpleNamespace(run=partial(_run, spec.name), launch=_launch, threads=THREADS)

        def impl(*tensors):  # check() written out: one Python call less on every call of the op
            _check(name, dict(zip(names, tensors)), ndims, fixed)
            if own is not None:
                own(torch, *tensors)
            return forward(torch, bridge, *tensors)

        def fake(*tensors):
            check(tensors)
            return fake_outputs(torch, *tensors)

        impl.__doc__ = forward.__doc__
    else:
        outputs = _spec_outputs(spec, names)

        def impl(*tensors):
            check(tensors)
            size, outs = outputs(tensors)
            if all(t.numel() for t in tensors) and all(o.numel() for o in outs):
                _run(name, size, [t.contiguous() for t in tensors], outs)
            return outs[0] if len(outs) == 1 else tuple(outs)

        def fake(*tensors):
            check(tensors)
            outs = outputs(tensors)[1]
            return outs[0] if len(outs) == 1 else tuple(outs)

        impl.__doc__ = f"{op.doc or spec.summary} (kernels/{name}.py; built from its KernelSpec)."
    backward = None
    if op.backward is not None:
        def backward(ctx, *grads):
            return op.backward(torch, ctx, *grads)

    _define(name, op.schema, impl, fake, backward, op.setup_context,
            no_grad=op.no_grad or "its KernelSpec declares no backward", doc=op.doc or spec.summary)
    globals()[name] = impl


def _spec_ops() -> tuple[str, ...]:
    """Every kernel that is a torch op (its spec's ``torch_op``), in kernels.NAMES order, registered here
    with the helper ops it declares before it (``TorchOp.helpers``)."""
    names = []
    for kernel in kernels.NAMES:
        spec = kernels.load(kernel)
        if spec.torch_op is None:
            continue
        for helper, op in spec.torch_op.helpers.items():
            _spec_op(spec, helper, op)
        if spec.torch_op.schema:
            _spec_op(spec, kernel, spec.torch_op)
        names.append(kernel)
    return tuple(names)


OPS = _spec_ops()
