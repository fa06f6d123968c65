"""A kernel declares itself once: its module's KernelSpec. Every command finds a kernel module by its
spec alone (kernels.NAMES reads the sources), and no table in lab/ or torch_bridge/ names a kernel.

The proof: a kernel module that exists only in this test (registered as ``kernels.scale2``) is run,
benched, swept, tuned, counted, costed and listed, and its contenders resolved, with no line of lab
changed; and the newest kernel, transpose, is named nowhere in lab/ or torch_bridge/.
"""
import ast
import pathlib
import re
import sys
import types

import numpy as np
import pytest

import kernels
from kernels.compiler import cuda
from kernels.spec import KernelSpec, Variant, blocks_for, launch_once, Launch
from tests.conftest import SIMULATOR

ROOT = pathlib.Path(__file__).resolve().parents[2]
LESSON_ORDER = ("vecadd", "matvec", "matmul", "softmax", "quantize", "dequantize", "quantize_per_channel")


def test_names_are_the_modules_that_declare_a_spec():
    assert kernels.NAMES == kernels.discover()
    assert kernels.NAMES[:len(LESSON_ORDER)] == LESSON_ORDER and "transpose" in kernels.NAMES
    declared = {p.stem for p in (ROOT / "kernels").glob("*.py") if "\nSPEC = KernelSpec(" in p.read_text()}
    assert set(kernels.NAMES) == declared
    for name in kernels.NAMES:
        assert kernels.load(name).name == name


# NumPy's own API, listed by the exercise checker's allow-list (np.transpose is numpy's, not the kernel's)
NUMPY_API = ROOT / "lab" / "teach" / "contained" / "allowlist.py"
# Modules that still name kernels as data, and why; each must still do so (test_the_exemptions_are_needed),
# so that an entry cannot outlive its reason.
STILL_NAMING = {
    "lab/teach/contained/allowlist.py": "NumPy's API (np.transpose), not the kernel",
}


def _sources():
    for top in ("lab", "torch_bridge"):
        yield from sorted(p for p in (ROOT / top).rglob("*.py") if p != NUMPY_API)


def _docstrings(tree) -> set:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def strings(text: str) -> list[tuple[int, str]]:
    """(line, value) of every string constant of the module source ``text`` that is not a docstring:
    dict keys, comparisons (``r.kernel == "matmul"``), call arguments (``_define("softmax", ...)``), the
    literal parts of f-strings."""
    tree = ast.parse(text)
    docs = _docstrings(tree)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs)


def owner(rel: str) -> str | None:
    """The kernel whose place ``rel`` is (kernels/<k>.py, kernels/contenders/<k>.py), else None."""
    parts = pathlib.PurePosixPath(rel).parts
    if parts[0] == "kernels" and (len(parts) == 2 or parts[1] == "contenders"):
        return pathlib.PurePosixPath(rel).stem
    return None


def names_as_data(rel: str, text: str, names) -> list[str]:
    """``rel:line names K`` for every string constant (docstrings aside) equal to a kernel name K of
    ``names`` in the module ``rel`` (relative path, its source ``text``), unless ``rel`` is K's own place."""
    return [f"{rel}:{line} names {value}" for line, value in strings(text)
            if value in names and value != owner(rel)]


def test_the_finder_finds_kernel_names_used_as_data():
    planted = ('"""Docstrings may say matmul."""\nrows = [r for r in rows if r.kernel == "matmul"]\n'
               '_define("softmax", "(Tensor x) -> Tensor")\nT = {"vecadd": 1}\nf"{x}quantize"\nx = "matmul (cuBLAS)"\n')
    names = {"matmul", "softmax", "vecadd", "quantize"}
    assert names_as_data("lab/x.py", planted, names) == [
        "lab/x.py:2 names matmul", "lab/x.py:3 names softmax", "lab/x.py:4 names vecadd", "lab/x.py:5 names quantize"]
    assert names_as_data("kernels/matmul.py", planted, names) == [
        "kernels/matmul.py:3 names softmax", "kernels/matmul.py:4 names vecadd", "kernels/matmul.py:5 names quantize"]
    assert names_as_data("kernels/contenders/softmax.py", planted, {"softmax"}) == []
    assert names_as_data("kernels/gemm/rungs.py", planted, {"matmul"}) == ["kernels/gemm/rungs.py:2 names matmul"]


def _all_modules():
    for top in ("lab", "torch_bridge", "kernels"):
        for path in sorted((ROOT / top).rglob("*.py")):
            yield str(path.relative_to(ROOT)), path.read_text()


def test_no_kernel_name_is_used_as_data_outside_its_module():
    """No string in lab/, torch_bridge/ or another kernel's module is a kernel's name (a table, a
    comparison, an argument): what lab knows of a kernel it reads from the kernel's spec, and a kernel's
    module and kernels/contenders/<kernel>.py are the only places that say its name."""
    names = set(kernels.NAMES)
    found = [hit for rel, text in _all_modules() if rel not in STILL_NAMING for hit in names_as_data(rel, text, names)]
    assert not found, "\n".join(found)


def test_the_exemptions_are_needed():
    names = set(kernels.NAMES)
    for rel in STILL_NAMING:
        assert names_as_data(rel, (ROOT / rel).read_text(), names), f"{rel} names no kernel now: drop it from STILL_NAMING"


UPPER = re.compile(r"(?<![\w.])(lab|torch_bridge)\.[a-z_]+")


def test_kernels_name_no_upper_layer_even_in_strings():
    """kernels/ imports nothing of lab or torch_bridge (import-linter), and no string of its code (docstrings,
    which explain, aside) names a module of theirs: no "lab.core.x:fn" to be resolved later. A kernel's
    contenders are functions beside it (kernels/spec.py, ``contenders``)."""
    found = [f"{rel}:{line}: {value[:80]!r}" for rel, text in _all_modules() if rel.startswith("kernels/")
             for line, value in strings(text) if UPPER.search(value)]
    assert not found, found
    assert UPPER.search("lab.core.cupy_ops:matmul") and UPPER.search("torch_bridge.contenders:torch_mv")
    assert not UPPER.search("torch.ops.lab.vecadd")


def test_the_newest_kernel_is_named_nowhere_else():
    """transpose was added by following docs/adding-a-kernel.md: its module and its tests only."""
    named = [f"{p.relative_to(ROOT)}" for p in _sources() if re.search(r"\btranspose\b", p.read_text())]
    assert not named, named


# --- a kernel that exists only here ---------------------------------------------------------------------
@cuda.jit
def scale2_kernel(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 2 * a[i]


def scale2_launch(size, threads):
    return Launch(grid=(blocks_for(size[0], threads),), block=(threads,), threads_needed=size[0])


def cupy_scale2(cp, a, out):
    return (cp.multiply(a, 2, out=out[0]),)


def torch_scale2(torch, a, out):
    return (torch.multiply(a, 2, out=out[0]),)  # torch and NumPy both have multiply(a, b, out=)


SCALE2 = KernelSpec(
    name="scale2", summary="out = 2 a", size_help="N", default_size=lambda sim: (70,) if sim else (1 << 20,),
    in_shapes=lambda size: [size], make_inputs=lambda size, dtype, rng: (rng.standard_normal(size).astype(dtype),),
    out_specs=lambda size, dtype: [(size, np.dtype(dtype))], reference=lambda a: (2 * a,),
    tolerance=lambda inputs, ref, dtype: [0.0], bytes_moved=lambda size, dtype: 2 * size[0] * np.dtype(dtype).itemsize,
    flops=lambda size: size[0],
    variants={"one": Variant("one", "one thread an element", scale2_launch, launch_once(scale2_kernel))},
    contenders={"cupy": (("cupy.multiply", cupy_scale2),),
                "torch": (("torch.mul", torch_scale2, {"float32_inside": True}),)},
    bench_sizes=(("1000003", 256),), targets=(dict(size=(1000003,), against="torch.mul", bound=0.9),),
    sweep=dict(shapes=("1", "1000003"), against="torch.mul", memory_bound=True),
    sim_cost={"one": 0.123}, counter_size=(96,), tune_shapes={"simulator": ("33",), "gpu": ("77",)},
)


@pytest.fixture
def scale2(monkeypatch):
    import lab.core.options  # noqa: F401  (its --size help reads every kernel's source at import: not scale2's)

    module = types.ModuleType("kernels.scale2")
    module.SPEC = SCALE2
    monkeypatch.setitem(sys.modules, "kernels.scale2", module)
    monkeypatch.setattr(kernels, "NAMES", (*kernels.NAMES, "scale2"))
    return SCALE2


def test_a_new_spec_is_seen_by_every_table(scale2):
    from lab.bench import shapes, suite, tune
    from lab.core import catalog, registry, simcost

    assert registry.labels("cupy", "scale2") == ["cupy.multiply"]
    assert registry.labels("torch", "scale2") == ["torch.mul"]  # no torch op declared: no bridge row
    assert registry.options("torch", "scale2", "torch.mul") == {"float32_inside": True}
    assert registry.function("cupy", "scale2", "cupy.multiply") is cupy_scale2
    assert registry.entries("cupy", "scale2") == [("cupy.multiply", cupy_scale2, {})]
    assert registry.function("torch", "scale2", "torch.mul")(np, np.arange(3.0), out=[np.empty(3)])[0].tolist() == [0, 2, 4]
    assert suite.configurations(["scale2"], quick=False) == [("scale2", "1000003", 256)]
    assert suite.configurations(["scale2"], quick=True) == [("scale2", None, suite.QUICK_THREADS)]
    assert suite.standard()["scale2"] == [("1000003", 256)]
    assert ("scale2", [1000003], "torch.mul", 0.9, "speed") in suite.targets()
    assert shapes.sweep_shapes()["scale2"] == ["1", "1000003"] and shapes.torch_op("scale2") == "torch.mul"
    assert "scale2" in shapes.memory_bound()
    assert tune.default_shapes("scale2", True, scale2) == ["33"]
    assert tune.default_shapes("scale2", False, scale2) == ["1", "1000003", "77"]
    assert simcost.per_thread_ms("scale2", "one") == 0.123
    assert simcost.call_seconds("scale2", {"one": 1000}, 0) == pytest.approx(0.123)
    listed = {k["name"]: k for k in catalog.catalog()}["scale2"]
    assert listed["contenders"]["cupy"] == ["cupy.multiply"] and listed["rungs"][0]["name"] == "one"


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's run and counters of a tiny kernel")
def test_a_new_spec_runs_and_is_counted(scale2):
    from lab.core.runner import Options, run
    from lab.inspect.counters import counters

    report = run(Options("scale2", contenders=["numba", "numpy"]), "simulator")
    assert [(r.contender, r.status) for r in report.rows] == [("numba", "ok"), ("numpy", "ok")]
    assert report.size == (70,)
    doc = counters("scale2", "simulator")
    assert doc["size"] == [96] and doc["rows"][0]["status"] == "ok" and doc["rows"][0]["sectors_per_request"] == 4.0


def test_a_misspelled_against_fails_when_the_spec_is_defined():
    """A target or sweep measured against a label no contender has is refused at definition (it would
    drop out of lab bench silently), naming the labels the kernel has."""
    import dataclasses

    import kernels

    spec = kernels.load("vecadd")
    with pytest.raises(ValueError, match="torch.ad'.*torch.add"):
        dataclasses.replace(spec, targets=(dict(size=(4096,), against="torch.ad", bound=0.5),))
    with pytest.raises(ValueError, match="not one of its contenders"):
        dataclasses.replace(spec, sweep=dict(shapes=(), skip=(), against="cupy.ad"))
    assert dataclasses.replace(spec, targets=spec.targets).targets == spec.targets  # the real ones pass


def scale2_forward(torch, bridge, a):
    """out = 2 a (the test's kernel)."""
    out = torch.empty_like(a, memory_format=torch.contiguous_format)
    if out.numel():
        bridge.run(tuple(a.shape), [a.contiguous()], [out])
    return out


def scale2_check(torch, a):
    if a.numel() > 1000:
        raise ValueError(f"lab.scale2: a has {a.numel()} elements, expected at most 1000")


def test_a_new_spec_declares_its_torch_op_with_a_backward(scale2, monkeypatch):
    """A kernel's spec alone declares a torch op with its checks, forward, fake and backward:
    torch_bridge.lab_ops registers it with no line changed: it computes, differentiates, refuses bad input
    with the declared one-line errors, and torch.library.opcheck's schema, fake-tensor and autograd
    registration tests pass (in a namespace of the test's own, removed after; the full opcheck of the
    real ops: tests/torch_bridge/test_ops.py)."""
    torch = pytest.importorskip("torch")
    import dataclasses
    import uuid

    from kernels.torch_op import save_inputs
    from torch_bridge import lab_ops

    op = dict(schema="(Tensor a) -> Tensor", rungs=("one", "one"), ndims={"a": 1}, check=scale2_check,
              forward=scale2_forward, fake=lambda torch, a: torch.empty_like(a, memory_format=torch.contiguous_format),
              backward=lambda torch, ctx, grad: 2 * grad, setup_context=save_inputs, doc="2 a")
    spec = dataclasses.replace(scale2, torch_op=op)
    monkeypatch.setattr(sys.modules["kernels.scale2"], "SPEC", spec)
    ns = f"lab_test_{uuid.uuid4().hex[:8]}"
    lib = torch.library.Library(ns, "FRAGMENT")
    monkeypatch.setattr(lab_ops, "_lib", lib)
    monkeypatch.setattr(lab_ops, "DECLARED", {})
    try:
        lab_ops._spec_op(spec, "scale2", spec.torch_op)
        assert lab_ops.DECLARED == {"scale2": ("2 a", True)}
        f = getattr(torch.ops, ns).scale2
        a = torch.randn(37, dtype=torch.float64, device=lab_ops._DEVICE, requires_grad=True)
        y = f(a)
        torch.testing.assert_close(y, 2 * a.detach(), rtol=0, atol=0)
        y.sum().backward()
        assert torch.equal(a.grad, torch.full_like(a, 2))
        with pytest.raises(ValueError, match=r"^lab.scale2: a must be 1-D, got shape \(2, 3\)$"):
            f(torch.randn(2, 3, device=lab_ops._DEVICE))
        with pytest.raises(ValueError, match="^lab.scale2: a has 1001 elements, expected at most 1000$"):
            f(torch.randn(1001, device=lab_ops._DEVICE))
        result = torch.library.opcheck(f, (torch.randn(5, device=lab_ops._DEVICE, requires_grad=True),),
                                       test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))
        assert all(v == "SUCCESS" for v in result.values()), result
    finally:
        lib._destroy()


@pytest.mark.parametrize("change,message", [
    (dict(contenders={"tourch": (("torch.add", torch_scale2),)}), "contender library 'tourch' is not one of cupy, torch, triton"),
    (dict(contenders={"torch": (("torch.add", "torch_bridge.contenders:torch_vecadd"),)}), "with a callable function"),
    (dict(contenders={"torch": (("torch.add", torch_scale2, {"float32_insde": True}),)}), "option 'float32_insde'"),
    (dict(contenders={"torch": (("torch.add", torch_scale2), ("torch.add", torch_scale2))}), "share a label"),
    (dict(sweep=dict(shapes=("7",), skip=("elemnt_per_thread",))), "the sweep's skip 'elemnt_per_thread'"),
    (dict(sweep=dict(shapes=("7",), against="torch.add", floors=(dict(text="t", bound=1, shape="8"),))), "floor's shape '8'"),
    (dict(torch_op=dict(rungs=("auto", "four_per_threads"))), "torch_op's rung 'four_per_threads'"),
    (dict(torch_op=dict(rungs=("auto", "auto"))), "torch op vecadd: no schema"),
    (dict(torch_op=dict(schema="(Tensor a) -> Tensor")), "torch op vecadd: neither forward nor size_of"),
    (dict(torch_op=dict(schema="(Tensor a) -> Tensor", forward=torch_scale2)), "a forward without its fake"),
    (dict(torch_op=dict(schema="(Tensor a) -> Tensor", size_of=tuple, ndims={"x": 2})), "ndims names 'x', not one of its inputs \\(a\\)"),
    (dict(torch_op=dict(schema="(Tensor a) -> Tensor", size_of=tuple, fixed_dtypes={"a": "unit8"})), "'unit8' is no dtype name"),
    (dict(torch_op=dict(schema="(Tensor a) -> Tensor", size_of=tuple, helpers={"vecadd_twice": dict(schema="(Tensor a) -> Tensor", forward=torch_scale2)})),
     "torch op vecadd_twice: a forward without its fake"),
    (dict(sim_cost={"Auto": 0.1}), "sim_cost 'Auto'"),
    (dict(targets=(dict(size=(4096, 2), against="torch.add", bound=0.5),)), r"size \(4096, 2\) has 2 numbers"),
    (dict(tune_shapes={"GPU": ("7",)}), "tune_shapes key 'GPU'"),
    (dict(precision_auto={"hihg": "x"}), "precision_auto key 'hihg'"),
])
def test_every_cross_reference_is_checked_when_the_spec_is_defined(change, message):
    """A misspelled library, option, label, rung, size or key is refused at definition, naming the field
    and what it may be, not found (or silently dropped) later."""
    import dataclasses

    spec = kernels.load("vecadd")
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(spec, **change)
