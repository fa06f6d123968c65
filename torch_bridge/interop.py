"""Zero-copy sharing of GPU memory between Numba, PyTorch and CuPy.

Which protocol each direction uses, and why (measured on the H100, numba-cuda 0.30.4, torch 2.11,
CuPy 14):

  torch -> Numba   ``__cuda_array_interface__``: torch exports it (v2, no stream), Numba imports it
                   (``numba.cuda.from_cuda_array_interface``). ``sync=False``: the bridge orders
                   work on torch's stream itself (torch_bridge.streams).
  Numba -> torch   ``torch.as_tensor(array, device="cuda")`` reads Numba's interface (v3). DLPack
                   does not work: numba-cuda's DeviceNDArray has no ``__dlpack__`` (numba-cuda
                   issue 531), so ``torch.from_dlpack(numba_array)`` fails.
  torch <-> CuPy   DLPack both ways (``cupy.from_dlpack(t)``, ``torch.from_dlpack(cupy_array)``):
                   it carries the device and the stream handshake; CAI would work too.
  Numba <-> CuPy   ``__cuda_array_interface__`` both ways (``cupy.asarray``, ``numba.cuda.as_cuda_array``).

Nothing here copies: a host array (NumPy, a CPU tensor) where a device array is required is a
ValueError, never a silent ``.cuda()``. :func:`shares_memory` proves two views share memory.
Sources: Numba docs, "CUDA Array Interface (Version 3)"; PyTorch docs, ``torch.utils.dlpack``;
CuPy docs, "Interoperability".
"""
from __future__ import annotations

import torch
from kernels import arrays


def _kind(x) -> str:
    mod = type(x).__module__
    if isinstance(x, torch.Tensor):
        return "torch"
    if mod.startswith("cupy"):
        return "cupy"
    if hasattr(x, "__cuda_array_interface__") and not mod.startswith("numpy"):
        return "numba"
    return "host"


def _need_device(x, what: str) -> None:
    if isinstance(x, torch.Tensor) and not x.is_cuda:
        raise ValueError(f"{what}: tensor is on {x.device}, not a CUDA device (no implicit copies: call .cuda())")
    if _kind(x) == "host":
        raise ValueError(f"{what}: got a host {type(x).__name__}, a device array is required "
                         f"(no implicit copies: copy it to the GPU first)")


def to_numba(t: torch.Tensor, sync: bool = False):
    """A Numba device array viewing the same GPU memory as CUDA tensor ``t`` (any strides, no copy).

    ``sync=False``: Numba does not synchronize a stream on import; order the launch yourself
    (torch_bridge.streams.numba_stream). Raises ValueError if ``t`` is not on a CUDA device or
    requires grad (a kernel writing through the view would bypass autograd: pass ``t.detach()``).
    """
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    _need_device(t, "to_numba")
    if t.requires_grad:
        raise ValueError("to_numba: tensor requires grad (a Numba kernel would bypass autograd): pass t.detach()")
    if not sync:  # the view every lab kernel's launch takes (kernels.arrays: byte strides, uint16 too)
        return arrays.device_arg(t)
    return cuda.from_cuda_array_interface(t.__cuda_array_interface__, owner=t, sync=True)


def to_torch(array) -> torch.Tensor:
    """A CUDA tensor viewing the same GPU memory as a Numba device array or a CuPy array (no copy).

    Numba: through its array interface (no DLPack export, see the module docstring). CuPy: DLPack.
    A CUDA tensor is returned as is. ValueError for host arrays (NumPy, CPU tensors).
    """
    _need_device(array, "to_torch")
    kind = _kind(array)
    if kind == "torch":
        return array
    if kind == "cupy":
        return torch.from_dlpack(array)
    return torch.as_tensor(array, device="cuda")


def to_cupy(x):
    """A CuPy array viewing the same GPU memory as a CUDA tensor (DLPack) or a Numba device array (CAI)."""
    import cupy as cp  # lazy: optional (cupy)

    _need_device(x, "to_cupy")
    kind = _kind(x)
    if kind == "cupy":
        return x
    if kind == "torch":
        if x.requires_grad:
            raise ValueError("to_cupy: tensor requires grad: pass t.detach()")
        return cp.from_dlpack(x)
    return cp.asarray(x)


def data_ptr(x) -> int:
    """The device address of the first element of a tensor, Numba or CuPy array."""
    if isinstance(x, torch.Tensor):
        return x.data_ptr()
    return int(x.__cuda_array_interface__["data"][0])


def shares_memory(x, y) -> bool:
    """True when ``x`` and ``y`` (tensor, Numba or CuPy arrays) are views of the same memory: the same
    data pointer, and a value written through ``x`` is read back through ``y`` (then restored).
    Synchronizes the device (a test helper, not for hot paths)."""
    if data_ptr(x) != data_ptr(y):
        return False
    tx, ty = to_torch(x).detach(), to_torch(y).detach()
    if tx.numel() == 0:
        return True
    fx, fy = tx.reshape(-1)[:1], ty.reshape(-1)[:1]
    saved = fx.clone()
    probe = (saved + 1) if tx.dtype.is_floating_point else (saved ^ 1)
    fx.copy_(probe)
    torch.cuda.synchronize()
    seen = bool(torch.equal(fy.to(probe.dtype), probe))
    fx.copy_(saved)
    torch.cuda.synchronize()
    return seen
