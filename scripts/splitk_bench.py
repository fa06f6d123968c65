"""Check and time split-K (K ranges over grid z) for the wgmma TMA rungs, tensor_core_wgmma_tf32 and
tensor_core_wgmma (bf16), beside torch at the same precision; 1-3 minutes on an H200.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/splitk_bench.py --json splitk.json

1. Checks (``check``): each rung's TMA build forced onto S = 1, 2, 3 and 7 K ranges, the ranges summed by the
   reduction launch (atomic 0) or by ``red.global.add`` into a zeroed C (atomic 1: one float a red, 2: pairs
   by ``red.global.v2.f32.add``), at CHECK_SHAPES (M, N and K not multiples of the tile or slab; a last range
   shorter than the others), C poisoned with NaN first; each against the float64 product of the rounded inputs
   at the rung's tolerance (kernels.gemm.mma.rounded_inputs_tolerance: 10 mantissa bits TF32, 7 bf16; <= 1
   passes, a NaN fails). The workspace sum is checked to give the same bits on a second call; the normwise error
   against the rounded inputs' product is recorded.
2. Times (``time``): SHAPES (scripts/tf32x3_bench.py's 13 shapes named in no issue, and long-K extras), each the
   median ms a call of lab.core.timing's Timer (CUDA events, L2 flushed before each call, as ``lab run``), all in
   one process: torch TF32 and bf16 (bf16 tensors made once, as the bf16 rung rounds once), each rung *before*
   (one K range, the build the tile chooser picks: what main ran) and *as the rung runs now* (the launch's K
   ranges: ``lab run``'s launch and prepare), the TMA build at other S (the wave model's fit), the atomic sums at
   the chosen S, and the TF32 pre-pass alone (``--quick``: no sweep, the workspace sum at the chosen S only). The
   rung's first call is checked at its tolerance (64 rows).
Prints a table of x torch (torch's ms over the rung's) with geometric means, and writes JSON as it goes.

    python scripts/splitk_bench.py --results splitk.json [--confirm quick.json]   # docs/results + docs/data

renders a full sweep (no --quick: every S, the atomic sums) into docs/results/tensor-cores-splitk.json for
scripts/benchmarks_md.py, "now" being the rule as it stands (:func:`final_ms`), and a later --quick run's rows.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

CHECK_SHAPES = [(333, 517, 2051), (130, 1030, 4099), (600, 700, 20000)]
EXTRA = [(1000, 1000, 16384), (512, 512, 65536), (1024, 1024, 1024), (256, 2048, 8192)]
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def ms_of(fn, torch) -> float:
    from lab.core.stopping import StopRule
    from lab.core.timing import Timer

    return Timer(fn, "device", torch.cuda.synchronize).measure(rule=StopRule(min_time_s=0.02, time_limit_s=0.3)).median_ms


def rounded(x, tf32: bool):
    from kernels.gemm import mma_bf16 as MB

    if tf32:  # to nearest, ties away (cvt.rna.tf32.f32)
        return ((x.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return MB.bf16_bits_to_float32(MB.to_bf16_bits(x))


def rung_call(rung: str, dA, dB, C, shape, splits=None, atomic=None, before=False):
    """A zero-argument call of ``rung`` ("tf32" or "bf16") on device A, B into C: as ``lab run`` runs it
    (splits None), or its TMA build forced onto ``splits`` K ranges summed by ``atomic``, or ``before``: one
    range and the tile chooser's build (main's rung)."""
    import kernels
    from kernels.gemm import wgmma_tf32 as WT
    from kernels.gemm import wgmma_tma as T

    m, n, k = shape
    if rung == "tf32":
        if before:
            return WT.prepare(SimpleNamespace(grid=None), [dA, dB], [C], build=WT.choose_tile(shape)[0], splits=1)
        if splits is None:
            v = kernels.load("matmul").variants["tensor_core_wgmma_tf32"]
            return v.prepare(v.launch(shape, 384), [dA, dB], [C])
        return WT.prepare(SimpleNamespace(grid=None), [dA, dB], [C], build=WT.DEFAULT, splits=splits,
                          atomic=atomic or 0)
    bm, bn, _ = T.block_shape(T.BUILD)
    grid = (-(-n // bn), -(-m // bm))
    if before:
        return T.prepare(SimpleNamespace(grid=grid), [dA, dB], [C])
    if splits is None:
        v = kernels.load("matmul").variants["tensor_core_wgmma"]
        return v.prepare(v.launch(shape, 384), [dA, dB], [C])
    return T.prepare(SimpleNamespace(grid=grid + ((splits,) if splits > 1 else ())), [dA, dB], [C], atomic=atomic or 0)


_REFS: dict = {}


def _ref(A, B, tf32):
    """(A B in float64, the rung's tolerance, A' B' of the rounded inputs in float64), kept for the last inputs."""
    from kernels.gemm import mma
    from kernels.gemm import mma_bf16 as MB

    if not (_REFS.get("A") is A and _REFS.get("B") is B and _REFS.get("tf32") == tf32):
        Af, Bf = rounded(A, tf32).astype(np.float64), rounded(B, tf32).astype(np.float64)
        _REFS.update(A=A, B=B, tf32=tf32, refs=(A.astype(np.float64) @ B.astype(np.float64),
                     mma.rounded_inputs_tolerance(A, B, mma.TF32_MANTISSA if tf32 else MB.BF16_MANTISSA), Af @ Bf))
    return _REFS["refs"]


def err_over_tol(C, A, B, tf32: bool) -> float:
    """max |C - A B| / the rung's tolerance (A B in float64 from the float32 inputs; <= 1 passes, inf for a NaN)."""
    if not np.isfinite(C).all():
        return float("inf")
    ref, tol, _ = _ref(A, B, tf32)
    return float(np.max(np.abs(C - ref) / tol))


def rel_to_rounded(C, A, B, tf32: bool) -> float:
    """||C - A' B'|| / ||A' B'||, A' and B' the inputs as the rung rounds them (float64 product): the float32
    sums' own error (the tensor cores' truncating sums: it grows with a range's length, so it falls as 1 / S)."""
    ref = _ref(A, B, tf32)[2]
    return float(np.linalg.norm(C - ref) / np.linalg.norm(ref)) if np.isfinite(C).all() else float("inf")


def checks(out, cuda, rng):
    for rung in ("tf32", "bf16"):
        for shape in CHECK_SHAPES:
            m, n, k = shape
            A = rng.standard_normal((m, k)).astype(np.float32)
            B = rng.standard_normal((k, n)).astype(np.float32)
            dA, dB = cuda.to_device(A), cuda.to_device(B)
            for s in (1, 2, 3, 7):
                for atomic in ((0,) if s == 1 else (0, 1, 2)):
                    C = cuda.to_device(np.full((m, n), np.nan, np.float32))
                    row = {"rung": rung, "shape": list(shape), "splits": s, "atomic": atomic}
                    try:
                        f = rung_call(rung, dA, dB, C, shape, s, atomic)
                        f()
                        cuda.synchronize()
                        c1 = C.copy_to_host()
                        row["err_over_tol"] = err_over_tol(c1, A, B, rung == "tf32")
                        row["rel_to_rounded"] = rel_to_rounded(c1, A, B, rung == "tf32")
                        row["nan"] = int(np.isnan(c1).sum())
                        if atomic == 0:  # the workspace's sum: the same order, so the same bits, every call
                            f()
                            cuda.synchronize()
                            row["same_bits_twice"] = bool((C.copy_to_host().view(np.uint32) == c1.view(np.uint32)).all())
                        row["ok"] = row["err_over_tol"] <= 1 and row.get("same_bits_twice", True)
                    except Exception as e:
                        row["ok"], row["error"] = False, f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
                    out["check"].append(row)
                    print("check", json.dumps(row), flush=True)


def times(out, cuda, torch, rng, shapes, budget, t0, quick=False, save=lambda: None):
    from kernels.compiler import bound
    from kernels.gemm import wgmma_tf32 as WT
    from kernels.gemm import wgmma_tma as T
    from kernels.spec import sm_count

    for shape in shapes:
        if time.perf_counter() - t0 > budget:
            out["skipped"].append(list(shape))
            print("skipped (budget)", shape, flush=True)
            continue
        m, n, k = shape
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        dA, dB = cuda.to_device(A), cuda.to_device(B)
        row = {"shape": list(shape), "flops": 2 * m * n * k, "ms": {}, "check": {}, "plan": {}}
        tA, tB = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
        tC = torch.empty(m, n, device="cuda")
        tAh, tBh = tA.bfloat16(), tB.bfloat16()
        tCh = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

        def tf32_torch(tA=tA, tB=tB, tC=tC):
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.matmul(tA, tB, out=tC)

        row["ms"]["torch_tf32"] = ms_of(tf32_torch, torch)
        torch.backends.cuda.matmul.allow_tf32 = False
        row["ms"]["torch_bf16"] = ms_of(lambda tAh=tAh, tBh=tBh, tCh=tCh: torch.matmul(tAh, tBh, out=tCh), torch)
        bm, bn, _ = T.block_shape(T.BUILD)
        for rung in ("tf32", "bf16"):
            tf = rung == "tf32"
            kk = WT.padded(k) if tf else -(-k // T.PAD) * T.PAD
            chosen, per, est = T.k_splits(m, n, kk, bm, bn, tf, sm_count())
            row["plan"][rung] = {"splits": chosen, "slabs": per, "est_us": est}
            if tf:
                row["plan"][rung]["build"] = WT.plan(shape)[0]
            C = cuda.device_array((m, n), np.float32)
            f = rung_call(rung, dA, dB, C, shape)
            f()
            cuda.synchronize()
            A64 = A[:64].copy()  # 64 rows: the CPU's time
            row["check"][rung] = err_over_tol(C.copy_to_host()[:64], A64, B, tf)
            row["ms"][f"{rung}_now"] = ms_of(f, torch)
            row["ms"][f"{rung}_before"] = ms_of(rung_call(rung, dA, dB, C, shape, before=True), torch)
            slabs = -(-kk // T.slab_k(tf))
            tiles = -(-m // bm) * -(-n // bn)
            for s in ((chosen,) if quick and chosen > 1 else () if quick else SPLITS):
                per_s = -(-slabs // s)
                s_eff = -(-slabs // per_s)
                if s_eff != s or (s > 1 and (per_s < T.SPLIT_MIN_SLABS or tiles * s > 2 * sm_count())):
                    continue
                row["ms"][f"{rung}_S{s}"] = ms_of(rung_call(rung, dA, dB, C, shape, s, 0), torch)
            if chosen > 1 and not quick:
                for atomic in (1, 2):
                    g = rung_call(rung, dA, dB, C, shape, chosen, atomic)
                    g()
                    cuda.synchronize()
                    row["check"][f"{rung}_atomic{atomic}"] = err_over_tol(C.copy_to_host()[:64], A64, B, tf)
                    row["ms"][f"{rung}_atomic{atomic}"] = ms_of(g, torch)
        kp = WT.padded(k)
        Ar, BT = cuda.device_array((m, kp), np.int32), cuda.device_array((n, kp), np.int32)
        rnd = bound(WT.tf32_round[WT.round_grid(m, kp), WT.ROUND_BLOCK], (dA, Ar))
        trans = bound(WT.tf32_transpose[(-(-kp // WT.TILE), -(-n // WT.TILE)), (WT.TILE, WT.ROWS)], (dB, BT))
        row["ms"]["tf32_prepass"] = ms_of(lambda rnd=rnd, trans=trans: (rnd(), trans()), torch)
        ms = row["ms"]
        print(f"time {m}x{n}x{k}: plan tf32 {row['plan']['tf32']['splits']} ({row['plan']['tf32']['build']}), bf16 "
              f"{row['plan']['bf16']['splits']}; " + ", ".join(f"{key} {v:.4f}" for key, v in ms.items())
              + f"; tf32 x torch {ms['torch_tf32'] / ms['tf32_before']:.2f} -> {ms['torch_tf32'] / ms['tf32_now']:.2f}, "
              f"bf16 {ms['torch_bf16'] / ms['bf16_before']:.2f} -> {ms['torch_bf16'] / ms['bf16_now']:.2f}; check "
              + " ".join(f"{key} {v:.2f}" for key, v in row["check"].items()), flush=True)
        out["time"].append(row)
        save()


def summary(out) -> str:
    lines = [f"x torch at the same precision (torch ms / the rung's), {out['device']}, median ms a call, one process",
             f"{'M x N x K':>18} {'S tf32':>6} {'TF32 before':>11} {'TF32 now':>9} {'S bf16':>6} {'bf16 before':>11} "
             f"{'bf16 now':>9}"]
    cols = {"tf32_before": [], "tf32_now": [], "bf16_before": [], "bf16_now": []}
    for r in out["time"]:
        ms = r["ms"]
        x = {key: ms["torch_" + key[:4]] / ms[key] for key in cols}
        for key in cols:
            cols[key].append(x[key])
        m, n, k = r["shape"]
        lines.append(f"{f'{m}x{n}x{k}':>18} {r['plan']['tf32']['splits']:>6} {x['tf32_before']:>11.2f} {x['tf32_now']:>9.2f} "
                     f"{r['plan']['bf16']['splits']:>6} {x['bf16_before']:>11.2f} {x['bf16_now']:>9.2f}")
    g = {key: geomean(v) for key, v in cols.items()}
    lines.append(f"{'geometric mean':>18} {'':>6} {g['tf32_before']:>11.2f} {g['tf32_now']:>9.2f} {'':>6} "
                 f"{g['bf16_before']:>11.2f} {g['bf16_now']:>9.2f}")
    lines.append(f"{'worst':>18} {'':>6} {min(cols['tf32_before']):>11.2f} {min(cols['tf32_now']):>9.2f} {'':>6} "
                 f"{min(cols['bf16_before']):>11.2f} {min(cols['bf16_now']):>9.2f}")
    return "\n".join(lines)


def _fmt(shape):
    m, n, k = shape
    return f"{m}^3" if m == n == k else f"{m}x{n}x{k}"


def final_ms(r: dict, rung: str):
    """(S, ms, note) of the rule as it stands (kernels.gemm.wgmma_tf32.plan, wgmma_tma.k_splits on 132 SMs with
    the atomic sum) at run row ``r`` of a full sweep: one range is the ``before`` configuration (the same build
    and grid); S ranges are the atomic sum's time at that S (``{rung}_atomic2``, timed at the S the first
    rule chose), else the nearest S timed with it, said in the note."""
    from unittest import mock

    from kernels.gemm import wgmma_tf32 as WT
    from kernels.gemm import wgmma_tma as T

    m, n, k = r["shape"]
    if rung == "tf32":
        with mock.patch.object(WT, "sm_count", lambda: 132):
            s = WT.plan((m, n, k))[1]
    else:
        bm, bn, _ = T.block_shape(T.BUILD)
        s = T.k_splits(m, n, -(-k // T.PAD) * T.PAD, bm, bn, False, 132)[0]
    ms = r["ms"]
    if s == 1:
        return s, ms[f"{rung}_before"], ""
    timed = r["plan"][rung]["splits"]  # the S its atomic sums were timed at
    note = "" if timed == s else f" (S = {timed}: S = {s} not timed with the atomic sum)"
    return s, ms[f"{rung}_atomic{T.ATOMIC}"], note


def render(raw: dict, confirm: dict | None = None) -> dict:
    """The docs/results document (scripts/benchmarks_md.py's format) of a full sweep (no --quick; and the rows of
    a later ``confirm`` run)."""
    from tf32x3_bench import SHAPES

    named = {tuple(s) for s in SHAPES}
    rows, cols = [], {key: [] for key in ("tf32_before", "tf32_now", "bf16_before", "bf16_now")}
    big = {key: [] for key in cols}  # from 2^30 FLOPs (the issue's targets' range)
    notes = []
    for r in raw["time"]:
        ms, f = r["ms"], r["flops"]
        cell = {}
        for rung in ("tf32", "bf16"):
            s, now, note = final_ms(r, rung)
            xb, xn = ms["torch_" + rung] / ms[rung + "_before"], ms["torch_" + rung] / now
            if tuple(r["shape"]) in named:
                cols[rung + "_before"].append(xb)
                cols[rung + "_now"].append(xn)
                if f >= 2 ** 30:
                    big[rung + "_before"].append(xb)
                    big[rung + "_now"].append(xn)
            if note:
                notes.append(f"{_fmt(r['shape'])} {rung}{note}")
            ws = ms.get(f"{rung}_S{s}") if s > 1 else None
            cell[rung] = [str(s), f"{ms[rung + '_before']:.4f} ({xb:.2f}x)", f"**{now:.4f} ({xn:.2f}x)**" + ("*" if note else ""),
                          f"{ws:.4f}" if ws else ""]
        rows.append([_fmt(r["shape"]) + ("" if tuple(r["shape"]) in named else " (extra)"), f"2^{math.log2(f):.1f}",
                     f"{ms['torch_tf32']:.4f}", *cell["tf32"], f"{ms['tf32_prepass']:.4f}", f"{ms['torch_bf16']:.4f}",
                     *cell["bf16"], f"{max(v for v in r['check'].values()):.2f}"])
    g = {key: geomean(v) for key, v in cols.items()}
    w = {key: min(v) for key, v in cols.items()}
    gb = {key: geomean(v) for key, v in big.items()}
    wb = {key: min(v) for key, v in big.items()}
    checks = raw.get("check", [])
    text = (f"{raw['device']}, {raw['date']}. Split-K for the wgmma TMA rungs (kernels/gemm/wgmma_tma.py: K ranges over "
            "grid z, `k_splits()`'s wave model picks S, the partial tiles added by `red.global.v2.f32.add` into a "
            f"zeroed C). Over the {len(cols['tf32_now'])} shapes of scripts/tf32x3_bench.py (named in no issue): "
            f"**tensor_core_wgmma_tf32 against torch TF32 {g['tf32_before']:.2f}x -> {g['tf32_now']:.2f}x** (geometric "
            f"mean; worst {w['tf32_before']:.2f}x -> {w['tf32_now']:.2f}x), **tensor_core_wgmma (bf16) against torch bf16 "
            f"{g['bf16_before']:.2f}x -> {g['bf16_now']:.2f}x** (worst {w['bf16_before']:.2f}x -> {w['bf16_now']:.2f}x); "
            f"from 2^30 FLOPs ({len(big['tf32_now'])} shapes) TF32 {gb['tf32_before']:.2f}x -> {gb['tf32_now']:.2f}x (worst "
            f"{wb['tf32_before']:.2f}x -> {wb['tf32_now']:.2f}x), bf16 {gb['bf16_before']:.2f}x -> {gb['bf16_now']:.2f}x "
            f"(worst {wb['bf16_before']:.2f}x -> {wb['bf16_now']:.2f}x). "
            "Before: one K range, the build the tile chooser picks (what main ran); now: the S the rule picks (S = 1: "
            "the same configuration as before) with the atomic sum, each timed in one process beside torch in the "
            "sweep the rule was fitted on -- "
            + ("; ".join(notes) + " (*)" if notes else "every configuration timed as it runs") + ". "
            "Each cell ms a call and x torch at the same precision (torch's ms over the rung's): the median of "
            "lab.core.timing's Timer (CUDA events, L2 flushed before each call). The TF32 rung's pre-pass (A rounded, B "
            "transposed and rounded) is inside its call and timed alone beside it; the bf16 rung rounds and pads once, "
            "outside the call, and torch's bf16 runs on bf16 tensors made once. Workspace: the same S summed by a "
            "float32 workspace and kernels.gemm.split_k's reduction launch (the same bits every call) instead. err: the "
            "rung's first call (the rule then), 64 rows, over its tolerance (kernels.gemm.mma.rounded_inputs_tolerance; "
            f"<= 1 passes); before the times, every S of 1, 2, 3, 7 with each sum at ragged shapes, C poisoned "
            f"({len(checks)} checks, worst {max((c['err_over_tol'] for c in checks), default=float('nan')):.2f} of the "
            "tolerance). Raw: docs/data/splitk_h200.json.")
    columns = ["M x N x K", "FLOPs", "torch TF32", "S (TF32)", "TF32 before", "TF32 now", "workspace", "pre-pass",
               "torch bf16", "S (bf16)", "bf16 before", "bf16 now", "workspace", "err / tol"]
    blocks = [{"text": text}, {"table": {"columns": columns, "align": ["left"] + ["right"] * (len(columns) - 1),
                                         "rows": rows}}]
    keys = [f"S{s}" for s in SPLITS]
    frows = []
    for r in raw["time"]:
        for rung in ("tf32", "bf16"):
            ms = r["ms"]
            if not any(f"{rung}_S{s}" in ms for s in SPLITS[1:]):
                continue
            pre = ms["tf32_prepass"] if rung == "tf32" else 0.0
            frows.append([_fmt(r["shape"]), rung] + [f"{1000 * (ms[f'{rung}_{k}'] - pre):.1f}" if f"{rung}_{k}" in ms else ""
                                                     for k in keys]
                         + [f"{1000 * (ms[f'{rung}_atomic{a}'] - pre):.1f}" if f"{rung}_atomic{a}" in ms else "" for a in (1, 2)])
    blocks += [{"heading": "The fit: us a call at each S (TF32's pre-pass subtracted), the sums compared"},
               {"text": "The TMA build on S K ranges summed by the workspace and its reduction launch, and at the S the "
                        "first rule chose by `red.global.add.f32` (red 1) and `red.global.v2.f32.add` (red 2): the data "
                        "`k_splits()`'s constants come from (kernels/gemm/wgmma_tma.py)."},
               {"table": {"columns": ["M x N x K", "rung"] + keys + ["red 1", "red 2"],
                          "align": ["left"] * 2 + ["right"] * (len(keys) + 2), "rows": frows}}]
    if confirm and confirm.get("time"):
        crow = [[_fmt(r["shape"]), f"{r['ms']['torch_tf32']:.4f}", f"{r['ms']['tf32_now']:.4f}", f"{r['ms']['torch_bf16']:.4f}",
                 f"{r['ms']['bf16_now']:.4f}"] for r in confirm["time"]]
        blocks += [{"heading": "A second call (the same day and GPU), the rule as it stands"},
                   {"text": "Only the shapes it reached before its time limit (the kernels' compiles took the rest)."},
                   {"table": {"columns": ["M x N x K", "torch TF32", "TF32 now", "torch bf16", "bf16 now"],
                              "align": ["left"] + ["right"] * 4, "rows": crow}}]
    versions = {"torch": raw.get("torch", ""), "numba-cuda-mlir": "0.6.0"}
    return {"title": "Split-K for the wgmma rungs (`python scripts/splitk_bench.py`)", "order": 48,
            "device": raw["device"], "date": raw["date"], "versions": versions, "blocks": blocks}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="splitk.json")
    ap.add_argument("--budget", type=float, default=150.0, help="seconds; shapes still to time after it are skipped")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--quick", action="store_true", help="no sweep of S: the rung now, before, and the workspace sum at its S")
    ap.add_argument("--shapes", help="MxNxK,... (default: tf32x3_bench's SHAPES and EXTRA)")
    ap.add_argument("--results", help="a raw JSON: write docs/results/tensor-cores-splitk.json and docs/data/splitk_h200.json")
    ap.add_argument("--confirm", help="with --results: the raw JSON of a later --quick run")
    args = ap.parse_args()
    if args.results:
        raw = json.load(open(args.results))
        confirm = json.load(open(args.confirm)) if args.confirm else None
        doc = render(raw, confirm)
        data = {"run": raw, "confirm": confirm}
        for path, obj in ((os.path.join(ROOT, "docs", "results", "tensor-cores-splitk.json"), doc),
                          (os.path.join(ROOT, "docs", "data", "splitk_h200.json"), data)):
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(obj, f, indent=1)
                f.write("\n")
            os.replace(tmp, path)
        print(doc["blocks"][0]["text"])
        return
    os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
    import torch

    from kernels.compiler import cuda
    from tf32x3_bench import SHAPES

    t0 = time.perf_counter()
    shapes = (list(SHAPES) + EXTRA) if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    out = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "timing": "lab.core.timing.Timer (median ms a call, L2 flushed before each)", "check": [], "time": [],
           "skipped": []}
    rng = np.random.default_rng(2026)

    def save():
        out["seconds"] = round(time.perf_counter() - t0, 1)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)

    try:
        if not args.no_check:
            checks(out, cuda, rng)
        times(out, cuda, torch, rng, shapes, args.budget, t0, args.quick, save)
    finally:
        save()
    bad = [c for c in out["check"] if not c["ok"]]
    print("checks:", "all passed" if not bad else f"{len(bad)} FAILED", f"({len(out['check'])})")
    if out["time"]:
        print(summary(out))
    print(f"{out['seconds']} s")


if __name__ == "__main__":
    main()
