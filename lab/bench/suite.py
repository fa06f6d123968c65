"""Benchmarks (not tests): every kernel x variant x contender at the standard sizes, as markdown.

    lab bench --out docs/benchmarks.md          # on a GPU machine (python -m lab.bench is an alias)
    lab bench --quick --json > bench.json       # small sizes; one JSON object (lab compare reads it)

Data flows one way: :func:`run_bench` runs each configuration through ``lab.core.runner.run`` and keeps
the ``--json`` dict of each run (``lab.core.runner.Report.to_dict``: the same objects ``lab run --json``
prints), plus the device, date, versions and the compiler's resource report, in one JSON-able
document. :func:`render_markdown` turns that document into markdown, one section builder at a
time (:data:`SECTIONS`): device, date and versions; one table per kernel and size (median ms,
GB/s, GFLOP/s, % of copy bandwidth, % of FP32 peak, first call, max abs error); the targets with
met/MISSED; the resource report (registers, shared and local memory per thread). Add a section
by appending a builder ``(doc) -> list[str]`` to ``SECTIONS``. Nothing here prints.
"""
from __future__ import annotations

import datetime
import importlib.metadata as md
import platform
import sys
from collections.abc import Callable
import json
from dataclasses import asdict

from lab.core.runner import Steps, quiet, Options
import kernels
from lab.bench import shapes as shape_sweep
from lab.bench.compare import check_report
from lab.bench.shapes import SweepRow, render
from lab.core import device, runner, simulator as core_simulator
from lab.core.compilers import dispatchers, kernel_attr
from lab.core.errors import LabError, SCHEMA_VERSION
from lab.core.registry import specs
from lab.core.simcost import PER_FLOP_MS

# --quick (and the simulator): each kernel's small simulator size, one simulated warp a block.
QUICK_THREADS = 32


def standard() -> dict[str, list[tuple[str, int]]]:
    """kernel -> [(size, threads)]: the standard GPU sizes of each kernel's spec (``bench_sizes``)."""
    return {s.name: list(s.bench_sizes) for s in specs()}


def targets() -> list[tuple]:
    """(kernel, size as run, library row to beat (None: an absolute time), ratio or ms bound, kind):
    each kernel's spec's ``targets``, in kernels.NAMES order."""
    return [(s.name, list(t.size), t.against, t.bound, t.kind) for s in specs() for t in s.targets]


def versions() -> str:
    names = ["numba", "numba-cuda", "numba_cuda_mlir", "numpy", "llvmlite", "torch", "cupy-cuda13x", "cupy-cuda12x",
             "cuda-core", "rich", "click"]
    found = []
    for n in names:
        try:
            found.append(f"{n} {md.version(n)}")
        except md.PackageNotFoundError:
            continue
    return f"python {platform.python_version()}; " + ", ".join(found)


# resource report column: the compiled kernel's attribute (lab.core.compilers.kernel_attr)
RESOURCE_ATTRS = {"registers_per_thread": "regs_per_thread", "shared_bytes_per_block": "shared_mem_per_block",
                  "local_bytes_per_thread": "local_mem_per_thread", "max_threads_per_block": "max_threads_per_block"}


def resource_report() -> list[dict]:
    """Registers / shared / local memory of every compiled Numba kernel (the compiler's resource
    report; CUDA C++ Programming Guide, "Occupancy Calculator"). One dict a compiled overload."""
    compiled = {id(d) for d in dispatchers()}
    rows = []
    for name in kernels.NAMES:
        mod = sys.modules.get(f"kernels.{name}")
        if mod is None:
            continue
        for attr, d in sorted(vars(mod).items()):
            if id(d) not in compiled:
                continue
            for sig in d.overloads:
                row = {"kernel": f"{name}.{attr}"}
                try:
                    row.update({key: kernel_attr(d, sig, a) for key, a in RESOURCE_ATTRS.items()})
                except Exception as e:  # the simulator (and device functions) have no launch resources
                    row["error"] = f"n/a ({type(e).__name__})"
                rows.append(row)
    return rows


def load(path: str) -> dict:
    """A saved ``lab bench --json`` document; LabError (one line) when the file is not one."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise LabError(f"{path}: not a `lab bench --json` document ({type(e).__name__}: {str(e).splitlines()[0][:80]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("reports"), list):
        raise LabError(f"{path}: not a `lab bench --json` document (no 'reports' list)")
    for d in [doc, *(r for r in doc["reports"] if isinstance(r, dict))]:
        d.setdefault("schema_version", SCHEMA_VERSION)  # saved before versioning: version 1's keys
    for rep in doc["reports"]:
        check_report(rep, path)
    return doc


def configurations(kernel_names, quick: bool) -> list[tuple[str, str | None, int]]:
    """(kernel, --size or None for the simulator default, --threads) for each run of the bench."""
    out = []
    for k in kernel_names:
        out += [(k, None, QUICK_THREADS)] if quick else [(k, s, t) for s, t in kernels.load(k).bench_sizes]
    return out


def run_bench(kernel_names, backend: str, repeats: int | None = None, quick: bool = False,
              contenders: list[str] | None = None, seed: int | None = None, progress: Steps = quiet,
              shapes: bool = False) -> dict:
    """Run every configuration; return the bench document (JSON-able dict).

    Keys: schema_version, date, backend, device, copy_bandwidth, versions, repeats, quick, reports (a list of
    ``lab.core.runner.Report.to_dict`` dicts), errors (configurations that raised LabError), resources.
    ``quick`` (always in the simulator) uses each kernel's small simulator size. ``shapes`` (a GPU
    only) adds the public shape sweep (:mod:`lab.bench.shapes`) under ``shape_sweep``: one dict a
    (kernel, shape), the fields of ``SweepRow``.
    """
    simulator = backend == "simulator"
    quick = quick or simulator
    configs = configurations(kernel_names, quick)
    doc = {"schema_version": SCHEMA_VERSION, "date": datetime.date.today().isoformat(), "backend": backend,
           "device": device.describe(simulator), "copy_bandwidth": None if simulator else device.measure_copy_bandwidth(),
           "versions": versions(), "repeats": repeats, "quick": quick, "reports": [], "errors": []}
    for i, (kernel, size, threads) in enumerate(configs):
        progress(i, len(configs), f"{kernel} {size or 'default size'} --threads {threads}")
        try:
            rep = runner.run(Options(kernel=kernel, size=size, threads=threads, repeats=repeats, seed=seed,
                              contenders=contenders), backend)
        except LabError as e:
            doc["errors"].append({"kernel": kernel, "size": size, "threads": threads, "error": str(e)})
            continue
        doc["reports"].append(rep.to_dict())
    if shapes and not simulator:
        total = sum(len(v) for v in shape_sweep.sweep_shapes().values())
        done = iter(range(total))
        rows = shape_sweep.sweep(backend, progress=lambda text: progress(next(done, total), total, f"shape sweep: {text}"))
        doc["shape_sweep"] = [asdict(r) for r in rows]
    progress(len(configs), len(configs), "done")
    doc["resources"] = resource_report()
    return doc


# --- markdown: one builder per section, each (doc) -> lines ------------------------------------------
def _f(x, fmt):
    return "-" if x is None else fmt.format(x)


def _size(size) -> str:
    return "x".join(map(str, size))


def header_section(doc: dict) -> list[str]:
    dev, copy = doc["device"], doc.get("copy_bandwidth") or {}
    line = f"- device: {dev['name']} (compute capability {dev['compute_capability']}"
    line += f", {dev['sm_count']} SMs)" if dev.get("sm_count") else ")"
    if copy:
        line += (f", measured copy bandwidth {copy['gbps']:.0f} GB/s, theoretical {dev.get('peak_bandwidth_gbps', 0):.0f}"
                 f" GB/s, FP32 peak {dev.get('peak_fp32_gflops', 0) / 1e3:.1f} TFLOP/s")
    reps = doc["reports"]
    methods = sorted({r["timing"] for rep in reps for r in rep["results"] if r.get("timing")})
    rule = reps[0].get("stop_rule") if reps else None
    timed = ("each row says how it was timed (\"timed by\": CUDA events with the calls queued behind a blocked "
             "GPU, or with host gaps included; perf_counter for the CPU) and of how many calls its median is "
             "(\"median of\"); noise = IQR / median, ! above 10%" + (f"; stop rule: {rule}" if rule else ""))
    out = ["# Benchmarks", "", f"- date: {doc['date']}", line,
           f"- backend: {doc['backend']}; versions: {doc['versions']}", f"- timing: {timed}"]
    out += [f"  - {m}" for m in methods]
    if doc["backend"] == "simulator":
        out.append("- **CUDA simulator: correctness only; times are the simulation's wall clock, not GPU times**")
    if doc.get("quick"):
        out.append("- quick run: each kernel's small simulator size, 32 threads per block (targets need the standard sizes)")
    return out + [""]


def report_table(rep: dict) -> list[str]:
    """One run's rows (a ``lab run --json`` dict) as a markdown table: each row says of how many calls
    its median is ("median of"), how it was timed ("timed by") and its noise (IQR / median, ! above 10%)."""
    out = ["| contender | variant | median ms | IQR ms | noise | median of | timed by | first call ms | GB/s | "
           "GFLOP/s | % copy BW | % FP32 peak | max abs err | check |",
           "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rep["results"]:
        noise = "-" if r.get("noise") is None else f"{r['noise']:.1%}" + (" !" if r.get("noisy") else "")
        timed = "-" if not r["timed_calls"] else _short_method(r)
        out.append(f"| {r['contender']} | {r['variant']} | {_f(r['median_ms'], '{:.4f}')} | {_f(r['iqr_ms'], '{:.4f}')} | "
                   f"{noise} | {r['timed_calls'] or '-'} | {timed} | "
                   f"{_f(r['first_call_ms'], '{:.1f}')} | {_f(r['gbps'], '{:.1f}')} | {_f(r['gflops'], '{:.1f}')} | "
                   f"{_f(r['pct_copy_bandwidth'], '{:.1f}%')} | {_f(r['pct_peak_fp32'], '{:.1f}%')} | "
                   f"{_f(r['max_abs_err'], '{:.2e}')} | {r['status']}{': ' + r['reason'] if r['reason'] else ''} |")
    return out


def _short_method(r: dict) -> str:
    """A few words for how a row was timed (the full sentence is in the JSON's ``timing``)."""
    t = r.get("timing") or ""
    if r.get("host_gaps"):
        return "events, HOST GAPS included"
    if "perf_counter" in t:
        return "perf_counter (CPU)"
    if "simulator" in t.lower():
        return "simulator wall clock"
    return "events, queued (no host gaps)"


def tables_section(doc: dict) -> list[str]:
    out = []
    for rep in doc["reports"]:
        out += [f"## {rep['kernel']} {_size(rep['size'])} ({rep['dtype']}, --threads {rep['threads_per_block']})", ""]
        out += report_table(rep) + [""]
    for e in doc["errors"]:
        out += [f"## {e['kernel']} {e['size'] or ''}: error: {e['error']}", ""]
    return out


def _best(doc: dict) -> dict:
    """(kernel, size tuple, "numba" or a library label) -> (median ms, variant), the fastest checked row."""
    best = {}
    for rep in doc["reports"]:
        for r in rep["results"]:
            if r["median_ms"] is None or not r["ok"]:
                continue
            key = (rep["kernel"], tuple(rep["size"]), "numba" if r["contender"] == "numba" else r["variant"])
            best[key] = min(best.get(key, (r["median_ms"], r["variant"])), (r["median_ms"], r["variant"]))
    return best


def targets_section(doc: dict) -> list[str]:
    if doc["backend"] == "simulator":
        return ["## Targets", "", "Not judged: the CUDA simulator's times are not GPU times.", ""]
    best = _best(doc)
    out = ["## Targets", "", "| kernel | size | target | best Numba | reference | result |", "|---|---|---|---|---|---|"]
    for kernel, size, lib, bound, kind in targets():
        ours = best.get((kernel, tuple(size), "numba"))
        if ours is None:
            continue
        if kind == "ms":
            out.append(f"| {kernel} | {_size(size)} | <= {bound} ms | {ours[1]} {ours[0]:.4f} ms | - | "
                       f"{'met' if ours[0] <= bound else 'MISSED'} |")
            continue
        theirs = best.get((kernel, tuple(size), lib))
        if theirs is None:
            continue
        speed = theirs[0] / ours[0]
        out.append(f"| {kernel} | {_size(size)} | >= {bound}x {lib} | {ours[1]} {ours[0]:.4f} ms | {theirs[0]:.4f} ms | "
                   f"{speed:.2f}x: {'met' if speed >= bound else 'MISSED'} |")
    if len(out) == 4:
        out.append("| (no target size in this run) | | | | | |")
    return out + [""]


def resources_section(doc: dict) -> list[str]:
    out = ["## Compiler resource report (Numba kernels that ran)", "",
           "| kernel | registers/thread | shared B/block | local B/thread | max threads/block |",
           "|---|---:|---:|---:|---:|"]
    for r in doc.get("resources", []):
        if "error" in r:
            out.append(f"| {r['kernel']} | {r['error']} | | | |")
        else:
            out.append(f"| {r['kernel']} | {r['registers_per_thread']} | {r['shared_bytes_per_block']} | "
                       f"{r['local_bytes_per_thread']} | {r['max_threads_per_block']} |")
    if not doc.get("resources"):
        out.append("| (none: the CUDA simulator compiles no GPU code) | | | | |")
    return out + [""]


# The markdown report, in order. Another section (e.g. a shape sweep) is one more builder here.
def shape_sweep_section(doc: dict) -> list[str]:
    """The public shape sweep, when the document has one (``lab bench`` on a GPU)."""
    if not doc.get("shape_sweep"):
        return []
    return render([SweepRow(**r) for r in doc["shape_sweep"]]).splitlines() + [""]


SECTIONS: list[Callable[[dict], list[str]]] = [header_section, tables_section, targets_section, shape_sweep_section,
                                               resources_section]


def render_markdown(doc: dict, sections=None) -> str:
    """The bench document (from :func:`run_bench`, or read back from ``lab bench --json``) as markdown."""
    lines = []
    for build in sections or SECTIONS:
        lines += build(doc)
    return "\n".join(lines)


def measure_simcost(threads: int = 32) -> dict:
    """Re-measure each kernel's ``KernelSpec.sim_cost`` (lab.core.simcost) in the simulator (each kernel at its default
    simulator size): (median call ms - FLOPs * PER_FLOP_MS) / threads launched, per (kernel, variant)."""
    core_simulator.select("sim")
    out = {}
    for name in kernels.NAMES:
        report = runner.run(Options(name, threads=threads, repeats=2, warmup=0, contenders=["numba"]), "simulator")
        for row in report.rows:
            if row.measurement and row.launch:
                per = (row.measurement.median_ms - report.flops * PER_FLOP_MS) / row.launch["threads_total"]
                out[(name, row.variant)] = round(max(per, 0.01), 3)
    return out
