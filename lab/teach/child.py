"""The checker's child processes, the parent's side (:func:`run_child`): the hidden tests of one
file run in a child (:mod:`lab.teach.contained.executor`, contained by :mod:`lab.teach.contained.sandbox` when a
``Limits`` is given), judged here from the raw results it leaves (:class:`lab.teach.checker.Judge`),
stopped when a test runs past its timeout, retried for the tests left; the contained offline GPU
compile beside it (:mod:`lab.teach.contained.compile_sandbox`); the bench's raw numbers judged
(:mod:`lab.teach.bench`); every child tracked, so that Ctrl-C (:func:`stop_all`) ends them all.
Nothing here prints.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from concurrent.futures import Future, TimeoutError as Timeout

import exercises
from lab.core.text import printable
from lab.teach.procs import STOP, kill_group, track, untrack
import numpy as np
from lab.teach.contained.childio import UnsafeChildFile, read_child_file


BENCH_TIMEOUT_S = 120.0  # the benchmark's own limit, whatever the per-test timeout
RETRY_TIMEOUT_S = 5.0  # per-test limit for the tests left after one timed out (simulator)
RETRY_TIMEOUT_GPU_S = 3.0  # the same on a GPU, where a test takes milliseconds (and a launch's JIT compile)
MAX_TIMEOUTS = 2  # then the rest is "not run": a second hang means every test hangs, fix that first
KILL_WAIT_S = 1.0  # a killed child is waited for this long, then reaped in the background (a GPU context
# with a kernel that never ends can take seconds to tear down: --timeout holds on a GPU too)
COMPILE_ALLOWANCE_S = 60.0  # the tests' child's own GPU compile test (on a GPU, or uncontained) gets this long
PROGRESS_CAP = 16 << 20  # bytes of the child's progress file read (a child that writes more is not read further)
FOLDER_CHECK_S = 0.25  # lab.teach.contained.sandbox.FOLDER_CHECK_S
MAX_CHILD_LINES = 20  # violations taken from one child's progress file at most
LINE_CHARS = 300  # characters of such a line kept

COMPILE_TEST = "compiles for a GPU"  # lab.teach.cases.COMPILE_TEST
STARTUP_S = 60.0  # a child importing Numba and the lab (a GPU context) before its first test


def submission_limit(timeout: float, tests: int, bench: bool = False, compile_: bool = False) -> float:
    """Seconds one submission may hold its grading slot, whatever its processes write (progress
    lines restart no clock past it): a start-up and ``timeout`` per test for the first child, a
    start-up and the shorter retries for the one after a timeout (:data:`MAX_TIMEOUTS`), the
    offline compile's start-up and ``timeout`` when it runs in the tests' child or waits for its own,
    and the benchmark's limit with ``bench``."""
    return (2 * STARTUP_S + timeout * (tests + MAX_TIMEOUTS + 1) + (STARTUP_S + timeout if compile_ else 0)
            + (BENCH_TIMEOUT_S if bench else 0))


def run_child(name, path, backend, seed, timeout, wrap=(), env=None, bench=False, sandbox=None,
               extra=None, notes=None, skip=(), progress=None, compiled=None,
               require_compile: bool = False, report_compile: bool = True) -> list[dict]:
    """The hidden tests in a child process; ``wrap``: a command to run it under (compute-sanitizer ...),
    ``env``: extra environment variables; ``bench``: then the benchmark (:mod:`lab.teach.bench`) once
    every test passed; ``sandbox``: a :class:`lab.teach.contained.sandbox.Limits` to run it contained (a private
    folder, rlimits, Landlock, an audit hook: :mod:`lab.teach.contained.sandbox`). ``extra`` (a dict), when
    given, receives "bench" (the benchmark's document, or None), "violations" (what the sandbox
    stopped), "returncode" and "notes"; ``notes``: a list that gets the child's notes (a check that
    was skipped). When a test times out, the child is stopped and a fresh one runs the tests not yet
    run, each with a short limit (``RETRY_TIMEOUT_S``, or ``timeout`` when smaller): a test that
    hangs costs one timeout and the others still get a verdict (after ``MAX_TIMEOUTS`` the rest is
    "not run"). ``skip``: names of tests not to run at all; ``progress(done, total, label)``: called
    as tests start and end ("running test 3/7: n=1000", "n=1000: timed out after 10 s").

    This process reads the file once, as source (:func:`lab.teach.contained.source.extract`): a file it refuses
    (an import outside the allow-list, top-level code, no kernel defined in it, a function a kernel
    reaches that is not device code ...) is the "load" failure, and no process starts. Its launch()
    is evaluated here (:func:`lab.teach.checker.launch_plan`); the child gets the source text and the
    launch configurations, builds the kernel from the text and runs nothing else of the file.

    Contained in the simulator, the offline GPU compile runs first, in a contained child of its own
    (:mod:`lab.teach.contained.compile_sandbox`, from the source), whose "ok" this process believes only with
    the PTX it checks: a kernel that does not compile for a GPU is never run (its entry alone comes
    back); ``compiled``: its result already made (a Future of it: ``lab exercise grade`` compiles a
    student's files in one child). ``require_compile`` (a teacher's grade): a compile that could not
    give a verdict (no NVVM, its process failed) fails the gate instead of being a note;
    ``report_compile`` False (the simulator's leg beside a GPU, whose child reports the compile): the
    compile only gates the tests, its entry is left out (a kernel that does not compile: no tests)."""
    from lab.teach.contained import source as SRC  # lazy: heavy for lab exercise list's start (lab.teach.contained.allowlist)
    from lab.teach.checker import launch_plan  # lazy: heavy for lab exercise list's start (lab.teach.cases)
    from lab.teach.messages import Failed  # lazy: heavy for lab exercise list's start (lab.teach.contained.syntax)

    ex = exercises.load(name)
    try:
        text = SRC.read(path)
        prog = SRC.extract(text, str(path), ex.kernel, ex.launch)
    except Failed as e:
        return [{"name": "load", "passed": False, "message": str(e)}]
    except OSError as e:
        return [{"name": "load", "passed": False,
                 "message": f"cannot read {os.path.basename(str(path))}: {e.strerror or e}"}]
    launches = launch_plan(ex, prog, cached_cases(name, seed)[0])
    tests, planned, limit, first = [], None, timeout, list(skip)
    total = len(cached_cases(name, seed)[0])
    deadline = time.monotonic() + submission_limit(timeout, total, bench, backend != "simulator" or sandbox is not None)
    pre = _start_compile(name, path, backend, seed, env, sandbox, first, compiled, text, timeout)
    gate = None
    if pre is not None:
        first.append(COMPILE_TEST)
        gate = _compile_gate(pre, notes, extra, require_compile)
        if gate is not None and not gate["passed"]:  # never run: the kernel is not proven device code
            if extra is not None:
                extra["bench"] = None
            if not report_compile and extra is not None:  # the GPU leg's caller must know why no test ran here
                extra["compile_gate"] = gate
            return [gate] if report_compile else []
        if not report_compile:
            gate = None
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
                                                 extra, notes, skip, retry=bool(tests), on_event=on_event,
                                                 source=(text, prog, launches), deadline=deadline)
        planned = listed if planned is None else planned
        before = {t["name"] for t in tests}
        tests += got
        done = {t["name"] for t in tests}
        left = [n for n in planned if n not in done]
        progressed = any(n in planned and n not in before for n in done)
        timeouts = sum(1 for t in tests if t["message"].startswith("timed out"))
        if not (timed_out and left and progressed) or timeouts >= MAX_TIMEOUTS or STOP.is_set() or \
                time.monotonic() >= deadline:
            break
        skip, limit = sorted(set(first) | {n for n in done if n in planned}), min(timeout, retry_s)
    for n in planned:
        if n not in done:
            tests.append({"name": n, "passed": False, "message": "not run (an earlier test was stopped)"})
    if gate is not None and not any(t["name"] == "load" and not t["passed"] for t in tests):
        tests.insert(0, gate)
    if extra is not None and not (tests and all(t["passed"] for t in tests)):
        extra["bench"] = None  # a benchmark counts only for a kernel that passed every test (this process's verdicts)
    return tests


def _start_compile(name, path, backend, seed, env, sandbox, skip, compiled, text=None, timeout=None):
    """The contained offline compile of ``path`` (its source ``text``) for the simulator's contained
    check (None when it does not apply): an object whose ``result()`` is
    :func:`lab.teach.contained.compile_sandbox.run`'s result; ``timeout``: :func:`compile_files`'s."""
    from lab.teach.contained import gpu_compile  # lazy: heavy for lab exercise list's start (lab.teach.contained.gpu_compile)

    on = (env or {}).get(gpu_compile.ENV, os.environ.get(gpu_compile.ENV, "1")) not in ("0", "", "no", "off")
    if sandbox is None or backend != "simulator" or not on or COMPILE_TEST in skip:
        return None
    if compiled is not None:
        return compiled
    fut: Future = Future()

    def work():
        try:
            fut.set_result(compile_files([(name, path, text)], seed, sandbox, timeout)[0])
        except BaseException as e:  # noqa: BLE001 - the lab's own failure: a note, not the student's
            fut.set_result({"skipped": f"could not run ({type(e).__name__}: {e})", "broken": True})

    threading.Thread(target=work, name=f"lab-compile-{name}", daemon=True).start()
    return fut


def compile_files(pairs, seed, sandbox, timeout=None) -> list[dict]:
    """The contained offline GPU compile (:func:`lab.teach.contained.compile_sandbox.run`) of each (exercise,
    file[, its source text]) of ``pairs`` in one child, with the argument types of the exercise's
    hidden tests; ``timeout``: the per-test timeout (--timeout), also each file's compile limit (the
    child's start-up aside); the whole compile ends by a start-up and ``timeout`` per file, plus one."""
    from lab.teach.cases import compile_sigs  # lazy: heavy for lab exercise list's start (lab.teach.cases)
    from lab.teach.contained import compile_sandbox  # lazy: heavy for lab exercise list's start (lab.teach.contained.compile_sandbox)

    items = [(str(p[1]), exercises.load(p[0]).kernel, compile_sigs(cached_cases(p[0], seed)[0]),
              p[2] if len(p) > 2 else None) for p in pairs]
    if timeout is None:
        return compile_sandbox.run(items, sandbox)
    return compile_sandbox.run(items, sandbox, timeout=float(timeout),
                               deadline=time.monotonic() + STARTUP_S + timeout * (len(items) + 1))


NOT_COMPILED = "a grade requires it"
LATE_COMPILE = ("the compile for a GPU did not finish within the submission's time limit (stopped by the "
                "checker)")


def _compile_gate(pre, notes, extra, required: bool, deadline=None) -> dict | None:
    """The compile's entry (waited for until ``deadline``, ``time.monotonic()``: then a failure): a
    dict, or None when it was skipped (no NVVM, its process failed: a note then, or with
    ``required`` a failing entry saying why)."""
    from lab.teach.cases import compile_entry  # lazy: heavy for lab exercise list's start (lab.teach.cases)

    try:
        r = pre.result(timeout=None if deadline is None else max(deadline - time.monotonic(), 0.0))
    except Timeout:
        r = {"ok": False, "line": None, "message": LATE_COMPILE}
    entry = compile_entry(r, "simulator")
    if not isinstance(entry, str):
        return entry
    if required:
        why = str(r.get("skipped", "no result"))[:200] if isinstance(r, dict) else "no result"
        return {"name": COMPILE_TEST, "passed": False,
                "message": f"could not be checked ({why}): {NOT_COMPILED} (the compile proves the kernel holds "
                           f"only device code before it runs)"}
    for where in (notes, None if extra is None else extra.setdefault("notes", [])):
        if where is not None and entry not in where:
            where.append(entry)
    return None


def _add_compile(pre, tests, notes, extra, deadline=None) -> None:
    """The compile's entry first in ``tests`` (a skip: a note), unless the file did not load;
    waited for until ``deadline`` (time.monotonic()), then a failure."""
    if any(t["name"] == "load" and not t["passed"] for t in tests):
        return
    entry = _compile_gate(pre, notes, extra, False, deadline)
    if entry is not None:
        tests.insert(0, entry)


_CASES: dict = {}
_CASES_LOCK = threading.Lock()


def cached_cases(name: str, seed: int):
    """(the hidden cases of exercise ``name`` for ``seed``, the state of the seed's generator after
    them), made once per process: every student of a grade gets the same inputs (one seed), so the
    float64 references are computed once per exercise, not once per submission."""
    from lab.teach.cases import hidden_cases  # lazy: heavy for lab exercise list's start (lab.teach.cases)

    key = (name, int(seed))
    with _CASES_LOCK:
        if key not in _CASES:
            if len(_CASES) > 64:
                _CASES.clear()
            rng = np.random.default_rng(int(seed))
            cases = hidden_cases(exercises.load(name), rng)
            for c in cases:  # shared by every check and grader thread of this process: read-only from here
                for group in (c.args, c.init or (), c.refs, c.tols if isinstance(c.tols, (list, tuple)) else ()):
                    for a in group:
                        if isinstance(a, np.ndarray):
                            a.flags.writeable = False
            _CASES[key] = (cases, rng.bit_generator.state)
        return _CASES[key]


def _run_child_once(name, path, backend, seed, timeout, wrap, env, bench, sandbox, extra, notes, skip,
                    retry=False, on_event=None, source=None, deadline=None):
    """One child process (:mod:`lab.teach.contained.executor`, which builds the kernel from the source and runs
    it): (test entries, the planned test names, whether a test timed out). This process makes the
    tests and judges each one from the raw results the child left in its folder
    (:class:`lab.teach.checker.Judge`); the child's progress lines only drive the clock, and only
    forward (a test's clock starts once). ``on_event(kind, value)``: ("start", test name),
    ("loaded", planned names), ("result", entry). ``source``: (the file's text, its
    :class:`lab.teach.contained.source.Program`, the launch plan), as :func:`run_child` read them (default:
    read and checked here); ``deadline`` (``time.monotonic()``): the submission's own limit
    (:func:`submission_limit`), over its retries."""
    from lab.core.session import child_env, python_module  # lazy: heavy for lab exercise list's start (greenlet)
    from lab.teach import checker  # lazy: heavy for lab exercise list's start (lab.teach.cases)
    from lab.teach.contained.channel import BENCH_GO, ResultError, add_bench, make_request, write_request  # lazy: heavy for lab exercise list's start (lab.teach.cases)
    from lab.teach.contained import gpu_compile  # lazy: heavy for lab exercise list's start (lab.teach.contained.gpu_compile)

    env = child_env(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    ex = exercises.load(name)
    cases, state = cached_cases(name, seed)
    if source is None:
        from lab.teach.contained import source as SRC  # lazy: heavy for lab exercise list's start (lab.teach.contained.allowlist)

        text = SRC.read(path)
        prog = SRC.extract(text, str(path), ex.kernel, ex.launch)  # Failed: the caller's load failure
        source = (text, prog, checker.launch_plan(ex, prog, cases))
    text, prog, launches = source
    rng = np.random.default_rng()
    rng.bit_generator.state = state  # as if the cases were just drawn from the seed's generator
    do_compile = env.get(gpu_compile.ENV, "1") not in ("0", "", "no", "off") and COMPILE_TEST not in skip
    request, inputs = make_request(ex, cases, backend, do_compile, rng, launches=launches, source=text)
    bench_doc = None
    if bench:  # the bench's problem, picked here: the child reads no hidden test and no solution
        from lab.teach import bench as B  # lazy: heavy for lab exercise list's start (lab.teach.bench)

        bench_case, bench_note = B.plan(ex, request["bench_seed"], backend == "simulator")
        bench_launch = checker.launch_plan(ex, prog, [bench_case])[0]
        if isinstance(bench_launch, str):  # launch() failed at the bench's size: judged here, nothing timed
            bench_doc = B.judge(ex, bench_case, backend, {"error": f"not benchmarked: {bench_launch}"}, {}, bench_note)
        else:
            add_bench(request, inputs, bench_case, backend, bench_launch)
    if sandbox is not None:
        from lab.teach.contained import sandbox as S  # lazy: heavy for lab exercise list's start (lab.teach.contained.sandbox)

        private, path, env = S.prepare(path, env)
        module = ["lab.teach.contained.sandbox", sandbox.to_arg()]
    else:
        private = tempfile.mkdtemp(prefix="lab-check-")
        module = ["lab.teach.contained.measure" if bench else "lab.teach.contained.executor"]
    progress = os.path.join(private, ".lab-progress.jsonl")
    open(progress, "w").close()
    channel_in, channel_out = write_request(private, request, inputs)
    judge = checker.Judge(ex, cases, backend, str(path), private, do_compile, launches=launches, source=text)
    errf = tempfile.TemporaryFile()
    # the fourth argument once was the seed: no seed reaches the student's process ("0": the sandbox's
    # precompile draws its argument types from it, which do not depend on the seed)
    cmd = [*wrap, *python_module(module[0]), *module[1:], name, str(Path(path).resolve()), backend, "0", progress,
           json.dumps(list(skip)), *(["--bench"] if bench else [])]
    wrap_notes: list = []
    if sandbox is not None:  # bubblewrap around it where it works (lab.core.isolation)
        cmd, wrap_notes = S.wrap(cmd, private, path, progress, backend, bench, env, channel_in, channel_out,
                                 landlock=sandbox.landlock)
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
    track(proc)  # stop_all (Ctrl-C) kills it
    bench_raw, violations, child_notes, ready, loaded = None, [], list(wrap_notes), False, False
    startup = STARTUP_S  # importing numba (and a GPU context) before the first test starts
    tests, current, since, seen_bytes, timed_out = [], None, time.monotonic(), 0, False
    measured = 0.0  # when the private folder's size was last measured (lab.teach.contained.sandbox.folder_problem)
    said_go = False  # the bench's word written (lab.teach.contained.channel.BENCH_GO)
    judged: set = set()
    skipped: set = set()
    load_done = False
    todo = [n for n in judge.planned if n not in skip]
    # the whole child's limit: start-up, the compile, the bench and every test's own, whatever it writes
    started = time.monotonic()
    overall = (startup + timeout * (len(todo) + 1) + (COMPILE_ALLOWANCE_S if COMPILE_TEST in todo else 0)
               + (BENCH_TIMEOUT_S if bench else 0))
    if deadline is not None:  # the submission's own limit, over its retries and its compile (submission_limit)
        overall = max(min(overall, deadline - started), 0.0)
    # the clocks move on the judge's evidence, not the child's word: a test's clock starts at its first
    # "start" line and never again; a "done" restarts the clock only when a new result was judged
    clocks: dict = {}
    known = set(todo) | {"load"}  # (and "bench", once this process said "go": below)

    def take(n) -> bool:  # judge test n from its raw result, once; True when it was judged now
        if n in judged or n not in todo:
            return False
        r = judge.test(n)
        if r is not None:  # (no result yet: a "done" line is only the child's word)
            judged.add(n)
            tests.append(r)
            on_event and on_event("result", r)
            return True
        if n == COMPILE_TEST and judge.has(n):  # skipped (no NVVM ...): a note, not a test
            judged.add(n)
            skipped.add(n)
            return True
        return False

    try:
        while True:
            if STOP.is_set():  # Ctrl-C: stop_all killed it; a dying GPU process is not waited for
                break
            done = proc.poll() is not None
            try:
                data = read_progress(private, seen_bytes, judge.dir_fd)
            except ResultError as e:  # replaced by a link or a FIFO, or a flood: stop, and say so
                violations.append(f"tampered with the grader's progress file ({e})")
                _kill(proc)
                break
            for raw_line in data.splitlines(keepends=True):
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
                    if str(obj["start"]) not in known:
                        continue
                    current = str(obj["start"])
                    since = clocks.setdefault(current, time.monotonic())
                    on_event and on_event("start", current)
                elif "loaded" in obj:
                    loaded = True
                    on_event and on_event("loaded", [n for n in todo if n in obj["loaded"]] if isinstance(obj["loaded"], list) else list(todo))
                elif "done" in obj:  # a result may be there: judge it now (a bench waits for the verdicts)
                    first_load = obj["done"] == "load" and not load_done
                    load_done = load_done or obj["done"] == "load"
                    if take(str(obj["done"])) or first_load:
                        current, since = None, time.monotonic()
                elif "bench" in obj:  # the clock restarts: the child now only exits (a 10+ s GPU bench
                    # once counted against the per-test limit, killing the child as "loading your file")
                    if bench and bench_raw is None and current == "bench":
                        bench_raw, current, since = obj["bench"], None, time.monotonic()  # judged below
                elif "violation" in obj:
                    if len(violations) < MAX_CHILD_LINES:
                        violations.append(printable(str(obj["violation"])[:LINE_CHARS]))
                elif "ready" in obj:  # the sandbox loaded Numba and the lab: no start-up allowance from here
                    if not ready:
                        ready, since = True, time.monotonic()
                # {"note": ...}: never shown. The child's notes once came from the sandbox before the
                # submission ran, but the submission writes to this file too ("plagiarism check: ...");
                # what the sandbox lacks is said by this process (lab.teach.contained.sandbox.layer_notes)
            if time.monotonic() - measured > FOLDER_CHECK_S:  # a disk filled without bubblewrap's tmpfs
                from lab.teach.contained.sandbox import folder_problem  # lazy: heavy for lab exercise list's start (lab.teach.contained.sandbox)

                measured = time.monotonic()
                full = folder_problem(private)
                if full:
                    violations.append(full)
                    _kill(proc)
                    break
            if bench and not said_go and (load_done or all(n in judged for n in todo)):
                # the bench runs only once every test passed, by this process's verdicts (written in
                # place: under bubblewrap the child sees this very file, bound into its folder)
                go = all(t["passed"] for t in tests) and len(tests) == len(todo)
                said_go = True
                why = write_child_file(judge.dir_fd, BENCH_GO, b"1" if go else b"0")
                if why:  # a link or a FIFO in its place: never written through
                    violations.append(f"tampered with the grader's files ({why})")
                    _kill(proc)
                    break
                if go:  # only now may the child's clock be the benchmark's (BENCH_TIMEOUT_S)
                    known.add("bench")
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
                if over and deadline is not None and time.monotonic() >= deadline - 0.5:
                    tests.append({"name": current if current in todo else "load", "passed": False,
                                  "message": f"timed out: the submission's time limit ({overall:.0f} s here, from "
                                             f"--timeout {timeout:g} s per test) ran out (stopped by the checker)"})
                    judged.add(tests[-1]["name"])
                    on_event and on_event("result", tests[-1])
                    break
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
        untrack(proc)
        if proc.poll() is None:
            if not getattr(proc, "lab_killed", False):
                _kill(proc)
            else:  # killed (a timeout, Ctrl-C) and still dying, a GPU context tearing down: reaped in the background
                threading.Thread(target=proc.wait, name="lab-reap", daemon=True).start()
        elif kill_group(proc):  # the child exited but left processes behind: it forked
            violations.append("left processes running after it exited (it forked); they were killed")
        judge.close()
        shutil.rmtree(private, ignore_errors=True)
    planned = [n for n in todo if n not in skipped] if loaded else []
    if bench_raw is not None and bench_doc is None:  # the pass line from the raw numbers, here
        from lab.teach import bench as B  # lazy: heavy for lab exercise list's start (lab.teach.bench)

        bench_doc = B.judge(ex, bench_case, backend, bench_raw,
                            lambda: B.reference(name, backend, request["bench_seed"]), bench_note, source=text)
    if current == "bench":  # the process died while benchmarking
        bench_doc, current = _bench_failed(f"the benchmark's process died (exit code {proc.returncode})"), None
    if current in todo and not any(t["name"] == current for t in tests):
        last = _stderr_tail(errf)
        tests.append({"name": current, "passed": False,
                      "message": f"the checker's process died during this test (exit code {proc.returncode})"
                                 + (f": {last[-1].strip()}" if last else "")})
    elif not tests and not planned:
        last = _stderr_tail(errf)
        tests.append({"name": "load", "passed": False,
                      "message": "the checker could not start" + (f": {last[-1].strip()}" if last else "")})
    errf.close()
    if extra is not None:  # a retry's child adds to what the first one stopped
        extra.update(bench=bench_doc if bench_doc is not None else extra.get("bench"),
                     violations=extra.get("violations", []) + violations, returncode=proc.returncode,
                     notes=extra.get("notes", []) + child_notes)
    return tests, planned, timed_out


STDERR_TAIL = 64 << 10  # bytes of a child's stderr read (its last lines: a flood is not read)


def _stderr_tail(errf) -> list[str]:
    """The non-empty lines of the last :data:`STDERR_TAIL` bytes a child wrote to stderr."""
    size = errf.seek(0, os.SEEK_END)
    errf.seek(max(size - STDERR_TAIL, 0))
    lines = errf.read(STDERR_TAIL).decode(errors="replace").splitlines()
    return [printable(ln)[:LINE_CHARS] for ln in (lines[1:] if size > STDERR_TAIL else lines) if ln.strip()]


def read_progress(private: str, start: int, dir_fd) -> bytes:
    """The child's progress file from byte ``start`` on (a regular file, no link, at most
    :data:`PROGRESS_CAP` bytes in all: :func:`lab.teach.contained.childio.read_child_file`); ResultError else."""
    from lab.teach.contained.channel import ResultError  # lazy: heavy for lab exercise list's start (lab.teach.cases)

    try:
        return read_child_file(private, ".lab-progress.jsonl", PROGRESS_CAP, dir_fd, start=start) or b""
    except UnsafeChildFile as e:
        raise ResultError(str(e)) from None


def write_child_file(dir_fd, name: str, data: bytes) -> str | None:
    """Write ``data`` into the child's file ``name`` (relative to ``dir_fd``, its folder) in place,
    only while it is a regular file (:func:`lab.core.files.write_in_place`: no link followed, no
    FIFO waited on). None when written, else what it is."""
    from lab.core.files import write_in_place  # lazy: heavy for lab exercise list's start (lab.core.files)

    return write_in_place(dir_fd, name, data)


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


