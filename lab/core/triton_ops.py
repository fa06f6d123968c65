"""Triton contender ops for ``lab run``: a tiled matmul (FP32 and TF32) and a fused softmax.

Triton is what a kernel hacker compares a Python kernel against: a block-level language (one
*program* computes a tile; Triton picks the threads, shared memory and tensor-core instructions).
Each op has the shape of the torch contenders (torch_bridge.contenders): ``fn(*inputs, out=outputs)``
on torch tensors, returning the outputs; which kernel gets which op is declared in
lab/core/registry.py (library ``"triton"``), and each is checked like every contender.

Where they run: on the GPU where Triton is installed (it comes with CUDA builds of torch); else, where
Triton and torch are installed, on the CPU under Triton's interpreter (``TRITON_INTERPRET=1``, set
here before the kernels are defined: it must be set when ``@triton.jit`` runs). Interpreted rows say
so in their label; their times are the interpreter's (NumPy), not a GPU's. The interpreter runs
``tl.dot`` in float32 whatever ``input_precision`` says (no TF32 rounding).

* ``matmul_fp32``: C = A @ B, one program a BM x BN tile of C, a loop over K in BK steps, the two
  tiles loaded with masks (any M, N, K), ``tl.dot(..., input_precision="ieee")``: float32 FMAs, no
  tensor cores. Programs are ordered in groups of GROUP tile rows, so the tiles of B a group reads
  stay in L2 (Triton tutorial 03, "Matrix Multiplication", "L2 Cache Optimizations").
* ``matmul_tf32``: the same program with ``input_precision="tf32"``: tensor cores on inputs rounded
  to TF32 (10 mantissa bits), float32 accumulation. Checked at a tolerance of that mantissa
  (registry option ``tf32``).
* ``softmax``: one program a row. A row of at most ONE_PASS_COLS columns is read once into
  registers (max, exp, sum, divide, write: Triton tutorial 02, "Fused Softmax"); a longer row in
  two passes, the first keeping a running max and a sum rescaled when the max grows (Milakov and
  Gimelshein 2018, "Online normalizer calculation for softmax").

Float64 inputs: the FP32 matmul and softmax compute in float64; the TF32 matmul rounds to float32
first (it is float32-inside). Nothing here imports Triton or torch until an op runs.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

INTERPRET_ENV = "TRITON_INTERPRET"
ONE_PASS_COLS = 8192  # longest row read once into registers by the softmax
_K: dict = {}  # the @triton.jit kernels, defined on first use


def installed() -> bool:
    """Whether Triton and torch are importable."""
    return all(importlib.util.find_spec(m) is not None for m in ("triton", "torch"))


def interpreted() -> bool:
    """Whether the ops run in Triton's CPU interpreter: ``TRITON_INTERPRET=1``, the CUDA simulator
    is active, the driver reports no GPU, or torch has no CUDA device."""
    if os.environ.get(INTERPRET_ENV, "0") not in ("", "0"):
        return True
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return True
    from kernels.backend import gpu_count

    if gpu_count()[0] == 0:
        return True
    import torch

    return not torch.cuda.is_available()


def why_unavailable() -> str | None:
    """None when the Triton contender can run here (on a GPU, or interpreted), else why not."""
    if importlib.util.find_spec("torch") is None:
        return "needs torch (pip install 'numba-gpu-lab[torch]')"
    if importlib.util.find_spec("triton") is None:
        return "not installed (pip install triton; CUDA builds of torch bring it)"
    return None


def _suffix() -> str:
    return ", interpreted on the CPU" if interpreted() else ""


def matmul_fp32_label() -> str:
    return "tiled matmul (tl.dot FP32" + _suffix() + ")"


def matmul_tf32_label() -> str:
    return "tiled matmul (tl.dot TF32" + _suffix() + ")"


def softmax_label() -> str:
    return "fused softmax (a program a row" + _suffix() + ")"


def _kernels() -> dict:
    """Define the Triton kernels once, after choosing compiled or interpreted."""
    if _K:
        return _K
    if interpreted():
        os.environ[INTERPRET_ENV] = "1"  # read by @triton.jit below
    import triton
    import triton.language as tl

    @triton.jit
    def matmul_kernel(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
                      PREC: tl.constexpr, ACC: tl.constexpr, TO32: tl.constexpr):
        pid = tl.program_id(0)
        tiles_m = tl.cdiv(M, BM)
        tiles_n = tl.cdiv(N, BN)
        per_group = GROUP * tiles_n
        first_m = (pid // per_group) * GROUP
        rows = tl.minimum(tiles_m - first_m, GROUP)
        pid_m = first_m + (pid % per_group) % rows
        pid_n = (pid % per_group) // rows
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = A + rm[:, None] * sam + rk[None, :] * sak
        b_ptrs = B + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=ACC)
        for k0 in range(0, K, BK):
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k0 < K), other=0.0)
            b = tl.load(b_ptrs, mask=(rk[:, None] + k0 < K) & (rn[None, :] < N), other=0.0)
            if TO32:
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            acc = tl.dot(a, b, acc, input_precision=PREC)
            a_ptrs += BK * sak
            b_ptrs += BK * sbk
        tl.store(C + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    @triton.jit
    def softmax_kernel(X, Y, cols, sx, sy, BLOCK: tl.constexpr, ONE: tl.constexpr, ACC: tl.constexpr):
        row = tl.program_id(0)
        xrow = X + row * sx
        yrow = Y + row * sy
        offs = tl.arange(0, BLOCK)
        if ONE:  # the whole row in registers: one read, one write
            x = tl.load(xrow + offs, mask=offs < cols, other=-float("inf")).to(ACC)
            e = tl.exp(x - tl.max(x, 0))
            tl.store(yrow + offs, e / tl.sum(e, 0), mask=offs < cols)
        else:  # pass 1: a running max and a sum rescaled when it grows, per lane; pass 2: write
            m = tl.full((BLOCK,), -float("inf"), ACC)
            s = tl.zeros((BLOCK,), ACC)
            for c0 in range(0, cols, BLOCK):
                x = tl.load(xrow + c0 + offs, mask=c0 + offs < cols, other=-float("inf")).to(ACC)
                new = tl.maximum(m, x)
                safe = tl.where(new == -float("inf"), 0.0, new)  # no inf - inf: a lane that saw only -inf sums 0
                s = s * tl.exp(m - safe) + tl.exp(x - safe)
                m = new
            top = tl.max(m, 0)
            total = tl.sum(s * tl.exp(m - top), 0)
            for c0 in range(0, cols, BLOCK):
                x = tl.load(xrow + c0 + offs, mask=c0 + offs < cols, other=-float("inf")).to(ACC)
                tl.store(yrow + c0 + offs, tl.exp(x - top) / total, mask=c0 + offs < cols)

    _K.update(triton=triton, tl=tl, matmul=matmul_kernel, softmax=softmax_kernel)
    return _K


# Tile shapes (BM, BN, BK, warps, stages): compiled (H100-sized) and interpreted (small: the
# interpreter's cost is per element of every tile, masked or not)
_TILES = {("gpu", "ieee", 4): (128, 128, 32, 8, 3), ("gpu", "tf32", 4): (128, 128, 32, 8, 3),
          ("gpu", "ieee", 8): (64, 64, 16, 4, 2), ("cpu", None, None): (16, 16, 16, 1, 1)}


def _matmul(A, B, out, prec: str):
    import torch

    k = _kernels()
    C = out[0]
    M, K = A.shape
    N = B.shape[1]
    to32 = prec == "tf32" and A.dtype != torch.float32
    wide = 8 if A.dtype == torch.float64 and not to32 else 4
    BM, BN, BK, warps, stages = _TILES[("cpu", None, None)] if interpreted() else _TILES[("gpu", prec, wide)]
    acc = k["tl"].float64 if wide == 8 else k["tl"].float32
    grid = (k["triton"].cdiv(M, BM) * k["triton"].cdiv(N, BN),)
    extra = {} if interpreted() else {"num_warps": warps, "num_stages": stages}
    k["matmul"][grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                      C.stride(0), C.stride(1), BM=BM, BN=BN, BK=BK, GROUP=8, PREC=prec, ACC=acc,
                      TO32=to32, **extra)
    return (C,)


def matmul_fp32(A, B, out):
    """C = A @ B with float32 (float64) FMAs: ``tl.dot(input_precision="ieee")``, no tensor cores."""
    return _matmul(A, B, out, "ieee")


def matmul_tf32(A, B, out):
    """C = A @ B on tensor cores with TF32 inputs (10-bit mantissa), float32 accumulation."""
    return _matmul(A, B, out, "tf32")


def softmax(x, out):
    """Row softmax of a (rows, cols) matrix: one program a row (see the module docstring)."""
    k = _kernels()
    y = out[0]
    rows, cols = x.shape
    one = cols <= ONE_PASS_COLS
    block = k["triton"].next_power_of_2(cols) if one else 2048
    if interpreted():
        extra = {}
    else:
        extra = {"num_warps": 4 if block <= 2048 else 8 if block <= 4096 else 16}
    acc = k["tl"].float64 if str(x.dtype) == "torch.float64" else k["tl"].float32
    k["softmax"][(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block, ONE=one, ACC=acc, **extra)
    return (y,)


def prepare(fn, inputs, out_specs):
    """``fn``'s inputs and poisonable outputs as torch tensors on the GPU (on the CPU when
    interpreted); returns (call, poison, read, sync, timer_mode, release), the parts of a
    lab.core.contenders.Prepared. Timed with CUDA events on the GPU, perf_counter interpreted."""
    import torch

    from kernels.spec import poison_value

    dev = "cpu" if interpreted() else "cuda"
    if dev == "cuda" and torch.cuda.current_stream().cuda_stream != 0:
        raise RuntimeError("torch is not on the default stream; the lab's CUDA events time stream 0")
    d_in = [torch.from_numpy(np.ascontiguousarray(a)).to(dev) for a in inputs]
    outs = [torch.from_numpy(np.empty(shape, dt)).to(dev) for shape, dt in out_specs]

    dtypes = [np.dtype(dt) for _, dt in out_specs]

    def poison(which=0):
        for o, dt in zip(outs, dtypes):
            o.fill_(poison_value(dt, which))

    def release():
        d_in.clear(), outs.clear()
        if dev == "cuda":
            torch.cuda.empty_cache()

    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    return (lambda: fn(*d_in, out=outs), poison, lambda res: [r.cpu().numpy() for r in res], sync,
            "device" if dev == "cuda" else "host", release)
