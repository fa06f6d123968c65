"""CuPy contender ops for ``lab run``: per kernel, the library call a student compares against.

Each is ``fn(cp, *inputs, out=outputs) -> outputs`` on CuPy arrays; ``cp`` is the ``cupy`` module,
passed in so this module imports without CuPy. Which kernel gets which op is declared in
the kernel's KernelSpec (``contenders``; lab.core.registry reads it). The CuPy twin of torch_bridge.contenders (torch's contenders).
"""
from __future__ import annotations

import os


def vecadd(cp, a, b, out):
    return (cp.add(a, b, out=out[0]),)


def matvec(cp, A, x, out):
    return (cp.matmul(A, x, out=out[0]),)


def dequantize(cp, params, q, out):
    """Per-row dequantize, (q - zero_point) * scale, as two broadcast elementwise kernels."""
    return (cp.multiply(q.astype(params.dtype) - params[:, 1:2], params[:, 0:1], out=out[0]),)


def matmul(cp, A, B, out):
    """cuBLAS SGEMM. CuPy leaves TF32 off unless the environment sets CUPY_TF32=1 (read when CuPy
    loads); the label says which, and a TF32 run fails the float32 check, as it should."""
    return (cp.matmul(A, B, out=out[0]),)


def matmul_label() -> str:
    tf32 = os.environ.get("CUPY_TF32", "0") not in ("", "0")
    return f"cupy.matmul (cuBLAS, TF32 {'on: CUPY_TF32=1' if tf32 else 'off unless CUPY_TF32=1'})"


def softmax(cp, x, out):
    """cupyx.scipy.special.softmax takes no out=, so it returns a new array (CuPy runs the max,
    subtract-exp, sum and divide as separate kernels)."""
    from cupyx.scipy.special import softmax as cupyx_softmax

    return (cupyx_softmax(x, axis=1),)


_quant = {}


def quantize(cp, x, out):
    """x.min() and x.max() are two CuPy reductions (x read twice); a 2-thread kernel turns them into
    (scale, zero_point) on the device (float64, the reference's rule), so nothing waits for the host;
    one elementwise kernel writes the codes (x / scale + zero_point, clamped, rint = half to even).
    4 launches, 13 bytes an element for float32."""
    if not _quant:
        _quant["params"] = cp.ElementwiseKernel(
            "T lo, T hi", "T p",
            "double l = lo, h = hi;"
            "double s = h > l ? (h - l) / 255.0 : 1.0;"
            "double z = trunc(fmin(fmax(0.0 - l / s, 0.0), 255.0));"
            "p = (T)(i == 0 ? s : z)",
            "lab_quant_params")
        _quant["codes"] = cp.ElementwiseKernel(
            "T x, raw T p", "uint8 q",
            "T v = fmin(fmax(x / p[0] + p[1], (T)0), (T)255); q = (unsigned char)rint(v)",
            "lab_quant_codes")
    _quant["params"](x.min(), x.max(), out[1])
    _quant["codes"](x, out[1], out[0])
    return out[0], out[1]
