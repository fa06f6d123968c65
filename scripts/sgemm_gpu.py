"""SGEMM rungs on a GPU: check, time against torch.matmul (cuBLAS, TF32 off), read registers.

Usage, from the repository root, on a machine with a CUDA GPU, torch (CUDA) and numba-cuda:

    python scripts/sgemm_gpu.py              # check every matmul rung, then time them (issue 18 shapes)
    python scripts/sgemm_gpu.py --configs    # time tile configurations of the gemm_kernel rungs
    python scripts/sgemm_gpu.py --shapes 4096,1000   # only these shapes (MxNxK or N)

Default mode:
1. every rung of ``kernels.matmul`` (and ``auto``) at a few small shapes that are not multiples of any
   tile, float32 and float64, checked the way ``lab run`` checks (poisoned outputs, canary, float64
   reference, the spec's tolerance: lab.core.check);
2. every rung and torch.matmul timed by the lab's timer at the issue's shapes and 4096^3, on the same
   inputs (float32); each rung's output is first compared with a float64 torch product (a loose
   sanity bound, 8 eps sqrt(K) |A| |B|: the strict check is step 1);
3. registers, local memory (spills) and static shared memory of each kernel the rungs launched
   (the CUDA driver's attributes, lab.core.resources).
``--configs``: the same for a list of GemmConfig tile configurations (CONFIGS below) and split-K
factors, at the shapes where they matter, so one GPU call gives tuning data.

A rung or configuration that fails (compile error, out of resources, wrong result) is printed as one
line and skipped. Runs in well under 3 minutes on an H100 (compiles included).
Timing: per (shape, contender) the median ms a call of lab.core.timing's Timer, as ``lab run`` times
(warm-up, then one CUDA event pair a call, the calls queued behind a blocked GPU so that no host launch
gap is timed, the L2 flushed before each call), under RULE: the lab's stop rule with shorter minimums,
so that a few hundred rows fit the budget. TFLOP/s = 2 M N K / time.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from lab.core.stopping import StopRule  # noqa: E402

# (M, N, K) and what each is, from issue 18's table
SHAPES = [((4096, 4096, 4096), "headline"), ((4000, 1000, 3000), "rectangular"), ((1000, 1000, 1000), "mid"),
          ((2048, 2048, 64), "short K"), ((3000, 3000, 40), "short K"), ((2000, 64, 2000), "skinny N"),
          ((64, 64, 65536), "long K"), ((512, 512, 512), "small"), ((300, 300, 300), "small"),
          ((1024, 1024, 1024), "mid"), ((2048, 2048, 2048), "large")]
CHECK_SHAPES = [(1, 1, 1), (37, 41, 45), (130, 129, 67), (200, 130, 48), (257, 300, 130), (64, 66, 1000)]
CHECK_SHAPES_F64 = [(37, 41, 45), (200, 130, 48)]
# lab run's stop rule (at least 10 calls, more while the noise IQR / median is above 1%) with 0.02 s of
# measured time at least and 0.3 s at most a row instead of 0.25 s and 3 s: ~250 rows in the budget
RULE = StopRule(min_time_s=0.02, time_limit_s=0.3)
T0 = time.perf_counter()
BUDGET_S = [170.0]  # --budget: shapes still to run after this many seconds are skipped, and said so


def over_budget(what: str) -> bool:
    if time.perf_counter() - T0 > BUDGET_S[0]:
        print(f"  (budget of {BUDGET_S[0]:.0f} s spent: {what} skipped)", flush=True)
        return True
    return False


def parse_shape(s: str):
    parts = [int(x) for x in s.lower().split("x")]
    return tuple(parts * 3) if len(parts) == 1 else tuple(parts)


def short(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0][:150] if lines else ''}"


class Bench:
    def __init__(self):
        import torch

        from kernels.compiler import SIMULATOR, cuda

        if SIMULATOR:
            sys.exit("sgemm_gpu.py needs a GPU (numba-cuda is in simulator mode)")
        if not torch.cuda.is_available():
            sys.exit("sgemm_gpu.py needs torch with CUDA")
        torch.backends.cuda.matmul.allow_tf32 = False  # FP32 FMAs, as the Numba kernels (torch_bridge does the same)
        self.torch, self.cuda = torch, cuda
        self.dev = torch.device("cuda")
        self.resources = {}  # kernel label -> (registers, local bytes, shared bytes)
        self.timings = {}  # how rows were timed (Measurement.method; the blocker) -> how many rows

    def inputs(self, size, seed=0):
        torch = self.torch
        m, n, k = size
        g = torch.Generator(device=self.dev).manual_seed(seed)
        A = torch.randn((m, k), device=self.dev, generator=g, dtype=torch.float32)
        B = torch.randn((k, n), device=self.dev, generator=g, dtype=torch.float32)
        return A, B

    def reference(self, A, B):
        """(float64 product, loose bound 8 eps32 sqrt(K) |A| @ |B|)."""
        A64, B64 = A.double(), B.double()
        k = A.shape[1]
        bound = 8 * 2.0 ** -24 * max(1.0, k) ** 0.5 * (A64.abs() @ B64.abs()) + 1e-30
        return A64 @ B64, bound

    def time_call(self, fn) -> float:
        """Median ms a call of ``fn`` (it enqueues on the default stream): lab.core.timing's Timer
        under RULE, as ``lab run`` times a row."""
        from lab.core.timing import Timer

        m = Timer(fn, "device", self.torch.cuda.synchronize).measure(rule=RULE)
        how = f"{m.method}; {m.meta.get('blocker', '')}"
        self.timings[how] = self.timings.get(how, 0) + 1
        return m.median_ms

    def numba_call(self, variant_or_cfg, A, B, C, splits=1):
        """An enqueue function for a rung (Variant) or a GemmConfig, on torch tensors."""
        from kernels.gemm import config as GC, rungs as GR

        a, b, c = (self.cuda.as_cuda_array(t) for t in (A, B, C))
        m, n, k = A.shape[0], B.shape[1], A.shape[1]
        if isinstance(variant_or_cfg, GC.GemmConfig):
            return GR.gemm_prepare_config(variant_or_cfg, [a, b], [c], splits)
        cfg = variant_or_cfg.launch((m, n, k), 256)
        return variant_or_cfg.prepare(cfg, [a, b], [c])

    def record_resources(self, fn):
        from lab.core import resources

        recs = []
        with resources.launched(recs):
            fn()
        self.torch.cuda.synchronize()
        labels = []
        for r in recs:
            label = r.label
            if label.startswith("gemm_kernel("):  # gemm_kernel('bm=128,...'): the config's short name
                from kernels.gemm.config import GemmConfig

                label = "gemm " + GemmConfig.parse(label[len("gemm_kernel('"):-2]).label
            out = next((a for a in r.argtypes[2:3] if a[0] == "array"), r.argtypes[0] if r.argtypes else ("", "?"))
            label = f"{label} {np.dtype(out[1]).name if out[0] == 'array' else ''}".strip()
            try:
                u = resources.device_resources(r)
                self.resources[label] = (u["registers"], u["local_bytes"], u["shared_bytes"])
            except Exception as e:
                self.resources[label] = (short(e), "", "")
            labels.append(label)
        return labels

    def sane(self, fn, C, ref, bound) -> str | None:
        C.fill_(float("nan"))
        fn()
        self.torch.cuda.synchronize()
        err = (C.double() - ref).abs()
        bad = ~(err <= bound)
        if bool(bad.any()):
            return f"WRONG: {int(bad.sum())} of {C.numel()} elements outside the sanity bound (max err {float(err.nan_to_num(float('inf')).max()):.3g})"
        return None


def check_rungs(spec):
    """Step 1: every rung at small awkward shapes, the lab's own check. Returns the rungs that failed."""
    from lab.core import contenders as C
    from lab.core.check import check_prepared

    rng = np.random.default_rng(18)
    failed = set()
    print("== check: every rung vs the float64 reference (lab.core.check), shapes not multiples of a tile")
    for dtype, shapes in ((np.float32, CHECK_SHAPES), (np.float64, CHECK_SHAPES_F64)):
        for name, v in spec.variants.items():
            bad = []
            for size in shapes:
                try:
                    inputs = spec.make_inputs(size, np.dtype(dtype), rng)
                    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
                    tols = spec.tolerance(inputs, refs, np.dtype(dtype))
                    prepared = C.prepare_numba(spec, size, v, v.launch(size, 256), inputs, False)
                    checked = check_prepared(prepared, refs, tols, spec.out_specs(size, np.dtype(dtype)))
                    if not checked.verdict.ok:
                        bad.append(f"{'x'.join(map(str, size))}: {checked.verdict.reason[:100]}")
                except Exception as e:
                    bad.append(f"{'x'.join(map(str, size))}: {short(e)}")
            status = "ok" if not bad else "FAIL " + "; ".join(bad[:2])
            if bad:
                failed.add(name)
            print(f"  {np.dtype(dtype).name:8s} {name:15s} {len(shapes)} shapes {status}", flush=True)
    return failed


def fmt_shape(size):
    return "x".join(map(str, size))


def torch_case(bench, size):
    """(A, B, C, ref, bound, torch ms) of one shape: random float32 inputs, an output, the float64
    reference and its error bound, and torch.matmul timed into C; None (printed) where torch fails."""
    m, n, _ = size
    try:
        A, B = bench.inputs(size)
        C = bench.torch.empty((m, n), device=bench.dev, dtype=bench.torch.float32)
        ref, bound = bench.reference(A, B)
        return A, B, C, ref, bound, bench.time_call(lambda: bench.torch.matmul(A, B, out=C))
    except Exception as e:
        print(f"{fmt_shape(size)}: torch failed: {short(e)}")
        return None


def run_rungs(bench, spec, shapes, skip):
    print("\n== time: float32, median ms a call (lab.core.timing), TFLOP/s, ratio = torch ms / rung ms")
    rungs = [r for r in spec.variants if r not in skip]
    table = {}
    for size, what in shapes:
        m, n, k = size
        flops = 2 * m * n * k
        if over_budget(fmt_shape(size)):
            continue
        case = torch_case(bench, size)
        if case is None:
            continue
        A, B, C, ref, bound, t_ms = case
        print(f"{fmt_shape(size)} ({what}, {flops / 2**27:.1f} x 2^27 FLOPs): torch {t_ms:.4f} ms "
              f"{flops / t_ms / 1e9:.1f} TFLOP/s", flush=True)
        for r in rungs:
            v = spec.variants[r]
            if r in ("naive",) and flops > 2 ** 36:
                continue  # ~100 ms a call at 4096^3: its figure is in docs/benchmarks.md
            try:
                note = v.launch(size, 256)
                fn = bench.numba_call(v, A, B, C)
                wrong = bench.sane(fn, C, ref, bound)
                if wrong:
                    print(f"  {r:15s} {wrong}")
                    table[(size, r)] = None
                    continue
                labels = bench.record_resources(fn)
                ms = bench.time_call(fn)
                table[(size, r)] = t_ms / ms
                extra = f" [{note.rung}]" if note.rung else ""
                print(f"  {r:15s} {ms:9.4f} ms {flops / ms / 1e9:6.1f} TFLOP/s {t_ms / ms:5.2f}x{extra}  "
                      f"{', '.join(labels)[:70]}", flush=True)
            except Exception as e:
                table[(size, r)] = None
                print(f"  {r:15s} ERROR {short(e)}", flush=True)
        del A, B, C, ref, bound
        bench.torch.cuda.empty_cache()
    # summary: ratio to torch per shape x rung
    print("\n== ratio to torch.matmul (higher is better; '-' not run or failed)")
    abbrev = {r: r[:7] for r in rungs}
    print(f"{'shape':>16s} " + " ".join(f"{abbrev[r]:>7s}" for r in rungs))
    for size, _ in shapes:
        cells = []
        for r in rungs:
            x = table.get((size, r))
            cells.append(f"{x:7.2f}" if x else f"{'-':>7s}")
        print(f"{fmt_shape(size):>16s} " + " ".join(cells))


def config_list():
    """Tile configurations worth timing (GemmConfig keys are what a tuner would store)."""
    from kernels import matmul as MM
    from kernels.gemm import config as GC

    base = MM.WARP_TILED
    cands = [
        ("warp_tiled", base),
        ("wide_loads", GC.WIDE_LOADS),
        ("x2 bk8", GC.WIDE_LOADS.replace(bk=8)),
        ("x2 pad0 (conflicts)", GC.WIDE_LOADS.replace(pad=0)),
        ("x2 single buffer", GC.WIDE_LOADS.replace(prefetch=False)),
        ("x2 bk32 single buf", GC.WIDE_LOADS.replace(bk=32, prefetch=False)),
        ("x2 t8x8 w64x64/2", GC.WIDE_LOADS.replace(wniter=2, tn=8)),
        ("x2 w32x128", GC.WIDE_LOADS.replace(wm=32, wn=128)),
        ("x2 256t 8x8", GC.WIDE_LOADS.replace(wm=64, wn=32, wniter=2, threads=256)),
        ("x2 256t 8x8 lb1", GC.WIDE_LOADS.replace(wm=64, wn=32, wniter=2, threads=256, min_blocks=1)),
        ("x2 128x64", GC.WIDE_LOADS.replace(bn=64, wn=32, wniter=2, min_blocks=3)),
        ("x2 256x128 bk8", GC.WIDE_LOADS.replace(bm=256, bk=8, threads=256, min_blocks=1)),
        ("small 64x64", GC.SMALL_CONFIGS[0]),
        ("small 32x64", GC.SMALL_CONFIGS[1]),
        ("small 32x32", GC.SMALL_CONFIGS[2]),
        ("small 64x64 x1", GC.SMALL_CONFIGS[0].replace(pairs=False)),
        ("64x64 bk32 sb", GC.SMALL_CONFIGS[0].replace(bk=32, prefetch=False)),
    ]
    return cands


CONFIG_SHAPES = [(4096, 4096, 4096), (4000, 1000, 3000), (1000, 1000, 1000), (2048, 2048, 64), (3000, 3000, 40),
                 (2000, 64, 2000), (512, 512, 512), (300, 300, 300)]
SPLIT_SHAPES = [(64, 64, 65536), (512, 512, 512), (128, 128, 32768)]
SPLIT_CONFIGS = [("small 64x64", 0), ("small 32x32", 2)]


def run_configs(bench, shapes):
    from kernels.gemm import config as GC

    cands = config_list()
    print("== configs: GemmConfig builds (x2 = float32 pairs through float64 views); ratio = torch / config")
    for name, cfg in cands:
        try:
            cfg.derived()
            print(f"  {name:22s} {cfg.label}")
        except Exception as e:
            print(f"  {name:22s} invalid: {short(e)}")
    best = {}
    for size in shapes:
        m, n, k = size
        flops = 2 * m * n * k
        if over_budget(fmt_shape(size)):
            continue
        case = torch_case(bench, size)
        if case is None:
            continue
        A, B, C, ref, bound, t_ms = case
        print(f"\n{fmt_shape(size)}: torch {t_ms:.4f} ms {flops / t_ms / 1e9:.1f} TFLOP/s", flush=True)
        trials = [(name, cfg, 1) for name, cfg in cands]
        if size in SPLIT_SHAPES or k >= 16 * max(m, n):
            trials += [(f"{name} split {s}", GC.SMALL_CONFIGS[i], s) for name, i in SPLIT_CONFIGS for s in (2, 4, 8, 16, 32)]
        for name, cfg, splits in trials:
            try:
                fn = bench.numba_call(cfg, A, B, C, splits)
                wrong = bench.sane(fn, C, ref, bound)
                if wrong:
                    print(f"  {name:28s} {wrong}")
                    continue
                labels = bench.record_resources(fn)
                ms = bench.time_call(fn)
                regs = bench.resources.get(labels[0], ("?", "?", "?")) if labels else ("?", "?", "?")
                print(f"  {name:28s} {ms:9.4f} ms {flops / ms / 1e9:6.1f} TFLOP/s {t_ms / ms:5.2f}x  "
                      f"regs {regs[0]} local {regs[1]} smem {regs[2]}", flush=True)
                if ms < best.get(size, (float("inf"),))[0]:
                    best[size] = (ms, name, cfg.key, splits, t_ms / ms)
            except Exception as e:
                print(f"  {name:28s} ERROR {short(e)}", flush=True)
        del A, B, C, ref, bound
        bench.torch.cuda.empty_cache()
    print("\n== best configuration a shape")
    for size, (ms, name, key, splits, ratio) in best.items():
        print(f"  {fmt_shape(size):>16s} {ratio:5.2f}x {ms:.4f} ms  {name} (splits {splits})")
        print(f"  {'':16s} key: {key}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", action="store_true", help="time GemmConfig tile configurations instead")
    p.add_argument("--shapes", help="comma-separated shapes, MxNxK or N (default: issue 18's)")
    p.add_argument("--no-check", action="store_true", help="skip the small-shape check (default mode)")
    p.add_argument("--budget", type=float, default=BUDGET_S[0], help="seconds; later shapes are skipped")
    args = p.parse_args(argv)
    BUDGET_S[0] = args.budget
    bench = Bench()
    import kernels

    spec = kernels.load("matmul")
    dev = bench.torch.cuda.get_device_name()
    print(f"device: {dev}; torch {bench.torch.__version__}; TF32 off; numba-cuda rungs: {', '.join(spec.variants)}")
    if args.configs:
        shapes = [parse_shape(s) for s in args.shapes.split(",")] if args.shapes else CONFIG_SHAPES + [SPLIT_SHAPES[0]]
        run_configs(bench, shapes)
    else:
        failed = set() if args.no_check else check_rungs(spec)
        shapes = [(parse_shape(s), "asked") for s in args.shapes.split(",")] if args.shapes else SHAPES
        run_rungs(bench, spec, shapes, skip=set())
        if failed:
            print(f"\nrungs that FAILED the small-shape check: {', '.join(sorted(failed))}")
    print("\n== kernels launched: registers a thread, local bytes a thread (spills), static shared bytes a block")
    for label, (regs, local, smem) in sorted(bench.resources.items()):
        print(f"  {label[:60]:60s} {regs!s:>4} {local!s:>5} {smem!s:>6}")
    print("\n== timing: rows timed so (lab.core.timing)")
    for how, n in bench.timings.items():
        print(f"  {n:4d} rows: {how}")
    print(f"\ntotal {time.perf_counter() - T0:.0f} s")


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception:
        traceback.print_exc()
        sys.exit(1)
