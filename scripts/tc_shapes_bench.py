"""The tensor-core rungs at the shapes users try (ragged, small, skinny, just past a tile), on a GPU: each
rung checked against float64, then timed beside torch at the same precision. About 60 s on an H100.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/tc_shapes_bench.py --out tc_shapes.json

Checks: tensor_core_tf32 and tensor_core_bf16 as ``lab run`` launches them (the variant's launch and
prepare: the build each one's ``choose`` picks for the shape, the bf16 inputs rounded and zero-padded once
before the calls) on fresh random inputs at CHECK_SHAPES, the TF32 tolerance for 10-bit inputs and the bf16
one for 7-bit (kernels.gemm.mma.rounded_inputs_tolerance); a NaN (an element never written) fails; and
both builds of each rung, forced, at the first check shape (ragged rows) and the last (aligned rows).

Times (the median ms a call of lab.core.timing's Timer, as ``lab run`` times (CUDA events a call, queued behind the blocking kernel, L2 flushed before each call): the
Python launch of one call overlaps the GPU's work of the ones before it): at TIME_SHAPES,
each rung as chosen ("tensor_core_tf32"), each of its two builds forced ("tensor_core_tf32 default" /
"small"), the TF32 rung on copies of A and B padded to multiples of 4 ("tensor_core_tf32 padded": what the
4-byte copies cost, where K or N is not a multiple of 4), and torch: FP32 (TF32 off, cuBLAS SGEMM), TF32,
bfloat16 (bf16 inputs, bf16 out). Prints a table (TFLOP/s, 2 m n k / time) and writes JSON as it goes.
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

# ragged K and N (TF32: 4-byte copies; bf16: padded), just past a tile, tall-skinny with aligned rows
CHECK_SHAPES = [(1000, 1030, 517), (129, 129, 129), (4097, 72, 1000)]
TIME_SHAPES = [(1000, 1030, 517), (1024, 1024, 1024), (129, 129, 129), (64, 4096, 4096), (4096, 64, 4096),
               (4096, 4096, 32), (2048, 2048, 2047), (4097, 4097, 4097), (4096, 4096, 4096)]
RUNGS = ("tensor_core_tf32", "tensor_core_bf16")


def rounds_ms(fn, torch, budget_s=1.5):
    """Median ms a call of ``fn`` (it enqueues on the default stream): lab.core.timing's Timer, as ``lab run`` times: CUDA events, one pair a call, calls queued behind the blocking kernel, L2 flushed before each; its stop rule, at most ``budget_s`` s."""
    from lab.core.stopping import StopRule
    from lab.core.timing import Timer

    return Timer(fn, "device", torch.cuda.synchronize).measure(warmup=2, rule=StopRule(time_limit_s=budget_s)).median_ms


def builds(rung):
    """{label: (tile, launch(size) -> (grid, block), prepare(dA, dB, dC, size) -> call)} of ``rung``: as chosen,
    each build forced, and (TF32) on padded copies."""
    from kernels.gemm import mma
    from kernels.gemm import tensor_core_bf16 as TB
    from kernels.gemm import tensor_core_tf32 as TC
    from kernels.compiler import cuda

    if rung == "tensor_core_tf32":
        def forced(name):
            def prep(dA, dB, dC, size):
                m, n, k = size
                tile = TC.TILES[name]
                plan = TC.launch_for(tile, size)
                kern = mma.with_shared(TC.kernel_for(k, n, tile), plan.grid, plan.block, tile.dynamic_bytes)
                return lambda: kern(dA, dB, dC)
            return prep

        def padded(dA, dB, dC, size):
            m, n, k = size
            if k % 4 == 0 and n % 4 == 0:
                return None
            k4, n4 = -(-k // 4) * 4, -(-n // 4) * 4
            hA, hB = np.zeros((m, k4), np.float32), np.zeros((k4, n4), np.float32)
            hA[:, :k], hB[:k, :n] = dA.copy_to_host(), dB.copy_to_host()
            pA, pB = cuda.to_device(hA), cuda.to_device(hB)
            pC = cuda.device_array((m, n4), np.float32)  # the TF32 kernel stores columns up to B's
            tile = TC.TILES[TC.choose(size)[0]]
            plan = TC.launch_for(tile, (m, n4, k4))
            kern = mma.with_shared(TC.kernel_for(k4, n4, tile), plan.grid, plan.block, tile.dynamic_bytes)
            return lambda: kern(pA, pB, pC)

        return {"default": forced(TC.DEFAULT), "small": forced(TC.SMALL), "padded": padded}

    def forced_bf16(name):
        def prep(dA, dB, dC, size):
            m, n, k = size
            build = TB.BUILDS[name]
            bm, bn, threads = TB.build_tile(build)
            A16 = TB.device_bf16(dA, m, TB.padded(k))
            B16 = TB.device_bf16(dB, TB.padded(k), TB.padded(n))
            grid = (-(-n // bn), -(-m // bm))
            kern = TB.configured(TB.kernel_for(TB.padded(k), TB.padded(n), **build), grid, (threads,), build)
            return lambda: kern(A16, B16, dC)
        return prep

    return {"default": forced_bf16("default"), "small": forced_bf16("small")}


def rung_call(rung, dA, dB, dC, size):
    """The rung as ``lab run`` launches it: the variant's launch (the chooser) and prepare."""
    import kernels

    v = kernels.load("matmul").variants[rung]
    cfg = v.launch(size, 128)
    return v.prepare(cfg, [dA, dB], [dC]), cfg.note


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tc_shapes.json")
    ap.add_argument("--budget", type=float, default=85.0, help="seconds; shapes left when it runs out are skipped")
    ap.add_argument("--check", default=",".join("x".join(map(str, s)) for s in CHECK_SHAPES), help="MxNxK,...")
    ap.add_argument("--time", default=",".join("x".join(map(str, s)) for s in TIME_SHAPES), help="MxNxK,...")
    args = ap.parse_args()
    check_shapes = [tuple(int(v) for v in s.split("x")) for s in args.check.split(",") if s]
    time_shapes = [tuple(int(v) for v in s.split("x")) for s in args.time.split(",") if s]
    import torch

    from kernels.compiler import COMPILER, cuda
    from kernels.gemm import mma
    from kernels.gemm import mma_bf16 as MB

    t_start = time.perf_counter()
    out = {"device": torch.cuda.get_device_name(), "compiler": COMPILER, "torch": torch.__version__,
           "timing": "lab.core.timing.Timer (median a call)", "checks": [], "times": [], "notes": {}, "skipped": []}

    def save():
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)

    rng = np.random.default_rng(0)
    bad = set()
    for (m, n, k) in check_shapes:
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        for rung in RUNGS:
            bits = mma.TF32_MANTISSA if rung.endswith("tf32") else MB.BF16_MANTISSA
            tol = mma.rounded_inputs_tolerance(A, B, bits)
            alts = [("", None)] + ([(name, prep) for name, prep in builds(rung).items() if name != "padded"]
                                   if (m, n, k) in (check_shapes[0], check_shapes[-1]) else [])
            for label, prep in alts:
                dA, dB = cuda.to_device(A), cuda.to_device(B)
                dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
                t0 = time.perf_counter()
                try:
                    call = prep(dA, dB, dC, (m, n, k)) if prep else rung_call(rung, dA, dB, dC, (m, n, k))[0]
                    call()
                    cuda.synchronize()
                except Exception as e:  # a build that does not compile or launch: recorded, its times skipped
                    out["checks"].append({"rung": f"{rung} {label}".strip(), "shape": [m, n, k], "ok": False,
                                          "error": f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"})
                    bad.add(f"{rung} {label}".strip())
                    print("check:", json.dumps(out["checks"][-1]), flush=True)
                    continue
                first = time.perf_counter() - t0
                err = np.abs(dC.copy_to_host().astype(np.float64) - ref)
                ok = bool(np.all(err <= tol))
                if not ok:
                    bad.add(f"{rung} {label}".strip())
                out["checks"].append({"rung": f"{rung} {label}".strip(), "shape": [m, n, k], "ok": ok,
                                      "nan": int(np.isnan(err).sum()), "worst_err_over_tol": float(np.nanmax(err / tol)),
                                      "first_call_s": round(first, 2)})
                print("check:", json.dumps(out["checks"][-1]), flush=True)
                save()

    rows = {}
    for (m, n, k) in time_shapes:
        if time.perf_counter() - t_start > args.budget:
            out["skipped"].append([m, n, k])
            continue
        flops = 2.0 * m * n * k
        hA = np.random.default_rng(1).standard_normal((m, k), np.float32)
        hB = np.random.default_rng(2).standard_normal((k, n), np.float32)
        dA, dB, dC = cuda.to_device(hA), cuda.to_device(hB), cuda.device_array((m, n), np.float32)
        calls = {}
        for rung in RUNGS:
            if rung in bad:
                continue
            call, note = rung_call(rung, dA, dB, dC, (m, n, k))
            out["notes"][f"{rung} {m}x{n}x{k}"] = note
            calls[rung] = call
            for label, prep in builds(rung).items():
                if f"{rung} {label}" in bad:
                    continue
                c = prep(dA, dB, dC, (m, n, k))
                if c is not None:
                    calls[f"{rung} {label}"] = c
        tA, tB = torch.from_numpy(hA).cuda(), torch.from_numpy(hB).cuda()
        tC = torch.empty(m, n, device="cuda")
        tAh, tBh = tA.bfloat16(), tB.bfloat16()

        def torch_call(tf32, tA=tA, tB=tB, tC=tC):
            def run():
                torch.backends.cuda.matmul.allow_tf32 = tf32
                torch.matmul(tA, tB, out=tC)
            return run
        calls["torch fp32"] = torch_call(False)
        calls["torch tf32"] = torch_call(True)
        calls["torch bf16"] = lambda tAh=tAh, tBh=tBh: torch.matmul(tAh, tBh)
        for label, call in calls.items():
            try:
                ms = rounds_ms(call, torch)
            except Exception as e:
                out["times"].append({"rung": label, "shape": [m, n, k], "error": f"{type(e).__name__}: {e}"[:300]})
                continue
            out["times"].append({"rung": label, "shape": [m, n, k], "ms": ms, "tflops": flops / ms / 1e9})
            rows.setdefault(label, {})[(m, n, k)] = flops / ms / 1e9
        torch.backends.cuda.matmul.allow_tf32 = False
        print(f"timed {m}x{n}x{k} ({time.perf_counter() - t_start:.0f} s)", flush=True)
        save()

    shapes = [s for s in time_shapes if list(s) not in out["skipped"]]
    print(f"\nTFLOP/s on {out['device']} (median ms a call, lab.core.timing's Timer)")
    head = f"{'':26}" + "".join(f"{'x'.join(map(str, s)):>16}" for s in shapes)
    print(head)
    for label, r in rows.items():
        print(f"{label:26}" + "".join(f"{r[s]:16.1f}" if s in r else f"{'-':>16}" for s in shapes))
    print("\nchosen builds:")
    for key, note in out["notes"].items():
        print(f"  {key}: {note.split(';')[0]}")
    print("checks:", "all passed" if not bad and all(c["ok"] for c in out["checks"]) else f"FAILED: {sorted(bad)}")
    out["seconds"] = round(time.perf_counter() - t_start, 1)
    save()
    print(f"wrote {args.out} ({out['seconds']} s)")


if __name__ == "__main__":
    main()
