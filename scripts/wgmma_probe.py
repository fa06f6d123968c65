"""Probe Hopper's ``wgmma.mma_async`` from a Numba kernel: one warpgroup, one 64 x 128 x 64 product; under 30 s.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/wgmma_probe.py [out.json]

kernels.gemm.wgmma_bf16.make_probe_kernel copies two shared-memory images built here to 1,024-byte aligned
shared memory, builds the matrix descriptors from the layout parameters passed in, runs four m64n128k16
bf16 wgmmas (K = 64: the descriptors' start addresses stepped by the layout's bytes per 16 k) and stores the
accumulators by the m64nNk16 D fragment layout. Each VARIANT is one shared-memory layout of A (64 x 64) and
B (64 x 128) with its descriptor fields; each is checked against the float64 product of the same bf16
values (random, fresh each run). A variant that fails says which layout or descriptor convention is wrong
(e.g. the LBO / SBO roles of the MN-major B that kernels.gemm.wgmma_bf16's GEMM uses: B_LBO, B_SBO).

Variants (sw128: the 128-byte swizzle; "K-major": K contiguous, A as M x K, B given as its transpose N x K):
  kmajor_sw128      A, B^T K-major sw128 (SBO 1,024; + 32 bytes a k16 step), tnsp-b 0
  kmajor_none       A, B^T K-major no swizzle, core matrices LBO = 128 apart in K, SBO = 1,024 in M/N, tnsp-b 0
  kmajor_none_swap  the same bytes, LBO and SBO swapped in the descriptors
  mn_sw128          A K-major sw128; B K x N MN-major sw128 (64-column blocks 8,192 apart: LBO; 8 K-rows
                    1,024 apart: SBO; + 2,048 a k16 step), tnsp-b 1 -- the GEMM's layout
  mn_sw128_swap     the same bytes, LBO 1,024 and SBO 8,192
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernels.compiler import cuda  # noqa: E402  (after LAB_COMPILER is set)
from kernels.gemm import mma_bf16 as MB, wgmma_bf16 as W  # noqa: E402

M, N, K = 64, 128, 64
SW, NONE = W.SWIZZLE_128B, W.SWIZZLE_NONE
# name: (A: (offset fn of (m, k), lbo, sbo, swizzle, kstep), B: ("k" (B^T, (n, k)) or "mn" ((k, n)), offset fn,
#        lbo, sbo, swizzle, kstep), tnsp_b)
A_SW = (lambda m, k: W.k_major_offset(m, k), 16, 1024, SW, 32)
A_NONE = (lambda m, k: W.k_major_offset(m, k, NONE, 128, 1024), 128, 1024, NONE, 256)
VARIANTS = {
    "kmajor_sw128": (A_SW, ("k", lambda n, k: W.k_major_offset(n, k), 16, 1024, SW, 32), 0),
    "kmajor_none": (A_NONE, ("k", lambda n, k: W.k_major_offset(n, k, NONE, 128, 1024), 128, 1024, NONE, 256), 0),
    "kmajor_none_swap": ((A_NONE[0], 1024, 128, NONE, 256),
                         ("k", lambda n, k: W.k_major_offset(n, k, NONE, 128, 1024), 1024, 128, NONE, 256), 0),
    "mn_sw128": (A_SW, ("mn", lambda k, n: W.mn_major_offset(k, n, 8192), 8192, 1024, SW, 2048), 1),
    "mn_sw128_swap": (A_SW, ("mn", lambda k, n: W.mn_major_offset(k, n, 8192), 1024, 8192, SW, 2048), 1),
}


def run_variant(name, rng):
    """(ok, max abs error, tolerance, ms) of VARIANTS[name] on fresh random bf16 A (64 x 64), B (64 x 128)."""
    (a_off, a_lbo, a_sbo, a_sw, a_ks), (b_kind, b_off, b_lbo, b_sbo, b_sw, b_ks), tnsp_b = VARIANTS[name]
    A = MB.to_bf16_bits(rng.standard_normal((M, K)).astype(np.float32))
    B = MB.to_bf16_bits(rng.standard_normal((K, N)).astype(np.float32))
    a_img = W.shared_image(A, a_off, M * K * 2)
    b_img = W.shared_image(B.T.copy() if b_kind == "k" else B, b_off, K * N * 2)
    params = np.array([a_lbo, a_sbo, a_sw, a_ks, b_lbo, b_sbo, b_sw, b_ks], np.int64)
    out = cuda.to_device(np.full((M, N), np.nan, np.float32))
    t0 = time.perf_counter()
    W.make_probe_kernel(tnsp_b)[1, W.WARPGROUP](cuda.to_device(a_img), cuda.to_device(b_img),
                                                cuda.to_device(params), out)
    cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    D = out.copy_to_host()
    Af, Bf = MB.bf16_bits_to_float32(A).astype(np.float64), MB.bf16_bits_to_float32(B).astype(np.float64)
    ref = Af @ Bf
    tol = 1e-5 * (np.abs(Af) @ np.abs(Bf)).max() + 1e-6  # float32 sums of exact bf16 products, 64 terms
    err = float(np.nanmax(np.abs(D - ref))) if np.isfinite(D).any() else float("inf")
    ok = bool(np.isfinite(D).all() and err <= tol)
    good = np.abs(D - ref) <= tol
    close = float(np.mean(good))
    if not ok:  # which parts are right: whole 8-row groups (A's core matrices) or 8-column groups (B's)?
        rows = "".join("#" if g.all() else "." for g in good.reshape(8, 8, N).transpose(0, 2, 1).reshape(8, -1))
        cols = "".join("#" if g.all() else "." for g in good.reshape(M, N // 8, 8).transpose(1, 0, 2).reshape(N // 8, -1))
        print(f"    8-row groups right: {rows}   8-column groups right: {cols}")
    return ok, err, float(tol), close, ms


def main(argv):
    if W.UNAVAILABLE:
        sys.exit(f"wgmma probe: {W.UNAVAILABLE}")
    rng = np.random.default_rng()
    results = {}
    for name in VARIANTS:
        try:
            ok, err, tol, close, ms = run_variant(name, rng)
            results[name] = {"ok": ok, "max_abs_err": err, "tol": tol, "fraction_close": close, "ms_incl_compile": ms}
            print(f"{name:18s} {'PASS' if ok else 'FAIL'}  max |err| {err:.3g} (tol {tol:.2g}), "
                  f"{close:.1%} of elements close  [{ms:.0f} ms with compile]", flush=True)
        except Exception as e:  # a compile or launch error of one variant: report it, go on
            results[name] = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
            print(f"{name:18s} ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
    gemm = "mn_sw128" if results.get("mn_sw128", {}).get("ok") else (
        "mn_sw128_swap" if results.get("mn_sw128_swap", {}).get("ok") else None)
    print(f"GEMM's B descriptor (B_LBO, B_SBO = {W.B_LBO}, {W.B_SBO}): "
          + ("confirmed" if gemm == "mn_sw128" else "swap them (mn_sw128_swap passed)" if gemm else "NOT confirmed"))
    if argv:
        with open(argv[0], "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
