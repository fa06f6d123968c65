"""The lab's Numba kernels as torch operators: ``torch.ops.lab.<name>``.

    torch.ops.lab.vecadd(a, b)          a + b, same shape (any shape, flattened)   autograd
    torch.ops.lab.matvec(A, x)          A @ x, A (ROWS, COLS), x (COLS,)           autograd
    torch.ops.lab.matmul(A, B)          A @ B, A (M, K), B (K, N)                  autograd
    torch.ops.lab.softmax(x)            softmax over the rows of a 2-D x           autograd (Numba backward)
    torch.ops.lab.quantize(x)           (q uint8 of x.shape, scale, zero_point), 0-d tensors of x.dtype
    torch.ops.lab.dequantize(q, s, zp)  (q - zp) * s in s.dtype, of q.shape
    torch.ops.lab.<kernel>(...)         any other kernel whose KernelSpec.torch_op gives a schema

Each op is registered with torch.library's public API, the parts ``torch.library.custom_op`` is made of
(:func:`_define`): ``torch.library.Library("lab", "FRAGMENT").define`` (the schema) and ``.impl``
(the implementation, under ``CompositeExplicitAutograd``, so every device reaches the op's own checks),
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

import math
import os
import time

import torch

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
def _check(op: str, named: dict, dtypes=FLOATS, ndims: dict | None = None) -> torch.dtype:
    """Validate ``named`` (name -> tensor) for op ``op``; returns the common float dtype.
    One-line ValueError naming what was expected and what was got."""
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
        if t.dtype == torch.uint8 and dtypes is not FLOATS and name == "q":
            continue
        if t.dtype not in FLOATS:
            raise ValueError(f"lab.{op}: {name} is {t.dtype}, expected torch.float32 or torch.float64")
        if dtype is None:
            dtype, dname = t.dtype, name
        elif t.dtype != dtype:
            raise ValueError(f"lab.{op}: {name} is {t.dtype}, expected {dtype} ({dname}'s dtype)")
    return dtype


def _same_shape(op, a, b, an="a", bn="b"):
    if a.shape != b.shape:
        raise ValueError(f"lab.{op}: {bn} has shape {tuple(b.shape)}, expected {tuple(a.shape)} ({an}'s shape)")


# --- Running a kernel variant on tensors -------------------------------------------------------------
def _view(t: torch.Tensor):
    """A Numba array over ``t``'s memory: a device view on a GPU, a simulator array over the CPU
    tensor's memory in the simulator (no copy either way; kernels.arrays.device_arg)."""
    if SIMULATOR:
        from kernels.arrays import device_arg

        return device_arg(t.detach())
    from torch_bridge.interop import to_numba

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
            from torch_bridge.launch import tensor_launcher

            fast = tensor_launcher(kernel_fn, cfg.grid, cfg.block, tensors)
    if len(_plans) >= PLAN_LIMIT:
        _plans.clear()
    plan = _plans[key] = _Plan(variant, cfg, fast, now)
    STATS["plans"] += 1
    return plan


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
    from torch_bridge.streams import on_torch_stream

    with on_torch_stream():
        plan.variant.prepare(plan.cfg, [_view(t) for t in inputs], [_view(t) for t in outputs])()


def _launch(kernel_fn, grid, block, *tensors) -> None:
    """One launch of a ``@cuda.jit`` kernel on tensors, on torch's current stream (its tensor
    launcher, made once per grid, block, device, dtypes and shapes)."""
    if not SIMULATOR:
        key = (kernel_fn, tuple(grid), tuple(block), tensors[0].device, *[(t.dtype, t.shape) for t in tensors])
        fast = _launchers.get(key)
        if fast is None:
            from torch_bridge.launch import tensor_launcher

            if len(_launchers) >= PLAN_LIMIT:
                _launchers.clear()
            fast = _launchers[key] = tensor_launcher(kernel_fn, grid, block, tensors)
        if fast([t.detach() if t.requires_grad else t for t in tensors]):
            return
        from torch_bridge.streams import numba_stream

        kernel_fn[grid, block, numba_stream()](*[_view(t) for t in tensors])
        return
    kernel_fn[grid, block](*[_view(t) for t in tensors])


# --- registering an op: torch.library's public API ------------------------------------------------
_lib = torch.library.Library("lab", "FRAGMENT")


def _define(name, schema, impl, fake, backward=None, setup_context=None, no_grad="rounding is flat almost everywhere",
            doc=""):
    """Register ``torch.ops.lab.<name>`` (``schema``: "(Tensor A, ...) -> Tensor"): ``impl`` runs it,
    ``fake`` gives its outputs' shapes and dtypes (``torch.library.register_fake``); ``backward(ctx,
    *grads)`` with ``setup_context(ctx, inputs, output)`` (``torch.library.register_autograd``'s
    contract) makes it differentiable; without a backward an input that requires grad is a
    RuntimeError at the call, saying ``no_grad`` (why). ``doc``: one line for :data:`DECLARED`
    (default: the kernel's ``torch_op.doc``). Returns ``impl``."""
    qualname = f"lab::{name}"
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
    if not doc:  # a kernel's op: its spec's line; another (softmax_backward): its docstring's first line
        doc = kernels.load(name).torch_op.doc if name in kernels.NAMES else (impl.__doc__ or "").split("\n")[0]
    DECLARED[name] = (doc, backward is not None)
    return impl


def _no_backward(ctx, *grads):
    raise RuntimeError("unreachable: the op refused an input that requires grad at the call")


# --- vecadd -------------------------------------------------------------------------------------------
def _vecadd_check(a, b):
    _check("vecadd", {"a": a, "b": b})
    _same_shape("vecadd", a, b)


def vecadd(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """c = a + b elementwise (same shape, any number of dimensions; flattened for the kernel:
    kernels/vecadd.py, the rung its ``choose()`` picks for the element count). The implementation
    behind torch.ops.lab.vecadd."""
    _vecadd_check(a, b)
    a, b = a.contiguous(), b.contiguous()
    c = torch.empty_like(a, memory_format=torch.contiguous_format)
    n = c.numel()
    if n and c.dim() == 1:
        _run("vecadd", (n,), (a, b), (c,))
    elif n:
        _run("vecadd", (n,), (a.view(-1), b.view(-1)), (c.view(-1),))
    return c


def _vecadd_fake(a, b):
    _vecadd_check(a, b)
    return torch.empty_like(a, memory_format=torch.contiguous_format)


def _vecadd_backward(ctx, grad):
    """d(a + b)/da = d(a + b)/db = identity: the upstream gradient passes to both inputs."""
    return grad, grad


_define("vecadd", "(Tensor a, Tensor b) -> Tensor", vecadd, _vecadd_fake, _vecadd_backward)


# --- matvec and matmul: A @ x, A @ B ----------------------------------------------------------------
def _product_check(op, A, other, name):
    """A 2-D ``A`` and ``other`` (matvec's x, 1-D; matmul's B, 2-D) with as many rows as A has columns."""
    ndim = 1 if op == "matvec" else 2
    _check(op, {"A": A, name: other}, ndims={"A": 2, name: ndim})
    if A.shape[1] != other.shape[0]:
        raise ValueError(f"lab.{op}: {name} has {other.shape[0]} {'entries' if ndim == 1 else 'rows'}, "
                         f"expected {A.shape[1]} (A's columns)")


def _product(op, A, other, out_shape, size):
    """``A @ other`` through kernel ``op`` at ``size``: contiguous inputs, zeros when A has no column."""
    A, other = A.contiguous(), other.contiguous()
    out = torch.empty(out_shape, dtype=A.dtype, device=A.device)
    if A.shape[1] == 0:
        return out.zero_()
    if out.numel():
        _run(op, size, [A, other], [out])
    return out


def _save_inputs(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def matvec(A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """y = A @ x: A (ROWS, COLS), x (COLS,) -> y (ROWS,) (kernels/matvec.py; one warp a row)."""
    _product_check("matvec", A, x, "x")
    return _product("matvec", A, x, A.shape[0], tuple(A.shape))


def _matvec_fake(A, x):
    _product_check("matvec", A, x, "x")
    return A.new_empty(A.shape[0])


def _matvec_backward(ctx, grad):
    """dA = outer(grad, x), dx = A^T @ grad (through lab.matvec)."""
    A, x = ctx.saved_tensors
    dA = torch.outer(grad, x) if ctx.needs_input_grad[0] else None
    dx = torch.ops.lab.matvec(A.t(), grad) if ctx.needs_input_grad[1] else None
    return dA, dx


_define("matvec", "(Tensor A, Tensor x) -> Tensor", matvec, _matvec_fake, _matvec_backward, _save_inputs)


def matmul(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """C = A @ B: A (M, K), B (K, N) -> C (M, N) in float32/64 FMAs (kernels/matmul.py)."""
    _product_check("matmul", A, B, "B")
    (m, k), n = A.shape, B.shape[1]
    return _product("matmul", A, B, (m, n), (m, n, k))


def _matmul_fake(A, B):
    _product_check("matmul", A, B, "B")
    return A.new_empty((A.shape[0], B.shape[1]))


def _matmul_backward(ctx, grad):
    """dA = grad @ B^T, dB = A^T @ grad, both through lab.matmul."""
    A, B = ctx.saved_tensors
    dA = torch.ops.lab.matmul(grad, B.t()) if ctx.needs_input_grad[0] else None
    dB = torch.ops.lab.matmul(A.t(), grad) if ctx.needs_input_grad[1] else None
    return dA, dB


_define("matmul", "(Tensor A, Tensor B) -> Tensor", matmul, _matmul_fake, _matmul_backward, _save_inputs)


# --- softmax --------------------------------------------------------------------------------------
def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D x (each row sums to 1; kernels/softmax.py)."""
    _check("softmax", {"x": x}, ndims={"x": 2})
    x = x.contiguous()
    out = torch.empty_like(x)
    if out.numel():
        _run("softmax", tuple(x.shape), [x], [out])
    return out


def _softmax_fake(x):
    _check("softmax", {"x": x}, ndims={"x": 2})
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def softmax_backward(y: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """dx = y * (grad - rowsum(grad * y)), y the softmax output (kernels/softmax_backward.py)."""
    _check("softmax_backward", {"y": y, "grad": grad}, ndims={"y": 2, "grad": 2})
    _same_shape("softmax_backward", y, grad, "y", "grad")
    from kernels import softmax_backward as SB

    y, grad = y.contiguous(), grad.contiguous()
    dx = torch.empty_like(y)
    if dx.numel():
        cfg = SB.launch(tuple(y.shape), THREADS)
        _launch(SB.softmax_backward_kernel, cfg.grid, cfg.block, y, grad, dx)
    return dx


def _softmax_backward_fake(y, grad):
    _check("softmax_backward", {"y": y, "grad": grad}, ndims={"y": 2, "grad": 2})
    _same_shape("softmax_backward", y, grad, "y", "grad")
    return torch.empty_like(y, memory_format=torch.contiguous_format)


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_backward(ctx, grad):
    (y,) = ctx.saved_tensors
    return torch.ops.lab.softmax_backward(y, grad)


_define("softmax_backward", "(Tensor y, Tensor grad) -> Tensor", softmax_backward, _softmax_backward_fake,
        no_grad="softmax has no double backward")
_define("softmax", "(Tensor x) -> Tensor", softmax, _softmax_fake, _softmax_backward, _softmax_setup)


# --- quantize / dequantize -------------------------------------------------------------------------
def _quantize_check(x):
    _check("quantize", {"x": x})
    if x.numel() == 0:
        raise ValueError("lab.quantize: x is empty, expected at least 1 element (min and max are undefined)")


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-tensor affine uint8 quantization (kernels/quantize.py's rules): returns
    (q uint8 of x's shape, scale, zero_point), scale and zero_point 0-d tensors of x's dtype
    (zero_point holds an integer)."""
    _quantize_check(x)
    x = x.contiguous()
    q = torch.empty(x.shape, dtype=torch.uint8, device=x.device)
    params = torch.empty(2, dtype=x.dtype, device=x.device)
    _run("quantize", (x.numel(),), [x.view(-1)], [q.view(-1), params])
    return q, params[0].clone(), params[1].clone()  # two outputs may not share memory


def _quantize_fake(x):
    _quantize_check(x)
    return (torch.empty(x.shape, dtype=torch.uint8, device=x.device), x.new_empty(()), x.new_empty(()))


def _dequantize_check(q, scale, zero_point):
    if not isinstance(q, torch.Tensor) or q.dtype != torch.uint8:
        got = q.dtype if isinstance(q, torch.Tensor) else type(q).__name__
        raise ValueError(f"lab.dequantize: q is {got}, expected torch.uint8")
    _check("dequantize", {"q": q, "scale": scale, "zero_point": zero_point}, dtypes=None)
    for name, t in (("scale", scale), ("zero_point", zero_point)):
        if t.numel() != 1:
            raise ValueError(f"lab.dequantize: {name} must hold 1 value, got shape {tuple(t.shape)}")


def dequantize(q: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor) -> torch.Tensor:
    """x' = (q - zero_point) * scale, in scale's dtype, q's shape; one thread an element."""
    _dequantize_check(q, scale, zero_point)
    q = q.contiguous()
    out = torch.empty(q.shape, dtype=scale.dtype, device=q.device)
    n = q.numel()
    if n:
        from kernels.dequantize import dequantize_kernel

        params = torch.stack([scale.reshape(()), zero_point.reshape(())])
        blocks = math.ceil(n / THREADS)
        _launch(dequantize_kernel, (blocks,), (THREADS,), q.view(-1), params, out.view(-1))
    return out


def _dequantize_fake(q, scale, zero_point):
    _dequantize_check(q, scale, zero_point)
    return torch.empty(q.shape, dtype=scale.dtype, device=q.device)


_define("quantize", "(Tensor x) -> (Tensor, Tensor, Tensor)", quantize, _quantize_fake)
_define("dequantize", "(Tensor q, Tensor scale, Tensor zero_point) -> Tensor", dequantize, _dequantize_fake)


# --- ops built from a kernel's spec alone -------------------------------------------------------------
def _spec_op(spec) -> None:
    """Register ``torch.ops.lab.<name>`` for a kernel whose ``KernelSpec.torch_op`` gives a ``schema``
    (docs/adding-a-kernel.md): its inputs are checked (float32 or float64, one dtype, one device, the
    shapes ``in_shapes(size)`` of the size ``size_of(*shapes)``), made contiguous, and its outputs
    allocated from ``out_specs``; the rung is its ``auto`` or ``torch_op.rungs``. A fake implementation
    makes it traceable (torch.compile); it has no gradient (an input that requires grad is a
    RuntimeError, as for quantize)."""
    import re

    import numpy as np

    op, name = spec.torch_op, spec.name
    names = re.findall(r"Tensor (\w+)", op.schema.split("->")[0])

    def outputs(tensors, device):
        _check(name, dict(zip(names, tensors)))
        shapes = [tuple(t.shape) for t in tensors]
        size = tuple(op.size_of(*shapes))
        if len(size) != spec.size_dims or shapes != [tuple(s) for s in spec.in_shapes(size)]:
            want = ", ".join(f"{n} {tuple(s)}" for n, s in zip(names, spec.in_shapes(size))) \
                if len(size) == spec.size_dims else f"{spec.size_dims}-D ({spec.size_help})"
            raise ValueError(f"lab.{name}: inputs of shapes {', '.join(map(str, shapes))}, expected {want}")
        dtype = np.dtype(str(tensors[0].dtype).removeprefix("torch."))
        return size, [torch.empty(shape, dtype=getattr(torch, np.dtype(dt).name), device=device)
                      for shape, dt in spec.out_specs(size, dtype)]

    def impl(*tensors):
        size, outs = outputs(tensors, tensors[0].device)
        if all(t.numel() for t in tensors) and all(o.numel() for o in outs):
            _run(name, size, [t.contiguous() for t in tensors], outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def fake(*tensors):
        return (lambda outs: outs[0] if len(outs) == 1 else tuple(outs))(outputs(tensors, tensors[0].device)[1])

    impl.__doc__ = f"{op.doc or spec.summary} (kernels/{name}.py; built from its KernelSpec)."
    _define(name, op.schema, impl, fake, no_grad="its KernelSpec declares no backward", doc=op.doc or spec.summary)
    globals()[name] = impl


def _spec_ops() -> tuple[str, ...]:
    """Every kernel that is a torch op (its spec's ``torch_op``), in kernels.NAMES order; those with a
    ``schema`` registered here from the spec."""
    names = []
    for kernel in kernels.NAMES:
        spec = kernels.load(kernel)
        if spec.torch_op is None:
            continue
        if spec.torch_op.schema:
            _spec_op(spec)
        names.append(kernel)
    return tuple(names)


OPS = _spec_ops()
