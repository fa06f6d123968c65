"""Launch math takes the device: grids, splits and tiles follow the described device's SMs, threads an
SM and shared memory a block (kernels.device_limits), and the launches stay correct.

A 40-SM T4-like device against the 132-SM H100 (both described: the simulator has no device of its
own), plus tiny described devices (1-2 SMs) where a launch must differ at a size the simulator can run.
"""
import numpy as np
import pytest

import kernels
from kernels import device_limits as DL
from kernels.device_limits import H100, T4, described
from tests.conftest import SIMULATOR
from tests.helpers import check_rung

pytestmark = pytest.mark.gpu  # the launch math and the runs hold on a GPU too (described devices override it)


def launch(kernel, variant, size, threads=256):
    return kernels.load(kernel).variants[variant].configure(size, threads)


@pytest.mark.skipif(not SIMULATOR, reason="the simulator describes an H100; a GPU reports its own")
def test_the_simulator_describes_an_h100_and_says_so():
    from kernels.spec import sm_count

    dev = DL.current()
    assert dev == H100 and dev.described and "described" in dev.name
    assert sm_count() == 132


@pytest.mark.skipif(SIMULATOR, reason="the simulator reports no device")
def test_a_gpu_reports_its_own_limits():
    from kernels.compiler import cuda

    dev = DL.current()
    assert dev.source == "device" and not dev.described
    assert dev.sm_count == cuda.get_current_device().MULTIPROCESSOR_COUNT
    assert dev.max_threads_per_block == 1024 and dev.warp_size == 32 and dev.shared_per_block == 48 * 1024


def test_described_device_is_seen_inside_the_block_only():
    from kernels.spec import sm_count

    before = DL.current()
    with described(T4) as dev:
        assert DL.current() is dev and sm_count() == 40
        with described(T4.replace(sm_count=2)):
            assert sm_count() == 2
        assert sm_count() == 40
    assert DL.current() == before


def test_arch_table_rows_describe_devices():
    from lab.core import archs

    h100, t4 = archs.get("sm_90").device_limits(), archs.get("sm_75").device_limits()
    assert (h100.sm_count, h100.max_threads_per_sm, h100.shared_per_block) == (132, 2048, 48 * 1024)
    assert (t4.sm_count, t4.max_threads_per_sm, t4.shared_per_block_optin) == (40, 1024, 64 * 1024)
    assert h100.cc == (9, 0) and t4.cc == (7, 5) and t4.described


def test_matmul_grids_and_splits_follow_the_sm_count():
    from kernels.gemm import config, split_k

    with described(H100):
        red_h, plan_h, small_h = split_k.reduce_launch(64, 1 << 20), split_k.split_k_plan((256, 256, 8192)), \
            config.gemm_config("small", (300, 300, 300))
        small_launch_h = launch("matmul", "small", (300, 300, 300))
    with described(T4):
        red_t, plan_t, small_t = split_k.reduce_launch(64, 1 << 20), split_k.split_k_plan((256, 256, 8192)), \
            config.gemm_config("small", (300, 300, 300))
        small_launch_t = launch("matmul", "small", (300, 300, 300))
    # the reduction: one wave of 256-thread blocks, 2048 threads x 132 SMs against 1024 x 40
    assert red_h == (2048 // 256 * 132, (32, 8)) and red_t == (1024 // 256 * 40, (32, 8))
    # split-K aims at 4 blocks an SM: 16 tiles x 16 ranges (K allows 16 of 512) against 16 x 10
    assert plan_h[1] == 16 and plan_t[1] == 10
    # small: the largest tile that gives every SM a block: 100 blocks of 32 x 32 (no tile gives 132);
    # 32 x 64 gives 50 >= 40 on the T4
    assert (small_h.bm, small_h.bn) == (32, 32) and (small_t.bm, small_t.bn) == (32, 64)
    assert small_launch_h.grid == (10, 10, 1) and small_launch_t.grid == (5, 10, 1)


def test_the_launch_model_counts_the_described_sms():
    from kernels.gemm import model

    with described(T4):
        rung, _, why, params = model.choose((1024, 1024, 1024))
    assert rung == "wide_loads" and "for 40 SMs" in why and params["tile"] in model.RATES


def test_matvec_softmax_quantize_choices_follow_the_device():
    from kernels import matvec, quantize, softmax

    with described(H100):
        mv_h, sm_h, q_h = matvec.choose((500, 4096)), softmax.choose((100, 20000)), \
            quantize.grid_stride_launch((10 ** 8,), 256)
    with described(T4):
        mv_t, sm_t, q_t = matvec.choose((500, 4096)), softmax.choose((100, 20000)), \
            quantize.grid_stride_launch((10 ** 8,), 256)
    assert mv_h[0] == "split_k" and mv_t[0] == "warp_per_row"  # 500 rows < 8 x 132 SMs, not < 8 x 40
    assert sm_h[0] == "split_row" and sm_t[0] == "fused"  # 100 rows < 132 SMs, not < 40
    assert q_h.grid == (132 * 2048 // 2 // 256,) and q_t.grid == (40 * 1024 // 2 // 256,)


def test_shared_memory_a_block_limits_the_tiles():
    """A hypothetical device with 16 KB of shared memory a block: tile64's double-buffered slabs of
    16 (16.5 KB in float32) drop to slabs of 8, and warp_tiled's 33 KB tile is refused by name."""
    from kernels.gemm import config, tile

    small_smem = H100.replace(name="16 KB a block", shared_per_block=16 * 1024)
    with described(small_smem):
        tile.tile_build(64, 64, 4)
        assert (64, 64, 8) in tile._TILE_BUILDS
        with pytest.raises(ValueError, match="shared memory, over 16384 on 16 KB a block"):
            config.WARP_TILED.derived()
    assert config.WARP_TILED.derived()["smem"] <= 48 * 1024  # the described H100 again


@pytest.mark.parametrize("sms", [2, 132])
def test_matmul_small_is_right_on_either_device(sms, rng, simulator):
    """The small rung at 70 x 90 x 33: 64 x 64 tiles (4 blocks) on a 2-SM device, 32 x 32 tiles
    (9 blocks) on the H100's 132; both pass the check."""
    with described(H100.replace(name=f"{sms} SMs", sm_count=sms)):
        cfg = launch("matmul", "small", (70, 90, 33))
        assert cfg.grid == ((2, 2, 1) if sms == 2 else (3, 3, 1))
        check_rung("matmul", "small", (70, 90, 33), 128, rng, simulator)


@pytest.mark.parametrize("sms", [1, 2])
def test_matvec_auto_is_right_on_either_device(sms, rng, simulator):
    """matvec auto's choice at 9 x 2048: split_k when 9 rows are under 8 warps an SM (2 SMs: 16), one warp
    a row on a 1-SM device (8); both pass the check (tiny devices keep the simulator's blocks few)."""
    with described(H100.replace(name=f"{sms} SMs", sm_count=sms)):
        from kernels import matvec

        rung, threads, _ = matvec.choose((9, 2048))  # auto's heuristic (a GPU's tuned cache may differ)
        assert rung == ("warp_per_row" if sms == 1 else "split_k")
        check_rung("matvec", rung, (9, 2048), threads, rng, simulator, np.float32)
