"""A fast launch path for Numba kernels called with torch tensors (GPU only).

What a plain ``kernel[grid, block](a, b, c)`` costs on the host (numba-cuda 0.30.4, read in
``numba/cuda/dispatcher.py``): a ``_LaunchConfiguration`` object; ``typeof`` of every argument
(for a torch tensor: parsing its ``__cuda_array_interface__`` dict into a new device-array view);
the overload lookup; ``_Kernel._prepare_args``, which flattens each array into its 5 + 2 * ndim
kernel parameters (meminfo, parent, nitems, itemsize, data, shape..., strides...); and a launch
through ``cuda.core`` that boxes each parameter again. Measured on the H100: ~46 us with Numba
arrays, ~94 us with torch tensors.

:class:`FastKernel` does each of those once per (dtypes, shapes) and keeps it:

* the specialised overload (``dispatcher.compile(argtypes)``) and its ``CUkernel`` handle;
* the flattened parameter block (an array of int64) and the ``void*[]`` array of pointers
  into it, with the grid and block (``kernels.backend.param_block``);

so a call writes the tensors' data pointers into the block and calls ``cuLaunchKernel`` from
``libcuda`` (``kernels.backend.launcher``) on the given stream: no dict parsing, no new Python objects
per argument.
Only arrays with the C-contiguous layout are supported (the bridge makes its inputs contiguous).
The parameter block is per thread (the driver copies the parameters at launch, so reusing it is
safe once ``cuLaunchKernel`` returns).

numba-cuda-mlir lays its array parameters out differently (memref descriptors) and its launch is
already C++: there :func:`tensor_launcher` calls the configured kernel's native launcher with the
tensors themselves (``kernels.compiler.native_launcher``). Measured on the H200 (docs/benchmarks.md,
"Launch overhead"): 24.7 us a call under numba-cuda (FastKernel) and 11.0 us under
numba-cuda-mlir, against 44.7 and 38.2 us for a plain launch on Numba device arrays.
"""
from __future__ import annotations

import threading

from kernels.backend import launcher, param_block


class _Entry:
    """One specialisation: the kernel handle, launch configuration and parameter block."""

    __slots__ = ("handle", "dims", "values", "pointers", "data_slots", "launch")

    def __init__(self, handle, grid, block, layout):
        self.handle = handle
        g = tuple(grid) + (1,) * (3 - len(grid))
        b = tuple(block) + (1,) * (3 - len(block))
        self.dims = g + b
        self.values, self.pointers = param_block(layout)
        self.launch = launcher(handle, self.dims, self.pointers)


class FastKernel:
    """``FastKernel(dispatcher)(grid, block, stream, *tensors)``: launch a ``@cuda.jit`` kernel
    whose arguments are all C-contiguous CUDA tensors, at a few microseconds of host time a call.

    grid, block: tuples of 1-3 ints; stream: a raw ``cudaStream_t`` (int, 0 = legacy default).
    The first call for a given (dtypes, shapes) compiles and caches; later calls only write data
    pointers. Raises RuntimeError with the driver's error name if the launch fails.
    """

    def __init__(self, dispatcher, max_entries: int = 256):
        self.dispatcher = dispatcher
        self.max_entries = max_entries
        self._local = threading.local()

    def _entries(self) -> dict:
        d = getattr(self._local, "entries", None)
        if d is None:
            d = self._local.entries = {}
        return d

    def entry(self, key, config, tensors) -> _Entry:
        """The cached specialisation for ``key``; on a miss, ``config()`` gives (grid, block) and
        ``tensors`` the argument types and shapes."""
        entries = self._entries()
        e = entries.get(key)
        if e is None:
            if len(entries) >= self.max_entries:
                entries.clear()
            e = entries[key] = self._build(*config(), tensors)
        return e

    def _build(self, grid, block, tensors) -> _Entry:
        from torch_bridge.interop import to_numba  # lazy: optional (torch)

        views = [to_numba(t.detach()) for t in tensors]
        argtypes = tuple(self.dispatcher.typeof_pyval(v) for v in views)
        for ty in argtypes:
            if getattr(ty, "layout", "C") != "C":
                raise ValueError(f"FastKernel needs C-contiguous arrays, got {ty}")
        kernel = self.dispatcher.compile(argtypes)
        cufunc = kernel._codelibrary.get_cufunc()
        kernel.bind()
        layout, data_slots = [], []
        for v in views:
            itemsize = v.dtype.itemsize
            layout += [0, 0, v.size, itemsize]  # meminfo, parent, nitems, itemsize
            data_slots.append(len(layout))
            layout.append(0)  # data, written per call
            layout += list(v.shape)
            strides, acc = [], itemsize
            for dim in reversed(v.shape):
                strides.append(acc)
                acc *= dim
            layout += strides[::-1]
        e = _Entry(int(cufunc.handle), grid, block, layout)
        e.data_slots = tuple(data_slots)
        return e

    def __call__(self, grid, block, stream, *tensors):
        key = tuple((t.dtype, tuple(t.shape)) for t in tensors) + (tuple(grid), tuple(block))
        e = self.entry(key, lambda: (grid, block), tensors)
        values = e.values
        for slot, t in zip(e.data_slots, tensors):
            values[slot] = t.data_ptr()
        e.launch(stream)


# --- One configured kernel, launched on tensors: what the torch ops reuse between calls -------------
def tensor_launcher(kernel, grid, block, tensors):
    """``launch(tensors) -> bool``: launch ``kernel[grid, block](*tensors)`` on torch's current stream
    for tensors of the dtypes and shapes of ``tensors`` (C-contiguous CUDA tensors), at a few
    microseconds of host time, or None where no such path exists (the simulator). ``launch`` returns
    False, launching nothing, while a launch hook (``kernels.compiler.launch_hooked``) wraps the
    configured launch: the caller then launches the ordinary way, which the hook sees.

    * numba-cuda: a :class:`FastKernel` (the overload compiled or loaded once, its parameter block
      per thread; a call writes the data pointers and calls cuLaunchKernel on
      ``torch.cuda.current_stream(device)``);
    * numba-cuda-mlir: the configured kernel's native launcher (``kernels.compiler.native_launcher``),
      called with the tensors themselves: it reads their pointers, shapes and strides in C++ and
      launches on torch's current stream. The first call goes through the ordinary path on device
      views (which compiles or loads the kernel for these dtypes and ranks, ordered after torch's
      queued work by ``torch_bridge.streams.on_torch_stream``); where the native launcher is not
      available every call does.

    ``launch.path`` says which of these it takes (after its first call).
    """
    import torch  # lazy: optional (torch)

    from kernels.compiler import COMPILER, MLIR, SIMULATOR, launch_hooked  # lazy: backend chosen first (numba)

    if SIMULATOR:
        return None
    if COMPILER == MLIR:
        return _mlir_launcher(kernel, grid, block, launch_hooked)
    fk = FastKernel(kernel, max_entries=1)
    device, current_stream = tensors[0].device, torch.cuda.current_stream
    key, config = (), (lambda: (grid, block))

    def launch(tensors) -> bool:
        if launch_hooked():
            return False
        e = fk.entry(key, config, tensors)  # this thread's parameter block (compiled on the first call)
        values = e.values
        for slot, t in zip(e.data_slots, tensors):
            values[slot] = t.data_ptr()
        e.launch(current_stream(device).cuda_stream)
        return True

    launch.path = "FastKernel (cuLaunchKernel)"
    return launch


def _mlir_launcher(kernel, grid, block, launch_hooked):
    from kernels.compiler import native_launcher  # lazy: backend chosen first (numba)
    from torch_bridge.interop import to_numba  # lazy: optional (torch)
    from torch_bridge.streams import on_torch_stream  # lazy: optional (torch)

    configured = kernel[grid, block]
    native = []  # [] before the first call, then [the native launcher or None]

    def launch(tensors) -> bool:
        if launch_hooked():
            return False
        if native and native[0] is not None:
            try:
                native[0](*tensors)
                return True
            except (TypeError, ValueError) as e:  # it cannot take these arguments: the ordinary launch from now on
                native[0] = None
                launch.path = f"ordinary launch (the native launcher raised {type(e).__name__}: {e})"
        with on_torch_stream():
            configured(*[to_numba(t.detach()) for t in tensors])
        if not native:
            native.append(native_launcher(configured))
            launch.path = "native launcher" if native[0] is not None else "ordinary launch (no native launcher)"
        return True

    launch.path = "not yet called"
    return launch


# --- The lesson: vecadd without torch's dispatcher ---------------------------------------------------
# torch.ops.lab.vecadd (torch_bridge.lab_ops) is the op to use: checked inputs, autograd,
# torch.compile, any contiguity. What it costs on the host at 1024 elements, where the GPU needs ~2 us:
# torch's dispatcher and the op's autograd kernel, its checks, then the same cached launch as here
# (tensor_launcher). This function is what remains when torch's dispatcher and the checks are skipped:
# one cached launcher per (n, dtype, device), three data pointers, one launch on torch's current stream
# (docs/torch.md, "The fast launch path"; python -m torch_bridge.bench_launch measures both). What it
# gives up: no autograd, no torch.compile, no fake tensors, CUDA tensors of one float dtype only.
_vecadd_launches: dict = {}  # (n, dtype, device) -> (kernel, grid, block, launch): auto's choice, made once
_VECADD_RUNGS = {"element_per_thread": "vecadd_kernel", "four_per_thread": "vecadd_x4_kernel"}


def vecadd(a, b, out=None):
    """``out = a + b`` through :func:`tensor_launcher`: a, b (and ``out``, allocated when None)
    contiguous CUDA tensors of one float dtype and shape; returns ``out``. The rung and threads are the
    ones torch.ops.lab.vecadd runs: kernels/vecadd.py's ``auto`` (its ``choose()`` for the element
    count, or ``lab tune``'s winner), configured once per (n, dtype, device). ValueError for anything
    else (no copies, no broadcasting). GPU only."""
    import torch  # lazy: optional (torch)

    from kernels import vecadd as V  # lazy: backend chosen first (numba)
    from kernels.compiler import SIMULATOR  # lazy: backend chosen first (numba)

    if SIMULATOR:
        raise ValueError("torch_bridge.launch.vecadd: the fast launch path needs a GPU (the simulator has no "
                         "cuLaunchKernel); use torch.ops.lab.vecadd")
    tensors = (a, b) if out is None else (a, b, out)
    for t in tensors:
        if not (isinstance(t, torch.Tensor) and t.is_cuda and t.is_contiguous() and t.dtype == a.dtype
                and t.shape == a.shape and t.dtype in (torch.float32, torch.float64)):
            raise ValueError("torch_bridge.launch.vecadd: a, b and out must be contiguous CUDA tensors of one "
                             "float32 or float64 dtype and one shape")
    out = torch.empty_like(a) if out is None else out
    n = a.numel()
    if n == 0:
        return out
    key = (n, a.dtype, a.device)
    plan = _vecadd_launches.get(key)
    if plan is None:  # the rung auto picks, with its grid and block (the tuned table is read here only)
        cfg = V.SPEC.variants["auto"].launch((n,), 256)
        kernel = getattr(V, _VECADD_RUNGS[cfg.rung])
        if len(_vecadd_launches) >= 256:
            _vecadd_launches.clear()
        plan = _vecadd_launches[key] = (kernel, cfg.grid, cfg.block, tensor_launcher(kernel, cfg.grid, cfg.block, tensors))
    flat = (a, b, out) if a.dim() == 1 else (a.view(-1), b.view(-1), out.view(-1))
    kernel, grid, block, launch = plan
    if not launch(flat):  # a launch hook is installed: the ordinary launch, which the hook sees
        from torch_bridge.interop import to_numba  # lazy: optional (torch)
        from torch_bridge.streams import numba_stream  # lazy: optional (torch)

        kernel[grid, block, numba_stream(a.device)](*[to_numba(t) for t in flat])
    return out
