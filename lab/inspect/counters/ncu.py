"""Nsight Compute: the ncu command line, its CSV log read back, a contender's kernels found by their
marker and summed, and the parent that runs ncu twice over the profiled child (lab.inspect.counters.child).

ncu profiles a *separate* Python process that prepares every contender as ``lab run`` does, calls
each once to compile and warm up, and then, for each contender in turn: flushes L2 (outside any
profiled range), opens a profiler range (``cuProfilerStart``; ncu runs with ``--profile-from-start
off``), launches a one-thread marker kernel whose grid size numbers the contender, makes exactly one
call, and closes the range. A contender that launches several kernels gets the sum over its kernels
(averages weighted by each kernel's duration). The metrics: lab.inspect.counters.metrics.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from lab.core.errors import LabError
from lab.inspect.counters.engine import PERM_FIX
from lab.inspect.counters.metrics import (BANK, DURATION, LD_REQUESTS, LD_SECTORS, LDGSTS_SECTORS, PHASES, SHARED,
                                          ST_REQUESTS, ST_SECTORS, STALL_PREFIX, STALL_SUFFIX, STALLS, WAVEFRONTS,
                                          unit_scale)
from lab.inspect.counters.metrics import BY_NAME as M
from lab.inspect.counters.row import CounterRow
from lab.core.session import child_env

MARKER = "lab_counters_mark"
TIMER_KERNELS = re.compile(r"block_until_released|_flush_l2|timing\W+\w*(flush|spin)|\bspin\b")


def ncu_command(ncu: str, metrics: list[str], cache_control: str, log: str, child: list[str]) -> list[str]:
    """The ncu command line that profiles ``child`` (a Python command) into the CSV log ``log``."""
    return [ncu, "--csv", "--page", "raw", "--print-units", "base", "--profile-from-start", "off",
            "--target-processes", "all", "--cache-control", cache_control, "--replay-mode", "kernel",
            "--clock-control", "none",  # the GPU's own clocks, as lab run times it (and no clock-locking rights needed)
            "--metrics", ",".join(metrics), "--log-file", log, *child]


def _number(text: str) -> float | None:
    text = (text or "").strip().replace(",", "")
    if text in ("", "n/a", "N/A", "-"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_ncu_csv(text: str) -> list[dict]:
    """Kernels of an ``ncu --csv`` log (``--page raw``: one row a kernel, a metric a column, an
    optional row of units; or ``--page details``: one row a metric), in profiling order.

    Each: {"id", "name", "grid" (the Grid Size column or None), "metrics": {name: value in base
    units (bytes, ns, %)}}. Lines that are not CSV (``==PROF==``, the program's own output) are
    skipped. ValueError when there is no header.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no ncu CSV header in the log")
    body = [line for line in lines[start:] if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    head = rows[0]
    col = {name: i for i, name in enumerate(head)}
    kernels: dict = {}
    if "Metric Name" in col:  # details page: one row per metric
        for r in rows[1:]:
            if len(r) < len(head):
                continue
            k = kernels.setdefault(r[col["ID"]], _kernel(r, col))
            scale = unit_scale(r[col["Metric Unit"]])
            v = _number(r[col["Metric Value"]])
            k["metrics"][r[col["Metric Name"]]] = None if v is None else v * scale
        return list(kernels.values())
    fixed = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
             "Grid Size", "Device", "CC", "Kernel Time"}
    units = {}
    data = rows[1:]
    if data and not data[0][col["ID"]].strip():  # the units row
        units = {name: data[0][i].strip().lower() for name, i in col.items()}
        data = data[1:]
    for r in data:
        if len(r) < len(head):
            continue
        k = _kernel(r, col)
        for name, i in col.items():
            if name not in fixed:
                v = _number(r[i])
                k["metrics"][name] = None if v is None else v * unit_scale(units.get(name, ""))
        kernels[k["id"]] = k
    return list(kernels.values())


def _kernel(r, col) -> dict:
    grid = r[col["Grid Size"]] if "Grid Size" in col else None
    return {"id": r[col["ID"]], "name": r[col["Kernel Name"]], "grid": grid, "metrics": {}}


def _marker_index(k: dict) -> int | None:
    """The contender index a marker kernel carries in its grid size (grid = index + 1: the Grid Size
    column, or ``launch__grid_size`` where a log has it), else None."""
    if MARKER not in k["name"]:
        return None
    g = k["metrics"].get("launch__grid_size")
    if g is None and k.get("grid"):
        nums = re.findall(r"\d+", k["grid"])
        g = np.prod([int(n) for n in nums]) if nums else None
    return int(g) - 1 if g else None


def group_by_marker(kernels: list[dict]) -> dict[int, list[dict]]:
    """{contender index: its kernels}: the kernels after each marker, up to the next; the timer's
    kernels (should any have been profiled) are dropped."""
    groups: dict = {}
    current = None
    for k in kernels:
        idx = _marker_index(k)
        if idx is not None:
            current = idx
            groups.setdefault(idx, [])
        elif current is not None and not TIMER_KERNELS.search(k["name"]):
            groups[current].append(k)
    return groups


def _sum(ks, name):
    vals = [k["metrics"].get(name) for k in ks]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def _weighted(ks, name, weight=DURATION):
    """Average of ``name`` over kernels ``ks``, weighted by ``weight`` (each kernel's duration)."""
    pairs = [(k["metrics"].get(name), k["metrics"].get(weight) or 0) for k in ks]
    pairs = [(v, w) for v, w in pairs if v is not None]
    if not pairs:
        return None
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total else sum(v for v, _ in pairs) / len(pairs)


def _load_efficiency(ks):
    """The ld.global load efficiency over kernels ``ks``, weighted by load sectors; a kernel that reads 0%
    executed no ld.global (a sector an ld.global fetched carries at least one byte it uses: its loads were
    cp.async copies, LDGSTS, which the SASS-level ld metric does not see) and is left out; None if all are."""
    name = M["load_efficiency_pct"].ncu[0]
    return _weighted([k for k in ks if k["metrics"].get(name)], name, LD_SECTORS)


def _ratio(a, b):
    return a / b if a is not None and b else None


def aggregate(dram: list[dict], detail: list[dict], optional=()) -> dict:
    """One contender's numbers from its kernels of the two phases (sums; duration-weighted averages), as
    the table (lab.inspect.counters.metrics.METRICS) derives each: a dict of row fields. ``optional``: the
    names of the optional metrics the kernel declares (lab.inspect.counters.metrics.declared), added to it
    (null where ncu measured none)."""
    ld_sectors, ld_requests = _sum(detail, LD_SECTORS), _sum(detail, LD_REQUESTS)
    st_sectors, st_requests = _sum(detail, ST_SECTORS), _sum(detail, ST_REQUESTS)
    eff = _load_efficiency(detail)
    conf_ld, conf_st = _sum(detail, BANK[0]), _sum(detail, BANK[1])
    sh_ld, sh_st = _sum(detail, SHARED[0]), _sum(detail, SHARED[1])
    conflicts = None if conf_ld is None and conf_st is None else (conf_ld or 0) + (conf_st or 0)
    shared = None if sh_ld is None and sh_st is None else (sh_ld or 0) + (sh_st or 0)
    stalls = {}
    for k in detail:
        for name in k["metrics"]:
            if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX):
                stalls[name[len(STALL_PREFIX):-len(STALL_SUFFIX)]] = _weighted(detail, name)
    stalls = {k: v for k, v in stalls.items() if v}
    total = sum(stalls.values())
    top = [{"reason": k, "cycles_per_instruction": v, "pct": 100 * v / total}
           for k, v in sorted(stalls.items(), key=lambda kv: -kv[1])[:3]] if stalls else None
    duration = _sum(dram, DURATION) or _sum(detail, DURATION)
    l2_read = _sum(detail, M["l2_read_bytes"].ncu[0])
    return {
        "dram_read_bytes": _sum(dram, M["dram_read_bytes"].ncu[0]),
        "dram_write_bytes": _sum(dram, M["dram_write_bytes"].ncu[0]),
        "sectors_per_request": _ratio(ld_sectors, ld_requests),
        "store_sectors_per_request": _ratio(st_sectors, st_requests),
        "load_efficiency_pct": eff,
        "ideal_sectors_per_request": (_ratio(ld_sectors, ld_requests) * min(eff, 100.0) / 100
                                      if eff is not None and ld_requests else None),
        "load_sectors": ld_sectors, "load_requests": ld_requests,
        "l2_hit_pct": _weighted(detail, M["l2_hit_pct"].ncu[0]),
        "l2_read_bytes": None if l2_read is None else 32 * l2_read,
        "bank_conflicts": conflicts, "bank_conflicts_load": conf_ld, "bank_conflicts_store": conf_st,
        "shared_instructions": shared,
        "bank_ways": 1 + conflicts / shared if conflicts is not None and shared else None,
        **{name: _weighted(detail, M[name].ncu[0]) for name in ("achieved_occupancy_pct", "theoretical_occupancy_pct",
                                                                 "dram_throughput_pct", "sm_throughput_pct")},
        "top_stalls": top,
        "duration_ms": None if duration is None else duration / 1e6,
        "kernels": len(detail or dram),
        "kernel_names": [_short_name(k["name"]) for k in (detail or dram)],
        **_optional(detail, optional, conf_ld, sh_ld, shared),
    }


def _optional(detail, names, conf_ld, sh_ld, shared) -> dict:
    """The optional fields ``names`` of one contender (tensor pipe, shared wavefronts, SOL breakdown)."""
    waves = _sum(detail, WAVEFRONTS)
    values = {"shared_wavefronts": waves, "shared_loads": sh_ld,
              "shared_wavefronts_per_request": _ratio(waves, shared),
              "conflicts_per_shared_load": _ratio(conf_ld, sh_ld)}
    for name in ("tensor_pipe_pct", "l1_throughput_pct", "l2_throughput_pct", "issue_active_pct"):
        values[name] = _weighted(detail, M[name].ncu[0])
    for name in ("global_load_instructions", "ldgsts_instructions", "ldgsts_requests", "ldgsts_sectors"):
        values[name] = _sum(detail, M[name].ncu[0])
    values["ldgsts_sectors_per_request"] = _ratio(values["ldgsts_sectors"], values["ldgsts_requests"])
    values["ldgsts_efficiency_pct"] = _weighted(
        [k for k in detail if k["metrics"].get(M["ldgsts_efficiency_pct"].ncu[0])], M["ldgsts_efficiency_pct"].ncu[0],
        LDGSTS_SECTORS)
    return {name: values[name] for name in values if name in names}


def _short_name(name: str) -> str:
    """A kernel's name without its argument list and Numba's ``[abi:...]`` tag."""
    name = re.sub(r"\[abi:[^\]]*\]", "", name)
    depth, out = 0, []
    for ch in name:  # drop the outermost (...) argument list
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip() or name


def ncu_failure(log: str, returncode: int) -> str | None:
    """One line saying why an ncu run failed (None when it did not): no permission for the
    counters, unknown metrics, a crashed program, nothing profiled."""
    if "ERR_NVGPUCTRPERM" in log:
        return f"ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): {PERM_FIX}"
    errors = [line.split("==ERROR==", 1)[1].strip() for line in log.splitlines() if "==ERROR==" in line]
    if errors:
        return f"ncu failed: {errors[0]}"
    if "No kernels were profiled" in log:
        return "ncu profiled no kernel (is cuProfilerStart reaching the driver?)"
    if returncode != 0:
        return f"ncu exited with code {returncode}"
    return None


def unknown_metrics(log: str, metrics: list[str]) -> list[str]:
    """The requested metrics that an ncu error line names (a metric this GPU or ncu lacks)."""
    bad = []
    for line in log.splitlines():
        if "==ERROR==" in line and "metric" in line.lower():
            # ncu may name the metric as asked or as the regex it made of it (regex:^NAME\.(sum|...)$)
            bad += [m for m in metrics if m in line or (len(_base(m)) > 6 and re.search(
                re.escape(_base(m)) + r"(?![A-Za-z0-9_])", line))]  # op_ld is not op_ldgsts
            if not bad and STALLS in metrics:
                bad.append(STALLS)  # the regex: the likeliest to be refused
    return list(dict.fromkeys(bad))


def _base(metric: str) -> str:
    """A metric's name without ``regex:``, anchors and its roll-up suffix (``.sum``, ``.pct`` ...)."""
    return re.sub(r"^regex:\^?", "", metric).split(".")[0].split("\\")[0].split("[")[0]


def passes(log: str) -> int:
    """The most replay passes ncu reported for one kernel (``... 100% - N passes``), 0 if none."""
    found = [int(n) for n in re.findall(r"-\s*(\d+)\s+pass", log)]
    return max(found, default=0)



def profile_ncu(ncu, spec, shape, threads, dtype, names, who, seed, progress, phases=PHASES, optional=()) -> dict:
    """Run ncu over the profiled child once a phase; the document's device, tool, engine, rows (CounterRow)
    and notes. LabError (one line) when ncu or the child fails."""
    min_bytes = int(spec.bytes_moved(shape, np.dtype(dtype)))
    request = {"kernel": spec.name, "size": list(shape), "dtype": dtype, "threads": threads, "seed": seed,
               "variants": names if "numba" in who else [], "contenders": [c for c in who if c in ("cupy", "torch")],
               "warmup": 2}
    env = child_env(NUMBA_ENABLE_CUDASIM="0", NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", PYTHONUNBUFFERED="1")
    by_phase, notes, result = {}, [], None
    with tempfile.TemporaryDirectory(prefix="lab-counters-") as tmp:
        req_path, out_path = os.path.join(tmp, "request.json"), os.path.join(tmp, "result.json")
        with open(req_path, "w") as f:
            json.dump(request, f)
        child = [sys.executable, "-c", "import sys; from lab.inspect.counters.child import child_main; "
                 "child_main(sys.argv[1], sys.argv[2])", req_path, out_path]
        for n, (phase, metrics, cache) in enumerate(phases):
            if progress:
                progress(n, len(phases), f"ncu run {n + 1} of {len(phases)} ({phase}): {len(names)} rungs + libraries")
            metrics = list(metrics)
            for _attempt in range(4):
                if os.path.exists(out_path):  # each run writes its own: a stale one must not pass for it
                    os.unlink(out_path)
                log = os.path.join(tmp, f"{phase}.csv")
                proc = subprocess.run(ncu_command(ncu, metrics, cache, log, child), capture_output=True, text=True,
                                      env=env, timeout=900)
                text = open(log).read() if os.path.exists(log) else ""
                out = text + proc.stdout + proc.stderr
                bad = unknown_metrics(out, metrics) if "==ERROR==" in out else []
                if bad and len(bad) < len(metrics):
                    notes.append(f"ncu does not know {', '.join(bad)} here: reported as null")
                    metrics = [m for m in metrics if m not in bad]
                    continue
                break
            why = ncu_failure(out, proc.returncode)
            if why is None and not os.path.exists(out_path):
                tail = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
                why = f"the profiled program failed: {tail[-1] if tail else 'no output'}"
            if why:
                raise LabError(why)
            try:  # the CSV is in the log file (--log-file); should a version print it on stdout, read it there
                by_phase[phase] = group_by_marker(parse_ncu_csv(text if '"ID"' in text else proc.stdout))
            except ValueError:
                raise LabError(f"ncu wrote no CSV: {(out.strip().splitlines() or ['no output'])[-1]}") from None
            if phase == "dram" and passes(out) > 1:
                notes.append(f"the DRAM pass needed {passes(out)} replay passes: later passes found L2 warm, so DRAM "
                             "bytes may be low for data smaller than L2")
        with open(out_path) as f:
            result = json.load(f)
    if progress:
        progress(len(phases), len(phases), "done")
    rows = [ncu_row(entry, by_phase, min_bytes, optional) for entry in result["entries"]]
    version = _ncu_version(ncu)
    notes.insert(0, "one call per contender after warm-up, L2 flushed before it; DRAM bytes with the "
                    "call's kernels sharing L2 (ncu --cache-control none), everything else per kernel (ncu's "
                    "replay, caches flushed); several kernels: summed, averages weighted by duration")
    return {"device": result["device"], "tool": "ncu", "engine": f"Nsight Compute {version} ({ncu})".replace("  ", " "),
            "rows": rows, "notes": notes}


def ncu_row(entry: dict, by_phase: dict, min_bytes: int, optional=()) -> CounterRow:
    """The row of one child entry ({"contender", "variant", "status", "index", ...}) from its kernels in
    each phase (``by_phase``: phase -> {index: kernels}, :func:`group_by_marker`); ``optional`` as
    :func:`aggregate`."""
    row = CounterRow.blank(entry["contender"], entry["variant"], min_bytes, entry["status"], entry.get("reason", ""))
    if entry["status"] != "ok":
        return row
    i = entry["index"]
    dram, detail = by_phase.get("dram", {}).get(i), by_phase.get("detail", {}).get(i)
    if dram is None and detail is None:
        return row.with_(status="skipped", reason="ncu profiled none of its kernels")
    row = row.with_(**aggregate(dram or [], detail or [], optional))
    if entry.get("theoretical_occupancy_pct") is not None:  # lab's calculator, as lab occupancy
        return row.with_(theoretical_occupancy_pct=entry["theoretical_occupancy_pct"],
                         theoretical_occupancy_source="lab occupancy (the CUDA occupancy calculator)")
    if row.theoretical_occupancy_pct is not None:
        return row.with_(theoretical_occupancy_source="ncu (sm__maximum_warps_per_active_cycle_pct)")
    return row


def _ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"Version\s+([\w.\-]+)", out)
    return m.group(1) if m else ""

