"""``lab sanitize KERNEL``: each Numba rung once under NVIDIA compute-sanitizer, reports mapped to
the Python file and line. Data only: the CLI prints.

compute-sanitizer (CUDA toolkit, "Compute Sanitizer" user guide) runs a program with its kernels
instrumented: ``memcheck`` (out-of-bounds and misaligned accesses), ``racecheck`` (shared-memory
hazards between threads of a block), ``synccheck`` (barriers that not every thread reaches, or
with a wrong mask), ``initcheck`` (reads of global memory never written). It is found on PATH,
under $CUDA_HOME/bin or /usr/local/cuda/bin, or in the ``nvidia-cuda-sanitizer-api-cu12`` wheel
(``nvidia/cuda_sanitizer_api/bin/compute-sanitizer``: ``pip install 'numba-gpu-lab[sanitize]'``).

The checked program is a child Python process (:func:`_child_main`) that turns on line info for
every lab kernel before it compiles (``lineinfo=True``: a line table, code generation unchanged)
and runs each rung once through :func:`lab.core.resources.run_variant`, recording which kernels
each rung launched. Reports name a kernel; :func:`attribute` gives each report to the rungs that
launched that kernel. A rung that leaves the CUDA context broken (a memcheck error aborts its
kernel) ends the child: the remaining rungs run in a fresh one.

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
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field

from lab.core.errors import SCHEMA_VERSION, LabError

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
FIX = ("install the CUDA toolkit (compute-sanitizer under /usr/local/cuda/bin), or pip install "
       "'numba-gpu-lab[sanitize]' (nvidia-cuda-sanitizer-api-cu12 ships compute-sanitizer)")
WHEEL_PATH = os.path.join("nvidia", "cuda_sanitizer_api", "bin", "compute-sanitizer")
PREFIX = "========="


def find_sanitizer() -> str | None:
    """compute-sanitizer: $LAB_COMPUTE_SANITIZER, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, the
    nvidia-cuda-sanitizer-api wheel (in this environment's site-packages)."""
    env = os.environ.get("LAB_COMPUTE_SANITIZER")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    cands = [os.path.join(h, "bin", "compute-sanitizer") for h in homes if h]
    cands += [os.path.join(h, "compute-sanitizer", "compute-sanitizer") for h in homes if h]
    try:
        spec = importlib.util.find_spec("nvidia.cuda_sanitizer_api")
    except (ImportError, ValueError):
        spec = None
    for where in (spec.submodule_search_locations if spec and spec.submodule_search_locations else []):
        cands.append(os.path.join(where, "bin", "compute-sanitizer"))
    for site in sys.path:
        cands += glob.glob(os.path.join(site, WHEEL_PATH))
    return next((c for c in cands if os.path.isfile(c) and os.access(c, os.X_OK)), None)


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
_SKIP = ("COMPUTE-SANITIZER", "CUDA-MEMCHECK", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application returned")


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


def attribute(reports: list[Report], launched: dict[str, list[str]]) -> tuple[dict, list[Report]]:
    """({variant: its reports}, unattributed): a report goes to every variant that launched a kernel
    whose Python name is a whole word of the report's kernel name (or, without a name, whose
    source file holds the report's line)."""
    out: dict = {v: [] for v in launched}
    lost = []
    for r in reports:
        hit = False
        for v, names in launched.items():
            for name in names:
                fn, first, last, base = (name.split("|") + ["", "0", "0", ""])[:4]
                if r.kernel and re.search(rf"(?<![A-Za-z0-9_]){re.escape(base or fn)}(?![A-Za-z0-9_])", r.kernel):
                    hit = True
                elif not r.kernel and r.file and fn and os.path.abspath(r.file) == os.path.abspath(fn.split("#")[0]) \
                        and int(first) <= (r.line or -1) <= int(last):
                    hit = True
                else:
                    continue
                out[v].append(r)
                break
        if not hit:
            lost.append(r)
    return out, lost


# --- the command -------------------------------------------------------------------------------------------
def sanitize(kernel: str, backend: str, variants: list[str] | None = None, tools: list[str] | None = None,
             size: str | None = None, threads: int | None = None, dtype: str = "float32", seed: int = 0,
             progress=None, timeout: float = 600) -> dict:
    """The ``lab sanitize --json`` document (docs/schemas/sanitize.json). LabError (one line) when
    compute-sanitizer is absent, there is no GPU, or on bad input."""
    exe = find_sanitizer()
    if exe is None:
        raise LabError(unavailable_reason())
    tools = tools or ["memcheck"]
    for t in tools:
        if t not in TOOLS:
            raise LabError(f"unknown --tool {t!r}; choose from: {', '.join(TOOLS)}")
    if backend != "gpu":
        raise LabError("compute-sanitizer checks kernels on a CUDA GPU, and this run uses the CUDA simulator; "
                       "in the simulator lab exercise check diagnoses races and out-of-bounds accesses")
    import kernels as K

    try:
        spec = K.load(kernel)
    except KeyError as e:
        raise LabError(e.args[0]) from None
    names = list(variants or spec.variants)
    for v in names:
        if v not in spec.variants:
            raise LabError(f"unknown variant of {spec.name} {v!r}; choose from: {', '.join(spec.variants)}")
    try:
        shape = spec.parse_size(size) if size else spec.default_size(True)
    except ValueError as e:
        raise LabError(str(e)) from None
    threads = threads if threads is not None else 256
    rows, notes, lost_all = [], [], []
    for n, tool in enumerate(tools):
        if progress:
            progress(n, len(tools), f"{tool}: {len(names)} rungs")
        result = run_tool(exe, tool, spec.name, names, shape, threads, dtype, seed, timeout)
        by_variant, lost = attribute(result["reports"], result["launched"])
        lost_all += lost
        for v in names:
            row = {"variant": v, "tool": tool}
            reps = by_variant.get(v, [])
            if v in result["skipped"]:
                row.update(status="skipped", count=0, first=None, reports=[], reason=result["skipped"][v])
            else:  # a rung whose run raised after the sanitizer reported on it is "errors", not "FAIL"
                status = "errors" if reps else ("FAIL" if v in result["failed"] else "clean")
                row.update(status=status, count=sum(r.count for r in reps),
                           first=_as_dict(reps[0]) if reps else None, reports=[_as_dict(r) for r in reps[:20]],
                           reason=result["failed"].get(v, ""))
            rows.append(row)
        notes += result["notes"]
    if progress:
        progress(len(tools), len(tools), "done")
    return {"schema_version": SCHEMA_VERSION, "kernel": spec.name, "size": list(shape), "dtype": dtype,
            "threads_per_block": threads, "tools": tools, "sanitizer": exe, "rows": rows,
            "unattributed": [_as_dict(r) for r in lost_all[:20]], "notes": notes}


def _as_dict(r: Report) -> dict:
    return {**asdict(r), "where": r.where, "summary": r.one_line()}


def run_tool(exe: str, tool: str, kernel: str, variants: list[str], shape, threads: int, dtype: str, seed: int,
             timeout: float = 600, target: list[str] | None = None) -> dict:
    """Run the variants under ``compute-sanitizer --tool TOOL`` in child processes (a fresh child
    for the variants after one that broke the context). Returns {"reports": [Report],
    "launched": {variant: kernel keys}, "skipped": {variant: why}, "failed": {variant: why},
    "notes": [...], "output": the sanitizer's text}."""
    from lab.core.session import child_env

    env = child_env(NUMBA_ENABLE_CUDASIM="0", NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", PYTHONUNBUFFERED="1",
                    CUDA_CACHE_DISABLE="1")
    todo = list(variants)
    reports, launched, skipped, failed, notes, output = [], {}, {}, {}, [], []
    with tempfile.TemporaryDirectory(prefix="lab-sanitize-") as tmp:
        while todo:
            req = os.path.join(tmp, "request.json")
            out = os.path.join(tmp, f"result-{len(output)}.json")
            with open(req, "w") as f:
                json.dump({"kernel": kernel, "variants": todo, "size": list(shape), "threads": threads,
                           "dtype": dtype, "seed": seed}, f)
            cmd = [exe, "--tool", tool, "--show-backtrace", "no", "--print-limit", "100",
                   *(target or [sys.executable, "-c", "import sys; from lab.inspect.sanitize import _child_main; "
                                "_child_main(sys.argv[1], sys.argv[2])"]), req, out]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise LabError(f"compute-sanitizer --tool {tool} took more than {timeout:.0f} s; "
                               "try a smaller --size or one --variant") from None
            text = proc.stdout + proc.stderr
            output.append(text)
            reports += parse_report(text, tool)
            done = {}
            if os.path.exists(out):
                with open(out) as f:
                    done = json.load(f)
            for v, keys in done.get("launched", {}).items():
                launched[v] = keys
            skipped.update(done.get("skipped", {}))
            finished = set(done.get("launched", {})) | set(done.get("skipped", {}))
            broken = done.get("broken")
            if broken:
                failed[broken["variant"]] = broken["reason"]
                finished.add(broken["variant"])
            if not finished:  # the child died before finishing its first rung
                tail = [line for line in text.splitlines() if line.strip() and not line.startswith(PREFIX)]
                if "error while loading" in text or proc.returncode == 127 or not os.path.exists(out) and not reports:
                    raise LabError(f"compute-sanitizer --tool {tool} could not run the check: "
                                   f"{(tail or text.strip().splitlines() or ['no output'])[-1][:200]}")
                failed[todo[0]] = (tail[-1] if tail else f"the child exited with code {proc.returncode}")[:200]
                finished.add(todo[0])
            todo = [v for v in todo if v not in finished]
    if any("lineinfo" in t and "unavailable" in t for t in output):
        notes.append("line info was not available for some kernels")
    return {"reports": reports, "launched": launched, "skipped": skipped, "failed": failed, "notes": notes,
            "output": "\n".join(output)}


# --- the checked child ---------------------------------------------------------------------------------------
def lineinfo_on(dispatcher) -> None:
    """Ask Numba to emit line info for ``dispatcher`` if it has not compiled yet (lineinfo=True:
    a line table for the tools, code generation unchanged; numba-cuda's @cuda.jit option)."""
    opts = getattr(dispatcher, "targetoptions", None)
    if isinstance(opts, dict) and not opts.get("debug") and not getattr(dispatcher, "overloads", None):
        opts["lineinfo"] = True


def lineinfo_everywhere(prefixes=("kernels", "exercises")) -> None:
    """:func:`lineinfo_on` for every dispatcher that a loaded module under ``prefixes`` holds."""
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.split(".")[0] in prefixes:
            continue
        for v in list(vars(mod).values()):
            if hasattr(v, "targetoptions") and hasattr(v, "py_func"):
                lineinfo_on(v)


def kernel_key(kernel) -> str:
    """How a report finds a kernel: "file#qualname|first line|last line|name"."""
    fn = getattr(kernel, "py_func", None) or kernel
    code = getattr(fn, "__code__", None)
    if code is None:
        return f"?|0|0|{getattr(fn, '__name__', '?')}"
    last = max((ln for _, _, ln in code.co_lines() if ln), default=code.co_firstlineno)
    return f"{code.co_filename}#{fn.__qualname__}|{code.co_firstlineno}|{last}|{fn.__name__}"


def _child_main(request_path: str, result_path: str) -> None:
    """Under compute-sanitizer: each variant once (line info on), recording the kernels it launched;
    the result file is rewritten after every variant so a crash keeps what was done."""
    with open(request_path) as f:
        req = json.load(f)
    from lab.core.session import select

    select("gpu")
    import kernels as K
    from lab.core import resources

    spec = K.load(req["kernel"])
    lineinfo_everywhere()
    result = {"launched": {}, "skipped": {}, "broken": None}

    def save():
        with open(result_path, "w") as f:
            json.dump(result, f)

    for v in req["variants"]:
        why = spec.variants[v].accepts(req["threads"])
        if why:
            result["skipped"][v] = f"{v} {why}"
            save()
            continue
        keys: list = []

        def on_launch(kernel, grid, block, dyn, args, keys=keys):
            lineinfo_on(kernel)
            k = kernel_key(kernel)
            if k not in keys:
                keys.append(k)

        print(f"@@lab-sanitize {v}", flush=True)
        try:
            resources.run_variant(spec, v, tuple(req["size"]), req["threads"], req["dtype"], req["seed"],
                                  on_launch=on_launch)
        except Exception as e:  # the context may be broken now: the parent restarts with the rest
            result["launched"][v] = keys
            result["broken"] = {"variant": v, "reason": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
            save()
            return
        result["launched"][v] = keys
        save()
