"""Discoverability: `lab list` names every kernel, rung, contender and size; `lab --help` and `lab run
--help` name the kernels and are not cut; `lab device` reports the GPU (or the simulator)."""
import json

import pytest

from tests.conftest import SIMULATOR
from tests.helpers import fits


@pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")
def test_lab_list_names_every_kernel_rung_contender_and_size(lab):
    import kernels

    code, out, err = lab("list", "--json")
    assert code == 0, err
    info = {k["name"]: k for k in json.loads(out)}
    assert list(info) == list(kernels.NAMES)
    for name, k in info.items():
        spec = kernels.load(name)
        assert [r["name"] for r in k["rungs"]] == list(spec.variants)
        assert all(r["summary"] for r in k["rungs"])
        assert k["default_size"]["simulator"] == list(spec.default_size(True))
        assert set(k["contenders"]) == {"numba", "numpy", "cupy", "torch", "triton"}
    code, text, err = lab("list")
    assert code == 0, err
    fits(text)
    for k in info.values():
        assert k["name"] in text and all(r["name"] in text for r in k["rungs"])


@pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")
def test_help_names_kernels_dtypes_and_is_not_cut(lab):
    code, out, err = lab("run", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "vecadd, matvec, matmul, softmax, quantize" in flat
    assert "[float32|float64]" in flat and "--wide" in flat
    code, out, err = lab("--help")
    run_line = next(line for line in out.splitlines() if line.strip().startswith("run "))
    assert "..." not in run_line and "list" in out


@pytest.mark.gpu
def test_device_command(lab):
    code, out, err = lab("device", "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["max_threads_per_block"] == 1024 and info["warp_size"] == 32
    if SIMULATOR:
        assert "simulator" in info["note"]
    else:
        assert info["sm_count"] > 0 and info["peak_bandwidth_gbps"] > 100


@pytest.mark.gpu  # no kernel: the same on a GPU machine
@pytest.mark.parametrize("args", [(), ("exercise",)])
def test_a_group_alone_shows_its_usual_help(lab, args):
    """`lab` and `lab exercise` with nothing after them: the help, as with --help, on stdout, exit 0."""
    code, out, err = lab(*args)
    assert code == 0 and err == ""
    _, help_out, _ = lab(*args, "--help")
    assert out == help_out and out.startswith(f"Usage: lab {' '.join(args)}".rstrip() + " [OPTIONS]")
    assert len(out.splitlines()) > 5  # the usual layout, not one line
