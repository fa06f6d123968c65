"""Zero-copy sharing of GPU memory between Numba and PyTorch.

Two protocols, no copies: ``__cuda_array_interface__`` (Numba's protocol, which torch tensors
implement: ``numba.cuda.as_cuda_array(t)``) and DLPack (``torch.from_dlpack``), which Numba device
arrays do not export, so Numba -> torch goes through ``torch.as_tensor`` on the array interface.
Source: Numba docs, "CUDA Array Interface"; PyTorch docs, ``torch.utils.dlpack``.
"""
from __future__ import annotations

import torch


def to_numba(t: torch.Tensor):
    """A Numba device array viewing the same GPU memory as CUDA tensor ``t`` (no copy).

    Raises ValueError if ``t`` is not on a CUDA device or requires grad (detach it first).
    """
    from kernels.compiler import cuda

    if not t.is_cuda:
        raise ValueError(f"tensor is on {t.device}, not a CUDA device")
    if t.requires_grad:
        raise ValueError("tensor requires grad: pass t.detach()")
    return cuda.as_cuda_array(t)


def to_torch(array) -> torch.Tensor:
    """A CUDA tensor viewing the same GPU memory as a Numba device array (no copy)."""
    return torch.as_tensor(array, device="cuda")
