"""``lab exercise list|start|check|grade|hint|solution|new``: thin click commands over :mod:`lab.teach`;
the output is :mod:`lab.cli.views.exercise`."""
from __future__ import annotations

import sys

import click

from lab import library as L
from lab.cli import options as O
from lab.core import options as D


@click.group()
def exercise():
    """Exercises: scaffolds to fill in, hidden tests that catch real GPU bugs, hints, solutions."""


INTERRUPTED = 130  # the shell's code for a command stopped by Ctrl-C (128 + SIGINT)


@exercise.command("list")
@O.command(L.exercise_list, D.JSON.but(help="Print one JSON list."))
def exercise_list(as_json, directory):
    """Every exercise, in order: name, title, difficulty, status."""
    from lab.cli.views import exercise as V  # lazy: heavy for lab --help's start (concurrent)

    rows = L.exercise_list(directory=directory)
    O.emit_json(rows) if as_json else V.print_list(rows)


@exercise.command("start")
@O.command(L.exercise_start)
def exercise_start(name, directory):
    """Copy NAME's scaffold (DIR/NAME.py) and visible test; prints the path."""
    from lab.cli.views import exercise as V  # lazy: heavy for lab --help's start (concurrent)

    path, kept, statement = L.exercise_start(name, directory=directory)
    V.print_started(path, statement, kept)


@exercise.command("check")
@O.command(L.exercise_check, D.JSON.but(help="Print one JSON object."))
def exercise_check(name, file, as_json, timeout, seed, bench, directory, sim):
    """Run NAME's hidden tests on your file; exit 0 when all pass, 1 when any fails.

    On a GPU the tests also run in the CUDA simulator (its traced diagnostics) and a test fails
    when either backend fails it. In a terminal a line shows which test is running."""
    from lab.cli.views import exercise as V  # lazy: heavy for lab --help's start (concurrent)
    from lab.cli.views.progress import status_line  # lazy: heavy for lab --help's start (lab.cli.views)

    try:
        with status_line(as_json, f"checking {name}") as progress:
            result = L.exercise_check(name, file=file, timeout=timeout, seed=seed, bench=bench, directory=directory, sim=sim,
                           progress=progress)
    except KeyboardInterrupt:
        click.echo("interrupted: the check was stopped (its processes killed)", err=True)
        sys.exit(INTERRUPTED)
    O.emit_json(result) if as_json else V.print_check(result)
    fast_enough = not bench or bool(result.get("bench") and result["bench"]["passed"])
    sys.exit(0 if result["passed"] and fast_enough else 1)


@exercise.command("grade")
@O.command(L.exercise_grade, D.JSON.but(help="Print one JSON object."),
           D.WIDE.but(help="Every column at its natural width (the terminal may wrap lines)."))
def exercise_grade(submissions, exercises, jobs, csv, as_json, wide, bench, timeout, cpu_limit, memory_limit, file_limit,
                   no_landlock, seed, no_gpu_compile, sim):
    """Grade a class: SUBMISSIONS/STUDENT/EXERCISE.py, each in its own contained process.

    tests: hidden tests passed of the exercise's hidden tests (0 of N for a missing file, one that
    does not load, hangs at load or does not compile for a GPU). Exit 0 when the gradebook is
    complete (whatever the grades), 2 on bad input, 130 after Ctrl-C (the rows finished so far are
    printed, and written with --csv)."""
    from lab.cli.views import exercise as V  # lazy: heavy for lab --help's start (concurrent)
    from lab.cli.views.progress import bar_unless  # lazy: heavy for lab --help's start (lab.cli.views)

    try:
        with bar_unless(as_json, "grading", finished=True) as progress:
            doc = L.exercise_grade(submissions, exercises=exercises, jobs=jobs, csv=csv, bench=bench, timeout=timeout,
                        cpu_limit=cpu_limit, memory_limit=memory_limit, file_limit=file_limit,
                        no_landlock=no_landlock, seed=seed, sim=sim, progress=progress,
                        no_gpu_compile=no_gpu_compile)
    except KeyboardInterrupt:  # before the first submission started (grade returns what it has after)
        click.echo("interrupted: nothing was graded", err=True)
        sys.exit(INTERRUPTED)
    O.emit_json(doc) if as_json else V.print_grade(doc, csv, wide)
    if doc.get("interrupted"):
        click.echo(f"interrupted: {len(doc['rows'])} submissions graded, {doc['summary']['not_graded']} not",
                   err=True)
        sys.exit(INTERRUPTED)


@exercise.command("hint")
@O.command(L.exercise_hint)
def exercise_hint(name, number, directory):
    """Show NAME's next hint (remembered in the workspace), or hint NUMBER (the same one every time;
    the next hint then comes after it)."""
    from lab.cli.views import exercise as V  # lazy: heavy for lab --help's start (concurrent)

    V.print_hint(name, *L.exercise_hint(name, number, directory=directory))


@exercise.command("solution")
@O.command(L.exercise_solution, D.YES.but(help="Do not ask: print the reference solution."))
def exercise_solution(name, yes):
    """Print NAME's reference solution (asks first; changes no file)."""
    text = L.exercise_solution(name)  # an unknown name fails before the question
    if not yes and not click.confirm(f"Show the reference solution of {name}?", default=False, err=True):
        raise click.exceptions.Abort()
    click.echo(text, nl=False)


@exercise.command("new")
@O.command(L.exercise_new)
def exercise_new(name, title):
    """Scaffold a new exercise exercises/NAME/ for instructors."""
    click.echo(f"created {L.exercise_new(name, title=title)}: fill in meta.py, hidden.py, scaffold.py, solution.py, test_visible.py")


@exercise.command("notebook", short_help="One Jupyter notebook per exercise (%%exercise cells).")
@O.command(L.exercise_notebook)
def exercise_notebook(names, out, force):
    """Write one Jupyter notebook per exercise (default: all) to OUT/NAME.ipynb: statement, setup,
    the scaffold in a %%exercise cell, hints, solution, and what the hardware did. A notebook whose
    cells you edited (or a file the lab did not generate) is kept, one line each, unless --force."""
    from lab.teach import notebooks as N  # lazy: heavy for lab --help's start (exercises)

    for p, st, written in L.exercise_notebook(names, out=out, force=force):
        if st == N.SAME:
            click.echo(f"up to date {p}")
        elif not written:
            why = {N.EDITED: "you edited it", N.DIFFERS: "maybe edited: it differs from the generated one",
                   N.FOREIGN: "the lab did not generate it"}[st]
            click.echo(f"kept {p}: {why} (--force overwrites it)")
        else:
            click.echo(f"wrote {p}")
