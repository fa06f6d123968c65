"""The public shape sweep: every kernel at shapes a user has (tiny, skinny both ways, square, huge,
odd), its best rung and its ``auto`` rung against the torch op, in one run.

    python -m lab.shape_sweep --out docs/sweep.md         # on a GPU machine

:func:`sweep` runs each (kernel, shape) through :func:`lab.core.runner.run` (so every row is checked
against the float64 reference before it is timed) and returns one :class:`SweepRow` a shape;
:func:`render` turns the rows into markdown: per kernel a table (best rung, auto and the rung it
chose, torch, and their ratios), the geometric mean of torch / auto per kernel and over the
memory-bound kernels, the worst case, and the published targets with met / MISSED.

Ratios are speed ratios, torch time / Numba time: above 1 the Numba kernel is faster. The lesson
rungs that are slow on purpose (SKIP) are left out of the sweep: they are never the best rung.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import kernels
from lab.core import device, runner
from lab.core.errors import LabError
from lab.core.registry import specs

# Each kernel's spec declares its sweep (``KernelSpec.sweep``: kernels/spec.py's Sweep): the shapes (as
# ``--size`` text: tiny, skinny both ways, square, huge, odd), the torch op it is measured against (a
# lab.core.contenders / torch_bridge.contenders label; none: Numba rows only), the lesson rungs left out
# (slow by design: uncoalesced, atomics, 5 launches, no register tiling) and whether it is memory-bound
# (the >= 0.8x / geomean >= 1.0x targets). ``SHAPES``, ``TORCH_OP``, ``SKIP`` and ``MEMORY_BOUND`` are
# views over the specs (module attributes, computed when read).
def _specs():
    return [s for s in specs() if s.sweep.shapes]


def sweep_shapes() -> dict[str, list[str]]:
    """kernel -> shapes of the public sweep (the specs' ``sweep.shapes``)."""
    return {s.name: list(s.sweep.shapes) for s in _specs()}


def torch_op(kernel: str) -> str | None:
    """The torch contender label ``kernel`` is measured against, None if none."""
    return kernels.load(kernel).sweep.against or None


def skipped(kernel: str) -> set[str]:
    """The lesson rungs of ``kernel`` the sweep leaves out."""
    return set(kernels.load(kernel).sweep.skip)


def memory_bound() -> tuple[str, ...]:
    return tuple(s.name for s in _specs() if s.sweep.memory_bound)


@dataclass
class SweepRow:
    """One (kernel, shape): median ms of each rung, auto's choice, the torch op's median ms."""

    kernel: str
    size: str
    flops: int = 0
    rungs: dict[str, float] = field(default_factory=dict)  # rung -> median ms (timed rungs only)
    auto_ms: float | None = None
    auto_rung: str = ""
    auto_note: str = ""
    torch_ms: float | None = None
    failed: list[str] = field(default_factory=list)  # "rung: reason" for FAIL rows
    error: str = ""  # the whole shape failed (e.g. too big for the device)

    @property
    def best(self) -> tuple[str, float] | None:
        """(rung, ms) of the fastest named rung (auto not counted)."""
        named = {k: v for k, v in self.rungs.items() if k != "auto"}
        return min(named.items(), key=lambda kv: kv[1]) if named else None

    @property
    def auto_ratio(self) -> float | None:
        """torch ms / auto ms (> 1: auto is faster)."""
        return self.torch_ms / self.auto_ms if self.torch_ms and self.auto_ms else None

    @property
    def best_ratio(self) -> float | None:
        b = self.best
        return self.torch_ms / b[1] if self.torch_ms and b else None


@contextlib.contextmanager
def _copy_bandwidth_once():
    """The runner measures copy bandwidth on every run (1 GiB of random input); a sweep of ~50 runs
    measures it once and reuses it."""
    original = device.measure_copy_bandwidth
    cache = {}

    def once(*args, **kwargs):
        if "v" not in cache:
            cache["v"] = original(*args, **kwargs)
        return cache["v"]

    device.measure_copy_bandwidth = once
    try:
        yield
    finally:
        device.measure_copy_bandwidth = original


def sweep(backend: str, kernels_: list[str] | None = None, shapes: dict | None = None, repeats: int | None = 20,
          warmup: int | None = 3, progress=None, on_row=None, rungs: list[str] | None = None) -> list[SweepRow]:
    """Run the sweep on ``backend`` ("gpu" or "simulator"); returns a SweepRow per (kernel, shape).

    kernels_: subset of SHAPES' kernels; shapes: kernel -> list of sizes (default: the specs'); repeats,
    warmup: timed and untimed calls a row (None: the runner's defaults, the stop rule on a GPU);
    progress(text): called before each shape (e.g. to print); on_row(rows): called after each shape
    with the rows so far (e.g. to save them, so that a run cut short keeps its finished shapes);
    rungs: the rungs to run (e.g. ``["auto"]``; default: every rung but SKIP's). Named rungs run at
    the runner's default threads (256 on a GPU); auto picks its own. A shape that raises LabError
    becomes a row with ``error`` set; a rung that fails its check is listed in ``failed`` and not timed.
    """
    shapes = shapes or sweep_shapes()
    rows = []
    with _copy_bandwidth_once():
        for name in kernels_ or list(shapes):
            spec = kernels.load(name)
            variants = rungs or [v for v in spec.variants if v not in spec.sweep.skip]
            op = spec.sweep.against or None
            for size in shapes[name]:
                if progress:
                    progress(f"{name} {size}")
                row = SweepRow(name, size)
                try:  # rungs meant for other shapes (Variant.suits: matmul's vector rung) sit this one out
                    dims = spec.parse_size(size)
                    here = [v for v in variants if not spec.variants[v].suits or spec.variants[v].suits(dims)]
                except ValueError:
                    here = variants
                opts = runner.Options(kernel=name, size=size, variants=here,
                                      contenders=["numba", "torch"] if op else ["numba"],
                                      library_ops=[op] if op else None, repeats=repeats, warmup=warmup, seed=0)
                try:
                    rep = runner.run(opts, backend)
                except LabError as e:
                    row.error = str(e)
                else:
                    row.flops = rep.flops
                    auto = rep.launches.get("auto", {})
                    row.auto_rung, row.auto_note = auto.get("rung", ""), auto.get("note", "")
                    for r in rep.rows:
                        if r.status == "FAIL":
                            row.failed.append(f"{r.contender} {r.variant}: {r.reason}")
                        if not r.measurement:
                            continue
                        if r.contender == "numba":
                            row.rungs[r.variant] = r.measurement.median_ms
                        elif r.variant == op:
                            row.torch_ms = r.measurement.median_ms
                    row.auto_ms = row.rungs.get("auto")
                rows.append(row)
                if on_row:
                    on_row(rows)
    return rows


def geomean(values) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _f(x, fmt="{:.4f}"):
    return "-" if x is None else fmt.format(x)


def targets(rows: list[SweepRow]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for the published targets of the memory-bound kernels and each kernel's own
    (its spec's ``sweep.floors``); a target nothing was measured for is left out."""
    out = []
    bound = memory_bound()
    mem = [r for r in rows if r.kernel in bound and r.auto_ratio]
    if mem:
        worst = min(mem, key=lambda r: r.auto_ratio)
        out.append(("no memory-bound shape below 0.8x torch (auto)",
                    f"worst {worst.kernel} {worst.size}: {worst.auto_ratio:.2f}x; "
                    f"{sum(r.auto_ratio < 0.8 for r in mem)} of {len(mem)} below", worst.auto_ratio >= 0.8))
        g = geomean(r.auto_ratio for r in mem)
        out.append((f"geometric mean >= 1.0x torch over {', '.join(bound)} (auto)", f"{g:.2f}x", g >= 1.0))
    for s in _specs():
        for floor in s.sweep.floors:
            hit = [r for r in rows if r.kernel == s.name and r.auto_ratio
                   and (r.size == floor.shape if floor.shape else r.flops >= floor.min_flops)]
            if hit:
                worst = min(hit, key=lambda r: r.auto_ratio)
                measured = f"{worst.auto_ratio:.2f}x" if floor.shape else f"worst {worst.size}: {worst.auto_ratio:.2f}x"
                out.append((floor.text, measured, worst.auto_ratio >= floor.bound))
    return out


def render(rows: list[SweepRow], title: str = "Shape sweep") -> str:
    """Markdown: a table per kernel, geometric means, the worst case and the targets."""
    lines = [f"## {title}", "",
             "Median ms of the fastest named rung (lesson rungs that are slow on purpose left out), of `auto` "
             "(and the rung and launch it chose), and of the torch op; ratios are torch ms / Numba ms "
             "(above 1: Numba faster).", ""]
    for kernel in dict.fromkeys(r.kernel for r in rows):
        krows = [r for r in rows if r.kernel == kernel]
        lines += [f"### {kernel} (vs {torch_op(kernel) or 'no torch op'})", "",
                  "| shape | best rung | ms | auto ms | auto chose | torch ms | best / torch | auto / torch |",
                  "|---|---|---:|---:|---|---:|---:|---:|"]
        for r in krows:
            if r.error:
                lines.append(f"| {r.size} | error: {r.error} | | | | | | |")
                continue
            b = r.best
            chose = (r.auto_note.removeprefix("auto: ") or "-").replace("|", "/")
            lines.append(f"| {r.size} | {b[0] if b else '-'} | {_f(b[1] if b else None)} | {_f(r.auto_ms)} | "
                         f"{chose} | {_f(r.torch_ms)} | {_f(r.best_ratio, '{:.2f}x')} | "
                         f"{_f(r.auto_ratio, '{:.2f}x')} |")
            for fail in r.failed:
                lines.append(f"| {r.size} | FAIL {fail} | | | | | | |")
        ga, gb = geomean(r.auto_ratio for r in krows), geomean(r.best_ratio for r in krows)
        worst = min((r for r in krows if r.auto_ratio), key=lambda r: r.auto_ratio, default=None)
        lines += ["", f"Geometric mean, torch / Numba: auto {_f(ga, '{:.2f}x')}, best rung {_f(gb, '{:.2f}x')}; "
                  f"worst auto: {worst.size + ' ' + _f(worst.auto_ratio, '{:.2f}x') if worst else '-'}.", ""]
    bound = memory_bound()
    mem = [r for r in rows if r.kernel in bound]
    lines += [f"Overall ({', '.join(bound)}): geometric mean auto "
              f"{_f(geomean(r.auto_ratio for r in mem), '{:.2f}x')}, best rung "
              f"{_f(geomean(r.best_ratio for r in mem), '{:.2f}x')}; all kernels: auto "
              f"{_f(geomean(r.auto_ratio for r in rows), '{:.2f}x')}.", ""]
    t = targets(rows)
    if t:
        lines += ["| target | measured | verdict |", "|---|---|---|"]
        lines += [f"| {name} | {measured} | {'met' if met else 'MISSED'} |" for name, measured, met in t]
        lines.append("")
    return "\n".join(lines)
