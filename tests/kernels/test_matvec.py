"""matvec: every rung against NumPy on fresh random inputs at awkward sizes (split_k and group_per_row
at the shapes they are for: few long rows, short rows); a launch that covers too few rows is caught."""
import numpy as np
import pytest

import kernels
from kernels.spec import split_columns
from tests.conftest import SIMULATOR
from tests.helpers import check_rung

pytestmark = pytest.mark.gpu

# (size, threads per block): 1 element, sizes that are not multiples of the block, several blocks.
MATVEC_CASES = [((1, 1), 32), ((1, 37), 64), ((5, 1), 32), ((7, 130), 64), ((33, 45), 96), ((2, 4100), 32)] + ([] if SIMULATOR else [
    ((1000, 4097), 256), ((4099, 1001), 1024), ((16384, 4096), 1024), ((3, 10000), 64)])


@pytest.mark.parametrize("variant", ["row_per_thread", "warp_per_row", "warp_per_row_shared_x"])
@pytest.mark.parametrize("size,threads", MATVEC_CASES)
def test_matvec(variant, size, threads, rng, simulator):
    check_rung("matvec", variant, size, threads, rng, simulator)


@pytest.mark.parametrize("dtype", [np.float64])
def test_matvec_float64(dtype, rng, simulator):
    for variant in kernels.load("matvec").variants:
        check_rung("matvec", variant, (9, 70), 64, rng, simulator, dtype)


def test_unwritten_output_fails_the_check(rng, simulator):
    """A launch that covers too few threads leaves poisoned (NaN) rows, and the check catches it."""
    spec = kernels.load("matvec")
    v = spec.variants["row_per_thread"]
    from kernels.spec import Launch
    from lab.core import contenders as C
    from lab.core.check import check_outputs

    size = (40, 8)
    inputs = spec.make_inputs(size, np.dtype(np.float32), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    short = Launch(grid=(1,), block=(32,), threads_needed=40)  # 32 threads for 40 rows
    prepared = C.prepare_numba(spec, size, v, short, inputs, simulator)
    prepared.poison()
    outs = prepared.read(prepared.call())
    v = check_outputs(outs, refs, spec.tolerance(inputs, refs, np.dtype(np.float32)))
    assert not v.ok and v.max_abs_err == np.inf
    assert np.isnan(outs[0][32:]).all() and np.isfinite(outs[0][:32]).all()


def test_launch_math():
    spec = kernels.load("matvec")
    cfg = spec.variants["warp_per_row"].launch((16384, 4096), 1024)
    assert cfg.grid == (512,) and cfg.block == (1024,) and cfg.threads_idle == 0
    cfg = spec.variants["row_per_thread"].launch((1000, 10), 256)
    assert cfg.grid == (4,) and cfg.threads_total == 1024 and cfg.threads_idle == 24


# --- split_k (few long rows) and group_per_row (short rows), with auto --------------------------------
MATVEC = [((1, 1), 32), ((3, 300), 64), ((5, 37), 32), ((9, 7), 32)] + ([] if SIMULATOR else [
    ((100000, 32), 256), ((4099, 65), 128), ((77, 1), 32),
    ((4, 100000), 256), ((16, 262144), 256), ((64, 65536), 1024), ((1000, 4097), 128), ((3, 10001), 64)])


@pytest.mark.parametrize("variant", ["split_k", "group_per_row", "auto"])
@pytest.mark.parametrize("size,threads", MATVEC)
def test_matvec_split_k(variant, size, threads, rng, simulator):
    check_rung("matvec", variant, size, threads, rng, simulator)


def test_matvec_split_k_float64(rng, simulator):
    check_rung("matvec", "split_k", (3, 300) if SIMULATOR else (7, 50001), 64, rng, simulator, np.float64)


def test_split_columns():
    chunk, splits = split_columns(4, 100000, 256, 4)
    assert chunk % 32 == 0 and (splits - 1) * chunk < 100000 <= splits * chunk and splits > 1
    assert split_columns(100000, 64, 256, 4) == (64, 1)
