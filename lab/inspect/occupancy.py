"""``lab occupancy KERNEL``: a kernel variant's registers, shared and local memory (from the loaded
kernel on a GPU, or compiled offline for ``--arch``) through the occupancy calculator of
:mod:`lab.core.occupancy`, beside the driver's answer where there is a GPU. Data only."""
from __future__ import annotations

import math

from kernels.spec import plural
from lab.core import archs, resources
from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core.occupancy import current_cc, calculate, sweep, validate
import kernels as K
from kernels.device_limits import described

def resolve(kernel: str, variant: str | None, threads: int, arch_name: str | None, cc: tuple | None):
    """(spec, variant name, Arch) of a ``lab occupancy`` or ``lab grid`` call; ``arch_name`` defaults
    to the sm_XX of ``cc`` (the GPU's compute capability, None without one), else sm_90. LabError
    for an unknown kernel, variant or arch, and for threads the arch cannot launch or the variant
    does not accept (``Variant.accepts``)."""
    try:
        spec, variant = K.load_variant(kernel, variant)
        arch = archs.get(arch_name or (f"sm_{cc[0]}{cc[1]}" if cc else "sm_90"))
    except KeyError as e:
        raise LabError(e.args[0]) from None
    validate(arch, threads, 0, 0)
    why = spec.variants[variant].accepts(threads)
    if why:
        raise LabError(f"--threads {threads}: {variant} {why}")
    return spec, variant, arch


def kernel_occupancy(kernel: str, variant: str | None, threads: int, arch_name: str | None, backend: str,
                     size: str | None = None) -> dict:
    """Occupancy of every kernel that one run of ``kernel``'s ``variant`` launches with ``threads``
    threads per block.

    On a GPU with no ``arch_name`` (or the GPU's own): resources and the driver's blocks per SM from
    the loaded kernel. Otherwise (no GPU, or another arch): resources from an offline compile for
    ``arch_name`` (default sm_90) through nvJitLink. The top-level keys are those of
    :func:`calculate` for the variant's lowest-occupancy kernel; ``kernels`` lists each.
    """
    device_cc = current_cc() if backend == "gpu" else None
    spec, variant, arch = resolve(kernel, variant, threads, arch_name, device_cc)
    run_size = spec.parse_size(size) if size else spec.default_size(True)
    on_device = device_cc is not None and device_cc == arch.cc
    if on_device:
        records = resources.record_launches(spec, variant, run_size, threads)
    else:  # the launch math sizes grids and picks tiles for the arch compiled for, not this machine
        with described(arch.device_limits()):
            records = resources.record_launches(spec, variant, run_size, threads)
    usage = [resources.device_resources(r) for r in records] if on_device else resources.offline_resources(records, arch.name)
    rows = []
    for rec, use in zip(records, usage):
        if "error" in use:
            hint = ("; the calculator mode (--registers/--shared) still works for it"
                    if "not supported" in use["error"] else "")
            raise LabError(f"{rec.label}: offline compile for {arch.name} failed: {use['error']}{hint}")
        t = math.prod(rec.block)
        r = calculate(arch, t, use["registers"], use["shared_bytes"] + rec.dynamic_shared)
        r.update(kernel_name=rec.label, block=list(rec.block), local_bytes=use["local_bytes"],
                 static_shared_bytes=use["shared_bytes"], dynamic_shared_bytes=rec.dynamic_shared,
                 resources_source=use["source"])
        if on_device:
            r["driver_active_blocks_per_sm"] = resources.driver_blocks_per_sm(rec, t, rec.dynamic_shared)
        rows.append(r)
    main = min(rows, key=lambda r: r["occupancy"])
    out = {"kernel": kernel, "variant": variant, "threads_asked": threads, **main, "kernels": rows}
    out["resources_from"] = "GPU" if on_device else "offline"
    if threads != main["threads"]:
        out["note"] = f"{main['kernel_name']} launches {plural(main['threads'], 'thread')} per block whatever --threads is"
    return out


def occupancy(kernel: str | None, variant: str | None, threads: int, arch_name: str | None,
              registers: int | None, shared: int | None, backend: str | None, with_sweep: bool = False) -> dict:
    """``lab occupancy``: KERNEL's variant on ``arch_name`` (``backend`` "gpu" or "simulator"), or the
    calculator for ``registers``/``shared`` (KERNEL None). ``with_sweep``: adds ``"sweep"``, the occupancy at
    32..1024 threads per block. The ``lab occupancy --json`` dict: ``schema_version`` and the keys of
    :func:`calculate` or :func:`kernel_occupancy`. Raises LabError on bad input (one line)."""
    if kernel is None:
        if registers is None:
            raise LabError("give KERNEL, or --arch, --registers and --shared for the calculator")
        try:
            a = archs.get(arch_name or "sm_90")
        except KeyError as e:
            raise LabError(e.args[0]) from None
        result = calculate(a, threads, registers, shared or 0)
    else:
        if registers is not None or shared is not None:
            raise LabError("--registers/--shared are for calculator mode (no KERNEL)")
        result = kernel_occupancy(kernel, variant, threads, arch_name, backend)
    if with_sweep:
        points = sweep(archs.get(result["arch"]), result["registers"], result["shared_bytes"])
        result["sweep"] = [{k: p[k] for k in ("threads", "active_blocks_per_sm", "active_warps_per_sm",
                                               "max_warps_per_sm", "occupancy", "limiter")} for p in points]
    return {"schema_version": SCHEMA_VERSION, **result}
