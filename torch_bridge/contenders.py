"""torch contenders for ``lab run``: per kernel, the library op(s) a student compares against.

Each is ``fn(*inputs, out=outputs) -> outputs`` on CUDA tensors; which kernel gets which op (and
its label) is declared in the kernel's KernelSpec (``contenders``; lab.core.registry reads it).
``lab_op(kernel)`` runs the lab's own Numba kernel through ``torch.ops.lab.<kernel>``
(torch_bridge.lab_ops): the "numba via torch op" row.
"""
from __future__ import annotations

import numpy as np
import torch

from kernels.spec import poison_value


def torch_vecadd(a, b, out):
    return (torch.add(a, b, out=out[0]),)


def torch_matvec(A, x, out):
    return (torch.mv(A, x, out=out[0]),)


def torch_dequantize(params, q, out):
    """Per-row dequantize, (q - zero_point) * scale: a subtract (exact: small integers) and a
    multiply that rounds once, as the reference does, so torch and NumPy agree to the last bit."""
    return (torch.mul(q.to(params.dtype) - params[:, 1:2], params[:, 0:1], out=out[0]),)


def torch_matmul(A, B, out, tf32: bool = False):
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


def torch_matmul_tf32(A, B, out):
    """``torch.matmul(A, B, out=C)`` with TF32 allowed (``torch.backends.cuda.matmul.allow_tf32``): cuBLAS
    on tensor cores, what the lab's TF32 rungs are compared with. Declared with the registry option ``tf32``:
    checked at a 10-bit mantissa's tolerance (lab.core.registry). On the CPU the flag changes nothing."""
    return torch_matmul(A, B, out, tf32=True)


def torch_matmul_bf16(A, B, out):
    """``C = A @ B`` by cuBLAS on bfloat16 copies of the float32 ``A`` and ``B`` (tensor cores, float32
    sums; ``torch.mm(..., out_dtype=torch.float32)`` where torch has it for the device, else the bf16
    product widened into C): what the lab's bf16 rungs (``tensor_core_bf16``, ``tensor_core_wgmma``)
    are compared with. The rounding of A and B is inside the call, as the lab's bf16 rungs round
    theirs in a pre-pass of every call. Declared with the registry option ``tolerance``: checked at
    the bf16 rungs' tolerance (kernels.gemm.mma.rounded_inputs_tolerance, 7 mantissa bits)."""
    a, b = A.to(torch.bfloat16), B.to(torch.bfloat16)
    if _MM_OUT_DTYPE.get(A.device.type, True):
        try:
            return (torch.mm(a, b, out_dtype=torch.float32, out=out[0]),)
        except (RuntimeError, TypeError, NotImplementedError):  # no mm.dtype kernel for this device (CPU)
            _MM_OUT_DTYPE[A.device.type] = False
    return (out[0].copy_(torch.matmul(a, b)),)


_MM_OUT_DTYPE: dict = {}  # device type -> whether torch.mm(..., out_dtype=float32) runs there


# --- softmax ---
def torch_softmax(x, out):
    return (torch.softmax(x, 1, out=out[0]),)


def _naive_softmax(x):
    """The seed's ``naive_softmax`` (ARENA 2.0 chapter 3): five ops, five kernels when run eagerly."""
    x_max = x.max(dim=1)[0]
    z = x - x_max[:, None]
    numerator = torch.exp(z)
    denominator = numerator.sum(dim=1)
    return numerator / denominator[:, None]


_compiled_naive_softmax = None  # compiled once per process, at its first call


def torch_softmax_compiled(x, out):
    """``torch.compile`` of the naive five-op softmax (Inductor fuses it into generated Triton code).

    Compiled lazily at the first call, so the runner reports the compile as the first call's time;
    shapes are static (a new shape recompiles). Returns a new tensor (a compiled function has no out=).
    """
    global _compiled_naive_softmax
    if _compiled_naive_softmax is None:
        _compiled_naive_softmax = torch.compile(_naive_softmax, dynamic=False)
    return (_compiled_naive_softmax(x),)


# --- quantize ---
def torch_quantize_seed(x, out):
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


def torch_quantize_aminmax(x, out):
    """``torch.aminmax``, then ``torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)``.

    quantize_per_tensor takes scale and zero_point as Python numbers, so the min and max are copied
    to the host (one sync a call); the parameters are then float64 from the exact min and max, the
    reference's rule. torch computes round(x * float32(1 / scale)) + zero_point, then clamps, rounding
    half to even: codes can differ from the reference by 1 at .5 boundaries (the tolerance), never
    more. int_repr() copies the codes out of the quint8 tensor (2 bytes an element more). The op
    takes float32, so a float64 x is cast first, and the min and max are the cast's: everything is
    the function of float32 inputs, which is what the runner checks it against ("float32 inside",
    lab.core.registry). For a float32 x the cast is x itself (no copy).
    """
    xf = x.float()
    lo, hi = torch.stack(torch.aminmax(xf)).tolist()
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zero_point = int(min(max(0.0 - lo / scale, 0.0), 255.0))
    qx = torch.quantize_per_tensor(xf, scale, zero_point, torch.quint8)
    out[1][0] = scale
    out[1][1] = zero_point
    return qx.int_repr(), out[1]


# --- the lab's own kernels as torch ops: what the bridge costs next to a direct launch ---
def _lab(name):
    import torch_bridge.lab_ops  # noqa: F401  (registers torch.ops.lab.*)

    return getattr(torch.ops.lab, name)


def prepare(fn, inputs, out_specs):
    """CUDA copies of ``inputs`` and poisonable outputs for the torch contender function ``fn``
    (one of this module's, found through lab.core.registry); returns (call, poison, read, release)."""
    d_in = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in inputs]
    outs = [torch.empty(shape, dtype=_torch_dtype(dt), device="cuda") for shape, dt in out_specs]
    if torch.cuda.current_stream().cuda_stream != 0:
        raise RuntimeError("torch is not on the default stream; the lab's CUDA events time stream 0")

    def poison(which=0):
        for o in outs:
            o.fill_(poison_value(_numpy_dtype(o.dtype), which))

    def release():
        d_in.clear(), outs.clear()
        torch.cuda.empty_cache()

    return (lambda: fn(*d_in, out=outs), poison,
            lambda res: [r.cpu().numpy() for r in res], release)


def _torch_dtype(dt):
    return torch.from_numpy(np.empty(0, dtype=dt)).dtype


def _numpy_dtype(dt):
    return torch.empty(0, dtype=dt).numpy().dtype


def lab_op(kernel: str):
    """The "numba via torch op" contender of ``kernel`` (lab.core.registry builds it for a kernel whose
    spec declares its torch op a contender): ``fn(*inputs, out=outputs)`` that calls
    ``torch.ops.lab.<kernel>`` and returns its outputs as a tuple, in the spec's layout: outputs of the
    op past the spec's count are the spec's last output's elements, stacked (quantize's op returns q,
    scale, zero_point; its spec holds (q, [scale, zero_point]))."""
    def fn(*inputs, out):
        res = _lab(kernel)(*inputs)
        res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
        if len(res) > len(out):
            res = (*res[:len(out) - 1], torch.stack([torch.as_tensor(r) for r in res[len(out) - 1:]]))
        return res

    fn.__name__ = f"lab_op_{kernel}"
    return fn
