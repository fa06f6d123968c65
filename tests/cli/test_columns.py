"""80 columns (issue "The first ten minutes", section 4): every command's tables and lines fit a
terminal of 80 columns (COLUMNS=80, output piped), or drop their least important columns and say so
(``--wide adds: ...``); no number is ever cut ("81…").

Every command runs here in the simulator at a tiny size, in this process, stdout and stderr captured."""
import contextlib
import io
import json
import os
import re

import pytest

from lab.cli import main
from lab.core.resources import offline_unavailable
from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="the layout checks run in the simulator")

WIDTH = 80
CUT_NUMBER = re.compile(r"\d…")


def lab(*args, columns=WIDTH):
    """``lab ARGS`` with COLUMNS set and stdout/stderr captured (not a terminal: as piped)."""
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


def fits(text, width=WIDTH, where=""):
    for line in text.splitlines():
        assert len(line) <= width, f"{where}: {len(line)} columns: {line!r}"
        assert not CUT_NUMBER.search(line), f"{where}: a number cut: {line!r}"


def run_fits(*args, codes=(0,)):
    code, out, err = lab(*args)
    assert code in codes, (args, code, err[-2000:])
    assert "Traceback" not in out + err
    fits(out, where=f"lab {' '.join(args)} (stdout)")
    fits(err, where=f"lab {' '.join(args)} (stderr)")
    return out, err


TINY = ["--repeats", "1", "--warmup", "0"]
# `lab occupancy KERNEL` without a GPU reads ptxas's report through nvJitLink (the occupancy extra)
_OFFLINE = offline_unavailable()
needs_offline = pytest.mark.skipif(_OFFLINE is not None, reason=f"lab occupancy KERNEL without a GPU needs {_OFFLINE}: "
                                   "pip install '.[occupancy]'")


@pytest.mark.parametrize("args", [
    ["list"],
    ["device"],
    ["run", "vecadd", "--size", "100", "--threads", "32", *TINY],
    ["run", "matvec", "--size", "8x40", "--threads", "32", *TINY],
    # the rungs with the longest names and notes (a build chooser's, an emulation's, a skip line), not all 12
    ["run", "matmul", "--size", "20x18x8", "--threads", "64", "--variant",
     "naive,auto,async_copy,tensor_core_tf32,tensor_core_wgmma", *TINY],
    # torch.compile of the naive softmax is one of its contenders: its first compile takes 5-15 s
    pytest.param(["run", "softmax", "--size", "3x40", "--threads", "32", *TINY], marks=pytest.mark.slow),
    ["run", "quantize", "--size", "64", "--threads", "32", "--dtype", "float64", *TINY],
    ["run", "dequantize", "--size", "3x40", "--threads", "32", *TINY],
    ["run", "vecadd", "--size", "100", "--threads", "32", "--compiler", "both", *TINY],
    pytest.param(["occupancy", "vecadd"], marks=needs_offline),
    pytest.param(["occupancy", "matmul", "--variant", "register_tiled", "--sweep"], marks=needs_offline),
    ["occupancy", "--registers", "64", "--shared", "4096", "--threads", "384", "--sweep"],
    ["sweep", "vecadd", "--threads", "32,64", "--sizes", "100,200", *TINY],
    ["roofline"],
    ["exercise", "list"],
])
def test_every_command_fits_80_columns(args):
    """(lab grid and lab counters: on recorded documents in test_layout_recorded.py, and as the docs'
    transcripts at 80 columns in tests/docs/test_transcripts.py)"""
    run_fits(*args)


def test_doctor_fits_80_columns():
    out, _ = run_fits("doctor", codes=(0, 1))
    assert "torch" in out


def test_compare_and_bench_fit_80_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short paths: a path the user typed is printed whole, however long
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        code, out, err = lab("run", "vecadd", "--size", "100", "--threads", "32", *TINY, "--json")
        assert code == 0, err
        path.write_text(out)
    out, _ = run_fits("compare", "a.json", "b.json")
    assert "A/B" in out
    _, err = run_fits("bench", "vecadd", "--quick", "--out", "bench.md", "--contenders", "numba,numpy")
    assert "(1 run)" in err and (tmp_path / "bench.md").stat().st_size > 100


def test_profile_fits_80_columns():
    pytest.importorskip("torch")
    out, err = run_fits("profile", "matvec", "--size", "4x40", "--variant", "row_per_thread,warp_per_row")
    assert "numba warp_per_row" in out and "CPU total" in out
    assert "USDT" not in err  # torch's profiler chatter on fd 2 is held back


def test_exercise_commands_fit_80_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short paths: the scaffold's path is printed whole
    ws = "ws"
    out, _ = run_fits("exercise", "start", "matrix_add_2d", "--dir", ws)
    out, _ = run_fits("exercise", "start", "matrix_add_2d", "--dir", ws)
    assert "kept" in out  # the student's file is never overwritten, and the command says so
    for _ in range(4):
        out, _ = run_fits("exercise", "hint", "matrix_add_2d", "--dir", ws)
    assert "No more hints" in out and "Hint " not in out.splitlines()[0]
    out, _ = run_fits("exercise", "check", "matrix_add_2d", "--dir", ws, "--timeout", "120", codes=(1,))
    assert "FAIL" in out and "passed" in out


# --- narrow terminals: columns go, the line says which; --wide brings them back ---------------------------
def test_occupancy_drops_minor_columns_and_says_so():
    calc = ["occupancy", "--registers", "64", "--shared", "4096", "--threads", "384"]
    code, out, err = lab(*calc, columns=60)
    assert code == 0, err
    fits(out, 60)
    assert "--wide adds:" in out and "by warps" not in out.split("--wide adds:")[0]
    code, wide, err = lab(*calc, "--wide", columns=60)
    assert code == 0, err
    assert "--wide adds" not in wide and "by warps" in wide and "smem B" in wide


@pytest.mark.parametrize("columns", [60, 100])
@needs_offline
def test_occupancy_follows_the_terminal_width(columns):
    code, out, err = lab("occupancy", "vecadd", columns=columns)
    assert code == 0, err
    fits(out, columns)


@pytest.mark.parametrize("columns", [60, 100])
def test_tables_follow_the_terminal_width(columns):
    code, out, err = lab("sweep", "vecadd", "--threads", "32,64", "--sizes", "50", *TINY, columns=columns)
    assert code == 0, err
    fits(out, columns)


def test_compiler_table_keeps_numbers_whole():
    """lab run --compiler both used to squeeze 11 columns into 80 as "fir…", "48.…", "1.19…"."""
    code, out, err = lab("run", "vecadd", "--size", "100", "--threads", "32", "--compiler", "both", *TINY)
    assert code == 0, err
    assert "…" not in out
    assert re.search(r"element_per_thread\s+numba-cuda\s+ok\s", out)


def test_sweep_json_is_not_touched_by_the_width():
    code, out, err = lab("sweep", "vecadd", "--threads", "32", "--sizes", "50", *TINY, "--json", columns=40)
    assert code == 0, err
    assert json.loads(out)["kernel"] == "vecadd"


def test_a_table_whose_text_wraps_keeps_its_last_number_column_whole():
    """When a column's text must wrap to fit, the widths are set so that no other column is cut: lab
    tune's table once showed "ok/tri" and "14/" at 80 columns (rich shrank the last column)."""
    from rich.console import Console

    from lab.cli.views.table import Col, fit

    rows = [{"shape": "24x20x18", "a": "tile64 t=256", "b": "register_tiled t=256 bk=16, min_blocks=2",
             "ms": "1,169", "n": f"{k}/{k}"} for k in (14, 8, 5)]
    cols = [Col("shape", lambda r: r["shape"], 100, left=True),
            Col("heuristic", lambda r: r["a"], 60, left=True, wrap=True),
            Col("sim ms", lambda r: r["ms"], 60),
            Col("tuned", lambda r: r["b"], 100, left=True, wrap=True),
            Col("tuned sim ms", lambda r: r["ms"], 100), Col("gain", lambda r: "2.95x", 90),
            Col("ok/tried", lambda r: r["n"], 50)]
    out = Console(width=WIDTH, file=io.StringIO(), highlight=False)
    table, shown, dropped = fit(cols, rows, out, False, "title")
    out.print(table)
    text = out.file.getvalue()
    assert not dropped and "ok/tried" in text and all(f"{k}/{k}" in text for k in (14, 8, 5)), text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= WIDTH


@pytest.mark.parametrize("columns", ["0", "1", "-5", "abc", "", "20", "39"])
def test_any_columns_value_renders_at_80(columns, tmp_path):
    """COLUMNS below 40 or not a number: laid out for 80, and a verdict is never lost (it printed
    nothing at COLUMNS=0 and a character a line at COLUMNS=1)."""
    out, err = run_fits_columns(columns, "run", "vecadd", "--size", "1000", *TINY)
    assert "element_per_thread" in out and " ok " in out
    out, _ = run_fits_columns(columns, "list")
    assert "vecadd" in out and "matmul" in out
    if columns in ("0", "20"):  # the verdict's line (one check is enough: it takes seconds)
        solution = os.path.join(os.path.dirname(__file__), "..", "..", "exercises", "vecadd", "solution.py")
        out, _ = run_fits_columns(columns, "exercise", "check", "vecadd", "--file", solution, "--dir", str(tmp_path))
        assert "PASS" in out


def run_fits_columns(columns, *args):
    code, out, err = lab(*args, columns=columns)
    assert code == 0, (args, code, err[-2000:])
    assert "Traceback" not in out + err
    fits(out, where=f"COLUMNS={columns!r} lab {' '.join(args)}")
    assert max((len(line) for line in out.splitlines()), default=0) > 40  # not squeezed to a sliver
    return out, err
