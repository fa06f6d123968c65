"""Regenerate (or check) the command transcripts in README.md, exercises/README.md and docs/*.md.

A transcript is a region of a markdown file:

    <!-- transcript:NAME backend=sim -->
    _how it was made (written by this script)_
    ```
    $ lab counters matvec --sim
    ...its output...
    ```
    <!-- /transcript -->

Each fenced block in the region starts with ``$ COMMAND`` (a ``lab`` command); the script runs it as a
user would, piped, at 80 columns (``python -m lab ...``, stderr's progress lines dropped) and writes its
stdout under the ``$`` line, with one line above the block saying where and when it ran and how long it
took. ``backend=sim`` transcripts run in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) on any
machine; ``backend=gpu`` ones only on a GPU (``--gpu``).

    python scripts/transcripts.py             # rewrite every simulator transcript (the commands run at once)
    python scripts/transcripts.py --gpu       # on a GPU machine: the GPU transcripts
    python scripts/transcripts.py --check     # exit 1 when a transcript's structure drifted from its command

``--check`` (tests/docs/test_transcripts.py) compares structure, not numbers: seeds, timings and errors
change from run to run, so every number is masked, except ``file.py:LINE`` references, which must match.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = 80

_REGION = re.compile(r"^<!-- transcript:(?P<name>[\w.-]+)(?P<opts>[^>]*?)-->\n(?P<body>.*?)^<!-- /transcript -->$",
                     re.MULTILINE | re.DOTALL)
_BLOCK = re.compile(r"^```[a-z]*\n\$ (?P<cmd>[^\n]*)\n(?P<out>.*?)^```$", re.MULTILINE | re.DOTALL)


def doc_files(root: Path = ROOT) -> list[Path]:
    """The markdown files whose commands and transcripts are tested."""
    return [root / "README.md", root / "exercises" / "README.md", *sorted((root / "docs").glob("*.md"))]


@dataclass
class Transcript:
    path: Path
    name: str
    backend: str  # "sim" or "gpu"
    command: str
    output: str  # as written in the file (without the $ line)


def find(paths=None) -> list[Transcript]:
    """Every ``$`` block of every transcript region."""
    found = []
    for path in paths or doc_files():
        text = path.read_text(encoding="utf-8")
        for region in _REGION.finditer(text):
            opts = dict(kv.split("=", 1) for kv in region["opts"].split() if "=" in kv)
            backend = opts.get("backend", "sim")
            if backend not in ("sim", "gpu"):
                raise SystemExit(f"{path}: transcript {region['name']}: backend must be sim or gpu, not {backend}")
            blocks = list(_BLOCK.finditer(region["body"]))
            if not blocks:
                raise SystemExit(f"{path}: transcript {region['name']} has no ```-block starting with '$ COMMAND'")
            found += [Transcript(path, region["name"], backend, b["cmd"].strip(), b["out"]) for b in blocks]
    return found


def run(command: str, backend: str) -> tuple[int, str, float]:
    """(exit code, stdout, wall seconds) of one documented ``lab`` command, as a user runs it."""
    argv = shlex.split(command)
    if argv[0] != "lab":
        raise SystemExit(f"transcripts run lab commands only, not: {command}")
    env = {**os.environ, "COLUMNS": str(COLUMNS), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("LAB_DEBUG", None)
    if backend == "sim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "lab", *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    return proc.returncode, proc.stdout, time.perf_counter() - t0


def run_all(transcripts: list[Transcript], jobs: int | None = None) -> list[tuple[int, str, float]]:
    """Run the transcripts' commands, ``jobs`` at once (default: all; they mostly wait on one core each)."""
    with ThreadPoolExecutor(max_workers=jobs or max(1, len(transcripts))) as pool:
        return list(pool.map(lambda t: run(t.command, t.backend), transcripts))


# --- structure -------------------------------------------------------------------------------------------
_FILE_LINE = re.compile(r"\b([\w/]+\.py):(\d+)")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
_TIME_UNIT = re.compile(r"# (?:ns|µs|us|ms|s)\b")


def structure(text: str) -> list[str]:
    """The words of a transcript with every number masked (``#``) and time units folded (``# t``), line
    breaks and column padding ignored; ``file.py:LINE`` kept exact."""
    refs: list[str] = []

    def keep(m):
        refs.append(m.group(0))
        return chr(0xE000 + len(refs) - 1)  # a private-use character: no digit for _NUMBER to mask

    masked = _FILE_LINE.sub(keep, text)
    masked = _TIME_UNIT.sub("# t", _NUMBER.sub("#", masked))
    masked = re.sub("[\ue000-\uf8ff]", lambda m: refs[ord(m.group(0)) - 0xE000], masked)
    return masked.split()


def drift(t: Transcript, code: int, out: str) -> str | None:
    """Why a fresh run does not match the written transcript, or None."""
    if code != 0:
        return f"exit code {code}"
    want, got = structure(t.output), structure(out)
    if want == got:
        return None
    k = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    return f"differs at word {k}: written {' '.join(want[k:k + 8])!r}, now {' '.join(got[k:k + 8])!r}"


# --- rewriting -------------------------------------------------------------------------------------------
def _stamp(backend: str, seconds: float) -> str:
    if backend == "sim":
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        where = f"Numba's CUDA simulator, {os.cpu_count()} CPU cores ({platform.machine()}, load average {load:.1f})"
    else:
        where = _gpu_name()
    return (f"_Regenerated by `python scripts/transcripts.py{' --gpu' if backend == 'gpu' else ''}` on {date.today()}: "
            f"{where}, {COLUMNS} columns, piped; the command took {seconds:.1f} s._")


def _gpu_name() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.strip().splitlines()
        return out[0] if out else "a CUDA GPU"
    except (OSError, subprocess.SubprocessError):
        return "a CUDA GPU"


def rewrite(path: Path, results: dict[tuple[str, str], tuple[int, str, float]]) -> bool:
    """Rewrite the regions of one file whose commands were run; True when the file changed."""
    text = path.read_text(encoding="utf-8")

    def region(m):
        opts = dict(kv.split("=", 1) for kv in m["opts"].split() if "=" in kv)
        backend = opts.get("backend", "sim")
        parts = []
        for b in _BLOCK.finditer(m["body"]):
            key = (m["name"], b["cmd"].strip())
            if key not in results:
                return m.group(0)
            code, out, seconds = results[key]
            parts.append(f"{_stamp(backend, seconds)}\n```\n$ {b['cmd'].strip()}\n{out.rstrip()}\n```")
        return f"<!-- transcript:{m['name']}{m['opts']}-->\n" + "\n\n".join(parts) + "\n<!-- /transcript -->"

    new = _REGION.sub(region, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", action="store_true", help="the GPU transcripts (on a GPU machine) instead of the simulator's")
    ap.add_argument("--check", action="store_true", help="run and compare structure; write nothing")
    ap.add_argument("--jobs", type=int, default=None,
                    help="commands run at once (default: one at a time when rewriting, so each time is a lone run's; all with --check)")
    ap.add_argument("names", nargs="*", help="only these transcripts (their NAME)")
    args = ap.parse_args(argv)
    backend = "gpu" if args.gpu else "sim"
    todo = [t for t in find() if t.backend == backend and (not args.names or t.name in args.names)]
    if not todo:
        print(f"no {backend} transcripts{' named ' + ', '.join(args.names) if args.names else ''}", file=sys.stderr)
        return 2
    outcomes = run_all(todo, args.jobs or (None if args.check else 1))
    bad = 0
    for t, (code, out, seconds) in zip(todo, outcomes):
        why = drift(t, code, out)
        status = "ok" if why is None else f"DRIFT: {why}"
        print(f"{t.path.relative_to(ROOT)} {t.name}: $ {t.command} ({seconds:.1f} s): {status}", file=sys.stderr)
        if code != 0:
            bad += 1
        elif args.check and why:
            bad += 1
    if not args.check:
        results = {(t.name, t.command): o for t, o in zip(todo, outcomes) if o[0] == 0}
        for path in sorted({t.path for t in todo}):
            if rewrite(path, results):
                print(f"rewrote {path.relative_to(ROOT)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
