"""Kernels with one known bug each, for the GPU tests of ``lab sanitize``: compute-sanitizer must
report them at the lines marked below (a check that reports really reach file:line for Numba
kernels, so that "clean" for the lab's own kernels means something).

Run by :func:`lab.inspect.sanitize.run_tool` as its ``target`` (a child under compute-sanitizer,
called with the request and result paths), like :func:`lab.inspect.sanitize._child_main`.
"""
import json
import sys


def build():
    from kernels.compiler import cuda, float32

    @cuda.jit
    def race(x, out):
        s = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        s[t] = x[t]  # RACE_WRITE
        out[t] = s[63 - t]  # RACE_READ: no syncthreads between the write and this read of another warp's slot

    @cuda.jit
    def out_of_bounds(x, out):
        i = cuda.grid(1)
        out[i] = x[i] + 1  # OOB: no bounds guard, 64 threads for 40 elements

    return {"race": (race, 64, 64), "out_of_bounds": (out_of_bounds, 40, 64)}


def line_of(marker: str) -> int:
    """The line of this file that holds ``# MARKER``."""
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1) if f"# {marker}" in line)


def _child_main(request_path: str, result_path: str) -> None:
    from lab.core.simulator import select

    select("gpu")
    import numpy as np

    from kernels.compiler import cuda
    from lab.inspect.sanitize import kernel_key, lineinfo_on

    with open(request_path) as f:
        req = json.load(f)
    found = build()
    result = {"launched": {}, "skipped": {}, "broken": None}
    for name in req["variants"]:
        kernel, n, threads = found[name]
        lineinfo_on(kernel)
        x = cuda.to_device(np.arange(n, dtype=np.float32))
        out = cuda.to_device(np.zeros(n, dtype=np.float32))
        result["launched"][name] = [kernel_key(kernel)]
        try:
            kernel[1, threads](x, out)
            cuda.synchronize()
        except Exception as e:  # memcheck aborts the kernel: the context is gone
            result["broken"] = {"variant": name, "reason": f"{type(e).__name__}"}
            break
    with open(result_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    _child_main(sys.argv[1], sys.argv[2])
