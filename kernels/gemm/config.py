"""GemmConfig: one compile-time description of a warp-tiled GEMM build, and the rungs' configurations.

Source: S. Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance" (2022), kernels
6-10; the shape of cuBLAS's FP32 kernel on sm_80/sm_90. The kernel itself: kernels/gemm/generator.py.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import re

import numpy as np

from kernels.device_limits import current
from kernels.spec import blocks_for, sm_count
from kernels.warp import WARP


# --- Rungs 7-9: warp tiles, paired global loads, small tiles (one factory, tunable) ---------------
# S. Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance", kernels 6-10
# (vectorized shared loads, autotuned block tiles, bank-conflict-free layouts, warp tiling); the
# shape of cuBLAS's own FP32 kernel on sm_80/sm_90 (its name reads "tilesize128x128x8",
# "warpsize2x2x1", "ffma": 4 warps of 128 threads, 2 x 2 warps, each warp a 64 x 64 sub-tile,
# so 128 accumulators a thread). One compile-time factory, :func:`gemm_kernel`, builds every
# rung below from a :class:`GemmConfig`, so a tuner varies the tile without new code.
#
# The levels of the tiling (float32, the warp_tiled defaults):
#   block tile  BM x BN = 128 x 128, K in slabs of BK = 16 staged in shared memory;
#   warp tile   WM x WN = 64 x 64: the block's 4 warps as 2 x 2, each warp one quarter of C's tile;
#   warp sub-tiles: the warp tile as WMITER x WNITER = 1 x 4 sub-tiles of WSUBM x WSUBN = 64 x 16;
#   thread tile TM x TN = 8 x 4 in each sub-tile (the warp's 32 lanes as 8 rows x 4 columns),
#               so a thread holds (WMITER * TM) x (WNITER * TN) = 8 x 16 = 128 sums in registers.
#
# What the levels save, per k of a slab and per thread (register_tiled: 8 x 8 a thread, 4 LDS.128
# for 64 FMAs): 8 A words (2 LDS.128) and 16 B words (4 LDS.128) feed 128 FMAs, 21 FMAs per
# shared load instruction instead of 16, and 24 words per 128 FMAs (0.19 a FMA, register_tiled
# 0.25). Inside a warp the 32 lanes read only 8 distinct A addresses and 4 distinct B
# addresses of 16 bytes: the fragments are shared (broadcast) by the lanes of a row or a column,
# so each LDS.128 is one shared-memory wavefront per quarter warp (no bank conflict). Each block
# reuses a loaded element 128 times (BM = BN = 128) like register_tiled, but with 4 warps instead of
# 8 a block, so the barrier at each slab stops fewer warps and 2 blocks an SM keep 8 warps busy
# between one block's barriers.
# Knobs a tuner can turn (GemmConfig fields; TUNABLE lists the values worth trying):
#   bm, bn, bk      block tile and slab depth (shared memory: (1 or 2) x bk x (bm + pad + bn) words,
#                   at most the static shared memory a block may declare: 48 KB);
#   wm, wn, wniter  warp tile and its sub-tiles along N;
#   tm, tn          thread tile in a sub-tile (multiples of 4: LDS.128 fragments);
#   threads         threads a block (32 x warps; warps = (bm / wm) x (bn / wn));
#   pad             words after each row of the transposed A slab (0: 8-way-conflicting transposed
#                   stores; 4: conflict-free stores, rows still 16-byte aligned for LDS.128);
#   prefetch        double buffering: the next slab's global loads go to registers before this
#                   slab's FMAs, and into the second shared buffer after them (1 barrier a slab);
#                   off: one buffer, load, barrier, FMAs, barrier (2 barriers, no latency hidden);
#   pairs           float32 only: read A and B as float64 views (two float32 per 8-byte load),
#                   halving the global load instructions (needs K and N even, 8-byte aligned rows);
#   min_blocks      the launch bound (threads, min_blocks): registers a thread <= registers an SM /
#                   (threads x min_blocks), at most 255.


@dataclass(frozen=True)
class GemmConfig:
    """A compile-time configuration of :func:`gemm_kernel` (field meanings above). ``key`` writes all
    its fields in one string and :meth:`parse` reads it back: the key names the build in caches."""

    bm: int = 128
    bn: int = 128
    bk: int = 16
    wm: int = 64
    wn: int = 64
    wniter: int = 4
    tm: int = 8
    tn: int = 4
    threads: int = 128
    pad: int = 4
    prefetch: bool = True
    pairs: bool = False
    min_blocks: int = 2
    staged: bool = True  # the epilogue through shared memory where it fits (derived()["staged"])

    @property
    def key(self) -> str:
        """All fields, compactly: ``128x128x16_w64x64n4_t8x4_128t_pad4_db_x2_lb2`` (block tile and slab;
        warp tile, sub-tiles along N; thread tile; threads; pad; db/sb: double or single buffer;
        x2/x1: pairs or single loads; launch bound; ``_direct`` when the staged epilogue is off)."""
        return (f"{self.bm}x{self.bn}x{self.bk}_w{self.wm}x{self.wn}n{self.wniter}_t{self.tm}x{self.tn}_"
                f"{self.threads}t_pad{self.pad}_{'db' if self.prefetch else 'sb'}_{'x2' if self.pairs else 'x1'}_"
                f"lb{self.min_blocks}{'' if self.staged else '_direct'}")

    @property
    def label(self) -> str:
        """Short name for tables: ``128x128x16 w64x64/4 t8x4 128t pad4 db x2``."""
        return (f"{self.bm}x{self.bn}x{self.bk} w{self.wm}x{self.wn}/{self.wniter} t{self.tm}x{self.tn} "
                f"{self.threads}t pad{self.pad} {'db' if self.prefetch else 'sb'} {'x2' if self.pairs else 'x1'}"
                + ("" if self.staged else " direct"))

    def describe(self) -> str:
        """For Launch notes: ``128x128 tile (K slabs of 16), 64x64 a warp, 8x16 a thread, 2 buffers,
        8-byte loads``."""
        d = self.derived()
        return (f"{self.bm}x{self.bn} tile (K slabs of {self.bk}), {self.wm}x{self.wn} a warp, {d['rows']}x{d['cols']} "
                f"a thread, {d['bufs']} buffer{'s' if d['bufs'] > 1 else ''}, {4 * d['vec']}-byte loads")

    @classmethod
    def parse(cls, key: str) -> GemmConfig:
        """The config whose :attr:`key` is ``key``; ValueError if it is not one."""
        match = re.fullmatch(r"(\d+)x(\d+)x(\d+)_w(\d+)x(\d+)n(\d+)_t(\d+)x(\d+)_(\d+)t_pad(\d+)_(db|sb)_(x1|x2)_lb(\d+)(_direct)?",
                             key)
        if not match:
            raise ValueError(f"not a GemmConfig key: {key!r} (e.g. {cls().key})")
        g = match.groups()
        return cls(*map(int, g[:10]), prefetch=g[10] == "db", pairs=g[11] == "x2", min_blocks=int(g[12]),
                   staged=g[13] is None)

    def replace(self, **changes) -> GemmConfig:
        return dataclasses.replace(self, **changes)

    def derived(self, itemsize: int = 4, limits=None) -> dict:
        """The sizes the kernel is built from; ValueError naming the broken rule if the tile does not
        fit together (or its shared memory exceeds the static shared memory a block may declare for
        ``itemsize``-byte elements). ``limits``: the device (kernels.device_limits; default current())."""
        limits = limits or current()
        smem_limit = limits.shared_per_block  # static shared memory a block; more needs dynamic shared memory
        def need(ok, why):
            if not ok:
                raise ValueError(f"GemmConfig {self.label}: {why}")
        def pow2(x):
            return x > 0 and x & (x - 1) == 0
        need(pow2(self.threads // WARP) and self.threads >= WARP, "threads must be 32 times a power of 2")
        need(pow2(self.bn // self.wn) and pow2(self.wn // self.wniter // self.tn), "bn / wn and the thread "
             "columns of a sub-tile (wn / wniter / tn) must be powers of 2")
        need(self.bm % self.wm == 0 and self.bn % self.wn == 0, "the warp tile must divide the block tile")
        warps = self.threads // WARP
        need((self.bm // self.wm) * (self.bn // self.wn) == warps,
             f"(bm / wm) x (bn / wn) = {(self.bm // self.wm) * (self.bn // self.wn)} warp tiles for {warps} warps")
        need(self.tm % 4 == 0 and self.tn % 4 == 0, "tm and tn must be multiples of 4 (LDS.128 fragments)")
        need(self.bk % 8 == 0 and self.pad % 4 == 0 and self.bn % 4 == 0, "bk must be a multiple of 8, pad and bn of 4")
        per_warp = WARP * self.tm * self.tn * self.wniter
        need(self.wn % self.wniter == 0 and (self.wm * self.wn) % per_warp == 0,
             "wm x wn must be a whole number of 32 x tm x tn x wniter")
        wmiter = self.wm * self.wn // per_warp
        need(wmiter >= 1 and self.wm % wmiter == 0, "the warp tile has no whole sub-tiles along M")
        wsubm, wsubn = self.wm // wmiter, self.wn // self.wniter
        need(wsubm % self.tm == 0 and wsubn % self.tn == 0, "sub-tiles must be whole thread tiles")
        tcols = wsubn // self.tn
        need(tcols * (wsubm // self.tm) == WARP, "a sub-tile must hold exactly 32 thread tiles")
        vec = 2 if self.pairs else 1
        need(self.bm * self.bk % (self.threads * vec) == 0 and self.bk * self.bn % (self.threads * vec) == 0,
             "each thread must copy a whole number of slab elements")
        need(self.bn % vec == 0 and self.threads % (8 // vec) == 0, "pairs need an even bn")
        bufs = 2 if self.prefetch else 1
        lda = self.bm + self.pad
        a_words, b_words = bufs * self.bk * lda, bufs * self.bk * self.bn
        smem = (a_words + b_words) * itemsize
        need(smem <= smem_limit, f"{smem} bytes of shared memory, over {smem_limit} on {limits.name}")
        # The staged epilogue (see gemm_kernel) writes a warp sub-tile a warp into the A buffer, grown to
        # hold them where it is smaller, unless that passes the shared-memory limit or the registers
        # are short: 64 sums a thread under a 128-register launch bound (64x128x16) ran 0.74-0.88x
        # staged at K = 2048 on the H100 (scripts/gemm_rates.py); other tiles 0.97-1.12x there.
        rows, cols = wmiter * self.tm, self.wniter * self.tn
        stage = warps * wsubm * wsubn
        staged = (self.staged and stage % WARP == 0 and pow2(wsubn) and (max(a_words, stage) + b_words) * itemsize <= smem_limit
                  and not (rows * cols >= 64 and limits.registers_per_sm // (self.threads * self.min_blocks) <= 128))
        if staged:
            a_words = max(a_words, stage)
            smem = (a_words + b_words) * itemsize
        return dict(warps=warps, wmiter=wmiter, wsubm=wsubm, wsubn=wsubn, tcols=tcols, vec=vec, bufs=bufs, lda=lda,
                    smem=smem, staged=staged, a_words=a_words, a_loads=self.bm * self.bk // (self.threads * vec),
                    b_loads=self.bk * self.bn // (self.threads * vec), rows=rows, cols=cols)


# The rungs' configurations (module level, so a tuner or a test can swap them). float64 builds keep
# the tile where the registers allow (small) and use 64 x 64 tiles where 128 float64 sums a thread
# would not fit in 255 registers (warp_tiled, wide_loads): their Launch describes the float32 build.
WARP_TILED = GemmConfig()  # 128 x 128 x 16, 4 warps of 64 x 64, 8 x 16 sums a thread (cuBLAS's shape)
WARP_TILED_F64 = GemmConfig(bm=64, bn=64, bk=8, wm=32, wn=32, wniter=2, tm=4, tn=4, threads=128)
WIDE_LOADS = WARP_TILED.replace(pairs=True)
# small: the first tile (largest) that gives at least SMALL_MIN_BLOCKS_PER_SM blocks an SM, else the last
SMALL_CONFIGS = (
    GemmConfig(bm=64, bn=64, bk=16, wm=32, wn=32, wniter=2, tm=4, tn=4, threads=128, pairs=True, min_blocks=4),
    GemmConfig(bm=32, bn=64, bk=16, wm=32, wn=32, wniter=2, tm=4, tn=4, threads=64, pairs=True, min_blocks=8),
    GemmConfig(bm=32, bn=32, bk=32, wm=32, wn=16, wniter=1, tm=4, tn=4, threads=64, pairs=True, min_blocks=8),
)
SMALL_MIN_BLOCKS_PER_SM = 1
SMALL_MAX_FLOPS = 1 << 27  # the shapes the small rung is for (the "under 2^27 FLOPs")

# What a tuner may vary (``lab tune``; Variant.tunables of warp_tiled and wide_loads): the block
# tile, from GEMM_TILES (tile, slab depth, warp and thread tiles, threads, shared-memory stages:
# 2 buffers or 1), and the split-K factor (grid z, then the reduction launch). Each entry passes
# GemmConfig.derived; launch math that could not pay (a tile twice the matrix, a split of a grid
# that already fills the SMs, K ranges under two slabs) raises ValueError: not a candidate.
GEMM_TILES = {
    "128x128x16": WARP_TILED,  # 4 warps of 64 x 64, 8 x 16 sums a thread
    "128x128x8": WARP_TILED.replace(bk=8),
    "128x128x16-sb": WARP_TILED.replace(prefetch=False),  # one shared buffer: 2 barriers a slab
    # each thread stores its own 128 sums (no staged epilogue): 4096^3 3.133 ms against 3.213 staged
    # (H100, 3 alternating rounds: docs/benchmarks.md); staged wins at short K (gemm_rates.py)
    "128x128x16-direct": WARP_TILED.replace(staged=False),
    "256x128x8": WARP_TILED.replace(bm=256, bk=8, threads=256, min_blocks=1),  # 8 warps
    "128x64x16": WARP_TILED.replace(bn=64, wn=32, wniter=2, min_blocks=3),  # 8 x 8 a thread
    "64x128x16": GemmConfig(bm=64, bn=128, bk=16, wm=32, wn=64, wniter=4, tm=4, tn=4, threads=128, min_blocks=4),
    "64x64x16": SMALL_CONFIGS[0].replace(pairs=False),  # 4 x 8 a thread
    "64x64x32": SMALL_CONFIGS[0].replace(bk=32, pairs=False),
    "128x32x16": GemmConfig(bm=128, bn=32, bk=16, wm=64, wn=32, wniter=2, tm=8, tn=4, threads=64, min_blocks=4),
    "32x64x16": SMALL_CONFIGS[1].replace(pairs=False),
    "32x32x32": SMALL_CONFIGS[2].replace(pairs=False),
}
GEMM_SPLITS = (1, 2, 4, 8, 16, 32, 64, 128)
TUNABLE = {
    "warp_tiled": {"tile": tuple(GEMM_TILES), "splits": GEMM_SPLITS},
    "wide_loads": {"tile": tuple(GEMM_TILES), "splits": GEMM_SPLITS},  # pairs where K and N are even
    "small": {"configs": "SMALL_CONFIGS (the largest tile that gives every SM a block)"},
}


def gemm_config(rung: str, size, dtype=np.float32) -> GemmConfig:
    """The configuration ``rung`` (warp_tiled, wide_loads, small) runs at M x N x K in ``dtype``;
    float64 and odd K or N read single elements (pairs off)."""
    m, n, k = size
    f64 = np.dtype(dtype) == np.float64
    if rung == "small":
        sms = sm_count()
        cfg = next((c for c in SMALL_CONFIGS if blocks_for(m, c.bm) * blocks_for(n, c.bn) >= SMALL_MIN_BLOCKS_PER_SM * sms),
                   SMALL_CONFIGS[-1])
    elif f64:
        cfg = WARP_TILED_F64
    else:
        cfg = {"warp_tiled": WARP_TILED, "wide_loads": WIDE_LOADS}[rung]
    if cfg.pairs and (f64 or k % 2 or n % 2):
        cfg = cfg.replace(pairs=False)
    if f64 and rung == "small":  # float64 values take two registers: a looser launch bound, no spills
        cfg = cfg.replace(min_blocks=max(1, cfg.min_blocks // 2))
    return cfg
