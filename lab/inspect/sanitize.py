"""``lab sanitize KERNEL``: each Numba rung once under NVIDIA compute-sanitizer, reports mapped to
the Python file and line. Data only: the CLI prints.

The sanitizer itself (where it is, line info, the report parser) is :mod:`lab.core.sanitizer`,
shared with the exercise checker. The checked program is a child Python process
(:func:`_child_main`) that turns on line info for every lab kernel before it compiles
(``lineinfo=True``: a line table, code generation unchanged) and runs each rung once through
:func:`lab.core.resources.run_variant`, recording which kernels each rung launched. Reports name a
kernel; :func:`attribute` gives each report to the rungs that launched that kernel. A rung that
leaves the CUDA context broken (a memcheck error aborts its kernel) ends the child: the remaining
rungs run in a fresh one.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict

from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core.sanitizer import (PREFIX, TOOLS, Report, command, find_sanitizer, kernel_key, lineinfo_on,
                                parse_report, unavailable_reason)
import kernels as K
from lab.core import catalog, simulator, resources
from lab.core.session import child_env


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
    spec = catalog.load(kernel)
    names = list(variants or spec.variants)
    for v in names:
        if v not in spec.variants:
            raise LabError(f"unknown variant of {spec.name} {v!r}; choose from: {', '.join(spec.variants)}")
    shape = catalog.problem_shape(spec, size, lambda: spec.default_size(True))
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
            cmd = [*command(exe, tool),
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
def lineinfo_everywhere(prefixes=("kernels", "exercises")) -> None:
    """:func:`lineinfo_on` for every dispatcher that a loaded module under ``prefixes`` holds."""
    for name, mod in list(sys.modules.items()):
        if mod is None or name.split(".")[0] not in prefixes:
            continue
        for v in list(vars(mod).values()):
            if hasattr(v, "targetoptions") and hasattr(v, "py_func"):
                lineinfo_on(v)


def _child_main(request_path: str, result_path: str) -> None:
    """Under compute-sanitizer: each variant once (line info on), recording the kernels it launched;
    the result file is rewritten after every variant so a crash keeps what was done."""
    with open(request_path) as f:
        req = json.load(f)
    simulator.select("gpu")
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
