"""Check and time the tensor_core_bf16 matmul rung on a GPU against torch's bfloat16 matmul; under 90 s.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/bf16_bench.py [--builds default,w64,...] [--json out.json]

1. Probes of the instructions, one warp each: ``ldmatrix.x4`` and ``.x4.trans`` on a 16 x 16 tile of known
   codes, compared element by element with the m16n8k16 fragment layout (kernels.gemm.mma_bf16); one
   ``mma.sync`` m16n8k16 against the float64 product of its bf16 tiles.
2. The rung at shapes that are not multiples of its 128 x 128 x 32 tile (K or N not a multiple of 8 takes
   the plain-load path), fresh random float32 inputs rounded to bf16, C poisoned (NaN) first, checked
   against the float64 reference of the float32 inputs with the bf16 tolerance
   (kernels.gemm.mma.rounded_inputs_tolerance, 7 mantissa bits); torch.matmul on the same bf16 tensors
   is held to the same tolerance. Then each candidate build of ``--builds`` (BUILDS below: make_bf16_kernel
   keywords over its defaults; "default" is the rung's TC.BUILD) at 777 x 1336 x 904 the same way; one that fails is not timed.
3. TFLOP/s at 4096^3 and 2048^3: the median ms a call of lab.core.timing's Timer, as ``lab run`` times (CUDA events a call, queued behind the blocking kernel, L2 flushed before each call),
   after a warm-up; torch.matmul(A.bfloat16(), B.bfloat16()) the same way
   (cuBLAS; it writes a bf16 C, the rung a float32 C); each build's 4096^3 output (C poisoned first) is
   checked on its first 64 rows (``rel err``). Prints one table; ``--json`` writes the numbers. Builds past
   ``--budget`` seconds are skipped. Switching the rung to the fastest build is TC.BUILD's one line.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernels.compiler import cuda, float32, uint16  # noqa: E402  (after LAB_COMPILER is set)
from kernels.gemm import mma, mma_bf16 as MB, tensor_core_bf16 as TC  # noqa: E402
from kernels.gemm.build_options import ALIGN  # noqa: E402

CHECK_SHAPES = [(1000, 1030, 517), (257, 4099, 136), (777, 1333, 904)]
TIME_SHAPES = [(4096, 4096, 4096), (2048, 2048, 2048)]
# Candidates: make_bf16_kernel keywords over its defaults ("default" is the rung's TC.BUILD), each checked at BUILD_CHECK and on the timed 4096^3 output.
BUILDS = {
    "default": dict(),  # the rung's TC.BUILD (w64k32s4dyn, the fastest measured)
    "w32": dict(),  # the module's defaults, the first build: 8 warps of 64 x 32, 128 x 128 block, BK 32, 2 stages
    "generic": dict(aligned=False),  # the same with the general loads (the previous default's address math)
    "mb1": dict(min_blocks=1),  # no 128-register cap (one block an SM)
    "w64": dict(warps_m=2, warps_n=2, nt=8),  # 4 warps of 64 x 64 (128 accumulators), 128 x 128 block
    "w64k16s4": dict(warps_m=2, warps_n=2, nt=8, bk=16, stages=4),
    "w64x8": dict(warps_m=2, warps_n=4, nt=8, bk=16, stages=3, min_blocks=1),  # 8 warps of 64 x 64, 128 x 256
    "bk16s4": dict(bk=16, stages=4),
    # dynamic shared memory past 48 KB (the kernel opts in on its first launch): deeper K-slab pipelines
    "k32s4dyn": dict(stages=4, dynamic=True),  # 8 warps of 64 x 32, BK 32, 4 stages: 74 KB
    "w64k32s4dyn": dict(warps_m=2, warps_n=2, nt=8, stages=4, dynamic=True),  # 4 warps of 64 x 64: 74 KB
    "w64x8k32s3dyn": dict(warps_m=2, warps_n=4, nt=8, stages=3, dynamic=True, min_blocks=1),  # 128 x 256: 80 KB
}
BUILD_CHECK = (777, 1336, 904)  # K, N multiples of 8 (the timed path), M not a multiple of the block


def build_launch(name, m, n, k):
    """f(A, B, C): candidate ``name`` launched for an m x n x k product (TC.configured: its grid, block and
    dynamic shared memory)."""
    build = dict(TC.BUILD) if name == "default" else dict(BUILDS[name])  # a candidate: over the module's defaults
    bm, bn, threads = TC.tile_shape(**{key: v for key, v in build.items() if key in ("warps_m", "warps_n", "mt", "nt")})
    grid = ((n + bn - 1) // bn, (m + bm - 1) // bm)
    return TC.configured(TC.make_bf16_kernel(**{"aligned": k % 8 == 0 and n % 8 == 0, **build}), grid, (threads,), build)


def rounds_ms(fn, torch, budget_s=6.0):
    """Median ms a call of ``fn`` (it enqueues on the default stream): lab.core.timing's Timer, as ``lab run`` times: CUDA events, one pair a call, calls queued behind the blocking kernel, L2 flushed before each; its stop rule, at most ``budget_s`` s."""
    from lab.core.stopping import StopRule
    from lab.core.timing import Timer

    return Timer(fn, "device", torch.cuda.synchronize).measure(warmup=3, rule=StopRule(time_limit_s=budget_s)).median_ms


@cuda.jit
def one_mma(A, B, C):
    s = cuda.shared.array(256, uint16, alignment=ALIGN)
    sb = cuda.shared.array(128, uint16, alignment=ALIGN)
    lane = cuda.threadIdx.x
    for e in range(8):
        s[lane * 8 + e] = A[lane * 8 + e]
    for e in range(4):
        sb[lane * 4 + e] = B[lane * 4 + e]
    cuda.syncthreads()
    a0, a1, a2, a3 = MB.ldmatrix_x4(MB.shared_base(s), (lane % 16) * 16 + (lane // 16) * 8)
    # B is 16 x 8 (k x n), rows of 8: lanes 0..15 point at rows 0..15 (x4.trans over n 0..7 twice)
    b0, b1, b2, b3 = MB.ldmatrix_x4_trans(MB.shared_base(sb), (lane % 16) * 8)
    z = float32(0.0)
    d0, d1, d2, d3 = MB.mma_bf16(a0, a1, a2, a3, b0, b1, z, z, z, z)
    g = lane // 4
    q = lane % 4
    C[g, 2 * q] = d0
    C[g, 2 * q + 1] = d1
    C[g + 8, 2 * q] = d2
    C[g + 8, 2 * q + 1] = d3


def probes(out):
    bad, bad_t = MB.ldmatrix_probe_wrong()  # registers (of 128) unlike the mma fragments
    out["probes"]["ldmatrix_x4 wrong registers (of 128)"] = bad
    out["probes"]["ldmatrix_x4_trans wrong registers (of 128)"] = bad_t

    rng = np.random.default_rng(3)
    A = MB.to_bf16_bits(rng.standard_normal((16, 16)).astype(np.float32))
    B = MB.to_bf16_bits(rng.standard_normal((16, 8)).astype(np.float32))
    dC = cuda.to_device(np.full((16, 8), np.nan, np.float32))
    one_mma[1, 32](cuda.to_device(A.ravel()), cuda.to_device(B.ravel()), dC)
    C = dC.copy_to_host()
    ref = MB.bf16_bits_to_float32(A).astype(np.float64) @ MB.bf16_bits_to_float32(B)
    out["probes"]["mma m16n8k16 max |D - ref|"] = float(np.nanmax(np.abs(C - ref)))
    out["probes"]["mma NaN"] = int(np.isnan(C).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--builds", default="default,w32,w64,k32s4dyn,w64k32s4dyn,w64x8k32s3dyn,w64k16s4,w64x8,mb1,generic",
                    help=",".join(BUILDS))
    ap.add_argument("--json", default=None)
    ap.add_argument("--budget", type=float, default=85.0)
    ap.add_argument("--check", default=",".join("x".join(map(str, s)) for s in CHECK_SHAPES), help="MxNxK,...")
    ap.add_argument("--time", default=",".join("x".join(map(str, s)) for s in TIME_SHAPES), help="MxNxK,...")
    args = ap.parse_args()
    check_shapes = [tuple(int(v) for v in s.split("x")) for s in args.check.split(",") if s]
    time_shapes = [tuple(int(v) for v in s.split("x")) for s in args.time.split(",") if s]
    t_start = time.time()
    import torch

    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "probes": {}, "checks": [], "times": []}
    try:
        probes(out)
    except Exception as e:
        out["probes"]["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:600]}"
    print("probes:", json.dumps(out["probes"]), flush=True)

    rng = np.random.default_rng()
    ok_all = True
    for (m, n, k) in check_shapes:
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        tol = mma.rounded_inputs_tolerance(A, B, MB.BF16_MANTISSA)
        dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
        t0 = time.perf_counter()
        build_launch("default", m, n, k)(  # BUILD's kernel on the unpadded bits: its general loads where K, N are ragged
            cuda.to_device(MB.to_bf16_bits(A)), cuda.to_device(MB.to_bf16_bits(B)), dC)
        cuda.synchronize()
        first = time.perf_counter() - t0
        C = dC.copy_to_host()
        err = np.abs(C.astype(np.float64) - ref)
        ok = bool(np.all(err <= tol))  # NaN (an element never written) fails
        ok_all &= ok
        r16 = MB.round_bf16(A).astype(np.float64) @ MB.round_bf16(B).astype(np.float64)
        tC = torch.matmul(torch.from_numpy(A).cuda().bfloat16(), torch.from_numpy(B).cuda().bfloat16()).float().cpu().numpy()
        terr = np.abs(tC.astype(np.float64) - ref)
        out["checks"].append({"shape": [m, n, k], "ok": ok, "nan": int(np.isnan(C).sum()),
                              "worst_err_over_tol": float(np.nanmax(err / tol)),
                              "max_rel_err_vs_bf16_inputs_ref": float(np.nanmax(np.abs(C - r16)) / np.abs(r16).max()),
                              "torch_bf16_ok": bool(np.all(terr <= tol)), "torch_worst_err_over_tol": float(np.max(terr / tol)),
                              "first_call_s": round(first, 1)})
        print("check:", json.dumps(out["checks"][-1]), flush=True)

    builds = [b for b in args.builds.split(",") if b]
    bad_builds = set()
    for name in builds:  # each candidate on fresh inputs at one aligned shape first (its compile, too)
        if time.time() - t_start > args.budget - 20:
            bad_builds.add(name)
            out["checks"].append({"build": name, "skipped": "time"})
            continue
        m, n, k = BUILD_CHECK
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        tol = mma.rounded_inputs_tolerance(A, B, MB.BF16_MANTISSA)
        dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
        rec = {"build": name, "shape": [m, n, k]}
        try:
            t0 = time.perf_counter()
            build_launch(name, m, n, k)(cuda.to_device(MB.to_bf16_bits(A)), cuda.to_device(MB.to_bf16_bits(B)), dC)
            cuda.synchronize()
            err = np.abs(dC.copy_to_host().astype(np.float64) - ref)
            rec.update(ok=bool(np.all(err <= tol)), worst_err_over_tol=float(np.nanmax(err / tol)),
                       first_call_s=round(time.perf_counter() - t0, 1))
        except Exception as e:
            rec.update(ok=False, error=f"{type(e).__name__}: {' '.join(str(e).split())[:300]}")
        if not rec["ok"]:
            bad_builds.add(name)
        out["checks"].append(rec)
        print("build check:", json.dumps(rec), flush=True)

    for (m, n, k) in time_shapes:
        flops = 2.0 * m * n * k
        At = torch.randn(m, k, device="cuda")
        Bt = torch.randn(k, n, device="cuda")
        Ah, Bh = At.bfloat16(), Bt.bfloat16()
        ms = rounds_ms(lambda Ah=Ah, Bh=Bh: torch.matmul(Ah, Bh), torch)
        out["times"].append({"who": "torch.matmul bf16", "shape": [m, n, k], "ms": ms, "tflops": flops / ms / 1e9})
        dA = cuda.to_device(MB.to_bf16_bits(At.cpu().numpy()))
        dB = cuda.to_device(MB.to_bf16_bits(Bt.cpu().numpy()))
        dC = cuda.device_array((m, n), np.float32)
        ref = None
        if (m, n, k) == time_shapes[0]:  # each timed output is right too: its first 64 rows
            ref = (MB.round_bf16(At.cpu().numpy()[:64]).astype(np.float64) @ MB.round_bf16(Bt.cpu().numpy()).astype(np.float64))
        for name in builds:
            if time.time() - t_start > args.budget - 8 or name in bad_builds or not ok_all and name != "default":
                out["times"].append({"who": f"tensor_core_bf16 {name}", "shape": [m, n, k], "skipped": "time or check"})
                continue
            try:
                launch = build_launch(name, m, n, k)
                if ref is not None:  # poisoned: a build that skips an element shows NaN
                    dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
                ms = rounds_ms(lambda launch=launch, dA=dA, dB=dB, dC=dC: launch(dA, dB, dC), torch)
                rec = {"who": f"tensor_core_bf16 {name}", "shape": [m, n, k], "ms": ms, "tflops": flops / ms / 1e9}
                if ref is not None:
                    rec["first_64_rows_max_rel_err"] = float(np.abs(dC.copy_to_host()[:64] - ref).max() / np.abs(ref).max())
                out["times"].append(rec)
            except Exception as e:
                out["times"].append({"who": f"tensor_core_bf16 {name}", "shape": [m, n, k],
                                     "error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"})

    print(f"\n{out['device']}, torch {out['torch']}; checks {'all passed' if ok_all else 'FAILED'}")
    print(f"{'contender':<28} {'M x N x K':<16} {'ms':>9} {'TFLOP/s':>9} {'vs torch bf16':>14}")
    torch_t = {tuple(r["shape"]): r["tflops"] for r in out["times"] if r["who"].startswith("torch") and "tflops" in r}
    for r in out["times"]:
        shape = "x".join(map(str, r["shape"]))
        if "tflops" not in r:
            print(f"{r['who']:<28} {shape:<16} {r.get('error', r.get('skipped'))}")
            continue
        ratio = r["tflops"] / torch_t[tuple(r["shape"])]
        err = f"   rel err {r['first_64_rows_max_rel_err']:.1e}" if "first_64_rows_max_rel_err" in r else ""
        print(f"{r['who']:<28} {shape:<16} {r['ms']:>9.3f} {r['tflops']:>9.1f} {ratio:>13.2f}x{err}")
    print(f"(total {time.time() - t_start:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
