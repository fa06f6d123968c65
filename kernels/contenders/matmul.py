"""matmul's library contenders (kernels/matmul.py's spec declares them): cuBLAS through CuPy and torch
(FP32, TF32, bf16), and a tiled Triton matmul (FP32 and TF32).

Each op is ``fn(lib, A, B, out) -> (C,)`` with ``lib`` the library's module (``cupy``, ``torch``, or the
Triton namespace: ``triton``, ``tl``, ``torch``, ``interpreted``), passed in by lab when the row runs.

Triton (``matmul_fp32``, ``matmul_tf32``): C = A @ B, one program a BM x BN tile of C, a loop over K in
BK steps, the two tiles loaded with masks (any M, N, K). FP32 uses ``tl.dot(..., input_precision="ieee")``:
float32 FMAs, no tensor cores; TF32 uses ``input_precision="tf32"``: tensor cores on inputs rounded to 10
mantissa bits, float32 accumulation (checked at that mantissa's tolerance: option ``tf32``). Programs are
ordered in groups of GROUP tile rows, so the tiles of B a group reads stay in L2 (Triton tutorial 03,
"Matrix Multiplication", "L2 Cache Optimizations"). Float64 inputs: the FP32 op computes in float64; the
TF32 op rounds to float32 first. Triton's CPU interpreter runs ``tl.dot`` in float32 whatever
``input_precision`` says (no TF32 rounding).
"""
from __future__ import annotations

import os

_K: dict = {}  # the @triton.jit kernel, defined at the first Triton call
_MM_OUT_DTYPE: dict = {}  # device type -> whether torch.mm(..., out_dtype=float32) runs there


# --- CuPy ------------------------------------------------------------------------------------------------
def cupy_matmul(cp, A, B, out):
    """cuBLAS SGEMM. CuPy leaves TF32 off unless the environment sets CUPY_TF32=1 (read when CuPy
    loads); the label says which, and a TF32 run fails the float32 check, as it should."""
    return (cp.matmul(A, B, out=out[0]),)


def cupy_matmul_label() -> str:
    tf32 = os.environ.get("CUPY_TF32", "0") not in ("", "0")
    return f"cupy.matmul (cuBLAS, TF32 {'on: CUPY_TF32=1' if tf32 else 'off unless CUPY_TF32=1'})"


# --- torch -----------------------------------------------------------------------------------------------
def torch_matmul(torch, A, B, out, tf32: bool = False):
    """``torch.matmul(A, B, out=C)`` on cuBLAS with TF32 off: float32 FMAs like the Numba kernels.

    TF32 (tensor cores, inputs rounded to 10-bit mantissas) is switched off for the call and the
    previous setting restored after: checked against the float32 bound (kernels/matmul.py,
    ``tolerance``), which a TF32 product exceeds (at 4096^3 about 1 element in 30,000).
    """
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return (torch.matmul(A, B, out=out[0]),)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def torch_matmul_tf32(torch, A, B, out):
    """``torch.matmul(A, B, out=C)`` with TF32 allowed (``torch.backends.cuda.matmul.allow_tf32``): cuBLAS
    on tensor cores, what the lab's TF32 rungs are compared with. Declared with the option ``tf32``:
    checked at a 10-bit mantissa's tolerance. On the CPU the flag changes nothing."""
    return torch_matmul(torch, A, B, out, tf32=True)


def torch_matmul_bf16(torch, A, B, out):
    """``C = A @ B`` by cuBLAS on bfloat16 copies of the float32 ``A`` and ``B`` (tensor cores, float32
    sums; ``torch.mm(..., out_dtype=torch.float32)`` where torch has it for the device, else the bf16
    product widened into C): what the lab's bf16 rungs (``tensor_core_bf16``, ``tensor_core_wgmma``)
    are compared with. The rounding of A and B is inside the call, as the lab's bf16 rungs round
    theirs in a pre-pass of every call. Declared with the option ``tolerance``: checked at the bf16
    rungs' tolerance (kernels.gemm.mma.precision_tolerances, 7 mantissa bits)."""
    a, b = A.to(torch.bfloat16), B.to(torch.bfloat16)
    if _MM_OUT_DTYPE.get(A.device.type, True):
        try:
            return (torch.mm(a, b, out_dtype=torch.float32, out=out[0]),)
        except (RuntimeError, TypeError, NotImplementedError):  # no mm.dtype kernel for this device (CPU)
            _MM_OUT_DTYPE[A.device.type] = False
    return (out[0].copy_(torch.matmul(a, b)),)


# --- Triton ----------------------------------------------------------------------------------------------
def _kernel(tr):
    """The @triton.jit matmul, defined once (after lab chose compiled or interpreted: TRITON_INTERPRET
    must be set when ``@triton.jit`` runs)."""
    if _K:
        return _K["triton"]
    triton, tl = tr.triton, tr.tl

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

    _K["triton"] = matmul_kernel
    return matmul_kernel


# Tile shapes (BM, BN, BK, warps, stages): compiled (H100-sized) and interpreted (small: the
# interpreter's cost is per element of every tile, masked or not)
TILES = {("gpu", "ieee", 4): (128, 128, 32, 8, 3), ("gpu", "tf32", 4): (128, 128, 32, 8, 3),
         ("gpu", "ieee", 8): (64, 64, 16, 4, 2), ("cpu", None, None): (16, 16, 16, 1, 1)}


def _triton_matmul(tr, A, B, out, prec: str):
    kernel = _kernel(tr)
    C = out[0]
    M, K = A.shape
    N = B.shape[1]
    to32 = prec == "tf32" and A.dtype != tr.torch.float32
    wide = 8 if A.dtype == tr.torch.float64 and not to32 else 4
    BM, BN, BK, warps, stages = TILES[("cpu", None, None)] if tr.interpreted else TILES[("gpu", prec, wide)]
    acc = tr.tl.float64 if wide == 8 else tr.tl.float32
    grid = (tr.triton.cdiv(M, BM) * tr.triton.cdiv(N, BN),)
    extra = {} if tr.interpreted else {"num_warps": warps, "num_stages": stages}
    kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                 C.stride(0), C.stride(1), BM=BM, BN=BN, BK=BK, GROUP=8, PREC=prec, ACC=acc, TO32=to32, **extra)
    return (C,)


def triton_matmul_fp32(tr, A, B, out):
    """C = A @ B with float32 (float64) FMAs: ``tl.dot(input_precision="ieee")``, no tensor cores."""
    return _triton_matmul(tr, A, B, out, "ieee")


def triton_matmul_tf32(tr, A, B, out):
    """C = A @ B on tensor cores with TF32 inputs (10-bit mantissa), float32 accumulation."""
    return _triton_matmul(tr, A, B, out, "tf32")
