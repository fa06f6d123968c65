"""The occupancy calculator against cases worked by hand (cuda_occupancy.h rules), one per compute
capability and each limiting factor at least once; bad input; the CLI contract."""
import json

import pytest

from lab.core import archs
from lab.core.errors import LabError
from lab.core.occupancy import calculate, sweep
from lab.core.resources import offline_unavailable

# (arch, threads, registers, shared bytes) -> (blocks/SM, warps/SM, limiter). Worked by hand:
CASES = [
    # sm_70: 8 warps a block; 64 regs x 32 = 2048 a warp; 16384 / 2048 = 8 warps a sub-partition,
    # x 4 = 32 warps = 4 blocks (warps would allow 64 / 8 = 8, blocks 32, no shared memory).
    ("sm_70", 256, 64, 0, 4, 32, "registers"),
    # sm_75: 20000 B -> 20224 (256 B units) -> 65536 // 20224 = 3 blocks (warps 32 / 4 = 8, regs 16).
    ("sm_75", 128, 32, 20000, 3, 12, "shared_memory"),
    # sm_80: 1-warp blocks: 32 block slots cap it at 32 warps of 64 (regs 128, smem 1 KB each: 164).
    ("sm_80", 32, 16, 0, 32, 32, "blocks"),
    # sm_86: 32-warp blocks: 48 // 32 = 1 (regs 1024/warp -> 64 warps -> 2 blocks; smem 100).
    ("sm_86", 1024, 32, 0, 1, 32, "warps"),
    # sm_87: 48 KB + 1 KB reserved = 50176 B; 164 KB = 167936 // 50176 = 3 (warps 6, regs 8).
    ("sm_87", 256, 32, 49152, 3, 24, "shared_memory"),
    # sm_89: 1-warp blocks, 24 block slots: 24 warps of 48.
    ("sm_89", 32, 32, 0, 24, 24, "blocks"),
    # sm_90 (matmul register_tiled): 128 regs -> 4096 a warp -> 4 warps a sub-partition -> 16 -> 2
    # blocks of 8 warps; smem 34304 + 1024 = 35328 -> 233472 // 35328 = 6.
    ("sm_90", 256, 128, 34304, 2, 16, "registers"),
    # sm_90: 200 regs -> 6400 a warp; 16384 // 6400 = 2 a sub-partition -> 8 warps -> 4 blocks of 2
    # warps (65536 / (200 * 64) would say 5: the per-sub-partition floor matters).
    ("sm_90", 64, 200, 0, 4, 8, "registers"),
    # sm_100: 24-warp blocks: 64 // 24 = 2 (regs 16 -> 512 a warp -> 128 warps -> 5 blocks).
    ("sm_100", 768, 16, 0, 2, 48, "warps"),
    # sm_120: 255 regs -> 8160 -> 8192 a warp; 2 a sub-partition -> 8 warps -> 2 blocks of 4.
    ("sm_120", 128, 255, 0, 2, 8, "registers"),
]


@pytest.mark.parametrize("arch,threads,regs,smem,blocks,warps,limiter", CASES)
def test_calculator_by_hand(arch, threads, regs, smem, blocks, warps, limiter):
    a = archs.get(arch)
    r = calculate(a, threads, regs, smem)
    assert (r["active_blocks_per_sm"], r["active_warps_per_sm"], r["limiter"]) == (blocks, warps, limiter)
    assert r["occupancy"] == pytest.approx(warps / a.max_warps_per_sm)
    assert r["advice"]


def test_every_arch_of_the_issue_is_in_the_table():
    assert set(archs.ARCHS) == {"sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120"}
    for a in archs.ARCHS.values():
        assert a.reserved_shared_per_block == (1024 if a.cc >= (8, 0) else 0)


def test_advice_names_a_change_that_works():
    a = archs.get("sm_90")
    r = calculate(a, 256, 128, 34304)
    assert "would fit 3" in r["advice"]
    best = int(r["advice"].split("at most ")[1].split()[0])
    assert calculate(a, 256, best, 34304)["active_blocks_per_sm"] == 3
    assert calculate(a, 256, best + 1, 34304)["active_blocks_per_sm"] == 2


def test_sweep_covers_32_to_1024():
    pts = sweep(archs.get("sm_86"), 32, 0)
    assert [p["threads"] for p in pts] == list(range(32, 1025, 32))
    assert max(p["occupancy"] for p in pts) == 1.0


@pytest.mark.parametrize("args,needle", [
    (("sm_90", 1025, 32, 0), "threads per block must be 1..1024"),
    (("sm_90", 256, 256, 0), "0..255 registers"),
    (("sm_86", 256, 32, 99 * 1024 + 1), "0..101376 bytes"),
    (("sm_90", 1024, 255, 0), "allows 65536"),
])
def test_bad_input_is_one_line_error(args, needle):
    arch, *rest = args
    with pytest.raises(LabError, match=needle):
        calculate(archs.get(arch), *rest)


@pytest.mark.parametrize("argv,needle", [
    (["occupancy", "--arch", "sm_99", "--registers", "32"], "unknown arch"),
    (["occupancy", "--arch", "sm_90", "--threads", "2048", "--registers", "32"], "1..1024"),
    (["occupancy", "--arch", "sm_90", "--registers", "300"], "registers"),
    (["occupancy", "--arch", "sm_80", "--registers", "32", "--shared", "200000"], "shared memory per block"),
    (["occupancy", "nosuchkernel"], "unknown kernel"),
    (["occupancy", "vecadd", "--variant", "nope"], "unknown variant"),
    (["grid", "vecadd", "--threads", "4096"], "threads per block"),
    (["grid", "matmul", "--variant", "naive", "--size", "70000x1x1", "--threads", "32"], "larger than CUDA allows"),
])
def test_cli_bad_input_exit_2(argv, needle, lab):
    code, out, err = lab(*argv)
    assert code == 2
    err = err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


def test_cli_calculator_json(lab):
    code, out, err = lab("occupancy", "--arch", "sm_90", "--threads", "256", "--registers", "128", "--shared", "34304",
                         "--json")
    assert code == 0, err
    r = json.loads(out)
    for key in ("arch", "threads", "registers", "shared_bytes", "active_blocks_per_sm", "active_warps_per_sm",
                "max_warps_per_sm", "occupancy", "limiter"):
        assert key in r
    assert (r["active_blocks_per_sm"], r["limiter"], r["occupancy"]) == (2, "registers", 0.25)


def test_cli_sweep_png(tmp_path, lab):
    png = tmp_path / "sweep.png"
    code, out, err = lab("occupancy", "--arch", "sm_86", "--registers", "40", "--shared", "0", "--threads", "384",
                         "--sweep", "--png", str(png))
    assert code == 0, err
    assert "384 ◀ current" in out and png.stat().st_size > 5000


@pytest.mark.skipif(offline_unavailable() is not None, reason="nvJitLink/NVVM/NVRTC missing: pip install '.[occupancy]'")
def test_offline_resources_of_a_kernel(lab):
    """vecadd compiled to PTX by numba-cuda and assembled by nvJitLink for sm_90 (no GPU needed)."""
    code, out, err = lab("occupancy", "matmul", "--variant", "shared", "--arch", "sm_90", "--json")
    assert code == 0, err
    r = json.loads(out)
    # 2 TPB x TPB float32 tiles = 2 * 16 * 16 * 4 = 2048 B of static shared memory at least
    assert r["shared_bytes"] == 2048 and 8 <= r["registers"] <= 255 and r["local_bytes"] == 0
    assert r["threads"] == 256 and r["resources_source"].startswith("numba-cuda LTO-IR + nvJitLink")


def test_lab_run_launch_dicts_carry_the_resource_keys():
    """lab run adds registers, shared_bytes, local_bytes and occupancy to each Numba variant's launch
    dict (None in the simulator, which compiles nothing)."""
    from lab.core.runner import Options, run

    report = run(Options(kernel="vecadd", size="100", contenders=["numba"], repeats=1), "simulator")
    for cfg in report.launches.values():
        assert {"registers", "shared_bytes", "local_bytes", "occupancy"} <= set(cfg)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(arch=st.sampled_from(sorted(archs.ARCHS)), threads=st.integers(1, 1024), regs=st.integers(0, 254),
       smem=st.integers(0, 99 * 1024))
def test_calculator_invariants(arch, threads, regs, smem):
    """Fewer resources never lower occupancy; the warps placed never exceed the SM's slots."""
    a = archs.get(arch)
    try:
        r = calculate(a, threads, regs, smem)
    except LabError:
        return
    assert r["active_warps_per_sm"] <= a.max_warps_per_sm and 0 <= r["occupancy"] <= 1
    assert r["active_blocks_per_sm"] == min(v for v in r["limits"].values() if v is not None)
    if _fits(a, threads, regs + 1):
        assert calculate(a, threads, regs + 1, smem)["active_blocks_per_sm"] <= r["active_blocks_per_sm"]
    if smem >= 128:
        assert calculate(a, threads, regs, smem - 128)["active_blocks_per_sm"] >= r["active_blocks_per_sm"]


def _fits(a, threads, regs):
    try:
        calculate(a, threads, regs, 0)
        return True
    except LabError:
        return False


def test_launch_usage_reads_the_given_launches_without_running_the_variant(monkeypatch):
    """lab run hands over the kernels its checked call launched: no second run of the rung (on a GPU
    that was a full-size input generation and launch per rung), the records' numbers used as given."""
    from lab.core import occupancy, resources
    from lab.core.resources import LaunchRecord

    def no_rerun(*a, **k):
        raise AssertionError("record_launches ran although the launches were given")

    monkeypatch.setattr(occupancy, "current_cc", lambda: (9, 0))
    monkeypatch.setattr(resources, "record_launches", no_rerun)
    monkeypatch.setattr(resources, "device_resources",
                        lambda rec: {"registers": 32, "shared_bytes": 0, "local_bytes": 0})
    monkeypatch.setattr(resources, "driver_blocks_per_sm", lambda rec, t, dyn=0: 2)
    recs = [LaunchRecord("kernels.matvec", "warp_per_row_kernel", [], (512,), (1024,))]
    got = occupancy.launch_usage(None, "warp_per_row", 1024, False, (16384, 4096), records=recs)
    assert got == {"registers": 32, "shared_bytes": 0, "local_bytes": 0,
                   "occupancy": calculate(archs.for_cc((9, 0)), 1024, 32, 0)["occupancy"]}
