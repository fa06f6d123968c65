"""The GPU's clocks while the lab times it: SM clock, its limit, and why it is held down.

Read through NVML (nvidia-ml-py, in the cuda12/cuda13 extras) for the device the kernels run on,
found by its PCI bus id (``cuDeviceGetAttribute`` PCI domain/bus/device through Numba), not by an
index: CUDA and NVML may number devices differently (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER).
``lab run`` reads them before and after the run and warns when the SM clock dropped: a kernel timed
at a lower clock is slower for a reason that is not in its code (power or thermal throttling).

Source: NVML API reference, "Device Queries" (nvmlDeviceGetClockInfo, nvmlDeviceGetMaxClockInfo,
nvmlDeviceGetCurrentClocksThrottleReasons, nvmlDeviceGetHandleByPciBusId_v2).
"""
from __future__ import annotations

from contextlib import contextmanager

# nvmlClocksThrottleReasons bits (nvml.h); GPU idle is not a throttle worth a warning.
THROTTLE_REASONS = {
    0x2: "applications clocks setting", 0x4: "software power cap", 0x8: "hardware slowdown",
    0x10: "sync boost", 0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
    0x80: "hardware power brake", 0x100: "display clock setting",
}
DROP = 0.05  # a drop of the SM clock by more than this fraction between before and after warns


def pci_bus_id(device=None) -> str:
    """NVML's form of the current CUDA device's PCI address: "DDDDDDDD:BB:DD.0" (hex)."""
    if device is None:
        from kernels.compiler import cuda  # lazy: backend chosen first (numba)

        device = cuda.get_current_device()
    return f"{device.PCI_DOMAIN_ID:08X}:{device.PCI_BUS_ID:02X}:{device.PCI_DEVICE_ID:02X}.0"


def decode_throttle(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


@contextmanager
def nvml_device(device=None, bus_id: str | None = None):
    """``with nvml_device() as (pynvml, handle):`` NVML initialised, and the handle of the CUDA
    device ``device`` (default: the current one), or of ``bus_id``, found by PCI bus id; NVML is
    shut down on exit. ImportError without nvidia-ml-py; NVML's own errors otherwise."""
    import pynvml  # lazy: optional (pynvml)

    bus_id = bus_id or pci_bus_id(device)
    pynvml.nvmlInit()
    try:
        get = getattr(pynvml, "nvmlDeviceGetHandleByPciBusId_v2", None) or pynvml.nvmlDeviceGetHandleByPciBusId
        yield pynvml, get(bus_id.encode() if isinstance(bus_id, str) else bus_id)
    finally:
        pynvml.nvmlShutdown()


def read(bus_id: str | None = None) -> dict:
    """{"sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "throttle": [reasons], "bus_id"} of the
    device at ``bus_id`` (default: the current CUDA device), or {"error": why} when NVML is absent
    or cannot answer. Never raises."""
    try:
        with nvml_device(bus_id=bus_id) as (nvml, h):
            info = {"bus_id": bus_id or pci_bus_id(),
                    "sm_clock_mhz": int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
                    "sm_clock_max_mhz": int(nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM)),
                    "mem_clock_mhz": int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM))}
            try:
                info["throttle"] = decode_throttle(int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)))
            except Exception:  # older drivers / renamed "event reasons": clocks only
                info["throttle"] = []
            return info
    except ImportError:
        return {"error": "NVML absent (pip install nvidia-ml-py, in the cuda12/cuda13 extras)"}
    except Exception as e:  # NVML library missing (no driver), no permission, not supported
        return {"error": f"NVML unavailable ({type(e).__name__}: {e})"}


def describe(before: dict, after: dict | None = None) -> str:
    """One header line: "SM clock 1980 MHz (limit 1980 MHz), after the run 1755 MHz; throttle: ..."."""
    if before.get("error"):
        return f"clocks: {before['error']}"
    line = f"SM clock {before['sm_clock_mhz']} MHz (limit {before['sm_clock_max_mhz']} MHz) before the run"
    if after and not after.get("error"):
        line += f", {after['sm_clock_mhz']} MHz after"
    reasons = sorted(set(before.get("throttle", [])) | set((after or {}).get("throttle", [])))
    return line + (f"; throttle: {', '.join(reasons)}" if reasons else "; no throttle reason")


def dropped(before: dict, after: dict) -> str | None:
    """A warning when the SM clock after the run is more than DROP below the one before."""
    if before.get("error") or after.get("error") or not before.get("sm_clock_mhz"):
        return None
    b, a = before["sm_clock_mhz"], after["sm_clock_mhz"]
    if a < (1 - DROP) * b:
        why = ", ".join(after.get("throttle", [])) or "no throttle reason reported"
        return f"SM clock dropped during the run: {b} MHz -> {a} MHz ({why}); times may be slower than the card's"
    return None
