"""Theoretical occupancy by the CUDA Occupancy Calculator's rules: how many blocks of a kernel fit
on one SM, which resource runs out first, and what to change to fit one more.

Source: ``cuda_occupancy.h`` (CUDA toolkit; ``cudaOccMaxActiveBlocksPerMultiprocessor`` and the
four ``cudaOccMaxBlocksPerSM*Limit`` functions it takes the minimum of), the CUDA C++ Best Practices
Guide, "Occupancy", and Nsight Compute's "Occupancy" section. Limits per compute capability:
:mod:`lab.core.archs`. Pure Python: no GPU, no Numba.

Blocks per SM = min of
  warps          max_warps_per_sm // ceil(threads / 32)
  blocks         the SM's block-slot limit (16, 24 or 32)
  registers      per warp: regs * 32 rounded up to 256; warps fit per sub-partition
                 ((65536 / 4) // regs_per_warp), x 4 sub-partitions, // warps per block
  shared_memory  (static + dynamic + 1 KB driver reservation on cc >= 8.0), rounded up to the
                 allocation unit (256 B on 7.x, 128 B from 8.0), into the SM's shared memory
                 (the default carveout gives a block all of it)
The limit of a kernel's thread-block barriers (``cudaOccMaxBlocksPerSMBlockBarrierLimit``) never binds
with one barrier per block, which is all a Numba kernel has; it is left out.
"""
from __future__ import annotations

import math

from kernels.spec import plural
from lab.core import archs, resources
from lab.core.archs import Arch
from lab.core.errors import LabError

LIMITERS = ("warps", "blocks", "registers", "shared_memory")
UNLIMITED = 10**9


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def validate(arch: Arch, threads: int, registers: int, shared_bytes: int) -> None:
    """LabError (one line naming the limit) for a launch the arch cannot run at all."""
    if not 1 <= threads <= arch.max_threads_per_block:
        raise LabError(f"--threads {threads}: threads per block must be 1..{arch.max_threads_per_block} on {arch.name}")
    if not 0 <= registers <= arch.max_registers_per_thread:
        raise LabError(f"--registers {registers}: a thread can use 0..{arch.max_registers_per_thread} registers on {arch.name}")
    if not 0 <= shared_bytes <= arch.shared_per_block_optin:
        raise LabError(f"--shared {shared_bytes}: shared memory per block must be 0..{arch.shared_per_block_optin} bytes "
                       f"on {arch.name} ({arch.shared_per_block_optin // 1024} KB, opt-in maximum)")
    per_warp = _round_up(registers * arch.warp_size, arch.register_alloc_unit)
    warps = -(-threads // arch.warp_size)
    need = per_warp * _round_up(warps, arch.sub_partitions)
    if need > arch.registers_per_block:
        raise LabError(f"{registers} registers x {threads} threads needs {need} registers a block (allocated per warp, "
                       f"256 at a time); {arch.name} allows {arch.registers_per_block}")


def limits(arch: Arch, threads: int, registers: int, shared_bytes: int) -> dict:
    """Blocks per SM allowed by each factor (``LIMITERS``), after :func:`validate`."""
    warps = -(-threads // arch.warp_size)
    by_warps = arch.max_warps_per_sm // warps
    if registers > 0:
        per_warp = _round_up(registers * arch.warp_size, arch.register_alloc_unit)
        warps_per_sub = (arch.registers_per_sm // arch.sub_partitions) // per_warp
        by_regs = warps_per_sub * arch.sub_partitions // warps
    else:
        by_regs = UNLIMITED
    smem = _round_up(shared_bytes + arch.reserved_shared_per_block, arch.shared_alloc_unit)
    by_smem = arch.shared_per_sm // smem if smem else UNLIMITED
    return {"warps": by_warps, "blocks": arch.max_blocks_per_sm, "registers": by_regs, "shared_memory": by_smem}


def calculate(arch: Arch, threads: int, registers: int, shared_bytes: int) -> dict:
    """Theoretical occupancy of a block of ``threads`` threads using ``registers`` registers a thread
    and ``shared_bytes`` bytes of shared memory (static + dynamic) on ``arch``.

    Returns the ``lab occupancy --json`` dict: arch, threads, registers, shared_bytes,
    active_blocks_per_sm, active_warps_per_sm, max_warps_per_sm, occupancy (0..1), limiter (the
    first of LIMITERS reaching the minimum), limiters (all that reach it), limits (blocks per SM by
    each factor), warps_per_block, registers_per_warp_allocated, shared_bytes_allocated, advice.
    Raises LabError for a launch the arch cannot run.
    """
    validate(arch, threads, registers, shared_bytes)
    lim = limits(arch, threads, registers, shared_bytes)
    blocks = min(lim.values())
    warps = -(-threads // arch.warp_size)
    tied = [k for k in LIMITERS if lim[k] == blocks]
    result = {
        "arch": arch.name, "threads": threads, "registers": registers, "shared_bytes": shared_bytes,
        "active_blocks_per_sm": blocks, "active_warps_per_sm": blocks * warps,
        "max_warps_per_sm": arch.max_warps_per_sm,
        "occupancy": blocks * warps / arch.max_warps_per_sm,
        "limiter": tied[0], "limiters": tied,
        "limits": {k: (None if v >= UNLIMITED else v) for k, v in lim.items()},
        "warps_per_block": warps,
        "registers_per_warp_allocated": _round_up(registers * arch.warp_size, arch.register_alloc_unit),
        "shared_bytes_allocated": _round_up(shared_bytes + arch.reserved_shared_per_block, arch.shared_alloc_unit),
        "reserved_shared_per_block": arch.reserved_shared_per_block,
    }
    result["advice"] = advice(arch, result)
    return result


def advice(arch: Arch, r: dict) -> str:
    """One sentence: what limits the blocks per SM and what change would fit one more block."""
    blocks, warps, threads = r["active_blocks_per_sm"], r["warps_per_block"], r["threads"]
    lim = r["limiter"]
    if r["occupancy"] >= 1:
        return "full occupancy: every warp slot of the SM can be filled"
    if lim == "warps":
        fits = [t for t in range(32, arch.max_threads_per_block + 1, 32) if arch.max_warps_per_sm % (t // 32) == 0
                and arch.max_warps_per_sm // (t // 32) <= arch.max_blocks_per_sm]
        return (f"{arch.max_warps_per_sm} warp slots hold {plural(blocks, 'block')} of {plural(warps, 'warp')}; threads per block "
                f"that divide them evenly: {', '.join(map(str, fits[-4:]))}")
    if lim == "blocks":
        need = math.ceil(arch.max_warps_per_sm / arch.max_blocks_per_sm) * arch.warp_size
        return (f"blocks are small: {arch.max_blocks_per_sm} blocks x {plural(warps, 'warp')} fill {blocks * warps} of "
                f"{arch.max_warps_per_sm} warp slots; use at least {need} threads per block")
    if lim == "registers":
        target = blocks + 1
        best = None
        for regs in range(r["registers"] - 1, 0, -1):
            if limits(arch, threads, regs, r["shared_bytes"])["registers"] >= target:
                best = regs
                break
        if best is None:
            return "registers limit the blocks per SM; use fewer threads per block"
        return (f"{plural(r['registers'], 'register')} a thread allow {plural(blocks, 'block')} an SM; at most {best} would fit "
                f"{target} (fewer live values, or cuda.jit(max_registers=...) / launch_bounds, at the risk of spills)")
    target = blocks + 1
    room = arch.shared_per_sm // target // arch.shared_alloc_unit * arch.shared_alloc_unit - arch.reserved_shared_per_block
    return (f"{r['shared_bytes']} B of shared memory a block allow {plural(blocks, 'block')} an SM; at most {max(room, 0)} B "
            f"would fit {target} (smaller tiles, or fewer buffers)")


def sweep(arch: Arch, registers: int, shared_bytes: int, step: int = 32) -> list[dict]:
    """calculate() for threads per block = step, 2*step, ..., 1024 (launches the arch cannot run are
    left out, e.g. too many registers for a large block)."""
    out = []
    for t in range(step, arch.max_threads_per_block + 1, step):
        try:
            out.append(calculate(arch, t, registers, shared_bytes))
        except LabError:
            continue
    return out


# --- A lab kernel's occupancy: its compiled resources + the calculation (+ the driver's answer) -----
def current_cc() -> tuple[int, int]:
    """The compute capability (major, minor) of the current GPU (a GPU process only: numba.cuda's
    device; CUDA Programming Guide, "Compute Capabilities")."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    return tuple(cuda.get_current_device().compute_capability)


def launch_usage(spec, variant: str, threads: int, simulator: bool, size=None, records=None) -> dict:
    """The keys ``lab run`` adds to each Numba variant's launch dict: registers, shared_bytes,
    local_bytes (of the variant's lowest-occupancy kernel) and occupancy (0..1).

    On a GPU: the driver's attributes of the kernels Numba loaded. ``records``: the
    :class:`lab.core.resources.LaunchRecord` s of a call the caller already made (``lab run``'s checked
    call); without them an extra run of the variant at ``size`` records which kernels it launches. In the simulator nothing is compiled: all four are None (``lab
    occupancy KERNEL --arch sm_XX`` reads them offline). Never raises: a failure gives None values.
    """
    keys = dict.fromkeys(("registers", "shared_bytes", "local_bytes", "occupancy"))
    if simulator:
        return keys
    try:
        cc = current_cc()
        arch = archs.for_cc(cc)
        worst = None
        size = size or spec.default_size(True)  # the run's size: some rungs pick a kernel build by size
        for rec in records or resources.record_launches(spec, variant, size, threads):
            use = resources.device_resources(rec)
            t = math.prod(rec.block)
            occ = (resources.driver_blocks_per_sm(rec, t, rec.dynamic_shared) * -(-t // 32)
                   / (arch.max_warps_per_sm if arch else 64))
            if arch:
                occ = calculate(arch, t, use["registers"], use["shared_bytes"] + rec.dynamic_shared)["occupancy"]
            if worst is None or occ < worst["occupancy"]:
                worst = {"registers": use["registers"], "shared_bytes": use["shared_bytes"] + rec.dynamic_shared,
                         "local_bytes": use["local_bytes"], "occupancy": occ}
        return worst or keys
    except Exception:
        return keys


