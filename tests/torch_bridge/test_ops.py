"""torch.ops.lab.*: the lab's Numba kernels as torch operators (torch_bridge.lab_ops).

In the simulator the ops run the simulated kernels on CPU tensors (tiny shapes: every thread is
Python); on a GPU the ``gpu``-marked tests run them on CUDA tensors, on torch's current stream.
Every check is against torch (float64 where it matters) on fresh random inputs.
"""
import pytest

from tests.conftest import SIMULATOR

torch = pytest.importorskip("torch")
lab_ops = pytest.importorskip("torch_bridge.lab_ops")

GPU = not SIMULATOR and torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"
needs_gpu = pytest.mark.skipif(not GPU, reason="needs a CUDA GPU and CUDA torch")
ops = torch.ops.lab


def rand(rng, *shape, dtype=torch.float32):
    return torch.from_numpy(rng.standard_normal(shape)).to(dtype).to(DEVICE)


# --- forward results (simulator on CPU tensors; the GPU set repeats them on CUDA) ------------------------
def check_forward(rng, dtype, big=False):
    s = (lambda a, b: (a * 37, b * 13)) if big else (lambda a, b: (a, b))
    n = 1000 * 1000 + 3 if big else 37  # not a multiple of the block size
    a, b = rand(rng, n, dtype=dtype), rand(rng, n, dtype=dtype)
    torch.testing.assert_close(ops.vecadd(a, b), a + b, rtol=0, atol=0)
    r, c = s(5, 7)
    A, x = rand(rng, r, c, dtype=dtype), rand(rng, c, dtype=dtype)
    torch.testing.assert_close(ops.matvec(A, x), (A.double() @ x.double()).to(dtype))
    B = rand(rng, c, 3 * (13 if big else 1), dtype=dtype)
    torch.testing.assert_close(ops.matmul(A, B), (A.double() @ B.double()).to(dtype))
    X = rand(rng, *s(3, 40), dtype=dtype) * 10
    torch.testing.assert_close(ops.softmax(X), torch.softmax(X.double(), 1).to(dtype))
    q, scale, zp = ops.quantize(X)
    lo, hi = X.min().double().item(), X.max().double().item()
    want_scale = (hi - lo) / 255
    assert q.dtype == torch.uint8 and q.shape == X.shape and scale.dtype == dtype
    assert scale.item() == pytest.approx(want_scale, rel=1e-6)
    assert zp.item() == int(min(max(-lo / want_scale, 0), 255))
    codes = torch.clamp(X.double() / want_scale + zp.double(), 0, 255).round()
    assert (q.double() - codes).abs().max().item() <= 1
    back = ops.dequantize(q, scale, zp)
    assert back.dtype == dtype and back.shape == X.shape
    torch.testing.assert_close(back, ((q.double() - zp.double()) * scale.double()).to(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ops_match_torch(rng, dtype):
    check_forward(rng, dtype)


@pytest.mark.gpu
@needs_gpu
def test_ops_match_torch_on_gpu(rng):
    check_forward(rng, torch.float32, big=True)
    check_forward(rng, torch.float64, big=False)


# --- tensor hygiene ------------------------------------------------------------------------------------
def test_non_contiguous_inputs_are_made_contiguous(rng):
    A = rand(rng, 7, 5).t()  # a transposed view: strides (1, 5)
    B = rand(rng, 7, 3)
    assert not A.is_contiguous()
    torch.testing.assert_close(ops.matmul(A, B), (A.double() @ B.double()).float())
    a = rand(rng, 40)[::2]
    b = rand(rng, 20)
    torch.testing.assert_close(ops.vecadd(a, b), a + b, rtol=0, atol=0)


def test_bad_inputs_get_one_line_errors(rng):
    a = rand(rng, 8)
    with pytest.raises(ValueError, match=r"lab.vecadd: b is torch.float64, expected torch.float32 \(a's dtype\)"):
        ops.vecadd(a, a.double())
    with pytest.raises(ValueError, match=r"lab.vecadd: b has shape \(9,\), expected \(8,\)"):
        ops.vecadd(a, rand(rng, 9))
    with pytest.raises(ValueError, match=r"lab.matmul: B has 4 rows, expected 3 \(A's columns\)"):
        ops.matmul(rand(rng, 2, 3), rand(rng, 4, 2))
    with pytest.raises(ValueError, match=r"lab.softmax: x must be 2-D, got shape \(8,\)"):
        ops.softmax(a)
    with pytest.raises(ValueError, match=r"lab.vecadd: a is torch.int64, expected torch.float32 or torch.float64"):
        ops.vecadd(torch.arange(3, device=DEVICE), torch.arange(3, device=DEVICE))
    with pytest.raises(ValueError, match=r"lab.quantize: x is empty"):
        ops.quantize(a[:0])
    with pytest.raises(ValueError, match=r"lab.dequantize: q is torch.float32, expected torch.uint8"):
        ops.dequantize(a, a[0], a[1])
    wrong = "meta" if SIMULATOR else "cpu"
    with pytest.raises(ValueError, match=rf"lab.vecadd: a is on {wrong}, expected a (cpu|cuda) tensor"):
        ops.vecadd(a.to(wrong), a.to(wrong))
    with pytest.raises(ValueError) as e:
        ops.vecadd(a, a.double())
    assert "\n" not in str(e.value)


def test_no_gradient_ops_refuse_requires_grad(rng):
    x = rand(rng, 16).requires_grad_()
    with pytest.raises(RuntimeError, match="lab.quantize: an input requires grad"):
        ops.quantize(x)
    q, s, z = ops.quantize(x.detach())
    with pytest.raises(RuntimeError, match="lab.dequantize: an input requires grad"):
        ops.dequantize(q, s.requires_grad_(), z)


# --- autograd -------------------------------------------------------------------------------------------
def check_grads(rng, dtype=torch.float64):
    def pair(*shape):
        t = rand(rng, *shape, dtype=dtype)
        return t.clone().requires_grad_(), t.clone().requires_grad_()

    (a, a_ref), (b, b_ref) = pair(11), pair(11)
    g = rand(rng, 11, dtype=dtype)
    ops.vecadd(a, b).backward(g)
    (a_ref + b_ref).backward(g)
    (A, A_ref), (B, B_ref), (x, x_ref) = pair(5, 7), pair(7, 3), pair(7)
    g = rand(rng, 5, 3, dtype=dtype)
    ops.matmul(A, B).backward(g)
    (A_ref @ B_ref).backward(g)
    gv = rand(rng, 5, dtype=dtype)
    ops.matvec(A, x).backward(gv)
    (A_ref @ x_ref).backward(gv)
    (X, X_ref) = pair(3, 40)
    gs = rand(rng, 3, 40, dtype=dtype)
    ops.softmax(X * 5).backward(gs)
    torch.softmax(X_ref * 5, 1).backward(gs)
    for mine, ref in [(a, a_ref), (b, b_ref), (A, A_ref), (B, B_ref), (x, x_ref), (X, X_ref)]:
        torch.testing.assert_close(mine.grad, ref.grad)


def test_autograd_matches_torch(rng):
    check_grads(rng)


@pytest.mark.gpu
@needs_gpu
def test_autograd_matches_torch_on_gpu(rng):
    check_grads(rng)
    check_grads(rng, torch.float32)


# --- opcheck and torch.compile ---------------------------------------------------------------------------
def opcheck_cases(rng):
    X = rand(rng, 3, 40)
    q, s, z = ops.quantize(X)
    A, B = rand(rng, 5, 7), rand(rng, 7, 3)
    return [(ops.vecadd, (rand(rng, 37), rand(rng, 37))), (ops.matvec, (A, rand(rng, 7))),
            (ops.matmul, (A, B)), (ops.softmax, (X,)), (ops.quantize, (X,)), (ops.dequantize, (q, s, z)),
            (ops.softmax_backward, (torch.softmax(X, 1), rand(rng, 3, 40)))]


def run_opcheck(rng, grad):
    for op, args in opcheck_cases(rng):
        if grad and op in (ops.vecadd, ops.matvec, ops.matmul, ops.softmax):
            args = tuple(a.clone().requires_grad_() for a in args)
        result = torch.library.opcheck(op, args)
        assert all(v == "SUCCESS" for v in result.values()), (op, result)


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (deselect locally with -m "not slow")
def test_opcheck(rng):
    run_opcheck(rng, grad=False)


@pytest.mark.gpu
@needs_gpu
def test_opcheck_on_gpu(rng):
    run_opcheck(rng, grad=False)
    run_opcheck(rng, grad=True)


def test_compile_fullgraph_traces_the_ops(rng):
    """torch.compile(fullgraph=True) traces the ops through their fakes (aot_eager: no C compiler
    needed); the compiled forward and backward match eager."""
    def f(x, w):
        return ops.softmax(ops.matmul(x, w)).sum(0)

    x, w = rand(rng, 4, 6, dtype=torch.float64), rand(rng, 6, 5, dtype=torch.float64).requires_grad_()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    torch._dynamo.reset()
    y = compiled(x, w)
    weights = rand(rng, 5, dtype=torch.float64)  # a loss whose gradient is not zero
    gw, = torch.autograd.grad((y * weights).sum(), w)
    w2 = w.detach().clone().requires_grad_()
    y2 = torch.softmax(x @ w2, 1).sum(0)
    gw2, = torch.autograd.grad((y2 * weights).sum(), w2)
    torch.testing.assert_close(y, y2)
    torch.testing.assert_close(gw, gw2)


# --- public API only; vecadd's rung is kernels.vecadd's choice; the fast path is a lesson apart ---------
def _private_torch_names(path) -> list[str]:
    """``torch._X`` attribute uses in a module's code (docstrings and comments aside)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id == "torch":
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_ops_are_registered_through_public_torch_apis_only():
    from pathlib import Path

    from torch_bridge import launch, streams

    for module in (lab_ops, launch, streams):
        assert not _private_torch_names(Path(module.__file__)), module.__name__
    assert _private_torch_names(Path(__file__)), "the scan finds test_compile's torch._dynamo.reset() here"
    assert list(lab_ops.DECLARED)[:1] == ["vecadd"] and all(hasattr(ops, name) for name in lab_ops.DECLARED)


def test_vecadd_runs_the_rung_kernels_vecadd_chooses(rng, monkeypatch):
    """On a described device of one SM, choose() moves from element_per_thread to four_per_thread at
    4 x 256 x 4 = 4,096 elements: the op follows it (no threshold of its own)."""
    import dataclasses

    from kernels import vecadd as V
    from kernels.device_limits import H100, described

    monkeypatch.setenv("LAB_TUNED", "0")  # the heuristic, not a tuned table
    ran = []
    for name in ("element_per_thread", "four_per_thread"):
        def spy(cfg, inputs, outputs, _orig=V.RUNGS[name], _name=name):
            ran.append(_name)
            return _orig.prepare(cfg, inputs, outputs)

        spied = dataclasses.replace(V.RUNGS[name], prepare=spy)  # no single_launch: the op runs prepare
        monkeypatch.setitem(V.RUNGS, name, spied)
        monkeypatch.setitem(V.SPEC.variants, name, spied)
    with described(dataclasses.replace(H100, sm_count=1)):
        for n in (4095, 4096):
            a, b = rand(rng, n), rand(rng, n)
            torch.testing.assert_close(ops.vecadd(a, b), a + b, rtol=0, atol=0)
            assert ran[-1] == V.choose((n,))[0], n
    assert ran == ["element_per_thread", "four_per_thread"]


def test_the_fast_launch_path_is_a_gpu_lesson_apart_from_the_op(rng):
    from torch_bridge.launch import vecadd

    if SIMULATOR:
        with pytest.raises(ValueError, match="needs a GPU"):
            vecadd(rand(rng, 8), rand(rng, 8))
    else:
        with pytest.raises(ValueError, match="contiguous CUDA tensors"):
            vecadd(rand(rng, 8).cpu(), rand(rng, 8).cpu())


# --- launch plans: what a call reuses ------------------------------------------------------------------
def _counting_auto(monkeypatch, flip=None):
    """vecadd's auto variant with its launch math counted (``asked``); ``flip[0]`` True makes it answer
    one element a thread at 64 threads (another choice than the heuristic's)."""
    import dataclasses

    from kernels import vecadd as V

    auto, asked = V.SPEC.variants["auto"], []

    def launch(size, threads):
        asked.append(size)
        if flip and flip[0]:
            cfg = V.RUNGS["element_per_thread"].launch(size, 64)
            return dataclasses.replace(cfg, rung="element_per_thread")
        return auto.launch(size, threads)

    monkeypatch.setitem(V.SPEC.variants, "auto", dataclasses.replace(auto, launch=launch))
    monkeypatch.setattr(lab_ops, "_plans", {})
    return asked


def test_a_second_call_reuses_the_plan_another_shape_or_dtype_makes_one(rng, monkeypatch):
    """The rung choice (auto's launch math: tuned table or heuristic) is asked once per (size, dtype,
    device), not per call; every call still checks its inputs and computes on its own tensors."""
    asked = _counting_auto(monkeypatch)
    monkeypatch.setattr(lab_ops, "RECHECK_S", 3600.0)
    plans = lab_ops.STATS["plans"]
    for _ in range(3):  # fresh tensors each call: the plan holds no tensor
        a, b = rand(rng, 37), rand(rng, 37)
        torch.testing.assert_close(ops.vecadd(a, b), a + b, rtol=0, atol=0)
    assert asked == [(37,)] and lab_ops.STATS["plans"] == plans + 1
    a64, b64 = rand(rng, 37, dtype=torch.float64), rand(rng, 37, dtype=torch.float64)
    torch.testing.assert_close(ops.vecadd(a64, b64), a64 + b64, rtol=0, atol=0)  # another dtype
    c, d = rand(rng, 5, 8), rand(rng, 5, 8)
    torch.testing.assert_close(ops.vecadd(c, d), c + d, rtol=0, atol=0)  # another size (40, flattened)
    torch.testing.assert_close(ops.vecadd(a, b), a + b, rtol=0, atol=0)  # the first plan again
    assert asked == [(37,), (37,), (40,)] and lab_ops.STATS["plans"] == plans + 3
    with pytest.raises(ValueError, match=r"lab.vecadd: b is torch.float64, expected torch.float32"):
        ops.vecadd(a, b64)  # the checks run on every call, plan or not
    with pytest.raises(ValueError, match=r"lab.vecadd: b has shape \(40,\), expected \(37,\)"):
        ops.vecadd(a, rand(rng, 40))
    assert asked == [(37,), (37,), (40,)]


def test_a_plan_follows_a_changed_choice_and_the_described_device(rng, monkeypatch):
    """After RECHECK_S the choice is asked again: the same answer keeps the plan, another one (a new
    `lab tune` table, say) makes a new plan; a described device is another plan at once."""
    import dataclasses

    from kernels.device_limits import H100, described

    flip = [False]
    asked = _counting_auto(monkeypatch, flip)
    monkeypatch.setattr(lab_ops, "RECHECK_S", 0.0)  # every call asks again
    a, b = rand(rng, 50), rand(rng, 50)
    plans, rechecks = lab_ops.STATS["plans"], lab_ops.STATS["rechecks"]
    ops.vecadd(a, b)
    ops.vecadd(a, b)
    assert len(asked) == 2 and lab_ops.STATS["plans"] == plans + 1 and lab_ops.STATS["rechecks"] == rechecks + 1
    flip[0] = True
    torch.testing.assert_close(ops.vecadd(a, b), a + b, rtol=0, atol=0)
    assert lab_ops.STATS["plans"] == plans + 2
    (plan,) = {id(p): p for p in lab_ops._plans.values()}.values()
    assert plan.cfg.block == (64,)
    monkeypatch.setattr(lab_ops, "RECHECK_S", 3600.0)
    with described(dataclasses.replace(H100, sm_count=1)):
        torch.testing.assert_close(ops.vecadd(a, b), a + b, rtol=0, atol=0)
    assert lab_ops.STATS["plans"] == plans + 3 and len(asked) == 4


@pytest.mark.gpu
@needs_gpu
def test_vecadd_op_launches_through_its_cached_tensor_launcher(rng):
    """On a GPU the op's plan holds the rung kernel's tensor launcher (FastKernel under numba-cuda, the
    native launcher under numba-cuda-mlir): new tensors each call, both dtypes, both rungs, a 2-D
    shape, inputs that require grad (through autograd) all give a + b exactly."""
    for dtype in (torch.float32, torch.float64):
        for n in (1, 1000, (1 << 20) + 5):
            for _ in range(3):
                a, b = rand(rng, n, dtype=dtype), rand(rng, n, dtype=dtype)
                assert torch.equal(ops.vecadd(a, b), a + b)
    x = rand(rng, 33, 65).requires_grad_()
    y = rand(rng, 33, 65)
    out = ops.vecadd(x, y)
    assert torch.equal(out, x.detach() + y)
    out.sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    fast = [p.fast for key, p in lab_ops._plans.items() if key[0] == "vecadd" and key[1] == (1000,)]
    assert fast and all(f is not None for f in fast)
    assert all(f.path in ("FastKernel (cuLaunchKernel)", "native launcher") for f in fast), [f.path for f in fast]
    # the cached launch goes to torch's current stream: inside a side stream it sees that stream's write
    from tests.torch_bridge.test_bridge import SLEEP_CYCLES

    n = 1 << 16
    x, b, new = rand(rng, n), rand(rng, n), rand(rng, n)
    for _ in range(2):  # the plan and its launcher made (the first call takes the ordinary path)
        ops.vecadd(x, b)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.copy_(new)
        c = ops.vecadd(x, b)
    torch.cuda.synchronize()
    assert torch.equal(c, new + b)
