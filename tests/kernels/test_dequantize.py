"""dequantize and quantize_per_channel as kernel specs (kernels/dequantize.py,
kernels/quantize_per_channel.py): every rung against the float64 reference at odd sizes, through
the runner's path (poisoned outputs), and through ``lab run``."""
import numpy as np
import pytest

import kernels
from lab.core.runner import Options, run
from tests.conftest import BACKEND, SIMULATOR
from tests.helpers import run_variant

pytestmark = pytest.mark.gpu

DEQ = kernels.load("dequantize")
QPC = kernels.load("quantize_per_channel")
SIZES = [((1, 1), 32), ((3, 70), 32), ((2, 300), 64)] + ([] if SIMULATOR else [
    ((4096, 16384), 256), ((100000, 33), 128), ((1, 5_000_001), 1024), ((7, 4099), 96)])


@pytest.mark.parametrize("variant", list(DEQ.variants))
@pytest.mark.parametrize("size,threads", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dequantize(variant, size, threads, dtype, rng, simulator):
    if dtype == np.float64 and size[0] * size[1] > 10**6:
        pytest.skip("float64 at one small size is enough")
    ok, err, *_ = run_variant(DEQ, variant, size, threads, rng, dtype=dtype, simulator=simulator)
    assert ok, f"{variant} at {size}: max abs err {err}"


@pytest.mark.parametrize("variant", list(QPC.variants))
@pytest.mark.parametrize("size,threads", SIZES[:3] + ([] if SIMULATOR else [((513, 4097), 256), ((3000, 31), 32)]))
def test_quantize_per_channel(variant, size, threads, rng, simulator):
    ok, err, outs, refs = run_variant(QPC, variant, size, threads, rng, simulator=simulator)
    assert ok, f"{variant} at {size}: max abs err {err}"
    np.testing.assert_array_equal(outs[1][:, 1], refs[1][:, 1])  # zero points exact


def test_lab_run_reaches_both():
    for name, size in [("dequantize", "3x50"), ("quantize_per_channel", "3x50")]:
        rep = run(Options(kernel=name, size=size, contenders=["numba", "numpy"], repeats=1, warmup=0, seed=1),
                  BACKEND)
        assert all(r.ok for r in rep.rows), [(r.variant, r.reason) for r in rep.rows if not r.ok]
        assert "rung" in rep.launches["auto"]


def test_launch_math():
    cfg = DEQ.variants["row_blocks"].launch((3, 5000), 256)
    assert cfg.grid == (3, 5) and cfg.block == (256,)
    assert DEQ.variants["auto"].launch((100000, 33), 1024).rung == "element_per_thread"
    assert DEQ.variants["auto"].launch((4096, 16384), 32).rung == "row_blocks"
    assert QPC.variants["auto"].launch((10, 31), 1024).block == (32,)
    assert QPC.variants["auto"].launch((10, 100000), 32).block == (256,)
