"""``%load_ext lab``: the exercises in notebook cells, over the same :mod:`lab.teach.workspace` as
``lab exercise``.

    %%exercise NAME [--sim|--gpu] [--bench] [--seed N] [--timeout S] [--dir DIR]
        the cell is your file: it is written to the workspace (DIR/NAME.py, the file ``lab exercise
        check NAME`` checks; the file it replaces is kept as DIR/NAME.py~) and NAME's hidden tests run on
        it in a child process; PASS/FAIL per test inline, with the CLI's messages; the status is
        recorded in the workspace (default ./lab-exercises, or $LAB_EXERCISES_DIR).
    %exercise_hint NAME [K] [--dir DIR]    hint K (the same one at every run of the cell), or without
        K the next hint; remembered in the workspace as ``lab exercise hint NAME [K]``
    %exercise_solution NAME [--yes]        the reference solution, after a question (--yes: none)

A FAIL does not raise: the verdict is the cell's output (and the workspace's status), so a notebook
runs on to its end (``jupyter execute``, nbclient). Nothing blocks an unattended run either: where
the front end has no input box to ask in, ``%exercise_solution NAME`` shows one line saying how to
see it (``--yes``) instead of the solution, and does not raise. A :class:`lab.core.errors.LabError`
raised in any cell (a bad argument of ``lab.run`` ...) shows as its one line, ``error: ...``, as in
the shell, instead of a traceback.
"""
from __future__ import annotations

import builtins
import contextlib
import inspect
import os
import shlex
import math

import click

from lab import library as L
from lab.cli import options as O, one_line
from lab.core import options as D
from lab.core.errors import LabError
from lab.cli.api import Result, picture
from lab.cli.views import exercise as V
from lab.cli.views.inspect import plot_map
from lab.core.files import write_atomic
from lab.teach import workspace as E
from lab.teach.messages import MAP_ENV


@click.command("%%exercise")
@O.command(None, D.NAME, D.SIM, D.BENCH.but(help="Also time your kernel (where lab exercise check has --bench)."),
           D.TIMEOUT, D.SEED, D.DIRECTORY)
def _exercise_line(**kw):
    """The %%exercise line's options (parsed by click, as lab exercise check's)."""


@click.command("%exercise_hint")
@O.command(L.exercise_hint)
def _hint_line(**kw):
    """The %exercise_hint line."""


@click.command("%exercise_solution")
@O.command(L.exercise_solution, D.YES.but(help="Do not ask: print the reference solution."))
def _solution_line(**kw):
    """The %exercise_solution line."""


def _parse(command: click.Command, line: str) -> dict:
    try:
        return command.make_context(command.name, shlex.split(line)).params
    except click.ClickException as e:
        raise LabError(f"{command.name}: {one_line(e.format_message())}") from None
    except LabError as e:  # a value the option's declaration refuses (lab.core.options)
        raise LabError(f"{command.name}: {one_line(e)}") from None
    except ValueError as e:  # shlex: an unclosed quote
        raise LabError(f"{command.name} {line}: {e}") from None


def bench_supported() -> bool:
    """Whether this lab's exercise check can time the kernel (``lab exercise check --bench``)."""
    return "bench" in inspect.signature(E.check).parameters


def exercise(line: str, cell: str):
    """``%%exercise NAME ...``: check the cell's code with NAME's hidden tests; returns the check's
    :class:`lab.cli.api.Result` (``to_dict()``: the ``lab exercise check --json`` document)."""
    p = _parse(_exercise_line, line)
    name = p["name"]
    E.get(name)  # an unknown exercise, named before anything is written
    path, _ = E.start(name, p["directory"])  # the workspace, the visible test, "in progress"
    _write_cell(path, cell)
    extra = {"bench": True} if p["bench"] and bench_supported() else {}
    backend = "auto" if p["sim"] is None else ("sim" if p["sim"] else "gpu")
    with _maps_asked():
        result = E.check(name, None, p["directory"], backend, p["timeout"], p["seed"], **extra)
    maps = [(t["name"], t.pop("map")) for t in result["tests"] if "map" in t]  # to_dict(): the CLI's JSON
    images = [_map_picture(name, test, m) for test, m in maps[:MAX_MAPS]]
    missing = p["bench"] and not extra

    def render(out):
        V.print_check(result, out)
        if missing:
            out.print("[yellow]--bench: not available in this version of the lab (lab exercise check has no "
                      "--bench)[/]")
    return Result("exercise-check", result, render, images, rows=lambda d: d["tests"])


MAX_MAPS = 2  # pictures under a check: the first failing tests with an indexing failure


@contextlib.contextmanager
def _maps_asked():
    """The checker's child process adds the simulator's who-wrote-what map to a failing test's entry
    (lab.teach.messages.MAP_ENV) for this call only."""
    before = os.environ.get(MAP_ENV)
    os.environ[MAP_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(MAP_ENV, None)
        else:
            os.environ[MAP_ENV] = before


def _map_picture(exercise: str, test: str, m: dict) -> bytes | None:
    """The map picture of lab grid (lab.cli.views.inspect.plot_map) for your kernel in one test:
    which block (colour) and thread wrote each element of the output, grey where none did."""
    total = math.prod(m["grid"]) * math.prod(m["block"])
    n = math.prod(m["shape"])
    d = {"map": {"block_of": m["block_of"], "thread_of": m["thread_of"]}, "threads_total": total,
         "threads_needed": n, "threads_idle": max(total - n, 0)}
    dims = lambda v: "x".join(map(str, v))  # noqa: E731
    title = (f"{exercise}, test {test}: who wrote {m['output']} (shape {dims(m['shape'])}); "
             f"grid {dims(m['grid'])} x block {dims(m['block'])}")
    return picture(lambda path: plot_map(d, path, "png", title=title))


def _write_cell(path, cell: str) -> None:
    """The cell as the student's file DIR/NAME.py (atomically); a different file there is kept as
    NAME.py~ first."""
    text = cell if cell.endswith("\n") else cell + "\n"
    try:
        old = path.read_text()
    except OSError:
        old = None
    if old is not None and old != text:
        write_atomic(path.with_name(path.name + "~"), old, "backup of your file")
    write_atomic(path, text, "exercise file")


def exercise_hint(line: str):
    """``%exercise_hint NAME [K]``: hint K (the same one each time the cell runs; remembered as
    shown), or the next hint, as ``lab exercise hint NAME [K]``; then the line for the next one."""
    p = _parse(_hint_line, line)
    name = p["name"]
    hint = E.hint(name, p["directory"], p["number"])
    k, n = hint[0], hint[1]
    where = f" --dir {shlex.quote(p['directory'])}" if p["directory"] else ""

    def render(out):
        V.print_hint(name, *hint, out=out)
        if hint[3] and k < n:
            out.print(f"[dim]Hint {k + 1}: %exercise_hint {name} {k + 1}{where}[/]")
        elif hint[3]:
            out.print(f"[dim]That was the last hint; the reference solution: %exercise_solution {name}[/]")
    return Result("exercise-hint", {"exercise": name, "hint": k, "of": n, "text": hint[2]}, render)


def exercise_solution(line: str, ask=None):
    """``%exercise_solution NAME [--yes]``: the reference solution after the CLI's question (``ask``:
    default the notebook's input(), looked up at the call: ipykernel swaps it in for each cell).
    Where there is no input box to ask in (an unattended run: ``jupyter execute``, nbclient,
    papermill), the solution is not shown and nothing raises: one line says so and names ``--yes``,
    so that the run goes on and no solution lands in its outputs unasked."""
    p = _parse(_solution_line, line)
    name = p["name"]
    E.get(name)
    if not p["yes"]:
        try:
            answer = (ask or builtins.input)(f"Show the reference solution of {name}? [y/N]: ")
        except Exception as e:  # StdinNotImplementedError: this front end has no input box
            if type(e).__name__ != "StdinNotImplementedError" and not isinstance(e, EOFError):
                raise
            print(f"not shown: no input box here to ask first (an unattended run?); "
                  f"%exercise_solution {name} --yes shows it")
            return None
        if answer.strip().lower() not in ("y", "yes"):
            print("aborted")
            return None
    print(E.solution(name), end="")
    return None


def _lab_error(shell, etype, value, tb, tb_offset=None):
    """A LabError in a cell: its one line (as the CLI prints it), no traceback."""
    lines = [f"error: {one_line(value)}"]
    shell._showtraceback(etype, value, lines)
    return lines


def load_ipython_extension(ip) -> None:
    """``%load_ext lab``: register ``%%exercise``, ``%exercise_hint`` and ``%exercise_solution``, and
    show a LabError as one line."""
    ip.register_magic_function(exercise, magic_kind="cell", magic_name="exercise")
    ip.register_magic_function(exercise_hint, magic_kind="line", magic_name="exercise_hint")
    ip.register_magic_function(exercise_solution, magic_kind="line", magic_name="exercise_solution")
    ip.set_custom_exc((LabError,), _lab_error)
