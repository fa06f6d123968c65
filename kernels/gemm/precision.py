"""What a float32 matmul's ``auto`` may trade for speed: torch's ``float32_matmul_precision`` names.

torch (``torch.set_float32_matmul_precision``) takes "highest", "high" and "medium"; the lab takes the same
three words for its own float32 matmul ``auto`` (``lab run --precision``, the library's and notebook's
``precision=``, the ``precision`` key of ``lab run --json``):

=========  ============================================================================  ======================
value      what ``auto`` may run for a float32 matmul                                     checked at
=========  ============================================================================  ======================
highest    the SIMT FP32 rungs only (FFMA on the CUDA cores)                              FP32's tolerance
high       also ``tensor_core_3xtf32``: three TF32 products a float32 product on the      FP32's tolerance
           tensor cores, FP32-accurate (kernels/gemm/tensor_core_3xtf32.py)
medium     also the TF32 rungs (``tensor_core_wgmma_tf32``, ``tensor_core_tf32``):        TF32's tolerance
           inputs rounded to 10 mantissa bits, about 1,000x FP32's error
=========  ============================================================================  ======================

The lab's default is **high**: ``auto`` is then FP32-accurate (checked at the same tolerance as the SIMT
rungs) and takes the tensor cores where they are faster. Not torch's meanings word for word: torch's default
is "highest", its "high" already allows TF32 (or bfloat16x3), its "medium" bfloat16; here "high" allows only
what passes FP32's check, and "medium" TF32. Rungs asked for by name (``--variant tensor_core_tf32``) run
whatever the precision: it governs ``auto``'s choice alone, for float32 matmuls alone.

The setting is this process's (as torch's is): :func:`get`, :func:`set_precision`, and :func:`using`, which
the runner wraps around a run (with the run's dtype, so that ``auto`` knows a float32 product from a float64
one). ValueError names the choices for any other value.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

PRECISIONS = ("highest", "high", "medium")
DEFAULT = "high"
_state = threading.local()


def check(value: str) -> str:
    """``value`` if it is one of :data:`PRECISIONS`, else ValueError naming them."""
    if value not in PRECISIONS:
        raise ValueError(f"precision {value!r}: choose from {', '.join(PRECISIONS)} (torch's float32_matmul_precision)")
    return value


def get() -> str:
    """The precision in force in this thread (:data:`DEFAULT` unless set)."""
    return getattr(_state, "precision", None) or _global["precision"]


def dtype():
    """The element type of the run in force (a numpy dtype), or None outside one (then auto assumes float32)."""
    return getattr(_state, "dtype", None)


_global = {"precision": DEFAULT}


def set_precision(value: str) -> None:
    """Set the process's precision (as ``torch.set_float32_matmul_precision``)."""
    _global["precision"] = check(value)


@contextlib.contextmanager
def using(value: str | None = None, dtype=None):
    """Within the block, ``auto`` sees precision ``value`` (None: the process's) for products of ``dtype``."""
    old = getattr(_state, "precision", None), getattr(_state, "dtype", None)
    _state.precision = check(value) if value is not None else old[0]
    _state.dtype = np.dtype(dtype) if dtype is not None else old[1]
    try:
        yield
    finally:
        _state.precision, _state.dtype = old


def allows(what: str, value: str | None = None) -> bool:
    """Whether precision ``value`` (default :func:`get`) lets auto run ``what``: "3xtf32" or "tf32"."""
    value = value or get()
    return {"3xtf32": value in ("high", "medium"), "tf32": value == "medium"}[what]
