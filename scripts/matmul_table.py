"""Benchmark (not a test): matmul ``auto`` against ``torch.matmul`` (cuBLAS, FP32, TF32 off) at every
public sweep shape (lab.bench.shapes.sweep_shapes()["matmul"]), the issue's shapes and shapes neither names,
the same run for both columns, with the configuration ``auto`` ran (tuned or heuristic: its launch
note). Output: a markdown table for docs/benchmarks.md, one row as each shape finishes, then the
geometric mean and the worst ratio.

    python scripts/matmul_table.py                       # every shape below, on a CUDA GPU
    python scripts/matmul_table.py --shapes 4096,1x4096x4096 --deadline 300

Each shape is the shape sweep's row (:func:`lab.bench.shapes.sweep` with only the ``auto`` rung: the
runner, as ``lab run matmul --gpu --variant auto --contenders numba,torch``) in this one process (the
lab's timer: CUDA events, L2 flushed before each call, medians under the stop rule; every result
checked against the float64 reference first); a shape that fails is its row's text. Ratio = torch ms /
auto ms (higher is better; 1.0 = cuBLAS's speed). TFLOP/s = 2 M N K / auto ms.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# shapes of issue 18's table that the public sweep does not name, and shapes nobody tuned for
ISSUE = ["1x4096x4096", "4096x1x4096", "3000x3000x40", "300", "2048x2048x64", "1000", "2000x64x2000",
         "4000x1000x3000"]
UNNAMED = ["777x1333x901", "1500x700x2500", "96x4096x1024", "8192x8192x128", "5000x5000x300", "256x256x8192",
           "3x2000x2000", "2500x17x3000"]


def row(size: str) -> tuple:
    """(markdown row, (ratio, flops) or None) of one shape: the sweep's auto-vs-torch row, in this
    process (compiles are shared among shapes); a failure is its row's text."""
    from lab.bench import shapes

    try:
        (r,) = shapes.sweep("gpu", ["matmul"], {"matmul": [size]}, repeats=None, warmup=None, rungs=["auto"])
    except Exception as e:  # noqa: BLE001 - one shape's failure is its row
        r = shapes.SweepRow("matmul", size, error=f"{type(e).__name__}: {e}")
    if r.error:
        return f"| {size} | failed: {' '.join(r.error.split())[:100]} | | | | | |", None
    if not r.auto_ratio:
        bad = "; ".join(f[:80] for f in r.failed) or "a row was not timed"
        return f"| {size} | no timing ({bad}) | | | | | |", None
    text = (f"| {size} | {math.log2(r.flops):.1f} | {r.torch_ms:.4f} | {r.auto_ms:.4f} | {r.auto_ratio:.2f}x | "
            f"{r.flops / r.auto_ms / 1e9:.1f} | {r.auto_note.replace('|', '/')[:150]} |")
    return text, (r.auto_ratio, r.flops)


def main() -> None:
    from lab.bench.shapes import sweep_shapes

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=None, help="comma-separated sizes (default: public + issue + unnamed)")
    ap.add_argument("--deadline", type=float, default=540, help="wall seconds; later shapes are listed as skipped")
    args = ap.parse_args()
    shapes = args.shapes.split(",") if args.shapes else list(dict.fromkeys(sweep_shapes()["matmul"] + ISSUE + UNNAMED))
    from lab.core.errors import LabError
    from lab.core.simulator import select

    try:
        select("gpu")  # the backend of this process, as `lab run --gpu` picks it
    except LabError as e:
        sys.exit(f"error: {e}")
    start = time.monotonic()
    print("| shape | log2 FLOPs | torch.matmul ms | auto ms | torch/auto | auto TFLOP/s | auto ran |")
    print("|---|---:|---:|---:|---:|---:|---|", flush=True)
    ratios = []
    for size in shapes:
        if time.monotonic() - start > args.deadline:
            print(f"| {size} | skipped: past the {args.deadline:.0f} s deadline | | | | | |", flush=True)
            continue
        text, got = row(size)
        print(text, flush=True)
        if got:
            ratios.append((got[0], got[1], size))
    if ratios:
        geo = math.exp(sum(math.log(r) for r, _, _ in ratios) / len(ratios))
        worst = min(ratios)
        big = [r for r in ratios if r[1] >= 1 << 27]
        print(f"\n{len(ratios)} shapes: geometric mean {geo:.2f}x, worst {worst[0]:.2f}x ({worst[2]})"
              + (f"; at >= 2^27 FLOPs worst {min(big)[0]:.2f}x ({min(big)[2]})" if big else ""))


if __name__ == "__main__":
    main()
