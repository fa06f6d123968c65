"""On a GPU: the wall time of ``lab run matvec --threads 1024`` three times in a row (the kernel cache
and the remembered copy bandwidth warm after the first), the third under cProfile.

    python scripts/second_run_gpu.py [OUT] [--pyc]   # OUT: a folder (default $OUT, else ./gpu-out)

--pyc: the three runs may write and read byte code (PYTHONDONTWRITEBYTECODE unset, PYTHONPYCACHEPREFIX
in OUT's parent's temp folder), as on a normal install: the first run then also compiles the
modules, the later ones only load them.

Prints each run's wall time (run 2's also by phase: start-up, then each row's "compile + check" and
"time" stages, from the progress lines' arrival) and whether this Python can write byte code for torch (a venv installed
with --no-compile that cannot write __pycache__ compiles every torch module on every run: seconds
that a normal install does not spend). Writes runN.txt (each run's output), run3.prof and
run3-prof.txt (cumulative and internal time, top 45) to OUT. Under 120 s on an H100.
"""
from __future__ import annotations

import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

COMMAND = ["run", "matvec", "--threads", "1024"]
MAIN = "import sys; from lab.cli import main; sys.argv[0] = 'lab'; main()"
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
    """Run ``argv``; returns (exit code, its output, [(seconds since start, line)] of the progress
    lines ``lab: ...`` as they came: stderr is read line by line, stdout after)."""
    import threading

    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    stamps, err = [], []
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    killer = threading.Timer(limit_s, proc.kill)
    killer.start()
    for line in proc.stderr:
        err.append(line)
        if line.startswith("lab: "):
            stamps.append((time.perf_counter() - t0, line.strip()))
    proc.wait()
    killer.cancel()
    reader.join(5)
    rc = proc.returncode if proc.returncode != -9 else f"killed after {limit_s:g} s"
    return rc, "".join(out) + "".join(err), stamps


def phases(stamps, wall: float) -> None:
    """Run 2's wall time by phase: start-up (interpreter, imports, device, inputs, reference, copy
    bandwidth) until the first progress line, then each stage until the next, then the rest."""
    if not stamps:
        return
    print(f"  {stamps[0][0]:6.2f} s  start-up until the first stage (imports, device, inputs, reference)")
    for (t, line), (t_next, _) in zip(stamps, stamps[1:] + [(wall, "")]):
        print(f"  {t_next - t:6.2f} s  {line.removeprefix('lab: ').rstrip(' …')}"
              + ("  (then: report, exit)" if t_next == wall else ""))


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--pyc"]
    out = Path(args[0] if args else os.environ.get("OUT") or "gpu-out")
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if "--pyc" in sys.argv:
        import tempfile

        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "second-run-pycache")
        print(f"--pyc: byte code written to and read from {env['PYTHONPYCACHEPREFIX']}")
    print(byte_code_note(), flush=True)
    walls = []
    for i in (1, 2, 3):
        prof = out / "run3.prof"
        code = PROFILED.replace("PROF", repr(str(prof))) if i == 3 else MAIN
        t0 = time.perf_counter()
        rc, text, stamps = timed_run([sys.executable, "-c", code, *COMMAND, *(["--wide"] if i == 3 else [])], env)
        walls.append(time.perf_counter() - t0)
        (out / f"run{i}.txt").write_text(text)
        print(f"run {i}{' (cProfile, --wide)' if i == 3 else ''}: {walls[-1]:.1f} s, exit {rc}", flush=True)
        if i == 2:
            phases(stamps, walls[-1])
        if rc:
            print(str(text)[-3000:])
    for line in (out / "run2.txt").read_text().splitlines()[:12]:
        if "copy bandwidth" in line or line.startswith(("timed calls", "the noise", "GB/s")):
            print(line)
    if (out / "run3.prof").exists():
        with open(out / "run3-prof.txt", "w") as f:
            stats = pstats.Stats(str(out / "run3.prof"), stream=f)
            stats.sort_stats("cumulative").print_stats(45)
            stats.sort_stats("tottime").print_stats(45)
    print("wall times (s):", " ".join(f"{w:.1f}" for w in walls))


if __name__ == "__main__":
    main()
