"""The front door (issue 7): `lab run` readable at 80 columns, piped or in a terminal, live while it
works; bad options never crash; `lab list` and the help name every kernel; hints fit the machine.

Everything here runs in the simulator at tiny sizes (a few seconds in all)."""
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab.cli import main
from tests.conftest import SIMULATOR

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--repeats", "1", "--warmup", "0", "--contenders", "numba,numpy"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")


def lab(*args, columns=80):
    """Run ``lab ARGS`` in this process with stdout/stderr captured (not a terminal, like a pipe)."""
    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
                code = 0
            except SystemExit as e:
                code = e.code or 0
    finally:
        if old is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = old
    return code, out.getvalue(), err.getvalue()


def _fits(text, width=80):
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert "…" not in text and "..." not in text  # nothing cut


# --- 80 columns --------------------------------------------------------------------------------------
def test_piped_table_fits_80_columns_and_cuts_nothing():
    code, out, err = lab("run", "matvec", "--size", "8x40", "--threads", "32", *TINY)
    assert code == 0, err
    _fits(out)
    for name in ("row_per_thread", "warp_per_row", "warp_per_row_shared_x", "reference (CPU)"):
        assert re.search(rf"^numb?[ap]\w*\s+{re.escape(name)}\s", out, re.M), name
    results = out[out.index("results"):]
    header = results.splitlines()[1]
    # columns empty for every row are gone (GFLOP/s, % of peaks: the simulator times no GPU)
    for gone in ("GFLOP/s", "%BW", "%FP32", "median ms"):
        assert gone not in header
    # simulator times: wall-clock with a unit, clearly labelled, never 4-decimal ms
    assert "wall time" in header and "not GPU times" in out
    assert not re.search(r"\d\.\d{4}\b", results.split("\n\n")[0])
    # the header comes first, with the seed and the simulator banner, units by magnitude
    assert out.index("seed") < out.index("CUDA simulator") < out.index("launch configuration")
    assert re.search(r"minimum traffic [\d.]+ KB, [\d.]+ FLOP a call", out)


def test_wide_shows_every_column_and_narrow_terminal_says_what_it_dropped():
    code, out, err = lab("run", "vecadd", "--size", "70", "--threads", "32", *TINY, "--wide", columns=60)
    assert code == 0, err
    assert "1st call" in out and "×NumPy" in out and "GB/s" in out and "--wide adds" not in out
    code, out, err = lab("run", "vecadd", "--size", "70", "--threads", "32", *TINY, columns=60)
    assert code == 0, err
    _fits(out, 60)
    assert "--wide adds:" in out


def _pty_run(args, columns=80):
    """Run ``python -m lab ARGS`` under a pseudo-terminal of ``columns`` columns; returns its text."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = dict(os.environ, COLUMNS=str(columns), TERM="xterm-256color", PYTHONPATH=str(ROOT),
               NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.Popen([sys.executable, "-m", "lab", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, cwd=ROOT, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, b"".join(chunks).decode(errors="replace")[-2000:]
    return b"".join(chunks).decode("utf-8", "replace")


def test_terminal_shows_progress_then_a_table_that_fits_80_columns():
    raw = _pty_run(["run", "vecadd", "--size", "100", "--threads", "32", *TINY])
    # every frame of the live display, split at cursor moves and carriage returns, fits the terminal
    frames = [ANSI.sub("", part) for part in re.split(r"\r|\n|\x1b\[\d*A", raw)]
    assert all(len(f) <= 80 for f in frames), max(frames, key=len)
    text = ANSI.sub("", raw)
    assert "…" not in text
    assert "compile + check" in text and "time (1 call)" in text  # the progress line said what ran
    assert text.index("seed") < text.index("compile + check") < text.rindex("element_per_thread")
    assert "four_per_thread" in text and "reference (CPU)" in text


# --- progress events: the engine never prints, the presenter renders ------------------------------
def test_run_reports_progress_events_in_order(capsys):
    from lab.core.runner import Options, run

    events = []
    report = run(Options("vecadd", threads=32, size="50", repeats=1, warmup=0, contenders=["numba", "numpy"]),
                 "simulator", progress=lambda event, rep, **info: events.append((event, dict(info), len(rep.rows))))
    assert capsys.readouterr().out == ""  # the engine printed nothing
    assert events[0] == ("start", {}, 0) and events[-1][0] == "done"
    rows = [(info["row"].variant, n) for event, info, n in events if event == "row"]
    assert rows == [(r.variant, i + 1) for i, r in enumerate(report.rows)]  # each row as it finishes
    stages = [(info["variant"], info["stage"]) for event, info, _ in events if event == "stage"]
    assert stages[:2] == [("element_per_thread", "compile + check"), ("element_per_thread", "time")]


def test_a_long_simulation_is_announced_with_a_smaller_size():
    from lab.cli.views import report as R
    from lab.core.runner import Options, run

    class Stop(Exception):
        pass

    seen = {}

    def progress(event, rep, **info):
        seen["report"] = rep
        raise Stop  # only the estimate matters here: stop before anything is simulated

    with pytest.raises(Stop):
        run(Options("matvec", threads=32, size="4096x1024"), "simulator", progress=progress)
    rep = seen["report"]
    assert rep.estimate_s > 600 and not rep.rows
    line = R.header_lines(rep)[-1]
    assert "roughly" in line and rep.quick_options in line
    smaller = tuple(int(d) for d in rep.quick_options.removeprefix("--size ").split("x"))
    assert smaller[0] * smaller[1] < 4096 * 1024
    # and the suggested size really is quick by the same model
    from lab.core.runner import quick_options, simulator_seconds
    import kernels

    spec = kernels.load("matvec")
    assert simulator_seconds(spec, smaller, list(spec.variants), 32, 5) < 30
    # blocks of 1024 simulated threads are slow at any size: then --threads 32 is suggested too
    hint = quick_options(spec, (48, 80), list(spec.variants), 1024, 5)
    assert hint.startswith("--threads 32 --size ")


# --- crashes that were --------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel,size", [("matvec", "3x40"), ("softmax", "2x40"), ("quantize", "50")])
@pytest.mark.parametrize("threads", [1, 16, 31])
def test_threads_below_a_warp_skip_warp_rungs(kernel, size, threads):
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


def test_negative_seed_is_one_line_exit_2():
    code, out, err = lab("run", "vecadd", "--seed", "-1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--seed" in err and "Traceback" not in err
    from lab.core.errors import LabError
    from lab.core.runner import Options, run

    with pytest.raises(LabError, match="non-negative"):  # the library says so too
        run(Options("vecadd", seed=-1, size="10"), "simulator")


def _option_values():
    from hypothesis import strategies as st

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
        if draw(st.booleans()):
            out += ["--variant", draw(st.sampled_from(["naive", "row_per_thread", "element_per_thread",
                                                       "block_partials", "fused", "nope"]))]
        out += draw(st.sampled_from([[], ["--json"], ["--wide"]]))
        return out

    return args()


def test_random_options_never_crash():
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


# --- hints that fit the machine ------------------------------------------------------------------------
def test_cpu_machine_says_once_that_cupy_and_torch_need_a_gpu():
    from kernels.backend import gpu_count

    if gpu_count()[0]:
        pytest.skip("this machine has a GPU")
    code, out, err = lab("run", "vecadd", "--size", "40", "--threads", "32", "--repeats", "1",
                         "--contenders", "numpy,cupy,torch")
    assert code == 0, err
    assert out.count("needs a CUDA GPU") == 1 and "cupy, torch: skipped" in out
    assert "pip install" not in out  # an install hint here would pull GBs of CUDA wheels


# --- kernels from Python on a laptop -------------------------------------------------------------------
def test_kernel_import_picks_the_simulator_with_one_note():
    from kernels.backend import gpu_count

    if gpu_count()[0]:
        pytest.skip("this machine has a GPU: the import picks it")
    code = ("import numpy as np\n"
            "from kernels.vecadd import vecadd_kernel\n"
            "from kernels import matvec\n"  # a second kernel module: still one note
            "from numba import cuda\n"
            "a = np.random.default_rng().standard_normal(100).astype(np.float32)\n"
            "b = np.random.default_rng().standard_normal(100).astype(np.float32)\n"
            "c = cuda.device_array_like(a)\n"
            "vecadd_kernel[4, 32](cuda.to_device(a), cuda.to_device(b), c)\n"
            "assert np.allclose(c.copy_to_host(), a + b)\n"
            "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert proc.stderr.count("CUDA simulator") == 1, proc.stderr


# --- discoverability ---------------------------------------------------------------------------------
def test_lab_list_names_every_kernel_rung_contender_and_size():
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
        assert set(k["contenders"]) == {"numba", "numpy", "cupy", "torch"}
    code, text, err = lab("list")
    assert code == 0, err
    _fits(text)
    for k in info.values():
        assert k["name"] in text and all(r["name"] in text for r in k["rungs"])


def test_help_names_kernels_dtypes_and_is_not_cut():
    code, out, err = lab("run", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "vecadd, matvec, matmul, softmax, quantize" in flat
    assert "[float32|float64]" in flat and "--wide" in flat
    code, out, err = lab("--help")
    run_line = next(line for line in out.splitlines() if line.strip().startswith("run "))
    assert "..." not in run_line and "list" in out


# --- units and layout helpers -----------------------------------------------------------------------------
def test_units_by_magnitude():
    from lab.cli.views.report import count, duration, si, sig

    assert si(15872, "B") == "15.9 KB" and si(300, "FLOP") == "300 FLOP"
    assert si(7.68e9, "FLOP") == "7.68 GFLOP" and si(2 * 4096**3, "FLOP") == "137 GFLOP"
    assert sig(0.01234) == "0.0123" and sig(4.567) == "4.57" and sig(4567.8) == "4,568"
    assert count(976) == "976" and count(524_288) == "524,288" and count(67_108_864) == "67.1M"
    assert duration(0.0019) == "1.9 µs" and duration(4600) == "4.6 s" and duration(3 * 3.6e6) == "3.0 h"


def test_launch_table_shows_resources_when_present_and_wraps_long_notes():
    """Issue 8 adds registers, shared/local bytes and occupancy per variant; issue 11 a long note."""
    from rich.console import Console

    from lab.cli.views import report as R
    from lab.core.runner import Options, run

    rep = run(Options("vecadd", threads=32, size="40", repeats=1, warmup=0, contenders=["numba"]), "simulator")
    buf = io.StringIO()
    R.print_body(rep, Console(file=buf, width=80))
    assert "regs" not in buf.getvalue() and "occ" not in buf.getvalue()  # absent: hidden
    note = ("auto chose warp_per_row_shared_x at 256 threads per block because the rows are long "
            "and x fits in shared memory; a sweep of 32..1024 threads found it fastest")
    for cfg in rep.launches.values():
        cfg.update(registers=40, shared_bytes=4096, local_bytes=0, occupancy=0.75, note=note)
    buf = io.StringIO()
    R.print_body(rep, Console(file=buf, width=80))
    text = buf.getvalue()
    _fits(text)
    assert "regs" in text and "75%" in text and "4.1 KB" in text
    assert " ".join(note.split()) in " ".join(text.split())  # wrapped, every word kept


def test_a_failing_row_shows_its_error_and_exits_1(monkeypatch):
    import dataclasses

    import kernels
    from lab.core import runner

    spec = kernels.load("vecadd")  # a reference that is off by one: every Numba row must FAIL
    wrong = dataclasses.replace(spec, reference=lambda a, b: (a + b + 1,), tolerance=lambda i, r, d: [0.0])
    monkeypatch.setattr(runner.kernels, "load", lambda name: wrong)
    code, out, err = lab("run", "vecadd", "--size", "40", "--threads", "32", *TINY)
    assert code == 1, err
    _fits(out)
    assert re.search(r"element_per_thread\s+FAIL", out) and "max err" in out
    assert "output differs from the float64 reference" in out
