"""``lab exercise list|start|check|grade|hint|solution|new``: thin click commands over :mod:`lab.teach`;
the output is :mod:`lab.cli.views.exercise`."""
from __future__ import annotations

import sys

import click

from lab.cli import options as O


@click.group()
def exercise():
    """Exercises: scaffolds to fill in, hidden tests that catch real GPU bugs, hints, solutions."""


INTERRUPTED = 130  # the shell's code for a command stopped by Ctrl-C (128 + SIGINT)
DIR = click.option("--dir", "directory", default=None, callback=O._not_empty, help="Workspace (default ./lab-exercises or $LAB_EXERCISES_DIR).")


@exercise.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list.")
@DIR
def exercise_list(as_json, directory):
    """Every exercise, in order: name, title, difficulty, status."""
    from lab.cli.views import exercise as V
    from lab.library import exercise_list as listing

    rows = listing(directory=directory)
    O.emit_json(rows) if as_json else V.print_list(rows)


@exercise.command("start")
@click.argument("name")
@DIR
def exercise_start(name, directory):
    """Copy NAME's scaffold (DIR/NAME.py) and visible test; prints the path."""
    from lab.cli.views import exercise as V
    from lab.library import exercise_start as start

    path, kept, statement = start(name, directory=directory)
    V.print_started(path, statement, kept)


@exercise.command("check")
@click.argument("name")
@click.option("--file", "file", default=None, callback=O._not_empty, help="The file to check (default: DIR/NAME.py).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, help="Seconds per test (default 30 or $LAB_EXERCISE_TIMEOUT).")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed for the hidden tests' random inputs.")
@click.option("--bench", is_flag=True, help="Once every test passes: time it against the reference (GPU), or "
              "compare its sectors per warp request (simulator); exit 1 below the pass line.")
@DIR
@O.BACKEND
def exercise_check(name, file, as_json, timeout, seed, bench, directory, sim):
    """Run NAME's hidden tests on your file; exit 0 when all pass, 1 when any fails.

    On a GPU the tests also run in the CUDA simulator (its traced diagnostics) and a test fails
    when either backend fails it. In a terminal a line shows which test is running."""
    from lab.cli.views import exercise as V
    from lab.cli.views.progress import status_line
    from lab.library import exercise_check as check

    try:
        with status_line(as_json, f"checking {name}") as progress:
            result = check(name, file=file, timeout=timeout, seed=seed, bench=bench, directory=directory, sim=sim,
                           progress=progress)
    except KeyboardInterrupt:
        click.echo("interrupted: the check was stopped (its processes killed)", err=True)
        sys.exit(INTERRUPTED)
    O.emit_json(result) if as_json else V.print_check(result)
    fast_enough = not bench or bool(result.get("bench") and result["bench"]["passed"])
    sys.exit(0 if result["passed"] and fast_enough else 1)


@exercise.command("grade")
@click.argument("submissions", type=click.Path(file_okay=False))
@click.option("--exercises", "exercises", default=None, callback=O._not_empty,
              help="Comma-separated exercises to grade (default: every one submitted).")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Submissions checked at once (default: the CPUs).")
@click.option("--csv", "csv", default=None, callback=O._not_empty, help="Also write the gradebook as CSV to FILE.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--wide", is_flag=True, help="Every column at its natural width (the terminal may wrap lines).")
@click.option("--bench", is_flag=True, help="Grade performance too (see lab exercise check --bench).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per hidden test (default 10).")
@click.option("--cpu-limit", "cpu_limit", type=click.IntRange(min=1), default=None,
              help="CPU seconds per submission (RLIMIT_CPU; default 120).")
@click.option("--memory-limit", "memory_limit", type=click.IntRange(min=0), default=None,
              help="Address space per submission in MiB, simulator only (RLIMIT_AS; default 4096; 0: none).")
@click.option("--file-limit", "file_limit", type=click.IntRange(min=1), default=None,
              help="Largest file a submission may write, MiB (RLIMIT_FSIZE; default 64).")
@click.option("--no-landlock", is_flag=True, help="Do not confine file access with Landlock (if it gets in the "
              "way of a GPU driver); the other limits stay.")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Seed for the inputs (the same for everyone).")
@click.option("--no-gpu-compile", "no_gpu_compile", is_flag=True,
              help="Grade without the offline GPU compile (where NVVM is missing): kernels checked from their source "
                   "alone; the gradebook says so.")
@O.BACKEND
def exercise_grade(submissions, exercises, jobs, csv, as_json, wide, bench, timeout, cpu_limit, memory_limit, file_limit,
                   no_landlock, seed, no_gpu_compile, sim):
    """Grade a class: SUBMISSIONS/STUDENT/EXERCISE.py, each in its own contained process.

    tests: hidden tests passed of the exercise's hidden tests (0 of N for a missing file, one that
    does not load, hangs at load or does not compile for a GPU). Exit 0 when the gradebook is
    complete (whatever the grades), 2 on bad input, 130 after Ctrl-C (the rows finished so far are
    printed, and written with --csv)."""
    from lab.cli.views import exercise as V
    from lab.cli.views.progress import bar_unless
    from lab.library import exercise_grade as grade

    try:
        with bar_unless(as_json, "grading", finished=True) as progress:
            doc = grade(submissions, exercises=exercises, jobs=jobs, csv=csv, bench=bench, timeout=timeout,
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
@click.argument("name")
@click.argument("number", required=False, type=int)
@DIR
def exercise_hint(name, number, directory):
    """Show NAME's next hint (remembered in the workspace), or hint NUMBER (the same one every time;
    the next hint then comes after it)."""
    from lab.cli.views import exercise as V
    from lab.library import exercise_hint as hint

    V.print_hint(name, *hint(name, number, directory=directory))


@exercise.command("solution")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask: print the reference solution.")
def exercise_solution(name, yes):
    """Print NAME's reference solution (asks first; changes no file)."""
    from lab.library import exercise_solution as solution

    text = solution(name)  # an unknown name fails before the question
    if not yes and not click.confirm(f"Show the reference solution of {name}?", default=False, err=True):
        raise click.exceptions.Abort()
    click.echo(text, nl=False)


@exercise.command("new")
@click.argument("name")
@click.option("--title", default="TODO title", callback=O._not_empty, help="The exercise's title.")
def exercise_new(name, title):
    """Scaffold a new exercise exercises/NAME/ for instructors."""
    from lab.library import exercise_new as new

    click.echo(f"created {new(name, title=title)}: fill in meta.py, hidden.py, scaffold.py, solution.py, test_visible.py")


@exercise.command("notebook", short_help="One Jupyter notebook per exercise (%%exercise cells).")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--out", "out", default="lab-notebooks", show_default=True, callback=O._not_empty,
              help="Folder for the notebooks (made when missing; its parent must exist).")
@click.option("--force", is_flag=True, help="Overwrite notebooks you edited too (default: keep them).")
def exercise_notebook(names, out, force):
    """Write one Jupyter notebook per exercise (default: all) to OUT/NAME.ipynb: statement, setup,
    the scaffold in a %%exercise cell, hints, solution, and what the hardware did. A notebook whose
    cells you edited (or a file the lab did not generate) is kept, one line each, unless --force."""
    from lab.teach import notebooks as N
    from lab.library import exercise_notebook as write_notebooks

    for p, st, written in write_notebooks(names, out=out, force=force):
        if st == N.SAME:
            click.echo(f"up to date {p}")
        elif not written:
            why = {N.EDITED: "you edited it", N.DIFFERS: "maybe edited: it differs from the generated one",
                   N.FOREIGN: "the lab did not generate it"}[st]
            click.echo(f"kept {p}: {why} (--force overwrites it)")
        else:
            click.echo(f"wrote {p}")
