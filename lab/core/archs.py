"""Per-SM limits of each compute capability, as the CUDA Occupancy Calculator uses them.

One row per compute capability; each value names its source:

* [PG]   CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications per
         Compute Capability" (threads, warps, blocks, registers, shared memory per SM and block).
* [OCC]  ``cuda_occupancy.h`` (CUDA 13.0 toolkit): ``cudaOccMaxBlocksPerMultiprocessor`` (blocks
         per SM), ``cudaOccRegAllocationGranularity`` (256 registers, allocated per warp),
         ``cudaOccSubPartitionsPerMultiprocessor`` (4), ``cudaOccSMemAllocationGranularity``
         (256 B on 7.x, 128 B from 8.0), ``cudaOccSMemPerBlock`` (the per-block reservation from 8.0).
* [NCU]  Nsight Compute, "Occupancy" section / Kernel Profiling Guide: "Driver Shared Memory Per
         Block" = 1 KB on cc >= 8.0, which the calculator adds to every block's shared memory.

``sms`` is the SM count of one common product of that capability (only for waves when no GPU is
present; a real GPU's own count always wins): [PG] lists none, so the product's datasheet is named.
"""
from __future__ import annotations

from dataclasses import dataclass
from kernels.device_limits import DeviceLimits

KB = 1024


@dataclass(frozen=True)
class Arch:
    cc: tuple[int, int]
    max_warps_per_sm: int  # [PG] "Maximum number of resident warps per SM"
    max_blocks_per_sm: int  # [PG] "Maximum number of resident blocks per SM"; [OCC] cudaOccMaxBlocksPerMultiprocessor
    shared_per_sm: int  # bytes, [PG] "Maximum amount of shared memory per SM"
    shared_per_block_optin: int  # bytes, [PG] "Maximum amount of shared memory per thread block" (opt-in)
    shared_alloc_unit: int  # bytes, [OCC] cudaOccSMemAllocationGranularity
    reserved_shared_per_block: int  # bytes, [NCU]/[OCC] cudaOccSMemPerBlock: 1 KB on cc >= 8.0
    example_gpu: str  # the product whose SM count ``sms`` is (its datasheet)
    sms: int
    registers_per_sm: int = 64 * KB  # 32-bit registers, [PG] "Number of 32-bit registers per SM"
    registers_per_block: int = 64 * KB  # [PG] "Maximum number of 32-bit registers per thread block"
    max_registers_per_thread: int = 255  # [PG] "Maximum number of 32-bit registers per thread"
    register_alloc_unit: int = 256  # registers, per warp: [OCC] cudaOccRegAllocationGranularity
    sub_partitions: int = 4  # [OCC] cudaOccSubPartitionsPerMultiprocessor (registers split 4 ways)
    max_threads_per_block: int = 1024  # [PG] "Maximum number of threads per block"
    shared_per_block_static: int = 48 * KB  # [PG] static __shared__ limit without opt-in
    warp_size: int = 32  # [PG] "Warp size"
    max_grid_x: int = 2**31 - 1  # [PG] "Maximum x-dimension of a grid of thread blocks"
    max_grid_yz: int = 65535  # [PG] "Maximum y- or z-dimension of a grid of thread blocks"

    @property
    def name(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * self.warp_size

    def device_limits(self, sms: int | None = None):
        """This row as the described device launch math reads (kernels.device_limits.DeviceLimits),
        with ``sms`` SMs (default: the example product's)."""
        return DeviceLimits(f"{self.example_gpu} ({self.name}, described)", sms or self.sms,
                            max_threads_per_sm=self.max_threads_per_sm, max_threads_per_block=self.max_threads_per_block,
                            max_blocks_per_sm=self.max_blocks_per_sm, shared_per_block=self.shared_per_block_static,
                            shared_per_block_optin=self.shared_per_block_optin, shared_per_sm=self.shared_per_sm,
                            registers_per_sm=self.registers_per_sm, registers_per_block=self.registers_per_block,
                            warp_size=self.warp_size, max_grid_yz=self.max_grid_yz, cc=self.cc)


ARCHS = {a.name: a for a in (
    Arch((7, 0), 64, 32, 96 * KB, 96 * KB, 256, 0, "Tesla V100 SXM2", 80),
    Arch((7, 5), 32, 16, 64 * KB, 64 * KB, 256, 0, "Tesla T4", 40),
    Arch((8, 0), 64, 32, 164 * KB, 163 * KB, 128, 1 * KB, "A100 SXM4", 108),
    Arch((8, 6), 48, 16, 100 * KB, 99 * KB, 128, 1 * KB, "GeForce RTX 3090", 82),
    Arch((8, 7), 48, 16, 164 * KB, 163 * KB, 128, 1 * KB, "Jetson AGX Orin", 16),
    Arch((8, 9), 48, 24, 100 * KB, 99 * KB, 128, 1 * KB, "L4", 58),
    Arch((9, 0), 64, 32, 228 * KB, 227 * KB, 128, 1 * KB, "H100 SXM5", 132),
    Arch((10, 0), 64, 32, 228 * KB, 227 * KB, 128, 1 * KB, "B200", 148),
    # cc 12.0: [OCC] cudaOccMaxBlocksPerMultiprocessor returns 24 for major 12.
    Arch((12, 0), 48, 24, 100 * KB, 99 * KB, 128, 1 * KB, "GeForce RTX 5090", 170),
)}


def get(name: str) -> Arch:
    """The Arch for ``sm_XX`` (also accepts ``9.0``, ``90``, ``sm90``); KeyError naming the choices."""
    key = name.strip().lower().replace("sm_", "").replace("sm", "").replace("compute_", "")
    if "." in key:
        major, minor = key.split(".", 1)
        key = f"{major}{minor}"
    arch = ARCHS.get(f"sm_{key}")
    if arch is None:
        raise KeyError(f"unknown arch {name!r}; known: {', '.join(ARCHS)}")
    return arch


def for_cc(cc: tuple[int, int]) -> Arch | None:
    """The Arch of compute capability ``cc``, or None when the table has no row for it."""
    return ARCHS.get(f"sm_{cc[0]}{cc[1]}")
