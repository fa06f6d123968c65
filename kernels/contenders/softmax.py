"""softmax's library contenders (kernels/softmax.py's spec declares them): CuPy's, torch's (eager and
``torch.compile`` of the naive five-op softmax) and a fused Triton softmax.

Each op is ``fn(lib, x, out) -> (y,)`` with ``lib`` the library's module (``cupy``, ``torch``, or the
Triton namespace: ``triton``, ``tl``, ``torch``, ``interpreted``), passed in by lab when the row runs.

Triton (``triton_softmax``): one program a row. A row of at most ONE_PASS_COLS columns is read once into
registers (max, exp, sum, divide, write: Triton tutorial 02, "Fused Softmax"); a longer row in two
passes, the first keeping a running max and a sum rescaled when the max grows (Milakov and Gimelshein
2018, "Online normalizer calculation for softmax"). Float64 inputs are computed in float64.
"""
from __future__ import annotations

ONE_PASS_COLS = 8192  # longest row the Triton softmax reads once into registers
_K: dict = {}  # the @triton.jit kernel and the compiled naive softmax, made at their first call


def cupy_softmax(cp, x, out):
    """cupyx.scipy.special.softmax takes no out=, so it returns a new array (CuPy runs the max,
    subtract-exp, sum and divide as separate kernels)."""
    import cupyx.scipy.special  # lazy: optional (cupyx); CuPy's own submodule; cp is CuPy itself

    return (cupyx.scipy.special.softmax(x, axis=1),)


def torch_softmax(torch, x, out):
    return (torch.softmax(x, 1, out=out[0]),)


def naive_softmax(x):
    """The seed's ``naive_softmax`` (ARENA 2.0 chapter 3): five ops, five kernels when run eagerly."""
    x_max = x.max(dim=1)[0]
    z = x - x_max[:, None]
    numerator = z.exp()
    denominator = numerator.sum(dim=1)
    return numerator / denominator[:, None]


def torch_softmax_compiled(torch, x, out):
    """``torch.compile`` of the naive five-op softmax (Inductor fuses it into generated Triton code).

    Compiled lazily at the first call, so the runner reports the compile as the first call's time;
    shapes are static (a new shape recompiles). Returns a new tensor (a compiled function has no out=).
    """
    if "compiled" not in _K:
        _K["compiled"] = torch.compile(naive_softmax, dynamic=False)
    return (_K["compiled"](x),)


def _kernel(tr):
    """The @triton.jit softmax, defined once (after lab chose compiled or interpreted)."""
    if "triton" in _K:
        return _K["triton"]
    triton, tl = tr.triton, tr.tl

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

    _K["triton"] = softmax_kernel
    return softmax_kernel


def triton_softmax(tr, x, out):
    """Row softmax of a (rows, cols) matrix: one program a row (see the module docstring)."""
    kernel = _kernel(tr)
    y = out[0]
    rows, cols = x.shape
    one = cols <= ONE_PASS_COLS
    block = tr.triton.next_power_of_2(cols) if one else 2048
    extra = {} if tr.interpreted else {"num_warps": 4 if block <= 2048 else 8 if block <= 4096 else 16}
    acc = tr.tl.float64 if x.dtype == tr.torch.float64 else tr.tl.float32
    kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block, ONE=one, ACC=acc, **extra)
    return (y,)
