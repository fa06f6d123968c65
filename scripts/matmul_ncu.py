r"""Diagnosis (not a test): matmul ``auto`` beside ``torch.matmul`` under Nsight Compute, one call each.

    ncu --profile-from-start off --section SpeedOfLight --section LaunchStats --section Occupancy \
        --section WarpStateStats --csv --page details \
        python scripts/matmul_ncu.py 1024x1024x1024,777x1333x901 > ncu.csv

Each MxNxK is prepared, run once and compared with torch (max |difference| and auto's launch note
printed, outside the profiled range), then one ``auto`` call and one ``torch.matmul`` call per shape
run between cudaProfilerStart and cudaProfilerStop (``--profile-from-start off``), so the report holds
exactly our kernels and cuBLAS's (its kernel names carry its tile, e.g. ``tilesize128x64x8``; a
``splitKreduce_kernel`` says it split K). FP32, TF32 off. ncu locks the SM clock at base (1.58 GHz on
an H100): compare durations within a report, not with the timer's. Used for docs/benchmarks.md.
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def main() -> None:
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    if len(sys.argv) != 2:
        print("error: one argument, the shapes (MxNxK or N, comma-separated); --help for more", file=sys.stderr)
        sys.exit(2)
    try:
        shapes = [tuple(int(x) for x in s.split("x")) * (3 if "x" not in s else 1) for s in sys.argv[1].split(",")]
        if any(len(s) != 3 or min(s) < 1 for s in shapes):
            raise ValueError
    except ValueError:
        print(f"error: shapes are MxNxK or N, comma-separated, each at least 1 (got {sys.argv[1]!r})", file=sys.stderr)
        sys.exit(2)
    import torch
    from numba import cuda

    import kernels.matmul as MM

    torch.backends.cuda.matmul.allow_tf32 = False
    auto = MM.SPEC.variants["auto"]
    runs = []
    for size in shapes:
        m, n, k = size
        A, B = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
        C, C2 = torch.empty(m, n, device="cuda"), torch.empty(m, n, device="cuda")
        cfg = auto.launch(size, 256)
        fn = auto.prepare(cfg, [cuda.as_cuda_array(A), cuda.as_cuda_array(B)], [cuda.as_cuda_array(C)])
        fn()
        torch.matmul(A, B, out=C2)
        torch.cuda.synchronize()
        print(f"{m}x{n}x{k}: max |auto - torch| {(C - C2).abs().max().item():.2e}; {cfg.note}", flush=True)
        runs.append((fn, A, B, C2))
    torch.cuda.profiler.start()
    for fn, A, B, C2 in runs:
        fn()
        torch.matmul(A, B, out=C2)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
