"""GPU run for softmax's split_tail rung (issue 40, item 3): the sweep of few-long-row shapes and a
couple of ordinary ones, every rung and auto against torch.softmax (lab.bench.shapes.sweep: each row
checked against the float64 reference, then timed by the lab's timer), written as a docs/results file.

    python scripts/softmax_long_rows_gpu.py OUT_DIR [--repeats 20]

Writes OUT_DIR/softmax-long-rows.json (docs/results format, scripts/benchmarks_md.py) and prints the
markdown table. Needs a GPU. docs/results/softmax-long-rows.json holds two runs of it (all rungs; then
auto as merged, with SHAPES and RUNGS cut to fit the device time left), joined by hand.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import sys
import time
from pathlib import Path

SHAPES = ["132x16384", "300x30000", "500x20000", "64x100000", "1000x20000", "200x50000", "700x24000",
          "2000x20000", "132x32768", "1000x50000", "1000x8192", "4099x3001", "8192x8192", "32x65536",
          "4x1000000"]
BACKEND = "gpu"
RUNGS = ["auto", "online", "split_row", "split_tail"]


def _ms(row, rung) -> str:
    return f"{row.rungs[rung]:.4f}" if rung in row.rungs else "-"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    from importlib.metadata import version

    from lab.bench import shapes
    from lab.core.device import describe, measure_copy_bandwidth

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = describe(False)
    bw = measure_copy_bandwidth()["gbps"]
    t0 = time.time()
    def save(rows):  # after every shape: a run cut by its time limit keeps what it finished
        (out / "partial.md").write_text(shapes.render(rows))

    rows = shapes.sweep(BACKEND, ["softmax"], {"softmax": SHAPES}, repeats=args.repeats, warmup=3, rungs=RUNGS,
                        on_row=save,
                        progress=lambda s: print(f"[sweep] {s} {time.time() - t0:.0f}s", file=sys.stderr, flush=True))
    table = []
    for r in rows:
        ratio = r.auto_ratio
        table.append([r.size, *(_ms(r, k) for k in RUNGS[1:]), _ms(r, "auto"), r.auto_rung or "-",
                      f"{r.torch_ms:.4f}" if r.torch_ms else "-", f"{ratio:.2f}x" if ratio else "-",
                      "; ".join(r.failed) or r.error or ""])
    ratios = [r.auto_ratio for r in rows if r.auto_ratio]
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    worst = min((r for r in rows if r.auto_ratio), key=lambda r: r.auto_ratio, default=None)
    summary = (f"auto / torch.softmax over {len(ratios)} shapes: geometric mean {gm:.2f}x, worst "
               f"{worst.size} {worst.auto_ratio:.2f}x" if worst else "no ratios")
    versions = {"python": platform.python_version()}
    for pkg in ("numpy", "numba-cuda-mlir", "numba-cuda", "torch"):
        try:
            versions[pkg] = version(pkg)
        except Exception:
            pass
    doc = {"title": "softmax at few long rows (issue 40, item 3): rows of up to 32,768 columns in registers, "
                    "split_tail past them", "order": 29,
           "device": f"{dev['name']} ({dev.get('sm_count')} SMs, measured copy bandwidth "
                     f"{bw:,.0f} GB/s)",
           "date": datetime.date.today().isoformat(), "versions": versions,
           "blocks": [{"text": f"- One run: `python scripts/softmax_long_rows_gpu.py` ({time.time() - t0:.0f} s), "
                               f"float32, median of {args.repeats} calls a row, each row checked against the float64 "
                               f"reference first; named rungs at 256 threads, auto at its own choice. {summary}."},
                      {"table": {"columns": ["shape", *(f"{k} ms" for k in RUNGS[1:]), "auto ms", "auto chose",
                                             "torch ms", "auto / torch", "failed"],
                                 "align": ["left"] + ["right"] * 5 + ["left", "right", "right", "left"],
                                 "rows": table}}]}
    (out / "softmax-long-rows.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(shapes.render(rows))
    print(summary)
    for r in rows:
        print(r.size, r.auto_rung, r.auto_note, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
