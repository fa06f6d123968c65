"""Check and time tensor_core_3xtf32 (kernels/gemm/tensor_core_3xtf32.py) beside cuBLAS FP32 and TF32; 2-4 minutes.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/tf32x3_bench.py --json raw.json [--plans]
    python scripts/tf32x3_bench.py --results raw.json     # (anywhere) docs/results/tensor-cores-3xtf32.json + docs/data/

1. Errors against float64 (``errors``; --no-errors skips): each CASE's fresh inputs, C poisoned with NaN, through
   the rung (the wgmma build on an H100/H200), its mma.sync split build, the TF32 rung tensor_core_wgmma_tf32, the
   SIMT FP32 auto (precision "highest"), torch.matmul with TF32 off (cuBLAS FP32) and on. Each the largest
   |C - ref| / tolerance with the **FP32** tolerance the SIMT rungs are held to (kernels.spec.dot_tolerance;
   <= 1 passes) and the normwise relative error ||C - ref|| / ||ref||.
2. ``--plans``: the wgmma kernel's builds (kernels.gemm.tf32x3_tma.TMA_BUILDS and the cp.async WG_DEFAULT) at 1, 2, 4 and 8 K ranges
   on PLAN_SHAPES, each checked, for plan()'s model.
3. Times (``time``): SHAPES (square, tall, wide, long K, sizes no tile divides, 2^27 to 2^36 FLOPs, none named
   in an issue; --shapes), each the median ms a call of lab.core.timing's Timer (CUDA events, L2 flushed before
   each call, as ``lab run``), all in one process: cuBLAS FP32, TF32 and bf16 (torch.matmul; bf16 tensors made
   once), the rung as chosen (pre-pass + kernel(s): what ``lab run`` times) and its pre-pass alone, its TMA build
   (kernels.gemm.tf32x3_tma.TMA_DEFAULT) on the same plan, ``auto`` at precision high (the default) and highest (SIMT),
   tensor_core_wgmma_tf32 and tensor_core_wgmma (bf16) as their rungs run them. The 3xTF32 builds' and both
   autos' first calls are checked at the FP32 tolerance, the TF32 and bf16 rungs' first 64 rows against their
   rounded inputs. --budget: shapes still to time after this many seconds are skipped, and said so.

``--results`` renders a raw file into the results document, with ``auto``'s column as auto_route chooses now
(the rung or the SIMT auto, each as timed in that run).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# shapes named in no issue (2^27 to 2^36 FLOPs; square, tall, wide, long K, none a multiple of the tiles)
SHAPES = [(3210, 3210, 3210), (1500, 1500, 1500), (700, 700, 700), (400, 400, 420), (7000, 1100, 1900),
          (1000, 6000, 1300), (1100, 900, 12000), (600, 700, 20000), (2900, 2100, 700), (1300, 1700, 900),
          (520, 6100, 600), (9000, 700, 1000), (800, 900, 1100)]
PLAN_SHAPES = [(1000, 1000, 16384), (3000, 2000, 1000), (512, 512, 65536)]
FLT_MAX = float(np.finfo(np.float32).max)


def _normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _wide(rng, shape, span):
    """Standard normal times 2^e, e uniform in [-span, span] an element."""
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-span, span + 1, shape))).astype(np.float32)


def _near_max(rng, shape):
    """Values up to FLT_MAX: uniform [0.5, 1) x 2^127 with a tenth of them FLT_MAX itself (rounding it to
    TF32 would carry into the exponent), signs random."""
    x = (rng.uniform(0.5, 1.0, shape) * 2.0 ** 127).astype(np.float32)
    x[rng.random(shape) < 0.1] = FLT_MAX
    return (x * rng.choice(np.float32([-1, 1]), shape)).astype(np.float32)


# (name, shape, A and B from a generator): the lab's check inputs (standard normal) and adversarial ones
CASES = [
    ("normal", (1001, 1030, 517), lambda r, m, n, k: (_normal(r, (m, k)), _normal(r, (k, n)))),
    ("normal", (257, 129, 33), lambda r, m, n, k: (_normal(r, (m, k)), _normal(r, (k, n)))),
    ("uniform [0,1)", (512, 520, 8192), lambda r, m, n, k: (r.random((m, k), np.float32), r.random((k, n), np.float32))),
    ("uniform [0,1)", (256, 264, 65536), lambda r, m, n, k: (r.random((m, k), np.float32), r.random((k, n), np.float32))),
    ("wide exponents 2^+-40", (1000, 1000, 1000), lambda r, m, n, k: (_wide(r, (m, k), 40), _wide(r, (k, n), 40))),
    ("near FLT_MAX x 2^-110", (512, 512, 512), lambda r, m, n, k: (_near_max(r, (m, k)), _normal(r, (k, n), 2.0 ** -110))),
    ("tiny: 2^-90 x 2^-10", (512, 512, 512), lambda r, m, n, k: (_normal(r, (m, k), 2.0 ** -90), _normal(r, (k, n), 2.0 ** -10))),
    ("2^-120 x 2^60 (small parts subnormal)", (512, 512, 512),
     lambda r, m, n, k: (_normal(r, (m, k), 2.0 ** -120), _normal(r, (k, n), 2.0 ** 60))),
]


def fmt_shape(s):
    m, n, k = s
    return f"{m}^3" if m == n == k else f"{m}x{n}x{k}"


class Bench:
    def __init__(self):
        import torch

        from kernels.compiler import cuda

        self.torch, self.cuda = torch, cuda
        self.t0 = time.perf_counter()

    def ms(self, fn) -> float:
        from lab.core.stopping import StopRule
        from lab.core.timing import Timer

        return Timer(fn, "device", self.torch.cuda.synchronize).measure(rule=StopRule(min_time_s=0.02, time_limit_s=0.3)).median_ms

    def calls(self, A, B, which, shape):
        """{contender: (enqueue, read C)} on device copies of A, B (C poisoned with NaN)."""
        from kernels import matmul as MM
        from kernels.gemm import precision as P
        from kernels.gemm import tensor_core_3xtf32 as X
        from kernels.gemm import tensor_core_tf32 as TC
        from kernels.gemm import tf32x3_tma as XT

        torch, cuda = self.torch, self.cuda
        m, k = A.shape
        n = B.shape[1]
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        out = {}

        def numba_c():
            return cuda.to_device(np.full((m, n), np.nan, np.float32))

        spec = MM.SPEC
        for name in which:
            C = numba_c()
            if name == "3xtf32":
                v = spec.variants["tensor_core_3xtf32"]
                f = v.prepare(v.launch(shape, 256), [dA, dB], [C])
            elif name == "3xtf32_tma":  # the TMA build on the rung's plan (K ranges)
                _, sp, per, _ = X.plan(shape)
                f = XT.wgmma_prepare(dA, dB, C, sp, per, XT.TMA_DEFAULT)
            elif name == "bf16_wgmma":  # A and B rounded to bf16 once by prepare, the kernel alone in the call
                v = spec.variants["tensor_core_wgmma"]
                f = v.prepare(v.launch(shape, 256), [dA, dB], [C])
            elif name == "3xtf32_mma":
                mname = X.mma_choose(shape)[0]
                cfg = TC.launch_for(X.MMA_TILES[mname], shape)
                f = X.mma_prepare(cfg, dA, dB, C, mname)
            elif name == "tf32_wgmma":
                v = spec.variants["tensor_core_wgmma_tf32"]
                f = v.prepare(v.launch(shape, 256), [dA, dB], [C])
            elif name in ("auto_high", "auto_highest"):
                v = spec.variants["auto"]
                with P.using(name.split("_")[1], np.float32):
                    cfg = v.launch(shape, 256)
                f = v.prepare(cfg, [dA, dB], [C])
                out[name + ":note"] = cfg.note
            elif name.startswith("torch"):
                tA, tB = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
                tC = torch.full((m, n), float("nan"), device="cuda")
                if name == "torch_bf16":  # bf16 tensors made once (as the bf16 rung's prepare rounds once), bf16 C
                    tA, tB = tA.bfloat16(), tB.bfloat16()
                    tC = tC.bfloat16()
                tf32 = name == "torch_tf32"

                def f(tA=tA, tB=tB, tC=tC, tf32=tf32):
                    torch.backends.cuda.matmul.allow_tf32 = tf32
                    torch.matmul(tA, tB, out=tC)
                out[name] = (f, lambda tC=tC: tC.float().cpu().numpy())
                continue
            else:
                raise ValueError(name)
            out[name] = (f, lambda C=C: C.copy_to_host())
        return out

    @staticmethod
    def errors(C, ref, tol) -> dict:
        bad = ~np.isfinite(C) & np.isfinite(ref)
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(C.astype(np.float64) - ref)
            worst = float(np.nanmax(np.where(np.isfinite(ref), d / tol, 0.0))) if not bad.any() else float("inf")
            fin = np.isfinite(ref) & np.isfinite(C)
            rel = float(np.linalg.norm(d[fin]) / max(np.linalg.norm(ref[fin]), 1e-300))
        return {"err_over_tol": worst, "rel_err": rel, "nonfinite": int(bad.sum())}


def check_cases(b: Bench, rng, out: dict):
    from kernels.spec import dot_tolerance

    which = ["3xtf32", "3xtf32_tma", "3xtf32_mma", "tf32_wgmma", "auto_highest", "torch_fp32", "torch_tf32"]
    for case, shape, gen in CASES:
        m, n, k = shape
        A, B = gen(rng, m, n, k)
        with np.errstate(over="ignore", invalid="ignore"):
            ref = A.astype(np.float64) @ B.astype(np.float64)
        tol = dot_tolerance(A, B, np.float32)
        row = {"case": case, "shape": list(shape), "errors": {}}
        calls = b.calls(A, B, which, shape)
        for name in which:
            f, read = calls[name]
            f()
            b.torch.cuda.synchronize()
            row["errors"][name] = b.errors(read(), ref, tol)
        out["errors"].append(row)
        print(f"errors {case:38s} {fmt_shape(shape):18s} " + "  ".join(
            f"{k} {v['err_over_tol']:.3g}/{v['rel_err']:.1e}" for k, v in row["errors"].items()), flush=True)


def rounded_err(C, A, B, prec: str) -> float:
    """max |C - A' B'| / (2e-6 sqrt(K) |A'| |B'|) with A', B' the inputs rounded to ``prec`` ("tf32": to nearest,
    ties away; "bf16": kernels.gemm.mma_bf16's rounding) in float64: float32 sums of exact products pass (<= 1)."""
    if prec == "tf32":
        r = lambda x: ((x.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)  # noqa: E731
    else:
        from kernels.gemm import mma_bf16 as MB

        r = lambda x: MB.bf16_bits_to_float32(MB.to_bf16_bits(x))  # noqa: E731
    Af, Bf = r(A).astype(np.float64), r(B).astype(np.float64)
    if not np.isfinite(C).all():
        return float("inf")
    return float(np.max(np.abs(C - Af @ Bf) / (2e-6 * np.sqrt(A.shape[1]) * (np.abs(Af) @ np.abs(Bf)) + 1e-30)))


def time_shapes(b: Bench, rng, out: dict, shapes, budget):
    from kernels.gemm import tensor_core_3xtf32 as X
    from kernels.spec import dot_tolerance

    which = ["torch_fp32", "torch_tf32", "torch_bf16", "3xtf32", "3xtf32_tma", "auto_high", "auto_highest", "tf32_wgmma",
             "bf16_wgmma"]
    for shape in shapes:
        if time.perf_counter() - b.t0 > budget:
            print(f"time {fmt_shape(shape)}: skipped (budget)", flush=True)
            continue
        m, n, k = shape
        A, B = _normal(rng, (m, k)), _normal(rng, (k, n))
        row = {"shape": list(shape), "flops": 2 * m * n * k, "ms": {}, "check": {}}
        calls = b.calls(A, B, which, shape)
        row["auto_high_note"], row["auto_highest_note"] = calls.pop("auto_high:note"), calls.pop("auto_highest:note")
        ref = tol = None
        for name in which:
            f, read = calls[name]
            if name in ("3xtf32", "3xtf32_tma", "auto_high", "auto_highest"):  # first call: FP32's tolerance
                f()
                b.torch.cuda.synchronize()
                if ref is None:
                    ref = A.astype(np.float64) @ B.astype(np.float64)
                    tol = dot_tolerance(A, B, np.float32)
                row["check"][name] = b.errors(read(), ref, tol)
            elif name in ("tf32_wgmma", "bf16_wgmma"):  # first call, 64 rows against the rounded inputs' product
                f()
                b.torch.cuda.synchronize()
                row["check"][name] = rounded_err(read()[:64], A[:64], B, name[:4])
            row["ms"][name] = b.ms(f)
        if X.wgmma_here():
            name, s, per, why = X.plan(shape)
            row["plan"] = {"build": name, "splits": s, "slabs": per, "why": why}
            dA, dB = b.cuda.to_device(A), b.cuda.to_device(B)
            A2 = b.cuda.device_array((s * m, 2 * X.SLAB * per), np.int32)
            BT2 = b.cuda.device_array((s * n, 2 * X.SLAB * per), np.int32)
            sa, sb = X.prepass_launches(dA, dB, A2, BT2, per)
            row["ms"]["prepass"] = b.ms(lambda sa=sa, sb=sb: (sa(), sb()))
        ms = row["ms"]
        tf = {key: row["flops"] / v / 1e9 for key, v in ms.items() if key != "prepass"}
        row["tflops"] = tf
        print(f"time {fmt_shape(shape):18s} 2^{math.log2(row['flops']):.1f}: " + ", ".join(f"{k} {v:.1f}" for k, v in tf.items())
              + f"; 3xtf32 {ms['torch_fp32'] / ms['3xtf32']:.2f}x cuBLAS FP32 (TMA {ms['torch_fp32'] / ms['3xtf32_tma']:.2f}x), "
              f"auto {ms['torch_fp32'] / ms['auto_high']:.2f}x, tf32 {ms['torch_tf32'] / ms['tf32_wgmma']:.2f}x, "
              f"bf16 {ms['torch_bf16'] / ms['bf16_wgmma']:.2f}x"
              + (f"; pre-pass {ms['prepass']:.3f} of {ms['3xtf32']:.3f} ms" if "prepass" in ms else "")
              + f"; check err/tol 3x {row['check']['3xtf32']['err_over_tol']:.2f} auto {row['check']['auto_high']['err_over_tol']:.2f}",
              flush=True)
        out["time"].append(row)


def time_plans(b: Bench, rng, out: dict):
    from kernels.gemm import tensor_core_3xtf32 as X
    from kernels.gemm import tf32x3_tma as XT
    from kernels.spec import dot_tolerance

    cuda = b.cuda
    for shape in PLAN_SHAPES:
        m, n, k = shape
        A, B = _normal(rng, (m, k)), _normal(rng, (k, n))
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        slabs = -(-k // X.SLAB)
        res, err = {}, {}
        ref = A.astype(np.float64) @ B.astype(np.float64)
        tol = dot_tolerance(A, B, np.float32)
        for name in list(XT.TMA_BUILDS) + [X.WG_DEFAULT]:
            for s in (1, 2, 4, 8):
                if s > 1 and slabs < s * X.MIN_SLABS:
                    continue
                per = -(-slabs // s)
                s_eff = -(-slabs // per)
                C = cuda.to_device(np.full((m, n), np.nan, np.float32))
                f = (XT.wgmma_prepare if name in XT.TMA_BUILDS else X.wgmma_prepare)(dA, dB, C, s_eff, per, name)
                f()
                b.torch.cuda.synchronize()
                err[f"{name}/{s_eff}"] = b.errors(C.copy_to_host(), ref, tol)["err_over_tol"]
                res[f"{name}/{s_eff}"] = b.ms(f)
        chosen = X.plan(shape)
        out["plans"].append({"shape": list(shape), "ms": res, "err_over_tol": err, "chosen": f"{chosen[0]}/{chosen[1]}"})
        print(f"plans {fmt_shape(shape)}: " + ", ".join(f"{key} {v:.3f} ({err[key]:.2f})" for key, v in res.items())
              + f"; plan() {chosen[0]}/{chosen[1]}", flush=True)


def main_gpu(args):
    from kernels.gemm import tensor_core_3xtf32 as X
    from kernels.gemm import tf32x3_tma as XT

    b = Bench()
    rng = np.random.default_rng(args.seed)
    dev = b.cuda.get_current_device()
    import numba_cuda_mlir
    import torch

    out = {"device": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
           "date": time.strftime("%Y-%m-%d"), "seed": args.seed, "wgmma": X.wgmma_here(),
           "builds": {"3xtf32": X.WG_DEFAULT, "3xtf32_tma": XT.TMA_DEFAULT},
           "versions": {"python": sys.version.split()[0], "numba-cuda-mlir": numba_cuda_mlir.__version__,
                        "torch": torch.__version__, "numpy": np.__version__},
           "errors": [], "time": [], "plans": []}
    try:
        if not args.no_errors:
            check_cases(b, rng, out)
        if args.plans:
            time_plans(b, rng, out)
        shapes = SHAPES if not args.shapes else [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
        time_shapes(b, rng, out, shapes, args.budget)
    finally:
        print(f"{out['device']}; {time.perf_counter() - b.t0:.0f} s")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)


# --- the results file (docs/results/tensor-cores-3xtf32.json) from a raw run --------------------------------
def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _x(r, num, den):
    """torch's ms over the lab's (x torch: above 1 the lab is faster), None where either is missing."""
    ms = r["ms"]
    return ms[num] / ms[den] if num in ms and den in ms else None


def _target(x, flops, at30, at27):
    """x's cell with the issue's target for its FLOPs (``at30`` from 2^30, ``at27`` from 2^27)."""
    t = at30 if flops >= 2 ** 30 else at27 if flops >= 2 ** 27 else None
    return f"{x:.2f}x" + ("" if t is None else f" ({'met' if x >= t else 'MISSED'} {t})")


def _summary(xs, what):
    return f"{what}: geometric mean **{geomean(xs):.2f}x**, worst {min(xs):.2f}x over {len(xs)}" if xs else f"{what}: none"


def render(raw: dict) -> dict:
    """The docs/results document (scripts/benchmarks_md.py's format) of a raw run."""
    builds = raw.get("builds", {"3xtf32": "k16s6"})
    names = {"3xtf32": f"tensor_core_3xtf32 ({builds['3xtf32']})", "3xtf32_tma": f"its TMA build ({builds.get('3xtf32_tma', '')})",
             "3xtf32_mma": "3xTF32 mma.sync build", "tf32_wgmma": "tensor_core_wgmma_tf32 (TF32)",
             "auto_highest": "SIMT FP32 auto (highest)", "torch_fp32": "cuBLAS FP32", "torch_tf32": "cuBLAS TF32"}
    names = {k: v for k, v in names.items() if all(k in r["errors"] for r in raw["errors"])}
    err_rows = [[r["case"], fmt_shape(r["shape"])] + [f"{r['errors'][k]['err_over_tol']:.3g} ({r['errors'][k]['rel_err']:.1e})"
                                                       for k in names] for r in raw["errors"]]
    from kernels.gemm import tensor_core_3xtf32 as X

    rows, r3, r3big, ra, rt, rb, rt27, rb27, rtma, worst = [], [], [], [], [], [], [], [], [], []
    for r in raw["time"]:
        ms, f, tf = r["ms"], r["flops"], r["tflops"]
        m, n, _ = r["shape"]
        # auto now (float32, precision high, on this GPU): the rung where auto_route's measured rule takes it, else
        # the SIMT auto (precision highest), each timed in this run
        takes = f >= X.AUTO_MIN_FLOPS and m * n >= X.AUTO_MIN_MN_RATIO * (m + n)
        auto_ms = ms["3xtf32"] if takes else ms["auto_highest"]
        tf["auto_now"] = f / auto_ms / 1e9
        x3, xa = ms["torch_fp32"] / ms["3xtf32"], ms["torch_fp32"] / auto_ms
        xt, xb, xtma = _x(r, "torch_tf32", "tf32_wgmma"), _x(r, "torch_bf16", "bf16_wgmma"), _x(r, "torch_fp32", "3xtf32_tma")
        if f >= 2 ** 30:
            r3.append(x3)
            ra.append(xa)
            rt += [xt] if xt else []
            rb += [xb] if xb else []
            rtma += [xtma] if xtma else []
        if f >= 2 ** 32:
            r3big.append(x3)
        if f >= 2 ** 27:
            rt27 += [xt] if xt else []
            rb27 += [xb] if xb else []
        rows.append([fmt_shape(r["shape"]), f"2^{math.log2(f):.1f}", f"{tf['torch_fp32']:.1f}", f"{tf['torch_tf32']:.1f}",
                     f"{tf['torch_bf16']:.1f}" if "torch_bf16" in tf else "",
                     f"{tf['3xtf32']:.1f}", _target(x3, f, 1.0, None) if f < 2 ** 32 else _target(x3, f, 1.3, None),
                     f"{tf['3xtf32_tma']:.1f} ({xtma:.2f}x)" if xtma else "",
                     f"{ms.get('prepass', 0):.3f} / {ms['3xtf32']:.3f}",
                     (f"{r['plan']['splits']} K range" + ("s" if r["plan"]["splits"] > 1 else "")) if "plan" in r else "",
                     f"{tf['auto_now']:.1f} ({xa:.2f}x, {'3xTF32' if takes else 'SIMT'})", f"{tf['auto_highest']:.1f}",
                     f"{tf['tf32_wgmma']:.1f} ({_target(xt, f, 0.9, 0.75)})" if xt else f"{tf['tf32_wgmma']:.1f}",
                     f"{tf['bf16_wgmma']:.1f} ({_target(xb, f, 0.9, 0.75)})" if xb else "",
                     f"{r['check']['3xtf32']['err_over_tol']:.2f}"])
        worst.append(max(v["err_over_tol"] for k, v in r["check"].items() if k in ("3xtf32", "3xtf32_tma", "auto_highest")))
    text = (f"{raw['device']}. {_summary(r3, 'tensor_core_3xtf32 (build ' + builds['3xtf32'] + ') against cuBLAS FP32 (torch.matmul, TF32 off) from 2^30 FLOPs')} "
            f"(from 2^32: {geomean(r3big):.2f}x, worst {min(r3big):.2f}x; target 1.3x met at {sum(x >= 1.3 for x in r3big)} of "
            f"{len(r3big)}; 1.0x from 2^30 met at {sum(x >= 1.0 for x in r3)} of {len(r3)}); "
            + (f"{_summary(rtma, 'its TMA build ' + builds.get('3xtf32_tma', ''))}; " if rtma else "")
            + f"{_summary(ra, 'float32 `auto` (precision high, the default; kernels.gemm.tensor_core_3xtf32.auto_route: 3xTF32 from 2^' + str(X.AUTO_MIN_FLOPS.bit_length() - 1) + ' FLOPs where M N / (M + N) >= ' + str(X.AUTO_MIN_MN_RATIO) + ', else SIMT)')}. "
            f"{_summary(rt, 'tensor_core_wgmma_tf32 (its pre-pass inside the call) against torch TF32 from 2^30')} (target 0.9x; "
            f"from 2^27: {geomean(rt27):.2f}x, worst {min(rt27):.2f}x, target 0.75x)"
            + (f"; {_summary(rb, 'tensor_core_wgmma (bf16; A and B rounded and padded once by prepare, outside the call) against torch bf16 (bf16 tensors made once, bf16 C) from 2^30')} "
               f"(from 2^27: {geomean(rb27):.2f}x, worst {min(rb27):.2f}x). " if rb else ". ")
            + "cuBLAS at these ragged shapes: rows of 3210 or 1300 bf16 elements are not 16-byte multiples, where cuBLAS's "
            "bf16 and TF32 kernels run far below their 4096^3 rates. The 3xTF32 pre-pass (A and B split into TF32 big and "
            "small parts, B transposed: 12 bytes an element moved) is inside every call. Every 3xTF32 and SIMT call checked "
            f"at the FP32 tolerance (kernels.spec.dot_tolerance, the SIMT rungs'): worst {max(worst):.2f} of the bound; the "
            "TF32 and bf16 rungs' first 64 rows against their rounded inputs' float64 product. Times: the median ms a call "
            "of lab.core.timing's Timer (CUDA events, L2 flushed before each call), all contenders in one process; TFLOP/s "
            "= 2 M N K / time. Raw: docs/data/tf32x3_h200.json" + (f" ({raw['notes']})" if raw.get("notes") else "") + ".")
    cols = ["M x N x K", "FLOPs", "cuBLAS FP32", "cuBLAS TF32", "cuBLAS bf16", "tensor_core_3xtf32", "x cuBLAS FP32 (target)",
            f"TMA build {builds.get('3xtf32_tma', '')} (x FP32)", "pre-pass / call ms", "plan", "auto (x cuBLAS FP32)",
            "SIMT auto (highest)", "TF32 wgmma (x torch TF32)", "bf16 wgmma (x torch bf16)", "err / FP32 tol"]
    ecols = ["inputs", "M x N x K"] + list(names.values())
    blocks = [{"text": text}, {"table": {"columns": cols, "align": ["left"] + ["right"] * (len(cols) - 1), "rows": rows}}]
    if raw.get("plans"):
        keys = list(dict.fromkeys(k for p in raw["plans"] for k in p["ms"]))
        blocks += [{"heading": "Builds and K ranges (ms a call, pre-pass included; err / FP32 tol in brackets)"},
                   {"table": {"columns": ["M x N x K", "plan()"] + keys, "align": ["left"] * 2 + ["right"] * len(keys),
                              "rows": [[fmt_shape(p["shape"]), p["chosen"]] + [f"{p['ms'][k]:.3f} ({p['err_over_tol'][k]:.2f})"
                                                                                if k in p["ms"] else "" for k in keys]
                                       for p in raw["plans"]]}}]
    if raw.get("variants"):
        v = raw["variants"]
        blocks += [{"heading": "More TMA builds (a second call)"}, {"text": v["note"] + "."},
                   {"table": {"columns": ["build", "M x N x K", "K ranges", "ms", "TFLOP/s", "err / FP32 tol"],
                              "align": ["left"] * 3 + ["right"] * 3,
                              "rows": [key.split(" ") + [f"{r['ms']:.3f}", f"{r['tflops']:.1f}", f"{r['err_over_tol']:.2f}"]
                                       for key, r in v["ms"].items()]}}]
    blocks += [{"heading": "Errors against float64: the largest |C - ref| / FP32 tolerance (<= 1 passes), normwise relative error in brackets"},
               {"text": "Fresh inputs a case, C poisoned first; the tolerance is the FP32 one every SIMT rung is held to "
                        "(kernels.spec.dot_tolerance). TF32 alone (and cuBLAS with TF32 on) fails it on the lab's own "
                        "check cases; 3xTF32 passes where its split stays in float32's normal range."},
               {"table": {"columns": ecols, "align": ["left"] * 2 + ["right"] * len(names), "rows": err_rows}}]
    return {"title": "3xTF32, TF32 and bf16 on tensor cores beside cuBLAS (`python scripts/tf32x3_bench.py`)", "order": 47,
            "device": raw["device"], "date": raw["date"], "versions": raw["versions"], "blocks": blocks}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the raw results here (GPU run)")
    ap.add_argument("--results", help="a raw JSON: write docs/results/tensor-cores-3xtf32.json and docs/data/tf32x3_h200.json")
    ap.add_argument("--plans", action="store_true")
    ap.add_argument("--no-errors", action="store_true")
    ap.add_argument("--shapes", help="MxNxK,... (default: SHAPES)")
    ap.add_argument("--budget", type=float, default=400.0, help="seconds; shapes past it are skipped")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    if args.results:
        raw = json.load(open(args.results))
        doc = render(raw)
        for path, data in ((os.path.join(ROOT, "docs", "results", "tensor-cores-3xtf32.json"), doc),
                           (os.path.join(ROOT, "docs", "data", "tf32x3_h200.json"), raw)):
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(data, f, indent=1)
                f.write("\n")
            os.replace(tmp, path)
        print(doc["blocks"][0]["text"])
        return
    os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
    main_gpu(args)


if __name__ == "__main__":
    main()
