"""Views of lab.bench results: sweep, roofline and compare tables and plots."""
from __future__ import annotations

from lab.bench.compare import row_name
from lab.bench.sweep import METRICS, rows
from lab.cli.views.plot import pyplot, save
import numpy as np
from kernels.spec import plural
from lab.cli.views.report import sig, duration
from lab.cli.views.table import CHECK_STYLE, Col, console as stdout, explain, fit, wide_adds, show
from rich.markup import escape


def sweep_table(doc: dict, console=None, wide: bool = False) -> list:
    """The sweep as renderables (a table that fits the console, its explanations and the --wide
    line); long reasons go below it via :func:`lab.bench.sweep.notes`."""
    out = console or stdout()
    sim = doc["backend"] == "simulator"
    data = rows(doc)
    title = f"lab sweep {doc['kernel']}"
    # a column that is the same on every row (one size, or one threads value) goes to the title
    same = {c for c in ("size", "threads") if len({r[c] for r in data}) == 1 and data}
    if same:
        title += " — " + ", ".join(f"{c} {data[0][c]}" for c in ("size", "threads") if c in same)
    cols = [Col("size", lambda r: r["size"], 100, left=True),
            Col("threads", lambda r: str(r["threads"]), 100),
            Col("contender", lambda r: r["name"], 100, left=True, wrap=True),
            Col("check", lambda r: r["status"], 100, left=True, style=CHECK_STYLE.get),
            Col("sim ms" if sim else "ms", lambda r: None if r["median_ms"] is None else sig(r["median_ms"]), 95,
                explain="sim ms: the simulation's wall clock a call (median of --repeats, else the checked first call; not a GPU time)" if sim
                else "ms: median a call"),
            Col("±%", lambda r: None if not r["median_ms"] or r["iqr_ms"] is None
                else f"{100 * r['iqr_ms'] / r['median_ms']:.0f}", 60, explain="±%: IQR / median"),
            Col("GB/s", lambda r: None if r["gbps"] is None else sig(r["gbps"]), 80),
            Col("GFLOP/s", lambda r: None if r["gflops"] is None else sig(r["gflops"]), 40)]
    cols = [c for c in cols if c.header not in same]
    table, shown, dropped = fit(cols, data, out, wide, title)
    return [table, *([f"[dim]{escape(explain(shown))}[/]"] if explain(shown) else []), *wide_adds(dropped)]


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
    save(fig, path, dpi=120)
    return metric


def roofline_table(doc: dict, console=None, wide: bool = False) -> list:
    """Renderables: one row per placed point, or per kernel (intensity only) when nothing was timed."""
    out = console or stdout()
    title = "roofline" + (f" (ridge at {doc['ridge_intensity']:.1f} FLOP/B)" if doc["ridge_intensity"] else "")
    if not doc["points"]:
        cols = [Col("kernel", lambda k: k["kernel"], 100, left=True), Col("size", lambda k: k["size"], 100, left=True),
                Col("FLOP/B", lambda k: f"{k['intensity']:.3g}", 100, explain="FLOP/B: FLOPs per byte of minimum traffic")]
        items = doc["kernels"]
    else:
        cols = [Col("kernel", lambda p: p["kernel"], 100, left=True),
                Col("contender", lambda p: p["name"], 100, left=True, wrap=True),
                Col("FLOP/B", lambda p: f"{p['intensity']:.3g}", 90, explain="FLOP/B: FLOPs per byte of minimum traffic"),
                Col("GFLOP/s", lambda p: sig(p["gflops"]), 100),
                Col("% roof", lambda p: f"{p['pct_of_roof']:.0f}%" if "pct_of_roof" in p else None, 95,
                    explain="% roof: of the roofline at that intensity"),
                Col("bound", lambda p: p.get("bound"), 70, left=True)]
        items = doc["points"]
    table, shown, dropped = fit(cols, items, out, wide, title)
    return [table, *([f"[dim]{escape(explain(shown))}[/]"] if explain(shown) else []), *wide_adds(dropped)]


def roofline_plot(doc: dict, path: str) -> None:
    """Write the roofline PNG: log-log FLOP/byte vs GFLOP/s, the memory and FP32 ceilings, one marker
    per point (one colour per kernel; filled: Numba rungs, hollow: libraries), named in the legend.
    With no points (the simulator) each kernel's intensity is a dashed line, with the note."""
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
    save(fig, path, dpi=120)


def compare_table(result: dict, console=None, wide: bool = False) -> list:
    """Renderables: kernel, contender (variant), A ms, B ms, A/B speedup, noise, verdict."""
    out = console or stdout()
    one_kernel = len({r["kernel"] for r in result["rows"]}) == 1
    ms = lambda x: None if not x else sig(x)  # noqa: E731
    cols = [Col("kernel", lambda r: r["kernel"], 100, left=True),
            Col("contender", row_name, 100, left=True, wrap=True),
            Col("A ms", lambda r: ms(r["a_ms"]), 90), Col("B ms", lambda r: ms(r["b_ms"]), 90),
            Col("A/B", lambda r: None if r["speedup"] is None else f"{r['speedup']:.2f}x", 100,
                explain="A/B: speedup (above 1: B is faster)"),
            Col("noise %", lambda r: None if r["noise_a"] is None or r["noise_b"] is None
                else f"{100 * r['noise_a']:.0f}+{100 * r['noise_b']:.0f}", 60,
                explain="noise %: IQR / median of A + of B"),
            Col("verdict", lambda r: r["verdict"], 100, left=True, wrap=True)]
    if one_kernel:
        cols = cols[1:]
    table, shown, dropped = fit(cols, result["rows"], out, wide, "lab compare: speedup = A / B")
    return [table, *([f"[dim]{escape(explain(shown))}[/]"] if explain(shown) else []), *wide_adds(dropped)]


def print_profile(doc: dict, console=None, wide: bool = False) -> None:
    """``lab profile``: what was profiled, then the key_averages rows as a table that fits (the
    times with their units), then the notes."""
    out = console or stdout()
    out.print(f"[bold]{escape(doc['kernel'])}[/] {'x'.join(map(str, doc['size']))} · --threads {doc['threads']} · "
              f"{plural(doc['repeats'], 'call')} each · activities {'+'.join(doc['activities'])} · "
              f"sorted by {doc['sort_by']}")
    for name, why in doc["skipped"].items():
        out.print(f"[dim]skipped {escape(name)}: {escape(why)}[/]")
    us = lambda key: lambda r: None if key not in r else duration(r[key] / 1e3)  # noqa: E731
    cols = [Col("name", lambda r: r["name"], 100, left=True, wrap=True),
            Col("calls", lambda r: str(r["calls"]), 60),
            Col("self CPU", us("self_cpu_us"), 70), Col("CPU total", us("cpu_us"), 90),
            Col("self CUDA", us("self_device_us"), 75), Col("CUDA total", us("device_us"), 95)]
    show(cols, doc.get("rows") or [], out, wide, "torch.profiler key_averages",
         [f"[dim]{escape(n)}[/]" for n in doc["notes"]])


def tune_table(doc: dict, console=None, wide: bool = False) -> list:
    """``lab tune``: a row per shape (its class, the heuristic's choice and time, the winner and its
    time, the speedup, candidates ok / tried), then where the winners went and the failed candidates
    (each reason once), as renderables."""
    out = console or stdout()
    sim = doc["simulated"]
    unit = "sim ms" if sim else "ms"

    def cfg(c):
        if not c:
            return None
        p = ", ".join(f"{k}={v}" for k, v in sorted(c["params"].items()))
        return f"{c['rung']} t={c['threads']}" + (f" {p}" if p else "")

    def ms(c):
        return None if not c or c["ms"] is None else sig(c["ms"])

    cols = [Col("shape", lambda r: "x".join(map(str, r["size"])), 100, left=True),
            Col("class", lambda r: r["shape_class"], 40, left=True),
            Col("heuristic", lambda r: cfg(r["heuristic"]), 60, left=True, wrap=True),
            Col(unit, lambda r: ms(r["heuristic"]), 60),
            Col("tuned", lambda r: cfg(r["winner"]) or r["status"], 100, left=True, wrap=True),
            Col(f"tuned {unit}", lambda r: ms(r["winner"]), 100),
            Col("gain", lambda r: None if r["speedup_vs_heuristic"] is None else f"{r['speedup_vs_heuristic']:.2f}x",
                90, explain="gain: heuristic ms / tuned ms"),
            Col("ok/tried", lambda r: f"{sum(c['status'] == 'ok' for c in r['candidates'])}/"
                f"{sum(c['status'] != 'budget' for c in r['candidates'])}", 50)]
    title = f"lab tune {doc['kernel']} — {doc['device']}" + (" (simulated: times say nothing of a GPU)" if sim else "")
    table, shown, dropped = fit(cols, doc["shapes"], out, wide, title)
    lines = [table, *([f"[dim]{escape(explain(shown))}[/]"] if explain(shown) else []), *wide_adds(dropped)]
    lines.append(f"{len(doc['entries'])} shape classes tuned in {doc['elapsed_s']:.1f} s of a "
                 f"{doc['budget_s']:g} s budget" + (f"; written to {doc['cache_path']}" if doc["cache_path"] and doc["entries"]
                                                    else "; not cached (simulated)" if sim else ""))
    kept = sorted(e["shape_class"] for e in doc["entries"] if e["rung"] == "heuristic")
    if kept:
        lines.append(f"the heuristic's own per-shape choice won {plural(len(kept), 'class', 'classes')} "
                     f"({', '.join(kept)}): auto keeps choosing there")
    seen = []
    for r in doc["shapes"]:
        for c in r["candidates"]:
            if c["status"] in ("FAIL", "error"):
                line = f"{cfg(c)}: {c['status']} {c['reason']}"
                if line not in seen:
                    seen.append(line)
    budget = sum(c["status"] == "budget" for r in doc["shapes"] for c in r["candidates"])
    if budget:
        seen.append(f"{budget} candidates not run: the budget was spent (--budget)")
    return lines + [f"[dim]{escape(s)}[/]" for s in seen]
