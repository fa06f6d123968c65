"""The CLI as a user drives it: the JSON contract, and every bad input as one line with exit code 2."""
import json

import pytest

from lab.cli import main
from tests.conftest import BACKEND, SIMULATOR


def lab(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return exc.value.code or 0, out, err


@pytest.mark.gpu
@pytest.mark.parametrize("kernel,size,threads", [("vecadd", "300", 64), ("matvec", "9x50", 64)])
def test_json_contract(capsys, kernel, size, threads):
    code, out, err = lab(capsys, "run", kernel, "--size", size, "--threads", str(threads), "--json",
                         "--repeats", "2", "--warmup", "0", "--contenders", "numba,numpy")
    assert code == 0, err
    doc = json.loads(out)
    for key in ("kernel", "backend", "device", "size", "dtype", "launch", "results"):
        assert key in doc
    assert doc["kernel"] == kernel and doc["backend"] == BACKEND and doc["dtype"] == "float32"
    assert set(doc["launch"]) >= {"grid", "block", "threads_total", "threads_idle"}
    assert doc["launch"]["block"] == [threads]
    rows = doc["results"]
    assert {r["contender"] for r in rows} == {"numba", "numpy"}
    for r in rows:
        assert set(r) >= {"contender", "variant", "median_ms", "iqr_ms", "gbps", "gflops", "max_abs_err", "ok"}
        assert r["ok"] is True and r["median_ms"] > 0 and r["max_abs_err"] < 1e-3


@pytest.mark.gpu
def test_table_output_names_the_backend(capsys):
    code, out, err = lab(capsys, "run", "vecadd", "--size", "100", "--threads", "32", "--repeats", "1",
                         "--contenders", "numba")
    assert code == 0, err
    assert ("CUDA simulator: correctness only, timings are not meaningful" in out) == SIMULATOR
    assert "launch configuration" in out and "element_per_thread" in out


@pytest.mark.gpu
@pytest.mark.parametrize("args,needle", [
    (["run", "matvecc"], "did you mean matvec"),
    (["run", "matvec", "--threads", "0"], "threads per block must be 1..1024"),
    (["run", "matvec", "--threads", "-3"], "threads per block must be 1..1024"),
    (["run", "matvec", "--threads", "1025"], "threads per block must be 1..1024"),
    (["run", "matvec", "--size", "0x5"], "at least 1"),
    (["run", "matvec", "--size", "-4x5"], "at least 1"),
    (["run", "vecadd", "--size", "0"], "at least 1"),
    (["run", "matvec", "--size", "12by5"], "malformed"),
    (["run", "matvec", "--size", "100"], "malformed"),
    (["run", "matvec", "--size", "4000000x4000000"], "GiB"),
    (["run", "matvec", "--variant", "fast"], "unknown variant"),
    (["run", "matvec", "--contenders", "numba,jax"], "unknown contender"),
    (["run", "matvec", "--dtype", "int7"], "float32"),
    (["run", "matvec", "--threads", "many"], "not a valid integer"),
    (["run", "matvec", "--repeats", "0"], "--repeats must be >= 1"),
    (["bogus"], "No such command"),
])
def test_bad_input_is_one_line_exit_2(capsys, args, needle):
    code, out, err = lab(capsys, *args)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_gpu_flag_without_gpu_fails_cleanly(capsys):
    code, out, err = lab(capsys, "run", "vecadd", "--gpu")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--gpu" in err


@pytest.mark.gpu
def test_threads_not_multiple_of_warp_warns_and_runs(capsys):
    code, out, err = lab(capsys, "run", "matvec", "--size", "9x40", "--threads", "48", "--repeats", "1",
                         "--contenders", "numba", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert any("not a multiple of the warp size" in w for w in doc["warnings"])
    by_variant = {r["variant"]: r for r in doc["results"]}
    assert by_variant["row_per_thread"]["ok"]
    assert by_variant["warp_per_row"]["status"] == "skipped" and "multiple of 32" in by_variant["warp_per_row"]["reason"]


@pytest.mark.gpu
def test_missing_optional_packages_are_reported(capsys, monkeypatch):
    from lab.core import contenders

    monkeypatch.setattr(contenders, "installed", lambda module: False)
    code, out, err = lab(capsys, "run", "vecadd", "--size", "64", "--threads", "32", "--repeats", "1", "--json")
    assert code == 0, err
    rows = {r["contender"]: r for r in json.loads(out)["results"]}
    from kernels.backend import gpu_count

    # without a GPU the reason is the GPU, not an install hint (which would pull GBs of CUDA wheels)
    why = "not installed" if gpu_count()[0] else "needs a CUDA GPU; this machine has none"
    for name in ("cupy", "torch"):
        assert rows[name]["status"] == "skipped" and why in rows[name]["reason"]
        assert gpu_count()[0] or "pip install" not in rows[name]["reason"]


@pytest.mark.gpu
def test_device_command(capsys):
    code, out, err = lab(capsys, "device", "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["max_threads_per_block"] == 1024 and info["warp_size"] == 32
    if SIMULATOR:
        assert "simulator" in info["note"]
    else:
        assert info["sm_count"] > 0 and info["peak_bandwidth_gbps"] > 100


@pytest.mark.gpu
def test_quantize_reports_round_trip_error(capsys):
    import re

    code, out, err = lab(capsys, "run", "quantize", "--size", "300", "--threads", "32", "--repeats", "1",
                         "--warmup", "0", "--contenders", "numba", "--variant", "block_partials", "--json")
    assert code == 0, err
    note, *why = json.loads(out)["notes"]
    got, half, bound = (float(v) for v in re.findall(r"= ([0-9.e+-]+)", note)[:3])
    assert 0 < got <= bound * (1 + 1e-6) and half <= bound
    # an error above scale/2 is explained in one more line (the formula truncates zero_point)
    if abs(got - half) > 1e-3 * half:  # the note prints 4 digits: equal-looking values may go either way
        assert len(why) == (1 if got > half else 0)
    assert all("above scale/2 by design" in w and "seed" not in w for w in why)


@pytest.mark.gpu
@pytest.mark.parametrize("args", [["--contenders", "cupy"]]
                         + ([["--contenders", "torch"]] if SIMULATOR else []))
def test_a_run_that_checked_nothing_exits_1(capsys, args):
    """Every row skipped (no variant, or a contender the backend cannot run): exit 1, not 0."""
    code, out, err = lab(capsys, "run", "vecadd", "--size", "64", "--threads", "32", "--repeats", "1", *args)
    if "--contenders" in args and args[-1] == "cupy" and not SIMULATOR:
        pytest.skip("cupy runs on this GPU machine")
    assert code == 1 and "nothing was checked" in err
