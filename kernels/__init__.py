"""The lab's kernels: each module holds the kernels, their launch math and a NumPy reference.

Importing a kernel module imports ``numba.cuda`` (through ``kernels.compiler``), so the backend (GPU or simulator) is chosen
first: by ``lab.core.session.select``, or else automatically (the simulator when no GPU is usable, with one warning); this package itself imports nothing heavy, and :func:`load` imports
a kernel module on demand.
"""
from __future__ import annotations

import difflib
import importlib

NAMES = ("vecadd", "matvec", "matmul", "softmax", "quantize", "dequantize", "quantize_per_channel")


def load(name: str):
    """The KernelSpec of kernel ``name``; KeyError with a did-you-mean for unknown names."""
    if name not in NAMES:
        close = difflib.get_close_matches(name, NAMES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise KeyError(f"unknown kernel {name!r}{hint}; kernels: {', '.join(NAMES)}")
    return importlib.import_module(f"kernels.{name}").SPEC


def load_variant(name: str, variant: str | None = None):
    """(KernelSpec, variant name) of kernel ``name``: ``variant`` or, when None, its first rung.
    KeyError (with the choices) for an unknown kernel or variant."""
    spec = load(name)
    variant = variant or next(iter(spec.variants))
    if variant not in spec.variants:
        raise KeyError(f"unknown variant {variant!r} of {name}; choose from: {', '.join(spec.variants)}")
    return spec, variant
