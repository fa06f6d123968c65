"""Softmax rungs for row shapes one block a row serves badly: short rows (group_rows, a row per
group of lanes) and a few very long rows (split_row, several blocks a row).

Source: M. Milakov and N. Gimelshein, "Online normalizer calculation for softmax", arXiv:1805.02867
(2018) (the (max, sum) pairs merged across lanes and blocks); CUDA C++ Programming Guide, "Warp
Shuffle Functions". The lesson, rungs 1-3 (naive, fused, online) and what they measured, is
kernels/softmax.py; its KernelSpec lists these rungs too.
"""
from __future__ import annotations

import math

from kernels.arrays import empty_like
from kernels.compiler import cuda, float64, uint64

from kernels.spec import Launch, blocks_for, plural, split_columns
from kernels.warp import (MAX_WARPS, SCRATCH, WARP, block_merge, group_max, group_sum, lanes_for, rescale,
                          warp_max, warp_sum)

UNROLL = 4  # loads each thread keeps in flight per trip in the long-row loops (as kernels/softmax.py)
# The register path's limits, by item size: at most GROUP_RESIDENT_MAX values a lane and
# GROUP_RESIDENT_BLOCK values a block, as the fused rung's RESIDENT_MAX and RESIDENT_BLOCK
# (kernels/softmax.py: the values a thread holds set its registers, ptxas's counts for sm_90:
# float32 K = 32 values a lane take 100 registers under numba-cuda, 72 under numba-cuda-mlir 0.6, ptxas
# 13.0; a block must get registers x threads <= the SM's 65,536).
# (The fused rung's float32 block limit is 32,768 values; here it stays 16,384: K = 32 values a lane at
# 1,024 threads would need up to 100 x 1,024 registers.)
GROUP_RESIDENT_MAX = {4: 32, 8: 16}
GROUP_RESIDENT_BLOCK = {4: 16384, 8: 4096}


# --- Rung 4: a row per warp (or per part of a warp), several rows a block --------------------------
# Rungs 2-3 give every row a block. A row of 32-128 columns then keeps 1-4 warps of a 128-thread block
# busy for a handful of loads, and each row pays a block reduction with its barrier. Here a group of
# G lanes (G = 1..32, a power of two) owns a row: the row's K = ceil(COLS / G) values sit in each
# lane's registers, the max and the sum are log2(G) shuffles inside the group (kernels/warp.py
# group_max, group_sum), no shared memory and no barrier; a block holds threads / G rows.
# G is the smallest power of two that gives each lane at most 4 values (COLS = 32: G = 8, so a warp
# does 4 rows and each of its loads covers 4 rows x 32 bytes, every sector fully used).
# Rows longer than a warp holds in registers (K > GROUP_RESIDENT_MAX) take a warp-per-row online pass:
# 2 reads + 1 write of the row.
GROUP_VALUES = 4  # values a lane aims to hold for short rows


def group_width(cols):
    """Lanes per row: the smallest power of two G <= 32 with ceil(COLS / G) <= GROUP_VALUES."""
    return lanes_for(cols, GROUP_VALUES)


_GROUP_ROWS = {}


def group_rows_kernel(per_lane, width):
    """The row-per-group kernel for rows of at most ``per_lane * width`` columns (compiled per
    (K, G)). Thread t of block b: group (t // G), lane l = t % G; row r = b * (threads / G) + t // G;
    it holds x[r, l + k G] for k < K (coalesced: a group reads G consecutive values a step).
    Lanes of rows past the end hold -inf and write nothing (they still take part in the shuffles)."""
    key = (per_lane, width)
    if key in _GROUP_ROWS:
        return _GROUP_ROWS[key]
    K, G = per_lane, width

    @cuda.jit
    def group_rows(x, out):
        vals = cuda.local.array(K, x.dtype)
        scratch = cuda.shared.array(SCRATCH, float64)  # used only by the simulator's group reductions
        t = uint64(cuda.threadIdx.x)
        lane = t % uint64(G)
        row = uint64(cuda.blockIdx.x) * (uint64(cuda.blockDim.x) // uint64(G)) + t // uint64(G)
        cols = uint64(x.shape[1])
        live = row < uint64(x.shape[0])
        ninf = x.dtype.type(-math.inf)
        for k in range(K):  # K independent loads, then the compares
            j = lane + uint64(k * G)
            vals[k] = x[row, j] if live and j < cols else ninf
        m = vals[0]
        for k in range(1, K):
            m = max(m, vals[k])
        m = group_max(m, scratch, G)
        s = x.dtype.type(0)
        if m == ninf:  # a group past the last row, or a row of only -inf: exp(-inf - -inf) is NaN, and
            # in the simulator the subtraction also warns; NaN without computing it (nothing is
            # written for dead rows, and an all -inf row's softmax is NaN, as torch's)
            for k in range(K):
                vals[k] = x.dtype.type(math.nan)
            s = x.dtype.type(math.nan)
        else:  # live rows: unchanged arithmetic
            for k in range(K):
                vals[k] = math.exp(vals[k] - m)  # -inf entries and padding become 0
                s += vals[k]
        inv = x.dtype.type(1) / group_sum(s, scratch, G)
        for k in range(K):
            j = lane + uint64(k * G)
            if live and j < cols:
                out[row, j] = vals[k] * inv

    _GROUP_ROWS[key] = group_rows
    return group_rows


@cuda.jit
def warp_row_streaming_kernel(x, out):
    """One warp a row for rows too long for a warp's registers: each lane keeps an online (m, d)
    over j = lane, lane + 32, ... (UNROLL loads in flight), the warp merges them with shuffles, then
    a second read writes exp(x - M) / D. 2 reads + 1 write; no shared memory, no barrier."""
    scratch = cuda.shared.array(SCRATCH, float64)
    v = cuda.local.array(UNROLL, x.dtype)
    t = uint64(cuda.threadIdx.x)
    lane = t % uint64(WARP)
    row = uint64(cuda.blockIdx.x) * (uint64(cuda.blockDim.x) // uint64(WARP)) + t // uint64(WARP)
    live = row < uint64(x.shape[0])
    cols = uint64(x.shape[1]) if live else uint64(0)
    W = uint64(WARP)
    step = W * uint64(UNROLL)
    ninf = x.dtype.type(-math.inf)
    one = x.dtype.type(1)
    m = ninf
    d = x.dtype.type(0)
    for j in range(lane, cols, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * W
            v[u] = x[row, jj] if jj < cols else ninf
        for u in range(UNROLL):
            if v[u] > m:
                d = rescale(d, m, v[u]) + one
                m = v[u]
            elif d > 0:
                d += math.exp(v[u] - m)
    big_m = warp_max(m, scratch)
    big_d = warp_sum(rescale(d, m, big_m), scratch)
    inv = one / big_d
    for j in range(lane, cols, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * W
            v[u] = x[row, jj] if jj < cols else ninf
        for u in range(UNROLL):
            jj = j + uint64(u) * W
            if jj < cols:
                out[row, jj] = math.exp(v[u] - big_m) * inv


def _group_plan(cols, itemsize, threads):
    """(K, G) of the register path, or None for the warp streaming path: the fused rung's register
    limits, at most GROUP_RESIDENT_MAX values a lane and GROUP_RESIDENT_BLOCK a block (K = 32 float32 values a
    lane take up to 100 registers: 1024 threads would need 102,400 of the SM's 65,536 and fail to launch)."""
    g = group_width(cols)
    k = blocks_for(cols, g)
    return (k, g) if k <= GROUP_RESIDENT_MAX[itemsize] and k * threads <= GROUP_RESIDENT_BLOCK[itemsize] else None


def group_rows_launch(size, threads):
    """threads / G rows a block (G lanes a row, group_width), grid = ceil(ROWS / rows a block)."""
    rows, cols = size
    g = group_width(cols)
    per_block = max(1, threads // g)
    plan32, plan64 = _group_plan(cols, 4, threads), _group_plan(cols, 8, threads)

    def path(plan):
        return f"{plural(plan[0], 'value')} a lane in registers" if plan else "warp streaming (2 reads + 1 write)"

    note = path(plan32) if plan32 == plan64 else f"float32: {path(plan32)}; float64: {path(plan64)}"
    return Launch(grid=(blocks_for(rows, per_block),), block=(threads,), threads_needed=rows * g,
                  note=f"{plural(g, 'lane')} a row, {plural(per_block, 'row')} a block; {note}")


def group_rows_prepare(cfg, inputs, outputs):
    """Rung 4. Saves over fused at short rows: the block reduction and its barrier (now log2(G)
    shuffles), and the idle threads of a block per row. Predicted on the H100: 100,000 x 32 to
    1,000,000 x 128 float32 at 70-90% of copy bandwidth (fused: 2-24% of torch), about torch's speed.
    Measured on the H100 (float32, 128 threads): 100,000 x 32 0.0106 ms (fused 0.143, torch.softmax
    0.0173); 1,000,000 x 64 0.168 ms (fused 1.44, torch 0.196; 3.05 TB/s); 262,144 x 128 0.087 ms
    (fused 0.395, torch 0.094); 65,536 x 1024 0.178 ms (fused 0.187, torch 0.190). At 8192 columns
    (warp streaming, 2 reads) 0.282 ms against fused's 0.178: auto keeps long rows on fused.
    """
    (x,), (out,) = inputs, outputs
    plan = _group_plan(x.shape[1], x.dtype.itemsize, cfg.block[0])
    kernel = group_rows_kernel(*plan) if plan else warp_row_streaming_kernel
    launch = kernel[cfg.grid, cfg.block]
    return lambda: launch(x, out)


# --- Rung 5: split rows, for a few very long rows ----------------------------------------------------
# With 1-4 rows of 10^6 columns, one block a row runs on 1-4 SMs of 132. Split each row into chunks,
# one block a chunk (spec.split_columns: about 4 blocks an SM): launch 1 gives each chunk its online
# (max, sum) pair; launch 2 has every block merge its row's pairs itself (a few hundred, from L2: no
# third launch) and write its chunk exp(x - M) / D. 2 reads + 1 write, but the second read of a few
# rows (16 MB at 4 x 10^6 float32) mostly hits the 50 MB L2.
@cuda.jit
def split_stats_kernel(x, stats, chunk):
    """stats[r, s] = (m, d), the online pair of chunk s of row r; block (r, s) = (blockIdx.x,
    blockIdx.y), thread t taking c0 + t, c0 + t + T, ... (UNROLL loads in flight), block_merge."""
    part_m = cuda.shared.array(MAX_WARPS, x.dtype)
    part_d = cuda.shared.array(MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    v = cuda.local.array(UNROLL, x.dtype)
    row, t, T = uint64(cuda.blockIdx.x), uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    c0 = uint64(cuda.blockIdx.y) * uint64(chunk)
    c1 = min(c0 + uint64(chunk), uint64(x.shape[1]))
    step = T * uint64(UNROLL)
    ninf = x.dtype.type(-math.inf)
    one = x.dtype.type(1)
    m = ninf
    d = x.dtype.type(0)
    for j in range(c0 + t, c1, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < c1 else ninf
        for u in range(UNROLL):
            if v[u] > m:
                d = rescale(d, m, v[u]) + one
                m = v[u]
            elif d > 0:
                d += math.exp(v[u] - m)
    big_m, big_d = block_merge(m, d, part_m, part_d, scratch)
    if t == 0:
        stats[row, cuda.blockIdx.y, 0] = big_m
        stats[row, cuda.blockIdx.y, 1] = big_d


@cuda.jit(device=True)
def merge_chunk_stats(stats, row, t, T, part_m, part_d, scratch):
    """Row ``row``'s (M, D) from its chunks' (max, sum) pairs ``stats[row, s]`` (launch 1's), returned to
    every thread of the block: thread t folds pairs t, t + T, ... with the pairwise rule (``rescale``),
    then :func:`kernels.warp.block_merge` (one barrier). Shared by the split and split-tail write kernels."""
    m = stats.dtype.type(-math.inf)
    d = stats.dtype.type(0)
    for s in range(t, uint64(stats.shape[1]), T):
        ms = stats[row, s, 0]
        new_m = max(m, ms)
        d = rescale(d, m, new_m) + rescale(stats[row, s, 1], ms, new_m)
        m = new_m
    return block_merge(m, d, part_m, part_d, scratch)


@cuda.jit
def split_write_kernel(x, stats, out, chunk):
    """Block (r, s) merges row r's chunk pairs (thread t folds pairs t, t + T, ..., then
    block_merge) into the row's (M, D) and writes out[r, chunk s] = exp(x - M) / D."""
    part_m = cuda.shared.array(MAX_WARPS, x.dtype)
    part_d = cuda.shared.array(MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    v = cuda.local.array(UNROLL, x.dtype)
    row, t, T = uint64(cuda.blockIdx.x), uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    ninf = x.dtype.type(-math.inf)
    big_m, big_d = merge_chunk_stats(stats, row, t, T, part_m, part_d, scratch)
    inv = x.dtype.type(1) / big_d
    c0 = uint64(cuda.blockIdx.y) * uint64(chunk)
    c1 = min(c0 + uint64(chunk), uint64(x.shape[1]))
    step = T * uint64(UNROLL)
    for j in range(c0 + t, c1, step):
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < c1 else ninf
        for u in range(UNROLL):
            jj = j + uint64(u) * T
            if jj < c1:
                out[row, jj] = math.exp(v[u] - big_m) * inv


def split_row_launch(size, threads):
    """Both launches: grid (ROWS, splits), block (threads,)."""
    rows, cols = size
    chunk, splits = split_columns(rows, cols, threads, UNROLL)
    return Launch(grid=(rows, splits), block=(threads,), threads_needed=rows * min(cols, splits * threads),
                  note=f"{plural(splits, 'block')} a row of {plural(chunk, 'column')} each; 2 launches")


def split_row_prepare(cfg, inputs, outputs):
    """Rung 5. Saves: idle SMs at a few long rows (1 x 10^6: 1 block -> ~528). Costs: a second
    launch and a second read of x (from L2 when it fits). Predicted on the H100 at 4 x 10^6 float32
    (32 MB, ~11 us at copy speed): ~15-20 us, against ~300 us for one block a row.
    Measured on the H100 (256 threads): 4 x 10^6 0.0279 ms (fused 0.929, torch.softmax 0.467);
    1 x 1,048,576 0.0152 ms (fused 0.899, torch 0.299); 32 x 65,536 0.0204 ms (fused 0.062, torch
    0.036)."""
    (x,), (out,) = inputs, outputs
    chunk, splits = split_columns(x.shape[0], x.shape[1], cfg.block[0], UNROLL)
    stats = empty_like(x, (x.shape[0], splits, 2), x.dtype)
    first = split_stats_kernel[cfg.grid, cfg.block]
    second = split_write_kernel[cfg.grid, cfg.block]

    def enqueue():
        first(x, stats, chunk)
        second(x, stats, out, chunk)
    return enqueue


# --- Rung 6: split rows, the second launch tail-first, for long rows past the registers -------------
# Rows too long for a block's registers (more than 32,768 float32 columns; it was 16,384 when this rung
# was written) and few enough that one block a row leaves thread slots empty: 200 x 50,000 float32 is
# 200 blocks of one-block-a-row, 1.5 blocks an SM, and the fused rung reads each row three times (once
# from DRAM, twice from L2), the online rung twice.
# split_tail cuts every row into chunks, enough blocks of 256 threads to fill every SM's 2,048 thread
# slots (spec.split_columns at SPLIT_BLOCKS_PER_SM), and keeps SPLIT_UNROLL = 8 loads in flight a
# thread, twice rung 5's: 2,048 threads x 8 x 4 bytes = 64 KB in flight an SM, over the ~25 KB that
# Little's law asks of an H200 SM (4.8 TB/s x ~700 ns / 132 SMs).
# Launch 1: each chunk's online (m, d). The update is done a trip at a time (the max of the trip's 8
# values, one rescale, then 8 exps), not an element at a time: no branch per element.
# Launch 2 runs its blocks in the REVERSE order of launch 1 (block b takes launch 1's block N - 1 - b):
# blocks start in index order, so the chunks launch 1 read last, still in L2, are re-read first
# (quantize's l2_tail_first does the same). A matrix that fits in L2 (50 MB on an H100 or H200) is
# read from DRAM about once: 1 read + 1 write of DRAM traffic and one extra read from L2.
#
# What it measured (H200, numba-cuda-mlir 0.6, float32, docs/results/softmax-long-rows.json), torch
# ms / split_tail ms: 64 x 100,000 1.36x (split_row 1.23x), 200 x 50,000 0.86x (online 0.55x), 32 x
# 65,536 1.52x, 2000 x 20,000 0.76x (fused streaming 0.55x). It is the fastest rung that re-reads the
# row, but at a few hundred rows of 20,000-30,000 columns it stayed below torch (500 x 20,000 0.69x,
# 300 x 30,000 0.79x: 60 us for 80 MB of traffic, 1.3 TB/s, far from the 4.3 TB/s copy): the re-read
# and the second launch cost more than the idle slots they fill. What won there is not re-reading at
# all: the fused rung now holds rows of up to 32,768 columns in registers (K <= 32 values a thread at
# 1,024 threads, 56 registers, one block an SM; kernels/softmax.py RESIDENT_BLOCK): 500 x 20,000
# 0.0307 ms (1.38x torch), 300 x 30,000 0.0302 ms (1.41x). auto takes split_tail only past 32,768
# columns (with ROWS >= SMs; fewer rows stay with split_row).
SPLIT_UNROLL = 8  # loads each thread keeps in flight per trip in split_tail
SPLIT_BLOCKS_PER_SM = 8  # split_tail's blocks an SM to aim for (2,048 threads at 256 a block)


@cuda.jit
def split_tail_stats_kernel(x, stats, chunk):
    """stats[r, s] = (m, d) of chunk s of row r, the columns s * chunk .. (s + 1) * chunk - 1: block
    (r, s) = (blockIdx.x, blockIdx.y); thread t reads c0 + t + u T for u < SPLIT_UNROLL each trip."""
    part_m = cuda.shared.array(MAX_WARPS, x.dtype)
    part_d = cuda.shared.array(MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    v = cuda.local.array(SPLIT_UNROLL, x.dtype)
    row, t, T = uint64(cuda.blockIdx.x), uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    c0 = uint64(cuda.blockIdx.y) * uint64(chunk)
    c1 = min(c0 + uint64(chunk), uint64(x.shape[1]))
    step = T * uint64(SPLIT_UNROLL)
    ninf = x.dtype.type(-math.inf)
    m = ninf
    d = x.dtype.type(0)
    for j in range(c0 + t, c1, step):
        for u in range(SPLIT_UNROLL):  # the trip's loads, all issued before any is used
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < c1 else ninf
        top = v[0]
        for u in range(1, SPLIT_UNROLL):
            top = max(top, v[u])
        if top > m:  # a new max: re-express the sum so far (rescale: 0 stays 0, no exp(-inf + inf))
            d = rescale(d, m, top)
            m = top
        if m != ninf:  # m = -inf: everything so far was -inf and adds 0
            for u in range(SPLIT_UNROLL):
                d += math.exp(v[u] - m)
    big_m, big_d = block_merge(m, d, part_m, part_d, scratch)
    if t == 0:
        stats[row, cuda.blockIdx.y, 0] = big_m
        stats[row, cuda.blockIdx.y, 1] = big_d


@cuda.jit
def split_tail_write_kernel(x, stats, out, chunk):
    """Block b of launch 2 takes launch 1's block N - 1 - b: (r, s) = (ROWS - 1 - blockIdx.x,
    splits - 1 - blockIdx.y). It merges row r's chunk pairs (thread t folds pairs t, t + T, ...,
    then block_merge) into (M, D) and writes out[r, chunk s] = exp(x - M) * (1 / D)."""
    part_m = cuda.shared.array(MAX_WARPS, x.dtype)
    part_d = cuda.shared.array(MAX_WARPS, x.dtype)
    scratch = cuda.shared.array(SCRATCH, float64)
    v = cuda.local.array(SPLIT_UNROLL, x.dtype)
    row = uint64(x.shape[0] - 1) - uint64(cuda.blockIdx.x)
    split = uint64(stats.shape[1] - 1) - uint64(cuda.blockIdx.y)
    t, T = uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    ninf = x.dtype.type(-math.inf)
    big_m, big_d = merge_chunk_stats(stats, row, t, T, part_m, part_d, scratch)
    inv = x.dtype.type(1) / big_d
    c0 = split * uint64(chunk)
    c1 = min(c0 + uint64(chunk), uint64(x.shape[1]))
    step = T * uint64(SPLIT_UNROLL)
    for j in range(c0 + t, c1, step):
        for u in range(SPLIT_UNROLL):
            jj = j + uint64(u) * T
            v[u] = x[row, jj] if jj < c1 else ninf
        for u in range(SPLIT_UNROLL):
            jj = j + uint64(u) * T
            if jj < c1:
                out[row, jj] = math.exp(v[u] - big_m) * inv


def split_tail_plan(rows, cols, threads):
    """(chunk, splits): enough chunks for SPLIT_BLOCKS_PER_SM blocks on every SM over all rows, no
    chunk shorter than one trip (threads * SPLIT_UNROLL columns), chunks whole multiples of 32."""
    return split_columns(rows, cols, threads, SPLIT_UNROLL, SPLIT_BLOCKS_PER_SM)


def split_tail_launch(size, threads):
    """Both launches: grid (ROWS, splits), block (threads,); the second runs its blocks backwards."""
    rows, cols = size
    chunk, splits = split_tail_plan(rows, cols, threads)
    return Launch(grid=(rows, splits), block=(threads,), threads_needed=rows * min(cols, splits * threads),
                  note=f"{plural(splits, 'block')} a row of {plural(chunk, 'column')} each; 2 launches, "
                       f"the second tail-first")


def split_tail_prepare(cfg, inputs, outputs):
    """Rung 6. Saves over fused's streaming path: one of the three reads of each row, the idle thread
    slots of too few blocks, and the barriers' stalls (each block is short). Costs a second launch
    and a re-read that comes from L2 only as far as the matrix fits there.
    Predicted on the H200 at 500 x 20,000 float32 (40 MB; 18.7 us at the copy speed for 1 read + 1
    write): 22-26 us, against ~34 us for fused streaming. Measured: 61 us (fused streaming at 256
    threads 62 us, online 56 us, torch.softmax 42 us); prediction missed, the rows now stay in
    registers there (the comment above). 200 x 50,000: 0.0588 ms (torch 0.0505, 0.86x)."""
    (x,), (out,) = inputs, outputs
    chunk, splits = split_tail_plan(x.shape[0], x.shape[1], cfg.block[0])
    stats = empty_like(x, (x.shape[0], splits, 2), x.dtype)
    first = split_tail_stats_kernel[cfg.grid, cfg.block]
    second = split_tail_write_kernel[cfg.grid, cfg.block]

    def enqueue():
        first(x, stats, chunk)
        second(x, stats, out, chunk)
    return enqueue
