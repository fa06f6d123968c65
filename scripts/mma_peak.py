"""The throughput ceiling of ``mma.sync`` on this GPU, measured from a Numba kernel; under 30 s.

    PYTHONPATH=/tmp/ncm:$PWD LAB_COMPILER=numba-cuda-mlir python scripts/mma_peak.py [out.json]

The lab's tensor-core rungs (kernels/gemm/tensor_core_tf32.py, tensor_core_bf16.py) issue the Ampere
warp-level ``mma.sync``; Hopper's dense peaks (H100 SXM: about 495 TFLOP/s TF32, 989 bf16) are quoted for
the warpgroup ``wgmma.mma_async``. This script measures what ``mma.sync`` alone can reach: no memory
traffic, operands in registers, each warp running CHAINS independent accumulator chains (CHAINS mmas in
flight before the first result is needed: enough ILP to hide the mma latency), WARPS warps a block,
BLOCKS_PER_SM blocks an SM, a loop of ``iters`` steps. Two instructions:

* TF32 ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``: 2 x 16 x 8 x 8 = 2,048 FLOPs each;
* bf16 ``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32``: 4,096 FLOPs each.

TFLOP/s = launched mmas x FLOPs / seconds (the median launch, timed by lab.core.timing's Timer as every
published number is: CUDA events, the launch queued behind a blocked GPU, its stop rule capped at
TIME_LIMIT_S; after a warm-up launch that also compiles). The accumulators are summed into one store per thread so no chain is
dead code. Prints one line per instruction beside the quoted dense peak; the JSON (path argument) holds
the same numbers. The gap between "measured" and "peak" is the part of the ceiling a ``mma.sync`` kernel
cannot reach on Hopper whatever its memory pipeline does.

Sources: PTX ISA 8.x, "Warp-level matrix multiply-accumulate instructions" (mma.sync m16n8k8 .tf32,
m16n8k16 .bf16); NVIDIA H100 Tensor Core GPU Architecture whitepaper (dense TF32 / BF16 peaks, SXM5).
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

os.environ.setdefault("LAB_COMPILER", "numba-cuda-mlir")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kernels.compiler import cuda, float32, int32  # noqa: E402  (after LAB_COMPILER is set)
from kernels.gemm import mma, mma_bf16  # noqa: E402
from lab.core.stopping import StopRule  # noqa: E402
from lab.core.timing import Timer  # noqa: E402

WARPS = 8  # warps a block (256 threads)
BLOCKS_PER_SM = 4  # 32 warps an SM: 8 a sub-partition
CHAINS = 8  # independent accumulator chains a warp
TIME_LIMIT_S = 3.0  # the stop rule's wall-clock limit a kernel (a launch takes milliseconds)
PEAKS = {"tf32": 494.7, "bf16": 989.4}  # H100 SXM5 dense TFLOP/s (whitepaper), reached with wgmma
FLOPS = {"tf32": 2 * 16 * 8 * 8, "bf16": 2 * 16 * 8 * 16}


@cuda.jit(device=True, forceinline=True)
def _init(t, c):
    """A distinct float32 start for chain c of thread t (equal chains could be merged by the compiler)."""
    return float32(t * 0.001 + c)


@cuda.jit
def tf32_peak(iters, out):
    """out[thread] = the sum of the thread's 32 accumulators after ``iters`` x CHAINS m16n8k8 TF32 mmas."""
    t = cuda.grid(1)
    a0 = int32(0x3A800000 + (t & 255))  # about 1e-3: TF32 bits (the low 13 ignored)
    a1 = int32(0x3A810000 + (t & 127))
    a2 = int32(0x3A820000)
    a3 = int32(0x3A830000)
    b0 = int32(0x3A840000 + (t & 63))
    b1 = int32(0x3A850000)
    c00, c01, c02, c03 = _init(t, 0), _init(t, 1), _init(t, 2), _init(t, 3)
    c10, c11, c12, c13 = _init(t, 4), _init(t, 5), _init(t, 6), _init(t, 7)
    c20, c21, c22, c23 = _init(t, 8), _init(t, 9), _init(t, 10), _init(t, 11)
    c30, c31, c32, c33 = _init(t, 12), _init(t, 13), _init(t, 14), _init(t, 15)
    c40, c41, c42, c43 = _init(t, 16), _init(t, 17), _init(t, 18), _init(t, 19)
    c50, c51, c52, c53 = _init(t, 20), _init(t, 21), _init(t, 22), _init(t, 23)
    c60, c61, c62, c63 = _init(t, 24), _init(t, 25), _init(t, 26), _init(t, 27)
    c70, c71, c72, c73 = _init(t, 28), _init(t, 29), _init(t, 30), _init(t, 31)
    for _ in range(iters):
        c00, c01, c02, c03 = mma.mma_tf32(a0, a1, a2, a3, b0, b1, c00, c01, c02, c03)
        c10, c11, c12, c13 = mma.mma_tf32(a0, a1, a2, a3, b0, b1, c10, c11, c12, c13)
        c20, c21, c22, c23 = mma.mma_tf32(a0, a1, a2, a3, b0, b1, c20, c21, c22, c23)
        c30, c31, c32, c33 = mma.mma_tf32(a0, a1, a2, a3, b0, b1, c30, c31, c32, c33)
        c40, c41, c42, c43 = mma.mma_tf32(a0, a1, a2, a3, b0, b1, c40, c41, c42, c43)
        c50, c51, c52, c53 = mma.mma_tf32(a0, a1, a2, a3, b0, b1, c50, c51, c52, c53)
        c60, c61, c62, c63 = mma.mma_tf32(a0, a1, a2, a3, b0, b1, c60, c61, c62, c63)
        c70, c71, c72, c73 = mma.mma_tf32(a0, a1, a2, a3, b0, b1, c70, c71, c72, c73)
    out[t] = (c00 + c01 + c02 + c03 + c10 + c11 + c12 + c13 + c20 + c21 + c22 + c23 + c30 + c31 + c32 + c33
              + c40 + c41 + c42 + c43 + c50 + c51 + c52 + c53 + c60 + c61 + c62 + c63 + c70 + c71 + c72 + c73)


@cuda.jit
def bf16_peak(iters, out):
    """out[thread] = the sum of the thread's 32 accumulators after ``iters`` x CHAINS m16n8k16 bf16 mmas."""
    t = cuda.grid(1)
    a0 = int32(0x3A803A80 + (t & 7))  # two bf16 of about 1e-3 a register
    a1 = int32(0x3A813A81)
    a2 = int32(0x3A823A82 + (t & 3))
    a3 = int32(0x3A833A83)
    b0 = int32(0x3A843A84 + (t & 15))
    b1 = int32(0x3A853A85)
    c00, c01, c02, c03 = _init(t, 0), _init(t, 1), _init(t, 2), _init(t, 3)
    c10, c11, c12, c13 = _init(t, 4), _init(t, 5), _init(t, 6), _init(t, 7)
    c20, c21, c22, c23 = _init(t, 8), _init(t, 9), _init(t, 10), _init(t, 11)
    c30, c31, c32, c33 = _init(t, 12), _init(t, 13), _init(t, 14), _init(t, 15)
    c40, c41, c42, c43 = _init(t, 16), _init(t, 17), _init(t, 18), _init(t, 19)
    c50, c51, c52, c53 = _init(t, 20), _init(t, 21), _init(t, 22), _init(t, 23)
    c60, c61, c62, c63 = _init(t, 24), _init(t, 25), _init(t, 26), _init(t, 27)
    c70, c71, c72, c73 = _init(t, 28), _init(t, 29), _init(t, 30), _init(t, 31)
    for _ in range(iters):
        c00, c01, c02, c03 = mma_bf16.mma_bf16(a0, a1, a2, a3, b0, b1, c00, c01, c02, c03)
        c10, c11, c12, c13 = mma_bf16.mma_bf16(a0, a1, a2, a3, b0, b1, c10, c11, c12, c13)
        c20, c21, c22, c23 = mma_bf16.mma_bf16(a0, a1, a2, a3, b0, b1, c20, c21, c22, c23)
        c30, c31, c32, c33 = mma_bf16.mma_bf16(a0, a1, a2, a3, b0, b1, c30, c31, c32, c33)
        c40, c41, c42, c43 = mma_bf16.mma_bf16(a0, a1, a2, a3, b0, b1, c40, c41, c42, c43)
        c50, c51, c52, c53 = mma_bf16.mma_bf16(a0, a1, a2, a3, b0, b1, c50, c51, c52, c53)
        c60, c61, c62, c63 = mma_bf16.mma_bf16(a0, a1, a2, a3, b0, b1, c60, c61, c62, c63)
        c70, c71, c72, c73 = mma_bf16.mma_bf16(a0, a1, a2, a3, b0, b1, c70, c71, c72, c73)
    out[t] = (c00 + c01 + c02 + c03 + c10 + c11 + c12 + c13 + c20 + c21 + c22 + c23 + c30 + c31 + c32 + c33
              + c40 + c41 + c42 + c43 + c50 + c51 + c52 + c53 + c60 + c61 + c62 + c63 + c70 + c71 + c72 + c73)


KERNELS = {"tf32": tf32_peak, "bf16": bf16_peak}
SIG = "(int32, float32[::1])"


def measure(name, sms, iters):
    """(TFLOP/s, seconds of the median launch) of KERNELS[name] on ``sms`` x BLOCKS_PER_SM blocks."""
    blocks, threads = sms * BLOCKS_PER_SM, WARPS * 32
    out = cuda.to_device(np.zeros(blocks * threads, np.float32))
    kernel = KERNELS[name]
    kernel[blocks, threads](np.int32(16), out)  # compile, warm up
    cuda.synchronize()
    m = Timer(lambda: kernel[blocks, threads](np.int32(iters), out), "device", cuda.synchronize).measure(
        warmup=1, rule=StopRule(time_limit_s=TIME_LIMIT_S))
    secs = m.median_ms / 1e3
    if not np.isfinite(out.copy_to_host()).all():
        raise RuntimeError(f"{name}: non-finite accumulators")
    mmas = blocks * WARPS * iters * CHAINS
    return mmas * FLOPS[name] / secs / 1e12, secs


def main(argv):
    from kernels.spec import sm_count

    sms = sm_count()
    try:
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    except Exception:  # the name is decoration
        name = "?"
    result = {"device": name, "sms": sms, "warps_per_block": WARPS, "blocks_per_sm": BLOCKS_PER_SM,
              "chains": CHAINS, "instructions": {}}
    for kind, instr in (("tf32", "mma.sync m16n8k8 tf32"), ("bf16", "mma.sync m16n8k16 bf16")):
        iters = 5000
        tflops, secs = measure(kind, sms, iters)
        result["instructions"][kind] = {"instruction": instr, "tflops": round(tflops, 1), "seconds": round(secs, 4),
                                        "iters": iters, "peak_tflops": PEAKS[kind],
                                        "fraction_of_peak": round(tflops / PEAKS[kind], 3)}
        print(f"{instr:24s} {tflops:7.1f} TFLOP/s measured  ({secs * 1e3:.1f} ms)   "
              f"dense peak {PEAKS[kind]:.0f} (wgmma)  = {tflops / PEAKS[kind]:.2f} of it", flush=True)
    print(f"{name}, {sms} SMs, {BLOCKS_PER_SM} blocks x {WARPS} warps an SM, {CHAINS} chains a warp")
    if argv:
        with open(argv[0], "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
