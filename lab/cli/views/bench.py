"""Views of lab.bench results: sweep, roofline and compare tables and plots."""
from __future__ import annotations

from lab.bench.compare import row_name
from lab.bench.sweep import METRICS, rows
from lab.cli.views.plot import pyplot


def sweep_table(doc: dict):
    """A rich Table of the sweep (fits 80 columns: long reasons go below it via :func:`notes`)."""
    from rich.table import Table

    sim = doc["backend"] == "simulator"
    data = rows(doc)
    t = Table(title=f"lab sweep {doc['kernel']}" + (" (CUDA simulator: wall clock, not GPU time)" if sim else ""),
              title_justify="left")
    # a column that is the same on every row (one size, or one threads value) goes to the title
    same = {c for c in ("size", "threads") if len({r[c] for r in data}) == 1 and data}
    if same:
        t.title += " — " + ", ".join(f"{c} {data[0][c]}" for c in ("size", "threads") if c in same)
    cols = [c for c in ("size", "threads", "contender", "sim ms" if sim else "median ms", "IQR %", "GB/s", "check")
            if c not in same]
    for col in cols:
        t.add_column(col, justify="left" if col in ("size", "contender", "check") else "right",
                     no_wrap=col == "contender", overflow="fold")
    for r in data:
        iqr = 100 * r["iqr_ms"] / r["median_ms"] if r["median_ms"] else None
        cells = {"size": r["size"], "threads": str(r["threads"]), "contender": r["name"],
                 "median": "-" if r["median_ms"] is None else f"{r['median_ms']:.4g}",
                 "IQR %": "-" if iqr is None else f"{iqr:.0f}", "GB/s": "-" if r["gbps"] is None else f"{r['gbps']:.1f}",
                 "check": r["status"]}
        t.add_row(*[cells["median" if c.endswith(" ms") else c] for c in cols])
    return t


def sweep_plot(doc: dict, path: str, metric: str = "auto") -> str:
    """Write a PNG: ``metric`` ("ms", "gbps", "gflops"; "auto": GB/s when measured, else ms) against
    threads per block (when several were given; log2 axis) or else against size, one line per contender
    (and per size or threads value when both vary). Returns the metric used. In the simulator "auto"
    means ms (the simulation's wall clock, so labelled)."""

    plt = pyplot()
    data = rows(doc)
    if metric == "auto":  # the simulator has GB/s for NumPy only: plot its wall clock instead
        metric = "gbps" if doc["backend"] == "gpu" and any(r["gbps"] is not None for r in data) else "ms"
    key, label = METRICS[metric]
    by_threads = len(doc["threads"] or []) > 1
    xs = doc["threads"] if by_threads else [r for r in dict.fromkeys(r["size"] for r in data)]
    fig, ax = plt.subplots(figsize=(8, 5))
    lines: dict[str, list] = {}
    for r in data:
        if r[key] is None:
            continue
        other = r["size"] if by_threads else r["threads"]
        several = len(doc["sizes"] or []) > 1 if by_threads else len(doc["threads"] or []) > 1
        name = f"{r['name']} @ {other}" if several else r["name"]
        x = r["threads"] if by_threads else xs.index(r["size"])
        lines.setdefault(name, []).append((x, r[key]))
    for name, pts in lines.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    if by_threads:
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel("threads per block")
    else:
        ax.set_xticks(range(len(xs)), xs)
        ax.set_xlabel("size")
    if metric == "ms":
        ax.set_yscale("log")
    ax.set_ylabel(label)
    dev = doc["reports"][0]["device"]["name"] if doc["reports"] else ""
    title = f"lab sweep {doc['kernel']} on {dev}"
    if doc["backend"] == "simulator":
        title += "\nCUDA simulator: wall clock of the simulation, not a GPU time"
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return metric


def roofline_table(doc: dict):
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


def roofline_plot(doc: dict, path: str) -> None:
    """Write the roofline PNG: log-log FLOP/byte vs GFLOP/s, the memory and FP32 ceilings, one marker
    per point (one colour per kernel; filled: Numba rungs, hollow: libraries), named in the legend.
    With no points (the simulator) each kernel's intensity is a dashed line, with the note."""
    import numpy as np


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


def compare_table(result: dict):
    """A rich Table: kernel, contender (variant), A ms, B ms, A/B speedup, noise, verdict."""
    from rich.table import Table


    t = Table(title="lab compare: speedup = A / B (above 1: B is faster)", title_justify="left")
    one_kernel = len({r["kernel"] for r in result["rows"]}) == 1
    for col in ("kernel", "contender", "A ms", "B ms", "A/B", "noise %", "verdict"):
        if not (col == "kernel" and one_kernel):
            t.add_column(col, justify="left" if col in ("kernel", "contender", "verdict") else "right",
                         no_wrap=col == "contender", overflow="fold")
    for r in result["rows"]:
        ms = lambda x: "-" if not x else f"{x:.4g}"  # noqa: E731
        nz = "-" if r["noise_a"] is None or r["noise_b"] is None else f"{100 * r['noise_a']:.0f}+{100 * r['noise_b']:.0f}"
        cells = [row_name(r), ms(r["a_ms"]), ms(r["b_ms"]), "-" if r["speedup"] is None else f"{r['speedup']:.2f}x",
                 nz, r["verdict"]]
        t.add_row(*(cells if one_kernel else [r["kernel"], *cells]))
    return t
