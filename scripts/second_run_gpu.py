"""On a GPU: the wall time of ``lab run matvec --threads 1024`` three times in a row (the kernel cache
and the remembered copy bandwidth warm after the first), the third under cProfile.

    python scripts/second_run_gpu.py [OUT] [--pyc]   # OUT: a folder (default $OUT, else ./gpu-out)

--pyc: the three runs may write and read byte code (PYTHONDONTWRITEBYTECODE unset, PYTHONPYCACHEPREFIX
in OUT's parent's temp folder), as on a normal install: the first run then also compiles the
modules, the later ones only load them.

Prints each run's wall time and whether this Python can write byte code for torch (a venv installed
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
        try:
            proc = subprocess.run([sys.executable, "-c", code, *COMMAND, *(["--wide"] if i == 3 else [])],
                                  capture_output=True, text=True, timeout=70, env=env)
            rc, text = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as e:
            rc, text = "timeout (70 s)", f"{e.stdout or ''}{e.stderr or ''}"
        walls.append(time.perf_counter() - t0)
        (out / f"run{i}.txt").write_text(text if isinstance(text, str) else text.decode())
        print(f"run {i}{' (cProfile, --wide)' if i == 3 else ''}: {walls[-1]:.1f} s, exit {rc}", flush=True)
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
