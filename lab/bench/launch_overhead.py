"""Launch overhead through the torch bridge: the host time a call of a small op takes, for a kernel's
Numba launch, its torch op, the fast launch path of the lesson, torch's floor for such an op and the
CuPy and torch contenders (``python -m torch_bridge.bench_launch``; the rows: torch_bridge.overhead).

How (:func:`measure`): every row by lab.core.timing's Timer in its host-clock mode for launch
overhead (``Timer(fn, "host", sync, calls=N)``): a warm-up of max(50, N / 10) calls, then samples
of ``time.perf_counter`` around N back-to-back calls divided by N, the device synchronized between
samples, outside the timing; ``rounds`` samples (the stop rule's ``fixed_count`` criterion), or with
``rounds`` None the adaptive rule (lab.core.stopping). No L2 flush and no blocking kernel: the host's
time is the quantity, and at 1024 elements the kernel itself takes ~2 us of GPU time, so the host sets
the pace. Reported: the median and the minimum of the samples (us a call), and each row's structured
stop reason. Before timing, the outputs of the op, the lesson's path and the direct launch are
checked against the kernel's float64 reference within its tolerance. In Numba's CUDA simulator the
times are the simulation's wall clock (the method says so), for the tests of this module only.

Source: NVIDIA nvbench (stopping criteria); PyTorch docs, "torch.library" (the op's registration).
"""
from __future__ import annotations

import datetime
import platform
import io
import pstats

import numpy as np

from kernels.backend import installed_version
from lab.core.check import check_outputs
from lab.core.errors import LabError
from lab.core.stopping import StopRule
from lab.core.timing import Timer
import kernels


def default_kernel() -> str:
    """The kernel timed when none is named: the first with a torch op in lesson order (kernels.NAMES)."""
    import torch_bridge.lab_ops as L  # lazy: backend chosen first (numba)

    return L.OPS[0]


def measure(kernel: str | None = None, size: str = "1024", calls: int = 2000, rounds: int | None = 15,
            profile: int = 0, warmup: int | None = None) -> dict:
    """Time every row of torch_bridge.overhead.calls for ``kernel`` (None: :func:`default_kernel`) at
    ``size`` (its ``--size`` text: N, or AxB for a 2-D kernel; one number is square) with ``calls``
    calls a sample and ``rounds`` samples (None: the adaptive stop rule). ``profile`` > 0: also a
    cProfile of ``calls`` op calls, its ``profile`` functions of most own time. ``warmup``: untimed
    calls a row first (None: max(50, calls / 10) on a GPU, 1 in the simulator).

    Returns the results document: device, compiler, kernel, size, n (the element count of a 1-D size,
    else the size), date, python, torch, cupy, numba, numba_cuda, op_launch (how the op launches),
    method, calls, rounds, baseline (the row the ratios divide by), rows [[call, median us, min us]],
    results [{call, median_us, min_us, samples, noise, stop}] (stop: lab.core.stopping.Stop.as_dict)
    and, with ``profile``, profile (text). LabError for an unknown kernel, one without a torch op, a
    bad size, or outputs that fail the check."""
    from kernels.compiler import COMPILER, SIMULATOR  # lazy: backend chosen first (numba)

    kernel = kernel or default_kernel()
    if kernel not in kernels.NAMES:
        raise LabError(f"--kernel: unknown kernel {kernel!r}; choose from: {', '.join(kernels.NAMES)}")
    spec = kernels.load(kernel)
    try:
        dims = spec.parse_size(str(size))
    except ValueError as e:
        raise LabError(f"--size: {e}") from None
    from torch_bridge import overhead  # lazy: backend chosen first (numba)

    try:
        made = overhead.calls(kernel, dims)
    except ValueError as e:
        raise LabError(f"--kernel: {e}") from None
    _check(spec, made)
    rule = StopRule(repeats=rounds) if rounds is not None else StopRule()
    if warmup is None:
        warmup = 1 if SIMULATOR else max(50, calls // 10)
    results = []
    for row in made.rows:
        m = Timer(row.fn, "simulator" if SIMULATOR else "host", row.sync, calls=calls).measure(warmup=warmup, rule=rule)
        results.append({"call": row.label, "median_us": round(m.median_ms * 1e3, 2), "min_us": round(m.min_ms * 1e3, 2),
                        "samples": m.n, "noise": round(m.noise, 4), "stop": m.stop, "method": m.method})
    doc = {"device": made.versions["device"], "compiler": "simulator" if SIMULATOR else COMPILER, "kernel": kernel,
           "size": list(dims), "n": dims[0] if len(dims) == 1 else list(dims), "date": str(datetime.date.today()),
           "python": platform.python_version(), "cupy": made.versions["cupy"], "torch": made.versions["torch"],
           "numba": installed_version("numba") or "not installed",
           "numba_cuda": installed_version("numba-cuda") or "not installed", "op_launch": made.op_launch(),
           "method": results[0]["method"] if results else "", "calls": calls, "rounds": rounds, "warmup": warmup,
           "baseline": made.baseline,
           "rows": [[r["call"], r["median_us"], r["min_us"]] for r in results],
           "results": [{k: v for k, v in r.items() if k != "method"} for r in results]}
    if profile:
        text = io.StringIO()
        pstats.Stats(made.profile(calls), stream=text).sort_stats("tottime").print_stats(profile)
        doc["profile"] = "\n".join(line for line in text.getvalue().splitlines() if line.strip())[-6000:]
    return doc


def _check(spec, made) -> None:
    """Each row's outputs that can be read (the op, the lesson's path, the direct launch) against the
    kernel's float64 reference within its tolerance; LabError naming the row otherwise."""
    dtype = np.dtype(np.float32)
    refs = spec.float64_reference(made.inputs)
    tols = spec.tolerance(made.inputs, refs, dtype)
    out_specs = spec.out_specs(made.size, dtype)
    for name, read in made.outputs.items():
        verdict = check_outputs(read(), refs, tols, out_specs)
        if not verdict.ok:
            raise LabError(f"{name}: wrong result before timing ({verdict.reason})")


def render(doc: dict) -> str:
    """The Markdown the command prints: a heading line, the versions, the table (call, median us, min,
    x the baseline row) and how the op launches; with a profile, its text."""
    n = doc["n"]
    what = f"{n} float32 elements" if isinstance(n, int) else "x".join(map(str, doc["size"])) + " float32"
    rounds = f"{doc['rounds']} rounds" if doc["rounds"] else "an adaptive count of rounds (stop rule)"
    lines = [f"Launch overhead, {doc['kernel']} of {what}: host time per call, median (min) of "
             f"{rounds} x {doc['calls']} calls.  ",
             f"{doc['device']}, {doc['date']}, Python {doc['python']}, torch {doc['torch']}, numba {doc['numba']}, "
             f"numba-cuda {doc['numba_cuda']}, CuPy {doc['cupy']}, compiler {doc['compiler']}.  ",
             f"Timing: {doc['method']}.", ""]
    base = next((r["median_us"] for r in doc["results"] if r["call"] == doc["baseline"]), None)
    lines += [f"| call | us per call (median) | min | vs {doc['baseline'] or '-'} |", "|---|---:|---:|---:|"]
    for r in doc["results"]:
        ratio = f"{r['median_us'] / base:.2f}x" if base else "-"
        lines.append(f"| {r['call']} | {r['median_us']:.1f} | {r['min_us']:.1f} | {ratio} |")
    stops = sorted({r["stop"]["criterion"] for r in doc["results"] if r["stop"]})
    lines += ["", f"The op's launch: {doc['op_launch']}. Stopped by: {', '.join(stops) or '-'}."]
    if doc.get("profile"):
        lines += ["", f"cProfile of {doc['calls']} torch.ops.lab.{doc['kernel']} calls, by own time:", doc["profile"]]
    return "\n".join(lines)


