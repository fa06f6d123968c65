"""Every kernel's ``auto`` rung: it runs the rung its heuristic (each module's ``choose()``) names for
the shape, checked on fresh random inputs (poisoned outputs, float64 reference), tiny in the
simulator, real shapes with -m gpu; and the heuristics' documented choices. (The rungs for shapes
away from the headline ones are tested in each kernel's file.)"""
import pytest

import kernels
from kernels.gemm import precision
from tests.conftest import SIMULATOR
from tests.helpers import check_rung

pytestmark = pytest.mark.gpu

AUTO = {"vecadd": [(1,), (1001,)], "quantize": [(1,), (999,)], "matvec": [(2, 70)], "softmax": [(5, 33)],
        "matmul": [(9, 10, 11), (1, 37, 130), (33, 1, 130)]}
AUTO_GPU = {"vecadd": [(1 << 24,)], "quantize": [(1 << 22,)], "matvec": [(4, 100000), (4096, 4096)],
            "softmax": [(100000, 32), (4, 1000000), (4099, 3001)],
            "matmul": [(64, 64, 65536), (1000, 1030, 517), (2048, 2048, 2048), (32, 4096, 4096), (1, 4096, 4096), (4096, 1, 4096), (1, 1000, 3001), (1, 1, 100000),
                       (1500, 700, 2500)]}
AUTO_CASES = [(k, s) for k, sizes in (AUTO if SIMULATOR else AUTO_GPU).items() for s in sizes]


@pytest.mark.parametrize("kernel,size", AUTO_CASES)
def test_auto(kernel, size, rng, simulator):
    """auto runs the rung it names, at its own threads, whatever --threads says."""
    spec = kernels.load(kernel)
    cfg = spec.variants["auto"].launch(size, 1024)
    assert cfg.rung in spec.variants and cfg.rung != "auto" and cfg.note.startswith(f"auto: {cfg.rung}")
    check_rung(kernel, "auto", size, 1024, rng, simulator)


def test_auto_choices_and_explicit_threads(monkeypatch):
    """The heuristics' documented choices (tuned tables off: LAB_TUNED=0); a named rung keeps the
    --threads it was given; vector-shaped matmuls (M = 1, N = 1) run the vector rung and say so."""
    monkeypatch.setenv("LAB_TUNED", "0")
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
    # matmul's launch model (choose(): wave quantization over measured tiles, the H100's 132 SMs):
    # the biggest tile where it fills the SMs, smaller tiles where a big one leaves SMs idle or
    # gives some SMs an extra block, K split where M x N has too few tiles
    def picked(size):  # FP32 on the SIMT rungs only ("highest"): on a GPU with tensor cores "high" picks 3xTF32
        with precision.using("highest"):
            cfg = mm.variants["auto"].launch(size, 64)
        assert cfg.rung == "wide_loads" and "launch model" in cfg.note
        p = dict(cfg.params)
        return p["tile"], p.get("splits", 1)
    assert picked((4096, 4096, 4096)) == ("128x128x16", 1)
    assert picked((1024, 1024, 1024)) == ("128x64x16", 1)  # 128 blocks: one an SM (128 x 128: 64)
    assert picked((777, 1333, 901)) == ("32x64x16", 1)  # 128 x 64: 147 blocks, 15 SMs doing two
    assert picked((64, 64, 65536))[1] > 1 and picked((256, 256, 8192))[1] > 1  # few tiles, long K: split
    assert picked((2500, 17, 3000))[0] == "32x32x32"  # N = 17: the narrowest tile
    assert picked((8192, 8192, 128)) == ("256x128x8", 1)  # 2,048 blocks of the biggest tile: no tail to speak of
    assert mv.variants["auto"].launch((4, 100000), 64).as_dict()["rung"] == "split_k"
    m1, n1 = mm.variants["auto"].launch((1, 4096, 4096), 64), mm.variants["auto"].launch((4096, 1, 4096), 64)
    assert m1.rung == n1.rung == "vector" and "heuristic" in m1.note
    assert "matvec rung: M = 1" in m1.note and "matvec rung: N = 1" in n1.note
