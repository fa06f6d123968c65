"""NVIDIA compute-sanitizer: where it is, how to ask Numba for line info, and its reports parsed
into file:line, kernel, thread and block. Shared by ``lab sanitize`` (:mod:`lab.inspect.sanitize`) and
the exercise checker's GPU diagnoses (:mod:`lab.teach.workspace`). Nothing here prints.

compute-sanitizer (CUDA toolkit, "Compute Sanitizer" user guide) runs a program with its kernels
instrumented: ``memcheck`` (out-of-bounds and misaligned accesses), ``racecheck`` (shared-memory
hazards between threads of a block), ``synccheck`` (barriers that not every thread reaches, or
with a wrong mask), ``initcheck`` (reads of global memory never written). It is found on PATH,
under $CUDA_HOME/bin or /usr/local/cuda/bin, or in the ``nvidia-cuda-sanitizer-api-cu12`` wheel
(``nvidia/cuda_sanitizer_api/bin/compute-sanitizer``: ``pip install 'numba-gpu-lab[sanitize]'``).

Report formats parsed (:func:`parse_report`; the guide's "Understanding Memcheck Errors" and
"Racecheck Analysis Reports", old and new location styles)::

    ========= Invalid __global__ write of size 4 bytes
    =========     at cudapy::kernels::vecadd::k+0x170 in /lab/kernels/vecadd.py:42
    =========     by thread (31,0,0) in block (3,0,0)
    ========= Error: Race reported between Write access at k+0xb0 in /lab/kernels/softmax.py:28
    =========     and Read access at k+0xc0 in /lab/kernels/softmax.py:30 [1024 hazards]
"""
from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import sys
from dataclasses import dataclass, field

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
FIX = ("install the CUDA toolkit (compute-sanitizer under /usr/local/cuda/bin), or pip install "
       "'numba-gpu-lab[sanitize]' (nvidia-cuda-sanitizer-api-cu12 ships compute-sanitizer)")
WHEEL_PATH = os.path.join("nvidia", "cuda_sanitizer_api", "bin", "compute-sanitizer")
PREFIX = "========="


def command(exe: str, tool: str, log_file: str | None = None) -> list[str]:
    """The compute-sanitizer command line the lab runs a child under: one ``--tool``, no host
    backtraces, and no reports of CUDA API calls that returned an error (``--report-api-errors no``:
    Numba's driver probes, e.g. cuGetProcAddress_v2 for entry points the driver lacks, are expected
    errors, not kernel hazards; seen on the H100). Compute Sanitizer user guide, "Command
    Line Options"."""
    return [exe, "--tool", tool, "--show-backtrace", "no", "--report-api-errors", "no", "--print-limit", "100",
            *(["--log-file", log_file] if log_file else [])]


def find_tool(name: str, env_var: str, extra: list[str] = ()) -> str | None:
    """A CUDA tool's executable: $``env_var`` (used as given, or None when it is not executable), PATH,
    $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, then the ``extra`` candidate paths in order."""
    env = os.environ.get(env_var)
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    cands = [os.path.join(h, "bin", name) for h in homes if h] + list(extra)
    return next((c for c in cands if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def find_sanitizer() -> str | None:
    """compute-sanitizer: $LAB_COMPUTE_SANITIZER, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, the
    nvidia-cuda-sanitizer-api wheel (in this environment's site-packages)."""
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    extra = [os.path.join(h, "compute-sanitizer", "compute-sanitizer") for h in homes if h]
    try:
        spec = importlib.util.find_spec("nvidia.cuda_sanitizer_api")
    except (ImportError, ValueError):
        spec = None
    for where in (spec.submodule_search_locations if spec and spec.submodule_search_locations else []):
        extra.append(os.path.join(where, "bin", "compute-sanitizer"))
    for site in sys.path:
        extra += glob.glob(os.path.join(site, WHEEL_PATH))
    return find_tool("compute-sanitizer", "LAB_COMPUTE_SANITIZER", extra)


def unavailable_reason() -> str:
    return f"compute-sanitizer was not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, the wheel): {FIX}"


# --- parsing ---------------------------------------------------------------------------------------------
@dataclass
class Report:
    """One sanitizer report: its kind in the sanitizer's words, where (file:line), who."""

    tool: str
    kind: str  # e.g. "Invalid __global__ write of size 4 bytes", "Race (Write / Read)"
    file: str | None = None
    line: int | None = None
    kernel: str | None = None
    thread: list | None = None
    block: list | None = None
    count: int = 1  # hazards a race report stands for; 1 otherwise
    others: list = field(default_factory=list)  # further "file:line" of the report (a race's other side)
    text: str = ""  # the report's lines, prefix stripped

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "?"

    def one_line(self) -> str:
        """kind at file:line (thread, block), as the simulator's diagnoses read."""
        who = []
        if self.thread is not None:
            who.append(f"thread {tuple(self.thread)}")
        if self.block is not None:
            who.append(f"block {tuple(self.block)}")
        other = f" and {self.others[0]}" if self.others else ""
        return f"{self.kind} at {self.where}{other}" + (f" ({', '.join(who)})" if who else "")


_LOC = re.compile(r"\bin (?P<file>[^\s:]+?):(?P<line>\d+)\b")
_KERNEL_NEW = re.compile(r"\bat\s+(?P<name>[^\n]+?)\+0x[0-9a-fA-F]+")
_KERNEL_OLD = re.compile(r"\bin [^\s:]+?:\d+:(?P<name>\S.*)$")
_WHO = re.compile(r"thread \((\d+),\s*(\d+),\s*(\d+)\)\s+in block \((\d+),\s*(\d+),\s*(\d+)\)")
_RACE = re.compile(r"Race reported between (\w+) access.*?and (\w+) access", re.S)
_HAZARD = re.compile(r"Potential (\w+) hazard", re.I)
_SKIP = ("COMPUTE-SANITIZER", "CUDA-MEMCHECK", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY",
         "Target application returned",
         "Program hit ")  # a host CUDA API call that returned an error (see command()): not a kernel hazard


def parse_report(text: str, tool: str, root: str | None = None) -> list[Report]:
    """The reports in compute-sanitizer's output ``text`` (other lines are ignored). Paths under
    ``root`` (default: the working folder) are shown relative to it."""
    blocks: list[list[str]] = []
    for raw in text.splitlines():
        if not raw.startswith(PREFIX):
            continue
        body = raw[len(PREFIX):]
        if not body.strip():
            continue
        if not body.startswith("  ") and body.startswith(" "):  # a report's first line
            first = body.strip()
            if any(first.startswith(s) for s in _SKIP) or first.startswith(("Saved host backtrace", "Host Frame")):
                blocks.append([])  # ends the previous report
                continue
            blocks.append([first])
        elif blocks and blocks[-1]:
            line = body.strip()
            if not line.startswith(("Host Frame", "Saved host backtrace", "Device Frame")):
                blocks[-1].append(line)
    return [_report(b, tool, root) for b in blocks if b]


def _report(lines: list[str], tool: str, root: str | None) -> Report:
    joined = "\n".join(lines)
    head = re.sub(r"^(Error|ERROR|Warning|WARNING|WARN|Info|INFO):\s*", "", lines[0])
    race = _RACE.search(joined)
    hazard = _HAZARD.search(head)
    if race:
        kind = f"Race ({race.group(1)} / {race.group(2)})"
    elif hazard:
        kind = f"{hazard.group(1).upper()} hazard"
    else:
        kind = head.rstrip(" :")
    locs = [(m.group("file"), int(m.group("line"))) for m in _LOC.finditer(joined)]
    kernel = None
    m = _KERNEL_NEW.search(joined)
    if m and not m.group("name").startswith("0x"):
        kernel = m.group("name").strip()
    else:
        for line in lines:
            m = _KERNEL_OLD.search(line)
            if m:
                kernel = m.group("name").strip()
                break
    who = _WHO.search(joined)
    counts = [int(n) for n in re.findall(r"\[(\d+) hazards?\]", joined)]
    rel = [(_relative(f, root), n) for f, n in locs]
    r = Report(tool, kind, text=joined, kernel=kernel, count=sum(counts) if counts else 1)
    if rel:
        r.file, r.line = rel[0]
        r.others = list(dict.fromkeys(f"{f}:{n}" for f, n in rel[1:] if (f, n) != rel[0]))
    if who:
        g = [int(x) for x in who.groups()]
        r.thread, r.block = g[:3], g[3:]
    return r


def _relative(path: str, root: str | None) -> str:
    root = os.path.abspath(root or os.getcwd())
    full = os.path.abspath(path)
    return os.path.relpath(full, root) if full.startswith(root + os.sep) else path


def summary_counts(text: str) -> dict:
    """{"errors": N, "hazards_displayed": N} from the ERROR / RACECHECK SUMMARY lines, when present."""
    out = {}
    m = re.search(r"ERROR SUMMARY:\s*(\d+) error", text)
    if m:
        out["errors"] = int(m.group(1))
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
    if m:
        out.update(hazards_displayed=int(m.group(1)), race_errors=int(m.group(2)), race_warnings=int(m.group(3)))
    return out


def lineinfo_on(dispatcher) -> None:
    """Ask Numba to emit line info for ``dispatcher`` if it has not compiled yet (lineinfo=True:
    a line table for the tools, code generation unchanged; numba-cuda's @cuda.jit option)."""
    opts = getattr(dispatcher, "targetoptions", None)
    if isinstance(opts, dict) and not opts.get("debug") and not getattr(dispatcher, "overloads", None):
        opts["lineinfo"] = True


def kernel_key(kernel) -> str:
    """How a report finds a kernel: "file#qualname|first line|last line|name"."""
    fn = getattr(kernel, "py_func", None) or kernel
    code = getattr(fn, "__code__", None)
    if code is None:
        return f"?|0|0|{getattr(fn, '__name__', '?')}"
    last = max((ln for _, _, ln in code.co_lines() if ln), default=code.co_firstlineno)
    return f"{code.co_filename}#{fn.__qualname__}|{code.co_firstlineno}|{last}|{fn.__name__}"
