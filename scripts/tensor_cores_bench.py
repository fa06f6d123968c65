"""Check and time the cp.async and tensor-core matmul rungs (kernels/gemm/) on a GPU, beside torch at the
same precision; writes JSON for docs/tensor-cores.md.

    LAB_COMPILER=numba-cuda-mlir python scripts/tensor_cores_bench.py --out tc.json [--quick]
    LAB_COMPILER=numba-cuda-mlir python scripts/tensor_cores_bench.py --out tiles.json --tiles   # about 80 s

``--tiles`` compares the builds of tensor_core_tf32 (TILE_BUILDS: block and warp tiles, slab depth, stages,
pipelined fragments, dynamic shared memory) and prints a table: each checked at 1001 x 1036 x 516, timed at
4096^3 and 3000 x 5000 x 2000 beside torch's TF32 matmul (with "tensor_core_tf32 cvt" in the list, also
whether rounding by an integer add gives cvt.rna's bits).

Each rung is first checked against the float64 reference on fresh random inputs, with the tolerance of
its precision (kernels.gemm.mma.rounded_inputs_tolerance for TF32, kernels.spec.dot_tolerance for
float32), at shapes that are not multiples of the tiles; then timed (the median ms a call of
lab.core.timing's Timer, as ``lab run`` times (CUDA events a call, queued behind the blocking kernel, L2 flushed before each call)) at 4096^3 and other shapes, untuned ones included. torch runs the
same shapes: FP32 with TF32 off (cuBLAS SGEMM), TF32 on, and bfloat16 inputs. ``--rungs tensor_core_bf16``
adds the bf16 rung (inputs rounded to bf16 bits before the calls); scripts/bf16_bench.py is its quick run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHECK_SHAPES = [(128, 128, 64), (1000, 1030, 517), (257, 4099, 130), (777, 1333, 904)]
TIME_SHAPES = [(4096, 4096, 4096), (3000, 5000, 2000), (2048, 2048, 2048), (8192, 8192, 8192),
               (1000, 1030, 517), (6144, 4096, 1536)]
# --tiles: builds of tensor_core_tf32 (kernels.gemm.tensor_core_tf32.TILES) side by side, each checked at a
# shape that is no multiple of any tile (16-byte copies; the default build also at one with 4-byte copies),
# then timed at two shapes. build() also takes "tensor_core_tf32 cvt" / "none" (the default tile with the other
# roundings) and the TILES left out here; their numbers are in docs/tensor-cores.md.
TILE_BUILDS = ["tensor_core_tf32"] + [f"tensor_core_tf32 {t}" for t in (
    "b128x128_w64x64_k16_s3_p", "b128x128_w64x64_k16_s5", "b128x128_w64x64_k16_s5_p", "b128x128_w64x64_k32_s3_p",
    "b128x256_w64x64_k16_s4_p", "b128x256_w64x64_k32_s3_p")]
TILE_CHECK = (1001, 1036, 516)
TILE_TIMES = [(4096, 4096, 4096), (3000, 5000, 2000)]


def median_ms(fn, torch, warmup=3, budget_s=3.0):
    """Median ms a call of ``fn`` (it enqueues on the default stream): lab.core.timing's Timer, as ``lab run`` times: CUDA events, one pair a call, calls queued behind the blocking kernel, L2 flushed before each; its stop rule, at most ``budget_s`` s."""
    from lab.core.stopping import StopRule
    from lab.core.timing import Timer

    return Timer(fn, "device", torch.cuda.synchronize).measure(warmup=warmup, rule=StopRule(time_limit_s=budget_s)).median_ms


def part_probe(name, out, rng):
    """A probe of one instruction, in a process of its own (a fault must not end the run)."""
    from kernels.compiler import cuda, float32, int64
    from kernels.gemm import mma

    if name == "addresses":
        @cuda.jit
        def addresses(X, R):
            s = cuda.shared.array(64, float32, alignment=16)
            s[cuda.threadIdx.x] = float32(1.0)
            R[0] = int64(s.ctypes.data)
            R[1] = int64(mma.shared_address(s))
            R[2] = int64(X.ctypes.data)
            R[3] = int64(mma.global_address(X))

        X = cuda.to_device(np.zeros(8, np.float32))
        R = cuda.to_device(np.zeros(4, np.int64))
        addresses[1, 32](X, R)
        cuda.synchronize()
        r = R.copy_to_host()
        out["probes"]["addresses"] = {"shared ctypes.data": hex(int(r[0])), "shared_address": hex(int(r[1])),
                                      "global ctypes.data": hex(int(r[2])), "global_address": hex(int(r[3])),
                                      "device pointer": hex(int(X.__cuda_array_interface__["data"][0]))}
    elif name == "mma":
        @cuda.jit
        def one_mma(A, B, C):
            lane = cuda.threadIdx.x
            g = lane // 4
            q = lane % 4
            z = float32(0.0)
            d0, d1, d2, d3 = mma.mma_tf32(mma.to_tf32(A[g, q]), mma.to_tf32(A[g + 8, q]), mma.to_tf32(A[g, q + 4]),
                                          mma.to_tf32(A[g + 8, q + 4]), mma.to_tf32(B[q, g]), mma.to_tf32(B[q + 4, g]),
                                          z, z, z, z)
            C[g, 2 * q] = d0
            C[g, 2 * q + 1] = d1
            C[g + 8, 2 * q] = d2
            C[g + 8, 2 * q + 1] = d3

        A = rng.standard_normal((16, 8)).astype(np.float32)
        B = rng.standard_normal((8, 8)).astype(np.float32)
        dC = cuda.to_device(np.full((16, 8), np.nan, np.float32))
        one_mma[1, 32](cuda.to_device(A), cuda.to_device(B), dC)
        C = dC.copy_to_host()
        ref = mma.round_tf32(A).astype(np.float64) @ mma.round_tf32(B)
        out["probes"]["mma"] = {"max_err_vs_tf32_ref": float(np.abs(C - ref).max()),
                                "max_err_vs_fp64": float(np.abs(C - A.astype(np.float64) @ B).max())}
    elif name == "cp_async":
        @cuda.jit
        def roundtrip(X, Y):
            s = cuda.shared.array(128, float32, alignment=16)
            t = cuda.threadIdx.x
            mma.cp_async16(s, t * 4, X, 0, t * 4, 4 if t < 16 else 2)
            mma.cp_async_commit()
            mma.cp_async_wait(0)
            cuda.syncthreads()
            for e in range(4):
                Y[t * 4 + e] = s[t * 4 + e]

        X = (np.arange(128, dtype=np.float32) + 1).reshape(1, 128)
        dY = cuda.to_device(np.full(128, np.nan, np.float32))
        roundtrip[1, 32](cuda.to_device(X), dY)
        Y = dY.copy_to_host()
        want = X.ravel().copy()
        for t in range(16, 32):
            want[t * 4 + 2: t * 4 + 4] = 0
        out["probes"]["cp_async"] = {"ok": bool(np.array_equal(Y, want)), "got_head": Y[:8].tolist(),
                                     "got_tail": Y[-8:].tolist()}


class _Bf16Launch:
    """kernel(size)[grid, block] for the bf16 rung: the build its choose() picks for the shape, at K and N
    padded to multiples of 8 (part_rung pads the inputs as the rung's prepare does), launched through
    configured() (dynamic shared memory opted in on the first call)."""

    def __init__(self, size):
        self.size = size

    def __getitem__(self, grid_block):
        from kernels.gemm import tensor_core_bf16 as TB

        build = TB.BUILDS[TB.choose(self.size)[0]]
        kern = TB.kernel_for(TB.padded(self.size[2]), TB.padded(self.size[1]), **build)
        return TB.configured(kern, *grid_block, build)


def build(name):
    """(plan, kernel) of rung build ``name``: plan((m, n, k)) is its launch (grid, block), kernel((m, n, k))
    its compiled kernel for that shape. Names: "async_copy [BUILD]" (a key of kernels.gemm.async_copy.BUILDS), "tensor_core_tf32 [TILE]
    [add | cvt | none]" (TILE a key of kernels.gemm.tensor_core_tf32.TILES, the rounding of A and B)."""
    from kernels.gemm import async_copy as AC
    from kernels.gemm import tensor_core_bf16 as TB
    from kernels.gemm import tensor_core_tf32 as TC

    rung, *opts = name.split()
    if rung == "tensor_core_bf16":  # the rung's build (TB.BUILD: dynamic shared memory, launched by TB.configured)
        return (lambda size: TB.launch(size, TB.THREADS)), _Bf16Launch
    if rung == "async_copy":  # "async_copy [BUILD]", BUILD a key of kernels.gemm.async_copy.BUILDS
        b = AC.BUILDS[opts[0] if opts else AC.DEFAULT]
        return (lambda size: AC.launch_for(b, size)), (lambda size: _Configured(AC.kernel_for(size[2], size[1], b), b))
    named = next((TC.TILES[o] for o in opts if o in TC.TILES), None)  # none named: the rung's choose() picks

    def tile(size):
        return named or TC.TILES[TC.choose(size)[0]]

    rounding = next((o for o in opts if o in TC.ROUNDINGS), TC.ROUNDING)
    return (lambda size: TC.launch_for(tile(size), size)), (lambda size: _Configured(TC.kernel_for(
        size[2], size[1], tile(size), rounding), tile(size)))


class _Configured:
    """A kernel whose ``[grid, block]`` asks for its tile's (or build's) dynamic shared memory
    (kernels.gemm.mma.with_shared)."""

    def __init__(self, kernel, tile):
        self.kernel, self.tile = kernel, tile

    def __getitem__(self, grid_block):
        from kernels.gemm import mma

        return mma.with_shared(self.kernel, *grid_block, self.tile.dynamic_bytes)


def part_rung(name, out, rng, shapes, tshapes):
    """Check rung build ``name`` at ``shapes``, then time it at ``tshapes`` (if every check passed)."""
    from kernels.compiler import cuda
    from kernels.gemm import mma
    from kernels.gemm import mma_bf16 as MB
    from kernels.gemm import tensor_core_bf16 as TB
    from kernels.spec import dot_tolerance
    import torch

    plan, kernel = build(name)
    bf16 = "bf16" in name  # the kernel takes bfloat16 bits (uint16), rounded here before the call
    # bf16: the bits, K and N zero-padded to multiples of 8 as the rung's prepare pads them (A's columns, B's both)
    def dev(X, rows=None):
        return TB.device_bf16(X, rows, TB.padded(X.shape[1])) if bf16 else cuda.to_device(X)

    def dev_b(X):
        return dev(X, TB.padded(X.shape[0]) if bf16 else None)

    ok_all = True
    for (m, n, k) in shapes:
        A = rng.standard_normal((m, k)).astype(np.float32)
        B = rng.standard_normal((k, n)).astype(np.float32)
        dC = cuda.to_device(np.full((m, n), np.nan, np.float32))
        cfg = plan((m, n, k))
        t0 = time.perf_counter()
        kernel((m, n, k))[cfg.grid, cfg.block](dev(A), dev_b(B), dC)
        cuda.synchronize()
        first = time.perf_counter() - t0
        C = dC.copy_to_host()
        ref = A.astype(np.float64) @ B.astype(np.float64)
        tol = (mma.rounded_inputs_tolerance(A, B, 10) if "tf32" in name else
               mma.rounded_inputs_tolerance(A, B, MB.BF16_MANTISSA) if bf16 else dot_tolerance(A, B, np.float32))
        err = np.abs(C - ref)
        ok = bool(np.all(err <= tol))
        ok_all &= ok
        out["checks"].append({"rung": name, "shape": [m, n, k], "ok": ok, "max_err": float(np.nanmax(err)),
                              "nan": int(np.isnan(C).sum()), "worst_over_tol": float(np.nanmax(err / tol)),
                              "first_call_s": round(first, 2), "sha1": hashlib.sha1(C.tobytes()).hexdigest()[:12]})
        save(out)
    if not ok_all:
        return
    for (m, n, k) in tshapes:
        dA = dev(np.random.default_rng(1).standard_normal((m, k), np.float32))
        dB = dev_b(np.random.default_rng(2).standard_normal((k, n), np.float32))
        dC = cuda.device_array((m, n), np.float32)
        cfg = plan((m, n, k))
        launch = kernel((m, n, k))[cfg.grid, cfg.block]

        def call(launch=launch, dA=dA, dB=dB, dC=dC):
            launch(dA, dB, dC)
        ms = median_ms(call, torch)
        out["times"].append({"rung": name, "shape": [m, n, k], "ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9})
        save(out)


NCU_METRICS = ["gpu__time_duration.sum", "launch__registers_per_thread",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
               "smsp__inst_executed_op_shared_ld.sum",
               "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               "dram__throughput.avg.pct_of_peak_sustained_elapsed",
               "sm__warps_active.avg.pct_of_peak_sustained_active"]
NCU_STALLS = "regex:^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active.ratio$"


def part_ncu_target(rungs):
    """Under ncu: each rung once at 4096^3 after its compile-and-warm call."""
    from kernels.compiler import cuda

    m = n = k = 4096
    dA = cuda.to_device(np.random.default_rng(1).standard_normal((m, k), np.float32))
    dB = cuda.to_device(np.random.default_rng(2).standard_normal((k, n), np.float32))
    dC = cuda.device_array((m, n), np.float32)
    for name in rungs:
        plan, kernel = build(name)
        cfg = plan((m, n, k))
        for _ in range(2):
            kernel((m, n, k))[cfg.grid, cfg.block](dA, dB, dC)
        cuda.synchronize()


def part_torch(out, tshapes):
    import torch

    for (m, n, k) in tshapes:
        A = torch.randn(m, k, device="cuda")
        B = torch.randn(k, n, device="cuda")
        C = torch.empty(m, n, device="cuda")
        flops = 2.0 * m * n * k
        for label, tf32 in (("torch fp32", False), ("torch tf32", True)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            ms = median_ms(lambda A=A, B=B, C=C: torch.matmul(A, B, out=C), torch)
            out["times"].append({"rung": label, "shape": [m, n, k], "ms": ms, "tflops": flops / ms / 1e9})
        torch.backends.cuda.matmul.allow_tf32 = False
        Ah, Bh = A.bfloat16(), B.bfloat16()
        ms = median_ms(lambda Ah=Ah, Bh=Bh: torch.matmul(Ah, Bh), torch)
        out["times"].append({"rung": "torch bf16", "shape": [m, n, k], "ms": ms, "tflops": flops / ms / 1e9})
        save(out)


OUT = None


def save(out):
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)


# Dense peaks of an H100 SXM5 (NVIDIA H100 Tensor Core GPU datasheet), TFLOP/s: what "% of peak" divides by
PEAK_TFLOPS = {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4}
RUNG_PRECISION = {"async_copy": "fp32", "tensor_core_tf32": "tf32", "tensor_core_bf16": "bf16"}


def results_doc(raw: dict) -> dict:
    """The docs/results/tensor-cores.json document (scripts/benchmarks_md.py renders it) from a raw run
    of this script: each rung's TFLOP/s at every timed shape, its ratio to torch at the same precision,
    its % of the dense peak, and the worst error as a fraction of its tolerance."""
    t = {(r["rung"], tuple(r["shape"])): r["tflops"] for r in raw["times"]}
    shapes = sorted({s for _, s in t}, key=lambda s: -s[0] * s[1] * s[2])
    rows = []
    for rung in sorted({r for r, _ in t if not r.startswith("torch")}):
        base = rung.split()[0]
        prec = RUNG_PRECISION.get(base, "fp32")
        for shape in shapes:
            if (rung, shape) not in t:
                continue
            mine, torch_ = t[rung, shape], t.get((f"torch {prec}", shape))
            worst = max((c["worst_over_tol"] for c in raw["checks"] if c["rung"] == rung), default=None)
            rows.append([rung, "x".join(map(str, shape)), f"{mine:.1f}", f"{torch_:.1f}" if torch_ else "-",
                         f"{mine / torch_:.2f}x" if torch_ else "-", f"{100 * mine / PEAK_TFLOPS[prec]:.0f}% of {prec}",
                         f"{worst:.2f}" if worst is not None else "-"])
    return {"title": "Tensor cores and async copies from Python (`python scripts/tensor_cores_bench.py`)", "order": 45,
            "device": raw["device"], "date": raw["date"].split()[0],
            "versions": {"python": raw["python"], "numba-cuda-mlir": raw["compiler_version"], "torch": raw["torch"]},
            "blocks": [{"text": "Each rung checked first at 128x128x64, 1000x1030x517, 257x4099x130 and 777x1333x904 against "
                                "the float64 reference (worst error as a fraction of the rung's tolerance: float32's model "
                                "for async_copy, a 10-bit mantissa for TF32), then timed against torch at the same "
                                "precision in the same run. Rungs with build options after the name (`bk16 s2`: 16-deep "
                                "K slabs, 2 stages; `unrounded`: TF32 inputs truncated, not `cvt.rna`) are variants tried."},
                       {"table": {"columns": ["rung", "M x N x K", "TFLOP/s", "torch", "ratio", "% of dense peak",
                                              "worst err / tol"],
                                  "align": ["left", "left", "right", "right", "right", "right", "right"], "rows": rows}},
                       {"text": targets_text(t)}]}


TARGETS = {"async_copy": ("fp32", 0.9), "tensor_core_tf32": ("tf32", 0.6), "tensor_core_bf16": ("bf16", 0.5)}


def targets_text(t: dict) -> str:
    """Each rung's default build at 4096^3 against its target (a ratio to torch at the same precision),
    from the timings ``t`` ((rung, shape) -> TFLOP/s); the measured reasons are in docs/tensor-cores.md."""
    big = (4096, 4096, 4096)
    parts = []
    for rung, (prec, goal) in TARGETS.items():
        mine, ref = t.get((rung, big)), t.get((f"torch {prec}", big))
        if mine and ref:
            parts.append(f"{rung} {mine:.1f} TFLOP/s = {mine / ref:.2f}x torch {prec.upper()} "
                         f"({'met' if mine / ref >= goal else 'missed'}: target {goal}x)")
    return ("At 4096^3: " + "; ".join(parts) + ". Why the missed ones miss (Nsight Compute, `lab counters matmul "
            "--variant ...`): docs/tensor-cores.md." if parts else "No rung timed at 4096^3 in this run.")


def tiles_table(out: dict) -> str:
    """The --tiles run as text: each build's check and TFLOP/s beside torch's TF32 matmul."""
    from kernels.gemm import tensor_core_tf32 as TC

    t = {(r["rung"], tuple(r["shape"])): r["tflops"] for r in out["times"]}
    head = f"{'build':58s} {'check (worst err / tol)':26s}" + "".join(f"{'x'.join(map(str, s)):>24s}" for s in TILE_TIMES)
    lines = [f"{out.get('device', '?')}, numba-cuda-mlir {out.get('compiler_version', '?')}, torch {out.get('torch', '?')}; "
             f"TFLOP/s (x torch TF32); default build {TC.DEFAULT}, rounding {TC.ROUNDING} "
             f"(kernels/gemm/tensor_core_tf32.py: DEFAULT, ROUNDING)", head,
             f"{'torch tf32':85s}" + "".join(f"{t.get(('torch tf32', s), float('nan')):24.1f}" for s in TILE_TIMES)]
    for name in TILE_BUILDS:
        checks = [c for c in out["checks"] if c["rung"] == name]
        verdict = (("ok " if all(c["ok"] for c in checks) else "FAILED ")
                   + " ".join(f"{c['worst_over_tol']:.2f}" for c in checks)) if checks else "not run"
        cells = ""
        for s in TILE_TIMES:
            mine, ref = t.get((name, s)), t.get(("torch tf32", s))
            cells += f"{mine:12.1f} ({mine / ref:.2f}x)".rjust(24) if mine and ref else f"{'-':>24s}"
        lines.append(f"{name:58s} {verdict:26s}{cells}")
    sha = {c["rung"]: c["sha1"] for c in out["checks"] if tuple(c["shape"]) == TILE_CHECK}
    if "tensor_core_tf32" in sha and "tensor_core_tf32 cvt" in sha:
        lines.append(f"rounding add == cvt.rna bit for bit at {TILE_CHECK}: {sha['tensor_core_tf32'] == sha['tensor_core_tf32 cvt']}")
    lines += [f"error: {e}" for e in out["errors"]]
    return "\n".join(lines)


def main():
    global OUT
    import subprocess

    if "--results" in sys.argv:  # python scripts/tensor_cores_bench.py --results RAW.json > docs/results/tensor-cores.json
        raw = json.load(open(sys.argv[sys.argv.index("--results") + 1]))
        print(json.dumps(results_doc(raw), indent=1))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--part", default=None)
    ap.add_argument("--rungs", default="async_copy,tensor_core_tf32")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--probes", default="addresses,mma,cp_async")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the whole run (200; --tiles 85)")
    ap.add_argument("--ncu", action="store_true", help="also ncu metrics of the two rungs at 4096^3")
    ap.add_argument("--labrun", action="store_true", help="also lab run matmul at 4096^3 with the two rungs")
    ap.add_argument("--extra-rungs", default="", help="rungs (build options) run after ncu and lab run")
    ap.add_argument("--tiles", action="store_true", help="only tensor_core_tf32's builds (TILE_BUILDS), a table")
    args = ap.parse_args()
    OUT = args.out
    shapes = CHECK_SHAPES[:3] if args.quick else CHECK_SHAPES
    tshapes = TIME_SHAPES[:2] if args.quick else TIME_SHAPES
    args.budget = args.budget or (85.0 if args.tiles else 200.0)
    if args.tiles:
        shapes = [TILE_CHECK] + ([CHECK_SHAPES[2]] if args.part == "rung:tensor_core_tf32" else [])
        tshapes = TILE_TIMES
    if args.part:  # a child: one part, its own JSON
        out = {"probes": {}, "checks": [], "times": []}
        rng = np.random.default_rng(0)
        try:
            kind, _, name = args.part.partition(":")
            if kind == "probe":
                part_probe(name, out, rng)
            elif kind == "ncu_target":
                part_ncu_target(name.split(","))
            elif kind == "rung":
                part_rung(name, out, rng, shapes, tshapes)
            else:
                part_torch(out, tshapes)
        except Exception as e:
            out["error"] = f"{args.part}: {type(e).__name__}: {' '.join(str(e).split())[:1500]}"
        save(out)
        return
    t_start = time.time()
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version(),
           "probes": {}, "checks": [], "times": [], "errors": []}
    try:
        import torch
        out["torch"], out["device"] = torch.__version__, torch.cuda.get_device_name()
        import numba_cuda_mlir
        out["compiler_version"] = getattr(numba_cuda_mlir, "__version__", "?")
    except Exception as e:
        out["errors"].append(f"versions: {e}")
    parts = ([f"probe:{p}" for p in args.probes.split(",") if p] + ["torch"]
             + [f"rung:{r}" for r in args.rungs.split(",") if r])
    if args.tiles:
        parts = ["torch"] + [f"rung:{r}" for r in TILE_BUILDS]
    def run_parts(parts):
        for part in parts:
            left = args.budget - (time.time() - t_start)
            if left < 10:
                out["errors"].append(f"{part}: not run, out of time")
                continue
            child = f"{OUT}.{part.replace(':', '_').replace(' ', '_')}.json"
            cmd = ([sys.executable, __file__, "--out", child, "--part", part] + (["--quick"] if args.quick else [])
                   + (["--tiles"] if args.tiles else []))
            t0 = time.time()
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
                tail = (r.stderr or "")[-1500:]
            except subprocess.TimeoutExpired:
                tail = "timed out"
            try:
                got = json.load(open(child))
            except Exception:
                got = {"error": f"{part}: no result; {tail}"}
            for key in ("checks", "times"):
                out[key] += got.get(key, [])
            out["probes"].update(got.get("probes", {}))
            if got.get("error"):
                out["errors"].append(got["error"] + (" | " + tail[-600:] if tail else ""))
            out.setdefault("part_seconds", {})[part] = round(time.time() - t0, 1)
            save(out)
    run_parts(parts)
    if args.tiles:
        print(tiles_table(out))
        return
    extra(args, out, t_start)
    run_parts([f"rung:{r}" for r in args.extra_rungs.split(",") if r])
    save(out)
    print(json.dumps(out, indent=1)[:8000])


def extra(args, out, t_start):
    """ncu metrics of the two rungs at 4096^3, and lab run's own check of them (the runner's path)."""
    import glob
    import shutil
    import subprocess

    ncu = shutil.which("ncu") or next(iter(sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)), None)
    if args.ncu and ncu:
        for metrics in (NCU_METRICS + [NCU_STALLS], NCU_METRICS[:6]):
            left = args.budget - (time.time() - t_start)
            if left < 20:
                break
            cmd = [ncu, "--csv", "--page", "raw", "-k", "regex:async_copy_kernel|tf32_kernel", "--launch-skip", "0",
                   "--launch-count", "4", "--metrics", ",".join(metrics),
                   sys.executable, __file__, "--out", OUT + ".ncu.json", "--part", "ncu_target:async_copy,tensor_core_tf32"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
                out["ncu"] = {"rc": r.returncode, "csv": r.stdout[-12000:], "stderr": r.stderr[-1500:]}
            except subprocess.TimeoutExpired:
                out["ncu"] = {"rc": "timeout"}
            save(out)
            if out["ncu"].get("rc") == 0:
                break
    elif args.ncu:
        out["ncu"] = {"rc": "ncu not found"}
    left = args.budget - (time.time() - t_start)
    if args.labrun and left > 30:
        cmd = [sys.executable, "-m", "lab", "run", "matmul", "--variant", "async_copy,tensor_core_tf32,wide_loads",
               "--size", "4096", "--repeats", "10", "--compiler", "numba-cuda-mlir", "--contenders", "numba,torch"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=left - 5)
            out["lab_run"] = {"rc": r.returncode, "stdout": r.stdout[-6000:], "stderr": r.stderr[-1500:]}
        except subprocess.TimeoutExpired as e:
            out["lab_run"] = {"rc": "timeout", "stdout": (e.stdout or b"")[-3000:].decode(errors="replace")
                              if isinstance(e.stdout, bytes) else str(e.stdout)[-3000:]}


if __name__ == "__main__":
    main()
