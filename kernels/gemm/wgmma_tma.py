"""The Hopper pipeline's next step for the wgmma rungs: TMA copies, mbarriers, a producer warp.

The wgmma rungs (kernels/gemm/wgmma_bf16.py, read it first: descriptors, the 128-byte swizzle, the
asynchronous groups) feed the tensor cores with Ampere's ``cp.async``: every thread of the block computes
the global and swizzled shared addresses of its 16-byte chunks (8 chunks a thread a slab at 256 x 128 x 64
bf16), issues them, and the block learns that a slab has landed by ``cp.async.wait_group`` in each thread
followed by a block-wide barrier. This module replaces that with what cuBLAS and CUTLASS use on Hopper:

* **TMA** (the Tensor Memory Accelerator): one thread issues one ``cp.async.bulk.tensor.2d`` a box -- the
  whole 256 x 64 bf16 tile of A (32 KB) in one instruction -- and the copy engine computes every address,
  applies the 128-byte swizzle (the layout the wgmma descriptors read, byte for byte the one the cp.async
  build wrote by hand) and writes zeros past the matrix's edges (no bounds code for ragged M, N, K). The box
  and the matrix are described by a 128-byte *tensor map* that the host encodes once (kernels/gemm/
  tensor_map.py) and the kernel reads from global memory.
* **mbarrier** completion: each stage has a *full* barrier, armed by the issuing thread with the bytes to
  expect (``mbarrier.arrive.expect_tx``) and completed by the copy engine as they land (``complete_tx``),
  and an *empty* barrier on which each consumer warpgroup arrives once its wgmmas have read the stage.
  Consumers wait on ``mbarrier.try_wait.parity`` with the stage's phase bit (slab j uses stage j % S in phase
  (j // S) % 2); no block-wide ``__syncthreads`` in the main loop, no ``cp.async`` groups, and the stage
  refilled is the one whose release the producer waited for, so all S stages can be in flight (the cp.async
  build keeps S - 2 ahead).
* **Split-K** (K ranges over grid z, :func:`k_splits`): where the output has fewer tiles than the GPU has SMs
  and K is long, block z multiplies only slabs z per .. z per + per - 1 (the copies' K coordinate starts there;
  the zero fill past K covers a short last range) and adds its partial tile into C by ``red.global.v2.f32.add``
  (C zeroed first), or writes it to a workspace that kernels.gemm.split_k's reduction launch sums.
* **Warp specialization** (``ws``): a producer warpgroup whose one thread only issues copies (waiting on
  the empty barriers), beside 2 or 4 consumer warpgroups that only wait, multiply and store; ``maxnreg``
  moves registers from the producer to the consumers (``setmaxnreg.dec`` / ``.inc``, sm_90a). Without
  ``ws`` the block's thread 0 issues the copies between its own wgmmas.

The kernel (:func:`make_tma_kernel`): a 64 wgs x bn block tile (consumer warpgroup g owns rows 64 g ..
64 g + 63, one m64n{bn}k16 wgmma (bf16) or m64n{bn}k8 (TF32) a k step), K in slabs of 128 bytes (64 bf16 or 32
TF32), ``stages`` stages of (64 wgs + bn) x 128 bytes. Per slab: wait full, four wgmmas, commit,
``wgmma.wait_group 1`` (so slab kt - 1's wgmmas are done), one thread a warpgroup arrives on slab kt - 1's
empty barrier. bf16: A (M x K) K-major, one box of 64 x 64 wgs; B (K x N) MN-major, bn / 64 boxes of 64 K-rows
x 64 columns, 8 KB apart (the descriptor's LBO). TF32: A and B^T (N x K) both K-major, one box each. Global
rows must be 16-byte multiples (K and N multiples of 8 in bf16, K of 4 in TF32: the rungs' prepare pads).

Measured (an H200, scripts/wgmma_tma_bench.py, the kernel alone, ms; docs/tensor-cores.md, "TMA and
mbarriers"): bf16 at 4096^3 the cp.async build 0.2619, ``tma_ws_n256s4`` 0.2154 (0.88x torch bf16; now the
rung's build), 5000 x 3000 x 2504 0.1917 and 0.1794 (0.1360 with K and N padded to 64: whole 128-byte rows);
TF32 at 4096^3 0.4671 and 0.3805 (1.00x torch TF32, the rung's pre-pass not included). Thread 0 issuing the
copies without a producer warpgroup: 0.2327; setmaxnreg: no measurable change (0.2200 without).

What needs what: sm_90a (wgmma, setmaxnreg) under numba-cuda-mlir's inline PTX, and the CUDA driver's
cuTensorMapEncodeTiled. In the simulator and under numba-cuda the module imports, :data:`UNAVAILABLE`
says why, and the host-side pieces (the box plan, the swizzle, the barrier schedule: :func:`schedule`)
are what the tests check there.

Sources: PTX ISA 8.x, "cp.async.bulk.tensor", "mbarrier" (init, arrive.expect_tx, try_wait.parity, phase
completion, tx-count), "setmaxnreg", "fence.mbarrier_init"; CUDA C++ Programming Guide, "Asynchronous Data
Copies using the Tensor Memory Accelerator (TMA)", "Asynchronous Barrier"; NVIDIA CUTLASS,
include/cutlass/pipeline/sm90_pipeline.hpp (PipelineTmaAsync: full/empty barriers, one arrival a consumer
warpgroup) and the warp-specialized sm90 GEMM kernels (producer 40 registers, consumers 232).
"""
from __future__ import annotations

import functools

import numpy as np

from kernels.compiler import COMPILER, MLIR, SIMULATOR, cuda, bound
from kernels.gemm import tensor_map as TM
from kernels.gemm import wgmma_bf16 as W
from kernels.arrays import empty_like
from kernels.gemm.mma import with_shared
from kernels.gemm.split_k import reduce_launch, split_k_reduce_kernel
from kernels.spec import blocks_for, sm_count, Launch

UNAVAILABLE = W.UNAVAILABLE
WARPGROUP = W.WARPGROUP
SLAB_BYTES = 128  # a slab row: 64 bf16 or 32 TF32 of K (one 128-byte swizzle row)
BOX_N = 64  # bf16 B (MN-major): a box is 64 K-rows x 64 columns (128 bytes a row)
BAR_BYTES = 8  # an mbarrier is one 8-byte word of shared memory


def slab_k(tf32: bool) -> int:
    """Elements of K a slab: 128 bytes of them."""
    return SLAB_BYTES // (4 if tf32 else 2)


def stage_bytes(wgs: int, bn: int) -> int:
    """Bytes of one stage: A's 64 wgs rows and B's (bf16: 64 K-rows x bn columns; TF32: bn rows of B^T), each
    128 bytes a row -- the same for bf16 and TF32."""
    return (64 * wgs + bn) * SLAB_BYTES


def shared_bytes(stages: int, wgs: int, bn: int) -> int:
    """Dynamic shared memory: the stages, 2 mbarriers a stage, 1 KB to align the first stage to 1,024 bytes
    (the 128-byte swizzle's atom)."""
    return stages * stage_bytes(wgs, bn) + 2 * stages * BAR_BYTES + 1024


def boxes(wgs: int, bn: int, tf32: bool) -> list[tuple[str, int, int, int]]:
    """The TMA copies of one slab: (operand, byte offset in the stage, column, row) of each box's corner
    relative to the block's (k0 for K, m0 or n0 for M or N): A one box of 64 wgs rows; bf16 B bn / 64 boxes of
    64 columns 8 KB apart (wgmma_bf16.B_LBO); TF32 B^T one box of bn rows. Each box's bytes land at its offset."""
    a_bytes = 64 * wgs * SLAB_BYTES
    out = [("A", 0, 0, 0)]  # {k0, m0}
    if tf32:
        out.append(("B", a_bytes, 0, 0))  # {k0, n0}
    else:
        out += [("B", a_bytes + h * W.B_LBO, h * BOX_N, 0) for h in range(bn // BOX_N)]  # {n0 + 64 h, k0}
    return out


def full_parity(kt: int, stages: int) -> int:
    """The phase parity a consumer waits for on slab kt's full barrier: slab kt is stage kt % S's
    (kt // S)-th fill."""
    return (kt // stages) & 1


def empty_parity(j: int, stages: int) -> int:
    """The phase parity the producer waits for on the empty barrier before loading slab j >= S into stage
    j % S: the release of slab j - S, that barrier's (j // S - 1)-th completed phase."""
    return (j // stages - 1) & 1


def schedule(nk: int, stages: int, wgs: int, rng, full=full_parity, empty=empty_parity) -> list:
    """The kernel's barrier protocol played on the host in a random interleaving (``rng``, numpy Generator):
    a producer loading slabs 0 .. nk - 1 (waiting on the empty barrier with ``empty(j, stages)`` from slab
    ``stages`` on), each copy landing some steps later (the full barrier's phase completes), and ``wgs``
    consumer warpgroups, each waiting on slab kt's full barrier with ``full(kt, stages)``, its wgmmas reading the
    stage until its next slab's ``wait_group 1`` releases it (one arrival of the ``wgs`` the empty barrier
    counts). ``mbarrier.try_wait.parity P`` passes when the barrier's current phase has the other parity
    (PTX ISA, "mbarrier.try_wait"). Returns the events in order; AssertionError when a copy would overwrite a
    stage still being read, a wgmma would read a stage that does not hold its slab, or nothing can run
    (a deadlock)."""
    full_done, empty_done = [0] * stages, [0] * stages  # completed phases
    arrivals = [0] * stages
    holds, landed, readers = [None] * stages, [False] * stages, [set() for _ in range(stages)]
    j, kts, flying, events = 0, [0] * wgs, [], []

    def can_load():
        return j < nk and (j < stages or empty_done[j % stages] % 2 != empty(j, stages))

    def can_read(g):
        s = kts[g] % stages
        return kts[g] <= nk and (kts[g] == nk or full_done[s] % 2 != full(kts[g], stages))

    while j < nk or flying or any(kt <= nk for kt in kts):
        actors = (["load"] if can_load() else []) + (["land"] if flying else []) \
            + [g for g in range(wgs) if can_read(g)]
        assert actors, f"deadlock: slab {j} to load, consumers at {kts}"
        a = actors[rng.integers(len(actors))]
        if a == "load":
            s = j % stages
            assert not readers[s], f"slab {j} overwrites stage {s} while warpgroups {sorted(readers[s])} read it"
            holds[s], landed[s] = j, False
            flying.append(s)
            events.append(("load", j, s))
            j += 1
        elif a == "land":
            s = flying.pop(0)
            landed[s], full_done[s] = True, full_done[s] + 1
            events.append(("land", holds[s], s))
        else:
            g, kt = a, kts[a]
            if kt < nk:
                s = kt % stages
                assert holds[s] == kt and landed[s], f"warpgroup {g} reads slab {kt} from stage {s}, which holds {holds[s]}"
                readers[s].add(g)
                events.append(("mma", kt, s, g))
            if kt > 0:  # wait_group 1 (wait_group 0 after the last): slab kt - 1 read
                p = (kt - 1) % stages
                readers[p].discard(g)
                arrivals[p] += 1
                if arrivals[p] == wgs:
                    arrivals[p], empty_done[p] = 0, empty_done[p] + 1
            kts[g] += 1
    return events


# --- The builds: make_tma_kernel's keywords (declared with the rung's in kernels.gemm.wgmma_bf16.BUILDS) ---
BUILDS: dict = {  # "tma": True marks them for the rungs' launchers (kernels.gemm.wgmma_tf32) and notes
    "tma_ws_n256s4": dict(tma=True, stages=4, wgs=2, bn=256, ws=True, maxnreg=(40, 232)),  # producer + 2 consumers
    "tma_ws_m256s4": dict(tma=True, stages=4, wgs=4, bn=128, ws=True, maxnreg=(24, 112)),  # producer + 4 consumers
    "tma_m256s4": dict(tma=True, stages=4, wgs=4, bn=128),  # thread 0 issues the copies between its wgmmas
}
BUILD: dict = BUILDS["tma_ws_n256s4"]  # the rung tensor_core_wgmma's: faster than the cp.async build at each shape
PAD = 64  # the rung's K and N padded to multiples of 64 (rows of whole 128-byte lines): measured faster


def block_shape(build: dict) -> tuple[int, int, int]:
    """(rows, columns, threads) of a build's block: 64 rows and 128 threads a consumer warpgroup, and a
    producer warpgroup with ``ws``."""
    wgs = build.get("wgs", 2)
    return 64 * wgs, build.get("bn", 128), WARPGROUP * (wgs + (1 if build.get("ws") else 0))


REGISTERS = 65536  # an SM's (and a block's, at most) 32-bit registers


def register_cap(threads: int) -> int:
    """Registers a thread of a ``threads``-thread block gets under ``launch_bounds=(threads, 1)``: the file's
    share, rounded down to the allocation unit of 8 (255 at most). setmaxnreg moves registers within this
    pool (PTX ISA, "setmaxnreg": an increase waits until the block's pool has them)."""
    return min(REGISTERS // threads // 8 * 8, 255)


def consumer_registers(wgs: int, producer: int) -> int:
    """The most registers a consumer thread can take with ``setmaxnreg.inc`` once the producer warpgroup has
    given up all but ``producer`` a thread: the pool is register_cap x threads, a multiple of 8."""
    cap = register_cap(WARPGROUP * (wgs + 1))
    return min((cap + (cap - producer) // wgs) // 8 * 8, 256)


def check_build(stages: int, wgs: int, bn: int, ws: bool, maxnreg) -> None:
    """ValueError (one line) for a build the kernel cannot run: bn 128 or 256, 2 or 4 consumer warpgroups with
    64 wgs <= 256 (one box of A), 2 to 8 stages, shared memory within a block's 227 KB, and ``maxnreg``
    (producer, consumer) registers -- multiples of 8, the producer's 24 or more and at most the block's share,
    the consumers' at most :func:`consumer_registers` (more would wait forever for registers the pool has not)."""
    if bn not in (128, 256) or wgs not in (2, 4) or not 2 <= stages <= 8:
        raise ValueError("a TMA build: bn 128 or 256, 2 or 4 consumer warpgroups, 2 to 8 stages")
    if shared_bytes(stages, wgs, bn) > W.DYNAMIC_SHARED_MAX:
        raise ValueError(f"{shared_bytes(stages, wgs, bn)} bytes of shared memory: over {W.DYNAMIC_SHARED_MAX}")
    if maxnreg:
        if not ws:
            raise ValueError("setmaxnreg moves registers between roles: a warp-specialized build (ws) only")
        lo, hi = maxnreg
        cap = register_cap(WARPGROUP * (wgs + 1))
        if lo % 8 or hi % 8 or not 24 <= lo <= cap or not cap <= hi <= consumer_registers(wgs, lo):
            raise ValueError(f"maxnreg {tuple(maxnreg)}: multiples of 8, the producer's 24 .. {cap}, the consumers' "
                             f"{cap} .. {consumer_registers(wgs, lo)} (the pool of 65,536 registers)")


if COMPILER == MLIR and not SIMULATOR:
    import numba_cuda_mlir.cuda.experimental as _X

    from kernels.compiler import int32, int64, uint16
    from kernels.gemm.mma import global_address

    @functools.cache
    def acc_declare_only(regs: int):
        """acc(): declare the ``regs`` accumulators wacc0 .. (PTX registers of the function, no values)."""
        return W._generated("acc", "", f"    _X.inline_ptx({f'.reg .f32 wacc<{regs}>;'!r})\n", {"_X": _X})

    @functools.cache
    def acc_zero(regs: int):
        """zero(): wacc0 .. = 0."""
        ptx = "\n".join(f"mov.b32 wacc{i}, 0;" for i in range(regs))
        return W._generated("zero", "", f"    _X.inline_ptx({ptx!r})\n", {"_X": _X})

    @cuda.jit(device=True, forceinline=True)
    def mbar_init(bar, count):
        """``mbarrier.init``: the barrier at shared address ``bar`` expects ``count`` arrivals a phase."""
        _X.inline_ptx("mbarrier.init.shared.b64 [%0], %1;", "r", int32(bar), "r", int32(count))

    @cuda.jit(device=True, forceinline=True)
    def mbar_fence_init():
        """``fence.mbarrier_init``: the initialisations visible (to the copy engine too) before the barrier."""
        _X.inline_ptx("fence.mbarrier_init.release.cluster;")

    @cuda.jit(device=True, forceinline=True)
    def mbar_arrive_expect(bar, nbytes):
        """Arrive on ``bar`` and add ``nbytes`` to the transaction bytes its phase waits for."""
        _X.inline_ptx("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;", "r", int32(bar), "r", int32(nbytes))

    @cuda.jit(device=True, forceinline=True)
    def mbar_arrive(bar):
        """Arrive on ``bar`` (one of its count)."""
        _X.inline_ptx("mbarrier.arrive.shared.b64 _, [%0];", "r", int32(bar))

    @cuda.jit(device=True, forceinline=True)
    def mbar_wait(bar, parity):
        """Wait until the phase of ``bar`` with ``parity`` (0 or 1) has completed: ``try_wait.parity`` (which
        itself suspends the thread for a while) in a loop."""
        while _X.inline_ptx("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.b32 %0, 1, 0, p; }",
                            "=r", np.int32, "r", int32(bar), "r", int32(parity)) == 0:
            pass

    @cuda.jit(device=True, forceinline=True)
    def tma_load(dst, tmap, c0, c1, bar):
        """Copy the box at {column c0, row c1} (elements) of the tensor map at global address ``tmap`` to shared
        address ``dst`` (1,024-byte aligned for the 128-byte swizzle); its bytes complete on ``bar``."""
        _X.inline_ptx("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];",
                      "r", int32(dst), "l", tmap, "r", int32(c0), "r", int32(c1), "r", int32(bar))

    @cuda.jit(device=True, forceinline=True)
    def prefetch_map(tmap):
        """Bring the tensor map at global address ``tmap`` into the copy engine's cache."""
        _X.inline_ptx("prefetch.tensormap [%0];", "l", tmap)

    @functools.cache
    def acc_red_pairs(regs: int, vec: bool):
        """A device function red(r0, c0, M, N, cb, ld, even): the accumulators of this thread's fragment (rows
        from r0, columns from c0, as kernels.gemm.wgmma_bf16.acc_store_pairs) *added* into C at global address
        ``cb`` (rows ``ld`` bytes apart) for every element with r < M and c < N: ``red.global.add.f32`` each, or,
        with ``vec`` and ``even`` (the pair's address a multiple of 8), one ``red.global.v2.f32.add`` a pair of
        adjacent columns (sm_90; PTX ISA, "red")."""
        out = ", ".join('"=f", np.float32' for _ in range(8))
        one = "red.global.add.f32 [%0], %1;"
        two = "red.global.v2.f32.add [%0], {%1, %2};"
        body = []
        for j in range(regs // 8):
            body.append(f"    v = _X.inline_ptx({W.acc_read_ptx(j)!r}, {out})")
            for i in range(0, 8, 2):
                reg = 8 * j + i
                dr, dc = 8 * ((reg // 2) % 2), 8 * (reg // 4)
                single = (f"            if c0 + {dc} < N:\n                _X.inline_ptx({one!r}, 'l', a, 'f', v[{i}])\n"
                          f"            if c0 + {dc + 1} < N:\n                _X.inline_ptx({one!r}, 'l', a + 4, 'f', v[{i + 1}])")
                if vec:
                    body.append(f"    if r0 + {dr} < M:\n"
                                f"        a = cb + int64(r0 + {dr}) * ld + (c0 + {dc}) * 4\n"
                                f"        if even and c0 + {dc + 1} < N:\n"
                                f"            _X.inline_ptx({two!r}, 'l', a, 'f', v[{i}], 'f', v[{i + 1}])\n"
                                f"        else:\n{single}")
                else:
                    body.append(f"    if r0 + {dr} < M:\n"
                                f"        a = cb + int64(r0 + {dr}) * ld + (c0 + {dc}) * 4\n"
                                f"        if True:\n{single}")
        return W._generated("red", "r0, c0, M, N, cb, ld, even", "\n".join(body) + "\n",
                            {"_X": _X, "np": np, "int64": int64})

    @cuda.jit
    def zero_kernel(C):
        """C[i] = 0 for the 1-D float32 C: a grid-stride loop (the atomic K ranges add into a zeroed C)."""
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        step = cuda.gridDim.x * cuda.blockDim.x
        while i < C.shape[0]:
            C[i] = np.float32(0)
            i += step

    @functools.cache
    def set_maxnreg(n: int, inc: bool):
        """setmax(): ``setmaxnreg.inc`` (or ``.dec``) to ``n`` registers a thread, for the whole warpgroup;
        nothing when n is 0."""
        ptx = f"setmaxnreg.{'inc' if inc else 'dec'}.sync.aligned.u32 {n};"
        return W._generated("setmax", "", f"    _X.inline_ptx({ptx!r})\n" if n else "    pass\n", {"_X": _X})

    @functools.cache
    def make_tma_kernel(stages: int = 4, wgs: int = 2, bn: int = 128, ws: bool = False, maxnreg=None,
                        tf32: bool = False, group: int = 1, atomic: int = 0):
        """gemm(A, B, C, maps, per): C = A @ B (bf16: A (M, K), B (K, N) uint16 bits; ``tf32``: A (M, K), B as
        B^T (N, K) of TF32 or float32 bits), ``maps`` a device uint8 array of 256 bytes, A's tensor map then B's
        (:func:`tensor_maps`). Block (128 (wgs + ws),), grid (ceil(N / bn), ceil(M / (64 wgs)), S),
        :func:`shared_bytes` of dynamic shared memory. See the module docstring.

        K ranges (split-K): block z multiplies slabs z per .. z per + per - 1 only (none past K; one range when
        per >= the slab count). Its partial tile goes to C (S M, N) float32 C-contiguous, rows z M .. z M + M - 1
        (``atomic`` 0: a workspace, summed by a reduction launch after; S = 1: C itself, (M, N)); with ``atomic``
        1 or 2 it is added into C (M, N), zeroed before the launch, by ``red.global.add.f32`` (1) or, where the
        pair's address is 8-byte aligned, ``red.global.v2.f32.add`` (2; sm_90) -- float32 additions in an order
        the hardware picks, so the result's last bits may differ between calls."""
        check_build(stages, wgs, bn, ws, maxnreg)
        if atomic not in (0, 1, 2):
            raise ValueError(f"atomic={atomic!r}: 0 (plain stores), 1 (red.add.f32) or 2 (red.v2.f32.add)")
        threads = WARPGROUP * (wgs + (1 if ws else 0))
        regs = bn // 2
        declare, zero = acc_declare_only(regs), acc_zero(regs)
        issue, store_pairs = W.wgmma_issue(bn, 4, 1, tf32), W.acc_store_pairs(regs)
        red_pairs = acc_red_pairs(regs, atomic == 2)
        sbytes, a_bytes = stage_bytes(wgs, bn), 64 * wgs * SLAB_BYTES
        bk = slab_k(tf32)
        a_kstep = (W.K_STEP * 2) >> 4  # 32 bytes a k step in descriptor units (16 bf16 or 8 TF32)
        b_kstep = a_kstep if tf32 else (W.K_STEP * 128) >> 4  # MN-major bf16 B: 16 rows of 128 bytes
        b_lbo, b_sbo = (16, 1024) if tf32 else (W.B_LBO, W.B_SBO)
        nboxes = 1 if tf32 else bn // BOX_N
        lo, hi = maxnreg or (0, 0)
        dec, inc = set_maxnreg(lo, False), set_maxnreg(hi, True)  # no-ops without maxnreg
        sw, blbo = W.SWIZZLE_128B, W.B_LBO
        make_desc, aligned_base, grouped = W.make_desc, W.aligned_base, W.grouped_tile_device
        commit, wait1, wait0 = W.wgmma_commit, W.wgmma_wait1, W.wgmma_wait0

        @cuda.jit(device=True, inline="always")
        def produce(j, s, base, bars, tmap, m0, n0):
            """Arm stage s's full barrier with the stage's bytes and issue slab j's boxes into it (j counted from
            K's start: the range's first slab plus the slab's place in the range)."""
            sb, fb = base + s * sbytes, bars + BAR_BYTES * s
            mbar_arrive_expect(fb, sbytes)
            tma_load(sb, tmap, j * bk, m0, fb)
            if tf32:
                tma_load(sb + a_bytes, tmap + 128, j * bk, n0, fb)
            else:
                for h in range(nboxes):
                    tma_load(sb + a_bytes + h * blbo, tmap + 128, n0 + BOX_N * h, j * bk, fb)

        @cuda.jit(chip=W.CHIP, launch_bounds=(threads, 1))
        def gemm(A, B, C, maps, per):
            declare()
            smem = cuda.shared.array(0, uint16)
            M, K = A.shape
            t = cuda.threadIdx.x
            wg, tw = t // WARPGROUP, t % WARPGROUP
            bx, by = cuda.blockIdx.x, cuda.blockIdx.y
            if group > 1:
                bx, by = grouped(cuda.blockIdx.y * cuda.gridDim.x + bx, cuda.gridDim.x, cuda.gridDim.y, group)
            m0, n0 = by * (64 * wgs), bx * bn
            base, e0 = aligned_base(smem, 1024)
            bars = base + stages * sbytes  # full[s] at bars + 8 s, empty[s] at bars + 8 (stages + s)
            tmap = global_address(maps)
            j0 = cuda.blockIdx.z * per  # this block's K range: slabs j0 .. j0 + nk - 1
            nk = min((K + bk - 1) // bk - j0, per)
            if t == 0:
                prefetch_map(tmap)
                prefetch_map(tmap + 128)
                for s in range(stages):
                    mbar_init(bars + BAR_BYTES * s, 1)
                    mbar_init(bars + BAR_BYTES * (stages + s), wgs)
                mbar_fence_init()
            cuda.syncthreads()
            if ws and wg == wgs:  # the producer warpgroup: one thread issues every copy
                dec()
                if tw == 0:
                    for j in range(nk):
                        s = j % stages
                        if j >= stages:
                            mbar_wait(bars + BAR_BYTES * (stages + s), (j // stages - 1) & 1)
                        produce(j0 + j, s, base, bars, tmap, m0, n0)
            else:  # a consumer warpgroup
                inc()
                if not ws and t == 0:
                    for j in range(stages):
                        if j < nk:
                            produce(j0 + j, j, base, bars, tmap, m0, n0)
                zero()
                for kt in range(nk):
                    s = kt % stages
                    mbar_wait(bars + BAR_BYTES * s, (kt // stages) & 1)
                    sb = base + s * sbytes
                    da = make_desc(sb + wg * (64 * SLAB_BYTES), 16, 1024, sw)
                    db = make_desc(sb + a_bytes, b_lbo, b_sbo, sw)
                    issue(da, da + a_kstep, da + 2 * a_kstep, da + 3 * a_kstep,
                          db, db + b_kstep, db + 2 * b_kstep, db + 3 * b_kstep, int32(1))
                    commit()
                    wait1()
                    if kt > 0:  # slab kt - 1's wgmmas are done: release its stage
                        p = (kt - 1) % stages
                        if tw == 0:
                            mbar_arrive(bars + BAR_BYTES * (stages + p))
                        if not ws and t == 0 and kt - 1 + stages < nk:  # thread 0 refills it
                            j = kt - 1 + stages
                            mbar_wait(bars + BAR_BYTES * (stages + p), (j // stages - 1) & 1)
                            produce(j0 + j, p, base, bars, tmap, m0, n0)
                wait0()
                NC = C.shape[1]
                cb = global_address(C)
                r0, c0 = m0 + 64 * wg + 16 * (tw // 32) + (tw % 32) // 4, n0 + 2 * (tw % 4)
                if atomic:
                    red_pairs(r0, c0, M, NC, cb, int64(4 * NC), NC % 2 == 0 and cb % 8 == 0)
                else:
                    rz = cuda.blockIdx.z * M  # range z's partial tile: rows z M .. of the workspace
                    store_pairs(C, rz + r0, c0, rz + M, NC, cb,
                                int64(4 * NC) if NC % 2 == 0 and cb % 8 == 0 else int64(0))

        return gemm


def tensor_maps(A, B, wgs: int, bn: int, tf32: bool):
    """A device uint8 array of 256 bytes: A's tensor map (boxes of 64 wgs rows x one slab of K) then B's
    (bf16 K x N: 64 K-rows x 64 columns; TF32 B^T N x K: bn rows x one slab), each 128-byte swizzled
    (kernels.gemm.tensor_map.encode_2d). A, B: C-contiguous device arrays (``__cuda_array_interface__``),
    rows 16-byte multiples (ValueError otherwise)."""
    item = 4 if tf32 else 2
    bk = slab_k(tf32)
    out = []
    for X, box_rows, box_cols in ((A, 64 * wgs, bk), (B, bn if tf32 else bk, bk if tf32 else BOX_N)):
        rows, cols = X.shape
        iface = X.__cuda_array_interface__
        strides = iface.get("strides")
        if strides is not None and tuple(strides) != (cols * item, item):
            raise ValueError("a TMA build reads C-contiguous A and B")
        out.append(TM.encode_2d(iface["data"][0], item, rows, cols, cols * item, box_rows, box_cols))
    return cuda.to_device(np.frombuffer(b"".join(out), np.uint8))


def launcher(m: int, n: int, k: int, stages: int = 4, wgs: int = 2, bn: int = 128, ws: bool = False,
             maxnreg=None, tf32: bool = False, group: int = 1, grid=None, tma: bool = True, splits: int = 1,
             atomic: int = 0):
    """f(A, B, C): :func:`make_tma_kernel` for an m x n x k product (k and n multiples of 8 for bf16, k of 4 for
    TF32: 16-byte rows), one 64 wgs x bn tile of C a block (or ``grid``), its dynamic shared memory; the tensor
    maps encoded on the first call with each (A, B) pair of device buffers and kept (one small copy to the
    device then, none after). ``tma``: the builds' marker, ignored.

    ``splits`` K ranges (grid z; ``grid``'s third entry when it has one) of ceil(slabs / splits) slabs each:
    C is then the (splits m, n) workspace of the partial tiles, or with ``atomic`` the (m, n) output the ranges
    add into (zeroed first): :func:`k_ranges_call` wraps f with the zeroing or the reduction."""
    if UNAVAILABLE:
        raise RuntimeError(f"wgmma_tma {UNAVAILABLE}")
    if (k % 4 if tf32 else (k % 8 or n % 8)):
        raise ValueError(f"{m}x{n}x{k}: a TMA build copies 16-byte rows (K{'' if tf32 else ' and N'} a multiple "
                         f"of {4 if tf32 else 8}; the rungs' prepare pads)")
    if grid is not None and len(grid) > 2:
        splits = grid[2]
    kernel = make_tma_kernel(stages, wgs, bn, ws, tuple(maxnreg) if maxnreg else None, tf32, group,
                             atomic if splits > 1 else 0)
    grid = grid or ((n + bn - 1) // bn, (m + 64 * wgs - 1) // (64 * wgs), splits)
    slabs = max(1, -(-k // slab_k(tf32)))
    per = -(-slabs // max(1, splits))  # slabs a K range (all of them with one range)
    launch = with_shared(kernel, grid, (WARPGROUP * (wgs + (1 if ws else 0)),), shared_bytes(stages, wgs, bn))
    maps: dict = {}

    def call(A, B, C):
        flags = getattr(C, "flags", None)
        if flags is not None and not flags["C_CONTIGUOUS"]:
            raise ValueError("the TMA build stores C's rows 4 N bytes apart: C must be C-contiguous")
        key = (A.__cuda_array_interface__["data"][0], B.__cuda_array_interface__["data"][0], A.shape, B.shape)
        if key not in maps:
            maps.clear()
            maps[key] = tensor_maps(A, B, wgs, bn, tf32)
        return launch(A, B, C, maps[key], per)

    return call


# --- Split-K for the TMA builds: how many K ranges, and their sum --------------------------------------------
# A grid of fewer tiles than SMs leaves SMs idle for the whole of K: 600 x 700 x 20000 in 128 x 256 tiles is 15
# blocks for 132 SMs, each walking 625 slabs. K ranges (grid z) give each tile S blocks of ceil(slabs / S) slabs;
# their partial tiles are summed after. k_splits() picks S by a wave model fitted on the H200
# (scripts/splitk_bench.py, every S of 1 .. 16 timed at 15 shapes; docs/tensor-cores.md, "Split-K"): a 128 x 256
# block takes SLAB_US a slab (measured 0.58 us for TF32 with 15 blocks on the GPU, 0.60-0.61 with 108-128: the
# SM's fill from L2, not the tensor cores, sets it) and TILE_US a wave for the launch, the pipeline's fill and
# the epilogue (400 x 400 x 420: 14 slabs in 16 us), so b blocks of s slabs take ceil(b / SMs) waves of
# s SLAB_US + TILE_US. S > 1 ranges add their sum: with the atomics (ATOMIC, the default) a zeroing launch and
# the red.add traffic, ATOMIC_US + S M N 4 bytes at ATOMIC_BYTES_PER_US (600 x 700 x 20000 on 8 ranges: 6 us);
# with the workspace REDUCE_US and the partials written and read again, (2 S + 1) M N 4 bytes at
# REDUCE_BYTES_PER_US (the same shape: 28 us). The cheapest S of 1 .. SPLIT_MAX wins where it is at most
# SPLIT_GAIN of one range's estimate: the model is optimistic where K is short (800 x 900 x 1100 TF32 on 3 ranges
# was estimated at 0.72 of one range and measured at 0.79: 0.91), and where the ranges do not pay the TF32 rung's
# tile chooser takes 128 x 128 cp.async tiles, measured at 0.86-0.93 of one 128 x 256 range (400 x 400 x 420,
# 700^3, 800 x 900 x 1100): 0.91 x 0.86 ~ 0.78, and 0.75 keeps a margin. The fewest ranges win a tie; each
# range at least SPLIT_MIN_SLABS slabs, the workspace at most SPLIT_MAX_BYTES, and the tiles' S ranges one wave at
# most (S <= SMs / tiles): a second, partial wave lost at every shape timed (1100 x 900 x 12000 TF32 on the
# workspace: 3 ranges, 108 blocks, 104 us; 4 ranges, 144 blocks, 154 us).
SLAB_US = {True: 0.61, False: 0.65}  # TF32 (32 k) and bf16 (64 k) slabs of a 128 x 256 tile, 108-128 blocks
TILE_US = 8.0
ATOMIC_US, ATOMIC_BYTES_PER_US = 5.0, 10e6
REDUCE_US, REDUCE_BYTES_PER_US = 10.0, 1.6e6
SPLIT_MAX, SPLIT_MIN_SLABS, SPLIT_GAIN = 16, 4, 0.75
SPLIT_MAX_BYTES = 1 << 28  # 256 MB of partial tiles at most
ATOMIC = 2  # the rungs' sum of the K ranges, measured (H200, the chosen S): red.global.v2.f32.add into a zeroed C
# (2) beat red.global.add.f32 (1) and the float32 workspace summed by split_k's reduction launch (0) at every
# shape -- 600 x 700 x 20000 TF32 (pre-pass included) 0.149 / 0.158 / 0.171 ms, bf16 0.041 / 0.050 / 0.062. The
# price: float32 additions in the order the memory system applies them, so C's last bits can differ between
# calls; 0 gives the same bits every call.


def k_splits(m: int, n: int, k: int, bm: int, bn: int, tf32: bool, sms: int, atomic: int = ATOMIC
             ) -> tuple[int, int, float]:
    """(S, slabs a range, estimated us) for an m x n x k product in bm x bn tiles of the TMA builds on ``sms``
    SMs, the ranges summed by ``atomic`` (:data:`ATOMIC`): the wave model above (ValueError for sms < 1). One
    range when K has under 2 SPLIT_MIN_SLABS slabs, the tiles alone fill half the SMs or more, or no S saves a
    quarter (SPLIT_GAIN) of one range's estimate."""
    if sms < 1:
        raise ValueError(f"{sms} SMs: at least 1")
    slabs = max(1, -(-k // slab_k(tf32)))
    tiles = -(-m // bm) * -(-n // bn)
    best = one = None
    for want in range(1, SPLIT_MAX + 1):
        per = -(-slabs // want)
        s = -(-slabs // per)  # ranges left once each has per slabs (none empty)
        if s > 1 and (per < SPLIT_MIN_SLABS or s * m * n * 4 > SPLIT_MAX_BYTES or tiles * s > sms):
            break
        est = -(-tiles * s // sms) * (per * SLAB_US[tf32] + TILE_US)
        if s > 1:
            est += (ATOMIC_US + s * m * n * 4 / ATOMIC_BYTES_PER_US if atomic
                    else REDUCE_US + (2 * s + 1) * m * n * 4 / REDUCE_BYTES_PER_US)
        if best is None:  # one range (want = 1)
            best, one = (s, per, est), est
        elif est < best[2] - 1e-9 and est <= SPLIT_GAIN * one:
            best = (s, per, est)
    return best


def k_splits_words(m: int, n: int, bm: int, bn: int, tf32: bool, splits: int, per: int, est: float, sms: int) -> str:
    """The note's words for :func:`k_splits`'s choice."""
    tiles = -(-m // bm) * -(-n // bn)
    how = (f"{splits} K ranges of {per * slab_k(tf32)} k (grid z), "
           + ("added by red.global.add into a zeroed C" if ATOMIC else "then a reduction launch over the partial tiles"))
    return (f"{bm}x{bn} block tiles: {tiles * splits} blocks for {sms} SMs" + (f" ({how})" if splits > 1 else "")
            + f", ~{est:.0f} us estimated")


def k_ranges_call(f, C, splits: int, atomic: int = ATOMIC):
    """g(A, B): f(A, B, C) for one range; with several, either C zeroed then f adding into it (``atomic``), or f
    writing the (splits m, n) float32 workspace and kernels.gemm.split_k's reduction launch summing it into C
    (deterministic: the same order every call). C: (m, n) float32, C-contiguous."""
    if splits == 1:
        return lambda A, B: f(A, B, C)
    m, n = C.shape
    C1 = C.reshape(m * n)
    if atomic:
        zero = bound(zero_kernel[min(blocks_for(m * n, 256), 8 * sm_count()), 256], (C1,))

        def call(A, B):
            zero()
            f(A, B, C)
        return call
    Wk = empty_like(C, (splits * m, n), np.float32)
    grid, block = reduce_launch(splits, m * n)
    red = bound(split_k_reduce_kernel[grid, block], (Wk.reshape(splits, m * n), C1))

    def call(A, B):
        f(A, B, Wk)
        red()
    return call


def build_name(build: dict) -> str:
    """The name :data:`BUILDS` gives ``build``."""
    for name, b in BUILDS.items():
        if b == build:
            return name
    return "tma" + "".join(f"_{k}{v}" for k, v in sorted(build.items()) if k != "tma")


# --- The rung tensor_core_wgmma (declared in kernels/gemm/tensor_core_tf32.py) runs BUILD ----------------
def launch(size, threads):
    """kernels.gemm.wgmma_bf16.launch with :data:`BUILD`: block fixed at its 3 warpgroups (384 threads), one
    128 x 256 tile of C a block, K in :func:`k_splits`'s ranges over grid z (a 2-D grid for one range)."""
    m, n, k = size
    cfg = W.launch(size, threads, BUILD, build_name(BUILD))
    bm, bn, _ = block_shape(BUILD)
    sms = sm_count()
    splits, per, est = k_splits(m, n, k, bm, bn, False, sms)
    note = cfg.note + "; " + k_splits_words(m, n, bm, bn, False, splits, per, est, sms)
    return Launch(grid=tuple(cfg.grid[:2]) + ((splits,) if splits > 1 else ()), block=cfg.block, threads_needed=cfg.threads_needed * splits,
                  note=note)


def prepare(cfg, inputs, outputs, atomic: int = ATOMIC):
    """kernels.gemm.wgmma_bf16.prepare with :data:`BUILD` and :func:`launcher`: A and B rounded to bf16 once,
    K and N zero-padded to multiples of :data:`PAD`; a call is one launch, or with K ranges (``cfg.grid``'s
    third entry) the launch and the ranges' sum (:func:`k_ranges_call`)."""
    (C,) = outputs
    grid = tuple(cfg.grid)
    splits = grid[2] if len(grid) > 2 else 1

    def make(m, n, k, grid=None, **build):
        kw = dict(atomic=atomic) if splits > 1 else {}
        f = k_ranges_call(launcher(m, n, k, grid=grid, **build, **kw), C, splits, atomic)
        return lambda A16, B16, C_: f(A16, B16)

    return W.prepare(cfg, inputs, outputs, BUILD, make, PAD)
