"""What the lab holds, for ``lab list``: every kernel, its rungs (Numba variants) with one-line
summaries, the contenders it is run against, and its sizes. Data only; lab.cli.views.report prints it."""
from __future__ import annotations

import kernels
from lab.core import contenders as C, registry
from lab.core.errors import SCHEMA_VERSION, LabError


def _missing(kernel: str) -> dict:
    """Per library (cupy, torch) why ``kernel`` has no row of it, or None when it has: the library
    is not installed, or it has no op for this kernel (the registry says why)."""
    out = {}
    for lib in ("cupy", "torch"):
        if not C.library_labels(lib, kernel):
            out[lib] = f"none yet: {registry.no_contenders(kernel) or 'no op declared'}"
        elif not C.installed(lib):
            out[lib] = "not installed"
        else:
            out[lib] = None
    return out


def catalog() -> list[dict]:
    """One dict per kernel: schema_version (a list carries no version of its own: each item does), name,
    summary, size_help, default sizes (gpu, simulator), dtypes, rungs [{name, summary, needs_whole_warps,
    max_threads}], contenders {name: [labels]} (the registry's labels, installed or not) and unavailable
    {cupy|torch: why there is no row here, or None}.

    Imports the kernel modules, so the backend must be chosen first (lab.core.simulator.select)."""
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
                           "cupy": C.library_labels("cupy", name), "torch": C.library_labels("torch", name),
                           "triton": C.library_labels("triton", name)},
            "unavailable": _missing(name),
        })
    return out


def load(kernel: str):
    """The kernel's spec (``kernels.load``), an unknown name raised as a LabError."""
    try:
        return kernels.load(kernel)
    except KeyError as e:
        raise LabError(e.args[0]) from None


def problem_shape(spec, size: str | None, default):
    """``size`` parsed by the spec, or ``default`` (a shape, or a callable giving one) when no size was
    given; a size the spec cannot read raised as a LabError."""
    try:
        return spec.parse_size(size) if size else (default() if callable(default) else default)
    except ValueError as e:
        raise LabError(str(e)) from None
