"""On a GPU: the wall time of ``lab run matvec --threads 1024`` run again and again (the kernel cache and
the remembered copy bandwidth warm after the first), and where a second run's seconds go.

    python scripts/second_run_gpu.py [OUT] [--pyc]   # OUT: a folder (default $OUT, else ./gpu-out)

Five runs in a row, each a fresh process:

1. ``python -m lab run matvec --threads 1024``: the first run (compiles, measures the copy bandwidth).
2. the same, instrumented (this script in ``--child`` mode around ``lab.cli.main``): a time line of
   the run from its own clock. Start-up pieces (imports, the device, which contenders can run, inputs,
   float64 reference, tolerance, copy bandwidth, clocks), each row's stages and the host time spent
   inside its timed callable (calls, µs a call), the collections between contenders, the report,
   the atexit handlers, and the interpreter's usual teardown (this run exits with ``sys.exit``, as
   ``lab`` did before ``lab.cli.exit_now``: its teardown is what ``exit_now`` skips).
3. ``python -m lab run matvec --threads 1024`` again: **the second-run wall time** the 10 s target is
   about (``python -m lab`` ends with ``exit_now``).
4. the same under cProfile, ``--wide`` (run4.prof, run4-prof.txt: cumulative and internal time, top 45).
5. the same with ``-X importtime``: the imports that took 30 ms or more (cumulative, top levels).

--pyc: the runs may write and read byte code (PYTHONDONTWRITEBYTECODE unset, PYTHONPYCACHEPREFIX in
the temp folder), as on a normal install: the first run then also compiles the modules.

Prints each run's wall time and run 2's time line; writes runN.txt (each run's output) to OUT.
About 70 s on an H200.
"""
from __future__ import annotations

import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

COMMAND = ["run", "matvec", "--threads", "1024"]
ROOT = Path(__file__).resolve().parents[1]
PROFILED = """import cProfile, sys
from lab.cli import main
sys.argv = ['lab'] + sys.argv[1:]
prof = cProfile.Profile()
prof.enable()
try:
    main()
except SystemExit:
    pass
finally:
    prof.disable()
    prof.dump_stats(PROF)
"""
STAMP = "second-run: "  # the instrumented child's lines on stderr: STAMP + epoch seconds + text


# --- the instrumented child (run 2) ---------------------------------------------------------------
def _say(text: str, at: float | None = None) -> None:
    sys.stderr.write(f"{STAMP}{time.time() if at is None else at:.6f} {text}\n")
    sys.stderr.flush()


def _wrap(owner, name: str, label, after=None) -> None:
    """Replace ``owner.name`` by a wrapper that stamps its start and end (``label(*args)`` names it);
    ``after(result, *args)`` runs on its result. Nothing where the attribute is missing."""
    fn = getattr(owner, name, None)
    if fn is None:
        _say(f"(not instrumented: {getattr(owner, '__name__', owner)}.{name} is missing)")
        return

    def wrapper(*args, **kwargs):
        t0 = time.time()
        try:
            result = fn(*args, **kwargs)
        finally:
            t1 = time.time()
            _say(f"{t1 - t0:7.3f} s  {label(*args, **kwargs) if callable(label) else label}", at=t0)
        if after is not None:
            after(result, *args)
        return result

    try:
        setattr(owner, name, wrapper)
    except (AttributeError, TypeError):  # a frozen dataclass instance
        object.__setattr__(owner, name, wrapper)


def child(argv: list[str]) -> None:
    """``lab.cli.main(argv)`` with its phases stamped on stderr, then the usual ``sys.exit``."""
    t_import = time.time()
    import lab.cli
    from lab.core import clocks, device, runner, timing
    from lab.core import contenders as C

    try:
        from lab.core import collect
    except ImportError:  # before lab.core.collect: the runner calls gc.collect itself
        collect = None

    _say(f"{time.time() - t_import:7.3f} s  import lab.cli and lab.core.runner (click, rich, NumPy, numba.cuda)", at=t_import)
    t_import = time.time()
    from lab.cli.views import report as view  # what `lab run` imports first: lab.core.runner, numba.cuda

    _say(f"{time.time() - t_import:7.3f} s  import lab.cli.views.report (rich)", at=t_import)

    def patch_spec(plan, *args):  # the spec is known once validate() returns: its inputs and reference
        spec = plan.spec
        _wrap(spec, "make_inputs", "inputs drawn (make_inputs)")
        _wrap(spec, "tolerance", "tolerance (float64, on the host)")
        if hasattr(type(spec), "float64_reference"):
            _wrap(spec, "float64_reference", "float64 reference (on the host)")
        else:
            _wrap(spec, "reference", lambda *a: f"reference ({a[0].dtype})")

    from lab.bench import commands

    _wrap(commands, "_session", "session: the backend and the compiler (imports numba.cuda and the compiler)")
    _wrap(runner, "run", "runner.run: the whole run (validate, plan, execute)")
    _wrap(runner, "execute", "execute: inputs, reference, every row, the rates")
    _wrap(runner, "validate", "validate: load the kernel, the device (CUDA init), options", patch_spec)
    _wrap(device, "describe", "  describe the device")
    _wrap(runner, "plan", "plan: the rows, which contenders can run (imports torch)")
    _wrap(C, "why_unavailable", lambda name, *a: f"  why_unavailable({name})")
    _wrap(device, "copy_bandwidth", "copy bandwidth (remembered for a day)")
    _wrap(clocks, "read", "clocks (NVML)")
    _wrap(runner, "_numpy_threads", "NumPy's thread pools (threadpoolctl)")
    if collect is not None:
        _wrap(collect, "between", "garbage collection between contenders")
    _wrap(C, "prepare_library", lambda who, spec, size, label, *a: f"  prepare {who} {label} (imports, copies)")

    rows = []  # (calls, seconds inside the timed callable) of the row being timed

    class CountingTimer(timing.Timer):
        def __init__(self, fn, *args, **kwargs):
            stats = [0, 0.0]

            def counted():
                t = time.perf_counter()
                try:
                    return fn()
                finally:
                    stats[0] += 1
                    stats[1] += time.perf_counter() - t
            super().__init__(counted, *args, **kwargs)
            self.stats = stats

        def measure(self, *args, **kwargs):
            before = list(self.stats)
            m = super().measure(*args, **kwargs)
            calls, seconds = self.stats[0] - before[0], self.stats[1] - before[1]
            rows.append((calls, seconds))
            _say(f"          {m.n} timed of {calls} calls (warm-up, in flight), {seconds:.3f} s of host time in the "
                 f"callable, {1e6 * seconds / max(calls, 1):.0f} µs a call; median {m.median_ms:.4f} ms")
            return m

    runner.Timer = CountingTimer
    original = view.LiveProgress.__call__

    def progress(self, event, report, **info):
        if event == "stage":
            _say(f"stage: {info.get('contender')} {info.get('variant')}: {info.get('stage')}"
                 + (f" ({info['calls']} calls)" if info.get("calls") else ""))
        elif event == "row":
            r = info["row"]
            _say(f"row done: {r.contender} {r.variant} ({r.status})")
        else:
            _say(f"event {event}")
        t0 = time.time()
        original(self, event, report, **info)
        if event in ("start", "done"):
            _say(f"{time.time() - t0:7.3f} s  {'header' if event == 'start' else 'report tables'} printed", at=t0)

    view.LiveProgress.__call__ = progress
    sys.argv[0] = "lab"
    code = 0
    try:
        lab.cli.main(argv)
    except SystemExit as e:
        code = e.code
    _say("main returned")
    import atexit

    t0 = time.time()
    atexit._run_exitfuncs()
    _say(f"{time.time() - t0:7.3f} s  atexit handlers", at=t0)
    sys.stdout.flush()
    _say("teardown begins (the usual exit)")
    sys.exit(code)


# --- the parent ------------------------------------------------------------------------------------------
def byte_code_note() -> str:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return "torch: not installed"
    folder = Path(spec.origin).parent
    cached = (folder / "__pycache__").is_dir()
    return (f"torch at {folder}: __pycache__ {'present' if cached else 'absent'}, folder writable "
            f"{os.access(folder, os.W_OK)}; sys.dont_write_bytecode {sys.flags.dont_write_bytecode}, "
            f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE')!r}, "
            f"PYTHONPYCACHEPREFIX={os.environ.get('PYTHONPYCACHEPREFIX')!r}")


def timed_run(argv, env, limit_s: float = 70.0):
    """Run ``argv``; returns (exit code, its output, wall seconds, epoch at start, epoch at its end,
    [(epoch, text)] of the instrumented child's stamps)."""
    import threading

    start_epoch, t0 = time.time(), time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    out, err, stamps = [], [], []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    killer = threading.Timer(limit_s, proc.kill)
    killer.start()
    for line in proc.stderr:
        if line.startswith(STAMP):
            at, _, text = line[len(STAMP):].rstrip("\n").partition(" ")
            stamps.append((float(at), text))
        else:
            err.append(line)
    proc.wait()
    wall, end_epoch = time.perf_counter() - t0, time.time()
    killer.cancel()
    reader.join(5)
    rc = proc.returncode if proc.returncode != -9 else f"killed after {limit_s:g} s"
    return rc, "".join(out) + "".join(err), wall, start_epoch, end_epoch, stamps


def timeline(stamps, start: float, end: float) -> None:
    """Run 2's stamps, seconds since the process started, and the teardown after the last one."""
    for at, text in sorted(stamps, key=lambda s: s[0]):
        print(f"  {at - start:6.2f}  {text}")
    if stamps:
        last = max(at for at, _ in stamps)
        print(f"  {end - start:6.2f}  process ended: {end - last:.3f} s of interpreter teardown after the last stamp "
              "(what exit_now skips)")


def import_summary(text: str, at_least_ms: float = 30.0) -> list[str]:
    """The ``-X importtime`` lines of imports that took ``at_least_ms`` or more (cumulative), top levels only."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        try:
            us = int(cumulative)
        except ValueError:
            continue
        depth = (len(name) - len(name.lstrip())) // 2
        if us >= at_least_ms * 1e3 and depth <= 2:
            rows.append((us, f"{us / 1e6:6.3f} s  {'  ' * depth}{name.strip()}"))
    return [text for _, text in sorted(rows, reverse=True)[:25]]


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        sys.path.insert(0, str(ROOT))
        child(sys.argv[2:])
        return
    args = [a for a in sys.argv[1:] if a != "--pyc"]
    out = Path(args[0] if args else os.environ.get("OUT") or "gpu-out").resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if "--pyc" in sys.argv:
        import tempfile

        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "second-run-pycache")
        print(f"--pyc: byte code written to and read from {env['PYTHONPYCACHEPREFIX']}")
    print(byte_code_note(), flush=True)
    lab = [sys.executable, "-m", "lab", *COMMAND]
    prof = out / "run4.prof"
    runs = [("run 1 (first)", lab),
            ("run 2 (instrumented, the usual exit)", [sys.executable, str(Path(__file__).resolve()), "--child", *COMMAND]),
            ("run 3 (python -m lab: the second-run wall time)", lab),
            ("run 4 (cProfile, --wide)", [sys.executable, "-c", PROFILED.replace("PROF", repr(str(prof))), *COMMAND,
                                          "--wide"]),
            ("run 5 (-X importtime)", [sys.executable, "-X", "importtime", "-m", "lab", *COMMAND])]
    walls = []
    for i, (name, argv) in enumerate(runs, 1):
        rc, text, wall, start, end, stamps = timed_run(argv, env)
        walls.append(wall)
        (out / f"run{i}.txt").write_text(text)
        print(f"{name}: {wall:.1f} s, exit {rc}", flush=True)
        if i == 2:
            timeline(stamps, start, end)
        if i == 5:
            print("  imports of 30 ms or more (cumulative; -X importtime itself adds a little):")
            for line in import_summary(text):
                print("  " + line)
        if rc:
            print(str(text)[-3000:])
    for line in (out / "run3.txt").read_text().splitlines()[:14]:
        if "copy bandwidth" in line or line.startswith(("timed calls", "the noise", "GB/s", "NumPy")):
            print(line)
    if prof.exists():
        with open(out / "run4-prof.txt", "w") as f:
            stats = pstats.Stats(str(prof), stream=f)
            stats.sort_stats("cumulative").print_stats(45)
            stats.sort_stats("tottime").print_stats(45)
    print("wall times (s):", " ".join(f"{w:.1f}" for w in walls))


if __name__ == "__main__":
    main()
