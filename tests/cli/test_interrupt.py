"""Ctrl-C means the same in every command (issue "Safe by default", item 2): exit 130, one line saying
so, no traceback, and what finished is kept (a run's finished rows, a grade's finished students).

Every command of the CLI is interrupted in this process at the start of its work (its callback raises
KeyboardInterrupt, as Ctrl-C does there); real SIGINTs go to `lab run` and `lab exercise grade` in
child processes; and an interrupt that Python swallows (raised inside a weakref callback, as in the
"Exception ignored in ... WeakSet" seen once in ten tries) still ends the process with 130."""
import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from lab.cli import cli, interrupt, main
from tests.conftest import SIMULATOR

ROOT = Path(__file__).resolve().parents[2]


def commands(group=cli, prefix=()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def _required_args(command):
    """Placeholder values for a command's required arguments (the callback never reads them)."""
    args = []
    for p in command.params:
        if isinstance(p, click.Argument) and p.required:
            args += ["x"] * (p.nargs if p.nargs > 0 else 1)
    return args


@pytest.mark.parametrize("path,command", list(commands()), ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_command_exits_130_with_one_line(path, command, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "callback", interrupted)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as e:
        main([*path, *_required_args(command)])
    assert e.value.code == interrupt.EXIT, (path, err.getvalue())
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted"), (path, err.getvalue())
    assert "Traceback" not in out.getvalue() + err.getvalue()


def _as_from_a_shell():
    """The child's SIGINT as a shell starts a command: default and not blocked. (A pytest worker once
    handed its children SIGINT blocked or ignored, set by an earlier test's library: the child then
    never saw the signal and exited 0. The lab is tested here, not the worker's inheritance.)"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def _interrupt(args, wait_for: str, timeout=120, **env):
    """Start ``lab ARGS``, send SIGINT once WAIT_FOR shows on its stderr; (code, stdout, stderr, seconds
    from the signal to the exit)."""
    p = subprocess.Popen([sys.executable, "-m", "lab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=ROOT, env={**os.environ, "COLUMNS": "80", **env}, preexec_fn=_as_from_a_shell)
    err = []
    deadline = time.monotonic() + timeout
    for line in p.stderr:  # the progress lines on stderr (piped: one per stage)
        err.append(line)
        if wait_for in line or time.monotonic() > deadline:
            break
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, rest = p.communicate(timeout=60)
    return p.returncode, out, "".join(err) + rest, time.monotonic() - sent


@pytest.mark.skipif(not SIMULATOR, reason="a simulator run (the sizes are the simulator's)")
def test_run_keeps_the_finished_rows():
    code, out, err, took = _interrupt(["run", "matvec", "--size", "64x1000", "--variant",
                                       "row_per_thread,split_k", "--contenders", "numba"],
                                      wait_for="split_k")
    assert code == interrupt.EXIT, err
    assert took < 5, f"{took:.1f} s from Ctrl-C to the exit"
    assert "row_per_thread" in out and "ok" in out  # the finished row was printed
    assert err.strip().splitlines()[-1].startswith("interrupted (Ctrl-C): stopped; 1 row finished")
    assert "Traceback" not in err


@pytest.mark.skipif(not SIMULATOR, reason="grades in the simulator")
def test_grade_keeps_the_finished_students(tmp_path):
    solution = (ROOT / "exercises" / "vecadd" / "solution.py").read_text()
    for student in ("s1", "s2", "s3", "s4"):
        (tmp_path / "class" / student).mkdir(parents=True)
        (tmp_path / "class" / student / "vecadd.py").write_text(solution)
    csv = tmp_path / "grades.csv"
    code, out, err, took = _interrupt(["exercise", "grade", str(tmp_path / "class"), "--jobs", "1", "--csv",
                                       str(csv)], wait_for="s1/vecadd")
    assert code == interrupt.EXIT, err
    assert "not graded" in out and "s1" in out
    assert csv.read_text().count("\n") >= 2  # the header and the finished rows
    assert "Traceback" not in err


SWALLOWED = """import signal, sys, weakref
from lab.cli import entry, interrupt
interrupt.install()
class Thing: pass
t = Thing()
weakref.finalize(t, lambda: signal.raise_signal(signal.SIGINT))  # the handler raises inside the finalizer
del t  # Python prints "Exception ignored in ..." and goes on
sys.argv = ["lab", "list", "--json"]
entry()
"""


def test_an_interrupt_python_swallowed_still_exits_130():
    p = subprocess.run([sys.executable, "-c", SWALLOWED], capture_output=True, text=True, cwd=ROOT, timeout=120,
                       preexec_fn=_as_from_a_shell)
    assert p.returncode == interrupt.EXIT, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1].startswith("interrupted (Ctrl-C)")
