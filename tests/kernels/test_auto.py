"""The rungs for shapes away from the headline ones (issue 11): matvec split_k, softmax group_rows and
split_row, matmul tile64 and split_k, and every kernel's ``auto``; checked on fresh random inputs at
odd sizes (poisoned outputs, float64 reference), tiny in the simulator, real shapes with -m gpu."""
import numpy as np
import pytest

import kernels
from kernels import matmul as MM
from kernels import softmax as S
from kernels.spec import split_columns
from tests.conftest import SIMULATOR
from tests.helpers import run_variant

pytestmark = pytest.mark.gpu


def _check(kernel, variant, size, threads, rng, simulator, dtype=np.float32):
    ok, err, *_ = run_variant(kernels.load(kernel), variant, size, threads, rng, dtype=dtype, simulator=simulator)
    assert ok, f"{kernel} {variant} at {size}, {threads} threads: max abs err {err}"


MATVEC = [((1, 1), 32), ((3, 300), 64), ((5, 37), 32), ((9, 7), 32)] + ([] if SIMULATOR else [
    ((100000, 32), 256), ((4099, 65), 128), ((77, 1), 32),
    ((4, 100000), 256), ((16, 262144), 256), ((64, 65536), 1024), ((1000, 4097), 128), ((3, 10001), 64)])


@pytest.mark.parametrize("variant", ["split_k", "group_per_row", "auto"])
@pytest.mark.parametrize("size,threads", MATVEC)
def test_matvec_split_k(variant, size, threads, rng, simulator):
    _check("matvec", variant, size, threads, rng, simulator)


def test_matvec_split_k_float64(rng, simulator):
    _check("matvec", "split_k", (3, 300) if SIMULATOR else (7, 50001), 64, rng, simulator, np.float64)


SOFTMAX_GROUP = [((9, 5), 32), ((3, 33), 32), ((4, 130), 64)] + ([] if SIMULATOR else [
    ((100000, 32), 128), ((262144, 128), 256), ((1000, 1000), 128), ((1001, 2000), 128), ((4099, 5), 1024),
    ((77, 1), 32)])


@pytest.mark.parametrize("size,threads", SOFTMAX_GROUP)
def test_softmax_group_rows(size, threads, rng, simulator):
    _check("softmax", "group_rows", size, threads, rng, simulator)


@pytest.mark.parametrize("size,threads", [((2, 300), 32)] + ([] if SIMULATOR else [
    ((4, 1000000), 256), ((1, 1048576), 256), ((32, 65536), 512), ((3, 40001), 1024)]))
def test_softmax_split_row(size, threads, rng, simulator):
    assert split_columns(size[0], size[1], threads, S.UNROLL)[1] > 1  # really split
    _check("softmax", "split_row", size, threads, rng, simulator)


@pytest.mark.skipif(SIMULATOR, reason="GPU sizes")
@pytest.mark.parametrize("variant", ["group_rows", "split_row"])
def test_softmax_new_rungs_float64_and_hard_rows(variant, rng, simulator):
    from tests.kernels.test_softmax import hard_rows, run_on

    _check("softmax", variant, (300, 700), 128, rng, simulator, np.float64)  # group_rows: warp streaming
    x, keep = hard_rows(100000, rng)
    ok, err, out, ref, tol = run_on(variant, x, 256, simulator)
    assert ok and out[4, keep] == 1 and (out[np.isneginf(x)] == 0).all(), f"{variant}: max abs err {err}"


MATMUL_TILE = [(1, 1, 1), (19, 21, 45), (70, 9, 20)] + ([] if SIMULATOR else [
    (1000, 1030, 517), (257, 4099, 130), (1024, 1024, 1024), (4099, 4097, 1001)])


@pytest.mark.parametrize("size", MATMUL_TILE)
def test_matmul_tile64(size, rng, simulator):
    _check("matmul", "tile64", size, 256, rng, simulator)


MATMUL_SPLIT = [(5, 7, 50)] if SIMULATOR else [(64, 64, 65536), (32, 4096, 4096), (4096, 32, 4096),
                                              (128, 128, 32768), (65, 33, 9999)]


@pytest.mark.parametrize("size", MATMUL_SPLIT)
def test_matmul_split_k(size, rng, simulator, monkeypatch):
    if SIMULATOR:
        monkeypatch.setattr(MM, "SPLIT_MIN_K", 16)  # K ranges of 16: 50 k in 2 ranges, a few blocks
    assert MM.split_k_plan(size)[1] > 1  # really split
    _check("matmul", "split_k", size, 256, rng, simulator)
    if not SIMULATOR:
        _check("matmul", "split_k", (100, 90, 5001), 256, rng, simulator, np.float64)


SKINNY = [(5, 130, 70), (40, 33, 50)] if SIMULATOR else [(32, 4096, 4096), (1, 5000, 3001), (17, 1030, 2049),
                                                         (33, 300, 1000)]


@pytest.mark.parametrize("size", SKINNY)
def test_matmul_skinny_m(size, rng, simulator, monkeypatch):
    if SIMULATOR:
        monkeypatch.setattr(MM, "SPLIT_MIN_K", 16)  # several K ranges at a tiny K
    _check("matmul", "skinny_m", size, 128, rng, simulator)


AUTO = {"vecadd": [(1,), (1001,)], "quantize": [(1,), (999,)], "matvec": [(2, 70)], "softmax": [(5, 33)],
        "matmul": [(9, 10, 11)]}
AUTO_GPU = {"vecadd": [(1 << 24,)], "quantize": [(1 << 22,)], "matvec": [(4, 100000), (4096, 4096)],
            "softmax": [(100000, 32), (4, 1000000), (4099, 3001)],
            "matmul": [(64, 64, 65536), (1000, 1030, 517), (2048, 2048, 2048), (32, 4096, 4096)]}
AUTO_CASES = [(k, s) for k, sizes in (AUTO if SIMULATOR else AUTO_GPU).items() for s in sizes]


@pytest.mark.parametrize("kernel,size", AUTO_CASES)
def test_auto(kernel, size, rng, simulator):
    """auto runs the rung it names, at its own threads, whatever --threads says."""
    spec = kernels.load(kernel)
    cfg = spec.variants["auto"].launch(size, 1024)
    assert cfg.rung in spec.variants and cfg.rung != "auto" and cfg.note.startswith(f"auto: {cfg.rung}")
    _check(kernel, "auto", size, 1024, rng, simulator)


def test_auto_choices_and_explicit_threads():
    """The heuristics' documented choices; a named rung keeps the --threads it was given."""
    mv, sm, mm = (kernels.load(k) for k in ("matvec", "softmax", "matmul"))
    assert mv.variants["auto"].launch((4, 100000), 1024).rung == "split_k"
    assert mv.variants["auto"].launch((16384, 4096), 1024).rung == "warp_per_row"
    assert mv.variants["auto"].launch((100000, 32), 1024).rung == "group_per_row"
    assert mv.variants["auto"].launch((16384, 4096), 1024).block == (256,)
    assert mv.variants["warp_per_row"].launch((16384, 4096), 1024).block == (1024,)  # honoured
    assert sm.variants["auto"].launch((100000, 32), 1024).rung == "group_rows"
    assert sm.variants["auto"].launch((4, 1000000), 32).rung == "split_row"
    assert sm.variants["auto"].launch((8192, 8192), 32).block == (1024,)
    assert sm.variants["fused"].launch((8192, 8192), 64).block == (64,)  # honoured
    assert mm.variants["auto"].launch((4096, 4096, 4096), 64).rung == "register_tiled"
    assert mm.variants["auto"].launch((1024, 1024, 1024), 64).rung == "tile64"
    assert mm.variants["auto"].launch((512, 512, 512), 64).rung == "split_k"
    assert mm.variants["auto"].launch((64, 64, 65536), 64).rung == "split_k"
    assert mm.variants["auto"].launch((32, 4096, 4096), 64).rung == "split_k"
    assert mv.variants["auto"].launch((4, 100000), 64).as_dict()["rung"] == "split_k"


def test_launch_math():
    assert [S.group_width(c) for c in (1, 4, 5, 32, 33, 128, 129, 5000)] == [1, 1, 2, 8, 16, 32, 32, 32]
    # K = 32 values a lane at 1024 threads would need 96 x 1024 registers: the warp streaming path
    assert "warp streaming" in kernels.load("softmax").variants["group_rows"].launch((5, 1000), 1024).note
    assert "32 values a lane" in kernels.load("softmax").variants["group_rows"].launch((5, 1000), 128).note
    cfg = kernels.load("softmax").variants["group_rows"].launch((100000, 32), 128)
    assert cfg.grid == (100000 // 16,) and cfg.threads_needed == 100000 * 8
    chunk, splits = split_columns(4, 100000, 256, 4)
    assert chunk % 32 == 0 and (splits - 1) * chunk < 100000 <= splits * chunk and splits > 1
    assert split_columns(100000, 64, 256, 4) == (64, 1)
    kchunk, splits = MM.split_k_plan((64, 64, 65536))
    assert kchunk % 16 == 0 and splits * kchunk >= 65536 and (splits - 1) * kchunk < 65536 and splits > 1
    assert MM.split_k_plan((4096, 4096, 4096))[1] == 1
    cfg = kernels.load("matmul").variants["tile64"].launch((1000, 1030, 517), 256)
    assert cfg.grid == (17, 16, 1) and cfg.block == (256,)
