"""`lab run` as a user drives it: the JSON contract, warnings and skipped rows, every bad input as one
line with exit code 2 (random options included: never a traceback), exit 1 when a row fails or
nothing was checked."""
import json
import re

import pytest

from tests.conftest import BACKEND, SIMULATOR
from tests.helpers import TINY, bad_inputs, fits


@pytest.mark.gpu
@pytest.mark.parametrize("kernel,size,threads", [("vecadd", "300", 64),
                                                 pytest.param("matvec", "9x50", 64, marks=pytest.mark.slow)])
def test_json_contract(lab, kernel, size, threads):
    code, out, err = lab("run", kernel, "--size", size, "--threads", str(threads), "--json",
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
def test_table_output_names_the_backend(lab):
    code, out, err = lab("run", "vecadd", "--size", "100", "--threads", "32", "--repeats", "1",
                         "--contenders", "numba")
    assert code == 0, err
    assert ("CUDA simulator: correctness only, timings are not meaningful" in out) == SIMULATOR
    assert "launch configuration" in out and "element_per_thread" in out


@pytest.mark.gpu
@pytest.mark.parametrize("args,needle", bad_inputs("""
run matvecc                       | did you mean matvec
run matvec --threads 0            | threads per block must be 1..1024
run matvec --threads -3           | threads per block must be 1..1024
run matvec --threads 1025         | threads per block must be 1..1024
run matvec --size 0x5             | at least 1
run matvec --size -4x5            | at least 1
run vecadd --size 0               | at least 1
run matvec --size 12by5           | malformed
run matvec --size 100             | malformed
run matvec --size 4000000x4000000 | GiB
run matvec --variant fast         | unknown variant
run matvec --contenders numba,jax | unknown contender
run matvec --dtype int7           | float32
run matvec --threads many         | not a valid integer
run matvec --repeats 0            | '--repeats': 0 is not in the range x>=1
bogus                             | No such command
"""))
def test_bad_input_is_one_line_exit_2(lab, args, needle):
    code, out, err = lab(*args)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_gpu_flag_without_gpu_fails_cleanly(lab):
    code, out, err = lab("run", "vecadd", "--gpu")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--gpu" in err


@pytest.mark.gpu
def test_threads_not_multiple_of_warp_warns_and_runs(lab):
    code, out, err = lab("run", "matvec", "--size", "9x40", "--threads", "48", "--repeats", "1",
                         "--contenders", "numba", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert any("not a multiple of the warp size" in w for w in doc["warnings"])
    by_variant = {r["variant"]: r for r in doc["results"]}
    assert by_variant["row_per_thread"]["ok"]
    assert by_variant["warp_per_row"]["status"] == "skipped" and "multiple of 32" in by_variant["warp_per_row"]["reason"]


@pytest.mark.gpu
def test_missing_optional_packages_are_reported(lab, monkeypatch):
    from lab.core import contenders

    monkeypatch.setattr(contenders, "installed", lambda module: False)
    code, out, err = lab("run", "vecadd", "--size", "64", "--threads", "32", "--repeats", "1", "--json")
    assert code == 0, err
    rows = {r["contender"]: r for r in json.loads(out)["results"]}
    from kernels.backend import gpu_count

    # without a GPU the reason is the GPU, not an install hint (which would pull GBs of CUDA wheels)
    why = "not installed" if gpu_count()[0] else "needs a CUDA GPU; this machine has none"
    for name in ("cupy", "torch"):
        assert rows[name]["status"] == "skipped" and why in rows[name]["reason"]
        assert gpu_count()[0] or "pip install" not in rows[name]["reason"]


@pytest.mark.gpu
def test_quantize_reports_round_trip_error(lab):
    import re

    code, out, err = lab("run", "quantize", "--size", "300", "--threads", "32", "--repeats", "1",
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
def test_a_run_that_checked_nothing_exits_1(lab, args):
    """Every row skipped (no variant, or a contender the backend cannot run): exit 1, not 0."""
    code, out, err = lab("run", "vecadd", "--size", "64", "--threads", "32", "--repeats", "1", *args)
    if "--contenders" in args and args[-1] == "cupy" and not SIMULATOR:
        pytest.skip("cupy runs on this GPU machine")
    assert code == 1 and "nothing was checked" in err


# --- bad options never crash; hints that fit the machine; a FAIL row exits 1 (simulator) ----------------
@pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")
@pytest.mark.parametrize("kernel,size", [("matvec", "3x40"), ("softmax", "2x40"), ("quantize", "50")])
@pytest.mark.parametrize("threads", [1, 16, 31])
def test_threads_below_a_warp_skip_warp_rungs(lab, kernel, size, threads):
    code, out, err = lab("run", kernel, "--size", size, "--threads", str(threads), *TINY, "--json",
                         "--contenders", "numba")
    assert "Traceback" not in err, err
    rows = json.loads(out)["results"]
    warp_rows = [r for r in rows if r["status"] == "skipped"]
    assert warp_rows and all("needs whole warps" in r["reason"] for r in warp_rows)
    assert all(r["ok"] for r in rows if r["status"] != "skipped")
    if all(r["status"] == "skipped" for r in rows):  # softmax: every rung needs whole warps
        assert code == 1 and "nothing was checked" in err
    else:
        assert code == 0, err


@pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")
def test_negative_seed_is_one_line_exit_2(lab):
    code, out, err = lab("run", "vecadd", "--seed", "-1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--seed" in err and "Traceback" not in err
    from lab.core.errors import LabError
    from lab.core.runner import Options, run

    with pytest.raises(LabError) as e:  # the engine says so too, in the same words (lab.core.options.SEED)
        run(Options("vecadd", seed=-1, size="10"), "simulator")
    assert err.strip() == f"error: {e.value}"


def _option_values():
    from hypothesis import strategies as st

    import kernels

    sizes = {"vecadd": st.integers(-1, 80).map(str), "quantize": st.integers(0, 80).map(str),
             "matvec": st.tuples(st.integers(0, 4), st.integers(1, 40)).map(lambda t: f"{t[0]}x{t[1]}"),
             "softmax": st.tuples(st.integers(1, 3), st.integers(0, 40)).map(lambda t: f"{t[0]}x{t[1]}"),
             "matmul": st.tuples(*[st.integers(1, 5)] * 3).map(lambda t: "x".join(map(str, t)))}

    @st.composite
    def args(draw):
        kernel = draw(st.sampled_from(sorted(sizes)))
        out = ["run", kernel, "--contenders", draw(st.sampled_from(["numba", "numba,numpy", "numpy,torch,cupy"]))]
        out += ["--size", draw(st.one_of(sizes[kernel], st.sampled_from(["", "x", "3x", "1e3", "-0"])))]
        out += ["--threads", str(draw(st.sampled_from([1, 2, 16, 31, 32, 33, 48, 64, 0, -1, 1025])))]
        if draw(st.booleans()):
            out += ["--seed", str(draw(st.integers(-3, 2**64)))]
        if draw(st.booleans()):
            out += ["--dtype", draw(st.sampled_from(["float32", "float64", "int8", "half"]))]
        out += ["--repeats", str(draw(st.sampled_from([1, 1, 2, 0]))), "--warmup", str(draw(st.sampled_from([0, 0, 1, -1])))]
        if kernel == "matmul":  # every rung in the simulator is ~15 s a run: one or two of them, drawn
            rungs = sorted(kernels.load("matmul").variants) + ["nope"]
            out += ["--variant", ",".join(draw(st.lists(st.sampled_from(rungs), min_size=1, max_size=2, unique=True)))]
        elif draw(st.booleans()):
            out += ["--variant", draw(st.sampled_from(["naive", "row_per_thread", "element_per_thread",
                                                       "block_partials", "fused", "nope"]))]
        out += draw(st.sampled_from([[], ["--json"], ["--wide"]]))
        return out

    return args()


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (deselect locally with -m "not slow")
@pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")
def test_random_options_never_crash(lab):
    """Property: whatever the options, `lab run` exits 0, 1 or 2 and never prints a traceback."""
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=25, deadline=None, derandomize=False, print_blob=True,
              suppress_health_check=list(HealthCheck))
    @given(_option_values())
    def prop(args):
        code, out, err = lab(*args)
        assert code in (0, 1, 2), (args, code, err[-2000:])
        assert "Traceback" not in out + err, (args, err[-2000:])
        if code == 2:
            assert len(err.strip().splitlines()) == 1, (args, err)

    prop()


@pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")
def test_cpu_machine_says_once_that_cupy_and_torch_need_a_gpu(lab):
    from kernels.backend import gpu_count

    if gpu_count()[0]:
        pytest.skip("this machine has a GPU")
    code, out, err = lab("run", "vecadd", "--size", "40", "--threads", "32", "--repeats", "1",
                         "--contenders", "numpy,cupy,torch")
    assert code == 0, err
    assert out.count("needs a CUDA GPU") == 1 and "cupy, torch: skipped" in out
    assert "pip install" not in out  # an install hint here would pull GBs of CUDA wheels


@pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")
def test_a_failing_row_shows_its_error_and_exits_1(lab, monkeypatch):
    import dataclasses

    import kernels
    from lab.core import runner

    spec = kernels.load("vecadd")  # a reference that is off by one: every Numba row must FAIL
    wrong = dataclasses.replace(spec, reference=lambda a, b: (a + b + 1,), tolerance=lambda i, r, d: [0.0])
    monkeypatch.setattr(runner.kernels, "load", lambda name: wrong)
    code, out, err = lab("run", "vecadd", "--size", "40", "--threads", "32", *TINY)
    assert code == 1, err
    fits(out)
    assert re.search(r"element_per_thread\s+FAIL", out) and "max err" in out
    assert "output differs from the float64 reference" in out
