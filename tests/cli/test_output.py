"""What `lab run` prints: readable at 80 columns, piped or in a terminal (live while it works), every
column or what was dropped, units by magnitude, the launch table's resources and notes.

Everything here runs in the simulator at tiny sizes."""
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SIMULATOR
from tests.helpers import TINY, fits

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")


# --- 80 columns --------------------------------------------------------------------------------------
def test_piped_table_fits_80_columns_and_cuts_nothing(lab):
    code, out, err = lab("run", "matvec", "--size", "8x40", "--threads", "32", *TINY)
    assert code == 0, err
    fits(out)
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


def test_wide_shows_every_column_and_narrow_terminal_says_what_it_dropped(lab):
    code, out, err = lab("run", "vecadd", "--size", "70", "--threads", "32", *TINY, "--wide", columns=60)
    assert code == 0, err
    assert "1st call" in out and "×NumPy" in out and "GB/s" in out and "--wide adds" not in out
    code, out, err = lab("run", "vecadd", "--size", "70", "--threads", "32", *TINY, columns=60)
    assert code == 0, err
    fits(out, 60)
    assert "--wide adds:" in out



def test_simulator_default_shows_the_first_call_and_its_check(lab):
    """No --repeats in the simulator: nothing timed, each row's first call and check; the time column is
    the first call's, labelled as not a GPU time, and kept even in a narrow terminal."""
    for columns in (80, 60):
        code, out, err = lab("run", "vecadd", "--size", "70", "--threads", "32", "--contenders", "numba,numpy",
                             columns=columns)
        assert code == 0, err
        fits(out, columns)
        flat = " ".join(out.split())  # lines wrap at 60 columns
        assert "timed calls: none (each row checked once; --repeats N times N calls)" in flat
        header = out[out.index("results"):].splitlines()[1]
        assert "1st call" in header and "check" in header and "wall time" not in header
        assert "1st call: compile + load + one run, not a GPU time" in flat
        assert re.search(r"element_per_thread\s+ok\s+[\d.]+ [mµ]?s", out)
        assert "time (" not in err  # the progress said compile + check only, never "time (N calls)"


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
    fits(text)
    assert "regs" in text and "75%" in text and "4.1 KB" in text
    assert " ".join(note.split()) in " ".join(text.split())  # wrapped, every word kept
