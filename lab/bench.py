"""Benchmark script (not a test): every kernel x variant x contender at the standard sizes.

    python -m lab.bench --out docs/benchmarks.md     # on a GPU machine

Writes a markdown report: device, date, package versions, the measured copy bandwidth, one table
per kernel and size (median ms, GB/s, GFLOP/s, % of copy bandwidth, % of FP32 peak, first call,
max abs error), the targets with met/missed, and the compiler's resource report (registers,
shared and local memory per thread) for every Numba kernel that ran.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata as md
import platform
import sys

from lab.backend import select

# kernel -> list of (size, threads); the standard sizes of the issues.
STANDARD = {
    "vecadd": [("67108864", 256), ("67108864", 1024)],
    "matvec": [("16384x4096", 1024), ("16384x4096", 256)],
    "matmul": [("4096", 256)],
    "softmax": [("8192x8192", 1024), ("65536x1024", 256)],
    "quantize": [("67108864", 256)],
    "dequantize": [("4096x16384", 256)],
    "quantize_per_channel": [("4096x16384", 256)],
}

# (kernel, size, our contender/variant picked as best Numba row, library row to beat, ratio)
TARGETS = [
    ("vecadd", "67108864", "torch.add", 0.95, "speed"),
    ("matvec", "16384x4096", "torch.mv (cuBLAS)", 1.0, "speed"),
    ("matmul", "4096", "torch.matmul (cuBLAS, TF32 off)", 0.5, "speed"),
    ("softmax", "8192x8192", "torch.softmax", 1.2, "speed"),
    ("softmax", "65536x1024", "torch.softmax", 0.95, "speed"),
    ("quantize", "67108864", None, 0.245, "ms"),
]


def versions() -> str:
    names = ["numba", "numba-cuda", "numpy", "llvmlite", "torch", "cupy-cuda13x", "cupy-cuda12x", "cuda-core", "rich", "click"]
    found = []
    for n in names:
        try:
            found.append(f"{n} {md.version(n)}")
        except md.PackageNotFoundError:
            continue
    return f"python {platform.python_version()}; " + ", ".join(found)


def resource_report() -> list[str]:
    """Registers / shared / local memory per compiled Numba kernel (the compiler's resource report)."""
    from numba.cuda.dispatcher import CUDADispatcher

    import kernels

    lines = ["| kernel | registers/thread | shared B/block | local B/thread | max threads/block |",
             "|---|---:|---:|---:|---:|"]
    for name in kernels.NAMES:
        mod = sys.modules.get(f"kernels.{name}")
        if mod is None:
            continue
        for attr, obj in sorted(vars(mod).items()):
            if isinstance(obj, CUDADispatcher) and obj.overloads and not obj.targetoptions.get("device"):
                for k in obj.overloads.values():
                    try:
                        lines.append(f"| {name}.{attr} | {k.regs_per_thread} | {k.shared_mem_per_block} | "
                                     f"{k.local_mem_per_thread} | {k.max_threads_per_block} |")
                    except Exception as e:  # device functions have no launch resources
                        lines.append(f"| {name}.{attr} | n/a ({type(e).__name__}) | | | |")
    return lines


def table(report) -> list[str]:
    from lab.report import _num

    out = ["| contender | variant | median ms | IQR ms | first call ms | GB/s | GFLOP/s | % copy BW | % FP32 peak | max abs err | check |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in report.rows:
        m = r.measurement
        out.append(f"| {r.contender} | {r.variant} | {_num(m.median_ms if m else None, '{:.4f}')} | "
                   f"{_num(m.iqr_ms if m else None, '{:.4f}')} | {_num(r.first_call_ms, '{:.1f}')} | "
                   f"{_num(r.gbps, '{:.1f}')} | {_num(r.gflops, '{:.1f}')} | {_num(r.pct_copy, '{:.1f}%')} | "
                   f"{_num(r.pct_peak_flops, '{:.1f}%')} | {_num(r.max_abs_err, '{:.2e}')} | "
                   f"{r.status}{': ' + r.reason if r.reason else ''} |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="-", help="markdown file to write (default: stdout)")
    ap.add_argument("--kernels", default=",".join(STANDARD), help="comma-separated kernels")
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args(argv)
    backend = select("auto")
    from lab.device import describe, measure_copy_bandwidth
    from lab.errors import LabError
    from lab.runner import Options, run

    dev = describe(backend == "simulator")
    copy = measure_copy_bandwidth() if backend == "gpu" else {}
    md_lines = [f"# Benchmarks", "",
                f"- date: {datetime.date.today().isoformat()}",
                f"- device: {dev['name']} (compute capability {dev['compute_capability']}, {dev.get('sm_count')} SMs)"
                + (f", measured copy bandwidth {copy['gbps']:.0f} GB/s, theoretical {dev.get('peak_bandwidth_gbps', 0):.0f} GB/s,"
                   f" FP32 peak {dev.get('peak_fp32_gflops', 0) / 1e3:.1f} TFLOP/s" if copy else ""),
                f"- backend: {backend}; versions: {versions()}",
                f"- timing: CUDA events, one pair a call, calls queued behind a spin kernel; median of {args.repeats} calls after 5 warm-up", ""]
    best = {}
    for kernel in args.kernels.split(","):
        for size, threads in STANDARD[kernel]:
            print(f"[bench] {kernel} {size} threads={threads}", file=sys.stderr, flush=True)
            try:
                rep = run(Options(kernel=kernel, size=size, threads=threads, repeats=args.repeats, seed=0), backend)
            except LabError as e:
                md_lines += [f"## {kernel} {size}: error: {e}", ""]
                continue
            md_lines += [f"## {kernel} {size} ({rep.dtype}, --threads {threads})", ""] + table(rep) + [""]
            for r in rep.rows:
                if r.measurement:
                    key = (kernel, size, r.variant if r.contender != "numba" else "numba")
                    ms = r.measurement.median_ms
                    best[key] = min(best.get(key, (ms, r.variant)), (ms, r.variant))
    md_lines += ["## Targets", "", "| kernel | size | target | best Numba | reference | result |", "|---|---|---|---|---|---|"]
    for kernel, size, lib, ratio, kind in TARGETS:
        ours = best.get((kernel, size, "numba"))
        if ours is None:
            continue
        if kind == "ms":
            met = ours[0] <= ratio
            md_lines.append(f"| {kernel} | {size} | <= {ratio} ms | {ours[1]} {ours[0]:.4f} ms | - | {'met' if met else 'MISSED'} |")
            continue
        theirs = best.get((kernel, size, lib))
        if theirs is None:
            continue
        speed = theirs[0] / ours[0]
        md_lines.append(f"| {kernel} | {size} | >= {ratio}x {lib} | {ours[1]} {ours[0]:.4f} ms | {theirs[0]:.4f} ms | "
                        f"{speed:.2f}x: {'met' if speed >= ratio else 'MISSED'} |")
    md_lines += ["", "## Compiler resource report (Numba kernels that ran)", ""] + resource_report() + [""]
    text = "\n".join(md_lines)
    if args.out == "-":
        print(text)
    else:
        with open(args.out, "w") as f:
            f.write(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
