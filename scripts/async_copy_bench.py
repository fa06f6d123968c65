"""Check and time the builds of the async_copy rung (kernels.gemm.async_copy.BUILDS) and the rung's own pick
(``auto``: kernels.gemm.async_copy.choose, build and K split by shape) on a GPU, beside torch's FP32 matmul
(TF32 off: cuBLAS SGEMM); prints a table and writes JSON.

    LAB_COMPILER=numba-cuda-mlir python scripts/async_copy_bench.py --out acopy.json   # meant for < 90 s on an H100
    python scripts/async_copy_bench.py --builds auto,b128x128_w64x32_t8x8_k16_s3   # "all": every build

Each build is first checked against the float64 reference on fresh random inputs at CHECK_SHAPES (no
multiple of any tile; 1001 x 1036 x 516 takes the 16-byte copies, 257 x 4099 x 130 the 4-byte ones; ``auto``
also at 60 x 1030 x 2051, where it splits K), with float32's dot-product tolerance (kernels.spec.dot_tolerance);
a build that fails is not timed. Then each is timed at TIME_SHAPES (the same device inputs for every build):
the median ms a call of lab.core.timing's Timer, as ``lab run`` times (CUDA events a call, queued behind the blocking kernel, L2 flushed before each call), its stop rule capped at ``--budget-per`` seconds a
build and shape. One process: a build that faults ends the run, the JSON keeps what was measured before it
(``--builds`` leaves it out next time).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

AUTO = "auto"  # the rung's pick: kernels.gemm.async_copy.choose
CHECK_SHAPES = [(1001, 1036, 516), (257, 4099, 130)]
AUTO_CHECK_SHAPES = [(60, 1030, 2051)]  # auto splits K here (4-byte copies)
TIME_SHAPES = [(4096, 4096, 4096), (3000, 5000, 2000), (2048, 2048, 2048), (1000, 1030, 517),
               (64, 4096, 4096), (4096, 64, 4096), (4096, 4096, 64), (1024, 1024, 1024), (4097, 4097, 4097),
               (8192, 8192, 8192)]
# the default, auto's pick, and three builds not measured yet (the grouped block order, the two smaller tiles)
OTHERS = ["b128x128_w64x64_t8x16_k16_s4_g8", "b64x64_w32x32_t4x8_k16_s4", "b128x64_w64x32_t8x8_k16_s4"]


def median_ms(fn, torch, budget_s, warmup=2):
    """Median ms a call of ``fn`` (it enqueues on the default stream): lab.core.timing's Timer, as ``lab run`` times: CUDA events, one pair a call, calls queued behind the blocking kernel, L2 flushed before each; its stop rule, at most ``budget_s`` s."""
    from lab.core.stopping import StopRule
    from lab.core.timing import Timer

    return Timer(fn, "device", torch.cuda.synchronize).measure(warmup=warmup, rule=StopRule(time_limit_s=budget_s)).median_ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="async_copy_bench.json")
    ap.add_argument("--builds", default="", help=f"comma-separated keys of BUILDS and/or {AUTO!r}, or 'all' "
                                                 f"(default: the default, {AUTO}, {', '.join(OTHERS)})")
    ap.add_argument("--shapes", default="", help="comma-separated MxNxK to time (default: TIME_SHAPES)")
    ap.add_argument("--budget-per", type=float, default=0.3, help="seconds of timed calls a build and shape")
    args = ap.parse_args()

    import torch

    from kernels.compiler import COMPILER, cuda
    from kernels.gemm import async_copy as AC
    from kernels.spec import dot_tolerance

    torch.backends.cuda.matmul.allow_tf32 = False
    if args.builds == "all":
        names = [AC.DEFAULT, AUTO] + [n for n in AC.BUILDS if n != AC.DEFAULT]
    else:
        names = [n for n in args.builds.split(",") if n] or [AC.DEFAULT, AUTO] + OTHERS
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s] or TIME_SHAPES
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version(),
           "device": torch.cuda.get_device_name(), "torch": torch.__version__, "compiler": COMPILER,
           "default": AC.DEFAULT, "shapes": [list(s) for s in shapes], "checks": [], "times": [], "errors": []}

    def save():
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)

    def call(name, shape, A, B, C):
        """(no-argument call, pick) of build ``name`` (or auto's pick) on device arrays for ``shape``."""
        pick = AC.choose(shape) if name == AUTO else AC.Choice(name, 1, "asked for")
        return AC.enqueue(AC.BUILDS[pick.name], A, B, C, pick.splits), pick

    t_start = time.time()
    for (m, n, k) in shapes:  # torch first: the reference column
        A = torch.randn(m, k, device="cuda")
        B = torch.randn(k, n, device="cuda")
        C = torch.empty(m, n, device="cuda")
        ms = median_ms(lambda A=A, B=B, C=C: torch.matmul(A, B, out=C), torch, args.budget_per)
        out["times"].append({"build": "torch fp32", "shape": [m, n, k], "ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9})
        del A, B, C
    torch.cuda.empty_cache()
    save()
    rng = np.random.default_rng(0)
    inputs = {}  # shape -> device (A, B, C), made once, for every build
    for name in names:
        try:
            ok_all = True
            for (m, n, k) in CHECK_SHAPES + (AUTO_CHECK_SHAPES if name == AUTO else []):
                A = rng.standard_normal((m, k)).astype(np.float32)
                B = rng.standard_normal((k, n)).astype(np.float32)
                dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
                t0 = time.perf_counter()
                fn, pick = call(name, (m, n, k), cuda.to_device(A), cuda.to_device(B), dC)
                fn()
                cuda.synchronize()
                first = time.perf_counter() - t0
                got = dC.copy_to_host()
                err = np.abs(got - A.astype(np.float64) @ B.astype(np.float64))
                tol = dot_tolerance(A, B, np.float32)
                ok = bool(np.all(err <= tol))
                ok_all &= ok
                out["checks"].append({"build": name, "pick": pick.name, "splits": pick.splits, "shape": [m, n, k],
                                      "ok": ok, "max_err": float(np.nanmax(err)), "nan": int(np.isnan(got).sum()),
                                      "worst_over_tol": float(np.nanmax(err / tol)), "first_call_s": round(first, 2)})
                save()
            if not ok_all:
                continue
            for (m, n, k) in shapes:
                if (m, n, k) not in inputs:
                    g = np.random.default_rng(1)
                    inputs[m, n, k] = (cuda.to_device(g.standard_normal((m, k), np.float32)),
                                       cuda.to_device(g.standard_normal((k, n), np.float32)),
                                       cuda.device_array((m, n), np.float32))
                fn, pick = call(name, (m, n, k), *inputs[m, n, k])
                ms = median_ms(fn, torch, args.budget_per)
                out["times"].append({"build": name, "pick": pick.name, "splits": pick.splits, "why": pick.why,
                                     "shape": [m, n, k], "ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9})
                save()
        except Exception as e:  # a compile error or a fault: record it; after a fault the context is gone
            out["errors"].append(f"{name}: {type(e).__name__}: {' '.join(str(e).split())[:800]}")
            save()
            try:  # a compile error leaves the context usable; a fault does not
                cuda.synchronize()
            except Exception:
                break
    out["seconds"] = round(time.time() - t_start, 1)
    save()
    print(table(out, names, shapes))


def table(out: dict, names: list[str], shapes) -> str:
    """The run as text: a row a shape, TFLOP/s (x torch FP32) of each build in columns [1], [2], ...
    (named above the table with their checks), and auto's pick."""
    from kernels.gemm import async_copy as AC

    t = {(r["build"], tuple(r["shape"])): r for r in out["times"]}
    lines = [f"{out['device']}, {out['compiler']}, torch {out['torch']}; TFLOP/s (x torch FP32, TF32 off); default "
             f"{AC.DEFAULT}; {out.get('seconds', '?')} s"]
    for i, name in enumerate(names, 1):
        checks = [c for c in out["checks"] if c["build"] == name]
        verdict = (("ok " if all(c["ok"] for c in checks) else "FAILED ")
                   + " ".join(f"{c['worst_over_tol']:.2f}" for c in checks)) if checks else "not run"
        if name == AUTO:
            what = "the rung's pick (choose): build and K ranges by shape"
        else:
            b = AC.BUILDS[name]
            what = f"{b}; registers capped at {min(255, 65536 // (b.threads * b.blocks))}"
        lines.append(f"[{i}] {name}: {what}; check (err/tol) {verdict}")
    lines.append(f"{'shape':>16s}{'torch':>8s}" + "".join(f"{f'[{i}]':>15s}" for i in range(1, len(names) + 1))
                 + "  auto's pick")
    for s in shapes:
        ref = t.get(("torch fp32", s), {}).get("tflops")
        row = f"{'x'.join(map(str, s)):>16s}" + (f"{ref:8.1f}" if ref else f"{'-':>8s}")
        for name in names:
            mine = t.get((name, s), {}).get("tflops")
            row += f"{mine:7.1f} ({mine / ref:.2f}x)".rjust(15) if mine and ref else f"{'-':>15s}"
        p = t.get((AUTO, s))
        lines.append(row + (f"  {p['pick']}" + (f" x {p['splits']} K ranges" if p["splits"] > 1 else "") if p else ""))
    lines += [f"error: {e}" for e in out["errors"]]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
