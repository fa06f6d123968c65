"""Compiling where a crash is survivable: a rung's first compile runs in a child process, and a rung
whose compiler dies there runs under the other compiler.

Why: a compiler that aborts takes its process down with it. numba-cuda-mlir 0.6.0 aborted inside
``numba_cuda_mlir/mlir_optimization.py`` (``optimize``) while a pytest worker that had compiled many
kernels compiled softmax's ``group_rows`` (docs/upstream-numba-cuda-mlir-abort.md); a notebook kernel
or a long ``lab bench`` would die the same way, losing every finished row.

How (``lab.core.runner`` drives it, one :class:`Guard` a run):

1. **Probe.** A Numba rung's checked first call runs inside ``kernels.cache.no_compile()``: kernels
   in the compiled-kernel cache (or already in memory) load and run as always; the first that would
   compile raises ``kernels.cache.WouldCompile`` before anything is compiled. A run whose kernels are
   all cached (the second ``lab run``) therefore starts no child at all.
2. **Compile child.** Otherwise one child process (``python -X faulthandler -c ... JOB``, this
   module's :func:`main`) makes the same inputs (same seed, size, dtype, threads, arrays) and makes
   each rung's first call, this one and the later ones no child has tried yet, in order, then
   builds the timer's own kernels: what it compiles lands in the kernel cache, and the run's own
   calls then load it. Those rows' "1st call" is the child's (compile + load + one run).
3. **Crash.** A child that dies by a signal (SIGABRT, SIGSEGV ...) or exits in the middle of a rung
   names that rung (it writes ``start``/``ok``/``error`` lines as it goes; its crash marker names the
   kernel function). The run says so in one line, in the row (its ``reason``) and in the report's
   warnings: "numba-cuda-mlir crashed compiling softmax/group_rows (float64, 300x700, 128 threads):
   SIGABRT; fell back to numba-cuda for this rung", and runs that rung, checked and timed, in a child
   under the other compiler (``lab.core.runner.child_row``). The child's output is kept under
   ``<user cache>/kernels/crashes/``. Later rungs go on in this process; a new child compiles them.
4. **After a crash in a process** (a compile outside a child: the cache off, a test, a notebook's own
   call): ``kernels.cache`` leaves a marker file while it compiles; :func:`earlier_crashes` turns the
   markers of dead processes into one warning line each at the next run.

No child where nothing can crash: the simulator compiles nothing; with the kernel cache off
(``LAB_KERNEL_CACHE=0``) a child's compile could not be handed over, so rungs compile in the run's
process (the marker still records a crash). A child itself (``LAB_COMPILE_CHILD=1``) compiles in
its own process.

Test-only hook, read by the compile child alone: ``LAB_TEST_COMPILE_ABORT=softmax/group_rows[,...]``
makes the child call ``os.abort()`` at that rung's first cache miss (the point where the compiler
starts; in the simulator, which compiles nothing, as the rung starts). Sources: Python's
``subprocess`` and ``signal`` documentation (a negative return code is the signal's number), and
``faulthandler`` (the Python traceback of a fatal signal, in the kept output).
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
from dataclasses import dataclass, replace
from pathlib import Path
import pickle

from kernels import cache
from lab.core import compilers, contenders as C, timing
from lab.core.rows import Check, Row
from lab.core.session import child_env, start
import kernels
import numpy as np

CHILD_ENV = "LAB_COMPILE_CHILD"  # "1" in a compile or fallback child: it compiles in its own process
ABORT_ENV = "LAB_TEST_COMPILE_ABORT"  # test only, read by the compile child: "kernel/variant,..."
SIMULATED = [False]  # tests only: act in the simulator as on a GPU, where every rung counts as uncompiled
KEEP_LOGS = 20  # crash logs kept under <user cache>/kernels/crashes
_ENTRY = "lab.core.compile_child:main"


def in_child() -> bool:
    """Whether this process is a compile or fallback child (it starts no child of its own)."""
    return os.environ.get(CHILD_ENV) == "1"


@dataclass(frozen=True)
class Problem:
    """What a run's rungs are compiled for: the same inputs and launches as the run's own calls."""

    kernel: str
    size: tuple
    dtype: str
    threads: int
    arrays: str
    seed: int
    backend: str

    def what(self, variant: str) -> str:
        """``softmax/group_rows (float64, 300x700, 128 threads)``."""
        return f"{self.kernel}/{variant} ({self.dtype}, {'x'.join(map(str, self.size))}, {self.threads} threads)"


@dataclass(frozen=True)
class Crash:
    """A compile child that died on a rung: the ``compiler``, the rung (``what``), ``how`` it died
    ("SIGABRT", "exit code 3"), the ``kernel`` function it was compiling (from its crash marker, when
    it got that far) and the ``log`` file that keeps its output."""

    compiler: str
    what: str
    how: str
    kernel: str | None = None
    log: str | None = None

    def line(self, then: str) -> str:
        """One line: "numba-cuda-mlir crashed compiling softmax/group_rows (...): SIGABRT; ``then``"."""
        inside = f" in {self.kernel}" if self.kernel else ""
        return f"{self.compiler} crashed compiling {self.what}{inside}: {self.how}; {then}"


def how(returncode: int) -> str:
    """A child's end in words: "SIGABRT" for a signal (a negative return code), else "exit code N"."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def other(compiler: str) -> str:
    """The compiler that is not ``compiler``."""
    return compilers.NUMBA_CUDA if compiler == compilers.MLIR else compilers.MLIR


class Guard:
    """A run's compile guard: which rungs a child compiled, and which crashed it.

    ``variants``: the Numba rungs the run will call, in order (a child compiles from the rung that
    needs it to the end of this list); ``repeats``, ``warmup``: the run's options (None: defaults),
    for a rung run under the other compiler. Inactive (every call compiles where it runs, as before)
    in the simulator, with the kernel cache off, and inside a child. ``warnings``: the lines to report.
    """

    def __init__(self, problem: Problem, compiler: str, variants, simulator: bool,
                 repeats: int | None = None, warmup: int | None = None):
        self.problem, self.compiler, self.order = problem, compiler, list(variants)
        self.repeats, self.warmup = repeats, warmup  # the run's own options, for a fallback's run
        self.simulated = simulator and SIMULATED[0]
        self.active = not in_child() and (self.simulated or (not simulator and cache.location() is not None))
        self.done: dict[str, tuple] = {}  # variant -> ("ok", ms) | ("error", why) | ("crash", Crash) | ("unguarded", why)
        self.children = 0
        self.child_seconds = 0.0
        self.warnings: list[str] = []

    @contextlib.contextmanager
    def probe(self, variant: str):
        """Around a rung's checked call: a compile that no child has tried yet raises
        ``kernels.cache.WouldCompile`` (nothing compiled); one that happens anyway is marked."""
        with cache.compiling_for(compiler=self.compiler, rung=self.problem.what(variant)):
            if not self.active or variant in self.done:
                yield
                return
            if self.simulated:  # nothing compiles in the simulator: the rung counts as uncompiled
                raise cache.WouldCompile(f"{variant} (simulated)")
            with cache.no_compile():
                yield

    def row(self, task, attempt, say) -> tuple:
        """A Numba rung's row, compiled where a crash is survivable. ``attempt(probe)`` makes the
        run's checked (and timed) call inside ``probe`` and returns (Row, or None when it would have
        compiled; its launch records); ``say(stage)`` tells the live view. The call is made with
        nothing compiled here; if a kernel would compile, a child compiles it (and the later rungs)
        and the call is made again, loading them; if the compiler crashed that child, the rung runs
        under the other compiler in a child of its own (:meth:`fallback`). Returns (Row, launch
        records; None when the rung ran in another process)."""
        v = task.variant
        if self.crash(v) is None:
            got, launched = attempt(self.probe(v))
            if got is None:
                say("compile (in a child process)")
                self.compile(v)
                if self.crash(v) is None:
                    got, launched = attempt(self.probe(v))
            ms = self.first_call_ms(v)  # a child of this run compiled it: its first call was the child's
            if got is not None and ms is not None and got.first_call_ms is not None:
                got = replace(got, check=replace(got.check, first_call_ms=ms))
            if got is not None:
                return got, launched
        crash = self.crash(v)
        if crash is None:  # a child compiled it, yet this process would still compile it: not expected
            return Row(task, Check("FAIL", "its kernels would still compile after a child compiled them"),
                       compiler=self.compiler), []
        return self.fallback(task, crash, say), None

    def fallback(self, task, crash: Crash, say) -> Row:
        """The Row of a rung whose compile crashed ``crash.compiler``: run, checked and timed under
        the other compiler in a child process (``lab.core.runner.child_row``: the same seed, so the
        same inputs), the crash said in its reason and in :attr:`warnings`; a FAIL row when the other
        compiler cannot run here or fails too."""
        to, p = other(crash.compiler), self.problem
        status = compilers.compilers_status(simulator=p.backend == "simulator")[to]
        if not status["usable"]:
            return self._failed(task, crash, f"{to} cannot run here ({status['why']}), so the rung did not run")
        say(f"{crash.compiler} crashed: run under {to} (in a child process)")
        job = {"kernel": p.kernel, "size": list(p.size), "dtype": p.dtype, "threads": p.threads,
               "variant": task.variant, "repeats": self.repeats, "warmup": self.warmup, "seed": p.seed,
               "arrays": p.arrays, "backend": p.backend, "compiler": to}
        env = child_env(**{compilers.ENV: to, compilers.WHY_ENV: f"{to}: {crash.compiler} crashed on this rung",
                           CHILD_ENV: "1"})
        rc, _, folder = spawn("lab.core.runner:child_row", job, env)
        try:
            got = pickle.loads((folder / "result.pickle").read_bytes())  # the lab's own child wrote it
        except Exception:  # noqa: BLE001 - no result: the fallback failed, and the row says how
            tail = _last_line(folder / "output.log")
            return self._failed(task, crash, f"the fallback to {to} failed too ({how(rc)}{': ' + tail if tail else ''})")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        line = crash.line(f"fell back to {to} for this rung")
        self.warnings.append(line)
        if task.launch is not None and got.launch:
            task.launch.update(got.launch)
        return replace(got, task=task, check=replace(got.check, reason=line + (f"; {got.reason}" if got.reason else "")))

    def _failed(self, task, crash: Crash, why: str) -> Row:
        line = crash.line(why)
        self.warnings.append(line)
        return Row(task, Check("FAIL", line), compiler=crash.compiler)

    def crash(self, variant: str) -> Crash | None:
        got = self.done.get(variant)
        return got[1] if got and got[0] == "crash" else None

    def first_call_ms(self, variant: str) -> float | None:
        """The child's first call of ``variant`` (compile + load + one run), when a child compiled it."""
        got = self.done.get(variant)
        return got[1] if got and got[0] == "ok" else None

    def compile(self, variant: str) -> None:
        """Have a child process make the first call of ``variant`` and of every later rung that no
        child has tried; record what it did (ok with its first call's ms, an error, or a crash)."""
        start = self.order.index(variant) if variant in self.order else 0
        todo = [v for v in [variant] + self.order[start:] if v not in self.done]
        todo = list(dict.fromkeys(todo))
        p = self.problem
        job = {"kernel": p.kernel, "size": list(p.size), "dtype": p.dtype, "threads": p.threads,
               "arrays": p.arrays, "seed": p.seed, "backend": p.backend, "compiler": self.compiler,
               "variants": todo, "what": {v: p.what(v) for v in todo}}
        t0 = time.perf_counter()
        rc, pid, folder = spawn(_ENTRY, job, child_env(**{CHILD_ENV: "1"}))
        self.children += 1
        self.child_seconds += time.perf_counter() - t0
        try:
            events = _events(folder / "progress.jsonl")
            marker = cache.read_marker(pid)
            cache.clear_marker(pid)
            running = None
            for e in events:
                v = e.get("variant")
                if e.get("event") == "start":
                    running = v
                elif e.get("event") == "ok":
                    self.done[v], running = ("ok", e.get("ms")), None
                elif e.get("event") == "error":
                    self.done[v], running = ("error", e.get("error")), None
            if running is not None:  # it died inside this rung: a crash of the compiler
                log = keep_log(folder / "output.log", f"{self.compiler}-{p.kernel}-{running}")
                kernel = (marker or {}).get("kernel")
                self.done[running] = ("crash", Crash(self.compiler, p.what(running), how(rc), kernel, log))
            elif rc != 0 and variant not in self.done:  # it never reached the rung (its start-up failed)
                tail = _last_line(folder / "output.log") or how(rc)
                why = f"the compile child failed before {p.what(variant)} ({how(rc)}: {tail}); compiling in this process"
                self.warnings.append(why)
                for v in todo:
                    self.done.setdefault(v, ("unguarded", why))
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def spawn(entry: str, job: dict, env: dict) -> tuple[int, int, Path]:
    """Run ``entry`` ("module:function") in a child Python with ``job`` (written to JOB.json, its
    argument; ``progress``, ``result`` and ``output.log`` beside it, in a private temporary folder).
    Returns (return code, pid, folder); the caller removes the folder. Ctrl-C stops the child too."""
    folder = Path(tempfile.mkdtemp(prefix="lab-compile-"))
    job = dict(job, progress=str(folder / "progress.jsonl"), result=str(folder / "result.pickle"))
    (folder / "job.json").write_text(json.dumps(job))
    cache.STATS["children"] += 1
    module, func = entry.split(":")
    with open(folder / "output.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-c", f"import {module} as m; m.{func}()",
                                 str(folder / "job.json")], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=env)
        try:
            rc = proc.wait()
        except BaseException:  # Ctrl-C (the child had it too) or another error: the child does not outlive us
            proc.kill()
            proc.wait()
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return rc, proc.pid, folder


def _events(path: Path) -> list[dict]:
    out = []
    try:
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    except OSError:
        pass
    return out


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def keep_log(path: Path, name: str) -> str | None:
    """Copy a crashed child's output to ``<user cache>/kernels/crashes/<time>-<name>.log`` (the
    :data:`KEEP_LOGS` newest are kept); returns its path, or None when it cannot be written."""
    folder = cache.root() / "crashes"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        dest = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{safe}.log"
        shutil.copyfile(path, dest)
        for old in sorted(folder.glob("*.log"), key=lambda q: q.stat().st_mtime)[:-KEEP_LOGS]:
            old.unlink()
        return str(dest)
    except OSError:
        return None


def earlier_crashes() -> list[str]:
    """One line for each lab process on this host that died while it compiled (a crash marker left
    by ``kernels.cache`` whose process is gone); each is said once."""
    out = []
    for m in cache.crashed_compiles():
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(m["started"])) if m.get("started") else "earlier"
        what = m.get("rung") or "a kernel"
        kernel = f" ({m['kernel']})" if m.get("kernel") else ""
        out.append(f"process {m.get('pid')} died at {when} while {m.get('compiler') or 'the compiler'} compiled "
                   f"{what}{kernel}: a compiler crash or a kill; first compiles now run in a child process "
                   f"(docs/compilers.md, \"Compiler crashes\")")
    return out


# --- the compile child ------------------------------------------------------------------------------
def _say(log, event: str, variant: str, **facts) -> None:
    log.write(json.dumps({"event": event, "variant": variant, **facts}) + "\n")
    log.flush()


def main() -> None:
    """The compile child: make each listed rung's first call on the job's inputs, writing
    ``start``/``ok``/``error`` lines to the job's progress file as it goes (a crash leaves a
    ``start`` alone). Run by :meth:`Guard.compile`, never by hand."""
    job = json.loads(Path(sys.argv[1]).read_text())
    simulator = job["backend"] == "simulator"
    start("sim" if simulator else "gpu")
    spec = kernels.load(job["kernel"])
    size, dtype = tuple(job["size"]), np.dtype(job["dtype"])
    inputs = spec.make_inputs(size, dtype, np.random.default_rng(job["seed"]))
    aborts = {a.strip() for a in os.environ.get(ABORT_ENV, "").split(",") if a.strip()}
    with open(job["progress"], "a", buffering=1) as log:
        for v in job["variants"]:
            _say(log, "start", v)
            hooked = f"{spec.name}/{v}" in aborts
            if hooked:  # test only: the compiler "aborts" where it starts compiling this rung
                if simulator:
                    os.abort()
                cache.MISS_HOOKS.append(os.abort)
            prepared = None
            try:
                variant = spec.variants[v]
                with cache.compiling_for(compiler=job["compiler"], rung=job["what"][v]):
                    prepared = C.prepare_numba(spec, size, variant, variant.launch(size, job["threads"]),
                                               inputs, simulator, job["arrays"])
                    prepared.sync()
                    t0 = time.perf_counter()
                    prepared.call()
                    prepared.sync()
                    ms = (time.perf_counter() - t0) * 1e3
                _say(log, "ok", v, ms=ms)
            except Exception as e:  # a compile error is the run's FAIL row to report, not the child's
                text = str(e).strip().splitlines()
                _say(log, "error", v, error=f"{type(e).__name__}: {text[0] if text else ''}")
            finally:
                cache.MISS_HOOKS.clear()
                if prepared is not None:
                    prepared.release()
    if not simulator:  # the timer's own kernels (the blocking kernel, the L2 flush): the run's next compiles
        from kernels.compiler import cuda  # lazy: backend chosen first (numba)
        timing.blocking_kernel()
        timing._flush_l2()
        cuda.synchronize()
