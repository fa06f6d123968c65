"""Split-K (matmul rung 5 and every rung that splits K): K ranges over grid z, then one reduction launch.

Source: CUTLASS, "Efficient GEMM in CUDA" (parallel and serial split-K reduction); the reduction
launch's grid is one wave of blocks on the current device (kernels.device_limits).
"""
from __future__ import annotations

from kernels.arrays import empty_like
from kernels.compiler import cuda

from kernels.device_limits import current
from kernels.gemm.tile import T_BK, T_BM, T_BN, _tile, _tile_kernel, _tile_launch, _tile_params, tile64_prepare
from kernels.spec import Launch, blocks_for, sm_count
from kernels.warp import WARP


# --- Rung 5: split-K ------------------------------------------------------------------------------
# When M and N are small but K is long (64 x 64 x 65536: one tile), no tiling fills the GPU: split-K
# gives each block a range of K (grid z), writes its partial C tile to a workspace (splits x M x N),
# and a second launch adds them. Every rung that splits K (split_k, skinny_m, warp_tiled and
# wide_loads when tuned, auto) uses the enqueue and the reduction launch below.
#
# The reduction launch. One thread an element, looping over the splits, measured on the H100 (ncu,
#): 23.5 us for 64 x 64 x 65536 (64 partials of 4096 words: 16 blocks, each thread 64
# loads one after another, each waiting ~0.5 us for DRAM/L2) and 24.6 us at 128 x 128 x 32768, a third
# of the call, for 1-4 MB read. So the splits are spread too: a chunk is 32 consecutive elements (a
# warp's coalesced 128 bytes), warp g of a block's G = min(8, splits) warps adds splits g, g + G, ...
# (four loads in flight), and warp 0 adds the G group sums, always in the same order (the result is
# the same bits every call). Blocks loop over chunks (one wave of blocks: a block per 32 elements
# made 32768 tiny blocks at 2^20 elements, and block launches, not bytes, set the time).
RED_GROUPS = 8  # most warps a reduction block: the splits are dealt out among them


def reduce_launch(splits: int, elements: int) -> tuple[int, tuple[int, int]]:
    """(grid, block) of :func:`split_k_reduce_kernel` for ``splits`` partials of ``elements`` words:
    block (32, G) with G = min(8, splits) warps, grid min(chunks of 32, one wave of such blocks on
    the current device: its resident threads an SM x its SMs, kernels.device_limits)."""
    g = max(1, min(RED_GROUPS, splits))
    dev = current()
    return min(blocks_for(elements, WARP), dev.max_threads_per_sm // (WARP * g) * dev.sm_count), (WARP, g)


@cuda.jit
def split_k_reduce_kernel(W, C):
    """C[i] = sum_z W[z, i], for W (splits, E) and C (E,), one float dtype (the (splits, M, N)
    workspace and C flattened). Launch: :func:`reduce_launch`, block (32, G). Lane l of warp g
    (threadIdx (l, g)) adds, for element i = chunk * 32 + l, splits z = g, g + G, ... (four loads in
    flight); after a barrier warp 0 adds the G group sums in order g = 0 .. G - 1 and stores C[i].
    Blocks take chunks blockIdx.x, blockIdx.x + gridDim.x, ..."""
    part = cuda.shared.array((RED_GROUPS, WARP), W.dtype)
    lane = cuda.threadIdx.x
    g = cuda.threadIdx.y
    G = cuda.blockDim.y
    S = W.shape[0]
    E = C.shape[0]
    zero = W.dtype.type(0)
    for chunk in range(cuda.blockIdx.x, (E + WARP - 1) // WARP, cuda.gridDim.x):
        i = min(chunk * WARP + lane, E - 1)  # past the end: a copy of the last (not stored)
        a0 = zero
        a1 = zero
        a2 = zero
        a3 = zero
        z = g
        while z + 3 * G < S:
            a0 += W[z, i]
            a1 += W[z + G, i]
            a2 += W[z + 2 * G, i]
            a3 += W[z + 3 * G, i]
            z += 4 * G
        while z < S:
            a0 += W[z, i]
            z += G
        part[g, lane] = (a0 + a1) + (a2 + a3)
        cuda.syncthreads()
        if g == 0 and chunk * WARP + lane < E:
            total = part[0, lane]
            for h in range(1, G):
                total += part[h, lane]
            C[i] = total
        cuda.syncthreads()  # part is written again by the next chunk


# Split-K tuning, measured on the H100 (blocks an SM aimed for, shortest K range -> ms):
# 64 x 64 x 65536: (2, 256) 0.077, (4, 512) 0.062, (8, 512) 0.061; 32 x 4096 x 4096: (2, 256) 0.132,
# (4, 256) 0.121, (4, 512) 0.114; 128 x 128 x 32768: 0.071 for all but (4, 256) 0.082;
# 512^3: (2, 256) 0.027, (2, 128) 0.026, any 512: no split, 0.036. Long K wants longer ranges.
SPLIT_MIN_K = 256  # shortest K range a split-K block gets when K < SPLIT_LONG_K
SPLIT_LONG_K = 4096  # from this K on, ranges of at least 2 * SPLIT_MIN_K
SPLIT_BLOCKS_PER_SM = 4  # split-K aims for tiles x splits >= this many blocks an SM


def split_k_enqueue(part, A, B, C, splits: int, kchunk: int):
    """The enqueue function of a K-split product: the configured launch ``part(A, B, W, kchunk)``
    writes ``splits`` partial C's into a workspace W (splits, M, N), then split_k_reduce_kernel adds
    them into C; with one range W is C itself, viewed as (1, M, N), and there is no second launch."""
    m, n = C.shape
    if splits == 1:
        W1 = C.reshape(1, m, n)
        return lambda: part(A, B, W1, kchunk)
    W = empty_like(C, (splits, m, n), C.dtype)  # by C's library
    W2, C1 = W.reshape(splits, m * n), C.reshape(m * n)
    grid, block = reduce_launch(splits, m * n)
    reduce = split_k_reduce_kernel[grid, block]

    def enqueue():
        part(A, B, W, kchunk)
        reduce(W2, C1)
    return enqueue


def k_ranges(k: int, splits: int, bk: int) -> tuple[int, int]:
    """(kchunk, splits): K cut into at most ``splits`` ranges of a whole number of bk-slabs each
    (the last may be shorter); fewer ranges where rounding to slabs leaves some empty."""
    kchunk = blocks_for(blocks_for(k, splits), bk) * bk
    return kchunk, (blocks_for(k, kchunk) if k else 1)


def split_k_plan(size, splits_wanted=None, bm=T_BM, bn=T_BN):
    """(kchunk, splits) for split-K: enough K ranges that the 64 x 64 tiles times the splits give
    about SPLIT_BLOCKS_PER_SM blocks an SM, but no range shorter than SPLIT_MIN_K k (twice that
    from K = SPLIT_LONG_K on: fewer partials to add); kchunk a multiple of 16."""
    m, n, k = size
    tiles = blocks_for(m, bm) * blocks_for(n, bn)
    if splits_wanted:  # asked for (lab tune): as many as K allows in slabs of T_BK
        splits = max(1, min(splits_wanted, blocks_for(k, T_BK)))
    else:
        want = max(1, blocks_for(SPLIT_BLOCKS_PER_SM * sm_count(), tiles))
        min_k = 2 * SPLIT_MIN_K if k >= SPLIT_LONG_K else SPLIT_MIN_K
        splits = max(1, min(want, k // min_k))
    return k_ranges(k, splits, T_BK)


def split_k_launch(size, threads, params=None):
    """grid (ceil(N / 64), ceil(M / 64), splits) of 256 threads, then the reduction launch.
    Tunable (``lab tune``): ``splits``, the K ranges asked for (0: :func:`split_k_plan`'s choice),
    and the tile ``bm`` x ``bn`` as tile64's."""
    want = (params or {}).get("splits", 0)
    if not isinstance(want, int) or want < 0:
        raise ValueError(f"splits={want!r}: a count of K ranges (0: the plan's)")
    bm, bn = _tile(params)
    kchunk, splits = split_k_plan(size, want or None, bm, bn)
    cfg = _tile_launch(size, splits, bm, bn)
    t = cfg.block[0]
    note = (f"{splits} K ranges of {kchunk}, then a reduction launch over {splits} partial C's" if splits > 1
            else "1 K range (too few k to split): tile64 alone, no reduction launch")
    if threads != t:
        note += f"; block fixed at {t} threads, --threads {threads} ignored"
    tuned = want or (bm, bn) != (T_BM, T_BN)  # what it gets, not what was asked; prepare reads it
    return Launch(cfg.grid, cfg.block, cfg.threads_needed, note=note,
                  params=_tile_params(bm, bn, kchunk=kchunk, splits=splits) if tuned else ())


def split_k_prepare(cfg, inputs, outputs):
    """Rung 5: tile64 over K ranges, then a reduction. Saves: idle SMs when M x N has few tiles and
    K is long (64 x 64 x 65536: 1 block -> 256). Costs: the workspace (splits x M x N, written once
    and read once) and a second launch. Predicted on the H100: 64 x 64 x 65536 from ~1% of cuBLAS
    (one block) to its order (cuBLAS splits K too); 32 x 4096 x 4096 from 64 to 256 blocks.
    Measured on the H100: 64 x 64 x 65536 0.077 ms (tile64 3.87 ms, cuBLAS 0.033: 0.43x);
    128 x 128 x 32768 0.071 ms (0.58x); 512^3 0.027 ms (tile64 0.037, cuBLAS 0.017); 32 x 4096 x 4096
    0.132 ms (tile64 0.271, cuBLAS 0.044). Prediction missed by 2-3x: each block's K range is only
    256 k (16 slabs, each a barrier and a 64 x 64 x 16 step), the partials (splits x M x N: 4 MB
    at 64 x 64 x 65536) cross memory twice, and the global loads are 4-byte scalars."""
    A, B = inputs
    (C,) = outputs
    m, n = C.shape
    kchunk, splits = split_k_plan((m, n, A.shape[1]))
    if "kchunk" in cfg.param:  # a tuned split: the launch math's plan
        kchunk, splits = cfg.param["kchunk"], cfg.param["splits"]
    if splits == 1:
        return tile64_prepare(cfg, inputs, outputs)
    return split_k_enqueue(_tile_kernel(cfg, C.dtype)[cfg.grid, cfg.block], A, B, C, splits, kchunk)
