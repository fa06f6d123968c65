"""lab grid: maps recorded from real simulated runs (the seed example, a 2-D kernel, a wrong kernel),
in the terminal and as a PNG."""
import json

import numpy as np
import pytest

from tests.conftest import SIMULATOR

from kernels.compiler import cuda  # noqa: E402  (after conftest chose the backend)

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="the map is recorded in the simulator")


@cuda.jit
def forgot_block(a, c):
    """A wrong copy kernel: the index forgets blockIdx (should be cuda.grid(1))."""
    i = cuda.threadIdx.x
    if i < c.shape[0]:
        c[i] = a[i]


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (deselect locally with -m "not slow")
def test_seed_example_vecadd_5466(lab):
    """The seed notebook: N = 5466, 1024 threads per block -> 6 blocks, 6144 threads, 678 idle."""
    code, out, err = lab("grid", "vecadd", "--size", "5466", "--threads", "1024", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["grid"], d["block"], d["threads_total"], d["threads_needed"], d["threads_idle"]) == \
        ([6], [1024], 6144, 5466, 678)
    assert d["warps_per_block"] == 32 and d["map"]["shape"] == [5466]
    i = np.arange(5466)
    assert d["map"]["block_of"] == (i // 1024).tolist() and d["map"]["thread_of"] == (i % 1024).tolist()
    assert d["idle_by_block"] == {"5": 678}
    assert d["elements_never_written"] == 0 and d["elements_written_twice"] == 0
    if d["waves"] is not None:  # offline registers available: 6 blocks over 132 SMs x 2 blocks
        assert d["waves"] == pytest.approx(6 / (d["sms"] * d["resident_blocks_per_sm"]))


def test_map_of_a_2d_kernel_and_the_four_per_thread_rung():
    from kernels import load
    from lab.inspect.grid import record_map

    m, n = 24, 20
    b, t, w, launches, _ = record_map(load("matmul"), "naive", (m, n, 18), 32)
    rows, cols = np.indices((m, n))
    assert (b == rows).all() and (t == cols).all() and (w == 1).all()  # block (32, 1): grid y = row
    assert launches == [((1, 24, 1), (32, 1, 1))]
    b, t, w, _, _ = record_map(load("vecadd"), "four_per_thread", (300,), 32)
    i = np.arange(300)
    assert (b == i // 128).all() and (t == i % 32).all()  # block k covers 4*32 elements, stride 32


def test_a_wrong_kernel_shows_a_wrong_map():
    """A kernel that forgets blockIdx: every block writes elements 0..T-1, the rest stay unwritten."""
    from kernels.spec import KernelSpec, Launch, Variant, blocks_for
    from lab.inspect.grid import record_map

    def prepare(cfg, inputs, outputs):
        return lambda: forgot_block[cfg.grid, cfg.block](inputs[0], outputs[0])

    spec = KernelSpec("copy", "", "N", lambda s: (100,), lambda s: [s],
                      lambda s, d, rng: (rng.standard_normal(s).astype(d),), lambda s, d: [(s, np.dtype(d))],
                      lambda a: (a,), lambda *a: [0], lambda s, d: 0, lambda s: 0,
                      {"v": Variant("v", "", lambda s, t: Launch((blocks_for(s[0], t),), (t,), s[0]), prepare)})
    b, t, w, _, _ = record_map(spec, "v", (100,), 32)
    assert (b[32:] == -1).all() and (t[:32] == np.arange(32)).all()
    assert (w[:32] == 4).all() and (w[32:] == 0).all()  # 4 blocks raced on each of the first 32


def test_grid_terminal_map_and_png(tmp_path, lab):
    png = tmp_path / "m.png"
    code, out, err = lab("grid", "matmul", "--variant", "shared", "--size", "20x18x8", "--threads", "256",
                         "--no-waves", "--png", str(png))
    assert code == 0, err
    assert "grid (2, 2) x block (16, 16)" in out and "every element written exactly once" in out
    assert png.stat().st_size > 5000


# --- lab grid --warp: one warp's requests and the 32-byte sectors they touched (issue 21) ----------------------
def _warp(lab, variant, size, threads, warp, *extra):
    code, out, err = lab("grid", "matvec", "--variant", variant, "--size", size, "--threads", str(threads),
                         "--no-waves", "--warp", str(warp), "--json", *extra)
    assert code == 0, err
    from tests.cli.test_schemas import validate

    return validate(json.loads(out), "grid.json")["warp"]


def test_warp_requests_show_row_per_thread_uncoalesced_and_warp_per_row_coalesced(lab, rng):
    rows, cols = int(rng.integers(40, 60)), int(rng.integers(33, 50))
    w = _warp(lab, "row_per_thread", f"{rows}x{cols}", 32, 0)
    assert (w["block"], w["warp_in_block"], w["threads"]) == (0, 0, [0, 31]) and "simulated" in w["label"]
    a = [r for r in w["requests"] if r["array"] == "A"]
    assert a and all(r["kind"] == "load" and r["lanes"] == 32 for r in a)
    for r in a:  # 32 lanes, 32 rows a row apart: 32 sectors, each lane's element `cols` after the last
        assert len(r["sectors"]) == 32 and np.all(np.diff(r["elements"]) == cols)
    assert len(a) == min(cols, w["requests_total"])
    assert w["arrays"]["A"] == {"itemsize": 4, "elements": rows * cols}
    # warp_per_row, warp 1 = block 0's second warp (64 threads): row 1, its lanes on consecutive columns
    w = _warp(lab, "warp_per_row", f"{rows}x{cols}", 64, 1)
    assert (w["block"], w["warp_in_block"], w["threads"]) == (0, 1, [32, 63])
    a = [r for r in w["requests"] if r["array"] == "A"]
    assert a[0]["elements"] == list(range(cols, cols + min(32, cols)))
    assert all(len(r["sectors"]) <= 5 for r in a)  # 32 floats: 4 sectors, 5 when the row is not aligned
    assert any(r["kind"] == "store" and r["array"] == "y" for r in w["requests"])


def test_warp_png_and_a_warp_outside_the_grid(tmp_path, lab):
    png = tmp_path / "w.png"
    code, out, err = lab("grid", "matvec", "--variant", "warp_per_row", "--size", "9x40", "--threads", "64",
                         "--no-waves", "--warp", "3", "--png", str(png))
    assert code == 0, err
    assert png.stat().st_size > 20000  # the maps and three array panels
    code, out, err = lab("grid", "matvec", "--variant", "warp_per_row", "--size", "9x40", "--threads", "64",
                         "--no-waves", "--warp", "10")
    assert code == 2 and "--warp 10" in err and "warps 0..9" in err and len(err.strip().splitlines()) == 1
