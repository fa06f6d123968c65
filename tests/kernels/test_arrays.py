"""Kernels take torch tensors, CuPy arrays and Numba device arrays (kernels.arrays, ``lab run --arrays``).

On the CPU: the adapters' plumbing (what is viewed, what is left alone, who allocates scratch), the
option's parsing and its one-line errors. On a GPU (``-m gpu``): a lab kernel launched on torch tensors
and CuPy arrays checked against float64, and every kernel's Numba rows under ``--arrays torch|cupy``
passing wherever they pass with Numba's own arrays.
"""
import json
import re
import types
from pathlib import Path

import numpy as np
import pytest

import lab.library as L
from kernels import arrays as K
from lab.core.errors import LabError
from tests.conftest import SIMULATOR

ROOT = Path(__file__).resolve().parents[2]


# --- the adapters, on the CPU ------------------------------------------------------------------------
def test_kind_and_numba_arrays_left_alone():
    from kernels.compiler import cuda

    host = np.zeros(3, np.float32)
    assert K.kind(host) == "host" and K.device_arg(host) is host
    if SIMULATOR:  # on a GPU the same holds for the compiler's device arrays (the gpu tests below)
        d = cuda.to_device(host)
        assert K.kind(d) == "numba" and K.device_arg(d) is d and K.owner(d) is d


def test_cpu_tensors_and_tensors_that_require_grad():
    """Refused on a GPU (no implicit copies); in the simulator, whose device memory is host memory, a
    CPU tensor is viewed in place. A tensor that requires grad is refused everywhere."""
    torch = pytest.importorskip("torch")

    t = torch.zeros(2)
    assert K.kind(t) == "torch"
    if SIMULATOR:
        v = K.device_arg(t)
        v[0] = 5.0
        assert t[0] == 5.0 and K.owner(v) is t
    else:
        with pytest.raises(ValueError, match="CUDA tensors; this one is on cpu"):
            K.device_arg(t)
    with pytest.raises(ValueError, match="requires grad"):
        K.device_arg(torch.zeros(2, requires_grad=True))


def test_torch_interface_has_byte_strides_and_a_uint16_typestr():
    """torch's own __cuda_array_interface__ has no typestr for uint16 (the bf16 rungs' bits), and
    numba-cuda-mlir reads torch's element strides as byte strides: the interface is written here."""
    torch = pytest.importorskip("torch")

    t = torch.zeros((3, 5), dtype=torch.uint16)[:, 1:]
    cai = K._torch_interface(t)
    assert cai["shape"] == (3, 4) and cai["strides"] == (10, 2) and cai["typestr"] == "<u2"
    assert cai["data"] == (t.data_ptr(), False) and cai["version"] == 2
    f = torch.zeros((4, 6), dtype=torch.float64).t()
    assert K._torch_interface(f)["strides"] == (8, 48) and K._torch_interface(f)["typestr"] == "<f8"
    assert K._torch_dtype(np.float32) is torch.float32 and K._torch_dtype(np.uint8) is torch.uint8


class _FakeCupy:
    """A CuPy-like array (by its module) with an array interface, for the plumbing tests."""

    __module__ = "cupy._core.core"

    def __init__(self, shape=(4,), dtype=np.float32):
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.__cuda_array_interface__ = {"shape": shape, "typestr": self.dtype.str, "data": (4096, False),
                                         "version": 3, "strides": None, "stream": 1}


def _record_views(monkeypatch):
    """kernels.compiler.cuda.from_cuda_array_interface replaced by a recorder; returns the calls."""
    from kernels import compiler

    calls = []

    def view(cai, owner=None, sync=True):
        calls.append((cai, owner, sync))
        return types.SimpleNamespace(shape=cai["shape"], dtype=np.dtype(cai["typestr"]))

    monkeypatch.setattr(compiler.cuda, "from_cuda_array_interface", view, raising=False)
    return calls


def test_a_foreign_array_is_viewed_once_without_a_stream_sync(monkeypatch):
    calls = _record_views(monkeypatch)
    x = _FakeCupy()
    v = K.device_arg(x)
    (cai, owner, sync), = calls  # once; sync=False and no stream imported: nothing synchronized
    assert owner is x and sync is False and "stream" not in cai and cai["data"] == (4096, False)
    assert K.owner(v) is x and v.dtype == np.float32 and K.kind(K.owner(v)) == "cupy"


def test_scratch_comes_from_the_library_that_owns_the_inputs(monkeypatch):
    _record_views(monkeypatch)
    made = []
    monkeypatch.setattr(K, "empty", lambda shape, dtype, arrays="numba", device=None:
                        made.append((shape, np.dtype(dtype), arrays)) or _FakeCupy(shape, dtype))
    monkeypatch.setattr(K, "from_host", lambda host, arrays="numba", device=None:
                        made.append((host.shape, host.dtype, arrays)) or _FakeCupy(host.shape, host.dtype))
    v = K.device_arg(_FakeCupy())
    scratch = K.empty_like(v, (2, 3), np.float64)
    assert made == [((2, 3), np.dtype(np.float64), "cupy")] and K.kind(K.owner(scratch)) == "cupy"
    K.to_device_like(np.zeros((5,), np.int32), v)
    assert made[-1] == ((5,), np.dtype(np.int32), "cupy")


def test_every_variant_prepare_takes_any_array_once_wrapped(monkeypatch):
    import kernels
    from kernels.spec import Variant

    seen = []
    raw = lambda cfg, inputs, outputs: seen.append((list(inputs), list(outputs)))  # noqa: E731
    v = Variant("v", "", lambda s, t: None, raw)
    assert v.prepare is not raw and K.agnostic(v.prepare) is v.prepare  # wrapped once, not twice
    monkeypatch.setattr(K, "device_arg", lambda a: ("view", a))
    v.prepare(None, ["a"], ["b"])
    assert seen == [([("view", "a")], [("view", "b")])]
    for name in kernels.NAMES:  # every rung of every kernel (auto too) goes through the wrapper
        for rung in kernels.load(name).variants.values():
            assert getattr(rung.prepare, "_lab_agnostic", False), (name, rung.name)


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's device arrays")
def test_numba_helpers_round_trip_in_the_simulator(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    d = K.from_host(x)
    assert np.array_equal(K.to_host(d), x)
    e = K.empty_like(d, (2, 2), np.float64)
    K.copy_from_host(e, np.full((2, 2), 7.0))
    assert K.to_host(e).dtype == np.float64 and (K.to_host(e) == 7).all()
    assert np.array_equal(K.to_host(K.to_device_like(x[:1], d)), x[:1])
    assert K.address(np.zeros(2)) is None and K.empty((3,), np.uint8).shape == (3,)


def test_no_prepare_allocates_behind_the_inputs_library():
    """Scratch in the rungs' prepare functions comes from kernels.arrays (the inputs' library): no
    cuda.device_array / cuda.to_device left in kernels/ except where no lab run array reaches."""
    # the adapters; library functions; a one-off probe; the TMA rungs' 256-byte tensor maps (built once a
    # launcher, read only by the kernel: no lab run array reaches them)
    allowed = {"arrays.py", "dequantize.py", "mma_bf16.py", "wgmma_tma.py"}
    found = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "kernels").rglob("*.py")) if p.name not in allowed
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"cuda\.(device_array|to_device)\(|copy_to_host\(\)", line)]
    assert found == []


def _tolerance(spec, variant, inputs, refs):
    """The rung's own tolerance where its arithmetic is coarser than float32 (bf16, TF32), as lab run checks it."""
    own = getattr(variant, "tolerance", None)
    return (own or spec.tolerance)(inputs, refs, np.dtype(np.float32))


# the rungs whose prepare allocates scratch, copies to the host or reads addresses, and a small ragged size
SCRATCH_RUNGS = [("matvec", "split_k", (9, 70)), ("matmul", "vector", (4, 6, 600)),
                 ("matmul", "tensor_core_bf16", (9, 10, 11)), ("matmul", "skinny_m", (4, 6, 600)),
                 ("softmax", "naive", (3, 33)), ("softmax", "split_row", (2, 90)),
                 ("quantize", "atomic_per_block", (300,)), ("quantize", "block_partials", (300,))]


@pytest.mark.skipif(not SIMULATOR, reason="CPU tensors stand for CUDA tensors in the simulator only")
@pytest.mark.parametrize("kernel, variant, size", SCRATCH_RUNGS)
def test_rungs_with_scratch_on_tensors_in_the_simulator(rng, kernel, variant, size):
    """Each rung's prepare on torch (CPU) tensors in the simulator: its scratch comes from torch, its
    outputs land in the tensors, checked against float64."""
    torch = pytest.importorskip("torch")
    import kernels
    from lab.core.check import check_outputs

    spec = kernels.load(kernel)
    v = spec.variants[variant]
    inputs = spec.make_inputs(size, np.dtype(np.float32), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    t_in = [torch.from_numpy(a.copy()) for a in inputs]
    t_out = [torch.from_numpy(np.full(shape, 7, dtype)) for shape, dtype in spec.out_specs(size, np.float32)]
    made = []  # the library of each scratch array the rung allocated (kernels.arrays.empty / from_host)
    with pytest.MonkeyPatch.context() as mp:
        for name, at in (("empty", 2), ("from_host", 1)):  # the position of ``arrays``
            real = getattr(K, name)
            mp.setattr(K, name, lambda *a, _real=real, _at=at, **k: made.append(a[_at] if len(a) > _at else
                                                                             k.get("arrays")) or _real(*a, **k))
        v.prepare(v.launch(size, 32), t_in, t_out)()
    assert made and set(made) == {"torch"}, made
    verdict = check_outputs([t.numpy() for t in t_out], refs, _tolerance(spec, v, inputs, refs))
    assert verdict.ok, verdict.reason


# --- lab run --arrays: parsing and errors ------------------------------------------------------------
@pytest.mark.skipif(not SIMULATOR, reason="the simulator's refusal")
@pytest.mark.parametrize("arrays", ["torch", "cupy"])
def test_torch_and_cupy_arrays_are_one_line_errors_in_the_simulator(lab, arrays):
    code, out, err = lab("run", "vecadd", "--sim", "--size", "100", "--arrays", arrays)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"--arrays {arrays}" in err and "simulator" in err and "--arrays numba" in err
    with pytest.raises(LabError, match=f"--arrays {arrays}: .*simulator"):
        L.run("vecadd", sim=True, size="100", arrays=arrays)


def test_unknown_arrays_and_runs_without_numba_rows(lab):
    code, _, err = lab("run", "vecadd", "--arrays", "numpy")
    assert code == 2 and "--arrays" in err and "'numpy' is not one of" in err
    with pytest.raises(LabError, match="--arrays"):
        L.run("vecadd", arrays="jax")
    from lab.core.contenders import check_arrays

    check_arrays("torch", simulator=True, numba=False)  # no Numba rows: nothing to own
    with pytest.raises(LabError, match="choose one of numba, torch, cupy"):
        check_arrays("jax", simulator=False)


def test_on_a_gpu_without_the_library_the_error_says_why(monkeypatch):
    """A GPU (pretended) where CuPy is not installed, or torch has no CUDA: one line naming why."""
    from kernels import backend
    from lab.core import contenders as C

    monkeypatch.setattr(backend, "gpu_count", lambda: (1, ""))
    monkeypatch.setattr(C, "installed", lambda module: False)
    with pytest.raises(LabError, match=r"^--arrays cupy: cupy not installed \(pip install .*use --arrays numba$"):
        C.check_arrays("cupy", simulator=False)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        monkeypatch.setattr(C, "installed", lambda module: True)
        with pytest.raises(LabError, match=r"^--arrays torch: torch .* has no CUDA support here"):
            C.check_arrays("torch", simulator=False)


@pytest.mark.skipif(not SIMULATOR, reason="a simulator run")
def test_the_report_records_the_arrays(lab):
    code, out, _ = lab("run", "vecadd", "--sim", "--size", "77", "--contenders", "numba", "--variant", "auto",
                       "--json")
    assert code == 0 and json.loads(out)["arrays"] == "numba"


def test_compare_children_get_the_arrays():
    from lab.bench.compilers import child_args

    args = child_args(dict(kernel="vecadd", seed=1, arrays="torch"), "numba-cuda", "gpu", numba_only=True)
    assert args[args.index("--arrays") + 1] == "torch"


# --- on a GPU ----------------------------------------------------------------------------------------
def _library(name):
    """The module when it can hold CUDA arrays here, else pytest.skip with why."""
    if SIMULATOR:
        pytest.skip("torch/CuPy arrays need a CUDA GPU")
    mod = pytest.importorskip(name)
    if name == "torch" and not mod.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    return mod


@pytest.mark.gpu
@pytest.mark.parametrize("arrays", ["torch", "cupy"])
@pytest.mark.parametrize("kernel, variant, size", [
    ("vecadd", "auto", (1000,)), ("matvec", "split_k", (37, 1001)), ("softmax", "naive", (6, 70)),
    ("quantize", "auto", (1000,)), ("matmul", "skinny_m", (4, 6, 4001)),
    ("matmul", "tensor_core_bf16", (37, 41, 45)),  # uint16 bits from the inputs' library
    ("matmul", "tensor_core_tf32", (1030, 1030, 2050))])  # A and B padded into scratch (>= 2^31 multiply-adds)
def test_a_lab_kernel_on_torch_and_cupy_arrays(rng, arrays, kernel, variant, size):
    """One rung's prepare (scratch included) launched on that library's arrays, read back through it,
    checked against the float64 reference."""
    import kernels
    from lab.core.check import check_outputs
    from tests.conftest import skip_unavailable

    _library(arrays)
    skip_unavailable(kernel, variant)
    spec = kernels.load(kernel)
    v = spec.variants[variant]
    inputs = spec.make_inputs(size, np.dtype(np.float32), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    d_in = [K.from_host(a, arrays) for a in inputs]
    outs = [K.empty(shape, dtype, arrays) for shape, dtype in spec.out_specs(size, np.float32)]
    v.prepare(v.launch(size, 128), d_in, outs)()
    from kernels.compiler import cuda

    cuda.synchronize()
    host = [K.to_host(o) for o in outs]
    assert all(K.kind(o) == arrays for o in outs)
    verdict = check_outputs(host, refs, _tolerance(spec, v, inputs, refs))
    assert verdict.ok, verdict.reason
    assert all(K.kind(K.owner(a)) == arrays for a in K.agnostic(lambda c, i, o: i)(None, d_in, []))


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("arrays", ["torch", "cupy"])
def test_every_numba_row_that_passes_with_numba_arrays_passes_with_torch_and_cupy(arrays):
    import kernels

    _library(arrays)
    lost = []
    for name in kernels.NAMES:
        size = "x".join(map(str, kernels.load(name).default_size(True)))  # small, ragged
        rows = {}
        for a in ("numba", arrays):
            report = L.run(name, size=size, contenders="numba", repeats=1, warmup=0, seed=1, arrays=a)
            assert report.arrays == a
            rows[a] = {r.variant: (r.status, r.reason) for r in report.rows}
        lost += [(name, v, rows[arrays].get(v)) for v, (status, _) in rows["numba"].items()
                 if status == "ok" and rows[arrays].get(v, ("",))[0] != "ok"]
    assert lost == []


def test_the_option_lists_the_owners_kernels_arrays_knows():
    # lab.core.options keeps its own copy (importing kernels.arrays would import NumPy into lab run --help)
    from kernels.arrays import ARRAYS
    from lab.core.options import ARRAYS as OPTION

    assert OPTION == ARRAYS
