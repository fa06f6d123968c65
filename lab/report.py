"""Present a run: a rich table for people, one JSON object for programs. The only module that prints
run results (the CLI prints errors)."""
from __future__ import annotations

import json
import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lab.runner import Report


def _num(x, fmt="{:.3f}"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def _size(size) -> str:
    return "x".join(map(str, size))


def to_json(report: Report) -> dict:
    """The ``--json`` contract: kernel, backend, device, size, dtype, launch, results (+ extras)."""
    first_launch = next(iter(report.launches.values()), None)
    m = lambda r, attr: getattr(r.measurement, attr) if r.measurement else None  # noqa: E731
    return {
        "kernel": report.kernel,
        "backend": report.backend,
        "device": report.device,
        "size": list(report.size),
        "dtype": report.dtype,
        "threads_per_block": report.threads,
        "seed": report.seed,
        "repeats": report.repeats,
        "warmup": report.warmup,
        "bytes_moved": report.bytes_moved,
        "flops": report.flops,
        "launch": first_launch,
        "launches": report.launches,
        "copy_bandwidth": report.copy_bandwidth,
        "numpy_threads": report.numpy_threads,
        "warnings": report.warnings,
        "notes": report.notes,
        "results": [{
            "contender": r.contender, "variant": r.variant, "status": r.status, "reason": r.reason,
            "ok": r.ok, "median_ms": m(r, "median_ms"), "iqr_ms": m(r, "iqr_ms"),
            "first_call_ms": r.first_call_ms, "timing": r.measurement.method if r.measurement else None,
            "timed_calls": len(r.measurement.samples_ms) if r.measurement else 0,
            "gbps": r.gbps, "gflops": r.gflops, "pct_copy_bandwidth": r.pct_copy,
            "pct_peak_fp32": r.pct_peak_flops, "speedup_vs_numpy": r.speedup_vs_numpy,
            "max_abs_err": r.max_abs_err, "rel_err": r.rel_err, "launch": r.launch,
        } for r in report.rows],
    }


def print_json(report: Report) -> None:
    print(json.dumps(to_json(report), indent=2, default=str))


def header_lines(report: Report) -> list[str]:
    d = report.device
    lines = [f"[bold]{report.kernel}[/]: {report.summary} — size {_size(report.size)}, {report.dtype}, "
             f"--threads {report.threads}, seed {report.seed}"]
    if report.backend == "simulator":
        lines.append("[yellow]CUDA simulator: correctness only, timings are not meaningful[/]")
    else:
        bw = report.copy_bandwidth or {}
        peak = d.get("peak_bandwidth_gbps")
        lines.append(f"{d['name']} · compute capability {d['compute_capability']} · {d.get('sm_count')} SMs · "
                     f"copy bandwidth {_num(bw.get('gbps'), '{:.0f}')} GB/s measured"
                     + (f" (theoretical peak {peak:.0f} GB/s)" if peak else ""))
    lines.append(f"minimum traffic {report.bytes_moved / 1e6:.1f} MB, {report.flops / 1e6:.1f} MFLOP a call; "
                 f"{report.repeats} timed calls after {report.warmup} warm-up; NumPy: {report.numpy_threads}")
    return lines


def _console() -> Console:
    # Piped output (CI logs, docs) gets a fixed wide layout instead of rich's 80-column default.
    probe = Console()
    return probe if probe.is_terminal else Console(width=160)


def print_table(report: Report, console: Console | None = None) -> None:
    console = console or _console()
    for line in header_lines(report):
        console.print(line)
    for w in report.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")

    if report.launches:
        launch = Table(title="launch configuration (Numba)", title_justify="left")
        for col in ("variant", "grid", "block", "threads launched", "threads needed", "idle threads", "note"):
            launch.add_column(col, justify="left" if col in ("variant", "note") else "right")
        for v, cfg in report.launches.items():
            launch.add_row(v, str(tuple(cfg["grid"])), str(tuple(cfg["block"])), f"{cfg['threads_total']:,}",
                           f"{cfg['threads_needed']:,}", f"{cfg['threads_idle']:,}", escape(cfg.get("note", "")))
        console.print(launch)
        for v, cfg in report.launches.items():  # issue 8: the compiled kernel's resources (GPU only)
            if cfg.get("registers") is not None:
                console.print(f"{v}: {cfg['registers']} registers a thread, {cfg['shared_bytes']} B shared a block, "
                              f"{cfg['local_bytes']} B local a thread, theoretical occupancy {cfg['occupancy']:.0%}")

    table = Table(title="results", title_justify="left")
    for col in ("contender", "variant", "median ms", "IQR ms", "first call ms", "GB/s", "GFLOP/s",
                "% copy BW", "% FP32 peak", "x NumPy", "max abs err", "check"):
        table.add_column(col, justify="left" if col in ("contender", "variant", "check") else "right")
    notes = []
    for r in report.rows:
        check = {"ok": "[green]ok[/]", "FAIL": "[red]FAIL[/]", "skipped": "[dim]skipped[/]"}[r.status]
        med = r.measurement.median_ms if r.measurement else None
        iqr = r.measurement.iqr_ms if r.measurement else None
        table.add_row(r.contender, r.variant, _num(med, "{:.4f}"), _num(iqr, "{:.4f}"),
                      _num(r.first_call_ms, "{:.1f}"), _num(r.gbps, "{:.1f}"), _num(r.gflops, "{:.1f}"),
                      _num(r.pct_copy, "{:.1f}%"), _num(r.pct_peak_flops, "{:.1f}%"),
                      _num(r.speedup_vs_numpy, "{:.2f}x"),
                      _num(r.max_abs_err, "{:.2e}"), check)
        if r.reason:
            notes.append(escape(f"{r.contender} {r.variant}: {r.reason}"))
    console.print(table)
    by_method: dict[str, list[str]] = {}
    for r in report.rows:
        if r.measurement:
            by_method.setdefault(r.measurement.method, []).append(r.variant if r.contender != "numpy" else "numpy")
    for m, who in by_method.items():
        console.print(escape(f"timing ({', '.join(who)}): {m}"), style="dim")
    console.print("[dim]first call = compile + load + one run, timed alone and not in the median[/]")
    for n in notes:
        console.print(f"[dim]{n}[/]")
    for n in report.notes:
        console.print(escape(n))


def print_device(info: dict, console: Console | None = None) -> None:
    """``lab device``: one row per attribute, with units."""
    console = console or _console()
    if info.get("note"):
        console.print(f"[yellow]{info['note']}[/]")
    table = Table(title=info.get("name", "device"), title_justify="left")
    table.add_column("attribute")
    table.add_column("value", justify="right")
    units = {"_bytes": " B", "_khz": " kHz", "_bits": " bits", "_gbps": " GB/s", "_gflops": " GFLOP/s"}
    for key, value in info.items():
        if key in ("name", "note"):
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={_num(v, '{:.3f}') if isinstance(v, float) else v}" for k, v in value.items())
        elif isinstance(value, float):
            value = f"{value:,.1f}"
        elif isinstance(value, int):
            value = f"{value:,}"
        unit = next((u for suffix, u in units.items() if key.endswith(suffix)), "")
        table.add_row(key, f"{value}{unit}" if value is not None else "not reported")
    console.print(table)
