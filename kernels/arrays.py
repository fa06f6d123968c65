"""Device arrays from any owner: torch CUDA tensors, CuPy arrays and the compiler's own device arrays.

numba-cuda-mlir deprecates its own device arrays (``cuda.to_device``, ``cuda.device_array``) in favour
of torch/CuPy arrays; the lab's kernels take all three, under both compilers, without a copy:

* :func:`device_arg` is what a launch takes: a Numba device array (either compiler's) as it is, and a
  torch tensor or CuPy array as the active compiler's own device-array view of the same memory
  (``cuda.from_cuda_array_interface(cai, owner=x, sync=False)``, made once, outside any timed call).
  Why a view rather than the tensor itself: numba-cuda-mlir 0.6.0 types a tensor
  (``type_defs/torch_types.py``) but its launch path then reads ``np.dtype(x.dtype)`` and ``x.strides``
  for its argument cache (``descriptor._array_cache_key``): ``torch.float32`` is no NumPy dtype
  (TypeError) and torch's strides count elements, not bytes. CuPy arrays launch directly under both
  compilers, but each launch then rebuilds (numba-cuda) or re-checks (numba-cuda-mlir) the array and
  synchronizes the stream the array interface names; the view pays that once, and
  :func:`kernels.compiler.bound`'s cached launch applies to it as to any device array.
* :func:`agnostic` wraps a rung's ``prepare(launch, inputs, outputs)`` (every
  :class:`kernels.spec.Variant` applies it) so that it takes any of the three and sees device arrays.
* :func:`empty_like`, :func:`to_device_like`, :func:`to_host` and :func:`address`: what the rungs'
  ``prepare`` functions use for scratch space, host copies and data addresses; scratch is allocated by
  the library that owns the inputs (torch inputs: torch scratch).
* :func:`empty`, :func:`from_host`, :func:`copy_from_host`: the owner's side (``lab run --arrays``).

Ordering: torch and CuPy allocate and copy on their current stream, Numba launches on the legacy
default stream (0), which waits for all other work of the context's blocking streams; the views
import no stream (``sync=False``, and CuPy's ``stream`` entry left out) and synchronize nothing.
Nothing here imports torch or CuPy unless an array of theirs is given or asked for. Sources: Numba docs, "CUDA Array Interface (Version 3)"; numba-cuda-mlir 0.6.0
``descriptor.py`` (``_ArgMarshaller``).
"""
from __future__ import annotations

import functools
import sys

import numpy as np

from kernels.backend import is_simulator

ARRAYS = ("numba", "torch", "cupy")  # who owns the device buffers
_OWNER = "_lab_array_owner"  # the attribute of a view made here that holds the torch/CuPy array it views


def kind(x) -> str:
    """"torch", "cupy", "numba" (a device array of either compiler, or the simulator's) or "host"."""
    mod = type(x).__module__
    if mod.startswith("torch"):
        return "torch"
    if mod.startswith("cupy"):
        return "cupy"
    if isinstance(x, np.ndarray) or not (hasattr(x, "__cuda_array_interface__") or hasattr(x, "copy_to_host")):
        return "host"
    return "numba"


def owner(x):
    """The torch tensor or CuPy array a :func:`device_arg` view stands for, else ``x`` itself."""
    return getattr(x, _OWNER, x)


def device_arg(x):
    """``x`` as the active compiler's launch takes it, sharing its memory: Numba device arrays (and
    host arrays, which a launch copies) unchanged; a CUDA tensor or CuPy array as a device-array view
    (kept alive by the view). In the simulator a CPU tensor is viewed as a simulator array over its
    memory (as torch_bridge does there). ValueError for a CPU tensor on a GPU, or a tensor that
    requires grad (a kernel writing through the view would bypass autograd)."""
    k = kind(x)
    if k not in ("torch", "cupy"):
        return x
    if k == "torch" and x.requires_grad:
        raise ValueError("the tensor requires grad (a kernel would bypass autograd): pass t.detach()")
    if k == "torch" and is_simulator():  # the simulator's device memory is host memory: a CPU tensor's
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray  # lazy: backend chosen first (numba)

        return _keep(FakeCUDAArray(x.numpy()), x)
    if k == "torch":
        if not x.is_cuda:
            raise ValueError(f"a kernel takes CUDA tensors; this one is on {x.device} (no implicit copies)")
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    if k == "torch":
        cai = _torch_interface(x)
    else:  # without CuPy's stream: the view orders its own copies on the legacy default stream, as launches
        cai = {key: val for key, val in x.__cuda_array_interface__.items() if key != "stream"}
    return _keep(cuda.from_cuda_array_interface(cai, owner=x, sync=False), x)


def _keep(view, x):
    """``view`` remembering the array it views (:func:`owner`: where its scratch comes from)."""
    try:
        setattr(view, _OWNER, x)
    except AttributeError:  # a device-array class without a __dict__: the view still works
        pass
    return view


def agnostic(prepare):
    """``prepare(launch, inputs, outputs)`` taking torch tensors, CuPy arrays or device arrays: it is
    called with :func:`device_arg` of each (the same objects for device arrays). Applied once."""
    if getattr(prepare, "_lab_agnostic", False):
        return prepare

    @functools.wraps(prepare)
    def wrapped(cfg, inputs, outputs):
        return prepare(cfg, [device_arg(a) for a in inputs], [device_arg(o) for o in outputs])

    wrapped._lab_agnostic = True
    return wrapped


_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _torch_dtype(dtype):
    """The torch dtype of NumPy ``dtype`` (same name; KeyError for one torch lacks)."""
    import torch  # lazy: optional (torch)

    return getattr(torch, {n: n for n in _DTYPES}[np.dtype(dtype).name])


def _torch_interface(t) -> dict:
    """CUDA tensor ``t``'s array interface (version 2, no stream), written here rather than read from
    ``t.__cuda_array_interface__``, which has no typestr for torch.uint16 (the bfloat16 rungs' bit
    patterns): byte strides, the NumPy type of the same name."""
    try:
        dtype = np.dtype(str(t.dtype).removeprefix("torch."))
    except TypeError:  # a dtype NumPy lacks (bfloat16): torch's own interface says what it can
        return t.__cuda_array_interface__
    return {"shape": tuple(t.shape), "strides": tuple(s * dtype.itemsize for s in t.stride()),
            "typestr": dtype.str, "data": (int(t.data_ptr()), False), "version": 2}


def empty(shape, dtype, arrays: str = "numba", device=None):
    """An uninitialized device array of ``shape`` and NumPy ``dtype`` owned by ``arrays`` (one of
    :data:`ARRAYS`): ``cuda.device_array``, ``torch.empty`` on ``device`` (default: the current CUDA
    device) or ``cupy.empty``."""
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if arrays == "torch":
        import torch  # lazy: optional (torch)

        return torch.empty(shape, dtype=_torch_dtype(dtype), device=device if device is not None else "cuda")
    if arrays == "cupy":
        import cupy as cp  # lazy: optional (cupy)

        return cp.empty(shape, np.dtype(dtype))
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    return cuda.device_array(shape, np.dtype(dtype))


def from_host(host: np.ndarray, arrays: str = "numba", device=None):
    """A device copy of NumPy ``host`` (C-contiguous) owned by ``arrays``."""
    host = np.ascontiguousarray(host)
    if arrays == "torch":
        import torch  # lazy: optional (torch)

        device = device if device is not None else "cuda"
        if host.dtype == np.uint16:  # copied as int16 (the same bits), then viewed as uint16
            return torch.from_numpy(host.view(np.int16)).to(device).view(torch.uint16)
        return torch.from_numpy(host).to(device)
    if arrays == "cupy":
        import cupy as cp  # lazy: optional (cupy)

        return cp.asarray(host)
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    return cuda.to_device(host)


def _library(like) -> tuple[str, object]:
    """(arrays, device) of the owner of ``like``: where scratch for it is allocated."""
    o = owner(like)
    k = kind(o)
    if k == "torch":
        return "torch", o.device
    if k == "cupy":
        return "cupy", None
    return "numba", None


def empty_like(like, shape, dtype):
    """Scratch for a ``prepare`` whose arrays include ``like``: an uninitialized array of ``shape`` and
    ``dtype`` from the library that owns ``like`` (torch, CuPy, else ``cuda.device_array``), as the
    launch takes it (:func:`device_arg`)."""
    arrays, device = _library(like)
    return device_arg(empty(shape, dtype, arrays, device))


def to_device_like(host: np.ndarray, like):
    """A device copy of NumPy ``host`` from the library that owns ``like``, as the launch takes it."""
    arrays, device = _library(like)
    return device_arg(from_host(host, arrays, device))


def to_host(x) -> np.ndarray:
    """A NumPy copy of device array ``x`` (a Numba device array or view, a tensor, a CuPy array; a host
    array as it is). Waits for the copy."""
    if hasattr(x, "copy_to_host"):
        return x.copy_to_host()
    k = kind(x)
    if k == "torch":
        return x.detach().cpu().numpy()
    if k == "cupy":
        return x.get()
    return np.asarray(x)


def copy_from_host(dst, host: np.ndarray) -> None:
    """Overwrite device array ``dst`` (whole, same shape and dtype) with NumPy ``host``."""
    host = np.ascontiguousarray(host)
    k = kind(dst)
    if k == "torch":
        import torch  # lazy: optional (torch)

        dst.copy_(torch.from_numpy(host))
    elif k == "cupy":
        dst.set(host)
    else:
        dst.copy_to_device(host)


def address(x) -> int | None:
    """The device address of ``x``'s first element (the array interface's data pointer), None for
    arrays without one (host arrays, the simulator's)."""
    if kind(x) == "torch":
        return int(x.data_ptr())
    ptr = getattr(getattr(x, "device_ctypes_pointer", None), "value", None)
    if ptr is not None:
        return int(ptr)
    cai = getattr(x, "__cuda_array_interface__", None)
    return int(cai["data"][0]) if cai and cai.get("data") and cai["data"][0] is not None else None


def release(arrays: str) -> None:
    """Hand the pooled memory of ``arrays`` back to the driver (torch's caching allocator, CuPy's pool),
    where that library is loaded; nothing for Numba."""
    if arrays == "torch" and "torch" in sys.modules:
        sys.modules["torch"].cuda.empty_cache()
    elif arrays == "cupy" and "cupy" in sys.modules:
        sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
