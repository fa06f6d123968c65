"""quantize's library contenders (kernels/quantize.py's spec declares them): CuPy reductions and an
elementwise kernel, the seed's torch code as written, and torch's own per-tensor quantization.

Each op is ``fn(lib, x, out) -> (q, params)`` with ``lib`` the library's module (``cupy``, ``torch``),
passed in by lab when the row runs; ``out`` is (q uint8 of x's shape, [scale, zero_point] in x's dtype).
"""
from __future__ import annotations

_CUPY: dict = {}  # CuPy's ElementwiseKernels, made at the first call


def cupy_quantize(cp, x, out):
    """x.min() and x.max() are two CuPy reductions (x read twice); a 2-thread kernel turns them into
    (scale, zero_point) on the device (float64, the reference's rule), so nothing waits for the host;
    one elementwise kernel writes the codes (x / scale + zero_point, clamped, rint = half to even).
    4 launches, 13 bytes an element for float32."""
    if not _CUPY:
        _CUPY["params"] = cp.ElementwiseKernel(
            "T lo, T hi", "T p",
            "double l = lo, h = hi;"
            "double s = h > l ? (h - l) / 255.0 : 1.0;"
            "double z = trunc(fmin(fmax(0.0 - l / s, 0.0), 255.0));"
            "p = (T)(i == 0 ? s : z)",
            "lab_quant_params")
        _CUPY["codes"] = cp.ElementwiseKernel(
            "T x, raw T p", "uint8 q",
            "T v = fmin(fmax(x / p[0] + p[1], (T)0), (T)255); q = (unsigned char)rint(v)",
            "lab_quant_codes")
    _CUPY["params"](x.min(), x.max(), out[1])
    _CUPY["codes"](x, out[1], out[0])
    return out[0], out[1]


def torch_quantize_seed(torch, x, out):
    """The seed's ``quantize_tensor`` (ARENA 2.0 chapter 3) in torch ops, as written, plus the lab's
    rule scale = 1.0 for a constant tensor (the seed divides by zero there).

    Its Python branches on 0-dim CUDA tensors (``if initial_zero_point < qmin``, ``int(...)``) copy
    to the host and wait for the GPU, twice a call: the timer reports host gaps. scale and the zero
    point are float32 tensor arithmetic here, as in the seed, where the reference uses float64: scale
    may differ in its last bits (inside the tolerance), and for rare inputs (-min / scale within
    float32 rounding of an integer, about 1 in 10^5 random tensors) int() lands on the neighbouring
    zero point, which the check reports as a FAIL: a real difference of float32 parameters.
    """
    qmin, qmax = 0.0, 255.0
    min_val, max_val = x.min(), x.max()
    scale = torch.where(max_val > min_val, (max_val - min_val) / (qmax - qmin), 1.0)  # no host sync
    initial_zero_point = qmin - min_val / scale
    if initial_zero_point < qmin:
        zero_point = qmin
    elif initial_zero_point > qmax:
        zero_point = qmax
    else:
        zero_point = initial_zero_point
    zero_point = int(zero_point)
    q_x = zero_point + x / scale
    q_x.clamp_(qmin, qmax).round_()
    out[0].copy_(q_x)  # the seed's .byte(): whole numbers in [0, 255] convert exactly
    out[1][0] = scale
    out[1][1] = zero_point
    return out


def torch_quantize_aminmax(torch, x, out):
    """``torch.aminmax``, then ``torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)``.

    quantize_per_tensor takes scale and zero_point as Python numbers, so the min and max are copied
    to the host (one sync a call); the parameters are then float64 from the exact min and max, the
    reference's rule. torch computes round(x * float32(1 / scale)) + zero_point, then clamps, rounding
    half to even: codes can differ from the reference by 1 at .5 boundaries (the tolerance), never
    more. int_repr() copies the codes out of the quint8 tensor (2 bytes an element more). The op
    takes float32, so a float64 x is cast first, and the min and max are the cast's: everything is
    the function of float32 inputs, which is what the runner checks it against (option
    ``float32_inside``). For a float32 x the cast is x itself (no copy).
    """
    xf = x.float()
    lo, hi = torch.stack(torch.aminmax(xf)).tolist()
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zero_point = int(min(max(0.0 - lo / scale, 0.0), 255.0))
    qx = torch.quantize_per_tensor(xf, scale, zero_point, torch.quint8)
    out[1][0] = scale
    out[1][1] = zero_point
    return qx.int_repr(), out[1]
