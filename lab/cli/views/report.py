"""Present a run: a rich table for people, one JSON object for programs. The only module that prints
run results (the CLI prints errors)."""
from __future__ import annotations

import math
import time
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.padding import Padding
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

import kernels
from lab.cli.views.table import CHECK_STYLE, Col, console, explain, fit, print_tables, wide_adds
from lab.core.registry import spec
from lab.core.runner import Report
from lab.core.timing import SIMULATOR_CLOCK
from lab.cli import interrupt
from lab.core.clocks import describe
from lab.core.compilers import run_header
from lab.core.device import measured_when


def _num(x, fmt="{:.3f}"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def si(value: float, unit: str) -> str:
    """``value`` with a decimal prefix chosen by magnitude: si(15872, "B") == "15.9 KB",
    si(7680, "FLOP") == "7.68 KFLOP", si(3e9, "FLOP") == "3 GFLOP"."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}" if isinstance(value, float) and value != int(value) else f"{int(value)} {unit}"


def sig(x: float) -> str:
    """A positive number with ~3 significant digits and no exponent: 0.0123, 0.456, 4.56, 45.6, 4,560."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, min(6, 2 - math.floor(math.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


def count(n: int) -> str:
    """A thread count: exact up to 9,999,999, then 3 significant digits (67.1M)."""
    if n < 10_000_000:
        return f"{n:,}"
    return si(n, "").strip().replace(" ", "").replace("K", "k")


def duration(ms: float | None) -> str | None:
    """A wall-clock time with its unit: 1.9 µs, 0.45 ms, 27 ms, 4.6 s, 2.5 min, 3.1 h."""
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return None
    s = ms / 1e3
    if s >= 5400:
        return f"{s / 3600:.1f} h"
    if s >= 90:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    if ms >= 1:
        return f"{ms:.2g} ms" if ms < 10 else f"{ms:.0f} ms"
    if ms >= 0.1:
        return f"{ms:.2f} ms"
    return f"{ms * 1e3:.2g} µs"


def _size(size) -> str:
    return "x".join(map(str, size))


# --- the header -----------------------------------------------------------------------------------
def header_lines(report: Report) -> list[str]:
    """Printed before anything runs: what, the seed, the backend or device, the work a call."""
    d = report.device
    lines = [f"[bold]{escape(report.kernel)}[/]: {escape(report.summary)}",
             f"size {_size(report.size)} · {report.dtype} · --threads {report.threads} · seed {report.seed}"]
    if report.backend == "simulator":
        lines.append("[yellow]CUDA simulator: correctness only, timings are not meaningful[/]")
    else:
        bw = report.copy_bandwidth or {}
        peak = d.get("peak_bandwidth_gbps")
        lines.append(f"{escape(str(d['name']))} · compute capability {d['compute_capability']} · "
                     f"{d.get('sm_count')} SMs · copy bandwidth {_num(bw.get('gbps'), '{:,.0f}')} GB/s "
                     + escape(measured_when(bw)) + (f" (theoretical peak {peak:,.0f})" if peak else ""))
        if report.clocks:  # NVML: SM clock, its limit and throttle reasons, before (and after) the run
            lines.append(escape(describe(report.clocks.get("before", {}), report.clocks.get("after"))))
    if report.compiler:
        lines.append(escape(run_header(report.compiler)))
    if getattr(report, "arrays", "numba") != "numba":  # lab run --arrays torch|cupy
        lines.append(escape(f"Numba rows' device arrays: {report.arrays} (zero-copy views at each launch)"))
    precision = getattr(report, "precision", "")
    may_run = (spec(report.kernel).precision_auto.get(precision)
               if precision and report.dtype == "float32" and report.kernel in kernels.NAMES else None)
    if may_run:  # a kernel whose auto honours --precision (its spec's precision_auto)
        lines.append(escape(f"precision {report.precision}: auto may run {may_run} (--precision)"))
    lines.append(f"minimum traffic {si(report.bytes_moved, 'B')}, {si(report.flops, 'FLOP')} a call")
    lines.append(escape(f"timed calls: {report.stop_rule}"))
    lines.append(f"NumPy: {escape(report.numpy_threads)}")
    if report.estimate_s is not None and report.estimate_s > 30:
        est = duration(report.estimate_s * 1e3)
        hint = f"; for a quick look try {report.quick_options}" if report.quick_options else ""
        lines.append(f"[yellow]the simulator will take roughly {est} for this run{hint}[/]")
    return lines


# --- the tables -----------------------------------------------------------------------------------
# the column machinery is lab.cli.views.table's, shared by every command's tables


def _noise(r) -> float | None:
    """IQR / median of the timed calls (None in the simulator, whose wall clock is no GPU time)."""
    m = r.measurement
    if not m or m.method == SIMULATOR_CLOCK or not m.samples_ms or m.median_ms <= 0:
        return None
    return m.noise


def _noise_text(r, unit: str = "") -> str:
    """A row's noise in percent, with ``!`` when it is above 10%: "4.2", "42 !" (unit "%": "42% !")."""
    x = r.measurement.noise
    if x is None or not math.isfinite(x):
        return "? !"
    return (f"{100 * x:.0f}" if x >= 0.1 else f"{100 * x:.1f}") + unit + (" !" if r.measurement.noisy else "")


def _noise_cell(r) -> str | None:
    return None if _noise(r) is None else _noise_text(r)


def _noise_style(text: str) -> str | None:
    return "bold red" if text.endswith("!") else None


def result_columns(report: Report) -> list[Col]:
    """The results table's columns, most important first."""
    med = lambda r: r.measurement.median_ms if r.measurement else None  # noqa: E731
    check = lambda r: {"ok": "ok", "FAIL": "FAIL", "skipped": "skipped"}[r.status]  # noqa: E731
    cols = [Col("contender", lambda r: r.contender, 100, left=True),
            Col("variant", lambda r: r.variant, 100, left=True, wrap=True),
            Col("check", check, 100, left=True, style=CHECK_STYLE.get)]
    if report.backend == "simulator":
        timed = any(r.measurement for r in report.rows)  # none unless --repeats: then the first call is the time
        return cols + counter_columns(report) + [
            Col("wall time", lambda r: duration(med(r)), 90,
                explain="wall time: median a call, Numba rows simulated (not GPU times), NumPy on this CPU"),
            Col("1st call", lambda r: duration(r.first_call_ms), 40 if timed else 90,
                explain="1st call: compile + load + one run" + ("" if timed else ", not a GPU time")),
            Col("max err", lambda r: _opt(r.max_abs_err, lambda x: f"{x:.1e}"), 60,
                explain="max err: against float64"),
            Col("GB/s", lambda r: _opt(r.gbps, sig), 10),
            Col("×NumPy", lambda r: _opt(r.speedup_vs_numpy, lambda x: f"{x:.2f}"), 10),
            Col("±%", _noise_cell, 12, explain="±%: IQR / median of the timed calls of the CPU rows (! above 10%)",
                style=_noise_style),
        ]
    failed = any(r.status == "FAIL" for r in report.rows)  # then the error matters more than speed
    # on a GPU: the roofline-relevant rate first (bytes for memory-bound kernels, FLOPs for matmul)
    peak, copy = report.device.get("peak_fp32_gflops"), (report.copy_bandwidth or {}).get("gbps")
    balance = peak / copy if peak and copy else 10.0  # FLOP per byte where a kernel turns compute-bound
    compute_bound = report.bytes_moved and report.flops / report.bytes_moved > balance
    bytes_cols = [Col("GB/s", lambda r: _opt(r.gbps, sig), 80 if not compute_bound else 25,
                      explain="GB/s: minimum traffic / median time"),
                  Col("%BW", lambda r: _opt(r.pct_copy, lambda x: f"{x:.0f}"), 75 if not compute_bound else 20,
                      explain="%BW: of the measured copy bandwidth")]
    flop_cols = [Col("GFLOP/s", lambda r: _opt(r.gflops, sig), 80 if compute_bound else 25,
                     explain="GFLOP/s: FLOPs a call / median time"),
                 Col("%FP32", lambda r: _opt(r.pct_peak_flops, lambda x: f"{x:.0f}"), 75 if compute_bound else 20,
                     explain="%FP32: of the FP32 peak")]
    return cols + [
        Col("ms", lambda r: _opt(med(r), sig), 90, explain="ms: median time a call"),
        Col("±%", _noise_cell, 72, explain="±%: IQR / median of the timed calls (! above 10%)",
            style=_noise_style),
        Col("calls", lambda r: str(r.measurement.n) if r.measurement else None, 15,
            explain="calls: timed calls the median is of"),
        *(flop_cols + bytes_cols if compute_bound else bytes_cols + flop_cols),
        Col("×NumPy", lambda r: _opt(r.speedup_vs_numpy, lambda x: f"{x:,.2f}" if x < 100 else f"{x:,.0f}"), 70,
            explain="×NumPy: speedup over NumPy on the CPU"),
        Col("max err", lambda r: _opt(r.max_abs_err, lambda x: f"{x:.1e}"), 95 if failed else 45,
            explain="max err: against float64"),
        Col("1st ms", lambda r: _opt(r.first_call_ms, sig), 30,
            explain="1st ms: first call (compile + load + one run), timed alone and not in the median"),
    ] + counter_columns(report)


def counter_columns(report: Report) -> list[Col]:
    """lab run --counters: DRAM bytes / the minimum, and sectors per global load request (none without it)."""
    if report.counters is None:
        return []
    sim = report.counters.get("tool") == "simulator"
    return [
        Col("DRAM×", lambda r: _opt(r.dram_ratio, lambda x: f"{x:.2f}"), 85,
            explain=f"DRAM×: {'bytes touched' if sim else 'DRAM bytes read + written'} / the minimum traffic"),
        Col("sec/req", lambda r: _opt(r.sectors_per_request, lambda x: f"{x:.1f}"), 84,
            explain="sec/req: 32-byte sectors a warp's global load fetched (4: 32 floats, coalesced)"),
    ]


def _opt(x, fmt):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else fmt(x)


def launch_columns() -> list[Col]:
    """The launch table: grid and block as AxB, thread counts, and per-thread resources."""
    dims = lambda key: lambda v: "x".join(map(str, v[1][key]))  # noqa: E731
    get = lambda key, fmt: lambda v: _opt(v[1].get(key), fmt)  # noqa: E731
    return [
        Col("variant", lambda v: v[0], 100, left=True, wrap=True),
        Col("grid", dims("grid"), 100, explain="grid: blocks · block: threads a block"),
        Col("block", dims("block"), 100),
        Col("threads", lambda v: count(v[1]["threads_total"]), 90, explain="idle = threads launched - needed (threads with work)"),
        Col("needed", lambda v: count(v[1]["threads_needed"]), 40, ),
        Col("idle", lambda v: count(v[1]["threads_idle"]), 80, ),
        Col("regs", get("registers", str), 60, explain="regs: registers a thread"),
        Col("smem", get("shared_bytes", lambda b: si(b, "B")), 55, explain="smem: shared memory a block"),
        Col("local", get("local_bytes", lambda b: si(b, "B")), 35, explain="local: local memory a thread"),
        Col("occ", get("occupancy", lambda x: f"{100 * x:.0f}%"), 58, explain="occ: occupancy, resident warps / max"),
    ]


def _skipped(report: Report) -> list[str]:
    """One line per reason for skipped rows: rungs that need whole warps, CuPy and torch without a GPU."""
    by_reason: dict[str, list[str]] = {}
    for r in report.rows:
        if r.status == "skipped":
            name = r.variant if r.contender == "numba" else r.contender
            reason = r.reason.removeprefix(f"{name} ")
            by_reason.setdefault(reason, []).append(name)
    return [f"{', '.join(names)}: skipped, {reason}" for reason, names in by_reason.items()]


def tables(report: Report, console: Console, wide: bool = False, final: bool = True):
    """(renderables, lines under them) of the launch and results tables for the rows so far."""
    out, under = [], []
    if report.launches:
        table, shown, dropped = fit(launch_columns(), list(report.launches.items()), console, wide,
                                       "launch configuration (Numba)")
        out.append(table)
        if final:
            under += [f"[dim]{escape(explain(shown))}[/]"]
            under += [f"[dim]{escape(v)}: {escape(cfg['note'].removeprefix(f'{v}: '))}[/]"
                      for v, cfg in report.launches.items() if cfg.get("note")]
    rows = [r for r in report.rows if r.contender in ("numba", "numpy") or r.status != "skipped"]
    if rows:
        table, shown, dropped = fit(result_columns(report), rows, console, wide, "results")
        out.append(table)
        if final:
            under.append(f"[dim]{escape(explain(shown))}[/]")
            under += wide_adds(dropped)
    return out, under


def notes_lines(report: Report) -> list[str]:
    """The explanations printed under the tables."""
    lines = []
    by_method: dict[str, list[str]] = {}
    for r in report.rows:
        if r.measurement:
            by_method.setdefault(r.measurement.method, []).append(r.variant if r.contender != "numpy" else "numpy")
    for m, who in by_method.items():
        if m == SIMULATOR_CLOCK:
            continue  # said under the table ("wall time")
        lines.append(f"[dim]timing ({escape(', '.join(who))}): {escape(m)}[/]")
    noisy = [f"{r.contender} {r.variant} ({_noise_text(r, '%')})" for r in report.rows
             if r.measurement and r.measurement.noisy]
    if noisy:
        lines.append(f"[yellow]noise ! = IQR/median above 10%: {escape(', '.join(noisy))}; rerun or read the "
                     f"median with care[/]")
    for r in report.rows:
        if r.reason and r.status != "skipped" and r.reason not in report.warnings:  # a crash's line: once
            lines.append(f"[dim]{escape(f'{r.contender} {r.variant}: {r.reason}')}[/]")
    lines += [f"[dim]{escape(line)}[/]" for line in _skipped(report)]
    for w in report.warnings:
        lines.append(f"[yellow]warning:[/] {escape(w)}")
    lines += [escape(n) for n in report.notes]
    if report.counters:  # --counters: where the two columns came from
        engine = report.counters.get("engine")
        if engine and report.counters.get("tool") != "simulator":
            lines.append(f"[dim]DRAM×, sec/req: {escape(engine)}[/]")
        lines += [f"[dim]{escape(n)}[/]" for n in report.counters.get("notes") or []]
    return lines


def print_table(report: Report, out: Console | None = None, wide: bool = False) -> None:
    """Print a finished run: header, tables, notes (what ``lab run`` shows when no Live display ran)."""
    out = out or console()
    print_header(report, out)
    print_body(report, out, wide)


def print_header(report: Report, out: Console) -> None:
    for line in header_lines(report):
        out.print(line)


def print_body(report: Report, out: Console, wide: bool = False) -> None:
    renderables, under = tables(report, out, wide)
    print_tables(out, [*renderables, *under, *notes_lines(report)], wide)


class LiveProgress:
    """The callback for ``runner.run(progress=...)``: prints the header when the run starts; in a
    terminal a rich Live display shows the tables growing row by row under a spinner line saying what
    runs now (compile + check, then time); elsewhere (piped) each stage is one line on stderr and the
    tables print when the run is done. ``json=True`` prints only the progress (on stderr)."""

    def __init__(self, out: Console | None = None, wide: bool = False, json: bool = False):
        self.out = out or console()
        self.err = Console(stderr=True, highlight=False)
        self.wide, self.json = wide, json
        self.live = None
        self.report = None
        self.status = ""
        self.started = time.perf_counter()
        self.spinner = _Status(self)

    def __call__(self, event: str, report: Report, **info) -> None:
        interrupt.check()  # a Ctrl-C that Python swallowed stops the run here
        self.report = report
        getattr(self, f"on_{event}")(report, **info)

    def on_start(self, report: Report) -> None:
        if self.json:
            if report.estimate_s is not None and report.estimate_s > 30:
                self.err.print(header_lines(report)[-1])
        else:
            print_header(report, self.out)
        term = self.err if self.json else self.out
        if term.is_terminal:
            self.live = Live(self._render(report), console=term, refresh_per_second=8, transient=self.json,
                             vertical_overflow="visible")  # never "..." a table taller than the terminal
            self.live.start()

    def on_stage(self, report: Report, contender: str, variant: str, stage: str, calls: int | None = None) -> None:
        what = f"{stage} ({calls} call{'s' if calls != 1 else ''})" if calls else stage
        self.status = f"{contender} {variant}: {what}"
        self.started = time.perf_counter()
        if self.live:
            self.live.update(self._render(report), refresh=True)
        elif not self.json:
            self.err.print(f"lab: {escape(self.status)} …", highlight=False, soft_wrap=True)

    def on_row(self, report: Report, row) -> None:
        if self.live:
            self.live.update(self._render(report), refresh=True)

    def on_done(self, report: Report) -> None:
        self.status = ""
        if self.live:
            if self.json:
                self.live.stop()
                return
            renderables, _ = tables(report, self.out, self.wide)
            self.live.update(Group(*renderables) if not self.wide else Group())
            self.live.stop()
            self._tail(report, renderables)
        elif not self.json:
            print_body(report, self.out, self.wide)

    def close(self) -> None:
        """Stop the live display if the run ended early (an error or Ctrl-C)."""
        if self.live and self.live.is_started:
            self.live.stop()

    def interrupted(self) -> int:
        """After Ctrl-C: the rows that finished stay on the screen (a terminal's live tables already
        show them; piped, they are printed now, as the tables of a shorter run). Returns their count."""
        self.close()
        rows = list(self.report.rows) if self.report is not None else []
        if rows and not self.live and not self.json:
            print_body(self.report, self.out, self.wide)
        return len(rows)

    def _tail(self, report, renderables):
        if self.wide:
            print_body(report, self.out, True)
            return
        _, under = tables(report, self.out, self.wide)
        for line in under + notes_lines(report):
            self.out.print(line)

    def _render(self, report: Report):
        renderables, _ = tables(report, self.err if self.json else self.out, self.wide, final=False)
        if self.json:
            renderables = []
        if self.status:
            renderables.append(self.spinner)
        return Group(*renderables)


class _Status:
    """The spinner line; its text (what runs, for how long) is recomputed at every refresh."""

    def __init__(self, progress: LiveProgress):
        self.progress, self.spinner = progress, Spinner("dots", style="cyan")

    def __rich_console__(self, console, options):
        p = self.progress
        if not p.status:  # the run is done
            return
        self.spinner.update(text=Text(f"{p.status} ({time.perf_counter() - p.started:.0f} s)", style="cyan"))
        yield self.spinner


def print_device(info: dict, console: Console | None = None) -> None:
    """``lab device``: one row per attribute, with units."""
    console = console or Console(highlight=False)
    if info.get("note"):
        console.print(f"[yellow]{escape(info['note'])}[/]")
    table = Table(title=escape(str(info.get("name", "device"))), title_justify="left")
    table.add_column("attribute")
    table.add_column("value", justify="right")
    units = {"_bytes": " B", "_khz": " kHz", "_bits": " bits", "_gbps": " GB/s", "_gflops": " GFLOP/s"}
    for key, value in info.items():
        if key in ("name", "note", "schema_version"):
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={_num(v, '{:.3f}') if isinstance(v, float) else v}" for k, v in value.items())
        elif isinstance(value, float):
            value = f"{value:,.1f}"
        elif isinstance(value, int):
            value = f"{value:,}"
        unit = next((u for suffix, u in units.items() if key.endswith(suffix)), "")
        table.add_row(escape(key), escape(f"{value}{unit}") if value is not None else "not reported")
    console.print(table)


def print_list(kernels_info: list[dict], out: Console | None = None) -> None:
    """``lab list``: per kernel its summary, sizes, rungs (one line each) and contenders."""
    out = out or console()
    indent = lambda markup, n=2: Padding(Text.from_markup(markup), (0, 0, 0, n), expand=False)  # noqa: E731
    for k in kernels_info:
        gpu, sim = ("x".join(map(str, k["default_size"][b])) for b in ("gpu", "simulator"))
        out.print(f"[bold]{k['name']}[/]: {escape(k['summary'])}")
        out.print(indent(f"--size {escape(k['size_help'])}; default {gpu} on a GPU, {sim} in the simulator; "
                         f"--dtype {', '.join(k['dtypes'])}"))
        out.print(indent("rungs (--variant):"))
        for i, r in enumerate(k["rungs"], 1):
            limits = [x for x in ("whole warps" if r["needs_whole_warps"] else "",
                                  f"<= {r['max_threads']} threads" if r["max_threads"] else "") if x]
            out.print(indent(f"{i}. [cyan]{r['name']}[/]: {escape(r['summary'])}"
                             + (f" [dim]({', '.join(limits)})[/]" if limits else ""), 4))
        out.print(indent("contenders (--contenders):"))
        for c, labels in k["contenders"].items():
            if c == "numba":
                continue
            why = (k.get("unavailable") or {}).get(c)
            if not labels:  # the kernel has no op of this library: why
                out.print(indent(f"{c}: [dim]{escape(why or 'none')}[/]", 4))
            else:  # the same labels whether the library is installed or not; its state after the name
                state = f" [dim]({escape(why)})[/]" if why else ""
                out.print(indent(f"{c}{state}: {escape(', '.join(labels))}", 4))
        out.print()


def print_compare(doc: dict, console: Console | None = None, wide: bool = False) -> None:
    """``lab run KERNEL --compiler both``: one row per Numba rung and compiler (first call, median,
    registers, spills), then the other contenders once. ``doc`` is lab.bench.compilers.run_both's."""
    out = console or globals()["console"]()
    sizes = "x".join(map(str, doc["size"]))
    out.print(f"[bold]{escape(doc['kernel'])}[/]: same kernels, two compilers")
    out.print(f"size {sizes} · {doc['dtype']} · --threads {doc['threads_per_block']} · seed {doc['seed']} · "
              f"backend {doc['backend']}")
    if doc["backend"] == "simulator":
        out.print("[yellow]CUDA simulator: correctness only, timings are not meaningful[/]")
    for name, st in doc["compilers"].items():
        version = f" {st['version']}" if st.get("version") else ""
        out.print(escape(f"{name}{version}: " + ("usable" if st["usable"] else st["why"])), style="dim")
    get = lambda key, fmt: lambda r: _opt(r.get(key), fmt)  # noqa: E731
    ms = lambda key: get(key, duration if doc["backend"] == "simulator" else sig)  # noqa: E731
    check = lambda r: r["status"]  # noqa: E731
    cols = [Col("variant", lambda r: r["variant"], 100, left=True, wrap=True),
            Col("compiler", lambda r: r["compiler"], 100, left=True),
            Col("check", check, 100, left=True, style=CHECK_STYLE.get),
            Col("1st call", ms("first_call_ms"), 60,
                explain="1st call: compile + load + one run (each compiler in its own process)"),
            Col("median", ms("median_ms"), 95, explain="median: a call"
                + (" (simulated: not a GPU time)" if doc["backend"] == "simulator" else ", ms")),
            Col("IQR", ms("iqr_ms"), 40),
            Col("GB/s", get("gbps", sig), 70),
            Col("GFLOP/s", get("gflops", sig), 50),
            Col("regs", get("registers", str), 55, explain="regs: the most of the rung's kernels, a thread"),
            Col("spill B", get("spill_bytes", str), 45, explain="spill B: ptxas spill stores + loads a thread"),
            Col("max err", get("max_abs_err", lambda x: f"{x:.1e}"), 65, explain="max err: against float64")]
    rows = [r for r in doc["results"] if r["contender"] == "numba"]
    by_reason: dict[tuple, list[str]] = {}  # one line per (compiler, reason): "a, b (numba-cuda-mlir): why"
    for r in rows:
        if r.get("reason"):
            by_reason.setdefault((r["compiler"], r["reason"]), []).append(r["variant"])
    notes = [f"[dim]{escape(', '.join(names))} ({escape(compiler)}): {escape(reason)}[/]"
             for (compiler, reason), names in by_reason.items()]
    table, shown, dropped = fit(cols, rows, out, wide, "compilers (Numba rungs)")
    renderables = [table]
    others = [r for r in doc["results"] if r["contender"] != "numba"]
    if others:
        other_cols = [Col("contender", lambda r: r["contender"], 100, left=True),
                      Col("variant", lambda r: r["variant"], 100, left=True, wrap=True),
                      Col("check", check, 100, left=True, style=CHECK_STYLE.get),
                      Col("median", ms("median_ms"), 95), Col("GB/s", get("gbps", sig), 70)]
        other, _, dropped_other = fit(other_cols, others, out, wide, "other contenders (run once)")
        renderables.append(other)
        dropped += [d for d in dropped_other if d not in dropped]
        notes += [f"[dim]{escape(r['contender'])}: {escape(r['reason'])}[/]" for r in others if r.get("reason")]
    under = [f"[dim]{escape(explain(shown))}[/]", *notes, *wide_adds(dropped)]
    print_tables(out, [*renderables, *under], wide)
