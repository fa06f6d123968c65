"""The exercise commands as library functions: ``lab exercise list|start|check|grade|hint|solution|new|
notebook``. Each takes the command's options as keyword arguments (the same names and defaults),
declared once in :mod:`lab.core.options` (:func:`~lab.core.options.declares` checks them, with the
command's one-line LabError), does the work in
:mod:`lab.teach` and returns the result; nothing here prints or asks (``lab exercise solution``'s
question and the notebooks' one line each are the views').
"""
from __future__ import annotations

import os

from lab.core import args as A
from lab.core import options as D
from lab.core.errors import LabError
from lab.core.options import declares


def _backend(sim) -> str:
    return A.backend(sim)  # "auto", "sim" or "gpu": the checker chooses in its child processes


@declares(D.DIRECTORY)
def exercise_list(*, directory: str | None) -> list[dict]:
    """``lab exercise list``: every exercise in order, with its status in the workspace ``directory``
    (default ./lab-exercises or $LAB_EXERCISES_DIR): docs/schemas/exercise-list.json."""
    from lab.teach import workspace as E  # lazy: heavy for lab --help's start (exercises)

    return E.listing(directory)


@declares(D.NAME, D.DIRECTORY)
def exercise_start(name: str, *, directory: str | None) -> tuple:
    """``lab exercise start NAME``: the scaffold (DIR/NAME.py) and the visible test copied into the
    workspace. Returns (the scaffold's path, whether an existing file was kept, the statement)."""
    from lab.teach import workspace as E  # lazy: heavy for lab --help's start (exercises)

    path, kept = E.start(name, directory)
    return path, kept, E.statement(name)


@declares(D.NAME, D.FILE, D.TIMEOUT, D.SEED.but(help="Seed for the hidden tests' random inputs."), D.BENCH,
          D.DIRECTORY, D.SIM)
def exercise_check(name: str, *, file: str | None, timeout: float | None, seed: int | None, bench: bool,
                   directory: str | None, sim: bool | None, progress=None) -> dict:
    """``lab exercise check NAME``: NAME's hidden tests on ``file`` (default DIR/NAME.py), in contained
    child processes; ``timeout`` seconds a test; ``bench``: once all pass, against the reference.
    Returns docs/schemas/exercise-check.json's document (``passed``)."""
    from lab.teach import workspace as E  # lazy: heavy for lab --help's start (exercises)

    return E.check(name, file, directory, _backend(sim), timeout, seed, bench=bench, progress=progress)


@declares(D.SUBMISSIONS, D.EXERCISES, D.JOBS, D.CSV,
          D.BENCH.but(help="Grade performance too (see lab exercise check --bench)."),
          D.TIMEOUT.but(help="Seconds per hidden test (default 10)."), D.CPU_LIMIT, D.MEMORY_LIMIT, D.FILE_LIMIT,
          D.NO_LANDLOCK, D.SEED.but(help="Seed for the inputs (the same for everyone)."), D.NO_GPU_COMPILE, D.SIM)
def exercise_grade(submissions: str, *, exercises: str | list | None, jobs: int | None, csv: str | None, bench: bool,
                   timeout: float | None, cpu_limit: int | None, memory_limit: int | None, file_limit: int | None,
                   no_landlock: bool, seed: int | None, no_gpu_compile: bool, sim: bool | None,
                   progress=None) -> dict:
    """``lab exercise grade SUBMISSIONS``: SUBMISSIONS/STUDENT/EXERCISE.py, each in its own contained
    process with ``cpu_limit`` CPU seconds, ``memory_limit`` MiB of address space (simulator; 0:
    none), ``file_limit`` MiB a file, Landlock unless ``no_landlock``; ``csv``: also the gradebook as
    CSV; ``no_gpu_compile``: grade without the offline GPU compile (where NVVM is missing; else a
    simulator's grade refuses to start). Returns docs/schemas/exercise-grade.json's document."""
    from lab.core.files import check_writable, write_atomic  # lazy: heavy for lab --help's start (lab.core.files)
    from lab.teach import grade as G  # lazy: heavy for lab --help's start (concurrent)
    from lab.teach.contained.sandbox import Limits  # lazy: heavy for lab --help's start (lab.teach.contained)

    only = exercises
    check_writable(csv, "gradebook CSV")
    d = Limits()
    limits = Limits(cpu_limit if cpu_limit is not None else d.cpu_s,
                    memory_limit if memory_limit is not None else d.memory_mb,
                    file_limit if file_limit is not None else d.fsize_mb, landlock=not no_landlock)
    names = [n.strip() for n in only.split(",") if n.strip()] if only else None
    doc = G.grade(submissions, names, jobs, _backend(sim), timeout, seed, bench, limits, progress,
                  gpu_compile=not no_gpu_compile)
    if csv:
        write_atomic(csv, G.to_csv(doc), "gradebook CSV")
    return doc


@declares(D.NAME, D.NUMBER, D.DIRECTORY)
def exercise_hint(name: str, number: int | None, *, directory: str | None) -> tuple:
    """``lab exercise hint NAME [NUMBER]``: the next hint (remembered in the workspace), or hint
    NUMBER. Returns (number, of how many, text, new)."""
    from lab.teach import workspace as E  # lazy: heavy for lab --help's start (exercises)

    return E.hint(name, directory, number)


@declares(D.NAME)
def exercise_solution(name: str) -> str:
    """``lab exercise solution NAME``: the reference solution's source (the command asks first)."""
    from lab.teach import workspace as E  # lazy: heavy for lab --help's start (exercises)

    return E.solution(name)


@declares(D.NAME, D.TITLE)
def exercise_new(name: str, *, title: str):
    """``lab exercise new NAME``: scaffold exercises/NAME/ for an instructor; returns its folder."""
    from lab.teach.authoring import new  # lazy: heavy for lab --help's start (exercises)

    return new(name, title)


@declares(D.NAMES, D.NOTEBOOKS_OUT, D.FORCE.but(help="Overwrite notebooks you edited too (default: keep them)."))
def exercise_notebook(names, *, out: str, force: bool) -> list[tuple]:
    """``lab exercise notebook [NAME]...``: one Jupyter notebook per exercise (default: all) in the
    folder ``out`` (made when missing; its parent must exist). A notebook whose cells were edited (or
    a file the lab did not generate) is kept unless ``force``. Every name and path is checked before
    anything is written. Returns [(path, state, written)] (lab.teach.notebooks' states)."""
    import exercises  # lazy: heavy for lab --help's start (exercises)
    from lab.core.files import check_writable, write_atomic  # lazy: heavy for lab --help's start (lab.core.files)
    from lab.teach import notebooks as N  # lazy: heavy for lab --help's start (exercises)
    from lab.teach import workspace as E  # lazy: heavy for lab --help's start (exercises)

    chosen = list(dict.fromkeys(names)) or exercises.names()
    for n in chosen:  # every name and the folder are checked before anything is written
        E.get(n)
    if os.path.exists(out) and not os.path.isdir(out):
        raise LabError(f"--out {out}: not a folder")
    if not os.path.isdir(out):
        parent = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(parent):
            raise LabError(f"--out {out}: folder {parent} does not exist")
        try:
            os.mkdir(out)
        except OSError as e:
            raise LabError(f"--out {out}: cannot make the folder: {e.strerror or e}") from None
    paths = [os.path.join(out, f"{n}.ipynb") for n in chosen]
    for p in paths:
        check_writable(p, "notebook")
    texts = [N.text(n) for n in chosen]  # built (and validated) before the first file is written
    states = [N.state(n, p) for n, p in zip(chosen, paths)]
    done = []
    for p, t, st in zip(paths, texts, states):
        write = st != N.SAME and (force or st not in (N.EDITED, N.DIFFERS, N.FOREIGN))
        if write:
            write_atomic(p, t, "notebook")
        done.append((p, st, write))
    return done
