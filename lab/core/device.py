"""What the GPU is: its attributes, theoretical peaks, and a measured copy bandwidth.

Attributes come from the CUDA driver through Numba (``cuDeviceGetAttribute``; CUDA C++ Programming
Guide, "Compute Capabilities" and the ``cudaDeviceProp`` reference). Clocks that CUDA 13 no longer
reports through attributes are read from NVML (nvidia-ml-py) when it is installed.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import datetime
import json
import os
import tempfile
import time

import numpy as np
from kernels import backend
from kernels.device_limits import current
from kernels.tuning import cache_dir
from lab.core.clocks import nvml_device
from lab.core.compilers import compilers_status
from lab.core.errors import SCHEMA_VERSION
from lab.core.timing import Timer

# FP32 lanes ("CUDA cores") per SM by compute capability (Programming Guide, "Arithmetic Instructions").
FP32_LANES_PER_SM = {(6, 0): 64, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128,
                     (8, 9): 128, (9, 0): 128, (10, 0): 128, (10, 3): 128, (12, 0): 128}

# The limits Numba's simulator enforces none of; CUDA's limits for every compute capability >= 3.0.
SIMULATOR_LIMITS = {"max_threads_per_block": 1024, "warp_size": 32}

ATTRIBUTES = {  # our key: Numba device attribute (CUdevice_attribute without the prefix)
    "sm_count": "MULTIPROCESSOR_COUNT",
    "max_threads_per_block": "MAX_THREADS_PER_BLOCK",
    "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
    "warp_size": "WARP_SIZE",
    "max_block_dim_x": "MAX_BLOCK_DIM_X",
    "max_grid_dim_x": "MAX_GRID_DIM_X",
    "registers_per_block": "MAX_REGISTERS_PER_BLOCK",
    "registers_per_sm": "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "shared_memory_per_block": "MAX_SHARED_MEMORY_PER_BLOCK",
    "shared_memory_per_block_optin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "shared_memory_per_sm": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "max_blocks_per_sm": "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "l2_cache_bytes": "L2_CACHE_SIZE",
    "memory_clock_khz": "MEMORY_CLOCK_RATE",
    "memory_bus_width_bits": "GLOBAL_MEMORY_BUS_WIDTH",
    "sm_clock_khz": "CLOCK_RATE",
}


def _nvml_clocks(dev=None) -> dict:
    """Max SM and memory clocks (kHz) from NVML, or {} when nvidia-ml-py is missing or fails.
    The NVML device is the CUDA device ``dev``, found by PCI bus id (lab.core.clocks), not by index."""
    try:
        with nvml_device(dev) as (nvml, h):
            return {"sm_clock_khz": nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM) * 1000,
                    "memory_clock_khz": nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_MEM) * 1000}
    except Exception:  # NVML absent (ImportError) or unsupported in this container: attributes only
        return {}


@lru_cache(maxsize=1)
def describe(simulator: bool) -> dict:
    """A dict of the current device's attributes and theoretical peaks.

    Units: bytes, kHz, bits; ``peak_bandwidth_gbps`` in GB/s (2 transfers a memory clock over the
    bus, i.e. DDR), ``peak_fp32_gflops`` in GFLOP/s (FMA = 2 FLOPs a lane a clock).
    """
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    if simulator:
        dev = cuda.get_current_device()
        info = {"name": "Numba CUDA simulator", "backend": "simulator",
                "compute_capability": ".".join(map(str, dev.compute_capability)),
                "note": "CUDA simulator: correctness only, timings are not meaningful; "
                        "the limits shown are CUDA's, the simulator reports none of them"}
        info.update(SIMULATOR_LIMITS)
        limits = current()  # the device launch math sizes grids for here: a described one (an H100 SXM5)
        info["launch_device"] = {"name": limits.name, "sm_count": limits.sm_count,
                                 "max_threads_per_sm": limits.max_threads_per_sm,
                                 "shared_per_block": limits.shared_per_block, "source": limits.source}
        return info
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    info = {"name": name, "backend": "gpu", "compute_capability": "{}.{}".format(*dev.compute_capability)}
    for key, attr in ATTRIBUTES.items():
        try:
            info[key] = int(getattr(dev, attr))
        except Exception:  # attribute absent in this driver (CUDA 13 dropped some clocks)
            info[key] = None
    for key, value in _nvml_clocks(dev).items():
        if not info.get(key):
            info[key] = value
            info.setdefault("clock_source", "NVML")
    free, total = cuda.current_context().get_memory_info()
    info["memory_total_bytes"], info["memory_free_bytes"] = int(total), int(free)
    if info.get("memory_clock_khz") and info.get("memory_bus_width_bits"):
        info["peak_bandwidth_gbps"] = 2 * info["memory_clock_khz"] * 1e3 * info["memory_bus_width_bits"] / 8 / 1e9
    lanes = FP32_LANES_PER_SM.get(dev.compute_capability)
    if lanes and info.get("sm_clock_khz"):
        info["fp32_lanes_per_sm"] = lanes
        info["peak_fp32_gflops"] = 2 * lanes * info["sm_count"] * info["sm_clock_khz"] * 1e3 / 1e9
    return info


@lru_cache(maxsize=1)
def measure_copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 20) -> dict:
    """Device-to-device copy of ``nbytes``, timed with CUDA events (lab.core.timing).

    Returns {"gbps": median GB/s counting bytes read plus bytes written, "bytes": nbytes,
    "median_ms": ...}. This is the practical ceiling for memory-bound kernels. The source holds
    0, 1, 2, ... (float32): a copy's speed does not depend on the values, and a ramp is made in a
    fraction of the time 1 GiB of random numbers takes on the CPU.
    """
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    n = nbytes // 4
    src = cuda.to_device(np.arange(n, dtype=np.float32))
    dst = cuda.device_array_like(src)
    timer = Timer(lambda: dst.copy_to_device(src), "device", cuda.synchronize)
    m = timer.measure(repeats=repeats, warmup=3)
    return {"gbps": 2 * n * 4 / (m.median_ms * 1e-3) / 1e9, "bytes": n * 4, "median_ms": m.median_ms}


# --- the measured copy bandwidth, remembered per device ------------------------------------------------
BANDWIDTH_MAX_AGE_S = 24 * 3600.0  # a remembered measurement older than this is measured again
BANDWIDTH_CACHE_ENV = "LAB_BANDWIDTH_CACHE"  # 0/off/no/false: measure on every run
BANDWIDTH_METHOD = 2  # bump when measure_copy_bandwidth measures differently: older entries then miss


def bandwidth_cache_file() -> Path:
    """``bandwidth.json`` in the user's cache folder ($LAB_CACHE_DIR, else platformdirs')."""
    return cache_dir() / "bandwidth.json"


def bandwidth_key(info: dict) -> str | None:
    """What a remembered copy bandwidth is valid for: the device (its UUID and name), the driver
    (CUDA version and NVML's driver string), the maximum SM and memory clocks and the bus width, and
    the measurement's method. None without a UUID (nothing is remembered then)."""
    if not info.get("uuid"):
        return None
    parts = [info.get(k) for k in ("uuid", "name", "driver", "driver_version", "sm_clock_khz", "memory_clock_khz",
                                   "memory_bus_width_bits")]
    return "|".join(map(str, parts + [f"method {BANDWIDTH_METHOD}"]))


def _device_identity() -> dict:
    """describe(False)'s clocks and name plus the UUID and driver versions: bandwidth_key's input."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    info = dict(describe(False))
    dev = cuda.get_current_device()
    info["uuid"] = getattr(dev, "uuid", None)
    info["driver"] = backend.driver_version()
    try:
        with nvml_device(dev) as (nvml, _):
            v = nvml.nvmlSystemGetDriverVersion()
            info["driver_version"] = v.decode() if isinstance(v, bytes) else str(v)
    except Exception:  # NVML absent: the CUDA driver version alone
        info["driver_version"] = None
    return info


def copy_bandwidth(max_age_s: float = BANDWIDTH_MAX_AGE_S, fresh: bool = False, now: float | None = None,
                   key: str | None = None) -> dict:
    """:func:`measure_copy_bandwidth`, remembered per device (:func:`bandwidth_key`) in the user's
    cache for ``max_age_s`` seconds. ``fresh``: measure whatever is remembered (``lab device
    --measure``); ``$LAB_BANDWIDTH_CACHE=0``: never remember. ``key``/``now``: the device key and the
    clock (tests; default: this GPU's, time.time()).

    Returns measure_copy_bandwidth's dict plus "measured_at" (ISO 8601 UTC, when it was measured),
    "age_s" (seconds since) and "cached" (True when remembered from an earlier run).
    """
    now = time.time() if now is None else now
    use = os.environ.get(BANDWIDTH_CACHE_ENV, "1").strip().lower() not in ("0", "off", "no", "false")
    key = (key or bandwidth_key(_device_identity())) if use else None
    path = bandwidth_cache_file()
    entries = _read_entries(path) if key else {}
    hit = entries.get(key) if key and not fresh else None
    if hit and 0 <= now - hit["measured_unix"] <= max_age_s:
        return {**hit["result"], "measured_at": _iso(hit["measured_unix"]), "age_s": now - hit["measured_unix"],
                "cached": True}
    result = dict(measure_copy_bandwidth())
    if key:
        entries = {k: v for k, v in entries.items() if 0 <= now - v.get("measured_unix", -1e18) <= max_age_s}
        entries[key] = {"measured_unix": now, "result": result}
        _write_entries(path, entries)
    return {**result, "measured_at": _iso(now), "age_s": 0.0, "cached": False}


def _iso(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix, datetime.timezone.utc).isoformat(timespec="seconds")


def _read_entries(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):  # none yet, or unreadable: measure
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, dict) and isinstance(v.get("result"), dict)
            and isinstance(v.get("measured_unix"), (int, float))} if isinstance(doc, dict) else {}


def _write_entries(path: Path, entries: dict) -> None:
    """Written whole to a temporary file, then renamed (a reader never sees half a file). A cache
    that cannot be written is no error: the next run measures again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".bandwidth-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(entries, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def measured_when(bw: dict) -> str:
    """When a copy_bandwidth() result was measured, in words: "measured YYYY-MM-DD HH:MM UTC" (this
    run's measurement or one remembered from an earlier run: the time tells); "measured" for a result
    that does not say (measure_copy_bandwidth's)."""
    at = bw.get("measured_at")
    return f"measured {at[:10]} {at[11:16]} UTC" if isinstance(at, str) and len(at) >= 16 else "measured"


def device_info(simulator: bool, measure: bool = False) -> dict:
    """``lab device``: :func:`describe`, which compilers are usable, and (``measure``) the measured
    copy bandwidth, or why it was not measured."""
    info = {"schema_version": SCHEMA_VERSION, **describe(simulator)}
    info["compilers"] = {n: (f"usable ({st['version']})" if st["usable"] else st["why"])
                         for n, st in compilers_status(simulator).items()}
    if measure and not simulator:  # measured now, always (and remembered for lab run)
        info["measured_copy"] = copy_bandwidth(fresh=True)
    elif measure:
        info["measured_copy"] = "not measured: the CUDA simulator has no device memory to time"
    return info
