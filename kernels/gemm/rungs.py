"""Matmul rungs 7-9 (warp_tiled, wide_loads, small): launch math and prepare of gemm_kernel builds.

Source: S. Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance" (2022).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from kernels.arrays import address
from kernels.compiler import SIMULATOR
from kernels.gemm.config import GEMM_TILES, WARP_TILED_F64, GemmConfig, gemm_config
from kernels.gemm.generator import gemm_kernel
from kernels.gemm.split_k import k_ranges, split_k_enqueue
from kernels.spec import Launch, blocks_for, sm_count
from kernels.warp import WARP


def _axis_threads_with_work(extent, tile, warp_tile, sub, iters, per_thread, lanes):
    """Threads along one axis (rows or columns) of a gemm grid whose tile holds at least one element
    inside ``extent``: a thread's first element is the smallest it owns, so it has work when that
    first element is inside."""
    full, rest = divmod(extent, tile)
    count = full * (tile // per_thread // iters)
    for w0 in range(0, tile, warp_tile):  # the partial last block
        for lane in range(lanes):
            count += w0 + lane * per_thread < rest
    return count


def gemm_launch_config(cfg: GemmConfig, size, splits: int = 1, note: str = "") -> Launch:
    """grid (ceil(N / bn), ceil(M / bm), splits), block (threads,) for one gemm_kernel build."""
    m, n, _ = size
    d = cfg.derived()
    rows = _axis_threads_with_work(m, cfg.bm, cfg.wm, d["wsubm"], d["wmiter"], cfg.tm, WARP // d["tcols"])
    cols = _axis_threads_with_work(n, cfg.bn, cfg.wn, d["wsubn"], cfg.wniter, cfg.tn, d["tcols"])
    return Launch(grid=(blocks_for(n, cfg.bn), blocks_for(m, cfg.bm), splits), block=(cfg.threads,),
                  threads_needed=rows * cols * splits, note=note)


def _pairs_ok(a) -> bool:
    """A float32 matrix can be read as a float64 view: C-contiguous, even row length, 8-byte aligned."""
    if a.shape[len(a.shape) - 1] % 2:
        return False
    flags = getattr(a, "flags", None)
    if flags is not None and not flags["C_CONTIGUOUS"]:
        return False
    ptr = address(a)
    return SIMULATOR or ptr is None or ptr % 8 == 0


def gemm_prepare_config(cfg: GemmConfig, inputs, outputs, splits: int = 1):
    """The enqueue function of one gemm_kernel build on device arrays (A, B) -> (C,): with
    ``splits`` > 1 it writes splits partial C's into a workspace and adds them in a second launch.
    Pairs fall back to single loads when an input cannot be viewed as float64."""
    A, B = inputs
    (C,) = outputs
    m, n = C.shape
    k = A.shape[1]
    if cfg.pairs and not (A.dtype == np.float32 and _pairs_ok(A) and _pairs_ok(B)):
        cfg = cfg.replace(pairs=False)
    if cfg.pairs:
        A, B = A.view(np.float64), B.view(np.float64)
    kchunk, splits = k_ranges(k, splits, cfg.bk)
    launch = gemm_launch_config(cfg, (m, n, k), splits)
    return split_k_enqueue(gemm_kernel(cfg.key)[launch.grid, launch.block], A, B, C, splits, kchunk)


def gemm_launch(rung):
    """The launch math of a gemm rung: its float32 configuration for the size
    (:func:`gemm_config`), block (threads,) fixed by the configuration whatever ``threads`` is; the
    note names the configuration (and the float64 one, where it differs)."""
    def launch(size, threads):
        cfg = gemm_config(rung, size)
        note = cfg.describe()
        if rung == "wide_loads" and not cfg.pairs:
            note += " (K or N odd)"
        if rung != "small":
            note += f"; float64: {WARP_TILED_F64.bm}x{WARP_TILED_F64.bn} tiles"
        if threads != cfg.threads:
            note += f"; block fixed at {cfg.threads} threads, --threads {threads} ignored"
        return gemm_launch_config(cfg, size, note=note)
    return launch


def tuned_gemm_config(rung: str, size, params: dict, dtype=np.float32) -> tuple[GemmConfig, int]:
    """(config, splits) of a gemm rung with tunable ``params`` ({"tile": a GEMM_TILES name,
    "splits": K ranges}; missing ones: :func:`gemm_config`'s tile, 1 range). Pairs as the rung
    (wide_loads: where K and N are even); float64 keeps the tile where its sums fit in registers
    (at most 64 a thread), else WARP_TILED_F64. ValueError for a value it cannot run or that cannot
    pay at this size (see GEMM_TILES)."""
    m, n, k = size
    name = params.get("tile")
    if name is None:
        cfg = gemm_config(rung, size, dtype)
    elif name not in GEMM_TILES:
        raise ValueError(f"tile={name!r}: one of {', '.join(GEMM_TILES)}")
    else:
        cfg = GEMM_TILES[name].replace(pairs=rung == "wide_loads" and np.dtype(dtype) == np.float32
                                       and k % 2 == 0 and n % 2 == 0)
        if cfg.bm > max(32, 2 * m) or cfg.bn > max(32, 2 * n):
            raise ValueError(f"tile {name} is more than twice the {m} x {n} output")
        if np.dtype(dtype) == np.float64:
            d = cfg.derived()
            if d["rows"] * d["cols"] > 64:
                cfg = WARP_TILED_F64
    splits = params.get("splits", 1)
    if not isinstance(splits, int) or splits < 1:
        raise ValueError(f"splits={splits!r}: a count of K ranges (1: no split)")
    if splits > 1:
        tiles = blocks_for(m, cfg.bm) * blocks_for(n, cfg.bn)
        if tiles >= 2 * sm_count():
            raise ValueError(f"{tiles} tiles fill the SMs without splitting K")
        if blocks_for(k, splits) < 2 * cfg.bk:
            raise ValueError(f"K = {k} in {splits} ranges: under two slabs of {cfg.bk} a range")
    return cfg, splits


def gemm_launch_with(rung):
    """Launch math with tunables (``lab tune``): the tile and the split-K factor of
    :func:`tuned_gemm_config`; Launch.params carries them to the prepare."""
    def launch_with(size, threads, params):
        cfg, splits = tuned_gemm_config(rung, size, params)
        kchunk, splits = k_ranges(size[2], splits, cfg.bk)
        note = cfg.describe() + (f"; {splits} K ranges of {kchunk}, then a reduction launch" if splits > 1 else "")
        if threads != cfg.threads:
            note += f"; block fixed at {cfg.threads} threads, --threads {threads} ignored"
        chosen = {"tile": params.get("tile"), "splits": splits if splits > 1 else None}
        launch = gemm_launch_config(cfg, size, splits, note)
        return dataclasses.replace(launch, params=tuple(sorted((k, v) for k, v in chosen.items() if v is not None)))
    return launch_with


def _gemm_prepare(rung, size, inputs, outputs, params=None):
    A, B = inputs
    if params:
        cfg, splits = tuned_gemm_config(rung, size, params, A.dtype)
        return gemm_prepare_config(cfg, inputs, outputs, splits)
    return gemm_prepare_config(gemm_config(rung, size, A.dtype), inputs, outputs)


def _size_of(inputs):
    A, B = inputs
    return A.shape[0], B.shape[1], A.shape[1]


def warp_tiled_prepare(cfg, inputs, outputs):
    """Rung 7: warp tiles (:data:`WARP_TILED`: a 128 x 128 block tile of 4 warps, each warp 64 x 64,
    8 x 16 sums a thread; float64: :data:`WARP_TILED_F64`). Saves over register_tiled: shared-memory
    load instructions per FMA, 1/16 -> 1/21 (6 LDS.128 feed 128 FMAs; the sub-tile layout keeps each
    fragment load one wavefront per quarter warp); half the threads a block, so a barrier stalls 4
    warps instead of 8. Costs: 128 sums need ~247 registers (offline compile for sm_90, numba-cuda
    LTO-IR + nvJitLink: 247 registers, 0 spills, 33 KB shared), so 2 blocks (8 warps) an SM against
    register_tiled's 16 warps: each warp must hide more latency with its own 128 independent FMAs.
    PTX per group of 8 k: 1024 FMAs, 46 ld.shared.v4 and 4 scalar ld.shared (NVVM splits the first
    k's first 16 bytes of A and of B; register_tiled: none split).
    Predicted on the H100 at 4096^3: 38-46 TFLOP/s (register_tiled 40, cuBLAS 51: the same
    per-thread shape as cuBLAS's FFMA kernel). Measured on the H100 (docs/benchmarks.md, matmul auto
    against torch.matmul, TF32 off; auto ran this rung's 128 x 128 x 16 tile): 4096^3 3.106 ms,
    44.3 TFLOP/s, 0.85x cuBLAS; with the direct epilogue (tile 128x128x16-direct) 3.131 ms."""
    return _gemm_prepare("warp_tiled", _size_of(inputs), inputs, outputs, cfg.param)


def wide_loads_prepare(cfg, inputs, outputs):
    """Rung 8: warp_tiled whose global loads read two float32 at once, through float64 views of A
    (M x K/2) and B (K x N/2): ``double2loint``/``double2hiint`` split each 8-byte value into its two
    words in registers (no arithmetic). Numba's 4-byte loads were a named limit: a float32 array's
    rows cannot be promised 8- or 16-byte aligned, but a float64 view's elements are. Saves: half
    the global load instructions (16 -> 8 LDG a slab a thread, as many bytes) and half the address
    arithmetic; the B slab's shared stores pair up too (STS.64). Needs even K and N and 8-byte aligned
    matrices (else: warp_tiled's single loads, said in the Launch note); float64: warp_tiled.
    Offline compile for sm_90: 255 registers, 0 spills. Predicted on the H100: 0-5% over warp_tiled at
    4096^3 (global loads are 1/64 of the instructions there), more where loads weigh more (short K:
    3000 x 3000 x 40 runs 3 slabs a tile). Measured on the H100 (docs/benchmarks.md, auto running
    this rung with the launch model's tile, TF32 off): 2048^3 0.417 ms (0.82x cuBLAS), 1024^3 0.075 ms
    (128 x 64 tiles, 0.83x), 777 x 1333 x 901 0.075 ms (32 x 64 tiles, 0.80x)."""
    return _gemm_prepare("wide_loads", _size_of(inputs), inputs, outputs, cfg.param)


def small_prepare(cfg, inputs, outputs):
    """Rung 9: small matrices (under 2^27 FLOPs: 300^3 is 0.4 x 2^27). One launch, one block per
    output tile, each block running the whole K itself (no split-K workspace, no reduction launch),
    and the tile is the largest of :data:`SMALL_CONFIGS` (64 x 64, 32 x 64, 32 x 32) that gives every
    SM a block: at 300^3 a 128 x 128 tile gives 9 blocks for 132 SMs, 64 x 64 gives 25, 32 x 32 gives
    100. Saves over register_tiled / tile64 there: idle SMs (the work is spread over 4-11x the
    blocks); costs: reuse (an element loaded feeds 32-64 FMAs, not 128), which small shapes can
    afford as their operands sit in L2. Pairs as wide_loads. Offline compile for sm_90: 119-127
    registers, 0 spills, 13-17 KB shared. Predicted on the H100: 300^3 and 512^3 from 0.50x and
    0.65x of cuBLAS to ~0.7-0.9x (launch latency, ~3-5 us, is most of a 300^3 call). Measured on the
    H100 (docs/benchmarks.md, auto running this rung, TF32 off): 300^3 0.0139 ms (0.90x cuBLAS),
    3000 x 3000 x 40 0.047 ms (64 x 64 tiles, 0.70x)."""
    return _gemm_prepare("small", _size_of(inputs), inputs, outputs)
