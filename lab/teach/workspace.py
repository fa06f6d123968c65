"""``lab exercise``: the student's workspace, the exercise catalogue, and the checker's parent side.

The workspace (default ``./lab-exercises``, ``--dir`` or ``LAB_EXERCISES_DIR``) holds the started
scaffolds (``NAME.py``), their visible tests (``test_NAME.py``) and ``.lab-state.json`` (the
exercises started, the hints shown, and per exercise the last check's record). Hidden tests and
solutions stay inside the installed package.

:func:`check` runs the hidden tests' launches in a child process (:mod:`lab.teach.executor`), judges
their raw results here (:mod:`lab.teach.checker`, which never imports the student's code) and kills it
when one test runs longer than ``timeout`` seconds: a kernel that loops forever or waits at a
barrier that not all threads reach is reported, never waited for. On a GPU a second child runs
the same hidden tests in the simulator on the CPU (its traced diagnostics), and the verdict is
the union of the two (:mod:`lab.teach.union`). Nothing here prints.

The workspace records checks, not claims: a check of the workspace's own file stores whether it
passed, the sha256 of the file content it checked, the time and the backend, signed with an HMAC
whose key lives outside the workspace (:func:`_key`, the user's data folder). ``list`` says
"passed" only when that record verifies and the file still has that content; a hand-edited record
does not verify. (Re-running the check is the other way to know, and costs a check; the HMAC keeps
``list`` instant.) The key guards against editing the state file, not against the same user's
code reading the key: nothing a student's own account holds can; a teacher's grade
(:mod:`lab.teach.grade`) never reads a workspace, only the submitted files.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import exercises
from lab.core.errors import SCHEMA_VERSION, LabError

DEFAULT_DIR = "lab-exercises"
STATE = ".lab-state.json"
DEFAULT_TIMEOUT_S = 30.0
NOT_STARTED, IN_PROGRESS, PASSED = "not started", "in progress", "passed"


def workspace(directory=None) -> Path:
    return Path(directory or os.environ.get("LAB_EXERCISES_DIR") or DEFAULT_DIR)


def _state(ws: Path) -> dict:
    """The workspace's state; a missing or damaged state file counts as a fresh workspace."""
    try:
        state = json.loads((ws / STATE).read_text())
    except (OSError, ValueError):
        state = None
    state = state if isinstance(state, dict) else {}
    for key in ("status", "hints", "checks"):
        if not isinstance(state.get(key), dict):
            state[key] = {}
    return state


def _save(ws: Path, state: dict) -> None:
    with _writing(ws):
        ws.mkdir(parents=True, exist_ok=True)
        from lab.core.files import write_atomic

        write_atomic(ws / STATE, json.dumps(state, indent=1, sort_keys=True), "workspace state")


@contextlib.contextmanager
def _writing(ws: Path):
    """OSError while writing the workspace -> LabError naming it (one line, exit code 2)."""
    try:
        yield
    except OSError as e:
        where = e.filename or ws
        raise LabError(f"cannot write the exercise workspace {ws}: {e.strerror or e} ({where}); "
                       f"choose another with --dir or LAB_EXERCISES_DIR") from None


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
    ws = workspace(directory)
    state = _state(ws)
    key = _key(create=False)
    rows = []
    for n in exercises.names():
        ex = exercises.load(n)
        status, last = _status(ws, n, state, key)
        rows.append({"schema_version": SCHEMA_VERSION, "name": n, "title": ex.title, "difficulty": ex.difficulty,
                     "status": status, "last_check": last, "prerequisites": ex.prerequisites,
                     "mirrors": ex.mirrors})
    return rows


KEY_FILE = "workspace-key"  # 32 random bytes, mode 0600, in the user's data folder (never in a workspace)


def _key(create: bool = True) -> bytes | None:
    """The per-user HMAC key for check records: ``$LAB_DATA_DIR/workspace-key``, else platformdirs'
    user data folder for the lab; made on first use when ``create``. None when it cannot be read or
    made (then no record verifies and no exercise is listed as passed)."""
    base = os.environ.get("LAB_DATA_DIR")
    if not base:
        from platformdirs import user_data_dir

        base = user_data_dir("numba-gpu-lab", appauthor=False)
    path = Path(base) / KEY_FILE
    with contextlib.suppress(OSError):
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    if not create:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
    except FileExistsError:
        pass  # another check made it meanwhile
    except OSError:
        return None
    with contextlib.suppress(OSError):
        key = path.read_bytes()
        return key if len(key) >= 32 else None
    return None


def _mac(key: bytes, name: str, rec: dict) -> str:
    fields = [name, bool(rec.get("passed")), str(rec.get("sha256")), str(rec.get("at")), str(rec.get("backend"))]
    return hmac.new(key, json.dumps(fields).encode(), hashlib.sha256).hexdigest()


def _record(state: dict, name: str, passed: bool, digest: str, backend: str, key: bytes | None) -> None:
    """Store the check of DIR/NAME.py (content ``digest``) in ``state``, signed with ``key``."""
    rec = {"passed": bool(passed), "sha256": digest, "backend": backend,
           "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    rec["mac"] = _mac(key, name, rec) if key else ""
    state["checks"][name] = rec


def _status(ws: Path, name: str, state: dict, key: bytes | None) -> tuple[str, dict | None]:
    """(status, last_check) of exercise ``name`` (see :func:`listing`)."""
    rec = state["checks"].get(name)
    file = ws / f"{name}.py"
    started = file.is_file() or name in state["status"]
    if not isinstance(rec, dict):
        return (IN_PROGRESS if started else NOT_STARTED), None
    verified = bool(key) and isinstance(rec.get("mac"), str) and hmac.compare_digest(rec["mac"], _mac(key, name, rec))
    try:
        changed = _sha256(file.read_bytes()) != rec.get("sha256")
    except OSError:
        changed = True
    last = {"passed": bool(rec.get("passed")), "at": str(rec.get("at")), "backend": str(rec.get("backend")),
            "file_changed": changed, "verified": verified}
    if verified and not changed and last["passed"]:
        return PASSED, last
    return IN_PROGRESS, last


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def start(name: str, directory=None) -> tuple[Path, bool]:
    """Copy the scaffold to DIR/NAME.py and the visible test to DIR/test_NAME.py (never hidden tests
    or solutions); an existing NAME.py is kept (the student's work). Returns (the scaffold's path,
    whether an existing file was kept). LabError when the workspace cannot be written."""
    ex = get(name)
    ws = workspace(directory)
    dest = ws / f"{name}.py"
    kept = dest.exists()
    with _writing(ws):
        ws.mkdir(parents=True, exist_ok=True)
        if not kept:
            shutil.copyfile(ex.scaffold, dest)
        if ex.visible_test.exists():
            shutil.copyfile(ex.visible_test, ws / f"test_{name}.py")
    state = _state(ws)
    state["status"][name] = IN_PROGRESS  # started; "passed" comes from a check's record (listing)
    _save(ws, state)
    return dest, kept


def hint(name: str, directory=None, number: int | None = None) -> tuple[int, int, str, bool]:
    """The next hint (remembered in the workspace): (number, of how many, text, new). Once every
    hint was shown, ``new`` is False and the last one comes back (for the view to say there are
    no more). ``number`` (1..len(hints)): that hint, every time (``new`` True), remembered as shown
    (the next hint after it comes next); LabError naming the range when there is no such hint."""
    ex = get(name)
    ws = workspace(directory)
    state = _state(ws)
    shown = state["hints"].get(name, 0)
    if number is not None and not 1 <= number <= len(ex.hints):
        raise LabError(f"hint {number} of {name}: there is no such hint; choose 1 to {len(ex.hints)}")
    k = number if number is not None else min(shown + 1, len(ex.hints))
    state["hints"][name] = max(k, shown)
    if k > shown:
        _save(ws, state)
    return k, len(ex.hints), ex.hints[k - 1], number is not None or k > shown


def solution(name: str) -> str:
    """The reference solution's source."""
    return get(name).solution.read_text()


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
    from lab.core.session import choose
    from lab.teach import union

    ex = get(name)
    ws = workspace(directory)
    path = student_file(name, file, ws)
    timeout = timeout_s(timeout)
    chosen = choose(backend)  # the child process selects it (lab.teach.executor.main)
    seed = int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little")
    try:
        digest = _sha256(path.read_bytes())  # the content this check is about (the record's hash)
    except OSError as e:
        raise LabError(f"cannot read {path}: {e.strerror or e}") from None
    extra: dict = {}
    notes: list[str] = []
    from lab.teach.sandbox import Limits

    _STOP.clear()
    shown = _Progress(progress)
    contained = Limits()  # contained like a graded submission (lab.teach.sandbox): its own copy, namespaces, seccomp, limits
    try:
        if chosen == "gpu":
            sim_extra: dict = {}
            tests, sim_notes, gpu_tests = _with_simulator(ex.name, path, seed, timeout, bench, extra, notes, shown,
                                                          sandbox=contained, sim_extra=sim_extra)
            extra["violations"] = (extra.get("violations") or []) + [
                v for v in sim_extra.get("violations") or [] if v not in (extra.get("violations") or [])]
            notes += [n for n in sim_notes if n not in notes]
        else:
            tests = gpu_tests = _run_child(ex.name, path, chosen, seed, timeout, bench=bench, sandbox=contained,
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
    passed = bool(tests) and all(t["passed"] for t in tests)
    hidden = union.hidden_of(tests)
    if not hidden or any(t["name"] == "load" and not t["passed"] for t in tests):
        hidden = hidden_names([ex.name], seed)[ex.name]  # the file never listed them: ask the exercise
    tests_passed, tests_total = union.score(tests, hidden)
    if path.resolve() == (ws / f"{name}.py").resolve():
        state = _state(ws)
        # the state file's "status" says what the latest check found (read by people, never by list:
        # list goes by the signed record below)
        state["status"][name] = PASSED if passed else IN_PROGRESS
        key = _key()
        if key is None and passed:
            notes.append("lab exercise list cannot show this pass: the key that signs check records could not be "
                         "made (set LAB_DATA_DIR to a folder you can write)")
        _record(state, name, passed, digest, chosen, key)
        try:
            _save(ws, state)
        except LabError as e:  # the verdict stands; only its record is missing
            notes.append(f"not recorded in the workspace: {e}")
    result = {"schema_version": SCHEMA_VERSION, "exercise": ex.name, "passed": passed, "tests": tests,
              "backend": chosen, "seed": seed, "tests_passed": tests_passed, "tests_total": tests_total,
              "verdict_from": ["gpu", "simulator"] if chosen == "gpu" else ["simulator"]}
    if notes:
        result["notes"] = notes
    if bench:  # nothing is benchmarked before every test passed, on both backends
        result["bench"] = extra.get("bench") if passed else None
    from lab.core.text import printable_tree

    return printable_tree(result)  # the child's messages shown, never obeyed by a terminal


SIM_LEG_ENV = {"NUMBA_ENABLE_CUDASIM": "1", "LAB_GPU_COMPILE": "0"}  # the GPU child compiles for real


def _with_simulator(name, path, seed, timeout, bench, extra, notes, shown, sandbox=None, sim_extra=None):
    """The hidden tests on the GPU (this thread) and, at the same time, in the simulator on the CPU
    (a second child, ``SIM_LEG_ENV``; the same ``sandbox``): (merged tests, the simulator's notes,
    the GPU's own tests).
    ``sim_extra`` (a dict) receives the simulator child's ``extra`` (violations, exit code)."""
    from lab.teach import union

    sim: dict = {}
    sim_notes: list[str] = []
    sim_extra = {} if sim_extra is None else sim_extra

    def simulator_leg():
        try:
            sim["tests"] = _run_child(name, path, "simulator", seed, timeout, env=SIM_LEG_ENV, sandbox=sandbox,
                                      extra=sim_extra, notes=sim_notes, progress=shown.leg("simulator"))
        except Exception as e:  # noqa: BLE001 - the lab's own failure: the GPU's verdict stands, with a note
            sim["error"] = f"{type(e).__name__}: {e}"

    leg = threading.Thread(target=simulator_leg, name=f"lab-sim-{name}", daemon=True)
    leg.start()
    gpu = _run_child(name, path, "gpu", seed, timeout, bench=bench, sandbox=sandbox, extra=extra, notes=notes,
                     progress=shown.leg("gpu"))
    leg.join()
    if "error" in sim:
        sim_notes.append(f"the simulator's traced diagnostics could not run ({sim['error']}): the verdict is "
                         f"the GPU's alone")
        return gpu, sim_notes, gpu
    return union.merge(gpu, sim["tests"]), sim_notes, gpu


class _Progress:
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
            cases = _cases(n, seed)[0]
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
    :func:`_run_child`'s, the tool named in the label."""
    from lab.core import sanitizer as san
    from lab.teach.checker import sanitizer_message

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
            _run_child(name, path, "gpu", seed, timeout * SANITIZER_SLOWDOWN,
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
    2026-11-23, for the checker's student module); a base name counts only in a kernel of the
    student's module (``student_NAME::``, :func:`lab.teach.executor.load_student`), not in a lab kernel
    whose file happens to have the same name."""
    if not report.file:
        return False
    if os.path.isabs(report.file):
        return os.path.realpath(report.file) == mine
    return (os.path.basename(report.file) == os.path.basename(mine)
            and (report.kernel or "").startswith(f"student_{name}::"))


BENCH_TIMEOUT_S = 120.0  # the benchmark's own limit, whatever the per-test timeout
RETRY_TIMEOUT_S = 5.0  # per-test limit for the tests left after one timed out (simulator)
RETRY_TIMEOUT_GPU_S = 3.0  # the same on a GPU, where a test takes milliseconds (and a launch's JIT compile)
MAX_TIMEOUTS = 2  # then the rest is "not run": a second hang means every test hangs, fix that first
KILL_WAIT_S = 1.0  # a killed child is waited for this long, then reaped in the background (a GPU context
# with a kernel that never ends can take seconds to tear down: --timeout holds on a GPU too)
COMPILE_ALLOWANCE_S = 60.0  # the offline GPU compile (a child of the child) gets at least this long
PROGRESS_CAP = 16 << 20  # bytes of the child's progress file read (a child that writes more is not read further)


def _run_child(name, path, backend, seed, timeout, wrap=(), env=None, bench=False, sandbox=None,
               extra=None, notes=None, skip=(), progress=None, compiled=None) -> list[dict]:
    """The hidden tests in a child process; ``wrap``: a command to run it under (compute-sanitizer ...),
    ``env``: extra environment variables; ``bench``: then the benchmark (:mod:`lab.teach.bench`) once
    every test passed; ``sandbox``: a :class:`lab.teach.sandbox.Limits` to run it contained (a private
    folder, rlimits, Landlock, an audit hook: :mod:`lab.teach.sandbox`). ``extra`` (a dict), when
    given, receives "bench" (the benchmark's document, or None), "violations" (what the sandbox
    stopped), "returncode" and "notes"; ``notes``: a list that gets the child's notes (a check that
    was skipped). When a test times out, the child is stopped and a fresh one runs the tests not yet
    run, each with a short limit (``RETRY_TIMEOUT_S``, or ``timeout`` when smaller): a test that
    hangs costs one timeout and the others still get a verdict (after ``MAX_TIMEOUTS`` the rest is
    "not run"). ``skip``: names of tests not to run at all; ``progress(done, total, label)``: called
    as tests start and end ("running test 3/7: n=1000", "n=1000: timed out after 10 s").

    Contained in the simulator, the offline GPU compile runs in a contained child of its own
    (:mod:`lab.teach.compile_sandbox`, beside the tests' child), whose "ok" this process believes
    only with the PTX it checks; ``compiled``: its result already made (a Future of it: ``lab
    exercise grade`` compiles a student's files in one child)."""
    tests, planned, limit, first = [], None, timeout, list(skip)
    pre = _start_compile(name, path, backend, seed, env, sandbox, first, compiled)
    if pre is not None:
        first.append(COMPILE_TEST)
    skip = list(first)
    retry_s = RETRY_TIMEOUT_GPU_S if backend == "gpu" and not wrap else RETRY_TIMEOUT_S
    counts = {"planned": None}

    def on_event(kind, value):
        if progress is None:
            return
        if kind == "loaded" and counts["planned"] is None:
            counts["planned"] = len(value)
            return
        total = counts["planned"] or 0
        done = len(tests) + len(counts.get("got", []))
        if kind == "start":
            label = ("loading your file" if value == "load" else
                     f"running test {done + 1}/{total}: {value}" if total else f"running {value}")
            progress(done, total, label)
        elif kind == "result":
            counts.setdefault("got", []).append(value["name"])
            if not value["passed"] and value["message"].startswith("timed out"):
                said = value["message"].split(" while ")[0].split(" (")[0]  # "timed out after 10 s"
                progress(done + 1, total, f"{value['name']}: {said} (stopped)")

    while True:
        counts["got"] = []
        got, listed, timed_out = _run_child_once(name, path, backend, seed, limit, wrap, env, bench, sandbox,
                                                 extra, notes, skip, retry=bool(tests), on_event=on_event)
        planned = listed if planned is None else planned
        before = {t["name"] for t in tests}
        tests += got
        done = {t["name"] for t in tests}
        left = [n for n in planned if n not in done]
        progressed = any(n in planned and n not in before for n in done)
        timeouts = sum(1 for t in tests if t["message"].startswith("timed out"))
        if not (timed_out and left and progressed) or timeouts >= MAX_TIMEOUTS or _STOP.is_set():
            break
        skip, limit = sorted(set(first) | {n for n in done if n in planned}), min(timeout, retry_s)
    for n in planned:
        if n not in done:
            tests.append({"name": n, "passed": False, "message": "not run (an earlier test was stopped)"})
    if pre is not None:
        _add_compile(pre, tests, notes, extra)
    if extra is not None and not (tests and all(t["passed"] for t in tests)):
        extra["bench"] = None  # a benchmark counts only for a kernel that passed every test (this process's verdicts)
    return tests


COMPILE_TEST = "compiles for a GPU"  # lab.teach.checker.COMPILE_TEST


def _start_compile(name, path, backend, seed, env, sandbox, skip, compiled):
    """The contained offline compile of ``path`` for the simulator's contained check (None when it
    does not apply): an object whose ``result()`` is :func:`lab.teach.compile_sandbox.run`'s result."""
    from lab.teach import gpu_compile

    on = (env or {}).get(gpu_compile.ENV, os.environ.get(gpu_compile.ENV, "1")) not in ("0", "", "no", "off")
    if sandbox is None or backend != "simulator" or not on or COMPILE_TEST in skip:
        return None
    if compiled is not None:
        return compiled
    from concurrent.futures import Future

    fut: Future = Future()

    def work():
        try:
            fut.set_result(compile_files([(name, path)], seed, sandbox)[0])
        except BaseException as e:  # noqa: BLE001 - the lab's own failure: a note, not the student's
            fut.set_result({"skipped": f"could not run ({type(e).__name__}: {e})", "broken": True})

    threading.Thread(target=work, name=f"lab-compile-{name}", daemon=True).start()
    return fut


def compile_files(pairs, seed, sandbox) -> list[dict]:
    """The contained offline GPU compile (:func:`lab.teach.compile_sandbox.run`) of each (exercise,
    file) of ``pairs`` in one child, with the argument types of the exercise's hidden tests."""
    from lab.teach import checker, compile_sandbox

    items = [(str(path), exercises.load(n).kernel, checker.compile_sigs(_cases(n, seed)[0])) for n, path in pairs]
    return compile_sandbox.run(items, sandbox)


def _add_compile(pre, tests, notes, extra) -> None:
    """The compile's entry first in ``tests`` (a skip: a note), unless the file did not load."""
    from lab.teach import checker

    if any(t["name"] == "load" and not t["passed"] for t in tests):
        return
    r = pre.result()
    entry = checker.compile_entry(r, "simulator")
    if isinstance(entry, str):
        for where in (notes, None if extra is None else extra.setdefault("notes", [])):
            if where is not None and entry not in where:
                where.append(entry)
        return
    tests.insert(0, entry)


_CASES: dict = {}
_CASES_LOCK = threading.Lock()


def _cases(name: str, seed: int):
    """(the hidden cases of exercise ``name`` for ``seed``, the state of the seed's generator after
    them), made once per process: every student of a grade gets the same inputs (one seed), so the
    float64 references are computed once per exercise, not once per submission."""
    import numpy as np

    from lab.teach.checker import hidden_cases

    key = (name, int(seed))
    with _CASES_LOCK:
        if key not in _CASES:
            if len(_CASES) > 64:
                _CASES.clear()
            rng = np.random.default_rng(int(seed))
            _CASES[key] = (hidden_cases(exercises.load(name), rng), rng.bit_generator.state)
        return _CASES[key]


def _run_child_once(name, path, backend, seed, timeout, wrap, env, bench, sandbox, extra, notes, skip,
                    retry=False, on_event=None):
    """One child process (:mod:`lab.teach.executor`, which runs the student's code): (test entries,
    the planned test names, whether a test timed out). This process makes the tests and judges each
    one from the raw results the child left in its folder (:class:`lab.teach.checker.Judge`); the
    child's progress lines only drive the clock. ``on_event(kind, value)``: ("start", test name),
    ("loaded", planned names), ("result", entry)."""
    import numpy as np

    from lab.core.session import child_env
    from lab.teach import checker, gpu_compile

    env = child_env(PYTHONUNBUFFERED="1", **(env or {}))
    ex = exercises.load(name)
    cases, state = _cases(name, seed)
    rng = np.random.default_rng()
    rng.bit_generator.state = state  # as if the cases were just drawn from the seed's generator
    do_compile = env.get(gpu_compile.ENV, "1") not in ("0", "", "no", "off") and checker.COMPILE_TEST not in skip
    request, inputs = checker.make_request(ex, cases, backend, do_compile, rng)
    if bench:  # the bench's problem, picked here: the child reads no hidden test and no solution
        from lab.teach import bench as B

        bench_case, bench_note = B.plan(ex, request["bench_seed"], backend == "simulator")
        checker.add_bench(request, inputs, bench_case, backend)
    if sandbox is not None:
        from lab.teach import sandbox as S

        private, path, env = S.prepare(path, env)
        module = ["lab.teach.sandbox", sandbox.to_arg()]
    else:
        private = tempfile.mkdtemp(prefix="lab-check-")
        module = ["lab.teach.bench" if bench else "lab.teach.executor"]
    progress = os.path.join(private, ".lab-progress.jsonl")
    open(progress, "w").close()
    channel_in, channel_out = checker.write_request(private, request, inputs)
    judge = checker.Judge(ex, cases, backend, str(path), private, do_compile)
    errf = tempfile.TemporaryFile()
    # the fourth argument once was the seed: no seed reaches the student's process ("0": the sandbox's
    # precompile draws its argument types from it, which do not depend on the seed)
    cmd = [*wrap, sys.executable, "-m", *module, name, str(Path(path).resolve()), backend, "0", progress,
           json.dumps(list(skip)), *(["--bench"] if bench else [])]
    wrap_notes: list = []
    if sandbox is not None:  # bubblewrap around it where it works (lab.core.isolation)
        cmd, wrap_notes = S.wrap(cmd, private, path, progress, backend, bench, env, channel_in, channel_out)
        for note in wrap_notes:
            if notes is not None and note not in notes:
                notes.append(note)
    try:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf,
                                start_new_session=True, cwd=private)
    except BaseException:
        judge.close()
        shutil.rmtree(private, ignore_errors=True)
        errf.close()
        raise
    _track(proc)  # stop_all (Ctrl-C) kills it
    bench_doc, bench_raw, violations, child_notes, ready, loaded = None, None, [], list(wrap_notes), False, False
    startup = 60.0  # importing numba (and a GPU context) before the first test starts
    tests, current, since, seen_bytes, timed_out = [], None, time.monotonic(), 0, False
    judged: set = set()
    skipped: set = set()
    load_done = False
    todo = [n for n in judge.planned if n not in skip]
    # the whole child's limit: start-up, the compile, the bench and every test's own, whatever it writes
    started, overall = time.monotonic(), startup + COMPILE_ALLOWANCE_S + BENCH_TIMEOUT_S + timeout * (len(todo) + 1)

    def take(n):  # judge test n from its raw result, once
        if n in judged or n not in todo:
            return
        r = judge.test(n)
        if r is not None:  # (no result yet: a "done" line is only the child's word)
            judged.add(n)
            tests.append(r)
            on_event and on_event("result", r)
        elif n == checker.COMPILE_TEST and judge.has(n):  # skipped (no NVVM ...): a note, not a test
            judged.add(n)
            skipped.add(n)

    try:
        while True:
            if _STOP.is_set():  # Ctrl-C: stop_all killed it; a dying GPU process is not waited for
                break
            done = proc.poll() is not None
            try:
                data = checker.read_child_file(private, ".lab-progress.jsonl", PROGRESS_CAP, judge.dir_fd) or b""
            except checker.ResultError as e:  # replaced by a link or a FIFO, or a flood: stop, and say so
                violations.append(f"tampered with the grader's progress file ({e})")
                _kill(proc)
                break
            for raw_line in data[seen_bytes:].splitlines(keepends=True):
                if not raw_line.endswith(b"\n"):
                    break  # a half-written line: read it next time
                seen_bytes += len(raw_line)
                try:
                    obj = json.loads(raw_line.decode(errors="replace"))
                except (ValueError, RecursionError):
                    continue
                if not isinstance(obj, dict):
                    continue
                if "start" in obj:
                    current, since = str(obj["start"]), time.monotonic()
                    on_event and on_event("start", current)
                elif "loaded" in obj:
                    loaded = True
                    on_event and on_event("loaded", [n for n in todo if n in obj["loaded"]] if isinstance(obj["loaded"], list) else list(todo))
                elif "done" in obj:  # a result may be there: judge it now (a bench waits for the verdicts)
                    load_done = load_done or obj["done"] == "load"
                    take(str(obj["done"]))
                    current, since = None, time.monotonic()
                elif "bench" in obj:  # the clock restarts: the child now only exits (a 10+ s GPU bench
                    # once counted against the per-test limit, killing the child as "loading your file")
                    bench_raw, current, since = obj["bench"], None, time.monotonic()  # judged below
                elif "violation" in obj:
                    violations.append(str(obj["violation"]))
                elif "ready" in obj:  # the sandbox loaded Numba and the lab: no start-up allowance from here
                    ready, since = True, time.monotonic()
                elif "note" in obj:
                    child_notes.append(str(obj["note"]))
                    if notes is not None and obj["note"] not in notes:
                        notes.append(str(obj["note"]))
            go_file = os.path.join(private, checker.BENCH_GO)
            if bench and (load_done or all(n in judged for n in todo)) and not os.path.getsize(go_file):
                # the bench runs only once every test passed, by this process's verdicts (written in
                # place: under bubblewrap the child sees this very file, bound into its folder)
                go = all(t["passed"] for t in tests) and len(tests) == len(todo)
                with open(go_file, "w") as f:
                    f.write("1" if go else "0")
            if done:
                break
            limit = timeout + (startup if not ready and (current == "load" or current is None and not tests) else 0)
            if current == "compiles for a GPU":
                limit = max(limit, COMPILE_ALLOWANCE_S)
            if current == "bench":  # three kernels timed (each up to the stop rule's 3 s), the copy bandwidth measured
                limit = max(limit, BENCH_TIMEOUT_S)
            over = time.monotonic() - started > overall  # progress lines alone cannot keep a child alive
            if time.monotonic() - since > limit or over:
                _kill(proc)
                if current == "bench":
                    bench_doc, current = _bench_failed(f"the benchmark timed out after {limit:.0f} s"), None
                    break
                limit = overall if over else limit
                timed_out = True
                what = "loading your file" if current in (None, "load") else "this test"
                shorter = " (a shorter limit: an earlier test timed out)" if retry else ""
                name_ = current if current in todo else "load"
                tests.append({"name": name_, "passed": False,
                              "message": f"timed out after {limit:.0f} s{shorter} while running {what}: an "
                                         f"infinite loop, or threads waiting at a cuda.syncthreads() that not all "
                                         f"threads of the block reach? (stopped by the checker)"})
                judged.add(name_)
                on_event and on_event("result", tests[-1])
                break
            time.sleep(0.02)
        if proc.poll() is None:
            _kill(proc)
        # whatever the child left (its progress lines aside): the file that did not load, or each test's result
        failed_load = judge.load_failure()
        if failed_load is not None and not tests:
            tests.append(failed_load)
        elif failed_load is None:
            for n in todo:
                if judge.has(n):
                    loaded = True
                take(n)
        for n in judge.notes:
            child_notes.append(n)
            if notes is not None and n not in notes:
                notes.append(n)
    finally:
        _untrack(proc)
        if proc.poll() is None:
            if not getattr(proc, "lab_killed", False):
                _kill(proc)
            else:  # killed (a timeout, Ctrl-C) and still dying, a GPU context tearing down: reaped in the background
                threading.Thread(target=proc.wait, name="lab-reap", daemon=True).start()
        elif _kill_group(proc):  # the child exited but left processes behind: it forked
            violations.append("left processes running after it exited (it forked); they were killed")
        judge.close()
        shutil.rmtree(private, ignore_errors=True)
    planned = [n for n in todo if n not in skipped] if loaded else []
    if bench_raw is not None and bench_doc is None:  # the pass line from the raw numbers, here
        from lab.teach import bench as B

        bench_doc = B.judge(ex, bench_case, backend, bench_raw,
                            lambda: B.reference(name, backend, request["bench_seed"]), bench_note)
    if current == "bench":  # the process died while benchmarking
        bench_doc, current = _bench_failed(f"the benchmark's process died (exit code {proc.returncode})"), None
    if current in todo and not any(t["name"] == current for t in tests):
        errf.seek(0)
        last = [ln for ln in errf.read().decode(errors="replace").splitlines() if ln.strip()]
        tests.append({"name": current, "passed": False,
                      "message": f"the checker's process died during this test (exit code {proc.returncode})"
                                 + (f": {last[-1].strip()}" if last else "")})
    elif not tests and not planned:
        errf.seek(0)
        last = [ln for ln in errf.read().decode(errors="replace").splitlines() if ln.strip()]
        tests.append({"name": "load", "passed": False,
                      "message": "the checker could not start" + (f": {last[-1].strip()}" if last else "")})
    errf.close()
    if extra is not None:  # a retry's child adds to what the first one stopped
        extra.update(bench=bench_doc if bench_doc is not None else extra.get("bench"),
                     violations=extra.get("violations", []) + violations, returncode=proc.returncode,
                     notes=extra.get("notes", []) + child_notes)
    return tests, planned, timed_out


def _bench_failed(message: str) -> dict:
    """The bench document of a benchmark that never reported (timed out, or its process died)."""
    return {"student_ms": None, "reference_ms": None, "pct_of_reference": None, "pct_of_peak": None,
            "passed": False, "message": message, "notes": []}


def _kill(proc):
    proc.lab_killed = True
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.wait(timeout=KILL_WAIT_S)
    except subprocess.TimeoutExpired:  # dying slowly (a GPU context tearing down): reaped in the background
        threading.Thread(target=proc.wait, name="lab-reap", daemon=True).start()


_LIVE: set = set()  # the children running now (the checker's, the simulator's, the sanitizer's)
_LIVE_LOCK = threading.Lock()
_STOP = threading.Event()  # set by stop_all: children started from now on are killed at once


def _track(proc) -> None:
    with _LIVE_LOCK:
        _LIVE.add(proc)
        stopping = _STOP.is_set()
    if stopping:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _untrack(proc) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def stop_all() -> None:
    """Kill every checker child running now (their process groups) and any started until the next
    :func:`check` or grade: Ctrl-C stops at once, not after the running tests' timeouts."""
    _STOP.set()
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        proc.lab_killed = True  # reaped by whoever waits for it, not waited for again
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _kill_group(proc) -> bool:
    """Kill what is left of the (exited) child's process group; True when something was left."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


# --- Instructors --------------------------------------------------------------------------------------
_META = '''"""{name}: metadata, statement and hints (shown to students)."""
TITLE = "{title}"
DIFFICULTY = 1  # 1 (first steps) .. 5
PREREQUISITES = ["vecadd"]
MIRRORS = "kernels/vecadd.py"  # the kernels/ module this exercise mirrors, or "-"
KERNEL = "{name}_kernel"        # the kernel's name in the student's file
LAUNCH = None                   # or "launch" when the student writes the launch math too
LESSON = "one_element_per_thread"  # the mapping graded (lab.teach.lessons.LESSONS; a tuple for several, None: values only)
PASS_PCT_OF_REFERENCE = 70      # lab exercise check --bench: at least this % of the reference's speed
PEAK = "copy"                   # or "fp32" for a compute-bound kernel (then give bench.py a flops(case))
STATEMENT = """
TODO: what to compute (shapes, dtypes), the launch configuration, the pitfalls.
"""
HINTS = [
    "TODO: a first nudge",
    "TODO: a stronger one",
    "TODO: almost the answer",
]
'''

_HIDDEN = '''"""{name}: the hidden tests (never copied to the student's workspace)."""
import numpy as np

from exercises import Case, randn

THREADS = 32


def cases(rng):
    """Fresh random inputs; sizes that are not multiples of the block, one element, several blocks."""
    out = []
    for n in (1, 45, 3 * THREADS + 7):
        x = randn(rng, n)
        ref = 2.0 * x.astype(np.float64)  # TODO: the float64 reference
        out.append(Case(f"n={{n}}", [x], [((n,), np.float32)], [ref], [1e-6 * (1 + np.abs(ref))],
                        grid=(n + THREADS - 1) // THREADS, block=THREADS))
    return out
'''

_KERNEL = '''"""{name}: TODO one line saying what the kernel computes."""
from numba import cuda


@cuda.jit
def {name}_kernel(x, out):
    """out[i] = 2 * x[i]; thread i = cuda.grid(1) computes element i. TODO: describe yours."""
    i = cuda.grid(1)
    {body}
'''


def new(name: str, title: str = "TODO title") -> Path:
    """Scaffold a new exercise exercises/NAME/ (meta, hidden tests, scaffold, solution, visible test)
    to be filled in by an instructor; LabError if the name is taken or not an identifier."""
    if not name.isidentifier() or name.startswith("_"):
        raise LabError(f"exercise name {name!r} must be a Python identifier (letters, digits, _)")
    d = exercises.HERE / name
    if d.exists():
        raise LabError(f"exercise {name!r} already exists at {d}")
    try:
        _write_new(d, name, title)
    except OSError as e:
        raise LabError(f"cannot create exercise {name!r} at {d}: {e.strerror or e}") from None
    return d


def _write_new(d: Path, name: str, title: str) -> None:
    d.mkdir()
    (d / "__init__.py").write_text("")
    (d / "meta.py").write_text(_META.format(name=name, title=title))
    (d / "hidden.py").write_text(_HIDDEN.format(name=name))
    (d / "solution.py").write_text(_KERNEL.format(name=name, body="if i < out.shape[0]:\n        out[i] = 2 * x[i]"))
    (d / "scaffold.py").write_text(_KERNEL.format(name=name, body="# TODO: roughly 2 lines"))
    (d / "test_visible.py").write_text(
        f'"""Visible example for {name}: python test_{name}.py"""\n'
        "import numpy as np\n\n"
        "from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)\n"
        f"from {name} import {name}_kernel\n\n\n"
        "def test_example():\n"
        "    x = np.arange(1, 6, dtype=np.float32)\n"
        "    out = np.zeros_like(x)\n"
        f"    {name}_kernel[1, 32](x, out)\n"
        "    np.testing.assert_allclose(out, 2 * x)\n\n\n"
        'if __name__ == "__main__":\n    test_example()\n    print("ok")\n')
