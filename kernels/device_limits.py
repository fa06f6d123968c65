"""The device's limits that launch math reads: SMs, threads, shared memory, registers, warp size.

Launch math sizes grids by the SM count (one or a few waves of blocks), picks tiles that fit the
shared memory a block may have, and sizes reductions by the threads an SM holds. It reads those
numbers from :func:`current`, never from constants: on a GPU the driver's attributes
(``cuDeviceGetAttribute`` through Numba: CUDA C++ Programming Guide, "Compute Capabilities",
table "Technical Specifications per Compute Capability", and the ``cudaDeviceProp`` reference);
in the simulator, which reports no device, a described one (:data:`H100`, unless a caller
describes another with :func:`described`: the offline occupancy path describes the ``--arch`` it
compiles for, a test a T4-like device).

Nothing here imports ``numba.cuda`` at import time (``current`` imports kernels.compiler on first
use); kernels import nothing of lab, so lab's architecture table (lab.core.archs) converts its rows
to a :class:`DeviceLimits`, not the other way round.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass

KB = 1024


@dataclass(frozen=True)
class DeviceLimits:
    """What one device allows, in the units CUDA reports them.

    sm_count: streaming multiprocessors. max_threads_per_sm, max_blocks_per_sm: resident threads and
    blocks an SM. max_threads_per_block: threads a block (1024 on every CUDA GPU so far).
    shared_per_block: bytes of shared memory a block may have without opting in (the static
    ``__shared__`` limit, 48 KB); shared_per_block_optin: with the opt-in (dynamic shared memory);
    shared_per_sm: bytes an SM has. registers_per_sm, registers_per_block: 32-bit registers.
    warp_size: threads a warp. max_grid_yz: blocks along grid y or z. cc: compute capability.
    source: "device" (read from the driver) or "described" (a table's row, not a device's answer).
    """

    name: str
    sm_count: int
    max_threads_per_sm: int = 2048
    max_threads_per_block: int = 1024
    max_blocks_per_sm: int = 32
    shared_per_block: int = 48 * KB
    shared_per_block_optin: int = 48 * KB
    shared_per_sm: int = 64 * KB
    registers_per_sm: int = 64 * KB
    registers_per_block: int = 64 * KB
    warp_size: int = 32
    max_grid_yz: int = 65535
    cc: tuple[int, int] | None = None
    source: str = "described"

    def replace(self, **changes) -> DeviceLimits:
        return dataclasses.replace(self, **changes)

    @property
    def described(self) -> bool:
        """True when these numbers come from a table (the simulator, ``--arch``), not a GPU."""
        return self.source != "device"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


# The described devices: CUDA C++ Programming Guide, "Technical Specifications per Compute
# Capability" (per-SM and per-block limits), and each product's datasheet (its SM count).
H100 = DeviceLimits("H100 SXM5 (described)", 132, max_threads_per_sm=2048, max_blocks_per_sm=32,
                    shared_per_block_optin=227 * KB, shared_per_sm=228 * KB, cc=(9, 0))
T4 = DeviceLimits("Tesla T4 (described)", 40, max_threads_per_sm=1024, max_blocks_per_sm=16,
                  shared_per_block_optin=64 * KB, shared_per_sm=64 * KB, cc=(7, 5))

# numba device attribute (CUdevice_attribute without its prefix) -> field
_ATTRIBUTES = {
    "sm_count": "MULTIPROCESSOR_COUNT",
    "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
    "max_threads_per_block": "MAX_THREADS_PER_BLOCK",
    "max_blocks_per_sm": "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "shared_per_block": "MAX_SHARED_MEMORY_PER_BLOCK",
    "shared_per_block_optin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "shared_per_sm": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "registers_per_sm": "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "registers_per_block": "MAX_REGISTERS_PER_BLOCK",
    "warp_size": "WARP_SIZE",
    "max_grid_yz": "MAX_GRID_DIM_Y",
}


def from_device(dev, default: DeviceLimits = H100) -> DeviceLimits:
    """The limits of Numba device ``dev`` (``cuda.get_current_device()``); a field whose attribute
    this Numba cannot read keeps ``default``'s value."""
    values = {}
    for name, attr in _ATTRIBUTES.items():
        try:
            v = int(getattr(dev, attr))
        except Exception:  # an attribute this binding does not expose: the default's value
            continue
        if v > 0:
            values[name] = v
    try:
        cc = tuple(int(c) for c in dev.compute_capability)
    except Exception:  # no compute capability reported: none
        cc = None
    try:
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    except Exception:  # no name reported
        name = "GPU"
    return default.replace(name=name, cc=cc, source="device", **values)


_DEVICE: list[DeviceLimits] = []  # the current GPU's limits, read once
_DESCRIBED: contextvars.ContextVar[DeviceLimits | None] = contextvars.ContextVar("described_device", default=None)


def current() -> DeviceLimits:
    """The limits launch math uses now: the device a :func:`described` block names, else the GPU's
    own (read once), else, in the simulator or when no device answers, :data:`H100` (described)."""
    described_now = _DESCRIBED.get()
    if described_now is not None:
        return described_now
    if not _DEVICE:
        from kernels.compiler import SIMULATOR, cuda  # lazy: backend chosen first (numba)

        limits = H100
        if not SIMULATOR:
            try:
                limits = from_device(cuda.get_current_device())
            except Exception:  # no usable device: the described H100
                limits = H100
        _DEVICE.append(limits)
    return _DEVICE[0]


@contextlib.contextmanager
def described(limits: DeviceLimits):
    """Inside the ``with`` block (this thread or task), launch math sees ``limits`` instead of the
    current device: the offline occupancy path (an ``--arch`` with no GPU of it), and tests that
    show a launch following the device."""
    token = _DESCRIBED.set(limits)
    try:
        yield limits
    finally:
        _DESCRIBED.reset(token)
