"""transpose: every rung against NumPy on fresh random inputs at sizes that are not multiples of the
32 x 32 tile, through the runner's check (poisoned outputs, canaries, float64 reference, exact
tolerance); wrong kernels are caught; the contenders and the torch op the spec declares work."""
import numpy as np
import pytest

import kernels
from kernels import transpose as T
from kernels.compiler import cuda
from kernels.spec import Variant, launch_once
from lab.core import contenders as C
from lab.core.check import check_prepared
from tests.conftest import SIMULATOR
from tests.helpers import run_variant

pytestmark = pytest.mark.gpu

RUNGS = ["naive", "tile", "padded"]
# (size, threads): one element, odd sizes on both axes, wide and tall, block heights that divide 32 and
# one (96 threads: 3 rows) that does not.
CASES = [((1, 1), 32), ((37, 45), 32), ((33, 35), 64), ((40, 31), 96), ((3, 100), 256)] + ([] if SIMULATOR else [
    ((1025, 2049), 256), ((4099, 3001), 1024), ((1, 100003), 256)])


@pytest.mark.parametrize("variant", RUNGS)
@pytest.mark.parametrize("size,threads", CASES)
def test_transpose(variant, size, threads, rng, simulator):
    spec = kernels.load("transpose")
    ok, err, outs, refs = run_variant(spec, variant, size, threads, rng, simulator=simulator)
    assert ok, f"{variant} at {size}, {threads} threads: max abs err {err}"
    assert outs[0].shape == (size[1], size[0])


@pytest.mark.parametrize("variant", RUNGS)
def test_float64_is_exact(variant, rng, simulator):
    spec = kernels.load("transpose")
    ok, err, outs, refs = run_variant(spec, variant, (40, 33), 64, rng, dtype=np.float64, simulator=simulator)
    assert ok and np.array_equal(outs[0], refs[0]), f"{variant}: max abs err {err}"


# --- wrong kernels: each must fail the check lab run uses ------------------------------------------------
@cuda.jit
def _drops_last_row(a, out):
    """naive, but the guard stops one row early: out's last column keeps its poison."""
    c, r = cuda.grid(2)
    if r < a.shape[0] - 1 and c < a.shape[1]:
        out[c, r] = a[r, c]


TILE, PADDED = T.TILE, T.PADDED  # bare globals: the GPU typer folds a module's globals, not T.TILE into a constant


@cuda.jit
def _tile_not_transposed(a, out):
    """tile, but the tile is written back as it was read (row j of the tile to out's row j)."""
    tile = cuda.shared.array((TILE, PADDED), out.dtype)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r0, c0 = cuda.blockIdx.y * T.TILE, cuda.blockIdx.x * T.TILE
    rows, cols = a.shape
    for j in range(0, T.TILE, cuda.blockDim.y):
        if ty + j < T.TILE and r0 + ty + j < rows and c0 + tx < cols:
            tile[ty + j, tx] = a[r0 + ty + j, c0 + tx]
    cuda.syncthreads()
    for j in range(0, T.TILE, cuda.blockDim.y):
        if ty + j < T.TILE and c0 + ty + j < cols and r0 + tx < rows:
            out[c0 + ty + j, r0 + tx] = tile[ty + j, tx]


@cuda.jit
def _whole_tiles_only(a, out):
    """padded, but the edge guard is on whole tiles: the partial tiles at the edges are never copied."""
    tile = cuda.shared.array((TILE, PADDED), out.dtype)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    r0, c0 = cuda.blockIdx.y * T.TILE, cuda.blockIdx.x * T.TILE
    rows, cols = a.shape
    if r0 + T.TILE > rows or c0 + T.TILE > cols:
        return
    for j in range(0, T.TILE, cuda.blockDim.y):
        if ty + j < T.TILE:
            tile[ty + j, tx] = a[r0 + ty + j, c0 + tx]
    cuda.syncthreads()
    for j in range(0, T.TILE, cuda.blockDim.y):
        if ty + j < T.TILE:
            out[c0 + ty + j, r0 + tx] = tile[tx, ty + j]


MUTANTS = [Variant("drops_last_row", "", T.naive_launch, launch_once(_drops_last_row)),
           Variant("tile_not_transposed", "", T.tile_launch, launch_once(_tile_not_transposed)),
           Variant("whole_tiles_only", "", T.tile_launch, launch_once(_whole_tiles_only))]


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_wrong_kernels_fail_the_check(mutant, rng):
    spec, size, threads = kernels.load("transpose"), (40, 70), 64
    dtype = np.dtype(np.float32)
    inputs = spec.make_inputs(size, dtype, rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    prepared = C.prepare_numba(spec, size, mutant, mutant.launch(size, threads), inputs, SIMULATOR)
    checked = check_prepared(prepared, refs, spec.tolerance(inputs, refs, dtype), spec.out_specs(size, dtype))
    assert not checked.verdict.ok, f"wrong kernel {mutant.name} passed the check"


# --- launch math ----------------------------------------------------------------------------------------
def test_launch_math():
    naive = T.naive_launch((37, 45), 64)
    assert naive.grid == (2, 19) and naive.block == (32, 2) and naive.threads_needed == 37 * 45
    tile = T.tile_launch((37, 45), 64)
    assert tile.grid == (2, 2) and tile.block == (32, 2)
    assert tile.threads_needed == 45 * (1 * 2 + 2) and tile.threads_idle == tile.threads_total - tile.threads_needed
    assert T.tile_launch((64, 64), 1024).threads_needed == 64 * 64  # a thread an element: none idle


# --- what the spec declares: contenders, the torch op ----------------------------------------------------
def test_declared_contenders_compute_the_transpose(rng):
    """The CuPy op is written against the array API CuPy shares with NumPy, so NumPy runs it here;
    the torch op runs on CPU tensors."""
    from lab.core import registry

    a = rng.standard_normal((7, 11)).astype(np.float32)
    for label in registry.labels("cupy", "transpose"):
        out = np.full((11, 7), np.nan, np.float32)
        (res,) = registry.function("cupy", "transpose", label)(np, a, out=[out])
        assert np.array_equal(res, a.T) and np.array_equal(out, a.T)
    torch = pytest.importorskip("torch")
    t_in = torch.from_numpy(a)
    out = torch.full((11, 7), float("nan"))
    (res,) = registry.function("torch", "transpose", "torch out.copy_(a.t())")(torch, t_in, out=[out])
    assert torch.equal(res, t_in.t()) and res is out
    assert registry.labels("torch", "transpose")[-1] == registry.lab_op_label("transpose")


def test_torch_op(rng):
    """torch.ops.lab.transpose, built by torch_bridge from the spec: exact, contiguous, checked inputs,
    no gradient, traceable (opcheck)."""
    torch = pytest.importorskip("torch")
    import torch_bridge.lab_ops  # noqa: F401  (registers torch.ops.lab.*)

    device = "cpu" if SIMULATOR else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA torch")
    a = torch.from_numpy(rng.standard_normal((37, 45)).astype(np.float32)).to(device)
    out = torch.ops.lab.transpose(a)
    assert torch.equal(out, a.t()) and out.is_contiguous()
    assert torch.equal(torch.ops.lab.transpose(a.t()), a)  # a non-contiguous input is made contiguous
    with pytest.raises(ValueError, match="lab.transpose: .* expected 2-D"):
        torch.ops.lab.transpose(a[0])
    with pytest.raises(RuntimeError, match="no gradient"):
        torch.ops.lab.transpose(a.clone().requires_grad_())
    torch.library.opcheck(torch.ops.lab.transpose.default, (a[:5, :7].contiguous(),))


# --- on a GPU: compute-sanitizer finds no race (the barrier between the tile's writes and reads) ------------
def _no_sanitizer():
    from lab.inspect import sanitize

    return SIMULATOR or sanitize.find_sanitizer() is None


@pytest.mark.skipif(_no_sanitizer(), reason="needs a CUDA GPU and compute-sanitizer")
@pytest.mark.parametrize("tool", ["racecheck", "memcheck"])
def test_every_rung_is_clean_under_compute_sanitizer(tool):
    from lab.inspect import sanitize

    doc = sanitize.sanitize("transpose", "gpu", tools=[tool], size="77x129", threads=128)
    bad = [f"{r['variant']}: {r['status']} {r['count']}" for r in doc["rows"] if r["status"] not in ("clean", "skipped")]
    assert not bad and not doc["unattributed"], bad
    assert sum(r["status"] == "clean" for r in doc["rows"]) == 3
