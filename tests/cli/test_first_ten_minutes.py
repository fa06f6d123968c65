"""The first ten minutes (issue, sections 2-5): output files written whole or not at all, messages
that read right (singular and plural, hints that run out, a kept file, the CPU torch pin, contender
labels, the noise marker, markup kept literal), and clean runs (no simulator warning from softmax,
the demo's verdict, float32-inside library ops checked against float32 inputs).

Runs in the simulator; the GPU-only contender (torch.quantize_per_tensor) is faked."""
import io
import json
import os
import re
import warnings

import numpy as np
import pytest
from rich.console import Console

from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="runs in the simulator")


# --- singular and plural ----------------------------------------------------------------------------------
def test_plural():
    from kernels.spec import plural

    assert plural(1, "block") == "1 block" and plural(0, "block") == "0 blocks" and plural(2, "block") == "2 blocks"
    assert plural(4096, "row") == "4,096 rows" and plural(3, "matrix", "matrices") == "3 matrices"


def test_counts_of_one_are_singular_in_notes_and_the_grid(capsys):
    import kernels
    from lab.cli import main

    note = kernels.load("matvec").variants["group_per_row"].launch((4, 128), 32).note
    assert note == "32 lanes a row, 1 row a block"
    with pytest.raises(SystemExit):
        main(["grid", "vecadd", "--size", "20", "--threads", "32", "--no-waves"])
        raise SystemExit(0)
    out = capsys.readouterr().out
    assert "1 warp a block" in out and "1 warps" not in out and "1 cell = 1 element," in out
    assert not re.search(r"\b1 (blocks|tiles|warps|threads|rows|lanes|elements|calls|runs)\b", out)


# --- exercise: hints run out, a started file is kept --------------------------------------------------------
def test_hints_say_when_there_are_no_more(tmp_path):
    import exercises
    from lab.teach import workspace as E

    n = len(exercises.load("vecadd").hints)
    seen = [E.hint("vecadd", tmp_path) for _ in range(n + 2)]
    assert [k for k, *_ in seen] == list(range(1, n + 1)) + [n, n]
    assert [new for *_, new in seen] == [True] * n + [False, False]
    from lab.cli.views.exercise import print_hint

    buf = io.StringIO()
    import lab.cli.views.exercise as V

    V.console = lambda: Console(file=buf, width=80)  # noqa: E731  (restored below)
    try:
        print_hint("vecadd", *seen[-1])
    finally:
        from lab.cli.views.table import console

        V.console = console
    text = buf.getvalue()
    assert "No more hints for vecadd" in text and f"all {n} hints" in text and f"Hint {n}/{n}" not in text


def test_start_keeps_an_existing_file_and_says_so(tmp_path):
    from lab.teach import workspace as E

    path, kept = E.start("vecadd", tmp_path)
    assert not kept
    path.write_text("# my work\n")
    path2, kept = E.start("vecadd", tmp_path)
    assert kept and path2 == path and path.read_text() == "# my work\n"


def test_a_damaged_state_file_counts_as_fresh(tmp_path):
    from lab.teach import workspace as E
    from lab.teach.records import NOT_STARTED, STATE

    (tmp_path / STATE).write_text("[1, 2")
    assert E.hint("vecadd", tmp_path)[0] == 1
    (tmp_path / STATE).write_text('["a list"]')
    assert E.listing(tmp_path)[0]["status"] == NOT_STARTED


# --- lab doctor: the README's CPU torch pin ----------------------------------------------------------------
def test_doctor_suggests_the_readmes_cpu_torch_pin_without_a_gpu(monkeypatch):
    from lab.inspect import doctor as D

    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    monkeypatch.setattr(D, "torch_info", lambda: None)
    monkeypatch.setattr(D, "gpu_count", lambda: (0, "no CUDA driver"))
    check = D.check_torch()
    assert f"pip install torch=={D.CPU_TORCH}" in check.fix and f"torch=={D.CPU_TORCH}" in readme
    assert "numba-gpu-lab[torch]" not in check.fix
    monkeypatch.setattr(D, "gpu_count", lambda: (1, ""))
    assert "numba-gpu-lab[torch]" in D.check_torch().fix


# --- lab list: one way to say a library is missing, another for a kernel without its op ----------------------
def test_list_labels_missing_libraries_and_missing_ops_consistently(monkeypatch):
    from lab.cli.views.report import print_list
    from lab.core import catalog as K
    from lab.core import contenders as C

    monkeypatch.setattr(C, "installed", lambda module: False)
    info = {k["name"]: k for k in K.catalog()}
    for lib in ("cupy", "torch"):
        assert info["vecadd"]["contenders"][lib] and info["vecadd"]["unavailable"][lib] == "not installed"
        assert not info["quantize_per_channel"]["contenders"][lib]
        assert info["quantize_per_channel"]["unavailable"][lib].startswith("none yet")
    buf = io.StringIO()
    print_list(list(info.values()), Console(file=buf, width=200))
    text = buf.getvalue()
    assert "cupy (not installed): cupy.add" in text and "torch (not installed): torch.add" in text
    assert "cupy: none yet:" in text and "torch: none yet:" in text
    monkeypatch.setattr(C, "installed", lambda module: True)
    assert K.catalog()[0]["unavailable"] == {"cupy": None, "torch": None}


# --- the noise marker: shown next to the value it marks -------------------------------------------------------
def test_noise_marker_is_shown_next_to_a_noisy_value_in_the_simulator():
    from lab.cli.views import report as R
    from lab.core import timing as T
    from lab.core.rows import row
    from lab.core.runner import Report

    rep = Report("vecadd", "c = a + b", "simulator", {"name": "sim"}, (10,), "float32", 0, 2, 0, 120, 10)
    rep.rows = [row("numba", "quiet", "ok", measurement=T.Measurement([1.0, 1.0, 1.0], T.SIMULATOR_CLOCK)),
                row("numpy", "reference (CPU)", "ok", measurement=T.Measurement([1.0, 1.5, 2.0, 1.2], T.HOST_CLOCK))]
    console = Console(record=True, width=200)
    R.print_table(rep, console)
    text = console.export_text()
    numpy_line = next(line for line in text.splitlines() if line.startswith("numpy"))
    assert numpy_line.rstrip().endswith("!")  # its ±% cell: "32 !"
    assert re.search(r"noise ! = IQR/median above 10%: numpy reference \(CPU\) \(\d+% !\)", text)
    quiet_line = next(line for line in text.splitlines() if line.startswith("numba"))
    assert "!" not in quiet_line  # simulated rows have no noise to speak of


# --- markup: user and library text printed as written -------------------------------------------------------------
def test_install_hints_keep_their_brackets(capsys):
    from lab.cli.views.inspect import print_grid
    from lab.core.resources import EXTRA_HINT
    from lab.core.simulator import select
    from lab.inspect import grid as G

    select("sim")
    d = G.describe("vecadd", None, "40", 32, None, None, False)
    d["waves"], d["waves_note"] = None, f"waves need resources: {EXTRA_HINT}"
    buf = io.StringIO()
    print_grid(d, Console(file=buf, width=200))
    assert "numba-gpu-lab[occupancy]" in buf.getvalue()


# --- files: whole or not at all -----------------------------------------------------------------------------
def test_a_failed_picture_leaves_nothing_behind(tmp_path):
    pytest.importorskip("matplotlib")
    from lab.cli.views.plot import pyplot, save

    plt = pyplot()
    target = tmp_path / "x.png"
    fig, ax = plt.subplots()

    def broken(path, **kw):
        with open(path, "wb") as f:
            f.write(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    fig.savefig = broken
    from lab.core.errors import LabError

    with pytest.raises(LabError, match="cannot write picture .*x.png: No space left"):
        save(fig, str(target))
    assert os.listdir(tmp_path) == []
    fig, ax = plt.subplots()
    save(fig, str(target), "svg")  # the format the option names, whatever the file is called
    assert target.read_bytes().lstrip().startswith(b"<?xml")
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~_umask()  # a usual file's mode, not mkstemp's 0600


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_trace_torch_did_not_write_is_an_error_not_written(tmp_path):
    from lab.bench import profiling as P
    from lab.core.errors import LabError

    class Nothing:
        def export_chrome_trace(self, path):
            os.truncate(path, 0)  # torch "succeeded" but wrote nothing

    class Raises:
        def export_chrome_trace(self, path):
            raise RuntimeError("Trace is already saved")

    for prof, why in ((Nothing(), "nothing was written"), (Raises(), "export failed: RuntimeError")):
        with pytest.raises(LabError, match=why):
            P._export_trace(prof, str(tmp_path / "t.json"))
        assert os.listdir(tmp_path) == []


def test_profile_says_trace_written_only_when_it_was(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    from lab.bench import profiling as P
    from lab.cli import main

    monkeypatch.setattr(P, "_export_trace", lambda prof, trace: (_ for _ in ()).throw(
        P.LabError(f"cannot write trace {trace}: nothing was written")))
    with pytest.raises(SystemExit) as e:
        main(["profile", "vecadd", "--size", "40", "--variant", "element_per_thread", "--trace",
              str(tmp_path / "t.json")])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and "trace written" not in out and err.startswith("error: cannot write trace")


# --- clean output --------------------------------------------------------------------------------------------
def test_softmax_group_rows_warns_nothing_on_dead_rows_and_keeps_all_inf_rows_nan(rng):
    import kernels
    from lab.core import contenders as C
    from lab.core.check import check_prepared

    spec = kernels.load("softmax")
    size = (7, 40)  # 7 rows of 8 lanes in blocks of 64 threads: the last block has a dead group
    (x,) = spec.make_inputs(size, np.dtype(np.float32), rng)
    refs = spec.reference(x.astype(np.float64))
    tols = spec.tolerance([x], refs, np.dtype(np.float32))
    v = spec.variants["group_rows"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # "invalid value encountered in scalar subtract"
        prepared = C.prepare_numba(spec, size, v, v.launch(size, 64), [x], True)
        checked = check_prepared(prepared, refs, tols, spec.out_specs(size, np.dtype(np.float32)))
        assert checked.verdict.ok, checked.verdict.reason
        x[3] = -np.inf  # a live row of only -inf: NaN, as before the guard (and as torch.softmax)
        prepared = C.prepare_numba(spec, size, v, v.launch(size, 64), [x], True)
        prepared.poison()
        out = prepared.read(prepared.call())[0]
    assert np.isnan(out[3]).all()
    keep = np.arange(7) != 3
    assert np.allclose(out[keep], checked.outputs[0][keep], rtol=0, atol=1e-6)


def test_demo_train_verdict_is_the_match_with_torch(monkeypatch, capsys):
    pytest.importorskip("torch")
    from torch_bridge import demo_train as D

    rising = [1.0, 1.2, 1.4]
    monkeypatch.setattr(D, "train", lambda *a, **k: list(rising))
    assert D.main(["--no-compile"]) == 0
    out = capsys.readouterr().out
    assert "OK, the lab ops match torch" in out and "MISMATCH" not in out
    assert "loss 1.0000 -> 1.4000 over 3 steps: did not fall" in out
    runs = iter([rising, [1.0, 1.3, 1.4]])
    monkeypatch.setattr(D, "train", lambda *a, **k: next(runs))
    assert D.main(["--no-compile"]) == 1
    assert "MISMATCH" in capsys.readouterr().out


# --- float32 inside: a library op that computes in float32 is checked against float32 inputs ----------------------
def _fake_quantize_per_tensor(x, out=None):
    """What torch.aminmax + torch.quantize_per_tensor compute for any x: float32 inside."""
    x32 = x.astype(np.float32)
    lo, hi = float(x32.min()), float(x32.max())
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zero_point = int(min(max(0.0 - lo / scale, 0.0), 255.0))
    inv = np.float32(1.0 / scale)
    q = np.clip(np.rint(x32 * inv) + np.float32(zero_point), 0, 255).astype(np.uint8)
    return q, np.array([scale, zero_point], dtype=x.dtype)


@pytest.fixture
def fake_torch_quantize(monkeypatch):
    """A torch contender for quantize that runs here: one op, flagged float32 inside (or not)."""
    from lab.core import contenders as C
    from lab.core import registry

    label = "torch.aminmax + torch.quantize_per_tensor"
    flag = {"float32_inside": True}
    monkeypatch.setattr(C, "why_unavailable", lambda name, simulator: None)
    monkeypatch.setattr(C, "library_labels", lambda name, kernel: [label] if name == "torch" else [])
    monkeypatch.setattr(registry, "options", lambda lib, kernel, lab: dict(flag) if lab == label else {})

    def prepare(contender, spec, size, lab, inputs):
        return C.Prepared(lambda: _fake_quantize_per_tensor(*inputs), lambda which=0: None,
                          lambda res: [np.asarray(r) for r in res], lambda: None, "host")

    monkeypatch.setattr(C, "prepare_library", prepare)
    return flag


def test_the_real_registry_flags_quantize_per_tensor():
    from lab.core import contenders as C
    from lab.core import registry

    assert C.float32_inside("torch", "quantize", "torch.aminmax + torch.quantize_per_tensor")
    assert not C.float32_inside("torch", "quantize", "ARENA quantize_tensor (torch ops, host syncs)")
    from kernels.contenders.quantize import torch_quantize_aminmax

    assert registry.entries("torch", "quantize")[1][:2] == ("torch.aminmax + torch.quantize_per_tensor",
                                                            torch_quantize_aminmax)


def test_float32_inside_is_checked_against_float32_inputs(fake_torch_quantize):
    from lab.core.runner import FLOAT32_INSIDE, Options, run

    opts = Options("quantize", size="200000", dtype="float64", contenders=["torch"], repeats=1, warmup=0, seed=7)
    row = run(opts, "simulator").rows[0]
    assert row.status == "ok", row.reason
    assert row.reason.startswith("float32 inside") and row.reason == FLOAT32_INSIDE
    fake_torch_quantize.clear()  # the same op held to the float64 reference: its float32 rounding fails
    row = run(opts, "simulator").rows[0]
    assert row.status == "FAIL" and "float32 inside" not in row.reason


def test_float32_inside_changes_nothing_for_float32_runs(fake_torch_quantize):
    from lab.core.runner import Options, run

    row = run(Options("quantize", size="5000", contenders=["torch"], repeats=1, warmup=0, seed=3), "simulator").rows[0]
    assert row.status == "ok" and row.reason == ""


def test_float32_inside_row_says_so_in_the_table(fake_torch_quantize):
    from tests.cli.test_fuzz import lab

    args = ["run", "quantize", "--size", "3000", "--dtype", "float64", "--contenders", "torch", "--repeats", "1",
            "--warmup", "0"]
    code, out, err = lab(*args)
    assert code == 0, err
    assert "torch torch.aminmax + torch.quantize_per_tensor: float32 inside" in " ".join(out.split())
    code, out, err = lab(*args, "--json")
    assert code == 0, err
    rows = json.loads(out)["results"]
    assert rows[0]["ok"] and rows[0]["reason"].startswith("float32 inside")
