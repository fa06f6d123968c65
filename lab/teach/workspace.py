"""``lab exercise``: the student's workspace, the exercise catalogue, and the checker's parent side.

The workspace (default ``./lab-exercises``, ``--dir`` or ``LAB_EXERCISES_DIR``) holds the started
scaffolds (``NAME.py``), their visible tests (``test_NAME.py``) and ``.lab-state.json`` (the
exercises started, the hints shown, and per exercise the last check's record). Hidden tests and
solutions stay inside the installed package.

:func:`check` runs the hidden tests' launches in a child process (:mod:`lab.teach.contained.executor`), judges
their raw results here (:mod:`lab.teach.checker`, which never imports the student's code) and kills it
when one test runs longer than ``timeout`` seconds: a kernel that loops forever or waits at a
barrier that not all threads reach is reported, never waited for. On a GPU a second child runs
the same hidden tests in the simulator on the CPU (its traced diagnostics), and the verdict is
the union of the two (:mod:`lab.teach.union`). Nothing here prints.

The workspace records checks, not claims: a check of the workspace's own file stores whether it
passed, the sha256 of the file content it checked, the time and the backend, signed with an HMAC
whose key lives outside the workspace (:func:`record_key`, the user's data folder). ``list`` says
"passed" only when that record verifies and the file still has that content; a hand-edited record
does not verify. (Re-running the check is the other way to know, and costs a check; the HMAC keeps
``list`` instant.) The key guards against editing the state file, not against the same user's
code reading the key: nothing a student's own account holds can; a teacher's grade
(:mod:`lab.teach.grade`) never reads a workspace, only the submitted files.

Parts of its own module each: the records (:mod:`lab.teach.records`), the checker's child processes
(:mod:`lab.teach.child`), a new exercise's files (:mod:`lab.teach.authoring`); import their names
from them (nothing is re-exported here).
"""
from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import threading
from pathlib import Path

import exercises
from lab.core.errors import SCHEMA_VERSION, LabError
from lab.teach.child import cached_cases, run_child
from lab.teach.procs import STOP, stop_all
from lab.teach.records import IN_PROGRESS, PASSED, record_key, record_check, save_state, read_state, check_status, writing
from lab.core.text import printable_tree

DEFAULT_DIR = "lab-exercises"
DEFAULT_TIMEOUT_S = 30.0


def workspace(directory=None) -> Path:
    return Path(directory or os.environ.get("LAB_EXERCISES_DIR") or DEFAULT_DIR)


def existing(directory=None) -> Path:
    """The workspace, which must exist (only ``lab exercise start`` makes it): LabError naming where
    the folder came from (--dir, LAB_EXERCISES_DIR or the default) when it does not."""
    ws = workspace(directory)
    if not ws.is_dir():
        where = "--dir" if directory else "LAB_EXERCISES_DIR" if os.environ.get("LAB_EXERCISES_DIR") else "the default"
        what = "is not a folder" if ws.exists() else "does not exist"
        raise LabError(f"workspace {ws} ({where}) {what}; `lab exercise start NAME` makes it")
    return ws


def get(name: str) -> exercises.Exercise:
    try:
        return exercises.load(name)
    except KeyError as e:
        raise LabError(e.args[0]) from None


def listing(directory=None) -> list[dict]:
    """[{schema_version, name, title, difficulty, status, last_check, prerequisites, mirrors}] in the
    order of the path (a list carries no version of its own: each item does).

    status: "passed" only when the last check of DIR/NAME.py passed, its record verifies (HMAC) and
    the file still has the content that was checked; "in progress" when the file is there or was
    started; else "not started". last_check: None, or {"passed", "at" (UTC, ISO 8601), "backend",
    "file_changed" (the file is not the one checked), "verified" (the record's HMAC)}."""
    ws = workspace(directory) if not (directory or os.environ.get("LAB_EXERCISES_DIR")) else existing(directory)
    state = read_state(ws)  # the default folder may be missing: nothing was started yet
    key = record_key(create=False)
    rows = []
    for n in exercises.names():
        ex = exercises.load(n)
        status, last = check_status(ws, n, state, key)
        rows.append({"schema_version": SCHEMA_VERSION, "name": n, "title": ex.title, "difficulty": ex.difficulty,
                     "status": status, "last_check": last, "prerequisites": ex.prerequisites,
                     "mirrors": ex.mirrors})
    return rows


def start(name: str, directory=None) -> tuple[Path, bool]:
    """Copy the scaffold to DIR/NAME.py and the visible test to DIR/test_NAME.py (never hidden tests
    or solutions); an existing NAME.py is kept (the student's work). Returns (the scaffold's path,
    whether an existing file was kept). LabError when the workspace cannot be written."""
    ex = get(name)
    ws = workspace(directory)
    dest = ws / f"{name}.py"
    kept = dest.exists()
    with writing(ws):
        ws.mkdir(parents=True, exist_ok=True)
        if not kept:
            shutil.copyfile(ex.scaffold, dest)
        if ex.visible_test.exists():
            shutil.copyfile(ex.visible_test, ws / f"test_{name}.py")
    state = read_state(ws)
    state["status"][name] = IN_PROGRESS  # started; "passed" comes from a check's record (listing)
    save_state(ws, state)
    return dest, kept


def hint(name: str, directory=None, number: int | None = None) -> tuple[int, int, str, bool]:
    """The next hint (remembered in the workspace): (number, of how many, text, new). Once every
    hint was shown, ``new`` is False and the last one comes back (for the view to say there are
    no more). ``number`` (1..len(hints)): that hint, every time (``new`` True), remembered as shown
    (the next hint after it comes next); LabError naming the range when there is no such hint."""
    ex = get(name)
    ws = existing(directory)
    state = read_state(ws)
    shown = state["hints"].get(name, 0)
    if number is not None and not 1 <= number <= len(ex.hints):
        raise LabError(f"hint {number} of {name}: there is no such hint; choose 1 to {len(ex.hints)}")
    k = number if number is not None else min(shown + 1, len(ex.hints))
    state["hints"][name] = max(k, shown)
    if k > shown:
        save_state(ws, state)
    return k, len(ex.hints), ex.hints[k - 1], number is not None or k > shown


NO_SOLUTION = ("the reference solution of {name} is not installed here (this course ships it to teachers "
               "only: LAB_SOLUTIONS=DIR names their folder, DIR/{name}/solution.py)")


def solution(name: str) -> str:
    """The reference solution's source (:attr:`exercises.Exercise.solution`); LabError saying so when
    this install has none (a course that ships the solutions to teachers only)."""
    ex = get(name)
    try:
        return ex.solution.read_text()
    except OSError as e:
        if not ex.has_solution:
            raise LabError(NO_SOLUTION.format(name=name)) from None
        raise LabError(f"cannot read the reference solution of {name}: {e.strerror or e}") from None


def statement(name: str) -> str:
    return get(name).statement


def check(name: str, file=None, directory=None, backend: str = "auto", timeout: float | None = None,
          seed: int | None = None, bench: bool = False, progress=None) -> dict:
    """Run NAME's hidden tests on ``file`` (default: DIR/NAME.py) in a child process.

    backend: "auto" (a GPU when one is usable, else the simulator), "sim" or "gpu".
    timeout: seconds per test (default 30, or LAB_EXERCISE_TIMEOUT).
    progress: ``progress(done, total, label)`` as tests start and end ("running test 3/7: n=1000"),
    from the parent's own thread(s); None for none.
    Returns {"schema_version", "exercise", "passed", "tests": [{"name", "passed", "message"}], "backend",
    "seed", "tests_passed", "tests_total", "verdict_from"} (+ "notes"; with ``bench``, "bench":
    :mod:`lab.teach.bench`'s document, or null when a test failed). ``tests_passed`` of
    ``tests_total``: the hidden tests (:func:`lab.teach.union.score`; the same count for every
    outcome). On a GPU (``--gpu``, or "auto" finding one) the hidden tests also run in the simulator
    in a second child on the CPU, and a test fails when either backend fails it
    (:func:`lab.teach.union.merge`; ``verdict_from`` ["gpu", "simulator"]). With backend "gpu"
    (``--gpu``) the tests also run under compute-sanitizer (racecheck, memcheck, synccheck: one entry
    each, "GPU racecheck" ...), or a note says these were not available.
    LabError for an unknown exercise, a bad file (missing, a folder, not .py), a bad timeout (also
    LAB_EXERCISE_TIMEOUT) or an unusable backend.
    """
    from lab.core.simulator import choose  # lazy: heavy for lab exercise list's start (greenlet)

    ex = get(name)
    ws = workspace(directory)
    given = student_file(name, file, ws)
    timeout = timeout_s(timeout)
    chosen = choose(backend)  # the child process selects it (lab.teach.contained.executor.main)
    seed = int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little")
    from lab.teach import submission  # lazy: heavy for lab exercise list's start (lab.teach.submission)
    from lab.teach.contained.sandbox import Limits, refusal  # lazy: heavy for lab exercise list's start (lab.teach.contained.sandbox)

    contained = Limits()  # contained like a graded submission (lab.teach.contained.sandbox): its own copy, namespaces, seccomp, limits
    why = refusal(contained)
    if why:
        raise LabError(f"lab exercise check: {why}")
    try:  # read once: every step below checks these bytes, and the record hashes them
        snap = submission.snapshot(given)
    except submission.SubmissionError as e:
        raise LabError(f"{given}: {e}") from None
    try:
        return _check(ex, name, given, snap, ws, chosen, backend, timeout, seed, bench, progress, contained)
    finally:
        snap.remove()


def _check(ex, name, given, snap, ws, chosen, backend, timeout, seed, bench, progress, contained) -> dict:
    """:func:`check` on the submission read once (``snap``: :class:`lab.teach.submission.Snapshot`)."""
    from lab.teach import union  # lazy: heavy for lab exercise list's start (lab.teach.union)

    path, digest = snap.path, snap.sha256  # the content this check is about (the record's hash)
    extra: dict = {}
    notes: list[str] = []
    STOP.clear()
    shown = Progress(progress)
    try:
        if chosen == "gpu":
            sim_extra: dict = {}
            tests, sim_notes, gpu_tests = with_simulator(ex.name, path, seed, timeout, bench, extra, notes, shown,
                                                          sandbox=contained, sim_extra=sim_extra)
            extra["violations"] = (extra.get("violations") or []) + [
                v for v in sim_extra.get("violations") or [] if v not in (extra.get("violations") or [])]
            notes += [n for n in sim_notes if n not in notes]
        else:
            tests = gpu_tests = run_child(ex.name, path, chosen, seed, timeout, bench=bench, sandbox=contained,
                                           extra=extra, notes=notes, progress=shown.leg("simulator"))
        for v in extra.get("violations") or []:  # what the sandbox stopped fails the check, with the reason
            tests.append({"name": union.SANDBOX, "passed": False, "message": f"stopped: {v}"})
        if backend == "gpu":  # --gpu: the hidden tests once more under compute-sanitizer, reports at your lines
            # what hung on the GPU is not run again there (each would cost SANITIZER_SLOWDOWN timeouts)
            stuck = [t["name"] for t in gpu_tests if not t["passed"] and t["message"].startswith(("timed out",
                                                                                                  "not run"))]
            failed = {t["name"] for t in gpu_tests if not t["passed"]}
            left = [n for n in union.hidden_of(gpu_tests) if n not in stuck]
            if "load" in failed:
                notes.append("not run under compute-sanitizer: your file did not load")
            elif union.COMPILE_TEST in failed:
                notes.append("not run under compute-sanitizer: your kernel does not compile for the GPU")
            elif not left:
                notes.append("not run under compute-sanitizer: every test timed out or was not run")
            else:
                if stuck:
                    notes.append(f"not run again under compute-sanitizer (they timed out or were not run): "
                                 f"{', '.join(stuck)}")
                san_tests, san_notes = _gpu_diagnoses(ex.name, path, seed, timeout, skip=stuck,
                                                      progress=shown.leg("compute-sanitizer"))
                tests += [union.sanitizer_entry(t) for t in san_tests]
                notes += san_notes
    except KeyboardInterrupt:
        stop_all()  # the children (GPU, simulator, sanitizer) go with the check
        raise
    # the judge's "kind" of a failure served the union of two backends (lab.teach.union); not in the document
    tests = [{k: v for k, v in t.items() if k != "kind"} for t in tests]
    passed = bool(tests) and all(t["passed"] for t in tests)
    hidden = union.hidden_of(tests)
    if not hidden or any(t["name"] == "load" and not t["passed"] for t in tests):
        hidden = hidden_names([ex.name], seed)[ex.name]  # the file never listed them: ask the exercise
    tests_passed, tests_total = union.score(tests, hidden)
    if given.resolve() == (ws / f"{name}.py").resolve():
        state = read_state(ws)
        # the state file's "status" says what the latest check found (read by people, never by list:
        # list goes by the signed record below)
        state["status"][name] = PASSED if passed else IN_PROGRESS
        key = record_key()
        if key is None and passed:
            notes.append("lab exercise list cannot show this pass: the key that signs check records could not be "
                         "made (set LAB_DATA_DIR to a folder you can write)")
        record_check(state, name, passed, digest, chosen, key)
        try:
            save_state(ws, state)
        except LabError as e:  # the verdict stands; only its record is missing
            notes.append(f"not recorded in the workspace: {e}")
    result = {"schema_version": SCHEMA_VERSION, "exercise": ex.name, "passed": passed, "tests": tests,
              "backend": chosen, "seed": seed, "tests_passed": tests_passed, "tests_total": tests_total,
              "verdict_from": ["gpu", "simulator"] if chosen == "gpu" else ["simulator"]}
    if notes:
        result["notes"] = notes
    if bench:  # nothing is benchmarked before every test passed, on both backends
        result["bench"] = extra.get("bench") if passed else None
    return printable_tree(result)  # the child's messages shown, never obeyed by a terminal


# the GPU child compiles for real and reports "compiles for a GPU"; the simulator's child still waits for
# its own offline compile before it runs the kernel (a gate only: its entry is the GPU's)
SIM_LEG_ENV = {"NUMBA_ENABLE_CUDASIM": "1"}


def with_simulator(name, path, seed, timeout, bench, extra, notes, shown, sandbox=None, sim_extra=None):
    """The hidden tests on the GPU (this thread) and, at the same time, in the simulator on the CPU
    (a second child, ``SIM_LEG_ENV``; the same ``sandbox``): (merged tests, the simulator's notes,
    the GPU's own tests).
    ``sim_extra`` (a dict) receives the simulator child's ``extra`` (violations, exit code)."""
    from lab.teach import union  # lazy: heavy for lab exercise list's start (lab.teach.union)

    sim: dict = {}
    sim_notes: list[str] = []
    sim_extra = {} if sim_extra is None else sim_extra

    def simulator_leg():
        try:
            sim["tests"] = run_child(name, path, "simulator", seed, timeout, env=SIM_LEG_ENV, sandbox=sandbox,
                                      report_compile=False,
                                      extra=sim_extra, notes=sim_notes, progress=shown.leg("simulator"))
        except Exception as e:  # noqa: BLE001 - the lab's own failure: the GPU's verdict stands, with a note
            sim["error"] = f"{type(e).__name__}: {e}"

    leg = threading.Thread(target=simulator_leg, name=f"lab-sim-{name}", daemon=True)
    leg.start()
    gpu = run_child(name, path, "gpu", seed, timeout, bench=bench, sandbox=sandbox, extra=extra, notes=notes,
                     progress=shown.leg("gpu"))
    leg.join()
    if "error" in sim:
        sim["tests"], why = [], f"the simulator's leg failed: {sim['error']}"
    else:
        gate = sim_extra.get("compile_gate")
        why = (f"the simulator's offline compile gate failed ({gate['message']})" if gate else
               "its child stopped before it ran them")
    return union.merge(gpu, union.not_run_in_simulator(gpu, sim["tests"], why)), sim_notes, gpu


class Progress:
    """One ``progress(done, total, label)`` callback for the legs of a check that run at once (the
    GPU's, the simulator's, compute-sanitizer's): each leg's latest line, joined."""

    NAMES = {"gpu": "GPU", "simulator": "simulator", "compute-sanitizer": "compute-sanitizer"}

    def __init__(self, callback):
        self.callback, self.lines, self.lock = callback, {}, threading.Lock()

    def leg(self, who):
        if self.callback is None:
            return None

        def update(done, total, label):
            with self.lock:
                self.lines[who] = (done, total, label)
                if len(self.lines) == 1 or who == "compute-sanitizer":
                    text = label if len(self.lines) == 1 else f"{self.NAMES[who]}: {label}"
                else:
                    text = " · ".join(f"{self.NAMES[w]}: {lab}" for w, (_, _, lab) in self.lines.items()
                                      if w != "compute-sanitizer")
                with contextlib.suppress(Exception):  # a display that fails never fails the check
                    self.callback(done, total, text)
        return update


def student_file(name: str, file, ws: Path) -> Path:
    """The file to check: ``file``, else DIR/NAME.py. LabError (one line) when it is missing, a
    folder or not a Python file (.py)."""
    path = Path(file) if file else ws / f"{name}.py"
    what = f"--file {file}" if file else str(path)
    if path.is_symlink():  # never followed: a link to a solution or to another student's file once passed
        raise LabError(f"{what}: a symbolic link; check the file itself, not a link to it")
    if path.is_dir():
        raise LabError(f"{what}: a folder, not a file; give the .py file of your kernel")
    if not path.exists():
        hint_ = "" if file else f" (start it first: lab exercise start {name})"
        raise LabError(f"no such file: {path}{hint_}")
    if not path.is_file():
        raise LabError(f"{what}: not a regular file; give the .py file of your kernel")
    if path.suffix != ".py":
        raise LabError(f"{what}: not a Python file (.py); give the .py file of your kernel")
    return path


TIMEOUT_ENV = "LAB_EXERCISE_TIMEOUT"


def timeout_s(timeout=None, default: float = DEFAULT_TIMEOUT_S, env: str | None = TIMEOUT_ENV) -> float:
    """Seconds per hidden test: ``timeout``, else $LAB_EXERCISE_TIMEOUT, else ``default``. LabError
    naming the value when it is not a number of seconds > 0."""
    where, value = "--timeout", timeout
    if value is None and env and os.environ.get(env, "").strip():
        where, value = env, os.environ[env].strip()
    if value is None:
        return float(default)
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not (math.isfinite(seconds) and seconds > 0):
        raise LabError(f"{where}={value}: not a number of seconds > 0 (e.g. 30)")
    return seconds


_HIDDEN_CACHE: dict = {}


def hidden_names(names: list[str], seed: int) -> dict[str, list[str]]:
    """{exercise: its hidden tests' names} for ``seed``: the score's denominator when a file never
    listed them (it did not load). Made here, as the judge makes the cases (:func:`_run_child_once`)."""
    for n in dict.fromkeys(names):
        if (n, int(seed)) not in _HIDDEN_CACHE:
            cases = cached_cases(n, seed)[0]
            _HIDDEN_CACHE[(n, int(seed))] = [c.name for c in cases]
    return {n: _HIDDEN_CACHE[(n, int(seed))] for n in names}


SANITIZER_TOOLS = ("racecheck", "memcheck", "synccheck")
SANITIZER_SLOWDOWN = 10  # the tests' timeout grows by this under compute-sanitizer (racecheck is the slowest)
CLEAN = {"racecheck": "no shared-memory race found", "memcheck": "no out-of-bounds or misaligned access found",
         "synccheck": "no barrier error found"}


def _gpu_diagnoses(name, path, seed, timeout, skip=(), progress=None) -> tuple[list[dict], list[str]]:
    """(test entries, notes): the hidden tests run under compute-sanitizer's racecheck, memcheck and
    synccheck (line info on), each report in your file one failing entry; a note says which
    diagnoses were not available. ``skip``: tests not to run again (they timed out without the
    sanitizer: under it each would cost ``SANITIZER_SLOWDOWN`` timeouts); ``progress``: as
    :func:`run_child`'s, the tool named in the label."""
    from lab.core import sanitizer as san  # lazy: heavy for lab exercise list's start (glob)
    from lab.teach.messages import sanitizer_message  # lazy: heavy for lab exercise list's start (lab.teach.contained.syntax)

    exe = san.find_sanitizer()
    if exe is None:
        return [], ["not checked on the GPU: races (racecheck), out-of-bounds accesses (memcheck) and barrier "
                    f"errors (synccheck); {san.unavailable_reason()}"]
    mine = os.path.realpath(path)
    tests, notes = [], []
    for tool in SANITIZER_TOOLS:
        fd, log = tempfile.mkstemp(prefix=f"lab-{tool}-", suffix=".txt")
        os.close(fd)
        try:
            run_child(name, path, "gpu", seed, timeout * SANITIZER_SLOWDOWN,
                       wrap=san.command(exe, tool, log), skip=skip,
                       env={"LAB_LINEINFO": "1", "LAB_GPU_COMPILE": "0", "LAB_SANITIZER": tool},
                       progress=progress and (lambda d, t, label, tool=tool: progress(d, t, f"{tool}: {label}")))
            text = Path(log).read_text(errors="replace")
        finally:
            os.unlink(log)
        if not text.strip():
            notes.append(f"{tool}: compute-sanitizer wrote no report (it did not start?): not checked")
            continue
        found = san.parse_report(text, tool)
        reports = [r for r in found if _in_student_file(r, mine, name)]
        nowhere = [r for r in found if not r.file]  # no file:line at all (no line info): still a finding
        if reports:
            hazards = sum(r.count for r in reports)
            tests.append({"name": f"GPU {tool}", "passed": False, "message": sanitizer_message(reports[0], hazards)})
        elif nowhere:
            tests.append({"name": f"GPU {tool}", "passed": False,
                          "message": sanitizer_message(nowhere[0], sum(r.count for r in nowhere))
                          + "; compute-sanitizer named no file and line (kernel built without line info?)"})
        else:
            tests.append({"name": f"GPU {tool}", "passed": True, "message": f"{CLEAN[tool]} (compute-sanitizer {tool})"})
    return tests, notes


def _in_student_file(report, mine: str, name: str) -> bool:
    """Whether a sanitizer report is at a line of the student's file ``mine``. compute-sanitizer names
    a file as Numba's line info gives it: a full path, or only its base name (seen on the H100,
    for the checker's student module); a base name counts only in a kernel of the
    student's module (``student_NAME::``, :func:`lab.teach.contained.executor.load_student`), not in a lab kernel
    whose file happens to have the same name."""
    if not report.file:
        return False
    if os.path.isabs(report.file):
        return os.path.realpath(report.file) == mine
    return (os.path.basename(report.file) == os.path.basename(mine)
            and (report.kernel or "").startswith(f"student_{name}::"))
