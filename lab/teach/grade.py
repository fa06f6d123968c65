"""``lab exercise grade SUBMISSIONS``: a class's submissions graded in parallel, contained processes;
the gradebook as data (the CLI prints it, writes the CSV). Nothing here prints.

SUBMISSIONS holds one folder per student, and in it one file per exercise, named by the exercise
(``alice/vecadd.py``, ``alice/dot.py``, ...). Every (student, exercise) pair is graded by the
exercise checker's child process (:func:`lab.teach.child.run_child`) under
:mod:`lab.teach.contained.sandbox`: its own process, CPU-time, memory and file-size limits, a private
temporary folder, Landlock where the kernel has it, an audit hook against forks and writes
elsewhere. A pool of ``jobs`` threads keeps that many children running; a submission that does not
load, raises, hangs (the per-test timeout), exhausts a limit, forks or writes elsewhere gets a row
with the reason, and the others go on. Every student gets the same inputs (one seed). On a GPU each
submission also runs in the simulator, contained the same way, and the verdict is the union
(:mod:`lab.teach.union`): a test fails when either backend fails it.

The score is hidden tests passed of the exercise's hidden tests (:func:`lab.teach.union.score`),
the same denominator for every outcome: a missing file, a file that does not load, hangs or does
not compile for a GPU scores 0 of N, and so does one the sandbox had to stop (a violation: its
results are not to be trusted); "compiles for a GPU" is a gate, not a hidden test. Ctrl-C
stops the children at once and returns the rows finished so far (``interrupted``). The grader
never reads a student's workspace (``.lab-state.json``): only the submitted files.
"""
from __future__ import annotations

import csv
import io
import os
import stat
import signal
import time
from concurrent.futures import ThreadPoolExecutor, as_completed, TimeoutError as Timeout
from pathlib import Path

import exercises
from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core.text import printable_line, printable_tree, spreadsheet_cell
from lab.teach.contained.sandbox import Limits, refusal
from lab.core import simulator, resources
from lab.core.isolation import protections
from lab.teach import union, workspace, child
from lab.teach.contained import gpu_compile as GC
from lab.teach.procs import STOP, stop_all
from lab.teach.submission import SubmissionError, snapshot
from lab.teach.workspace import Progress, hidden_names

DEFAULT_TIMEOUT_S = 10.0  # per hidden test; a right solution takes well under a second in the simulator
PASSED, FAILED, MISSING = "passed", "failed", "missing"
CSV_COLUMNS = ["student", "exercise", "status", "tests_passed", "tests_total", "reason", "failures",
               "bench_passed", "student_ms", "reference_ms", "pct_of_reference", "pct_of_peak",
               "student_sectors", "reference_sectors", "seconds"]


class Refused(str):
    """A submission that is there but is not graded, and why (the gradebook row's reason): a symbolic
    link (it could point at a solution or another student's file), a hard link, a FIFO or device, a
    file that changed into one of these before it was read (:func:`lab.teach.submission.read`)."""


NESTED_DEPTH = 3  # folders below a student's folder searched for misplaced submissions
NESTED_ENTRIES = 2000  # entries looked at in that search at most (per student)
SKIPPED_NAMED = 5  # .py files not named after an exercise named one by one in the notes (per student)


def _kind(path: Path) -> str | None:
    """Why ``path`` (not followed) is no submission, or None for a regular file with one name."""
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link, not a regular file: not followed, not graded (submit the file itself)"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, device or socket): not graded"
    if st.st_nlink > 1:
        return f"a hard link ({st.st_nlink} names for one file): not graded (submit a copy of the file)"
    return None


def _shown(name: str) -> str:
    """A file or folder name as one printable line (a newline in a name must not make a row)."""
    return name if name.isprintable() else repr(name)


def discover(folder, only: list[str] | None = None) -> tuple[list[str], list[str], dict, list[str]]:
    """(students, exercises, {(student, exercise): path or Refused}, notes) of a submissions folder.

    Students: the folder's subfolders, sorted; never followed through a link. A hidden folder, a
    linked folder or one whose name is not printable is not graded, and a note says so. In a student's
    folder only regular files count: a link, hard link, FIFO or device named after an exercise is
    :class:`Refused` (its row says why; its target is never opened), and a file one or more folders
    down (at most :data:`NESTED_DEPTH`, never through a link) is named in a note; a ``.py`` file at
    the top of the class folder, or a student's folder that cannot be listed, too. Exercises:
    ``only``, else every exercise that some student submitted, in the path's order. LabError for a
    folder that is not there, an unknown exercise in ``only``, or nothing to grade."""
    root = Path(folder)
    if not root.is_dir():
        raise LabError(f"no such submissions folder: {root} (one subfolder per student, files named by exercise)")
    known = exercises.names()
    if only:
        bad = [n for n in only if n not in known]
        if bad:
            raise LabError(f"unknown exercise {bad[0]!r} in --exercises; choose from: {', '.join(known)}")
    students, notes = [], []
    for p in sorted(root.iterdir()):
        if p.is_symlink():
            notes.append(f"{_shown(p.name)}: a symbolic link, not a student folder: not followed, not graded")
        elif not p.is_dir():
            if p.suffix == ".py":
                notes.append(f"{_shown(p.name)}: a file at the top of the class folder, not in a student's folder: "
                             "not graded")
            continue
        elif p.name.startswith("."):
            notes.append(f"{_shown(p.name)}: a hidden folder: not graded (rename it without the dot to grade it)")
        elif not p.name.isprintable():
            notes.append(f"{_shown(p.name)}: a folder name with control characters: not graded (rename it)")
        else:
            students.append(p.name)
    if not students:
        raise LabError(f"{root} has no student folders: put each student's files in SUBMISSIONS/STUDENT/EXERCISE.py")
    files, seen = {}, set()
    for s in students:
        try:
            entries = sorted((root / s).iterdir())
        except OSError as e:
            notes.append(f"{s}/: cannot be listed ({e.strerror or e}): not graded")
            continue
        skipped = []
        for f in entries:
            if f.is_dir() and not f.is_symlink():  # below the student's folder: said (below), never graded
                continue
            if f.suffix != ".py":
                continue
            if f.stem in known and (not only or f.stem in only):
                why = _kind(f)
                files[(s, f.stem)] = Refused(why) if why else f
                seen.add(f.stem)
            elif f.stem not in known:
                skipped.append(f.name)
        for name in skipped[:SKIPPED_NAMED]:  # (a student's thousands of files make one more note, not thousands)
            notes.append(f"{s}/{_shown(name)}: not an exercise name; skipped")
        if len(skipped) > SKIPPED_NAMED:
            notes.append(f"{s}/: {len(skipped) - SKIPPED_NAMED} more .py files not named after an exercise; skipped")
        for where, nested in _nested(root / s, known).items():
            down = where.count("/")
            notes.append(f"{s}/{_shown(where)}: {', '.join(map(_shown, nested))} "
                         f"{'one folder' if down == 1 else f'{down} folders'} down: not graded (submissions go "
                         f"directly in the student's folder)")
    names = list(only) if only else [n for n in known if n in seen]
    if not names:
        raise LabError(f"no submission in {root} is named after an exercise (e.g. alice/vecadd.py); "
                       f"exercises: {', '.join(known)}")
    return students, names, files, notes


def _nested(folder: Path, known) -> dict:
    """{"sub/…/": [exercise file names there]} for the files named after an exercise below
    ``folder``'s own level (any kind, nothing opened; no link followed; at most
    :data:`NESTED_DEPTH` folders down and :data:`NESTED_ENTRIES` entries looked at), the
    shallowest first."""
    found, looked, level = {}, 0, [(folder, "")]
    for depth in range(NESTED_DEPTH + 1):
        nxt = []
        for d, rel in level:
            try:
                with os.scandir(d) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                looked += 1
                if looked > NESTED_ENTRIES:
                    return found
                if depth and e.name.endswith(".py") and e.name[:-3] in known:
                    found.setdefault(rel, []).append(e.name)
                if depth < NESTED_DEPTH and e.is_dir(follow_symlinks=False) and \
                        not e.name.startswith((".", "__pycache__")):
                    nxt.append((Path(e.path), f"{rel}{e.name}/"))
        level = nxt
    return found


def _reason_from_exit(code: int | None, limits: Limits) -> str | None:
    """The limit a child's exit code says it hit, or None."""
    if code is not None and code > 128:  # bubblewrap (lab.core.isolation) exits with 128 + the child's signal
        code = 128 - code
    if code is None or code >= 0:
        return None
    sig = -code
    if sig == signal.SIGXCPU:
        return f"used more than {limits.cpu_s} s of CPU time (the CPU limit)"
    if sig == signal.SIGKILL:
        return None  # the checker's own timeout (its message says so), or the CPU limit's hard stop
    if sig == signal.SIGXFSZ:
        return f"wrote a file larger than {limits.fsize_mb} MiB (the file-size limit)"
    return f"killed by signal {signal.Signals(sig).name}"


def grade_one(student: str, name: str, path: Path | None, backend: str, seed: int, timeout: float,
              limits: Limits, bench: bool, hidden: list[str] | None = None, compiled=None,
              gpu_compile: bool = True) -> dict:
    """One gradebook row: {student, exercise, status, tests_passed, tests_total, reason, failures:
    [{name, message}], bench (or None), violations, seconds}. ``hidden``: the exercise's hidden
    tests' names for ``seed`` (default: :func:`lab.teach.workspace.hidden_names`); tests_total is
    their count whatever happened. On a GPU (``backend`` "gpu") the simulator's child runs too, in
    the same sandbox, and its failures count (:func:`lab.teach.union.merge`). ``compiled``: the
    offline GPU compile's result for this file, made already (an object with ``result()``);
    ``gpu_compile``: the compile gates the tests and must give a verdict (a compile that could not run
    fails the row); False: no compile, the kernel checked from its source alone."""
    if hidden is None:
        hidden = hidden_names([name], seed)[name]
    row = {"student": student, "exercise": name, "status": MISSING, "tests_passed": 0, "tests_total": len(hidden),
           "reason": "no file submitted", "failures": [], "bench": None, "violations": [], "seconds": 0.0}
    if path is None:
        return row
    if isinstance(path, Refused):
        row.update(status=FAILED, reason=str(path))
        return row
    t0 = time.monotonic()
    extra: dict = {}
    sim_extra: dict = {}
    if backend == "gpu":
        tests, sim_notes, _ = workspace.with_simulator(name, path, seed, timeout, bench, extra, None, Progress(None),
                                              sandbox=limits, sim_extra=sim_extra)
        extra["notes"] = list(extra.get("notes") or []) + [n for n in sim_notes + list(sim_extra.get("notes") or [])
                                                           if n not in (extra.get("notes") or [])]
    else:
        tests = workspace.run_child(name, path, backend, seed, timeout, bench=bench, sandbox=limits, extra=extra,
                           compiled=compiled, require_compile=gpu_compile,
                           env=None if gpu_compile else {"LAB_GPU_COMPILE": "0"})
    row["seconds"] = round(time.monotonic() - t0, 3)
    row["tests_passed"], row["tests_total"] = union.score(tests, hidden)
    row["failures"] = [{"name": t["name"], "message": t["message"]} for t in tests if not t["passed"]]
    row["violations"] = list(extra.get("violations") or []) + [v for v in sim_extra.get("violations") or []
                                                              if v not in (extra.get("violations") or [])]
    row["bench"] = extra.get("bench") if all(t["passed"] for t in tests) else None
    limit = _reason_from_exit(extra.get("returncode"), limits) or _reason_from_exit(sim_extra.get("returncode"), limits)
    if row["violations"]:  # what the sandbox had to stop: its results are not to be trusted
        row["tests_passed"] = 0
    messages = " ".join(f["message"] for f in row["failures"])
    if limit is None and "MemoryError" in messages:
        limit = f"ran out of memory (the {limits.memory_mb} MiB address-space limit)"
    elif limit is None and ("File too large" in messages or "Errno 27" in messages):  # Python ignores SIGXFSZ: EFBIG
        limit = f"wrote a file larger than {limits.fsize_mb} MiB (the file-size limit)"
    row["notes"] = list(extra.get("notes") or [])
    ok = bool(tests) and not row["failures"] and not row["violations"] and limit is None
    if ok and bench and row["bench"] is not None and not row["bench"].get("passed"):
        row["status"], row["reason"] = FAILED, f"performance: {row['bench'].get('message')}"
        return row
    row["status"] = PASSED if ok else FAILED
    if row["violations"]:
        row["reason"] = "contained: " + row["violations"][0]
    elif limit:
        row["reason"] = limit
    elif row["failures"]:
        f = row["failures"][0]
        row["reason"] = f"{f['name']}: {f['message']}"
    else:
        row["reason"] = ""
    return row


NO_COMPILE_OPTION = "--no-gpu-compile"
GPU_COMPILE_OFF = ("not compiled for a GPU ({why}): each kernel was checked from its source alone (the device "
                   "rules of lab.teach.contained.source) before it ran in the simulator; code a GPU cannot compile may pass")


def grade(folder, only: list[str] | None = None, jobs: int | None = None, backend: str = "auto",
          timeout: float | None = None, seed: int | None = None, bench: bool = False,
          limits: Limits | None = None, progress=None, gpu_compile: bool = True) -> dict:
    """The gradebook document (docs/schemas/exercise-grade.json).

    folder: SUBMISSIONS; only: exercise names (default: every one submitted); jobs: children at once
    (default: the CPUs this process may use); backend: "auto", "sim" or "gpu"; timeout: seconds per
    hidden test (default 10); bench: the performance grade too (:mod:`lab.teach.bench`);
    progress(done, total, text): after each row, ``done`` rows finished (1 .. total). Ctrl-C
    (KeyboardInterrupt) kills the running children and returns the rows finished so far, with
    ``interrupted`` true and a note. LabError on bad input (before any work).

    In the simulator every kernel must compile offline for a GPU before it runs (the compile proves
    it holds only device code): where that compiler (NVVM) is missing, LabError (one line) unless
    ``gpu_compile`` is False (``--no-gpu-compile``; also ``LAB_GPU_COMPILE=0``), which grades
    without it and says so in the notes."""
    limits = limits or Limits()
    students, names, files, notes = discover(folder, only)
    why = refusal(limits)
    if why:
        raise LabError(f"lab exercise grade: {why}")
    chosen = simulator.choose(backend)
    gpu_compile = bool(gpu_compile) and GC.enabled()
    if chosen == "simulator":
        why = resources.offline_unavailable() if gpu_compile else None
        if why:
            raise LabError(f"lab exercise grade needs the offline GPU compile, which proves each kernel holds only "
                           f"device code before it runs, and it cannot run here ({why}): {GC.ENABLE_HINT}; or grade "
                           f"without it: {NO_COMPILE_OPTION}")
        if not gpu_compile:
            notes.append(GPU_COMPILE_OFF.format(why=f"{NO_COMPILE_OPTION} or {GC.ENV}=0"))
    if not jobs:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if jobs < 1:
        raise LabError(f"--jobs {jobs}: at least 1")
    if bench and chosen == "gpu" and jobs > 1:  # timings need the GPU to themselves
        notes.append(f"--bench on a GPU: one submission at a time (--jobs {jobs} -> 1), so that no timing "
                     f"shares the GPU with another submission")
        jobs = 1
    timeout = workspace.timeout_s(timeout, DEFAULT_TIMEOUT_S, env=None)
    seed = int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little")
    pairs = [(s, n) for s in students for n in names]
    rows: dict = {}
    t0 = time.monotonic()
    snaps: list = []
    files = _read_once({p: files.get(p) for p in pairs}, snaps)
    STOP.clear()
    hidden = workspace.hidden_names(names, seed)  # every row's denominator, whatever happens to the file
    interrupted = False
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        # the offline GPU compiles first, one contained child per student for all their files (Python,
        # Numba and NVVM start once a student, not once a file); each row waits for its own result
        compiled = _compile_students(pool, students, names, files, chosen, seed, limits, timeout) if gpu_compile else {}
        futures = {pool.submit(grade_one, s, n, files.get((s, n)), chosen, seed, timeout, limits, bench,
                               hidden[n], compiled.get((s, n)), gpu_compile): (s, n) for s, n in pairs}
        for k, fut in enumerate(as_completed(futures), 1):
            s, n = futures[fut]
            try:
                rows[(s, n)] = fut.result()
            except Exception as e:  # noqa: BLE001 - the grader's own failure on one row never stops the rest
                rows[(s, n)] = {"student": s, "exercise": n, "status": FAILED, "tests_passed": 0,
                                "tests_total": len(hidden[n]),
                                "reason": f"the grader could not run it: {type(e).__name__}: {e}", "failures": [],
                                "bench": None, "violations": [], "seconds": 0.0}
            if progress:
                progress(k, len(pairs), printable_line(f"{s}/{n}: {rows[(s, n)]['status']}"))
    except KeyboardInterrupt:  # Ctrl-C: the children die now, the finished rows stay
        interrupted = True
        stop_all()
        pool.shutdown(wait=False, cancel_futures=True)
        notes.append(f"interrupted (Ctrl-C): {len(rows)} of {len(pairs)} submissions graded; the others are not "
                     f"in this gradebook")
    else:
        pool.shutdown(wait=True)
    finally:
        for snap in snaps:
            snap.remove()
    ordered = [rows[p] for p in pairs if p in rows]
    for r in ordered:  # what the children said about their containment (e.g. no Landlock here), once each
        for note in r.pop("notes", []):
            if note not in notes:
                notes.append(note)
    isolation = [f"own process per submission, {jobs} at once",
                 f"CPU limit {limits.cpu_s} s, file-size limit {limits.fsize_mb} MiB",
                 (f"address-space limit {limits.memory_mb} MiB" if chosen == "simulator" and limits.memory_mb else
                  "no address-space limit (on a GPU the CUDA context reserves more than any sane limit)"
                  + (f"; the simulator's child: {limits.memory_mb} MiB" if limits.memory_mb else "")
                  if chosen == "gpu" else "no address-space limit"),
                 *(["on a GPU each submission also runs in the simulator (its traced diagnostics), contained "
                    "the same way; a test fails when either fails it"] if chosen == "gpu" else []),
                 "private temporary working folder (HOME, TMPDIR), an audit hook refusing processes, writes "
                 "elsewhere and sockets",
                 ("Landlock: writes only to the private folder, reads only system, Python and lab folders"
                  if limits.landlock else "Landlock off")]
    isolation += [p["name"].removeprefix("sandbox: ") + (" in force" if p["status"] == "ok" else
                                                          f" NOT in force ({p['message'].split(':')[0]})")
                  for p in protections() if p["name"] != "sandbox: Landlock"]
    summary = {"students": len(students), "exercises": len(names),
               **{st: sum(r["status"] == st for r in ordered) for st in (PASSED, FAILED, MISSING)},
               "not_graded": len(pairs) - len(ordered)}
    # every string a submission could shape (names, messages, notes) shown, never obeyed by a terminal
    return printable_tree(one_line=True, obj={"schema_version": SCHEMA_VERSION, "folder": str(folder), "backend": chosen, "seed": seed, "jobs": jobs,
            "timeout_s": timeout, "bench": bench, "limits": {"cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb,
                                                              "fsize_mb": limits.fsize_mb, "landlock": limits.landlock},
            "isolation": isolation, "students": students, "exercises": names, "rows": ordered, "summary": summary,
            "seconds": round(time.monotonic() - t0, 3), "notes": notes, "interrupted": interrupted,
            "verdict_from": ["gpu", "simulator"] if chosen == "gpu" else ["simulator"]})


def _read_once(files: dict, snaps: list) -> dict:
    """Each submitted file read once (:func:`lab.teach.submission.snapshot`): {pair: the private
    copy's path, a :class:`Refused`, or None}; the snapshots into ``snaps`` (removed by the caller).
    What the tests, the compile and the benchmark check is those bytes, whatever the file becomes (a
    file swapped for a link or a hard link after :func:`discover` is refused here)."""
    out = {}
    for pair, path in files.items():
        if path is None or isinstance(path, Refused):
            out[pair] = path
            continue
        try:
            snap = snapshot(path, folder=True)  # (the student's folder, listed as one: not a link now either)
        except SubmissionError as e:
            out[pair] = Refused(f"{Path(path).name}: {e}")
            continue
        snaps.append(snap)
        out[pair] = snap.path
    return out


class _Item:
    """The ``k``-th result of a student's compile (a Future of a list), as ``result()``."""

    def __init__(self, fut, k):
        self.fut, self.k = fut, k

    def result(self, timeout=None):
        try:
            return self.fut.result(timeout)[self.k]
        except Timeout:  # the row's own limit ran out first (lab.teach.child._add_compile)
            raise
        except Exception as e:  # noqa: BLE001 - the lab's own failure: a note, not the student's
            return {"skipped": f"could not run ({type(e).__name__}: {e})", "broken": True}


def _compile_students(pool, students, names, files, backend, seed, limits, timeout=None) -> dict:
    """{(student, exercise): its compile result to come}: in the simulator, with the offline GPU
    compile on, a task per student on ``pool`` (submitted before any row: no row waits for a task
    that has not started) compiling all their files in one contained child
    (:func:`lab.teach.workspace.compile_files`)."""
    if backend != "simulator" or not GC.enabled():
        return {}
    out = {}
    for s in students:
        mine = [(n, files[(s, n)]) for n in names if isinstance(files.get((s, n)), Path)]
        if mine:
            fut = pool.submit(child.compile_files, mine, seed, limits, timeout)
            out.update({(s, n): _Item(fut, k) for k, (n, _) in enumerate(mine)})
    return out


def to_csv(doc: dict) -> str:
    """The gradebook as CSV (CSV_COLUMNS; failures joined by " | "); a text cell that a spreadsheet
    would run as a formula (``= + - @`` first) starts with ``'`` (:func:`lab.core.text.spreadsheet_cell`)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_COLUMNS)
    for r in doc["rows"]:
        b = r.get("bench") or {}
        sectors = b.get("sectors") or {}
        w.writerow([spreadsheet_cell(v) for v in (
                    r["student"], r["exercise"], r["status"], r["tests_passed"], r["tests_total"], r["reason"],
                    " | ".join(f"{f['name']}: {f['message']}" for f in r["failures"]),
                    "" if not b else b.get("passed"), b.get("student_ms", ""), b.get("reference_ms", ""),
                    b.get("pct_of_reference", ""), b.get("pct_of_peak", ""), sectors.get("student", ""),
                    sectors.get("reference", ""), r["seconds"])])
    return buf.getvalue()
