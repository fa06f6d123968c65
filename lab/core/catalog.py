"""What the lab holds, for ``lab list``: every kernel, its rungs (Numba variants) with one-line
summaries, the contenders it is run against, and its sizes. Data only; lab.cli.views.report prints it."""
from __future__ import annotations

import kernels
from lab.core import contenders as C
from lab.core.errors import SCHEMA_VERSION


def _labels(contender: str, kernel: str) -> list[str]:
    if contender == "torch" and not C.installed("torch"):
        return []  # the labels live in torch_bridge, which imports torch
    return C.library_labels(contender, kernel)


def catalog() -> list[dict]:
    """One dict per kernel: schema_version (a list carries no version of its own: each item does), name,
    summary, size_help, default sizes (gpu, simulator), dtypes, rungs [{name, summary, needs_whole_warps,
    max_threads}] and contenders {name: [labels]}.

    Imports the kernel modules, so the backend must be chosen first (lab.core.session.select)."""
    out = []
    for name in kernels.NAMES:
        spec = kernels.load(name)
        out.append({
            "schema_version": SCHEMA_VERSION,
            "name": name,
            "summary": spec.summary,
            "size_help": spec.size_help,
            "default_size": {"gpu": list(spec.default_size(False)), "simulator": list(spec.default_size(True))},
            "dtypes": list(spec.dtypes),
            "rungs": [{"name": v.name, "summary": v.doc, "needs_whole_warps": v.warp_multiple,
                       "max_threads": v.max_threads} for v in spec.variants.values()],
            "contenders": {"numba": list(spec.variants), "numpy": ["reference (CPU)"],
                           "cupy": _labels("cupy", name), "torch": _labels("torch", name)},
        })
    return out
