"""``lab roofline``: every kernel and rung placed by arithmetic intensity against achieved FLOP/s.

The roofline model (Williams, Waterman, Patterson, "Roofline: an insightful visual performance model
for multicore architectures", CACM 2009): a kernel that does F FLOPs and must move B bytes has
arithmetic intensity I = F / B (FLOP/byte). It cannot run faster than min(peak FP32 FLOP/s,
I x memory bandwidth); the two lines meet at the ridge point I* = peak / bandwidth. Left of the
ridge a kernel is memory-bound, right of it compute-bound. Here F and B are the spec's minimum
arithmetic and traffic (``flops``, ``bytes_moved``), the bandwidth is the *measured* device copy
bandwidth and the peak is the FP32 peak of this GPU (``lab.device``), so a point's height over its
roof is the fraction of what the hardware allows (the seed's strides/MFU notebook calls the compute
fraction MFU).

In the CUDA simulator there is no GPU: no ceilings and no achieved FLOP/s. The command then runs
nothing, prints each kernel's arithmetic intensity at its standard GPU size, and a PNG draws the
intensities on empty axes with that note. Nothing here prints.
"""
from __future__ import annotations

from lab.errors import LabError
from lab.plot import row_name
from lab.progress import Progress, quiet

SIM_NOTE = ("CUDA simulator: no GPU, so no copy bandwidth, no FP32 peak and no achieved FLOP/s; "
            "only each kernel's arithmetic intensity (at its standard GPU size) is meaningful")


def _points(rep: dict) -> list[dict]:
    ai = rep["flops"] / rep["bytes_moved"]
    out = []
    for r in rep["results"]:
        if r["ok"] and r["gflops"] is not None:
            out.append({"kernel": rep["kernel"], "size": "x".join(map(str, rep["size"])), "contender": r["contender"],
                        "name": row_name(r), "intensity": ai, "gflops": r["gflops"]})
    return out


def roofline(backend: str, kernel_names=None, contenders=None, repeats: int | None = None,
             reports: list[dict] | None = None, progress: Progress = quiet) -> dict:
    """The roofline document (JSON-able).

    kernel_names: default all; contenders: default numba, cupy, torch (GPU contenders); reports:
    ``lab run --json`` dicts to place instead of running (e.g. from ``lab bench --json``).
    Returns {"backend", "device", "copy_gbps", "peak_gflops", "ridge_intensity", "note",
    "kernels": [{"kernel", "size", "intensity"}], "points": [{"kernel", "size", "contender", "name",
    "intensity" (FLOP/byte), "gflops", "roof_gflops", "pct_of_roof", "bound"}]}.
    """
    import numpy as np

    import kernels
    from lab.bench import STANDARD
    from lab.device import describe, measure_copy_bandwidth
    from lab.report import to_json
    from lab.runner import Options, run

    simulator = backend == "simulator"
    names = list(kernel_names or kernels.NAMES)
    device = describe(simulator)
    doc = {"backend": backend, "device": device, "copy_gbps": None, "peak_gflops": device.get("peak_fp32_gflops"),
           "ridge_intensity": None, "note": SIM_NOTE if simulator and not reports else "", "kernels": [], "points": []}
    for k in names:
        try:
            spec = kernels.load(k)
        except KeyError as e:
            raise LabError(e.args[0]) from None
        size = spec.parse_size(STANDARD[k][0][0])
        doc["kernels"].append({"kernel": k, "size": "x".join(map(str, size)),
                               "intensity": spec.flops(size) / spec.bytes_moved(size, np.dtype("float32"))})
    if reports is None and not simulator:
        reports = []
        for i, k in enumerate(names):
            size, threads = STANDARD[k][0]
            progress(i, len(names), f"{k} {size} --threads {threads}")
            opts = Options(kernel=k, size=size, threads=threads, repeats=repeats,
                           contenders=contenders or ["numba", "cupy", "torch"])
            reports.append(to_json(run(opts, backend)))
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


def table(doc: dict):
    """A rich Table: one row per placed point, or per kernel (intensity only) when nothing was timed."""
    from rich.table import Table

    t = Table(title="roofline" + (f" (ridge at {doc['ridge_intensity']:.1f} FLOP/B)" if doc["ridge_intensity"] else ""),
              title_justify="left")
    if not doc["points"]:
        for col in ("kernel", "size", "FLOP/B"):
            t.add_column(col, justify="right" if col == "FLOP/B" else "left")
        for k in doc["kernels"]:
            t.add_row(k["kernel"], k["size"], f"{k['intensity']:.3g}")
        return t
    for col in ("kernel", "contender", "FLOP/B", "GFLOP/s", "% roof", "bound"):
        t.add_column(col, justify="left" if col in ("kernel", "contender", "bound") else "right",
                     no_wrap=col == "contender", overflow="fold")
    for p in doc["points"]:
        t.add_row(p["kernel"], p["name"], f"{p['intensity']:.3g}", f"{p['gflops']:.0f}",
                  f"{p['pct_of_roof']:.0f}%" if "pct_of_roof" in p else "-", p.get("bound", "-"))
    return t


def plot(doc: dict, path: str) -> None:
    """Write the roofline PNG: log-log FLOP/byte vs GFLOP/s, the memory and FP32 ceilings, one marker
    per point (one colour per kernel; filled: Numba rungs, hollow: libraries), named in the legend.
    With no points (the simulator) each kernel's intensity is a dashed line, with the note."""
    import numpy as np

    from lab.plot import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(12, 6.5))
    ais = [k["intensity"] for k in doc["kernels"]] + [p["intensity"] for p in doc["points"]]
    lo, hi = min(ais) / 4, max(ais + [doc["ridge_intensity"] or 0]) * 4
    colours = {k["kernel"]: f"C{i}" for i, k in enumerate(doc["kernels"])}
    bw, peak = doc["copy_gbps"], doc["peak_gflops"]
    if bw and peak:
        x = np.geomspace(lo, hi, 200)
        ax.plot(x, np.minimum(peak, x * bw), color="black", lw=2)
        x0 = doc["ridge_intensity"] / 8  # the slope between the memory-bound points and the ridge is empty
        ax.text(x0, x0 * bw * 0.4, f"memory roof: measured copy {bw:.0f} GB/s", fontsize=8)
        ax.text(hi / 1.2, peak * 1.1, f"FP32 peak {peak / 1e3:.1f} TFLOP/s", ha="right", fontsize=8)
        ax.axvline(doc["ridge_intensity"], color="grey", ls=":", lw=1)
    shapes = "osD^vP*Xhp<>"
    index: dict[str, int] = {}
    for p in doc["points"]:
        i = index[p["kernel"]] = index.get(p["kernel"], -1) + 1
        c = colours.get(p["kernel"], "grey")
        ax.scatter(p["intensity"], p["gflops"], s=45, zorder=3, marker=shapes[i % len(shapes)],
                   facecolors=c if p["contender"] == "numba" else "none", edgecolors=c,
                   label=f"{p['kernel']}: {p['name']}")
    if not doc["points"]:
        for k in doc["kernels"]:
            ax.axvline(k["intensity"], color=colours[k["kernel"]], ls="--", lw=0.8, label=f"{k['kernel']} {k['size']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    if not doc["points"] and not peak:
        ax.set_ylim(1, 1e5)
    ax.set_xlabel("arithmetic intensity (FLOP/byte of minimum traffic)")
    ax.set_ylabel("achieved GFLOP/s")
    sizes = ", ".join(f"{k['kernel']} {k['size']}" for k in doc["kernels"])
    ax.set_title(f"roofline: {doc['device']['name']}\n{sizes}", fontsize=10)
    if doc["note"]:
        ax.text(0.5, 0.5, doc["note"].replace("; ", ";\n"), transform=ax.transAxes, ha="center", va="center",
                fontsize=9, bbox={"facecolor": "lightyellow", "alpha": 0.9})
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
