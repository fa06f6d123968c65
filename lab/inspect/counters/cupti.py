"""CUPTI through NVIDIA's ``cupti-python`` package, where ncu is absent (or ``--tool cupti``).

cupti-python 13.4 binds CUPTI's *PM sampling* and *Profiler Host* APIs, not the range profiler (its
``cupti.cupti`` has no ``range_profiler_*`` functions), so this engine samples the GPU's performance
monitors (``cupti.pm_sampling.Collector``, GPU-time trigger) over one contender's call at a time, in
a separate Python process prepared like ncu's (lab.inspect.counters.child: the call after an
unsampled L2 flush, then a pause of a few sampling intervals so the last sample completes).
Counters are summed and ratios weighted over the samples (:func:`reduce_samples`). They are the
GPU's, not one kernel's: nothing else may run on the GPU meanwhile. The metrics and their groups:
lab.inspect.counters.metrics (CUPTI_GROUPS).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from importlib import metadata, metadata as importlib_metadata

import numpy as np

from lab.core.errors import LabError
from lab.inspect.counters.child import finish_child, prepare_child
from lab.inspect.counters.engine import CUPTI_FIX, NCU_FIX, PERM_FIX
from lab.inspect.counters.metrics import (BANK, CUPTI_CYCLES, CUPTI_GROUPS, CUPTI_L1_SECTORS, CUPTI_L2_HIT,
                                          CUPTI_LOAD_REQUESTS, CUPTI_LOAD_SHARE, CUPTI_OPTIONAL_GROUPS, CUPTI_WARPS,
                                          CUPTI_WEIGHT, TENSOR)
from lab.inspect.counters.row import CounterRow, dram_ratio
from lab.core import timing, device
from lab.core.session import child_env

CUPTI_INTERVAL_NS = 10000  # the shortest PM sampling period, ns of GPU time (cupti-python sample's default)
CUPTI_SAMPLES = 2000  # samples a call aims at (the period grows with the call's wall time)


def cupti_preload() -> list[str]:
    """The libraries of the ``nvidia-cuda-cupti`` package that Python's import order finds first
    (libnvperf_target, libnvperf_host, libcupti), for the CUPTI child's ``LD_PRELOAD``; [] where no
    such package is installed (cupti-python then searches as it does).

    Why: cupti-python finds libcupti with cuda-pathfinder, which looks in site-packages before
    PYTHONPATH. On the H100 machine torch 2.11 brings nvidia-cuda-cupti 13.0.85 there, so cupti-python
    13.4 loaded that one, and every Profiler Host call failed with ``cuptiError ERROR_INVALID_PARAMETER``.
    With libcupti 13.5 loaded first, PM sampling worked; cuda-pathfinder returns a library
    that is already loaded. Raises LabError (one line, with the fix) where that package is older than
    cupti-python requires."""
    try:
        dist = metadata.distribution("nvidia-cuda-cupti")
    except metadata.PackageNotFoundError:
        return []
    try:
        from packaging.requirements import Requirement  # lazy: optional (packaging)

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


def choose_cupti_groups(fits, optional=()) -> tuple[list, list[str]]:
    """The CUPTI_GROUPS the chip's PM sampling can collect, each in one pass, with the CUPTI_OPTIONAL_GROUPS
    of the metrics named in ``optional`` (a kernel's declared ones): ([(name, metrics)], names of those it
    cannot). ``fits(metrics)`` says whether CUPTI takes ``metrics`` in one pass. LabError where DRAM bytes
    do not fit."""
    groups = [*CUPTI_GROUPS, *(CUPTI_OPTIONAL_GROUPS[n] for n in optional if n in CUPTI_OPTIONAL_GROUPS)]
    kept = [(g, list(ms)) for g, ms in groups if fits(list(ms))]
    if not kept or kept[0][0] != CUPTI_GROUPS[0][0]:
        raise LabError(f"this GPU's CUPTI PM sampling cannot count {' and '.join(CUPTI_GROUPS[0][1])}: "
                       f"use Nsight Compute ({NCU_FIX})")
    return kept, [g for g, _ in groups if g not in {name for name, _ in kept}]


def _cupti_one_pass(chip: str):
    """fits(metrics) for :func:`choose_cupti_groups`, asked of CUPTI's Profiler Host alone (config images
    and their pass count; no GPU state: a refused configure of the collector broke the calls after it)."""
    from cupti import profiler_host as ph  # lazy: optional (cupti)
    from cupti.cupti import cuptiError  # lazy: optional (cupti)

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
    from cupti import cupti as C  # lazy: optional (cupti)

    p = C.DeviceGetChipNameParams()
    p.struct_size = C.DEVICE_GET_CHIP_NAME_PARAMS_STRUCT_SIZE
    p.device_index = 0
    C.device_get_chip_name(p.ptr)
    return p.p_chip_name


def cupti_child_main(request_path: str, result_path: str) -> None:
    """In a child of its own: prepare and warm up every contender, then sample the GPU's counters
    over one call of each (cupti.pm_sampling, a collector per call: enable, configure, start, the
    call, stop, decode, disable) and reduce every metric over the completed samples
    (:func:`reduce_samples`). Writes {"device", "entries", "metrics", "notes", "libcupti"}, or
    {"error": one line} when CUPTI cannot sample here."""
    with open(request_path) as f:
        req = json.load(f)

    def fail(message):
        traceback.print_exc()  # the child's stderr, for whoever runs it by hand
        with open(result_path, "w") as f:
            json.dump({"error": message}, f)

    libcupti = next((lib for lib in os.environ.get("LD_PRELOAD", "").split() if "libcupti" in lib), None)
    try:
        from cupti import pm_sampling  # lazy: optional (cupti)
    except (ImportError, OSError) as e:
        return fail(f"cupti-python cannot be imported ({e}): {CUPTI_FIX}")
    entries, warm = prepare_child(req)
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)
    max_warps = device.describe(False)["max_threads_per_sm"] // 32
    timing._flush_l2()
    try:
        collector = pm_sampling.Collector(device_index=0)
        collector.enable()
        try:
            groups, missing = choose_cupti_groups(_cupti_one_pass(_cupti_chip(collector)), req.get("optional", ()))
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
                for name, value in reduce_samples(metrics, rows).items():  # a weight in two groups: the first's
                    values.setdefault(name, value)
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
    finish_child(req, entries, result_path, groups=[g for g, _ in groups], notes=notes, libcupti=libcupti)


def cupti_row(entry: dict, min_bytes: int, optional=()) -> dict:
    """A counters row's measured keys from one CUPTI child entry (its reduced ``metrics``): DRAM bytes;
    sectors per global load request = (global loads' share of L1 sectors x L1 sectors) / the LSU's
    local/global read instructions; the L2 hit rate; shared-memory bank conflicts (loads + stores);
    achieved occupancy = active warps per active SM cycle over the SM's maximum (``max_warps_per_sm``),
    in %; the tensor pipe's utilisation where the kernel declares it (``optional``) and the chip's PM
    sampling took it. None where the chip's PM sampling lacks a group."""
    m = entry.get("metrics") or {}
    read, write = m.get(CUPTI_GROUPS[0][1][0]), m.get(CUPTI_GROUPS[0][1][1])
    share, sectors = m.get(CUPTI_LOAD_SHARE), m.get(CUPTI_L1_SECTORS)
    requests = m.get(CUPTI_LOAD_REQUESTS)
    load_sectors = None if share is None or sectors is None else share * sectors
    bank = [m.get(name) for name in BANK]
    warps, cycles = m.get(CUPTI_WARPS), m.get(CUPTI_CYCLES)
    occ = None
    if warps is not None and cycles and entry.get("max_warps_per_sm"):
        occ = 100 * warps / cycles / entry["max_warps_per_sm"]
    row = {"dram_read_bytes": read, "dram_write_bytes": write,
           "sectors_per_request": load_sectors / requests if load_sectors is not None and requests else None,
           "load_sectors": load_sectors, "load_requests": requests, "l2_hit_pct": m.get(CUPTI_L2_HIT),
           "bank_conflicts": None if None in bank else int(sum(bank)),
           "achieved_occupancy_pct": occ, "pm_samples": entry.get("samples")}
    if "tensor_pipe_pct" in optional:
        row["tensor_pipe_pct"] = m.get(TENSOR)
    ratio = dram_ratio(read, write, min_bytes)
    if ratio is not None:
        row["dram_bytes_ratio"] = ratio
    return row


def profile_cupti(spec, shape, threads, dtype, names, who, seed, progress, optional=()) -> dict:
    min_bytes = int(spec.bytes_moved(shape, np.dtype(dtype)))
    request = {"kernel": spec.name, "size": list(shape), "dtype": dtype, "threads": threads, "seed": seed,
               "variants": names if "numba" in who else [], "contenders": [c for c in who if c in ("cupy", "torch")],
               "warmup": 2, "optional": list(optional)}
    preload = cupti_preload()  # cupti-python's own libcupti, not another package's (LabError where too old)
    extra = {"LD_PRELOAD": " ".join([*preload, os.environ.get("LD_PRELOAD", "")]).strip()} if preload else {}
    env = child_env(NUMBA_ENABLE_CUDASIM="0", NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", PYTHONUNBUFFERED="1", **extra)
    if progress:
        progress(0, 1, f"CUPTI PM sampling: {len(names)} rungs + libraries")
    with tempfile.TemporaryDirectory(prefix="lab-counters-") as tmp:
        req_path, out_path = os.path.join(tmp, "request.json"), os.path.join(tmp, "result.json")
        with open(req_path, "w") as f:
            json.dump(request, f)
        proc = subprocess.run([sys.executable, "-c", "import sys; from lab.inspect.counters.cupti import cupti_child_main; "
                               "cupti_child_main(sys.argv[1], sys.argv[2])", req_path, out_path],
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
        row = CounterRow.blank(entry["contender"], entry["variant"], min_bytes, entry["status"], entry.get("reason", ""))
        if entry["status"] == "ok":
            row = row.with_(**cupti_row(entry, min_bytes, optional))
            if entry.get("theoretical_occupancy_pct") is not None:
                row = row.with_(theoretical_occupancy_pct=entry["theoretical_occupancy_pct"],
                                theoretical_occupancy_source="lab occupancy (the CUDA occupancy calculator)")
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
        return importlib_metadata.version("cupti-python")
    except Exception:  # noqa: BLE001
        return ""

