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


def _sources():
    for top in ("lab", "torch_bridge"):
        yield from sorted(p for p in (ROOT / top).rglob("*.py") if p != NUMPY_API)


def test_no_table_names_a_kernel():
    """No dict keyed by a kernel's name, and no list, tuple or set of names, in lab/ or torch_bridge/:
    what lab knows of a kernel it reads from the kernel's spec."""
    names = set(kernels.NAMES)
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                items = node.keys
            elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
                items = node.elts
            else:
                continue
            hit = [k.value for k in items if isinstance(k, ast.Constant) and k.value in names]
            if hit:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} names {', '.join(hit)}")
    assert not found, "\n".join(found)


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
