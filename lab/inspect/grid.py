"""``lab grid``: how a launch maps threads to output elements, recorded from a real run.

The variant runs once in Numba's CUDA simulator on fresh random inputs. Every store into an output
array is tagged with the (linear) blockIdx and threadIdx of the simulated thread that made it
(:func:`record_map`), so the map shows what the kernel did, not what the launch formula says: a
kernel with a wrong index shows a wrong map, elements never written stay -1, and elements stored by
more than one thread of one launch are counted. Linear ids: block = bx + gx * (by + gy * bz),
thread = tx + bdx * (ty + bdy * tz) (CUDA C++ Programming Guide, "Thread Hierarchy").

Waves = blocks / (SMs x resident blocks per SM): how many rounds of blocks the GPU runs (the last,
partial wave leaves SMs idle). Resident blocks per SM come from :mod:`lab.core.occupancy` with the
kernel's registers and shared memory (compiled offline for the arch when no GPU is here).
Seed example (the seed notebook, "PyTorch handling of GPU devices"): vecadd, N = 5466, 1024 threads
per block: 6 blocks, 6144 threads, 678 idle.
"""
from __future__ import annotations

import math
import threading
import contextlib

import numpy as np

from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core import resources
from lab.core.trace import SectorTracer, SIM_LABEL
from lab.inspect import occupancy


def record_map(spec, variant: str, size, threads: int, seed: int = 0, tracer=None):
    """Run ``variant`` in the simulator; returns (block_of, thread_of, writers, launches, outputs).

    block_of, thread_of: int64 arrays of the first output's shape, the linear block / thread id of
    the last thread that stored each element, -1 where none did. writers: int array, the most
    distinct threads that stored an element within one launch (0 = never written, > 1 = a race).
    launches: [(grid, block)] of each kernel launch. tracer: a lab.core.trace.SectorTracer that also
    records every global load and store of the run (``lab grid --warp``), or None.
    """
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray  # lazy: backend chosen first (numba)

    target = {}
    lock = threading.Lock()
    launches = []

    def on_outputs(outs):
        ary = outs[0]._ary
        target.update(ary=ary, pos=np.arange(ary.size).reshape(ary.shape),
                      block=np.full(ary.shape, -1, np.int64), thread=np.full(ary.shape, -1, np.int64),
                      writers=np.zeros(ary.shape, np.int64), seen={})

    def on_launch(kernel, grid, block, dyn, args):
        launches.append((tuple(grid), tuple(block)))
        with lock:  # a new launch: counting writers starts again (multi-kernel pipelines rewrite)
            target["seen"] = {}

    orig = FakeCUDAArray.__setitem__

    def setitem(self, idx, val):
        ary = target.get("ary")
        if ary is not None and self._ary is ary:
            me = threading.current_thread()
            bidx, tidx = getattr(me, "blockIdx", None), getattr(me, "threadIdx", None)
            if bidx is not None:
                gx, gy, _ = me._manager._grid_dim
                bx, by, _ = me._manager._block_dim
                b = bidx.x + gx * (bidx.y + gy * bidx.z)
                t = tidx.x + bx * (tidx.y + by * tidx.z)
                with lock:
                    for p in np.atleast_1d(target["pos"][idx]).ravel():
                        who = target["seen"].setdefault(int(p), set())
                        who.add((b, t))
                        flat = np.unravel_index(int(p), ary.shape)
                        target["block"][flat], target["thread"][flat] = b, t
                        target["writers"][flat] = max(target["writers"][flat], len(who))
        return orig(self, idx, val)

    FakeCUDAArray.__setitem__ = setitem
    try:
        with tracer if tracer is not None else contextlib.nullcontext():
            outs, _ = resources.run_variant(spec, variant, size, threads, seed=seed, on_launch=on_launch,
                                            on_outputs=on_outputs)
    finally:
        FakeCUDAArray.__setitem__ = orig
    return target["block"], target["thread"], target["writers"], launches, outs


def _gpu_sms():
    """(SM count, (major, minor)) of GPU 0 through the driver API (works beside the simulator), or None."""
    try:
        from cuda.bindings import driver as d  # lazy: optional (cuda)

        if d.cuInit(0)[0] != d.CUresult.CUDA_SUCCESS:
            return None
        err, dev = d.cuDeviceGet(0)
        A = d.CUdevice_attribute
        get = lambda a: d.cuDeviceGetAttribute(a, dev)[1]  # noqa: E731
        return get(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), (
            get(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), get(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
    except Exception:
        return None


def describe(kernel: str, variant: str | None, size_text: str | None, threads: int, arch_name: str | None = None,
             sms: int | None = None, waves: bool = True, warp: int | None = None) -> dict:
    """The ``lab grid --json`` dict (the keys of its JSON schema) plus writers/idle-block details and waves' inputs.

    warp: a linear warp id (block id x warps a block + warp within the block) whose global loads and
    stores are recorded (lab.core.trace.SectorTracer, the simulator's addresses): the dict then has
    "warp" = {"id", "block", "warp_in_block", "threads": [first, last], "requests" (each with the
    array's element offsets and the 32-byte sectors it touched), "requests_total", "arrays", "label"}.

    Raises LabError on an unknown kernel/variant/arch, threads over the limit, a grid larger than
    CUDA allows (grid x < 2**31, y and z <= 65535), or a warp id outside the grid.
    """
    gpu = _gpu_sms()
    spec, variant, arch = occupancy.resolve(kernel, variant, threads, arch_name, gpu[1] if gpu else None)
    v = spec.variants[variant]
    try:
        size = spec.parse_size(size_text) if size_text else spec.default_size(True)
    except ValueError as e:
        raise LabError(str(e)) from None
    cfg = v.launch(size, threads)
    grid = tuple(cfg.grid) + (1,) * (3 - len(cfg.grid))
    if grid[0] > arch.max_grid_x or max(grid[1:]) > arch.max_grid_yz:
        raise LabError(f"grid {cfg.grid} is larger than CUDA allows (x <= {arch.max_grid_x}, y and z <= "
                       f"{arch.max_grid_yz})")
    n_out = math.prod(spec.out_specs(size, np.float32)[0][0])
    if n_out > MAX_ELEMENTS:
        raise LabError(f"size {size_text}: {n_out:,} output elements is too many to record in the simulator, which "
                       f"runs every CUDA thread in Python (at most {MAX_ELEMENTS:,}); try a smaller --size")
    tpb = cfg.threads_per_block
    warps = -(-tpb // 32)
    tracer = None
    if warp is not None:
        total = math.prod(cfg.grid) * warps
        if not 0 <= warp < total:
            raise LabError(f"--warp {warp}: this launch has warps 0..{total - 1} ({math.prod(cfg.grid)} blocks of "
                           f"{warps} warps; warp id = block id x {warps} + warp in the block)")
        tracer = SectorTracer()
    block_of, thread_of, writers, launches, _ = record_map(spec, variant, size, threads, tracer=tracer)
    out = {"schema_version": SCHEMA_VERSION, "kernel": spec.name, "variant": variant, "size": list(size),
           "grid": list(cfg.grid), "block": list(cfg.block), "threads_total": cfg.threads_total,
           "threads_needed": cfg.threads_needed, "threads_idle": cfg.threads_idle, "warps_per_block": warps,
           "waves": None,
           "map": {"shape": list(block_of.shape), "block_of": block_of.tolist(), "thread_of": thread_of.tolist(),
                   "writers": writers.tolist()}}
    n_blocks = math.prod(cfg.grid)
    written_blocks = set(np.unique(block_of[block_of >= 0]).tolist())
    out["blocks_total"] = n_blocks
    out["idle_blocks"] = [b for b in range(n_blocks) if b not in written_blocks][:64]
    out["idle_by_block"] = _idle_by_block(cfg, block_of, thread_of)
    out["elements_never_written"] = int((writers == 0).sum())
    out["elements_written_twice"] = int((writers > 1).sum())
    out["launches"] = [{"grid": list(g), "block": list(b)} for g, b in launches]
    if tracer is not None:
        b, w = divmod(warp, warps)
        out["warp"] = {"id": warp, "block": b, "warp_in_block": w, "threads": [32 * w, min(tpb, 32 * w + 32) - 1],
                       **tracer.warp_requests(b, w), "label": SIM_LABEL}
    out["arch"] = arch.name
    out["sms"] = sms or (gpu[0] if gpu else arch.sms)
    out["sms_source"] = "argument" if sms else ("this GPU" if gpu else f"{arch.example_gpu} ({arch.name})")
    if waves:
        try:
            occ = occupancy.kernel_occupancy(kernel, variant, threads, arch.name, "simulator")
            per_sm = occ["kernels"][-1]["active_blocks_per_sm"] if len(occ["kernels"]) == 1 else occ["active_blocks_per_sm"]
            out["resident_blocks_per_sm"] = per_sm
            out["waves"] = n_blocks / (out["sms"] * per_sm) if per_sm else None
            out["waves_note"] = f"{per_sm} resident blocks an SM (limited by {occ['limiter']}, {occ['arch']})"
        except LabError as e:
            out["waves_note"] = f"waves unknown: {e}"
    return out


def _idle_by_block(cfg, block_of, thread_of) -> dict:
    """{block id: idle threads} for blocks where some threads wrote nothing (1 element a thread kernels)."""
    tpb = cfg.threads_per_block
    n_blocks = math.prod(cfg.grid)
    counts = np.zeros(n_blocks, np.int64)
    ok = block_of >= 0
    if ok.any():
        pairs = np.unique(np.stack([block_of[ok], thread_of[ok]]), axis=1)
        counts = np.bincount(pairs[0], minlength=n_blocks)
    idle = {int(b): int(tpb - c) for b, c in enumerate(counts) if c < tpb}
    return dict(list(idle.items())[:64])


# --- Presentation ---------------------------------------------------------------------------------
MAX_ELEMENTS = 200_000  # ~2 minutes of simulated threads


