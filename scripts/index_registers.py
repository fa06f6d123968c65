"""Registers a thread of softmax's register-resident rungs, and a minimal reproducer of why
numba-cuda-mlir 0.6 once needed far more of them than numba-cuda (docs/compilers.md, "Registers").

Offline, no GPU: each kernel is compiled to PTX for sm_90 by the compiler LAB_COMPILER names and
linked by nvJitLink (ptxas), whose report gives the registers. Run it once per compiler:

    LAB_COMPILER=numba-cuda NUMBA_ENABLE_CUDASIM=0 python scripts/index_registers.py
    LAB_COMPILER=numba-cuda-mlir python scripts/index_registers.py   # a Python >= 3.11 with numba-cuda-mlir

Prints one line a kernel: its name, registers a thread, spilled bytes, and how many 64-bit
multiplies (``mul.lo.s64``) its PTX has (numba-cuda-mlir multiplies every column index by the array's
inner stride at run time; numba-cuda knows a C-contiguous row has unit stride).

The reproducer: ``same_index`` loads K values at columns t + k * T, waits at a barrier, and stores
them back at the same expression; ``stepped`` stores them walking back from the last column.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
ARCH, CC = "sm_90", (9, 0)
K = 32  # values a thread: softmax's fused rung at 8192 columns and 256 threads
SIG = "(float32[:, ::1], float32[:, ::1])"


def _compiler():
    """(compile_ptx, uint64) of the compiler LAB_COMPILER names, told the target is sm_90 (no driver)."""
    if os.environ.get("LAB_COMPILER") == "numba-cuda-mlir":
        import numba_cuda_mlir.tools as tools

        tools._cached_cc = CC
        from numba_cuda_mlir import cuda
        from numba_cuda_mlir.types import uint64
    else:
        import numba.cuda.dispatcher as dispatcher
        from numba import cuda, uint64

        dispatcher.get_current_device = lambda: type("Target", (), {"compute_capability": CC})
    return cuda, uint64


cuda, uint64 = _compiler()


def same_index(x, out):
    v = cuda.local.array(K, x.dtype)
    t, T = uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    for k in range(K):
        v[k] = x[0, t + uint64(k) * T]
    cuda.syncthreads()
    for k in range(K):
        out[0, t + uint64(k) * T] = v[k]


def stepped(x, out):
    v = cuda.local.array(K, x.dtype)
    t, T = uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    for k in range(K):
        v[k] = x[0, t + uint64(k) * T]
    cuda.syncthreads()
    j = t + uint64(K) * T
    for k in range(K - 1, -1, -1):
        j -= T
        out[0, j] = v[k]


def main() -> int:
    from kernels import softmax
    from lab.core.compilers import nvjitlink_usage

    kernels = [("reproducer same_index", same_index, SIG), ("reproducer stepped", stepped, SIG)]
    for k in (8, 32):  # 8192 columns at 1024 threads (auto) and at 256 threads (lab counters' default)
        kernels += [(f"softmax fused K={k}", softmax.fused_resident_kernel(k), SIG),
                    (f"softmax online K={k}", softmax.online_resident_kernel(k), SIG)]
    f64 = SIG.replace("float32", "float64")
    kernels += [("softmax fused K=16 float64", softmax.fused_resident_kernel(16), f64),
                ("softmax online K=16 float64", softmax.online_resident_kernel(16), f64)]
    print(f"{os.environ.get('LAB_COMPILER') or 'numba-cuda'}, {ARCH}:")
    for name, kernel, sig in kernels:
        ptx, _ = cuda.compile_ptx(getattr(kernel, "py_func", kernel), sig, cc=CC)
        use = nvjitlink_usage(ptx.encode(), ARCH, False)
        print(f"  {name:30s} {use['registers']:4d} registers  {use['spill_bytes']:4d} B spilled  "
              f"{ptx.count('mul.lo.s64'):3d} mul.lo.s64")
    return 0


if __name__ == "__main__":
    sys.exit(main())
