"""Host latency per call of a 1024-element vecadd: Numba direct, the torch bridge, CuPy, torch.

    python -m torch_bridge.bench_launch [--n 1024] [--calls 2000] [--rounds 15] [--json PATH] [--profile N]

What is timed: the host time a call takes to return (``time.perf_counter`` around ``--calls``
back-to-back calls, divided by the calls), the median and the minimum over ``--rounds`` rounds,
after a warm-up; the GPU is synchronized between rounds, outside the timed loop. At 1024 elements
the kernel itself takes ~2 us of GPU time, so the host, not the GPU, sets the pace: this is the
launch overhead a small op pays. Output: a Markdown table (GPU only), headed by the device and the
compiler (``LAB_COMPILER``: numba-cuda-mlir launches a torch tensor through a device array made each
call); ``--json PATH``: the same rows as JSON ({"device", "compiler", "n", "rows": [[call, median us,
min us]]}) for docs/results/launch-overhead.json.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time


def measure(fn, calls, rounds, sync):
    for _ in range(max(50, calls // 10)):
        fn()
    sync()
    per_call = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per_call.append((time.perf_counter() - t0) / calls * 1e6)
        sync()
    return statistics.median(per_call), min(per_call)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", default=None, help="also write the rows as JSON to this path")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also print the N functions of most own time in a cProfile of --calls op calls")
    args = parser.parse_args(argv)

    import numba
    import numpy as np
    import torch

    import torch_bridge.lab_ops as L
    from kernels import vecadd as V
    from torch_bridge.launch import vecadd as fast_vecadd

    if L.SIMULATOR:
        print("the simulator is active: launch overhead needs a GPU")
        return 2
    from numba import cuda

    n = args.n
    rng = np.random.default_rng(0)
    ha, hb = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a, b = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
    c = torch.empty_like(a)
    da, db, dc = cuda.to_device(ha), cuda.to_device(hb), cuda.device_array(n, np.float32)
    cfg = V.launch((n,), L.THREADS)
    k = V.vecadd_kernel[cfg.grid, cfg.block]
    from kernels.compiler import COMPILER
    from kernels.compiler import cuda as kcuda

    if COMPILER == "numba-cuda":  # a torch tensor straight in (its __cuda_array_interface__, read each call)
        direct = ("Numba direct, torch tensors: kernel[grid, block](a, b, c)", lambda: k(a, b, c))
    else:  # numba-cuda-mlir takes no torch tensor: a device array over it, made each call
        direct = ("Numba direct, torch tensors wrapped each call: kernel[grid, block](as_cuda_array(a), ...)",
                  lambda: k(kcuda.as_cuda_array(a), kcuda.as_cuda_array(b), kcuda.as_cuda_array(c)))
    rows = [
        ("Numba direct, device arrays: kernel[grid, block](da, db, dc)", lambda: k(da, db, dc), cuda.synchronize),
        (*direct, cuda.synchronize),
        ("fast launch path, the lesson (torch_bridge.launch.vecadd, preallocated c)",
         lambda: fast_vecadd(a, b, c), torch.cuda.synchronize),
        ("bridge: torch.ops.lab.vecadd(a, b)", lambda: torch.ops.lab.vecadd(a, b), torch.cuda.synchronize),
    ]

    def inference(fn):
        def call():
            with torch.inference_mode():
                return fn()
        return call

    rows.append(("bridge under torch.inference_mode() (no autograd key)",
                 inference(lambda: torch.ops.lab.vecadd(a, b)), torch.cuda.synchronize))
    noop = _noop_op()
    rows.append(("torch's floor for such an op: a torch.library op registered as lab's, returning "
                 "torch.empty_like(a), no kernel", lambda: noop(a, b), torch.cuda.synchronize))
    try:
        import cupy as cp

        ca, cb, cc = cp.asarray(ha), cp.asarray(hb), cp.empty(n, cp.float32)
        sync = cp.cuda.Device().synchronize
        rows += [("CuPy: cupy.add(a, b, out=c)", lambda: cp.add(ca, cb, out=cc), sync),
                 ("CuPy: cupy.add(a, b)", lambda: cp.add(ca, cb), sync)]
        cupy_version = cp.__version__
    except ImportError:
        cupy_version = "not installed"
    rows += [("torch: torch.add(a, b, out=c)", lambda: torch.add(a, b, out=c), torch.cuda.synchronize),
             ("torch: a + b", lambda: a + b, torch.cuda.synchronize)]

    assert torch.equal(torch.ops.lab.vecadd(a, b), a + b) and torch.equal(fast_vecadd(a, b), a + b)
    results = [(label, *measure(fn, args.calls, args.rounds, sync)) for label, fn, sync in rows]
    cupy_us = next((m for label, m, _ in results if label.startswith("CuPy: cupy.add(a, b)")), None)
    print(f"Launch overhead, vecadd of {n} float32 elements: host time per call, median (min) of "
          f"{args.rounds} rounds x {args.calls} calls.  ")
    print(f"{torch.cuda.get_device_name()}, {datetime.date.today()}, Python {platform.python_version()}, "
          f"torch {torch.__version__}, numba {numba.__version__}, numba-cuda {_numba_cuda_version()}, "
          f"CuPy {cupy_version}, compiler {COMPILER}.\n")
    print("| call | us per call (median) | min | vs cupy.add(a, b) |")
    print("|---|---:|---:|---:|")
    for label, med, lo in results:
        ratio = f"{med / cupy_us:.2f}x" if cupy_us else "-"
        print(f"| {label} | {med:.1f} | {lo:.1f} | {ratio} |")
    plan = next((p for k, p in L._plans.items() if k[0] == "vecadd" and k[1] == (n,)), None)
    path = getattr(plan.fast, "path", "ordinary launch") if plan and plan.fast else "Variant.prepare each call"
    print(f"\nThe op's launch: {path}.")
    if args.profile:
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            torch.ops.lab.vecadd(a, b)
        prof.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(args.profile)
        print(f"\ncProfile of {args.calls} torch.ops.lab.vecadd calls, by own time:\n" +
              "\n".join(line for line in text.getvalue().splitlines() if line.strip())[-6000:])
    if args.json:
        import json

        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "compiler": COMPILER, "n": n,
                       "date": str(datetime.date.today()), "cupy": cupy_version, "torch": torch.__version__,
                       "op_launch": path,
                       "rows": [[label, round(med, 2), round(lo, 2)] for label, med, lo in results]}, f, indent=1)
    return 0


def _noop_op():
    """A torch.library op registered as torch_bridge.lab_ops registers its ops (define, an impl under
    CompositeExplicitAutograd, register_fake, register_autograd) whose impl only allocates its output:
    what torch's dispatcher and the autograd wrapper cost a call, before any check or launch."""
    import torch

    lib = torch.library.Library("lab_bench", "FRAGMENT")
    lib.define("noop(Tensor a, Tensor b) -> Tensor")
    lib.impl("noop", lambda a, b: torch.empty_like(a), "CompositeExplicitAutograd")
    torch.library.register_fake("lab_bench::noop", lambda a, b: torch.empty_like(a), lib=lib)
    torch.library.register_autograd("lab_bench::noop", lambda ctx, g: (g, g), lib=lib)
    _noop_op.lib = lib  # kept alive: a Library's registrations end with it
    return torch.ops.lab_bench.noop


def _numba_cuda_version():
    try:
        from importlib.metadata import version

        return version("numba-cuda")
    except Exception:
        return "?"


if __name__ == "__main__":
    raise SystemExit(main())
