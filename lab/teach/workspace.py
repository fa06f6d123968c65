"""``lab exercise``: the student's workspace, the exercise catalogue, and the checker's parent side.

The workspace (default ``./lab-exercises``, ``--dir`` or ``LAB_EXERCISES_DIR``) holds the started
scaffolds (``NAME.py``), their visible tests (``test_NAME.py``) and ``.lab-state.json`` (status and
hints shown, per exercise). Hidden tests and solutions stay inside the installed package.

:func:`check` runs the hidden tests in a child process (:mod:`lab.teach.checker`) and kills it
when one test runs longer than ``timeout`` seconds: a kernel that loops forever or waits at a
barrier that not all threads reach is reported, never waited for. Nothing here prints.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
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
    for key in ("status", "hints"):
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
    """[{schema_version, name, title, difficulty, status, prerequisites, mirrors}] in the order of the
    path (a list carries no version of its own: each item does)."""
    st = _state(workspace(directory))["status"]
    rows = []
    for n in exercises.names():
        ex = exercises.load(n)
        rows.append({"schema_version": SCHEMA_VERSION, "name": n, "title": ex.title, "difficulty": ex.difficulty,
                     "status": st.get(n, NOT_STARTED), "prerequisites": ex.prerequisites,
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
    with _writing(ws):
        ws.mkdir(parents=True, exist_ok=True)
        if not kept:
            shutil.copyfile(ex.scaffold, dest)
        if ex.visible_test.exists():
            shutil.copyfile(ex.visible_test, ws / f"test_{name}.py")
    state = _state(ws)
    if state["status"].get(name) != PASSED:
        state["status"][name] = IN_PROGRESS
    _save(ws, state)
    return dest, kept


def hint(name: str, directory=None) -> tuple[int, int, str, bool]:
    """The next hint (remembered in the workspace): (number, of how many, text, new). Once every
    hint was shown, ``new`` is False and the last one comes back (for the view to say there are
    no more)."""
    ex = get(name)
    ws = workspace(directory)
    state = _state(ws)
    shown = state["hints"].get(name, 0)
    k = min(shown + 1, len(ex.hints))
    state["hints"][name] = k
    if k != shown:
        _save(ws, state)
    return k, len(ex.hints), ex.hints[k - 1], k > shown


def solution(name: str) -> str:
    """The reference solution's source."""
    return get(name).solution.read_text()


def statement(name: str) -> str:
    return get(name).statement


def check(name: str, file=None, directory=None, backend: str = "auto", timeout: float | None = None,
          seed: int | None = None, bench: bool = False) -> dict:
    """Run NAME's hidden tests on ``file`` (default: DIR/NAME.py) in a child process.

    backend: "auto" (a GPU when one is usable, else the simulator), "sim" or "gpu".
    timeout: seconds per test (default 30, or LAB_EXERCISE_TIMEOUT).
    Returns {"schema_version", "exercise", "passed", "tests": [{"name", "passed", "message"}], "backend", "seed"}
    (+ "notes"; with ``bench``, "bench": :mod:`lab.teach.bench`'s document, or null when a test failed).
    With backend "gpu" (``--gpu``) the tests also run under compute-sanitizer (racecheck,
    memcheck, synccheck: one entry each, "GPU racecheck" ...), or a note says these were not available.
    LabError for an unknown exercise, a missing file or an unusable backend.
    """
    from lab.core.session import choose

    ex = get(name)
    ws = workspace(directory)
    path = Path(file) if file else ws / f"{name}.py"
    if not path.is_file():
        hint_ = "" if file else f" (start it first: lab exercise start {name})"
        raise LabError(f"no such file: {path}{hint_}")
    chosen = choose(backend)  # the child process selects it (lab.teach.checker.main)
    timeout = float(timeout or os.environ.get("LAB_EXERCISE_TIMEOUT") or DEFAULT_TIMEOUT_S)
    seed = int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little")
    extra: dict = {}
    notes: list[str] = []
    tests = _run_child(ex.name, path, chosen, seed, timeout, bench=bench, extra=extra, notes=notes)
    if backend == "gpu":  # --gpu: the hidden tests once more under compute-sanitizer, reports at your lines
        san_tests, san_notes = _gpu_diagnoses(ex.name, path, seed, timeout)
        tests += san_tests
        notes += san_notes
    passed = bool(tests) and all(t["passed"] for t in tests)
    if not file or path.resolve() == (ws / f"{name}.py").resolve():
        state = _state(ws)
        if passed or state["status"].get(name) != PASSED:
            state["status"][name] = PASSED if passed else IN_PROGRESS
        _save(ws, state)
    result = {"schema_version": SCHEMA_VERSION, "exercise": ex.name, "passed": passed, "tests": tests,
              "backend": chosen, "seed": seed}
    if notes:
        result["notes"] = notes
    if bench:
        result["bench"] = extra.get("bench")
    return result


SANITIZER_TOOLS = ("racecheck", "memcheck", "synccheck")
SANITIZER_SLOWDOWN = 10  # the tests' timeout grows by this under compute-sanitizer (racecheck is the slowest)
CLEAN = {"racecheck": "no shared-memory race found", "memcheck": "no out-of-bounds or misaligned access found",
         "synccheck": "no barrier error found"}


def _gpu_diagnoses(name, path, seed, timeout) -> tuple[list[dict], list[str]]:
    """(test entries, notes): the hidden tests run under compute-sanitizer's racecheck, memcheck and
    synccheck (line info on), each report in your file one failing entry; a note says which
    diagnoses were not available."""
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
                       wrap=san.command(exe, tool, log),
                       env={"LAB_LINEINFO": "1", "LAB_GPU_COMPILE": "0", "LAB_SANITIZER": tool})
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
    student's module (``student_NAME::``, :func:`lab.teach.checker.load`), not in a lab kernel
    whose file happens to have the same name."""
    if not report.file:
        return False
    if os.path.isabs(report.file):
        return os.path.realpath(report.file) == mine
    return (os.path.basename(report.file) == os.path.basename(mine)
            and (report.kernel or "").startswith(f"student_{name}::"))


BENCH_TIMEOUT_S = 120.0  # the benchmark's own limit, whatever the per-test timeout
RETRY_TIMEOUT_S = 5.0  # per-test limit for the tests left after one timed out
MAX_TIMEOUTS = 3  # then the rest is "not run": every test hangs, fix that first
COMPILE_ALLOWANCE_S = 60.0  # the offline GPU compile (a child of the child) gets at least this long


def _run_child(name, path, backend, seed, timeout, wrap=(), env=None, bench=False, sandbox=None,
               extra=None, notes=None) -> list[dict]:
    """The hidden tests in a child process; ``wrap``: a command to run it under (compute-sanitizer ...),
    ``env``: extra environment variables; ``bench``: then the benchmark (:mod:`lab.teach.bench`) once
    every test passed; ``sandbox``: a :class:`lab.teach.sandbox.Limits` to run it contained (a private
    folder, rlimits, Landlock, an audit hook: :mod:`lab.teach.sandbox`). ``extra`` (a dict), when
    given, receives "bench" (the benchmark's document, or None), "violations" (what the sandbox
    stopped), "returncode" and "notes"; ``notes``: a list that gets the child's notes (a check that
    was skipped). When a test times out, the child is stopped and a fresh one runs the tests not yet
    run, each with a short limit (``RETRY_TIMEOUT_S``, or ``timeout`` when smaller): a test that
    hangs costs one timeout and the others still get a verdict (after ``MAX_TIMEOUTS`` the rest is
    "not run")."""
    tests, planned, skip, limit = [], None, [], timeout
    while True:
        got, listed, timed_out = _run_child_once(name, path, backend, seed, limit, wrap, env, bench, sandbox,
                                                 extra, notes, skip, retry=bool(skip))
        planned = listed if planned is None else planned
        before = {t["name"] for t in tests}
        tests += got
        done = {t["name"] for t in tests}
        left = [n for n in planned if n not in done]
        progressed = any(n in planned and n not in before for n in done)
        timeouts = sum(1 for t in tests if t["message"].startswith("timed out"))
        if not (timed_out and left and progressed) or timeouts >= MAX_TIMEOUTS:
            break
        skip, limit = sorted(n for n in done if n in planned), min(timeout, RETRY_TIMEOUT_S)
    for n in planned:
        if n not in done:
            tests.append({"name": n, "passed": False, "message": "not run (an earlier test was stopped)"})
    return tests


def _run_child_once(name, path, backend, seed, timeout, wrap, env, bench, sandbox, extra, notes, skip,
                    retry=False):
    """One child process: (test entries, the planned test names, whether a test timed out)."""
    from lab.core.session import child_env

    env = child_env(PYTHONUNBUFFERED="1", **(env or {}))
    private = None
    if sandbox is not None:
        from lab.teach import sandbox as S

        private, path, env = S.prepare(path, env)
        progress = os.path.join(private, ".lab-progress.jsonl")
        open(progress, "w").close()
        module = ["lab.teach.sandbox", sandbox.to_arg()]
    else:
        fd, progress = tempfile.mkstemp(prefix="lab-check-", suffix=".jsonl")
        os.close(fd)
        module = ["lab.teach.bench" if bench else "lab.teach.checker"]
    errf = tempfile.TemporaryFile()
    cmd = [*wrap, sys.executable, "-m", *module, name, str(path.resolve()), backend, str(seed), progress,
           json.dumps(list(skip)), *(["--bench"] if bench else [])]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf,
                            start_new_session=True, cwd=private)
    bench_doc, violations, child_notes, ready = None, [], [], False
    startup = 60.0  # importing numba (and a GPU context) before the first test starts
    tests, current, since, lines_seen, planned, timed_out = [], None, time.monotonic(), 0, [], False
    try:
        while True:
            done = proc.poll() is not None
            lines = Path(progress).read_text().splitlines()
            for line in lines[lines_seen:]:
                try:
                    obj = json.loads(line)
                except ValueError:
                    break  # a half-written line: read it next time
                lines_seen += 1
                if "start" in obj:
                    current, since = obj["start"], time.monotonic()
                elif "loaded" in obj:
                    planned = obj["loaded"]
                elif "bench" in obj:  # the clock restarts: the child now only exits (a 10+ s GPU bench
                    # once counted against the per-test limit, killing the child as "loading your file")
                    bench_doc, current, since = obj["bench"], None, time.monotonic()
                elif "violation" in obj:
                    violations.append(obj["violation"])
                elif "ready" in obj:  # the sandbox loaded Numba and the lab: no start-up allowance from here
                    ready, since = True, time.monotonic()
                elif "note" in obj:
                    child_notes.append(obj["note"])
                    if notes is not None and obj["note"] not in notes:
                        notes.append(obj["note"])
                elif "name" in obj:
                    tests.append(obj)
                    current, since = None, time.monotonic()
            if done:
                break
            limit = timeout + (startup if not ready and (current == "load" or current is None and not tests) else 0)
            if current == "compiles for a GPU":
                limit = max(limit, COMPILE_ALLOWANCE_S)
            if current == "bench":  # three kernels timed (each up to the stop rule's 3 s), the copy bandwidth measured
                limit = max(limit, BENCH_TIMEOUT_S)
            if time.monotonic() - since > limit:
                _kill(proc)
                if current == "bench":
                    bench_doc, current = _bench_failed(f"the benchmark timed out after {limit:.0f} s"), None
                    break
                timed_out = True
                what = "loading your file" if current in (None, "load") else "this test"
                shorter = " (a shorter limit: an earlier test timed out)" if retry else ""
                tests.append({"name": current or "load", "passed": False,
                              "message": f"timed out after {limit:.0f} s{shorter} while running {what}: an "
                                         f"infinite loop, or threads waiting at a cuda.syncthreads() that not all "
                                         f"threads of the block reach? (stopped by the checker)"})
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            _kill(proc)
        elif _kill_group(proc):  # the child exited but left processes behind: it forked
            violations.append("left processes running after it exited (it forked); they were killed")
        if private:
            shutil.rmtree(private, ignore_errors=True)
        else:
            os.unlink(progress)
    if current == "bench":  # the process died while benchmarking
        bench_doc, current = _bench_failed(f"the benchmark's process died (exit code {proc.returncode})"), None
    if current not in (None, "load") and not any(t["name"] == current for t in tests):
        errf.seek(0)
        last = [ln for ln in errf.read().decode(errors="replace").splitlines() if ln.strip()]
        tests.append({"name": current, "passed": False,
                      "message": f"the checker's process died during this test (exit code {proc.returncode})"
                                 + (f": {last[-1].strip()}" if last else "")})
    elif not tests:
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
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


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
