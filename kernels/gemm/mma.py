"""Tensor cores and asynchronous copies from a Python kernel: ``mma.sync`` fragments and ``cp.async``.

Two PTX instruction families the SIMT rungs cannot reach through Numba's own API:

* ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`` -- one warp multiplies a 16 x 8 tile of A
  by an 8 x 8 tile of B into a 16 x 8 tile of C on the tensor cores (2,048 FLOPs an instruction).
  Each of the 32 lanes holds a fixed piece of each tile in its registers, the *fragment*: 4 values of
  A, 2 of B, 4 of C (:func:`a_index`, :func:`b_index`, :func:`c_index`, pictured by
  :func:`fragment_picture`). Inputs are TF32 (float32 with 10 explicit mantissa bits, rounded by
  ``cvt.rna.tf32.f32``); products are summed in float32.
* ``cp.async.cg.shared.global`` -- a thread copies 16 bytes from global to shared memory without
  passing them through its registers, and goes on computing; ``cp.async.commit_group`` closes the
  copies issued so far into a group; ``cp.async.wait_group N`` waits until at most N groups are
  still in flight. A copy is complete -- its bytes are visible, to the issuing thread -- only
  after a wait that covers its group; other threads see them after a ``syncthreads`` that follows
  that wait. This is what lets a kernel load tile k + 1 while it computes on tile k.

Under numba-cuda-mlir on a GPU each function is one ``inline_ptx`` line
(``numba_cuda_mlir.cuda.experimental.inline_ptx``: output constraints "=f"/"=r"/"=l" with a type,
input constraints "f"/"r"/"l" with a value). The copies take arrays and indices -- ``cp_async16(dst,
di, src, row, col, count)`` copies src[row, col : col + count] into dst[di : di + 4] -- and form the
addresses themselves (:func:`shared_address`: a shared array's 32-bit shared-window address;
:func:`global_address`: a device array's global address).

In Numba's CUDA simulator (and the lab's tracing executor, lab.core.simt) the same functions are an
*emulation* with the same contracts, so the lessons and their tests run on a laptop:

* ``mma_tf32`` is a warp collective: the 32 lanes of a warp meet (every lane must call it, as
  ``.aligned`` demands on a GPU), each hands in its fragment registers, and each gets back its own
  4 elements of D = A @ B + C computed from the tiles the fragments describe, the inputs rounded to
  TF32 first. A lane that puts an element in the wrong register gives a wrong tile, as on a GPU.
* ``cp_async16``/``cp_async4`` read the source when issued but *buffer* the values per thread,
  and poison the destination (NaN): between the issue and the wait its contents are undefined, as
  on a GPU, where the bytes land at some moment in between. ``cp_async_commit`` closes a group;
  ``cp_async_wait(n)`` writes the buffered values of all but the newest n groups into shared memory.
  A kernel that reads a tile without the wait (or waits for the wrong group) reads poison; one that
  refills a buffer other threads still read (a missing barrier) poisons their operands, and
  lab.core.simt reports the write as a race; copies never waited for never land.
  Where lab.core.simt runs the kernel, the copies are counted for the exercise checker's lessons
  (copies issued, groups with copies a thread committed, shared reads made with copies in flight).

Under numba-cuda on a GPU (no inline PTX) the functions compile as plain CUDA: the mma by 32 warp
shuffles, the copies synchronous (kernels/gemm/mma_numba_cuda.py). That keeps a student's kernel
compilable there; the matmul rungs are skipped there (:data:`UNAVAILABLE` says why: they would time
shuffles, not tensor cores). A student's kernel (``from numba import cuda``) is always numba-cuda's,
so where the lab's kernels are numba-cuda-mlir's the exercise checker hands it these plain-CUDA
twins in place of the MLIR functions it imported (:func:`for_numba_cuda`).

Sources: PTX ISA 8.x, "Warp-level matrix multiply-accumulate instructions" (mma.sync, section
"Matrix fragments for mma.m16n8k8", .tf32) and "Data movement and conversion instructions: cp.async,
cp.async.commit_group, cp.async.wait_group", "cvt" (.rna.tf32.f32); CUDA C++ Programming Guide,
"Asynchronous data copies" (memcpy_async, the multi-stage pipeline) and "Warp matrix functions";
NVIDIA CUTLASS, include/cute/arch/mma_sm80.hpp (SM80_16x8x8_F32TF32TF32F32_TN) and
copy_sm80.hpp (SM80_CP_ASYNC_CACHEGLOBAL).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from kernels.compiler import COMPILER, MLIR, SIMULATOR, cuda, float32, int32
from kernels.spec import DOT_SIGMAS, dot_tolerance, Variant, plural

WARP = 32
MMA_M, MMA_N, MMA_K = 16, 8, 8  # m16n8k8: A is 16 x 8, B is 8 x 8, C and D are 16 x 8
TF32_MANTISSA = 10  # explicit mantissa bits of TF32 (float32 has 23, bfloat16 7)
BF16_NAN = 0x7FC0  # a bfloat16 NaN's bits: the emulated copy's poison in a uint16 (bfloat16) array

# what to_tf32 returns and mma_tf32 takes for A and B: TF32 bits in an int32 register under
# numba-cuda-mlir, the float32 value in the emulations (which rounds it itself); a kernel's fragment arrays use this type
FRAGMENT = int32 if COMPILER == MLIR and not SIMULATOR else float32
EMULATED = SIMULATOR  # the functions below are the Python emulation (no tensor cores, no cp.async)
if SIMULATOR or COMPILER == MLIR:
    UNAVAILABLE = ""
else:
    UNAVAILABLE = (f"needs {MLIR}'s inline PTX for mma.sync and cp.async ({COMPILER} has none on a GPU): "
                   f"--compiler {MLIR}, or --sim for the emulation")


# --- The fragment layout (PTX ISA, "Matrix fragments for mma.m16n8k8", .tf32) ------------------
def a_index(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of A (16 x 8) that register a_i (i = 0..3) of ``lane`` holds: row = lane // 4
    (+ 8 for a1, a3), col = lane % 4 (+ 4 for a2, a3)."""
    return lane // 4 + 8 * (i & 1), lane % 4 + 4 * (i >> 1)


def b_index(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of B (8 x 8, k x n) that register b_i (i = 0, 1) of ``lane`` holds: row = lane % 4
    (+ 4 for b1), col = lane // 4."""
    return lane % 4 + 4 * i, lane // 4


def c_index(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of C and D (16 x 8) that register c_i (i = 0..3) of ``lane`` holds: row = lane // 4
    (+ 8 for c2, c3), col = 2 * (lane % 4) + (i & 1)."""
    return lane // 4 + 8 * (i >> 1), 2 * (lane % 4) + (i & 1)


def fragment_maps() -> dict[str, np.ndarray]:
    """{"A", "B", "C"}: for each tile an int array of its shape whose element is 10 * lane + register
    (e.g. 312 = lane 31, register 2), from :func:`a_index`, :func:`b_index`, :func:`c_index`."""
    maps = {"A": np.full((16, 8), -1), "B": np.full((8, 8), -1), "C": np.full((16, 8), -1)}
    for lane in range(WARP):
        for i in range(4):
            maps["A"][a_index(lane, i)] = 10 * lane + i
            maps["C"][c_index(lane, i)] = 10 * lane + i
        for i in range(2):
            maps["B"][b_index(lane, i)] = 10 * lane + i
    return maps


def fragment_picture() -> str:
    """The three tiles of one m16n8k8 TF32 mma, each cell ``lane.register`` (``T5.2``: lane 5, its
    register 2): which lane holds which element. Rows of A and C are m, columns of B and C are n."""
    lines = []
    for name, title in (("A", "A (16 x 8, m x k): a0..a3"), ("B", "B (8 x 8, k x n): b0, b1"),
                        ("C", "C, D (16 x 8, m x n): c0..c3")):
        grid = fragment_maps()[name]
        lines.append(title)
        lines.append(("      " + "".join(f"{'k' if name == 'A' else 'n'}={j:<4d}" for j in range(grid.shape[1]))).rstrip())
        for r in range(grid.shape[0]):
            cells = "".join(f"T{v // 10}.{v % 10}".ljust(6) for v in grid[r])
            lines.append(f"{'m' if name != 'B' else 'k'}={r:<3d} {cells}".rstrip())
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def round_tf32(x):
    """x (float32 array or scalar) rounded to TF32 as ``cvt.rna.tf32.f32`` does: to the nearest value
    with 10 explicit mantissa bits, ties away from zero; kept in float32 (low 13 bits zero)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = np.where(finite, (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000), bits)
    return rounded.astype(np.uint32).view(np.float32)


def split_tf32(x):
    """(big, small): x (float32 array or scalar) as the sum of two TF32 values, the 3xTF32 split
    (kernels/gemm/tensor_core_3xtf32.py); both float32 arrays with their low 13 bits zero.

    big = x rounded to TF32 (as :func:`round_tf32`: to nearest, ties away from zero), small = x - big (exact in
    float32: at most 13 significant bits) rounded to TF32 likewise, so x - big - small is under 2^-22 |x|
    (2^-11 of small's 2^-11 of x). Near FLT_MAX the rounding would carry into the exponent (x = 3.4028235e38
    rounds up to infinity): there big is x truncated to TF32 instead, and small = x - big, still finite. An
    infinity is (x, 0); a NaN is (a quiet NaN, 0). The same bits as :func:`split_word` on a GPU (PTX
    :data:`SPLIT_PTX`) and in the emulation."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    big = (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    carried = finite & ((big & 0x7F800000) == 0x7F800000)
    big = np.where(carried | ~finite, bits & np.uint32(0xFFFFE000), big)
    big = np.where(~finite & ((bits & 0x7FFFFF) != 0), np.uint32(0x7FC00000), big).astype(np.uint32)
    bigf = big.view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        rest = (np.asarray(x, np.float32) - bigf).astype(np.float32)
    small = np.where(finite, (rest.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000), 0)
    return bigf, small.astype(np.uint32).view(np.float32)


# --- The emulation (Numba's CUDA simulator, lab.core.simt) -------------------------------------
def _me():
    return threading.current_thread()


def _thread_key(me):
    return (tuple(me.blockIdx), tuple(me.threadIdx))


class _WarpExchange:
    """A warp collective for Numba's own simulator where it runs a Python thread per CUDA thread (the lab
    runs blocks on greenlets and meets lanes through ``me.warp_collective`` instead): the n-th
    call of each lane of a warp meets the n-th call of the others; returns {lane: value}."""

    def __init__(self, lanes_of_warp):
        self.lock = threading.Lock()
        self.slots: dict = {}
        self.lanes_of_warp = lanes_of_warp

    def meet(self, block, thread_id, call, value, timeout=60.0):
        warp, lane = divmod(thread_id, WARP)
        key = (block, warp, call)
        need = self.lanes_of_warp(warp)
        with self.lock:
            slot = self.slots.get(key)
            if slot is None:
                slot = self.slots[key] = ({}, threading.Event())
            values, full = slot
            values[lane] = value
            if len(values) >= need:
                del self.slots[key]
                full.set()
        if not full.wait(timeout):
            missing = sorted(set(range(need)) - set(values))
            raise RuntimeError(f"mma_tf32 is a warp collective: lanes {missing} of warp {warp} never "
                               f"reached call {call} (every lane must call it, as mma.sync.aligned demands)")
        return values


_EXCHANGE_LOCK = threading.Lock()


def _warp_gather(value):
    """{lane: value} of the calling thread's warp at this lane's next mma."""
    me = _me()
    if hasattr(me, "warp_collective"):  # lab.core.simt's threads: its collectives (hang diagnosis)
        return me.warp_collective(0xFFFFFFFF, value)
    manager = getattr(me, "_manager", None)
    if manager is None:
        raise RuntimeError("mma_tf32's emulation runs in a kernel launched in the CUDA simulator")
    with _EXCHANGE_LOCK:
        ex = getattr(manager, "_lab_warp_exchange", None)
        if ex is None:
            n = int(np.prod(manager._block_dim))
            ex = manager._lab_warp_exchange = _WarpExchange(lambda w: min(WARP, n - w * WARP))
    call = getattr(me, "_lab_mma_calls", 0)
    me._lab_mma_calls = call + 1
    return ex.meet(tuple(me.blockIdx), me.thread_id, call, value)


_D_CACHE: dict = {}  # id(the warp's shared {lane: registers}) -> [that dict, D, lanes still to read it]
_D_LOCK = threading.Lock()


def _tile_product(got) -> np.ndarray:
    """D = A @ B + C of one warp's mma from its lanes' registers ``got`` ({lane: (a0..a3, b0, b1, c0..c3)})."""
    A = np.full((MMA_M, MMA_K), np.nan, np.float32)  # a lane that did not take part: undefined registers
    B = np.full((MMA_K, MMA_N), np.nan, np.float32)
    C = np.full((MMA_M, MMA_N), np.nan, np.float32)
    for src, regs in got.items():
        for i in range(4):
            A[a_index(src, i)] = regs[i]
            C[c_index(src, i)] = regs[6 + i]
        for i in range(2):
            B[b_index(src, i)] = regs[4 + i]
    return (round_tf32(A).astype(np.float64) @ round_tf32(B).astype(np.float64) + C).astype(np.float32)


def _mma_tf32_emulated(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    me = _me()
    lane = me.thread_id % WARP
    stats = getattr(me, "lab_stats", None)  # the lab's tracing executor (lab.core.simt.Stats): mma calls counted
    if stats is not None:
        stats.mma_calls = getattr(stats, "mma_calls", 0) + 1
    got = _warp_gather((a0, a1, a2, a3, b0, b1, c0, c1, c2, c3))
    with _D_LOCK:  # every lane of the warp gets the same dict: compute the tile once
        entry = _D_CACHE.get(id(got))
        if entry is None or entry[0] is not got:
            entry = _D_CACHE[id(got)] = [got, _tile_product(got), len(got)]
        entry[2] -= 1
        if entry[2] <= 0:
            del _D_CACHE[id(got)]
    D = entry[1]
    return tuple(D[c_index(lane, i)] for i in range(4))


def _to_tf32_emulated(x):
    return np.float32(x)  # the emulated mma rounds its inputs itself


def _pending(me):
    """This thread's cp.async state: {"open": [copies], "groups": [[copies], ...], "filled": groups
    with copies committed so far}."""
    state = me.__dict__.setdefault("_lab_cp_async", {})
    return state.setdefault(_thread_key(me), {"open": [], "groups": [], "filled": 0})


def _count(me, state, copies=0, groups=0):
    """Publish this thread's copies in flight (``me.lab_async_in_flight``: lab.core.simt marks a shared
    read made while it is above 0 as overlap) and add to the launch's counts where the lab's tracing
    executor runs the kernel (``me.lab_stats``, lab.core.simt.Stats): ``async_copies`` added up,
    ``async_groups`` kept as its largest value."""
    me.lab_async_in_flight = len(state["open"]) + sum(len(g) for g in state["groups"])
    stats = getattr(me, "lab_stats", None)
    if stats is not None:
        stats.async_copies = getattr(stats, "async_copies", 0) + copies
        stats.async_groups = max(getattr(stats, "async_groups", 0), groups)


def _cp_async_emulated(dst, di, src, row, col, n, count):
    if di % n:
        raise IndexError(f"cp.async of {4 * n} bytes needs a {4 * n}-byte aligned shared address "
                         f"(element {di} of the shared array)")
    count = int(count)
    me = _me()
    me.lab_async_loading = True  # (lab.core.simt.Stats counts these loads as the copy's, not plain loads)
    try:
        values = [src[row, col + e] if e < count else dst.dtype.type(0) for e in range(n)]
    finally:
        me.lab_async_loading = False
    for e in range(n):  # the destination must exist now (an out-of-bounds copy faults on a GPU)
        if not 0 <= di + e < dst.shape[0]:
            raise IndexError(f"cp.async into element {di + e} of a shared array of {dst.shape[0]}")
    for e in range(n):  # undefined until the wait: a thread that reads it now reads a poison
        dst[di + e] = np.nan if dst.dtype.kind == "f" else BF16_NAN if dst.dtype == np.uint16 else 0
    state = _pending(me)
    state["open"].append((dst, int(di), values))
    _count(me, state, copies=1)


def _cp_async16_emulated(dst, di, src, row, col, count):
    _cp_async_emulated(dst, di, src, row, col, 4, count)


def _cp_async4_emulated(dst, di, src, row, col, count):
    _cp_async_emulated(dst, di, src, row, col, 1, count)


def _cp_async_commit_emulated():
    me = _me()
    state = _pending(me)
    state["filled"] += 1 if state["open"] else 0
    state["groups"].append(state["open"])
    state["open"] = []
    _count(me, state, groups=state["filled"])


def _cp_async_wait_emulated(n):
    me = _me()
    state = _pending(me)
    groups = state["groups"]
    keep = max(0, len(groups) - int(n))
    done, state["groups"] = groups[:keep], groups[keep:]
    _count(me, state)
    for group in done:
        for dst, di, values in group:
            for e, v in enumerate(values):
                dst[di + e] = v


# --- The GPU (numba-cuda-mlir's inline PTX) -------------------------------------------------
# the 3xTF32 split of one word (split_tf32's bits): %2 the float32's bits in, %0 big, %1 small (TF32 bits) out
SPLIT_PTX = ("{ .reg .b32 t, hi, lo; .reg .f32 fx, fh, fl; .reg .pred pf, po, pn; "
             "and.b32 t, %2, 0x7F800000; setp.ne.b32 pf, t, 0x7F800000; "  # pf: x finite
             "add.s32 hi, %2, 4096; and.b32 hi, hi, 0xFFFFE000; "  # round to nearest, ties away (cvt.rna's value)
             "and.b32 t, hi, 0x7F800000; setp.eq.and.b32 po, t, 0x7F800000, pf; "  # carried past FLT_MAX:
             "@po and.b32 hi, %2, 0xFFFFE000; @!pf and.b32 hi, %2, 0xFFFFE000; "  # truncate; an infinity stays one
             "and.b32 t, %2, 0x007FFFFF; setp.ne.and.b32 pn, t, 0, !pf; @pn mov.b32 hi, 0x7FC00000; "  # NaN: quiet
             "mov.b32 fx, %2; mov.b32 fh, hi; sub.rn.f32 fl, fx, fh; mov.b32 lo, fl; "  # x - big: exact
             "add.s32 lo, lo, 4096; and.b32 lo, lo, 0xFFFFE000; @!pf mov.b32 lo, 0; "
             "mov.b32 %0, hi; mov.b32 %1, lo; }")
MMA_TF32_PTX = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};")
# a shared array's address: numba-cuda-mlir may give its generic or its shared-window address
SHARED_ADDRESS_PTX = ("{ .reg .pred p; .reg .u64 a; isspacep.shared p, %1; @p cvta.to.shared.u64 a, %1; "
                      "@!p mov.b64 a, %1; cvt.u32.u64 %0, a; }")

if COMPILER == MLIR:
    import numba_cuda_mlir.cuda.experimental as _X

    @cuda.jit(device=True, forceinline=True)
    def to_tf32(x):
        """x rounded to TF32 (``cvt.rna.tf32.f32``): its 32 bits in an int32 register (FRAGMENT
        type), as mma_tf32 takes A and B."""
        return _X.inline_ptx("cvt.rna.tf32.f32 %0, %1;", "=r", np.int32, "f", x)

    @cuda.jit(device=True, forceinline=True)
    def split_word(bits):
        """(big, small) TF32 bits (int32 registers, FRAGMENT type) of the float32 whose bits are ``bits`` (an
        int32 register): :func:`split_tf32` in one inline PTX block (:data:`SPLIT_PTX`)."""
        return _X.inline_ptx(SPLIT_PTX, "=r", np.int32, "=r", np.int32, "r", bits)

    @cuda.jit(device=True, forceinline=True)
    def tf32_bits(x):
        """x's 32 bits unchanged in an int32 register: the tensor cores then ignore its low 13 bits."""
        return _X.inline_ptx("mov.b32 %0, %1;", "=r", np.int32, "f", x)

    @cuda.jit(device=True, forceinline=True)
    def mma_tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        """(d0, d1, d2, d3) = this lane's fragment of D = A @ B + C, one m16n8k8 TF32 mma.sync; the
        lane's registers hold the elements :func:`a_index`, :func:`b_index`, :func:`c_index` name
        (a, b: TF32 bits from to_tf32; c, d: float32)."""
        return _X.inline_ptx(MMA_TF32_PTX, "=f", np.float32, "=f", np.float32, "=f", np.float32, "=f", np.float32,
                             "r", a0, "r", a1, "r", a2, "r", a3, "r", b0, "r", b1,
                             "f", c0, "f", c1, "f", c2, "f", c3)

    @cuda.jit(device=True, forceinline=True)
    def shared_address(array):
        """The 32-bit shared-window address of shared ``array``'s first element."""
        return _X.inline_ptx(SHARED_ADDRESS_PTX, "=r", np.int32, "l", array.ctypes.data)

    @cuda.jit(device=True, forceinline=True)
    def global_address(array):
        """The global address of device ``array``'s first element."""
        return _X.inline_ptx("cvta.to.global.u64 %0, %1;", "=l", np.int64, "l", array.ctypes.data)

    @cuda.jit(device=True, forceinline=True)
    def cp_async16(dst, di, src, row, col, count):
        """Copy src[row, col : col + count] (count 0..4 float32) to dst[di : di + 4] asynchronously,
        zeros past count: 16 bytes, both addresses 16-byte aligned. dst: a 1-D shared array; src: a
        C-contiguous 2-D global array (nothing is read when count is 0)."""
        d = shared_address(dst) + di * 4
        s = global_address(src)
        if count > 0:
            s += (row * src.shape[1] + col) * 4
        _X.inline_ptx("cp.async.cg.shared.global [%0], [%1], 16, %2;", "r", int32(d), "l", s,
                      "r", int32(count * 4))

    @cuda.jit(device=True, forceinline=True)
    def cp_async4(dst, di, src, row, col, count):
        """Copy src[row, col] (count 1) or a zero (count 0) to dst[di] asynchronously: 4 bytes."""
        d = shared_address(dst) + di * 4
        s = global_address(src)
        if count > 0:
            s += (row * src.shape[1] + col) * 4
        _X.inline_ptx("cp.async.ca.shared.global [%0], [%1], 4, %2;", "r", int32(d), "l", s,
                      "r", int32(count * 4))

    @cuda.jit(device=True, forceinline=True)
    def cp_async_commit():
        """Close this thread's copies issued since the last commit into one group."""
        _X.inline_ptx("cp.async.commit_group;")

    @cuda.jit(device=True, forceinline=True)
    def cp_async_wait(n):
        """Wait until at most ``n`` (a constant, 0..3) of this thread's groups are in flight."""
        if n == 0:
            _X.inline_ptx("cp.async.wait_group 0;")
        elif n == 1:
            _X.inline_ptx("cp.async.wait_group 1;")
        elif n == 2:
            _X.inline_ptx("cp.async.wait_group 2;")
        else:
            _X.inline_ptx("cp.async.wait_group 3;")
elif SIMULATOR:  # the emulation
    def split_word(x):
        """(big, small) float32 values of float32 ``x`` (the emulated fragments hold values, not bits)."""
        big, small = split_tf32(np.float32(x))
        return np.float32(big), np.float32(small)

    to_tf32 = _to_tf32_emulated
    tf32_bits = _to_tf32_emulated
    mma_tf32 = _mma_tf32_emulated
    cp_async16 = _cp_async16_emulated
    cp_async4 = _cp_async4_emulated
    cp_async_commit = _cp_async_commit_emulated
    cp_async_wait = _cp_async_wait_emulated
else:
    # numba-cuda on a GPU: no inline PTX. The same functions compile (a student's kernel, the checker's
    # GPU compile) as an emulation in plain CUDA (kernels/gemm/mma_numba_cuda.py): the mma through 32
    # warp shuffles, the copies synchronous (complete at once; a missing wait goes unnoticed here, the
    # simulator catches it). The matmul rungs are skipped here (UNAVAILABLE): they would time shuffles,
    # not tensor cores.
    from kernels.gemm import mma_numba_cuda as _twin

    to_tf32 = _twin.to_tf32
    tf32_bits = _twin.tf32_bits
    mma_tf32 = _twin.mma_tf32
    cp_async16 = _twin.cp_async16
    cp_async4 = _twin.cp_async4
    cp_async_commit = _twin.cp_async_commit
    cp_async_wait = _twin.cp_async_wait

# The helpers a kernel calls by name; a student's kernel (``from numba import cuda``) is compiled by
# numba-cuda, whichever compiler built the lab's own kernels (for_numba_cuda).
HELPERS = ("to_tf32", "tf32_bits", "mma_tf32", "cp_async16", "cp_async4", "cp_async_commit", "cp_async_wait")


def for_numba_cuda(value):
    """What a kernel compiled by numba-cuda calls in place of ``value``, one of :data:`HELPERS` of this
    module: in a process whose kernels are numba-cuda-mlir's those are MLIR device functions, which
    numba-cuda cannot call, so their plain-CUDA twin (kernels/gemm/mma_numba_cuda.py, as numba-cuda
    on a GPU always runs them); None for any other value, or where the helpers are numba-cuda's
    (or the simulator's) already."""
    if COMPILER != MLIR or SIMULATOR:
        return None
    for name in HELPERS:
        if value is globals()[name]:
            from kernels.gemm import mma_numba_cuda  # lazy: backend chosen first (numba)

            return getattr(mma_numba_cuda, name)
    return None


# --- Precision: the tolerance of a product whose inputs were rounded (TF32, bfloat16) -----------
MANTISSA_BITS = {"tf32": TF32_MANTISSA, "bf16": 7, "fp32": 23}


def rounded_inputs_tolerance(A, B, mantissa: int) -> np.ndarray:
    """Absolute tolerance for A @ B on tensor cores whose inputs carry ``mantissa`` explicit bits
    (TF32 10, bfloat16 7) and whose sums are float32.

    Model (the random-walk model of kernels.spec.dot_tolerance, applied to the inputs): rounding a and
    b changes each product a_k * b_k by a relative error of at most 2u, u = 2^-mantissa (one unit in
    the last place: round-to-nearest errs by half of it, truncation by up to all of it), as likely up
    as down, so the sum's error is a random walk of standard deviation about
    u * sqrt(2/3) * sqrt(sum_k (a_k b_k)^2). The bound is DOT_SIGMAS of it, on top of the float32
    bound for the sums (dot_tolerance). TF32-rounded products pass; the same products rounded to
    bfloat16 (8x the error) fail it (tests/kernels/test_tensor_cores.py).
    """
    A64 = np.asarray(A, np.float64)
    B64 = np.asarray(B, np.float64)
    u = 2.0 ** -mantissa
    walk = np.sqrt(np.square(A64) @ np.square(B64))
    return dot_tolerance(A, B, np.float32) + DOT_SIGMAS * u * np.sqrt(2.0 / 3.0) * walk


def precision_tolerances(precision: str):
    """A KernelSpec-style ``tolerance(inputs, refs, dtype)`` for ``precision`` ("tf32", "bf16")."""
    bits = MANTISSA_BITS[precision]

    def tolerance(inputs, refs, dtype):
        A, B = inputs
        return [rounded_inputs_tolerance(A, B, bits)]
    return tolerance


def pipeline_variant(name: str, doc: str, launch, prepare, unavailable, precision: str = "fp32", suits=None):
    """A matmul :class:`~kernels.spec.Variant` for a rung of this package: skipped (``accepts``)
    where its instructions cannot run (:data:`UNAVAILABLE`), checked with the tolerance of its
    ``precision`` (``tolerance``), and with ``unavailable(dtype)`` for the dtypes it does not take."""
    @dataclass(frozen=True)
    class PipelineVariant(Variant):
        precision: str = "fp32"
        tolerance: object = None  # tolerance(inputs, refs, dtype) when coarser than dtype's, else None
        unavailable: object = None  # unavailable(dtype) -> "" or why the rung is skipped

        def accepts(self, threads: int) -> str | None:
            if UNAVAILABLE:
                return UNAVAILABLE
            return super().accepts(threads)

    tol = None if precision == "fp32" else precision_tolerances(precision)
    return PipelineVariant(name, doc, launch, prepare, suits=suits, precision=precision, tolerance=tol,
                           unavailable=unavailable)


# --- What the tensor-core rungs share: their launches, their shape chooser, their dtype gate ------
STATIC_SHARED = 48 * 1024  # bytes of static shared memory a block may have; past it, dynamic (opted in)


def _allow_dynamic_shared(kernel, nbytes: int) -> None:
    """Let each compiled overload of ``kernel`` take ``nbytes`` of dynamic shared memory (past 48 KB a
    kernel must opt in: cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES)."""
    from cuda.bindings import driver  # lazy: optional (cuda)

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    compiled = list(kernel.overloads.values())
    if not compiled and hasattr(kernel, "_launch_config_compile_results"):  # numba-cuda-mlir's launch-time compiles
        compiled = list(kernel._launch_config_compile_results())
    for cres in compiled:
        cufunc = cres._codelibrary.get_cufunc()
        handle = getattr(cufunc, "_handle", None) or cufunc.handle  # numba-cuda-mlir's name, numba-cuda's
        err = driver.cuFuncSetAttribute(handle, attr, nbytes)[0]
        if getattr(err, "value", err) != 0:
            raise RuntimeError(f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {nbytes}): {err}")


def with_shared(kernel, grid, block, nbytes: int):
    """A callable f(*args) that launches ``kernel`` on ``grid``, ``block`` with ``nbytes`` of dynamic
    shared memory: ``kernel[grid, block]`` when 0 (static arrays only); past 48 KB the kernel is opted in
    on the first call where the launch is refused (numba-cuda-mlir raises the limit itself; the first
    launch compiles, a refused one is retried once after the opt-in)."""
    if not nbytes:
        return kernel[grid, block]
    launch = kernel[grid, block, 0, nbytes]
    state = {"ready": SIMULATOR or nbytes <= STATIC_SHARED}

    def call(*args):
        if state["ready"]:
            return launch(*args)
        try:
            launch(*args)
        except Exception:  # refused before the opt-in (compiled by now): opt in, launch again
            _allow_dynamic_shared(kernel, nbytes)
            launch(*args)
        state["ready"] = True

    return call


def choose_block_tile(size, tiles, sms: int, share: float = 1.0) -> tuple[str, str]:
    """(name, why) of the block tile for an m x n x k product: ``tiles`` lists (name, bm, bn) from the
    largest (the rung's default) down; the first whose grid, ceil(m / bm) x ceil(n / bn) blocks, gives
    ``share`` of the ``sms`` SMs a block at least (all of them by default), else the last (the most
    blocks). A 128 x 128 grid of 72 blocks (1000 x 1030) leaves 60 of an H100's 132 SMs idle; 64 x 64
    tiles make it 272 blocks."""
    m, n, _ = size
    blocks = [((m + bm - 1) // bm) * ((n + bn - 1) // bn) for _, bm, bn in tiles]
    pick = next((i for i, b in enumerate(blocks) if b >= sms * share), len(tiles) - 1)
    name, bm, bn = tiles[pick]
    if pick == 0:
        return name, f"{bm}x{bn} block tiles: {plural(blocks[0], 'block')} for {plural(sms, 'SM')}"
    _, bm0, bn0 = tiles[0]
    return name, (f"{bm}x{bn} block tiles ({plural(blocks[pick], 'block')}): {bm0}x{bn0} ones would make "
                  f"{plural(blocks[0], 'block')} for {plural(sms, 'SM')}")


def float32_gate(name: str, rounded_to: str):
    """The ``unavailable(dtype)`` of tensor-core rung ``name``, which takes float32 inputs rounded to
    ``rounded_to``: why it does not run here, "" when it does."""
    def unavailable(dtype) -> str:
        if UNAVAILABLE:
            return f"{name} {UNAVAILABLE}"
        if np.dtype(dtype) != np.float32:
            return f"{name} takes float32 inputs, rounded to {rounded_to} (--dtype {np.dtype(dtype).name})"
        return ""
    unavailable.__doc__ = f"Why {name} does not run here (\"\" when it does): float32 inputs only."
    return unavailable


def float32_inputs(name: str, rounded_to: str, A) -> None:
    """ValueError unless A (a rung's input) is float32: the check each tensor-core rung's prepare makes."""
    if np.dtype(A.dtype) != np.float32:
        raise ValueError(f"{name} takes float32 inputs (rounded to {rounded_to})")
