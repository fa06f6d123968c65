"""What a call of a kernel's torch op costs the host, and what that cost is made of: the calls that
``python -m torch_bridge.bench_launch`` times (lab.bench.launch_overhead, with lab.core.timing's
host clock), built from the kernel's spec alone: this module names no kernel.

For a kernel K whose KernelSpec (kernels/K.py) declares a torch op (``torch_op``,
kernels.torch_op.TorchOp), at one size, on float32 inputs its ``make_inputs`` draws (seed 0) as
tensors on the bridge's device and outputs of its ``out_specs`` allocated once (:func:`calls`):

* **Numba direct, device arrays**: the rung the op runs (its launch plan, :func:`torch_bridge.lab_ops.plan_of`:
  the rung ``auto`` chose, its grid and block), ``kernel[grid, block]`` configured once and called on
  Numba device arrays (a rung of several launches: its ``Variant.prepare``'d launch);
* **Numba direct, torch tensors** (GPU): the same launch given the tensors: numba-cuda reads each
  tensor's ``__cuda_array_interface__`` every call; numba-cuda-mlir takes no torch tensor, so a device
  array is made over each one every call (``cuda.as_cuda_array``);
* **the fast launch path, the lesson** (GPU): ``torch_bridge.launch.<K>(*inputs, out=...)`` where
  the lesson has a function for K (docs/torch.md, "The fast launch path");
* **bridge**: ``torch.ops.lab.<K>(*inputs)``, and the same under ``torch.inference_mode()`` (no
  autograd key);
* **torch's floor**: an op of the same schema registered as lab's ops are (``Library.define``, an impl
  under CompositeExplicitAutograd, ``register_fake``, ``register_autograd``) whose impl only allocates
  its outputs (the op's ``fake``): what torch's dispatcher and autograd wrapper cost a call;
* **the contenders** the spec declares for CuPy and torch (``contenders``), on the preallocated
  outputs and with outputs allocated every call (what a user's ``cupy.add(a, b)`` does).

Each row carries its own ``sync`` (Numba's, torch's or CuPy's device synchronize). GPU only where
marked; in Numba's CUDA simulator the other rows run on CPU tensors (slow: tiny sizes only; their times
are the simulator's, not launch overhead).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import cProfile

import numpy as np
import torch

import kernels
import torch_bridge.lab_ops as L
from kernels.compiler import COMPILER, MLIR, SIMULATOR
from kernels.compiler import cuda
from torch_bridge import launch as lesson
from torch_bridge.contenders import lab_op


@dataclass
class Call:
    """One row: ``label`` (what is called, as the table prints it), ``fn`` (one call, no argument),
    ``sync`` (waits for the device work it queued)."""

    label: str
    fn: Callable[[], object]
    sync: Callable[[], None]


@dataclass
class Calls:
    """The rows of :func:`calls` and what they were built from: ``kernel``, ``size``, ``rows``;
    ``outputs`` (row label -> a function returning that row's outputs as host arrays in the spec's
    layout, for a check against the reference); ``inputs`` (the host inputs); ``versions``
    (library -> version: torch, CuPy or "not installed"; and "device", the GPU's name); ``baseline``: the label the table's ratios
    divide by (the first CuPy contender with outputs allocated each call, else torch's; None if neither)."""

    kernel: str
    size: tuple
    rows: list[Call] = field(default_factory=list)
    outputs: dict = field(default_factory=dict)
    inputs: tuple = ()
    versions: dict = field(default_factory=dict)
    baseline: str | None = None
    op: Callable | None = field(default=None, repr=False)  # torch.ops.lab.<kernel>, its tensors, its sync
    tensors: tuple = field(default=(), repr=False)
    sync: Callable[[], None] | None = field(default=None, repr=False)

    def op_launch(self) -> str:
        """How the op launches at this size (after its first call): its tensor launcher's path, or
        "Variant.prepare each call" (the simulator, a rung of several launches)."""
        plan = L.plan_of(self.kernel, self.size)
        if plan is None:
            return "not yet called"
        return getattr(plan.fast, "path", "ordinary launch") if plan.fast else "Variant.prepare each call"

    def profile(self, calls: int) -> object:
        """A cProfile.Profile of ``calls`` calls of the op (the bridge row), the device synchronized after."""
        op, inputs = self.op, self.tensors
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            op(*inputs)
        prof.disable()
        self.sync()
        return prof


def _names(n: int, stem: str) -> list[str]:
    return [stem] if n == 1 else [f"{stem}{i}" for i in range(n)]


def calls(kernel: str, size: tuple, seed: int = 0) -> Calls:
    """The rows (module docstring) for ``kernel`` (a name of kernels.NAMES whose spec declares a torch
    op with ``schema``) at ``size`` (the spec's size tuple). ValueError naming the kernels that have one
    otherwise."""
    with_op = [k for k in L.OPS if kernels.load(k).torch_op.schema]
    if kernel not in with_op:
        raise ValueError(f"kernel {kernel!r} has no torch op; one of: {', '.join(with_op)}")
    spec = kernels.load(kernel)
    size = tuple(int(s) for s in size)
    op = getattr(torch.ops.lab, kernel)
    host_in = tuple(np.ascontiguousarray(x) for x in spec.make_inputs(size, np.float32, np.random.default_rng(seed)))
    out_specs = spec.out_specs(size, np.float32)
    device = "cpu" if SIMULATOR else "cuda"
    tensors = tuple(torch.from_numpy(x.copy()).to(device) for x in host_in)
    outs = [torch.empty(tuple(shape), dtype=_torch_dtype(dt), device=device) for shape, dt in out_specs]
    names = spec.torch_op.inputs
    sync = cuda.synchronize if SIMULATOR else torch.cuda.synchronize
    result = Calls(kernel, size, inputs=host_in, versions={"torch": torch.__version__, "device": (
        "CUDA simulator (times are the simulation's, not launch overhead)" if SIMULATOR else torch.cuda.get_device_name())})
    result.op, result.tensors, result.sync = op, tensors, sync
    op(*tensors)  # the first call makes the op's launch plan (and compiles or loads its kernel)
    sync()

    # Numba direct: the rung the op's plan runs, configured once
    plan = L.plan_of(kernel, size)
    d_in = [cuda.to_device(x) for x in host_in]
    d_out = [cuda.device_array(tuple(shape), np.dtype(dt)) for shape, dt in out_specs]
    arrays = ", ".join([f"d{n}" for n in names] + _names(len(d_out), "dout"))
    rung = (spec.variants.get(plan.cfg.rung) if plan.cfg.rung else None) or plan.variant
    single = getattr(rung.prepare, "single_launch", None)
    if single is not None:
        configured = single[0][plan.cfg.grid, plan.cfg.block]
        result.rows.append(Call(f"Numba direct, device arrays: kernel[grid, block]({arrays})",
                                lambda: configured(*d_in, *d_out), cuda.synchronize))
        args = ", ".join(list(names) + _names(len(outs), "out"))
        if COMPILER != MLIR and not SIMULATOR:  # numba-cuda: a torch tensor straight in (its __cuda_array_interface__)
            result.rows.append(Call(f"Numba direct, torch tensors: kernel[grid, block]({args})",
                                    lambda: configured(*tensors, *outs), cuda.synchronize))
        elif not SIMULATOR:  # numba-cuda-mlir takes no torch tensor: a device array over each, made each call
            wrap = cuda.as_cuda_array
            result.rows.append(Call(f"Numba direct, torch tensors wrapped each call: kernel[grid, block]"
                                    f"(as_cuda_array({names[0]}), ...)",
                                    lambda: configured(*[wrap(t) for t in tensors], *[wrap(o) for o in outs]),
                                    cuda.synchronize))
    else:
        launch = plan.variant.prepare(plan.cfg, d_in, d_out)
        result.rows.append(Call(f"Numba direct, device arrays: Variant.prepare(cfg, inputs, outputs)() of rung "
                                f"{plan.cfg.rung or plan.variant.name}", launch, cuda.synchronize))
    result.outputs["Numba direct"] = lambda: (result.rows[0].fn(), cuda.synchronize(),
                                              [d.copy_to_host() for d in d_out])[-1]

    fast = getattr(lesson, kernel, None)
    if fast is not None and not SIMULATOR and len(outs) == 1:
        result.rows.append(Call(f"fast launch path, the lesson (torch_bridge.launch.{kernel}, preallocated out)",
                                lambda: fast(*tensors, out=outs[0]), torch.cuda.synchronize))
        result.outputs["fast launch path"] = lambda: [fast(*tensors, out=outs[0]).cpu().numpy()]
    listed = ", ".join(names)
    result.rows.append(Call(f"bridge: torch.ops.lab.{kernel}({listed})", lambda: op(*tensors), sync))

    def inference():
        with torch.inference_mode():
            return op(*tensors)

    result.rows.append(Call("bridge under torch.inference_mode() (no autograd key)", inference, sync))
    as_spec = lab_op(kernel)
    result.outputs["bridge"] = lambda: [o.cpu().numpy() for o in as_spec(torch, *tensors, out=outs)]
    if spec.torch_op.fake is not None:  # (an op built from the spec alone has no fake of its own to return)
        floor = _floor_op(spec.torch_op)
        result.rows.append(Call("torch's floor for such an op: a torch.library op of the same schema registered "
                                "as lab's, returning its fake outputs, no kernel", lambda: floor(*tensors), sync))

    try:
        import cupy as cp  # lazy: optional (cupy)
    except ImportError:
        cp = None
    result.versions["cupy"] = cp.__version__ if cp is not None else "not installed"
    libraries = [("torch", "torch", torch, tensors, outs, device)]
    if cp is not None and not SIMULATOR:
        c_in = tuple(cp.asarray(x) for x in host_in)
        c_out = [cp.empty(tuple(shape), np.dtype(dt)) for shape, dt in out_specs]
        libraries.insert(0, ("cupy", "CuPy", cp, c_in, c_out, None))
    for library, title, module, ins, pre, dev in libraries:
        lib_sync = module.cuda.Device().synchronize if library == "cupy" else sync
        for label, fn, _ in spec.contender_rows(library):
            fresh = _fresh(module, out_specs, dev)
            result.rows += [
                Call(f"{title}: {label}, preallocated outputs", lambda fn=fn, m=module, i=ins, o=pre: fn(m, *i, out=o),
                     lib_sync),
                Call(f"{title}: {label}, outputs allocated each call",
                     lambda fn=fn, m=module, i=ins, f=fresh: fn(m, *i, out=f()), lib_sync)]
            result.baseline = result.baseline or result.rows[-1].label
    return result


def _fresh(module, out_specs, device):
    """A function allocating ``out_specs``' outputs with ``module`` (torch or CuPy), as a call that
    returns new arrays does."""
    if module is torch:
        specs = [(tuple(shape), _torch_dtype(dt)) for shape, dt in out_specs]
        return lambda: [torch.empty(shape, dtype=dt, device=device) for shape, dt in specs]
    specs = [(tuple(shape), np.dtype(dt)) for shape, dt in out_specs]
    return lambda: [module.empty(shape, dt) for shape, dt in specs]


def _torch_dtype(dt):
    return torch.from_numpy(np.empty(0, dtype=dt)).dtype


def _floor_op(op):
    """An op of ``op``'s schema (a TorchOp) registered in a namespace of its own as torch_bridge.lab_ops
    registers the lab's (define, an impl under CompositeExplicitAutograd, register_fake,
    register_autograd) whose impl only returns the op's ``fake`` outputs: what torch's dispatcher and
    the autograd wrapper cost a call, before any check or launch. Made once per schema."""
    key = (op.schema, op.fake)
    if key in _FLOORS:
        return _FLOORS[key][0]
    ns = f"lab_bench{len(_FLOORS)}"
    lib = torch.library.Library(ns, "FRAGMENT")
    lib.define("noop" + op.schema)

    def impl(*tensors, fake=op.fake):
        return fake(torch, *tensors)

    lib.impl("noop", impl, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{ns}::noop", impl, lib=lib)
    n_in = len(op.inputs)
    torch.library.register_autograd(f"{ns}::noop", lambda ctx, *grads: (None,) * n_in, lib=lib)
    _FLOORS[key] = (getattr(torch.ops, ns).noop, lib)  # the Library kept alive: its registrations end with it
    return _FLOORS[key][0]


_FLOORS: dict = {}
