"""``lab counters KERNEL``: what the hardware did during one call of each contender, and a verdict.

Every kernel module explains why one rung beats the last (fewer bytes, coalesced loads, no bank
conflicts, more occupancy); this module measures those claims. Data only: the CLI prints.

Engines (the document's ``tool``):

``ncu``
    NVIDIA Nsight Compute's command line (``ncu``, found on PATH, under /usr/local/cuda/bin or
    $CUDA_HOME/bin). It profiles a *separate* Python process (:func:`_child_main`) that prepares
    every contender as ``lab run`` does, calls each once to compile and warm up, and then, for each
    contender in turn: flushes L2 (outside any profiled range), opens a profiler range
    (``cuProfilerStart``; ncu runs with ``--profile-from-start off``), launches a one-thread marker
    kernel whose grid size numbers the contender, makes exactly one call, and closes the range. So
    only the marker and the call's own kernels are profiled; the timer's kernels (the blocking
    kernel, the L2 flush) never run inside a range, and any kernel whose name is the timer's is
    dropped as well. A contender that launches several kernels (split-K, two-pass quantize,
    cuBLAS, torch) gets the sum over its kernels (averages weighted by each kernel's duration).
    ncu runs twice: first the DRAM bytes alone, with ``--cache-control none`` so the call's kernels
    share L2 as they do in ``lab run`` (one pass: no replay can warm L2 for itself), then everything
    else, the L2 hit rate included, with ncu's per-kernel replay and its default cache flush. The
    first run collects nothing else: with ``lts__t_sector_hit_rate.pct`` beside the DRAM bytes, what
    one kernel left in L2 was lost to the next (H100, 2026-11-23: quantize's l2_tail_first then read
    536.94 MB like block_partials; alone, 511.23 MB against 536.94 MB).
``simulator``
    Numba's CUDA simulator with :class:`lab.core.trace.SectorTracer`: sectors per request and
    bytes touched from the recorded addresses of every warp's loads and stores, at small sizes.
    DRAM, L2, occupancy and stalls are ``null`` there (nothing measures them).
``cupti``
    Where ncu is absent (or ``--tool cupti``): CUPTI through NVIDIA's ``cupti-python`` package
    (``pip install 'numba-gpu-lab[counters]'``; it brings libcupti and needs no toolkit). cupti-python
    13.4 binds CUPTI's *PM sampling* and *Profiler Host* APIs, not the range profiler (its
    ``cupti.cupti`` has no ``range_profiler_*`` functions; checked 2026-11-23), so this engine samples
    the GPU's performance monitors (``cupti.pm_sampling.Collector``, GPU-time trigger) over one
    contender's call at a time, in a separate Python process prepared like ncu's (the call after an
    unsampled L2 flush, then a pause of a few sampling intervals so the last sample completes).
    Counters are summed and ratios weighted over the samples (:func:`reduce_samples`). They are the
    GPU's, not one kernel's: nothing else may run on the GPU meanwhile. On the H100 (GH100) its PM
    sampling gives DRAM bytes read and written, sectors per global load request (a ratio; no
    sector or request counter), the L2 hit rate, shared-memory bank conflicts and active warps
    (:data:`CUPTI_GROUPS`); load efficiency, throughput and stalls are ``null``. The libcupti must
    be the one cupti-python was built for (:func:`cupti_preload`: an older one, such as the 13.0
    that torch 2.11 brings, fails every call with ``ERROR_INVALID_PARAMETER``).

Nsight Compute metrics (Nsight Compute "Profiling Guide", metrics reference): DRAM bytes
``dram__bytes_read.sum``/``dram__bytes_write.sum``; global load requests and sectors
``l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum``/``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum``
(and ``_op_st``); bytes used per sector ``smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct``;
L2 hit rate ``lts__t_sector_hit_rate.pct``; bank conflicts
``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum``/``_op_st.sum`` against the shared
instructions ``smsp__inst_executed_op_shared_ld.sum``/``_st.sum``; achieved occupancy
``sm__warps_active.avg.pct_of_peak_sustained_active``; theoretical occupancy
``sm__maximum_warps_per_active_cycle_pct`` (for the Numba rungs, lab's own calculator,
:mod:`lab.core.occupancy`, as ``lab occupancy`` shows); throughput
``dram__throughput.avg.pct_of_peak_sustained_elapsed`` and ``sm__throughput.avg.pct_of_peak_sustained_elapsed``;
stall reasons ``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio``.
"""
from __future__ import annotations

import csv
import glob
import io
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core.trace import SIM_LABEL
# The simulator's size is each kernel's ``KernelSpec.counter_size``: seconds a kernel, yet whole warps and
# whole 128-byte lines, so the sector counts are those of the ladder's main loops.
SIM_SWITCH_INTERVAL = 5e-4  # s: the simulator's barriers wait on Python's thread switch (5 ms by default)

ROW_KEYS = ("contender", "variant", "dram_read_bytes", "dram_write_bytes", "min_bytes", "sectors_per_request",
            "load_efficiency_pct", "l2_hit_pct", "bank_conflicts", "achieved_occupancy_pct",
            "theoretical_occupancy_pct", "top_stalls")

# --- Nsight Compute --------------------------------------------------------------------------------
NCU_FIX = ("install Nsight Compute (the CUDA toolkit's ncu, e.g. /usr/local/cuda/bin/ncu) or put ncu on PATH; "
           "without a GPU, lab counters KERNEL --sim counts sectors in the simulator")
PERM_FIX = ("let this user read the GPU's performance counters: run as root, or load the driver with "
            "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
CUPTI_FIX = ("pip install 'numba-gpu-lab[counters]' (cupti-python: CUPTI without the CUDA toolkit), or install "
             "Nsight Compute (ncu)")
NO_ENGINE = ("lab counters needs Nsight Compute (ncu) or CUPTI (the cupti-python package), and neither was found: "
             f"{NCU_FIX}; or {CUPTI_FIX.split(' (cupti-python')[0]}")
TOOLS = ("auto", "ncu", "cupti")
MARKER = "lab_counters_mark"
TIMER_KERNELS = re.compile(r"block_until_released|_flush_l2|timing\W+\w*(flush|spin)|\bspin\b")
STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
STALLS = f"regex:^{STALL_PREFIX}[a-z_]+{re.escape(STALL_SUFFIX)}$"
# phase 1: the call as lab run times it (L2 flushed before the call, kept between its kernels)
DRAM_METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]
# phase 2: per-kernel replay, caches flushed before each kernel (ncu's default)
DETAIL_METRICS = ["gpu__time_duration.sum",
                  "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                  "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
                  "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                  "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
                  "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sector_hit_rate.pct",
                  "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
                  "dram__throughput.avg.pct_of_peak_sustained_elapsed", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                  STALLS]
PHASES = (("dram", DRAM_METRICS, "none"), ("detail", DETAIL_METRICS, "all"))
# lab run --counters: its two columns only (DRAM bytes ratio, sectors per load request), fewer replays
RUN_PHASES = (("dram", DRAM_METRICS, "none"),
              ("detail", ["gpu__time_duration.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                          "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"], "all"))
# CUPTI PM sampling: what the chip's PM sampling offers of the metrics above, each group in a pass of its own (the
# call repeated, as ncu replays). Listed with cupti.profiler_host on the H100 (GH100, libcupti 13.5, 2026-11-23):
# no global-load sector or request counters there, but the proportion of L1 sectors that are global loads
# (times all L1 sectors: the load sectors) and the LSU's local/global read instructions (the load requests).
# A counter (.sum) adds up over the samples of one call; a ratio (.ratio, .pct) is averaged over them weighted
# by the counter CUPTI_WEIGHT names (in the same group). DRAM bytes are required; a group the chip cannot take
# in one pass is null (on the H100 every group below fits; sectors and requests together did not).
CUPTI_GROUPS = (
    ("DRAM bytes", ("dram__bytes_read.sum", "dram__bytes_write.sum")),
    ("load sectors", ("l1tex__average_t_sector_pipe_lsu_mem_global_op_ld.ratio", "l1tex__t_sectors.sum")),
    ("load requests", ("sm__inst_executed_pipe_lsu_mem_lg_cmd_read.sum",)),  # not in one pass with the sectors
    ("L2 hit rate", ("lts__average_t_sector_hit_rate_realtime.pct", "lts__t_sectors.sum")),
    ("bank conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")),
    ("achieved occupancy", ("sm__warps_active.sum", "sm__cycles_active.sum")),
)
CUPTI_WEIGHT = {"l1tex__average_t_sector_pipe_lsu_mem_global_op_ld.ratio": "l1tex__t_sectors.sum",
                "lts__average_t_sector_hit_rate_realtime.pct": "lts__t_sectors.sum"}
CUPTI_INTERVAL_NS = 10000  # the shortest PM sampling period, ns of GPU time (cupti-python sample's default)
CUPTI_SAMPLES = 2000  # samples a call aims at (the period grows with the call's wall time)
TIME_UNITS = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}  # to ns
PREFIXES = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def unit_scale(unit: str) -> float:
    """The factor from ``unit`` to the base unit (bytes, sectors, ..., ns): "Mbyte" 1e6, "Ksector" 1e3,
    "usecond" 1e3, "KiB" 1024, "%" 1. ``--print-units base`` makes all of them 1; this reads logs
    made without it."""
    u = unit.strip().lower()
    if u in TIME_UNITS:
        return TIME_UNITS[u]
    if len(u) == 3 and u[1:] == "ib" and u[0] in PREFIXES:
        return 1024.0 ** (" kmgt".index(u[0]))
    if len(u) > 1 and u[0] in PREFIXES and u[1:] in ("byte", "sector", "request", "inst", "warp", "cycle", "thread",
                                                       "block", "wavefront"):
        return PREFIXES[u[0]]
    return 1.0


def find_ncu() -> str | None:
    """The ncu executable: $LAB_NCU, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, /opt/nvidia/nsight-compute."""
    from lab.core.sanitizer import find_tool

    return find_tool("ncu", "LAB_NCU", sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True))


def cupti_available() -> bool:
    """Whether the cupti-python package (``import cupti``) is installed here."""
    import importlib.util

    try:
        return importlib.util.find_spec("cupti") is not None
    except (ImportError, ValueError):
        return False


def find_engine(tool: str = "auto") -> tuple[str, str | None]:
    """(engine, ncu path or None): ``tool`` "ncu", "cupti" or "auto" (ncu where found, else CUPTI).
    LabError (one line: the reason and the fix) when the engine asked for, or any for "auto", is missing."""
    if tool not in TOOLS:
        raise LabError(f"--tool {tool}: choose from {', '.join(TOOLS)}")
    ncu = find_ncu() if tool in ("auto", "ncu") else None
    if ncu:
        return "ncu", ncu
    if tool == "ncu":
        raise LabError(f"lab counters needs Nsight Compute (ncu), which was not found: {NCU_FIX}")
    if cupti_available():
        return "cupti", None
    if tool == "cupti":
        raise LabError(f"--tool cupti needs the cupti-python package, which is not installed: {CUPTI_FIX}")
    raise LabError(NO_ENGINE)


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


def _weighted(ks, name, weight="gpu__time_duration.sum"):
    """Average of ``name`` over kernels ``ks``, weighted by ``weight`` (each kernel's duration)."""
    pairs = [(k["metrics"].get(name), k["metrics"].get(weight) or 0) for k in ks]
    pairs = [(v, w) for v, w in pairs if v is not None]
    if not pairs:
        return None
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total else sum(v for v, _ in pairs) / len(pairs)


def _ratio(a, b):
    return a / b if a is not None and b else None


def aggregate(dram: list[dict], detail: list[dict]) -> dict:
    """One contender's numbers from its kernels of the two phases (sums; duration-weighted averages)."""
    ld_sectors = _sum(detail, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
    ld_requests = _sum(detail, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
    st_sectors = _sum(detail, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
    st_requests = _sum(detail, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
    eff = _weighted(detail, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
                    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
    conf_ld = _sum(detail, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
    conf_st = _sum(detail, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
    sh_ld = _sum(detail, "smsp__inst_executed_op_shared_ld.sum")
    sh_st = _sum(detail, "smsp__inst_executed_op_shared_st.sum")
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
    duration = _sum(dram, "gpu__time_duration.sum") or _sum(detail, "gpu__time_duration.sum")
    l2_read = _sum(detail, "lts__t_sectors_srcunit_tex_op_read.sum")
    return {
        "dram_read_bytes": _sum(dram, "dram__bytes_read.sum"),
        "dram_write_bytes": _sum(dram, "dram__bytes_write.sum"),
        "sectors_per_request": _ratio(ld_sectors, ld_requests),
        "store_sectors_per_request": _ratio(st_sectors, st_requests),
        "load_efficiency_pct": eff,
        "ideal_sectors_per_request": (_ratio(ld_sectors, ld_requests) * min(eff, 100.0) / 100
                                      if eff is not None and ld_requests else None),
        "load_sectors": ld_sectors, "load_requests": ld_requests,
        "l2_hit_pct": _weighted(detail, "lts__t_sector_hit_rate.pct"),
        "l2_read_bytes": None if l2_read is None else 32 * l2_read,
        "bank_conflicts": conflicts, "bank_conflicts_load": conf_ld, "bank_conflicts_store": conf_st,
        "shared_instructions": shared,
        "bank_ways": 1 + conflicts / shared if conflicts is not None and shared else None,
        "achieved_occupancy_pct": _weighted(detail, "sm__warps_active.avg.pct_of_peak_sustained_active"),
        "theoretical_occupancy_pct": _weighted(detail, "sm__maximum_warps_per_active_cycle_pct"),
        "dram_throughput_pct": _weighted(detail, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        "sm_throughput_pct": _weighted(detail, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        "top_stalls": top,
        "duration_ms": None if duration is None else duration / 1e6,
        "kernels": len(detail or dram),
        "kernel_names": [_short_name(k["name"]) for k in (detail or dram)],
    }


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
            bad += [m for m in metrics if m in line or (len(_base(m)) > 6 and _base(m) in line)]
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


# --- the verdict -------------------------------------------------------------------------------------
def verdict(row: dict) -> str:
    """One line in the field's terms, from whatever the row measured (None values are skipped)."""
    parts = []
    spr, ideal = row.get("sectors_per_request"), row.get("ideal_sectors_per_request")
    if spr is not None and ideal and spr > 1.5 * ideal:
        where = f" (worst: {row['worst_load']})" if row.get("worst_load") else ""
        parts.append(f"uncoalesced: {spr:.1f} sectors per request where {ideal:.1f} suffice{where}")
    ways = row.get("bank_ways")
    if ways is not None and ways >= 1.5:
        ld, st = row.get("bank_conflicts_load") or 0, row.get("bank_conflicts_store") or 0
        which = "loads and stores" if ld and st else ("stores" if st > ld else "loads")
        parts.append(f"{ways:.1f}-way bank conflicts on shared {which}")
    ratio = _ratio((row.get("dram_read_bytes") or 0) + (row.get("dram_write_bytes") or 0), row.get("min_bytes")) \
        if row.get("dram_read_bytes") is not None else None
    dram, sm = row.get("dram_throughput_pct"), row.get("sm_throughput_pct")
    occ = row.get("achieved_occupancy_pct")
    times = f", {ratio:.2f}x minimum bytes" if ratio is not None else ""
    if dram is not None and dram >= 60:
        parts.append(f"memory-bound: {dram:.0f}% of DRAM peak{times}")
    elif sm is not None and sm >= 60:
        parts.append(f"compute-bound: {sm:.0f}% of SM peak")
    elif ratio is not None and ratio > 1.5:
        parts.append(f"excess traffic: DRAM bytes {ratio:.1f}x the minimum")
    elif dram is not None:
        stall = (row.get("top_stalls") or [{}])[0].get("reason")
        low = f", {occ:.0f}% achieved occupancy" if occ is not None and occ < 30 else ""
        parts.append(f"latency-bound: {dram:.0f}% of DRAM peak, {sm or 0:.0f}% of SM peak{low}"
                     + (f", mostly stalled on {stall}" if stall else ""))
    if not parts and ratio is not None:  # DRAM bytes alone (CUPTI PM sampling measures no throughput)
        parts.append(f"DRAM bytes {ratio:.2f}x the minimum")
    if not parts and spr is not None:
        parts.append(f"coalesced: {spr:.1f} sectors per request (the minimum {ideal:.1f})" if ideal
                     else f"{spr:.1f} sectors per request")
    fetched, touched = row.get("sector_bytes"), row.get("bytes_touched")
    if fetched and touched and fetched > 3 * touched:
        parts.append(f"fetches {fetched / touched:.1f}x the bytes it touches (re-reads through L1/L2)")
    return "; ".join(parts) or "no counters"


# --- the command ---------------------------------------------------------------------------------------
def _resolve(kernel, variants, size, threads, dtype, simulator):
    from lab.core import catalog

    spec = catalog.load(kernel)
    for v in variants or []:
        if v not in spec.variants:
            raise LabError(f"unknown variant of {spec.name} {v!r}; choose from: {', '.join(spec.variants)}")
    if dtype not in spec.dtypes:
        raise LabError(f"--dtype {dtype}: {spec.name} supports {', '.join(spec.dtypes)}")
    shape = catalog.problem_shape(spec, size, lambda: (spec.counter_size or spec.default_size(True)
                                                       if simulator else spec.default_size(False)))
    threads = threads if threads is not None else (32 if simulator else 256)
    if not 1 <= threads <= 1024:
        raise LabError(f"--threads {threads}: threads per block must be 1..1024")
    return spec, tuple(shape), threads, list(variants or spec.variants)


def counters(kernel: str, backend: str, variants: list[str] | None = None, size: str | None = None,
             threads: int | None = None, dtype: str = "float32", contenders: list[str] | None = None,
             seed: int = 0, progress=None, phases: tuple[str, ...] = ("dram", "detail"), tool: str = "auto",
             lean: bool = False) -> dict:
    """The ``lab counters --json`` document (docs/schemas/counters.json); LabError on bad input or
    when no engine can run here (one line: the reason and the fix). ``phases`` (ncu only): "dram"
    (DRAM bytes) and/or "detail" (everything else, the L2 hit rate included); the other's values are null.
    ``tool`` (on a GPU): "auto" (ncu, else CUPTI), "ncu" or "cupti" (:func:`find_engine`). ``lean``
    (ncu): only what ``lab run --counters`` shows (:data:`RUN_PHASES`)."""
    simulator = backend == "simulator"
    if not simulator:
        engine, ncu = find_engine(tool)  # fail before any work
    spec, shape, threads, names = _resolve(kernel, variants, size, threads, dtype, simulator)
    who = contenders or ["numba", "cupy", "torch"]
    for c in who:
        if c not in ("numba", "numpy", "cupy", "torch"):
            raise LabError(f"unknown contender {c!r}; choose from: numba, numpy, cupy, torch")
    doc = {"schema_version": SCHEMA_VERSION, "kernel": spec.name, "size": list(shape), "dtype": dtype,
           "threads_per_block": threads, "seed": seed}
    if simulator:
        if "numba" not in who:
            raise LabError("in the simulator only the Numba rungs can be counted: add numba to --contenders, or "
                           "run on a GPU for the CuPy and torch ops")
        doc.update(_simulate(spec, shape, threads, dtype, names, seed, progress))
        libs = [c for c in who if c in ("cupy", "torch")]
        if libs and contenders:
            doc["notes"].append(f"{', '.join(libs)}: not counted in the simulator (they run on a GPU only)")
    elif engine == "cupti":
        doc.update(_profile_cupti(spec, shape, threads, dtype, names, who, seed, progress))
    else:
        doc.update(_profile(ncu, spec, shape, threads, dtype, names, who, seed, progress,
                            [p for p in (RUN_PHASES if lean else PHASES) if p[0] in phases]))
    for r in doc["rows"]:
        r["verdict"] = verdict(r) if r["status"] == "ok" else r["reason"]
    return doc


def _blank_row(contender, variant, min_bytes, status="ok", reason="") -> dict:
    row = dict.fromkeys(ROW_KEYS)
    row.update(contender=contender, variant=variant, min_bytes=min_bytes, status=status, reason=reason)
    return row


def _simulate(spec, shape, threads, dtype, names, seed, progress) -> dict:
    from lab.core import resources
    from lab.core.device import describe
    from lab.core.trace import SectorTracer

    min_bytes = int(spec.bytes_moved(shape, np.dtype(dtype)))
    rows, notes = [], [f"{SIM_LABEL}: every warp's global loads and stores in Numba's CUDA simulator, "
                       "32-byte sectors per request; DRAM, L2, occupancy and stalls need a GPU (null)"]
    old = sys.getswitchinterval()
    sys.setswitchinterval(SIM_SWITCH_INTERVAL)
    try:
        for i, v in enumerate(names):
            if progress:
                progress(i, len(names), f"numba {v}")
            why = spec.variants[v].accepts(threads)
            if why:
                rows.append(_blank_row("numba", v, min_bytes, "skipped", f"{v} {why}"))
                continue
            with SectorTracer() as tr:
                try:
                    resources.run_variant(spec, v, shape, threads, dtype, seed)
                except Exception as e:  # a rung that raises is a row, not a crash
                    rows.append(_blank_row("numba", v, min_bytes, "FAIL", f"raised {type(e).__name__}: {e}"))
                    continue
            rows.append(_sim_row(v, tr.summary(), min_bytes))
    finally:
        sys.setswitchinterval(old)
    if progress:
        progress(len(names), len(names), "done")
    return {"device": describe(True), "tool": "simulator", "engine": SIM_LABEL, "rows": rows, "notes": notes}


def _sim_row(variant: str, s: dict, min_bytes: int) -> dict:
    row = _blank_row("numba", variant, min_bytes)
    ld, st = s["load"], s["store"]
    loads = [i for i in s["instructions"] if i.kind == "load"]
    worst = max(loads, key=lambda i: (i.stats.sectors_per_request or 0, i.stats.requests), default=None)
    row.update(sectors_per_request=ld.sectors_per_request, load_efficiency_pct=ld.efficiency_pct,
               ideal_sectors_per_request=ld.ideal_per_request, store_sectors_per_request=st.sectors_per_request,
               load_requests=ld.requests, load_sectors=ld.sectors, store_requests=st.requests,
               store_sectors=st.sectors, atomic_requests=s["atomic"].requests,
               bytes_touched=s["bytes_touched"], sector_bytes=s["sector_bytes"],
               worst_load=(f"{worst.array} at {worst.where}, {worst.stats.sectors_per_request:.1f} a request"
                           if worst and worst.stats.sectors_per_request else None),
               instructions=[i.as_dict() for i in s["instructions"]], untraced=s["untraced"], top_stalls=None,
               source=SIM_LABEL)
    return row


# --- ncu: the parent ---------------------------------------------------------------------------------
def _profile(ncu, spec, shape, threads, dtype, names, who, seed, progress, phases=PHASES) -> dict:
    from lab.core.session import child_env

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
        child = [sys.executable, "-c", "import sys; from lab.inspect.counters import _child_main; "
                 "_child_main(sys.argv[1], sys.argv[2])", req_path, out_path]
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
    rows = []
    for entry in result["entries"]:
        row = _blank_row(entry["contender"], entry["variant"], min_bytes, entry["status"], entry.get("reason", ""))
        if entry["status"] == "ok":
            i = entry["index"]
            dram, detail = by_phase.get("dram", {}).get(i), by_phase.get("detail", {}).get(i)
            if dram is None and detail is None:
                row.update(status="skipped", reason="ncu profiled none of its kernels")
            else:
                row.update(aggregate(dram or [], detail or []))
                if entry.get("theoretical_occupancy_pct") is not None:  # lab's calculator, as lab occupancy
                    row["theoretical_occupancy_pct"] = entry["theoretical_occupancy_pct"]
                    row["theoretical_occupancy_source"] = "lab occupancy (the CUDA occupancy calculator)"
                elif row.get("theoretical_occupancy_pct") is not None:
                    row["theoretical_occupancy_source"] = "ncu (sm__maximum_warps_per_active_cycle_pct)"
                if row["dram_read_bytes"] is not None and min_bytes:
                    row["dram_bytes_ratio"] = (row["dram_read_bytes"] + (row["dram_write_bytes"] or 0)) / min_bytes
        rows.append(row)
    version = _ncu_version(ncu)
    notes.insert(0, "one call per contender after warm-up, L2 flushed before it; DRAM bytes with the "
                    "call's kernels sharing L2 (ncu --cache-control none), everything else per kernel (ncu's "
                    "replay, caches flushed); several kernels: summed, averages weighted by duration")
    return {"device": result["device"], "tool": "ncu", "engine": f"Nsight Compute {version} ({ncu})".replace("  ", " "),
            "rows": rows, "notes": notes}


def _ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"Version\s+([\w.\-]+)", out)
    return m.group(1) if m else ""


# --- ncu: the profiled child ---------------------------------------------------------------------------
def _marker_kernel():
    from kernels.compiler import cuda

    @cuda.jit
    def lab_counters_mark(index):
        """Does nothing; its grid size (index + 1 blocks of 1 thread) numbers the contender after it."""
        if cuda.grid(1) == 0 and index < 0:
            pass

    return lab_counters_mark


def _profiler():
    """(start, stop): cuProfilerStart/Stop through Numba (numba-cuda), else cuda-bindings."""
    from kernels.compiler import cuda

    if hasattr(cuda, "profile_start"):
        return cuda.profile_start, cuda.profile_stop
    from cuda.bindings import driver

    return (lambda: driver.cuProfilerStart()), (lambda: driver.cuProfilerStop())


def _prepare_child(req: dict):
    """In a profiled child: every contender of ``req`` prepared and warmed up as lab run does.
    Returns (entries of those that could not be, [(meta, prepared)] of those that can)."""
    from lab.core.session import select

    select("gpu")
    import kernels as K
    from lab.core import contenders as C
    from lab.core.occupancy import launch_usage

    spec = K.load(req["kernel"])
    size, dtype, threads = tuple(req["size"]), np.dtype(req["dtype"]), req["threads"]
    inputs = spec.make_inputs(size, dtype, np.random.default_rng(req["seed"]))
    entries, ready = [], []
    for v in req["variants"]:
        variant = spec.variants[v]
        why = variant.accepts(threads)
        if why:
            entries.append({"contender": "numba", "variant": v, "status": "skipped", "reason": f"{v} {why}"})
            continue
        try:
            prepared = C.prepare_numba(spec, size, variant, variant.launch(size, threads), inputs, False)
            occ = launch_usage(spec, v, threads, False, size).get("occupancy")
        except Exception as e:
            entries.append({"contender": "numba", "variant": v, "status": "FAIL", "reason": f"{type(e).__name__}: {e}"})
            continue
        ready.append(({"contender": "numba", "variant": v,
                       "theoretical_occupancy_pct": None if occ is None else 100 * occ}, prepared))
    for lib in req["contenders"]:
        why = C.why_unavailable(lib, False)
        if why:
            entries.append({"contender": lib, "variant": "-", "status": "skipped", "reason": why})
            continue
        for label in C.library_labels(lib, spec.name):
            try:
                ready.append(({"contender": lib, "variant": label}, C.prepare_library(lib, spec, size, label, inputs)))
            except Exception as e:
                entries.append({"contender": lib, "variant": label, "status": "FAIL",
                                "reason": f"{type(e).__name__}: {e}"})
    warm = []
    for meta, p in ready:
        try:
            for _ in range(1 + req["warmup"]):
                p.call()
            p.sync()
            warm.append((meta, p))
        except Exception as e:
            entries.append({**meta, "status": "FAIL", "reason": f"{type(e).__name__}: {e}"})
    return entries, warm


def _finish_child(req: dict, entries: list, result_path: str, **extra) -> None:
    from lab.core.device import describe

    order = {v: n for n, v in enumerate(req["variants"])}
    entries.sort(key=lambda e: (("numba", "cupy", "torch").index(e["contender"]), order.get(e["variant"], 0)))
    with open(result_path, "w") as f:
        json.dump({"device": describe(False), "entries": entries, **extra}, f)


def _child_main(request_path: str, result_path: str) -> None:
    """In the process ncu profiles: prepare every contender, warm it up, then one profiled call each
    (after an unprofiled L2 flush, behind its marker); writes the entries and the device."""
    with open(request_path) as f:
        req = json.load(f)
    entries, warm = _prepare_child(req)
    from kernels.compiler import cuda
    from lab.core import timing

    mark = _marker_kernel()
    mark[1, 1](0)  # compile + load outside any profiled range
    timing._flush_l2()  # the timer's flush: compiled and run outside any range
    start, stop = _profiler()
    for i, (meta, p) in enumerate(warm):
        timing._flush_l2()
        cuda.synchronize()
        start()
        mark[i + 1, 1](i)
        p.call()
        p.sync()
        stop()
        entries.append({**meta, "status": "ok", "index": i})
    _finish_child(req, entries, result_path)


# --- CUPTI (cupti-python, PM sampling): the sampled child and its parent -----------------------------------------
def cupti_preload() -> list[str]:
    """The libraries of the ``nvidia-cuda-cupti`` package that Python's import order finds first
    (libnvperf_target, libnvperf_host, libcupti), for the CUPTI child's ``LD_PRELOAD``; [] where no
    such package is installed (cupti-python then searches as it does).

    Why: cupti-python finds libcupti with cuda-pathfinder, which looks in site-packages before
    PYTHONPATH. On the H100 machine torch 2.11 brings nvidia-cuda-cupti 13.0.85 there, so cupti-python
    13.4 loaded that one, and every Profiler Host call failed with ``cuptiError ERROR_INVALID_PARAMETER``.
    With libcupti 13.5 loaded first, PM sampling worked (2026-11-23); cuda-pathfinder returns a library
    that is already loaded. Raises LabError (one line, with the fix) where that package is older than
    cupti-python requires."""
    from importlib import metadata

    try:
        dist = metadata.distribution("nvidia-cuda-cupti")
    except metadata.PackageNotFoundError:
        return []
    try:
        from packaging.requirements import Requirement

        wants = [r for r in map(Requirement, metadata.requires("cupti-python") or [])
                 if r.name == "nvidia-cuda-cupti" and r.marker is None]
    except (ImportError, metadata.PackageNotFoundError):
        wants = []
    for want in wants:
        if not want.specifier.contains(dist.version, prereleases=True):
            raise LabError(f"cupti-python {metadata.version('cupti-python')} needs {want}, and the libcupti found is "
                           f"nvidia-cuda-cupti {dist.version} ({dist.locate_file('')}): "
                           f"pip install '{want}'")
    libs = {os.path.basename(str(f)): str(dist.locate_file(f)) for f in dist.files or []}
    found = []
    for prefix in ("libnvperf_target.so", "libnvperf_host.so", "libcupti.so"):  # CUPTI's own libraries first
        found += [full for name, full in sorted(libs.items()) if name.startswith(prefix) and os.path.exists(full)][:1]
    return found


def reduce_samples(metrics: list[str], samples: list) -> dict:
    """One call's value of each PM sampling metric from its samples (each a list of values in ``metrics``'
    order): a counter (.sum) summed; a ratio (.ratio, .pct) averaged weighted by its CUPTI_WEIGHT counter in
    the same sample (samples without that counter, NaN or zero weight, count for nothing). None where no
    sample weighs."""
    col = {m: k for k, m in enumerate(metrics)}
    out = {}
    for m in metrics:
        w = CUPTI_WEIGHT.get(m)
        if w is None or w not in col:
            out[m] = float(sum(float(v[col[m]]) for v in samples if np.isfinite(float(v[col[m]]))))
            continue
        num = den = 0.0
        for v in samples:
            x, wt = float(v[col[m]]), float(v[col[w]])
            if np.isfinite(x) and np.isfinite(wt) and wt > 0:
                num, den = num + x * wt, den + wt
        out[m] = num / den if den else None
    return out


def choose_cupti_groups(fits) -> tuple[list, list[str]]:
    """The CUPTI_GROUPS the chip's PM sampling can collect, each in one pass: ([(name, metrics)], names of
    those it cannot). ``fits(metrics)`` says whether CUPTI takes ``metrics`` in one pass. LabError where
    DRAM bytes do not fit."""
    kept = [(g, list(ms)) for g, ms in CUPTI_GROUPS if fits(list(ms))]
    if not kept or kept[0][0] != CUPTI_GROUPS[0][0]:
        raise LabError(f"this GPU's CUPTI PM sampling cannot count {' and '.join(CUPTI_GROUPS[0][1])}: "
                       f"use Nsight Compute ({NCU_FIX})")
    return kept, [g for g, _ in CUPTI_GROUPS if g not in {name for name, _ in kept}]


def _cupti_one_pass(chip: str):
    """fits(metrics) for :func:`choose_cupti_groups`, asked of CUPTI's Profiler Host alone (config images
    and their pass count; no GPU state: a refused configure of the collector broke the calls after it)."""
    from cupti import profiler_host as ph
    from cupti.cupti import cuptiError

    def fits(metrics):
        host = ph.ProfilerHost(chip, ph.ProfilerType.PM_SAMPLING)
        host.initialize()
        try:
            return ph.get_num_of_passes(host.create_config_image(metrics)) == 1
        except (ValueError, cuptiError):
            return False
        finally:
            host.deinitialize()
    return fits


def _cupti_chip(collector) -> str:
    """The chip name CUPTI knows the device by (e.g. GH100), once ``collector`` is enabled."""
    from cupti import cupti as C

    p = C.DeviceGetChipNameParams()
    p.struct_size = C.DEVICE_GET_CHIP_NAME_PARAMS_STRUCT_SIZE
    p.device_index = 0
    C.device_get_chip_name(p.ptr)
    return p.p_chip_name


def _cupti_child_main(request_path: str, result_path: str) -> None:
    """In a child of its own: prepare and warm up every contender, then sample the GPU's counters
    over one call of each (cupti.pm_sampling, a collector per call: enable, configure, start, the
    call, stop, decode, disable) and reduce every metric over the completed samples
    (:func:`reduce_samples`). Writes {"device", "entries", "metrics", "notes", "libcupti"}, or
    {"error": one line} when CUPTI cannot sample here."""
    import time
    import traceback

    with open(request_path) as f:
        req = json.load(f)

    def fail(message):
        traceback.print_exc()  # the child's stderr, for whoever runs it by hand
        with open(result_path, "w") as f:
            json.dump({"error": message}, f)

    libcupti = next((lib for lib in os.environ.get("LD_PRELOAD", "").split() if "libcupti" in lib), None)
    try:
        from cupti import pm_sampling
    except (ImportError, OSError) as e:
        return fail(f"cupti-python cannot be imported ({e}): {CUPTI_FIX}")
    entries, warm = _prepare_child(req)
    from kernels.compiler import cuda
    from lab.core import timing
    from lab.core.device import describe

    max_warps = describe(False)["max_threads_per_sm"] // 32
    timing._flush_l2()
    try:
        collector = pm_sampling.Collector(device_index=0)
        collector.enable()
        try:
            groups, missing = choose_cupti_groups(_cupti_one_pass(_cupti_chip(collector)))
        finally:
            collector.disable()
        notes = [f"this GPU's PM sampling cannot collect {', '.join(missing)} in one pass: null"] if missing else []
        for i, (meta, p) in enumerate(warm):
            t0 = time.perf_counter()  # the call's wall time sets the period: about CUPTI_SAMPLES samples a call
            p.call()
            p.sync()
            interval = max(CUPTI_INTERVAL_NS, int((time.perf_counter() - t0) * 1e9 / CUPTI_SAMPLES))
            values, samples = {}, 0
            for _, metrics in groups:  # a pass each, the call repeated
                # the flush before the collector: PM counters count from configure(), not from start()
                # (H100: the flush's 105 MB were read inside every sampled call otherwise)
                timing._flush_l2()
                cuda.synchronize()
                collector = pm_sampling.Collector(device_index=0)
                collector.enable()
                try:
                    collector.configure(metrics=metrics, sampling_interval=interval)
                    collector.start()
                    p.call()
                    p.sync()
                    time.sleep(max(1e-3, 5 * interval * 1e-9))  # the call's last sample completes
                    collector.stop()
                    rows = [list(x.metric_values) for x in collector.decode(max_samples=4 * CUPTI_SAMPLES + 1000)]
                finally:
                    collector.disable()
                values.update(reduce_samples(metrics, rows))
                samples = max(samples, len(rows))
            entries.append({**meta, "status": "ok", "index": i, "samples": samples, "passes": len(groups),
                            "max_warps_per_sm": max_warps, "metrics": values})
    except LabError as e:
        return fail(str(e))
    except PermissionError as e:
        return fail(f"CUPTI may not read the GPU performance counters ({e}): {PERM_FIX}")
    except Exception as e:  # noqa: BLE001 - CUPTI's own errors (cuptiError, RuntimeError): one line
        first = str(e).splitlines()[0] if str(e) else ""
        hint = ""
        if "INVALID_PARAMETER" in first:
            hint = (f" (libcupti {libcupti or 'as cupti-python found it'}: a libcupti older than cupti-python "
                    f"fails so; pip install -U nvidia-cuda-cupti)")
        return fail(f"CUPTI PM sampling failed: {type(e).__name__}: {first}{hint}")
    _finish_child(req, entries, result_path, groups=[g for g, _ in groups], notes=notes, libcupti=libcupti)


def cupti_row(entry: dict, min_bytes: int) -> dict:
    """A counters row's measured keys from one CUPTI child entry (its reduced ``metrics``): DRAM bytes;
    sectors per global load request = (global loads' share of L1 sectors x L1 sectors) / the LSU's
    local/global read instructions; the L2 hit rate; shared-memory bank conflicts (loads + stores);
    achieved occupancy = active warps per active SM cycle over the SM's maximum (``max_warps_per_sm``),
    in %. None where the chip's PM sampling lacks a group."""
    m = entry.get("metrics") or {}
    read, write = m.get("dram__bytes_read.sum"), m.get("dram__bytes_write.sum")
    share, sectors = m.get("l1tex__average_t_sector_pipe_lsu_mem_global_op_ld.ratio"), m.get("l1tex__t_sectors.sum")
    requests = m.get("sm__inst_executed_pipe_lsu_mem_lg_cmd_read.sum")
    load_sectors = None if share is None or sectors is None else share * sectors
    bank = [m.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum") for op in ("ld", "st")]
    warps, cycles = m.get("sm__warps_active.sum"), m.get("sm__cycles_active.sum")
    occ = None
    if warps is not None and cycles and entry.get("max_warps_per_sm"):
        occ = 100 * warps / cycles / entry["max_warps_per_sm"]
    row = {"dram_read_bytes": read, "dram_write_bytes": write, "sectors_per_request": _ratio(load_sectors, requests),
           "load_sectors": load_sectors, "load_requests": requests,
           "l2_hit_pct": m.get("lts__average_t_sector_hit_rate_realtime.pct"),
           "bank_conflicts": None if None in bank else int(sum(bank)),
           "achieved_occupancy_pct": occ, "pm_samples": entry.get("samples")}
    if read is not None and min_bytes:
        row["dram_bytes_ratio"] = (read + (write or 0)) / min_bytes
    return row


def _profile_cupti(spec, shape, threads, dtype, names, who, seed, progress) -> dict:
    from lab.core.session import child_env

    min_bytes = int(spec.bytes_moved(shape, np.dtype(dtype)))
    request = {"kernel": spec.name, "size": list(shape), "dtype": dtype, "threads": threads, "seed": seed,
               "variants": names if "numba" in who else [], "contenders": [c for c in who if c in ("cupy", "torch")],
               "warmup": 2}
    preload = cupti_preload()  # cupti-python's own libcupti, not another package's (LabError where too old)
    extra = {"LD_PRELOAD": " ".join([*preload, os.environ.get("LD_PRELOAD", "")]).strip()} if preload else {}
    env = child_env(NUMBA_ENABLE_CUDASIM="0", NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", PYTHONUNBUFFERED="1", **extra)
    if progress:
        progress(0, 1, f"CUPTI PM sampling: {len(names)} rungs + libraries")
    with tempfile.TemporaryDirectory(prefix="lab-counters-") as tmp:
        req_path, out_path = os.path.join(tmp, "request.json"), os.path.join(tmp, "result.json")
        with open(req_path, "w") as f:
            json.dump(request, f)
        proc = subprocess.run([sys.executable, "-c", "import sys; from lab.inspect.counters import _cupti_child_main; "
                               "_cupti_child_main(sys.argv[1], sys.argv[2])", req_path, out_path],
                              capture_output=True, text=True, env=env, timeout=900)
        if not os.path.exists(out_path):
            tail = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
            raise LabError(f"the CUPTI child failed: {tail[-1] if tail else f'exit code {proc.returncode}'}")
        with open(out_path) as f:
            result = json.load(f)
    if result.get("error"):
        raise LabError(result["error"])
    if progress:
        progress(1, 1, "done")
    rows = []
    for entry in result["entries"]:
        row = _blank_row(entry["contender"], entry["variant"], min_bytes, entry["status"], entry.get("reason", ""))
        if entry["status"] == "ok":
            row.update(cupti_row(entry, min_bytes))
            if entry.get("theoretical_occupancy_pct") is not None:
                row["theoretical_occupancy_pct"] = entry["theoretical_occupancy_pct"]
                row["theoretical_occupancy_source"] = "lab occupancy (the CUDA occupancy calculator)"
        rows.append(row)
    version = _cupti_version()
    notes = ["CUPTI PM sampling (cupti-python): the GPU's counters sampled over one call per contender after "
             "warm-up, L2 flushed before it, counters summed and ratios weighted over the samples; anything else "
             "running on the GPU meanwhile counts too; load efficiency, throughput and stalls are null (ncu "
             "measures them); sectors per request weighs each sample's ratio by its L1 sectors",
             *result.get("notes", [])]
    return {"device": result["device"], "tool": "cupti",
            "engine": f"CUPTI PM sampling (cupti-python {version})".replace(" )", ")"), "rows": rows, "notes": notes}


def _cupti_version() -> str:
    try:
        from importlib.metadata import version

        return version("cupti-python")
    except Exception:  # noqa: BLE001
        return ""


# --- lab run --counters -------------------------------------------------------------------------------------------
def for_run(report, tool: str = "auto") -> dict:
    """``lab run --counters`` on a GPU (the runner's ``Options.counters_engine``): the rows of
    ``report`` (a lab.core.runner.Report) that passed, profiled once each in a separate process at
    the run's size, dtype, threads and seed. Returns {"tool", "engine", "notes", "rows":
    {(contender, variant): {"dram_ratio", "sectors_per_request"}}}; LabError as :func:`counters`."""
    ok = [r for r in report.rows if r.status == "ok"]
    variants = [r.variant for r in ok if r.contender == "numba"]
    libs = sorted({r.contender for r in ok if r.contender in ("cupy", "torch")})
    who = (["numba"] if variants else []) + libs
    if not who:
        return {"tool": None, "engine": None, "rows": {}, "notes": ["no GPU row passed: nothing to count"]}
    doc = counters(report.kernel, report.backend, variants or None, "x".join(map(str, report.size)), report.threads,
                   report.dtype, who, report.seed, tool=tool, lean=True)
    rows = {}
    for r in doc["rows"]:
        if r["status"] != "ok":
            continue
        ratio = r.get("dram_bytes_ratio")
        if ratio is None and r.get("dram_read_bytes") is not None and r.get("min_bytes"):
            ratio = (r["dram_read_bytes"] + (r.get("dram_write_bytes") or 0)) / r["min_bytes"]
        rows[(r["contender"], r["variant"])] = {"dram_ratio": ratio, "sectors_per_request": r.get("sectors_per_request")}
    return {"tool": doc["tool"], "engine": doc["engine"], "rows": rows, "notes": doc.get("notes", [])}
