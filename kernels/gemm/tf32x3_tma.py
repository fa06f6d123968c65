"""tensor_core_3xtf32 on TMA: comparable builds of the rung's wgmma kernel (kernels/gemm/tensor_core_3xtf32.py)
fed by kernels/gemm/wgmma_tma.py's pipeline instead of cp.async. Not the rung's default (:data:`kernels.gemm.
tensor_core_3xtf32.WG_DEFAULT`): no TMA build was measured faster in one run; scripts/tf32x3_bench.py times
:data:`TMA_DEFAULT` beside the rung.

The same pre-pass and wgmmas fed by kernels/gemm/wgmma_tma.py's pipeline. A stage is one [16 big, 16 small] group of
A2's and BT2's 128 rows -- one 128-byte row each, so one TMA box a operand (128 x 32 words, 128-byte swizzle),
32 KB -- completing on a full mbarrier and released on an empty one; the big part's descriptor starts at the
tile, the small part's 64 bytes in. Builds: ``tma_s6`` (thread 0 issues the copies between its wgmmas, 218
registers), ``tma_s6_lag2`` (it refills the stage of slab kt - 2), ``tma_ws_s6``/``tma_ws_s4`` (a producer
warpgroup and 2 consumer warpgroups with setmaxnreg 24/240: ptxas still gave 168 registers a thread, the
launch bounds' share for 384 threads, and the 192 accumulator and staging registers spilled 280 bytes), and
``tma_ws1_s6`` (a producer warpgroup, one staging set: each slab's wgmmas waited for and added before the
next, the other consumer warpgroup keeping the tensor cores busy; 128 registers of sums, no spills). Measured
on the H200 (pre-pass included; docs/tensor-cores.md, "3xTF32 on the TMA pipeline"): ``tma_s6`` 0.250 ms at
3000 x 2000 x 1000 against k16s6's 0.203, the same with K ranges at 1000 x 1000 x 16384 (0.795 and 0.798);
``tma_ws_s6`` 2.5x slower (spills); ``tma_ws1_s6`` 66.9 and 61.7 TFLOP/s at 3210^3 and 2900 x 2100 x 700, k16s6
61.9 and 57.4 in the day's first call (not the same call: the default stays k16s6 until one run times both
at every shape, K ranges included).

Sources: PTX ISA 8.x ("cp.async.bulk.tensor", "mbarrier", "setmaxnreg", "wgmma.mma_async"); CUDA C++
Programming Guide, "Tensor Memory Access"; docs/tensor-cores.md, "3xTF32 on the TMA pipeline".
"""
from __future__ import annotations

from kernels.compiler import COMPILER, MLIR, SIMULATOR, cuda, int32
from kernels.gemm import mma
from kernels.gemm import tensor_core_3xtf32 as X
from kernels.gemm import wgmma_bf16 as W
from kernels.gemm import wgmma_tma as T
from kernels.gemm.tensor_core_3xtf32 import BM, BN, THREADS, WG_REGS, issue_ptx

# the TMA builds (:func:`make_tma_kernel`, kernels/gemm/wgmma_tma.py's pipeline): stages of one 16-k group (A2's
# and BT2's 128 rows of 128 bytes: 32 KB), a producer warpgroup (``ws``) with setmaxnreg (producer, consumers)
TMA_BUILDS = {
    "tma_ws_s6": dict(tma=True, stages=6, ws=True, maxnreg=(24, 240)),  # producer + 2 consumers, 384 threads
    "tma_ws_s4": dict(tma=True, stages=4, ws=True, maxnreg=(24, 240)),
    "tma_s6": dict(tma=True, stages=6, ws=False),  # thread 0 issues the copies between its wgmmas, 256 threads
    "tma_s6_lag2": dict(tma=True, stages=6, ws=False, lag=2),  # thread 0 refills the stage of slab kt - 2
    "tma_ws1_s6": dict(tma=True, stages=6, ws=True, maxnreg=(24, 240), sets=1),  # one staging set: no spills
}
TMA_DEFAULT = "tma_s6"  # the TMA build scripts/tf32x3_bench.py times beside the rung (checked on the GPU by the tests);
# tma_ws1_s6 measured faster (66.9 TFLOP/s at 3210^3) in a call that did not time the others: the next to compare


def build_threads(build: str) -> int:
    """Threads a block of TMA build ``build``: 2 consumer warpgroups, and a producer warpgroup with ``ws``."""
    return THREADS + (W.WARPGROUP if TMA_BUILDS[build].get("ws") else 0)


def build_shared(build: str) -> int:
    """Dynamic shared memory of TMA build ``build`` (kernels.gemm.wgmma_tma.shared_bytes of 2 consumer warpgroups
    and 128 columns: stages x 32 KB, the mbarriers, 1 KB to align)."""
    return T.shared_bytes(TMA_BUILDS[build]["stages"], 2, BN)


def tma_maps(A2, BT2):
    """A device uint8 array of 256 bytes: the tensor maps of A2 and BT2 (int32, C-contiguous), boxes of 128 rows
    x 32 words (one [16 big, 16 small] group: 128 bytes), 128-byte swizzle (kernels.gemm.wgmma_tma.tensor_maps
    with TF32's K-major boxes)."""
    return T.tensor_maps(A2, BT2, 2, BN, True)


def wgmma_prepare(A, B, C, splits: int, per: int, build: str = TMA_DEFAULT):
    """:func:`kernels.gemm.tensor_core_3xtf32.wgmma_prepare` (the same pre-pass, K ranges and reduction) with
    TMA build ``build``'s kernel: its tensor maps of A2 and BT2 encoded once a call (they live as long as it)."""
    def launcher(A2, BT2, grid):
        g = mma.with_shared(kernel(build, grid[2] > 1), grid, (build_threads(build),), build_shared(build))
        maps = tma_maps(A2, BT2)

        def f(A2, BT2, C):
            g(A2, BT2, C, maps)
        return f
    return X.wgmma_prepare(A, B, C, splits, per, build, launcher)


if COMPILER == MLIR and not SIMULATOR:
    import numba_cuda_mlir.cuda.experimental as XP  # inline_ptx (an attribute of the module: the bare name does not type)

    from kernels.compiler import int64, uint16
    from kernels.gemm.mma import global_address
    from kernels.gemm.tensor_core_3xtf32 import declare, flush_a, flush_b
    from kernels.gemm.wgmma_bf16 import CHIP, acc_store_pairs, aligned_base, make_desc, wgmma_commit, wgmma_wait0, wgmma_wait1

    def make_tma_kernel(stages: int = 6, ws: bool = True, maxnreg=None, split: bool = False, sets: int = 2,
                        lag: int = 1):
        """gemm(A2, BT2, C, maps): as :func:`make_kernel` (same A2, BT2, C, grid and K ranges), fed by TMA
        (kernels/gemm/wgmma_tma.py): ``maps`` a device uint8 array of 256 bytes, A2's tensor map then BT2's (boxes
        of 128 rows x 32 words: one [16 big, 16 small] group, 128 bytes, 128-byte swizzle; :func:`tma_maps`).
        A slab is one group (16 k): a stage is A2's 128 rows and BT2's 128 rows of it (32 KB), completing on the
        stage's full mbarrier; consumers release it on its empty mbarrier (one arrival a warpgroup). ``ws``: a
        producer warpgroup (block 384 threads) whose one thread issues the copies, ``maxnreg`` (producer,
        consumer) registers by setmaxnreg; else thread 0 (block 256) refills a stage once both warpgroups
        released it (``lag`` 1: at slab kt the stage of slab kt - 1; 2: of slab kt - 2, which the other warpgroup
        has most likely released already). Per slab a consumer warpgroup: wait full, 3 x 2 wgmma m64n128k8 into
        the staging set of the slab's parity (big k-steps at the descriptors' + 0 and + 32 bytes, small ones at
        + 64 and + 96: the group's halves in one 128-byte swizzled row), commit, ``wait_group 1``, release slab
        kt - 1's stage and add its staging set to the sums (round to nearest). ``sets=1``: one staging set (64
        registers fewer: under the 168 a thread of 384 gets), each slab's wgmmas waited for (``wait_group 0``)
        and added before the next slab's are issued -- the other warpgroup's keep the tensor cores busy."""
        T.check_build(stages, 2, BN, ws, maxnreg)
        threads = THREADS + (W.WARPGROUP if ws else 0)
        sbytes, a_bytes = T.stage_bytes(2, BN), 64 * 2 * T.SLAB_BYTES
        bar_b = T.BAR_BYTES
        lo, hi = maxnreg or (0, 0)
        dec, inc = T.set_maxnreg(lo, False), T.set_maxnreg(hi, True)
        mbar_init, mbar_fence_init, mbar_arrive_expect = T.mbar_init, T.mbar_fence_init, T.mbar_arrive_expect
        mbar_arrive, mbar_wait, tma_load, prefetch_map = T.mbar_arrive, T.mbar_wait, T.tma_load, T.prefetch_map
        store_pairs = acc_store_pairs(WG_REGS)
        ptx_a, ptx_b = issue_ptx("A", 2), issue_ptx("B", 2)
        small = 64 >> 4  # the small half of a group: 64 bytes into the (swizzled) row, in descriptor units
        sw = W.SWIZZLE_128B

        @cuda.jit(device=True, forceinline=True)
        def issue_a(ab, asm, bb, bsm, one):
            XP.inline_ptx(ptx_a, "l", ab, "l", asm, "l", bb, "l", bsm, "r", one)

        @cuda.jit(device=True, forceinline=True)
        def issue_b(ab, asm, bb, bsm, one):
            XP.inline_ptx(ptx_b, "l", ab, "l", asm, "l", bb, "l", bsm, "r", one)

        @cuda.jit(device=True, inline="always")
        def produce(j, s, base, bars, tmap, ra, rb):
            """Arm stage s's full barrier with its bytes and issue slab j's two boxes (A2 rows ra.., BT2 rows rb..)."""
            sb, fb = base + s * sbytes, bars + bar_b * s
            mbar_arrive_expect(fb, sbytes)
            tma_load(sb, tmap, j * 32, ra, fb)
            tma_load(sb + a_bytes, tmap + 128, j * 32, rb, fb)

        @cuda.jit(chip=CHIP, launch_bounds=(threads, 1))
        def gemm(A2, BT2, C, maps):
            declare()
            smem = cuda.shared.array(0, uint16)
            M, K2 = A2.shape
            N = BT2.shape[0]
            rz, nz = 0, 0
            if split:
                M, N = M // cuda.gridDim.z, N // cuda.gridDim.z
                rz, nz = cuda.blockIdx.z * M, cuda.blockIdx.z * N
            t = cuda.threadIdx.x
            wg, tw = t // 128, t % 128
            m0, n0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
            base, _ = aligned_base(smem, 1024)
            bars = base + stages * sbytes  # full[s] at bars + 8 s, empty[s] at bars + 8 (stages + s)
            tmap = global_address(maps)
            nk = K2 // 32
            if t == 0:
                prefetch_map(tmap)
                prefetch_map(tmap + 128)
                for s in range(stages):
                    mbar_init(bars + bar_b * s, 1)
                    mbar_init(bars + bar_b * (stages + s), 2)
                mbar_fence_init()
            cuda.syncthreads()
            if ws and wg == 2:  # the producer warpgroup: one thread issues every copy
                dec()
                if tw == 0:
                    for j in range(nk):
                        s = j % stages
                        if j >= stages:
                            mbar_wait(bars + bar_b * (stages + s), (j // stages - 1) & 1)
                        produce(j, s, base, bars, tmap, rz + m0, nz + n0)
            else:
                inc()
                if not ws and t == 0:
                    for j in range(stages):
                        if j < nk:
                            produce(j, j, base, bars, tmap, rz + m0, nz + n0)
                one = int32(1)
                for kt in range(nk):
                    s = kt % stages
                    mbar_wait(bars + bar_b * s, (kt // stages) & 1)
                    sb = base + s * sbytes
                    da = make_desc(sb + wg * (64 * 128), 16, 1024, sw)
                    db = make_desc(sb + a_bytes, 16, 1024, sw)
                    if sets == 1:
                        issue_a(da, da + small, db, db + small, one)
                        wgmma_commit()
                        wgmma_wait0()
                        if tw == 0:
                            mbar_arrive(bars + bar_b * (stages + s))
                        flush_a()
                        if not ws and t == 0 and kt + stages < nk:
                            j = kt + stages
                            mbar_wait(bars + bar_b * (stages + s), (j // stages - 1) & 1)
                            produce(j, s, base, bars, tmap, rz + m0, nz + n0)
                        continue
                    if kt % 2 == 0:
                        issue_a(da, da + small, db, db + small, one)
                    else:
                        issue_b(da, da + small, db, db + small, one)
                    wgmma_commit()
                    wgmma_wait1()
                    if kt > 0:  # slab kt - 1's wgmmas are done: release its stage, add its staging set
                        p = (kt - 1) % stages
                        if tw == 0:
                            mbar_arrive(bars + bar_b * (stages + p))
                        if kt % 2 == 0:
                            flush_b()
                        else:
                            flush_a()
                    if not ws and t == 0 and kt >= lag and kt - lag + stages < nk:  # thread 0 refills slab kt - lag's
                        j = kt - lag + stages
                        q = (kt - lag) % stages
                        mbar_wait(bars + bar_b * (stages + q), (j // stages - 1) & 1)
                        produce(j, q, base, bars, tmap, rz + m0, nz + n0)
                wgmma_wait0()
                if sets == 2 and nk > 0:  # (one set: every slab added in the loop)
                    if (nk - 1) % 2 == 0:
                        flush_a()
                    else:
                        flush_b()
                NC = C.shape[1]
                cb = global_address(C)
                store_pairs(C, rz + m0 + 64 * wg + 16 * (tw // 32) + (tw % 32) // 4, n0 + 2 * (tw % 4), rz + M, NC, cb,
                            int64(4 * NC) if NC % 2 == 0 and cb % 8 == 0 else int64(0))

        return gemm

    _KERNELS: dict = {}

    def kernel(build: str, split: bool):
        """:func:`make_tma_kernel`'s build ``build`` (a name of :data:`TMA_BUILDS`), made once."""
        if (build, split) not in _KERNELS:
            b = TMA_BUILDS[build]
            _KERNELS[build, split] = make_tma_kernel(b["stages"], b["ws"], b.get("maxnreg"), split, b.get("sets", 2),
                                                     b.get("lag", 1))
        return _KERNELS[build, split]
