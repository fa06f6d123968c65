"""The catalog commands as library functions: ``list`` (:func:`list_kernels`) and ``device``. They take
the ``lab`` command's options as keyword arguments (the same names and defaults), declared once in :mod:`lab.core.options`
(:func:`~lab.core.options.declares` checks them) and return the command's ``--json`` document; nothing here prints.
"""
from __future__ import annotations

from lab.core import args as A
from lab.core import options as D
from lab.core.options import declares


@declares(D.SIM)
def list_kernels(*, sim: bool | None) -> list[dict]:
    """``lab list``: every kernel with its variants (the ladder's rungs), contenders, dtypes and
    default sizes per backend (docs/schemas/list.json)."""
    from lab.core.simulator import select  # lazy: heavy for lab --help's start (ctypes)

    select(A.backend(sim))
    from lab.core.catalog import catalog  # lazy: heavy for lab --help's start (concurrent)

    return catalog()


@declares(D.MEASURE, D.SIM)
def device(*, measure: bool, sim: bool | None) -> dict:
    """``lab device``: the GPU's attributes (or what the simulator reports) and which compilers are
    usable; ``measure``: also the measured device-to-device copy bandwidth (GB/s).
    docs/schemas/device.json's document. LAB_COMPILER is checked as ``--compiler`` would be."""
    from lab.core.session import start  # lazy: heavy for lab --help's start (ctypes)

    backend = start(A.backend(sim)).backend
    from lab.core.device import device_info  # lazy: heavy for lab --help's start (lab.core.device)

    return device_info(backend == "simulator", measure)
