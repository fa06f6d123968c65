"""``lab roofline``: every kernel and rung placed by arithmetic intensity against achieved FLOP/s.

The roofline model (Williams, Waterman, Patterson, "Roofline: an insightful visual performance model
for multicore architectures", CACM 2009): a kernel that does F FLOPs and must move B bytes has
arithmetic intensity I = F / B (FLOP/byte). It cannot run faster than min(peak FP32 FLOP/s,
I x memory bandwidth); the two lines meet at the ridge point I* = peak / bandwidth. Left of the
ridge a kernel is memory-bound, right of it compute-bound. A kernel that does no arithmetic (a
copy: ``flops`` 0) has no place on it and is left out. Here F and B are the spec's minimum
arithmetic and traffic (``flops``, ``bytes_moved``), the bandwidth is the *measured* device copy
bandwidth and the peak is the FP32 peak of this GPU (``lab.core.device``), so a point's height over its
roof is the fraction of what the hardware allows (the seed's strides/MFU notebook calls the compute
fraction MFU).

In the CUDA simulator there is no GPU: no ceilings and no achieved FLOP/s. The command then runs
nothing, prints each kernel's arithmetic intensity at its standard GPU size, and a PNG draws the
intensities on empty axes with that note. Nothing here prints.
"""
from __future__ import annotations

from lab.core.errors import SCHEMA_VERSION, LabError
from lab.bench.compare import row_name
from lab.core.runner import Steps, quiet, Options
import kernels
import numpy as np
from lab.bench.suite import standard
from lab.core import device as core_device, runner

SIM_NOTE = ("CUDA simulator: no GPU, so no copy bandwidth, no FP32 peak and no achieved FLOP/s; "
            "only each kernel's arithmetic intensity (at its standard GPU size) is meaningful")


def _points(rep: dict) -> list[dict]:
    if not rep["flops"]:  # a kernel that does no arithmetic (a copy) has no place under a FLOP/s roof
        return []
    ai = rep["flops"] / rep["bytes_moved"]
    out = []
    for r in rep["results"]:
        if r["ok"] and r["gflops"] is not None:
            out.append({"kernel": rep["kernel"], "size": "x".join(map(str, rep["size"])), "contender": r["contender"],
                        "name": row_name(r), "intensity": ai, "gflops": r["gflops"]})
    return out


def roofline(backend: str, kernel_names=None, contenders=None, repeats: int | None = None,
             reports: list[dict] | None = None, progress: Steps = quiet) -> dict:
    """The roofline document (JSON-able).

    kernel_names: default all; contenders: default numba, cupy, torch (GPU contenders); reports:
    ``lab run --json`` dicts to place instead of running (e.g. from ``lab bench --json``).
    Returns {"schema_version", "backend", "device", "copy_gbps", "peak_gflops", "ridge_intensity", "note",
    "kernels": [{"kernel", "size", "intensity"}], "points": [{"kernel", "size", "contender", "name",
    "intensity" (FLOP/byte), "gflops", "roof_gflops", "pct_of_roof", "bound"}]}.
    """
    simulator = backend == "simulator"
    STANDARD = standard()
    names = list(kernel_names or kernels.NAMES)
    device = core_device.describe(simulator)
    doc = {"schema_version": SCHEMA_VERSION, "backend": backend, "device": device, "copy_gbps": None,
           "peak_gflops": device.get("peak_fp32_gflops"), "ridge_intensity": None,
           "note": SIM_NOTE if simulator and not reports else "", "kernels": [], "points": []}
    for k in list(names):
        try:
            spec = kernels.load(k)
        except KeyError as e:
            raise LabError(e.args[0]) from None
        size = spec.parse_size(STANDARD[k][0][0])
        if not spec.flops(size):  # no arithmetic (a copy): no point on a FLOP/s roofline
            names.remove(k)
            if not names:
                raise LabError(f"{k} does no arithmetic (0 FLOPs): it has no place on a FLOP/s roofline "
                               f"(lab run {k} reports its GB/s and % of copy bandwidth)")
            continue
        doc["kernels"].append({"kernel": k, "size": "x".join(map(str, size)),
                               "intensity": spec.flops(size) / spec.bytes_moved(size, np.dtype("float32"))})
    if reports is None and not simulator:
        reports = []
        for i, k in enumerate(names):
            size, threads = STANDARD[k][0]
            progress(i, len(names), f"{k} {size} --threads {threads}")
            opts = Options(kernel=k, size=size, threads=threads, repeats=repeats,
                           contenders=contenders or ["numba", "cupy", "torch"])
            reports.append(runner.run(opts, backend).to_dict())
        progress(len(names), len(names), "done")
    for rep in reports or []:
        doc["points"] += _points(rep)
        doc["copy_gbps"] = doc["copy_gbps"] or (rep.get("copy_bandwidth") or {}).get("gbps")
        doc["peak_gflops"] = doc["peak_gflops"] or rep["device"].get("peak_fp32_gflops")
    if reports and not doc["points"]:
        doc["note"] = "no timed GPU rows to place (simulator runs have no achieved FLOP/s)"
    bw, peak = doc["copy_gbps"], doc["peak_gflops"]
    if bw and peak:
        doc["ridge_intensity"] = peak / bw
        for p in doc["points"]:
            p["roof_gflops"] = min(peak, p["intensity"] * bw)
            p["pct_of_roof"] = 100 * p["gflops"] / p["roof_gflops"]
            p["bound"] = "memory" if p["intensity"] < doc["ridge_intensity"] else "compute"
    return doc


